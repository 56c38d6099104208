//! A CM failure explained with the network facts of this side: the netdev carrying the
//! source address, the route toward the peer, and on InfiniBand the IPoIB interfaces.

use std::net::{IpAddr, SocketAddr};
use std::path::Path;

use super::address::netdev_addresses;
use crate::diagnose;
use crate::error::Error;
use crate::gather::net;
use crate::gather::sysfs::SysfsRoot;
use crate::model::device::LinkLayer;
use crate::model::diagnostic::FailureReport;
use crate::model::facts::{Facts, NetdevFacts, QpFacts};
use crate::model::failure::{Cause, EventKind, Failure, Step};

/// Explains a CM failure where it happened, with the network facts of this side.
pub(super) fn with_net_evidence(err: Error, src: Option<IpAddr>, sysfs: &Path) -> Error {
    match err {
        Error::Failure(f) if !f.is_missing_stack() => {
            Error::Explained(Box::new(explain_cm(*f, src, sysfs)))
        }
        other => other,
    }
}

/// Explain a CM failure with what the CM does not say when it cannot find the peer: the
/// state of the netdev that carries this side's address `src`, and the kernel's route
/// toward the peer.
pub fn explain_cm(mut failure: Failure, src: Option<IpAddr>, sysfs: &Path) -> FailureReport {
    let facts = cm_facts(&mut failure, src, sysfs);
    FailureReport::new(&failure, diagnose::explain(&failure, &facts))
}

pub(super) fn cm_facts(err: &mut Failure, src: Option<IpAddr>, sysfs: &Path) -> Facts {
    let mut facts = Facts {
        cm_source: src,
        // No QP attributes yet, but the rules ask whether the device is Soft-RoCE: the
        // one rule decides it here, from sysfs, as for a data-path failure.
        qp: (!err.context.device.is_empty()).then(|| QpFacts {
            soft_roce: crate::gather::inventory::is_soft_roce(sysfs, &err.context.device),
            ..QpFacts::default()
        }),
        ..Facts::default()
    };
    // The port under the source, read as a data-path failure reads it, so the one
    // port-state rule answers a down port the same way under --cm.
    if !err.context.device.is_empty() {
        let port_no = err.context.port.max(1);
        if let Ok(p) =
            crate::gather::sysfs::SysfsRoot::new(sysfs).port(&err.context.device, port_no)
        {
            facts.local = crate::model::facts::EndFacts {
                device: err.context.device.clone(),
                port: port_no,
                link_layer: p.link_layer.clone(),
                port_state: p.state.clone(),
                phys_state: p.phys_state.clone(),
                port_netdev: p.netdev.as_ref().map(|n| n.name.clone()),
                ..Default::default()
            };
        }
    }
    let finding_the_peer = matches!(
        err.step,
        Step::CmResolveAddr | Step::CmResolveRoute | Step::CmConnect
    );
    // A reject or an accept came from the peer: the way there works.
    let peer_answered = matches!(
        err.cause,
        Cause::CmEvent {
            event: EventKind::Rejected,
            ..
        } | Cause::ServerRejected { .. }
            | Cause::ForeignServer { .. }
    );
    if !finding_the_peer || peer_answered {
        return facts;
    }
    // librdmacm opens rdma_cm and the source's device's uverbs node on the way: one that
    // refuses this process is what failed, whatever errno the CM passed on.
    facts.device_node = crate::gather::devnode::cm_nodes_for_source(sysfs, src)
        .into_iter()
        .find(|n| n.exists && n.open_errno.is_some());
    // Netlink errors only cost the evidence; the CM's own failure still stands.
    if let Some(src) = src {
        match net::address_owner(src) {
            Ok(Some(dev)) => {
                let admin = if dev.admin_up {
                    ""
                } else {
                    ", administratively down"
                };
                facts.evidence.push(format!(
                    "{src} is on {}: operstate {}{admin}",
                    dev.name, dev.operstate
                ));
                facts.netdev = Some(NetdevFacts {
                    up: dev.is_up(),
                    exists: true,
                    operstate: Some(dev.operstate.clone()),
                    mtu: None,
                    name: dev.name,
                });
            }
            Ok(None) => facts
                .evidence
                .push(format!("{src} is not an address of this host")),
            Err(_) => {}
        }
    }
    let peer = err
        .context
        .peer_addr
        .as_deref()
        .and_then(|p| p.parse::<SocketAddr>().ok())
        .map(|p| p.ip().to_canonical());
    if let Some(peer) = peer {
        // The typed route facts let the rules name the hop that does not answer.
        facts.route = net::route_facts(peer, None).ok().map(|(r, _)| r);
        match net::route_get_soft(peer, None) {
            Ok(Some(r)) if r.is_local() => facts.evidence.push(format!(
                "ip route get {peer}: local (an address of this host)"
            )),
            Ok(Some(r)) => {
                let mut how = format!("ip route get {peer}:");
                if let Some(gw) = r.gateway {
                    how.push_str(&format!(" via {gw}"));
                }
                how.push_str(&format!(" dev {}", r.oif.as_deref().unwrap_or("?")));
                if let Some(src) = r.prefsrc {
                    how.push_str(&format!(" src {src}"));
                }
                facts.evidence.push(how);
            }
            Ok(None) => facts
                .evidence
                .push(format!("ip route get {peer}: no route")),
            Err(_) => {}
        }
    }
    if err.step == Step::CmResolveAddr && err.cause.errno_value() == Some(libc::ENODEV) {
        add_ipoib_evidence(err, &mut facts, sysfs);
    }
    facts
}

/// ENODEV from address resolution: the route leads to no RDMA device. On a host whose RDMA
/// ports are all InfiniBand, their IPoIB interfaces lack addresses.
pub(super) fn add_ipoib_evidence(err: &mut Failure, facts: &mut Facts, sysfs: &Path) {
    let Ok(devices) = SysfsRoot::new(sysfs).devices() else {
        return;
    };
    let ports: Vec<_> = devices.iter().flat_map(|d| &d.ports).collect();
    let is_ib = |p: &&crate::model::device::Port| p.link_layer == Some(LinkLayer::InfiniBand);
    if ports.is_empty() || !ports.iter().all(is_ib) {
        return;
    }
    err.context.link_layer = Some(LinkLayer::InfiniBand);
    for p in ports {
        let line = match p.netdev.as_ref().map(|n| n.name.as_str()) {
            None => format!("{}/{} is InfiniBand and has no IPoIB interface", p.device, p.number),
            Some(dev) => match netdev_addresses(dev) {
                Some(a) if a.is_empty() => format!(
                    "{}/{} is InfiniBand; its IPoIB interface {dev} has no IP address",
                    p.device, p.number
                ),
                Some(a) => format!(
                    "{}/{} is InfiniBand; its IPoIB interface {dev} has {}",
                    p.device,
                    p.number,
                    a.iter().map(IpAddr::to_string).collect::<Vec<_>>().join(", ")
                ),
                None => format!(
                    "{}/{} is InfiniBand; its IPoIB interface {dev} is not in this network namespace",
                    p.device, p.number
                ),
            },
        };
        facts.evidence.push(line);
    }
}

/// A failure explained by the rules alone, for steps where this host has nothing to add
/// (the peer answered, or the step is not about finding it).
pub(crate) fn plain_report(e: &Failure) -> FailureReport {
    FailureReport::new(e, diagnose::explain(e, &Facts::default()))
}
