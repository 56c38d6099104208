//! The questions more than one command asks, each gathered and judged in one place so
//! that every command that asks it gets one answer: `check`'s question on one port, asked
//! by `check` and by `triage` (on the port a job's log ties to this host).

use std::net::IpAddr;

use crate::cli::GidIndexArg;
use crate::ctx::Ctx;
use crate::diagnose::check as rules;
use crate::diagnose::gidselect::{self, Selection};
use crate::diagnose::kernel_choice::{self, Checked, KernelChoice};
use crate::error::Result;
use crate::gather::check as facts;
use crate::model::diagnostic::{Diagnostic, Severity};
use crate::model::facts::{NetFacts, PortFacts};
use crate::model::gid::Gid;

/// `check`'s question on one port: the port's facts, the GID index (given, or chosen by
/// `auto`), and every finding toward `peer` (the index's rules, the link-local scope, the
/// firewall, the kernel's own choice, ARP flux), as `check` prints them. `triage` asks the
/// same of the port a job's log ties to this host, so both give one answer.
pub struct CheckAnswer {
    pub port: PortFacts,
    pub index: Option<u32>,
    pub auto: Selection,
    pub want: gidselect::Want,
    pub findings: Vec<Diagnostic>,
    pub kernel_choice: Option<KernelChoice>,
}

pub fn check(
    ctx: &Ctx,
    device: &str,
    port_no: u32,
    gid_index: GidIndexArg,
    peer: Option<IpAddr>,
    scope: Option<&str>,
) -> Result<CheckAnswer> {
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
    Ok(CheckAnswer {
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
