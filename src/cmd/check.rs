//! `rdmactl check`: is this GID index usable, and does it route to the peer?
//!
//! gather (sysfs + rtnetlink, `gather::check`) → `diagnose::check::evaluate` (pure) →
//! `render::check`. Each check is one line with ok/warn/FAIL, the evidence it looked at,
//! and the fix; `auto` first prints why it chose its index.

use crate::ask::CheckAnswer;
use crate::cli::{CheckArgs, GidIndexArg};
use crate::ctx::Ctx;
use crate::diagnose::check as rules;
use crate::diagnose::env::{self, EnvTarget};
use crate::diagnose::gidselect::{self, Selection};
use crate::error::{Error, Result};
use crate::exit;
use crate::gather::check as facts;
use crate::gather::sysfs::SysfsRoot;
use crate::model::diagnostic::{Diagnostic, Severity};
use crate::model::facts::PortFacts;
use crate::output;
use crate::render::check::{render, CheckReport};
use crate::render::diagnostic as render_findings;

pub fn run(ctx: &Ctx, args: &CheckArgs) -> Result<u8> {
    let peer = match args.peer.as_deref() {
        Some(host) => {
            let ip = crate::gather::failure::resolve_peer(host, 0)?;
            crate::gather::failure::refuse_special_peer(ip)?;
            Some(ip)
        }
        None => None,
    };
    let device =
        crate::gather::inventory::device_port(&ctx.sysfs, args.on.device.as_deref(), args.on.port)?;
    let node_type = crate::gather::inventory::node_type(&ctx.sysfs, &device);
    if let Some(why) =
        crate::diagnose::gid_auto::iwarp_needs_cm(&device, node_type.as_ref(), "check")
    {
        return Err(Error::Usage(why));
    }
    let scope = args
        .peer
        .as_deref()
        .and_then(|h| crate::gather::failure::split_scope(h).1);
    let CheckAnswer {
        port,
        index,
        auto,
        want,
        findings: mut checks,
        kernel_choice,
    } = crate::ask::check(ctx, &device, args.on.port, args.gid_index, peer, scope)?;
    let selection = (args.gid_index == GidIndexArg::Auto).then(|| auto.clone());
    if args.env {
        checks.extend(env_findings(
            ctx,
            &device,
            args.on.port,
            &port,
            &auto,
            &want,
        )?);
    }
    let result = render_findings::worst(&checks);
    let report = CheckReport {
        device,
        port: args.on.port,
        gid_index: index,
        requested: match args.gid_index {
            GidIndexArg::Auto => "auto".into(),
            GidIndexArg::Index(i) => i.to_string(),
        },
        peer,
        peer_scope: scope.map(String::from),
        selection,
        findings: checks,
        kernel_choice,
        result,
    };
    let text = if ctx.json {
        output::json(&report)
    } else {
        render(&report, ctx.style)
    };
    output::print(&text)?;
    // A GID index that does not exist is exit 3, as with pingpong and selftest -g N: the
    // findings above say which indices do, and stderr repeats it in one line.
    if let (GidIndexArg::Index(i), None) = (
        args.gid_index,
        report
            .gid_index
            .and_then(|i| port.gids().iter().find(|e| e.index == i)),
    ) {
        return no_such_gid(ctx, report, args.on.port, i);
    }
    Ok(if result == Severity::Fail {
        exit::FAILED
    } else {
        exit::OK
    })
}

/// `-g N` past the table or on an empty slot: exit 3 with the `gid-slot` finding's fix.
fn no_such_gid(ctx: &Ctx, report: CheckReport, port: u32, index: u32) -> Result<u8> {
    let fix = rules::gid_slot_fix(&report.findings);
    Err(
        match SysfsRoot::new(&ctx.sysfs).gid(&report.device, port, index) {
            Err(Error::NoSuchGid { hint, .. }) => Error::NoSuchGid {
                device: report.device,
                port,
                index,
                hint: fix.map_or(hint.clone(), |fix| format!("{hint}; {fix}")),
            },
            Err(other) => other,
            // Populated after all (the table changed between the reads): the findings stand.
            Ok(_) => return Ok(exit::FAILED),
        },
    )
}

/// `--env`: the NCCL and UCX variables against this port, the host's RDMA ports and its
/// netdevs (from the same sysfs root, so a captured tree is judged as its host).
fn env_findings(
    ctx: &Ctx,
    device: &str,
    port_no: u32,
    port: &PortFacts,
    auto: &Selection,
    want: &gidselect::Want,
) -> Result<Vec<Diagnostic>> {
    let host = facts::env_host(&ctx.sysfs)?;
    let target = EnvTarget {
        device,
        port: port_no,
        link_layer: &port.link_layer,
        table: port.gids(),
        table_len: port.gid_table_len,
        auto,
        want,
        devices: &host.devices,
        ports: &host.ports,
        netdevs: &host.netdevs,
    };
    Ok(rules::env_or_unset(env::validate_env(
        |k| std::env::var(k).ok(),
        &target,
    )))
}
