//! `rdmactl res`: dump every device's RDMA resources (twice, `--interval` apart), read the
//! owning and named processes from /proc, judge with `diagnose::res`, print with
//! `render::res`. A warn or fail finding is exit 1; a named process that does not exist
//! is exit 3.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::cli::ResArgs;
use crate::ctx::Ctx;
use crate::diagnose::res as rules;
use crate::error::{Error, Result};
use crate::exit;
use crate::gather::res::{self as gather, ResError};
use crate::interrupt;
use crate::model::diagnostic::Severity;
use crate::model::res::ResFacts;
use crate::output::{json, print};
use crate::render::res as render;

pub fn run(ctx: &Ctx, args: &ResArgs) -> Result<u8> {
    // The resources are the running kernel's, over netlink: a captured tree holds none,
    // and reading this host's beside another's sysfs would mix two machines.
    if ctx.captured {
        return Err(Error::Usage(format!(
            "--sysfs {}: res reads the running kernel's RDMA resources over netlink; a captured tree holds none (run it on the host itself)",
            ctx.sysfs.display()
        )));
    }
    // Without the RDMA core the RDMA netlink family does not exist either (socket() says
    // EPROTONOSUPPORT): say it as every command does.
    let class = ctx.sysfs.join("class/infiniband");
    if !class.exists() {
        return Err(Error::NoRdma { path: class });
    }
    let proc = Path::new("/proc");
    let named = match &args.comm {
        Some(name) => {
            let pids = gather::pids_named(proc, name);
            if pids.is_empty() {
                return Err(from(ResError::NoSuchComm(name.clone())));
            }
            pids
        }
        None => args.pid.clone(),
    };
    if let Some(&pid) = named.iter().find(|&&p| gather::process(proc, p).is_none()) {
        return Err(from(ResError::NoSuchPid(pid)));
    }
    let devices = gather::devices(args.device.as_deref()).map_err(from)?;
    let before = gather::snapshot(&devices).map_err(from)?;
    let mut facts = ResFacts {
        before,
        named,
        comm: args.comm.clone(),
        ..Default::default()
    };
    if let Some(secs) = args.interval {
        interrupt::catch();
        let start = Instant::now();
        let deadline = start + Duration::from_secs_f64(secs);
        interrupt::sleep_until(deadline);
        facts.seconds = Some(start.elapsed().as_secs_f64());
        facts.after = Some(gather::snapshot(&devices).map_err(from)?);
    }
    let mut pids: Vec<u32> = facts.named.clone();
    for s in std::iter::once(&facts.before).chain(&facts.after) {
        pids.extend(s.qps.iter().filter_map(|q| q.owner.pid()));
        pids.extend(s.cm_ids.iter().filter_map(|q| q.owner.pid()));
        pids.extend(s.mrs.iter().filter_map(|q| q.owner.pid()));
        pids.extend(s.cqs.iter().chain(&s.pds).filter_map(|q| q.owner.pid()));
    }
    pids.sort_unstable();
    pids.dedup();
    facts.processes = pids
        .into_iter()
        .filter_map(|p| Some((p, gather::process(proc, p)?)))
        .collect::<BTreeMap<_, _>>();
    let findings = rules::findings(&facts);
    print(&if ctx.json {
        json(&render::json(&facts, &findings))
    } else {
        render::text(&facts, &findings, ctx.style)
    })?;
    Ok(if findings.iter().any(|f| f.severity >= Severity::Warn) {
        exit::FAILED
    } else {
        exit::OK
    })
}

fn from(e: ResError) -> Error {
    match e {
        ResError::NoSuchDevice { name, available } => Error::NoSuchDevice { name, available },
        ResError::NoSuchPid(_) | ResError::NoSuchComm(_) => Error::NotFound(e.to_string()),
        other => Error::System(other.to_string()),
    }
}
