//! `rdmactl triage [FILE...]`: read the job's logs (standard input when none), judge them,
//! add this host's evidence where it is one end of a failure (`check` on its port and GID
//! toward the other end; not with `--no-host`), print the findings; exit 1 when an RDMA
//! error was found.

use std::io::IsTerminal;

use crate::cli::TriageArgs;
use crate::ctx::Ctx;
use crate::diagnose::check as check_rules;
use crate::diagnose::gidselect;
use crate::diagnose::triage::{self as diagnose, HostGid, HostLook};
use crate::error::Result;
use crate::exit;
use crate::gather::check as check_facts;
use crate::gather::joblog;
use crate::gather::procfs;
use crate::gather::sysfs::SysfsRoot;
use crate::model::diagnostic::Diagnostic;
use crate::model::facts::NetFacts;
use crate::model::joblog::Progress;
use crate::output::{json, print};
use crate::render::triage as render;

pub fn run(ctx: &Ctx, args: &TriageArgs) -> Result<u8> {
    let paths = if args.files.is_empty() {
        vec!["-".to_string()]
    } else {
        args.files.clone()
    };
    // A multi-GB log takes a while: a progress line every few seconds on a terminal.
    let mut tell = |p: &Progress| crate::output::note(&render::progress(p));
    let progress = (std::io::stderr().is_terminal() && !ctx.json)
        .then_some((&mut tell as &mut dyn FnMut(&Progress), PROGRESS_EVERY));
    let digest = joblog::read_logs(&paths, progress)?;
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
    let mut triage = diagnose::judge(&digest, &names);
    if !args.no_host {
        look_here(ctx, &mut triage);
    }
    print(&if ctx.json {
        json(&render::json(&triage, &digest, &names))
    } else {
        render::text(&triage, &digest, &names, ctx.style)
    })?;
    Ok(if triage.failed() {
        exit::FAILED
    } else {
        exit::OK
    })
}

/// How often a long read says how far it is.
const PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_secs(3);

/// Findings this host is asked about (the first ones: a log of a thousand failures toward
/// one peer is one finding already).
const HOST_LOOKS: usize = 8;

/// This host's evidence for each finding it is an end of: `check`'s rules on the port and
/// GID index the log ties to it, toward the other end.
fn look_here(ctx: &Ctx, triage: &mut diagnose::Triage) {
    let sysfs = SysfsRoot::new(&ctx.sysfs);
    let devices = match sysfs.devices() {
        Ok(d) => d,
        Err(e) => {
            for f in triage.findings.iter_mut().take(HOST_LOOKS) {
                f.host = HostLook::Skipped(format!("this host's RDMA devices were not read: {e}"));
            }
            return;
        }
    };
    let gids: Vec<HostGid> = devices
        .iter()
        .flat_map(|d| d.ports.iter())
        .flat_map(|p| {
            p.gids.iter().map(|g| HostGid {
                device: p.device.clone(),
                port: p.number,
                index: g.index,
                gid: g.gid,
            })
        })
        .collect();
    let names: Vec<String> = devices.iter().map(|d| d.name.clone()).collect();
    let hostname = procfs::hostname().unwrap_or_default();
    for f in triage.findings.iter_mut().take(HOST_LOOKS) {
        if f.local_gid.is_none() && f.remote_gid.is_none() && f.device.is_none() {
            continue;
        }
        f.host = match diagnose::end_here(f, &gids, &hostname, &names) {
            Ok(end) => match check_here(ctx, &end) {
                Ok(found) => HostLook::Here(end, found),
                Err(e) => HostLook::Skipped(format!("{}: {e}", end.why)),
            },
            Err(why) => HostLook::Skipped(why),
        };
    }
}

/// `check -d DEV -i PORT -g INDEX --peer PEER` as its rules see it (no kernel-choice
/// query: triage only reads).
fn check_here(ctx: &Ctx, end: &diagnose::HereEnd) -> Result<Vec<Diagnostic>> {
    let port = check_facts::load_port_facts(ctx, &end.device, end.port)?;
    let first = if ctx.captured || end.peer.is_none() {
        NetFacts::default()
    } else {
        check_facts::net_facts_scoped(ctx, None, end.peer, None)
    };
    let auto = gidselect::select_gid(
        port.gids(),
        &port.link_layer,
        &check_rules::want_for(end.peer, &first),
    );
    Ok(match end.gid_index.or(auto.chosen) {
        Some(i) => {
            let entry = port.gids().iter().find(|e| e.index == i);
            let net = if ctx.captured {
                NetFacts::default()
            } else {
                check_facts::net_facts_scoped(ctx, entry, end.peer, None)
            };
            check_rules::evaluate(&port, i, end.peer, &net, &auto)
        }
        None => vec![check_rules::no_gid_fits(
            &end.device,
            end.port,
            end.peer,
            &port,
        )],
    })
}
