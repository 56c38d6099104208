//! `rdmactl triage [FILE...]`: read the job's logs (standard input when none), judge them
//! alone, print the findings; exit 1 when an RDMA error was found.

use crate::cli::TriageArgs;
use crate::ctx::Ctx;
use crate::diagnose::triage as diagnose;
use crate::error::Result;
use crate::exit;
use crate::gather::joblog;
use crate::output::{json, print};
use crate::render::triage as render;

pub fn run(ctx: &Ctx, args: &TriageArgs) -> Result<u8> {
    let paths = if args.files.is_empty() {
        vec!["-".to_string()]
    } else {
        args.files.clone()
    };
    let digest = joblog::read_logs(&paths)?;
    let names: Vec<String> = paths
        .iter()
        .map(|p| {
            if p == "-" {
                "stdin".to_string()
            } else {
                p.clone()
            }
        })
        .collect();
    let triage = diagnose::judge(&digest, &names);
    print(&if ctx.json {
        json(&render::json(&triage, &digest, &names))
    } else {
        render::text(&triage, &digest, &names)
    })?;
    Ok(if triage.failed() {
        exit::FAILED
    } else {
        exit::OK
    })
}
