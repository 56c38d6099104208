//! `rdmactl doctor`: gather the host's facts (sysfs, /dev/infiniband, libibverbs,
//! providers, limits, namespaces) with `gather::doctor`, let `diagnose::doctor`'s rules
//! judge them, print with `render::doctor`.

use crate::cli::DoctorArgs;
use crate::ctx::Ctx;
use crate::error::Result;
use crate::exit;
use crate::model::diagnostic::Severity;
use crate::render::doctor::{self as render, DoctorReport};

pub fn run(ctx: &Ctx, args: &DoctorArgs) -> Result<u8> {
    let facts = crate::gather::doctor::gather(ctx, args.device.as_deref())?;
    let report = DoctorReport::from(crate::diagnose::doctor::findings(&facts));
    let text = if ctx.json {
        crate::output::json(&report)
    } else {
        render::text(&report, ctx.style)
    };
    crate::output::print(&text)?;
    // No RDMA device is exit 4, as every other command says it (the findings say why).
    let no_devices = report
        .findings
        .iter()
        .any(|f| f.code == "kernel" && f.severity == Severity::Fail);
    Ok(if no_devices {
        exit::NO_RDMA
    } else if report.fail > 0 {
        exit::FAILED
    } else {
        exit::OK
    })
}
