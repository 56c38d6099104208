//! `rdmactl check`: is this GID index usable, and does it route to the peer?
//!
//! gather (sysfs + rtnetlink, `gather::check`) → `diagnose::check::evaluate` (pure) →
//! `render::check`. Each check is one line with ok/warn/FAIL, the evidence it looked at,
//! and the fix; `auto` first prints why it chose its index.

use std::net::IpAddr;

use crate::cli::{CheckArgs, GidIndexArg};
use crate::ctx::Ctx;
use crate::diagnose::check as rules;
use crate::diagnose::env::{self, EnvTarget};
use crate::diagnose::gidselect::{self, Selection};
use crate::diagnose::kernel_choice::{self, Checked, KernelChoice};
use crate::error::{Error, Result};
use crate::exit;
use crate::gather::check as facts;
use crate::gather::sysfs::SysfsRoot;
use crate::model::diagnostic::{Diagnostic, Severity};
use crate::model::facts::{NetFacts, PortFacts};
use crate::model::gid::Gid;
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
    let Judged {
        port,
        index,
        auto,
        want,
        findings: mut checks,
        kernel_choice,
    } = judge(ctx, &device, args.on.port, args.gid_index, peer, scope)?;
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

/// `check`'s question on one port: the port's facts, the GID index (given, or chosen by
/// `auto`), and every finding toward `peer` (the index's rules, the link-local scope, the
/// firewall, the kernel's own choice, ARP flux), as `check` prints them. `triage` asks the
/// same of the port a job's log ties to this host, so both give one answer.
pub(crate) struct Judged {
    pub port: PortFacts,
    pub index: Option<u32>,
    pub auto: Selection,
    pub want: gidselect::Want,
    pub findings: Vec<Diagnostic>,
    pub kernel_choice: Option<KernelChoice>,
}

pub(crate) fn judge(
    ctx: &Ctx,
    device: &str,
    port_no: u32,
    gid_index: GidIndexArg,
    peer: Option<IpAddr>,
    scope: Option<&str>,
) -> Result<Judged> {
    let port = facts::load_port_facts(ctx, device, port_no)?;
    // The selection needs route facts, which need a netdev: look the route up once without
    // a GID netdev for `auto`, then again from the chosen GID's netdev.
    let first_net = if ctx.captured || peer.is_none() {
        NetFacts::default()
    } else {
        facts::net_facts_scoped(ctx, None, peer, scope)
    };
    let mut want = rules::want_for(peer, &first_net);
    if let Some(scope) =
        scope.filter(|_| peer.is_some_and(|p| gidselect::is_link_local(&Gid::from_ip(p))))
    {
        // The scope names the link the kernel sends to a link-local peer through (without
        // one, every link has its own fe80::/64 and the route says nothing).
        want.route_netdev = Some(scope.to_string());
    }
    let auto = gidselect::select_gid(port.gids(), &port.link_layer, &want);
    let index = match gid_index {
        GidIndexArg::Index(i) => Some(i),
        GidIndexArg::Auto => auto.chosen,
    };
    let mut findings = match index {
        Some(i) => {
            let entry = port.gids().iter().find(|e| e.index == i);
            let net = facts::net_facts_scoped(ctx, entry, peer, scope);
            let mut found = rules::evaluate(&port, i, peer, &net, &auto);
            if let (Some(peer), Some(scope), Some(entry)) = (peer, scope, entry) {
                found.push(rules::scope_finding(entry, peer, scope, &port));
            }
            if let Some(fw) = entry.and_then(|e| facts::firewall(ctx, &port, e, peer, &net)) {
                found.push(crate::diagnose::firewall::finding(None, &fw));
            }
            found
        }
        None => vec![rules::no_gid_fits(device, port_no, peer, &port)],
    };
    let mut kernel_choice = None;
    if let (Some(_), Some(r)) = (peer, &port.removal) {
        // The CM would answer ENODEV for a device the core unregistered: its words would
        // blame the route.
        findings.push(kernel_choice::skipped(
            Severity::Info,
            format!(
                "not asked: {} is being removed (device-removing above)",
                r.device
            ),
        ));
    } else if let Some(peer) = peer {
        let checked = Checked {
            device,
            port: port_no,
            index,
            auto: gid_index == GidIndexArg::Auto,
            gids: port.gids(),
            port_netdev: port.sysfs.netdev.as_ref().map(|n| n.name.as_str()),
        };
        let (finding, choice) = ask_kernel(ctx, &checked, peer, &first_net, scope);
        findings.push(finding);
        kernel_choice = choice;
    }
    if !ctx.captured {
        let this_port = format!("{device}/{port_no}");
        findings.extend(rules::arp_flux_for_port(
            &facts::roce_netdevs(&ctx.sysfs),
            &this_port,
        ));
    }
    Ok(Judged {
        port,
        index,
        auto,
        want,
        findings,
        kernel_choice,
    })
}

/// The kernel's own GID choice toward `peer`, compared with the index checked (not asked
/// of a captured tree: it is not this host's kernel).
fn ask_kernel(
    ctx: &Ctx,
    checked: &Checked,
    peer: IpAddr,
    first_net: &NetFacts,
    scope: Option<&str>,
) -> (Diagnostic, Option<KernelChoice>) {
    if ctx.captured {
        let finding = kernel_choice::skipped(
            Severity::Info,
            "not asked: --sysfs points at a captured tree, not this host's kernel",
        );
        return (finding, None);
    }
    // `--peer fe80::1%veth0`: the CM gets the interface as the address's scope.
    let (finding, choice) = kernel_choice::judge(
        peer,
        checked,
        first_net.route.as_ref(),
        facts::scope_ifindex(scope),
        &crate::gather::devnode::cm_nodes(&ctx.sysfs, checked.device),
        |scoped, source| facts::kernel_gid_choice(peer, scoped, source),
    );
    (finding, Some(choice))
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
