//! The QP's move to RTR refused: which attribute the kernel rejected, and why.

use crate::model::codes;
use crate::model::diagnostic::{Diagnostic, Seen, Source};

use super::gid::{
    empty_slot, gid_family_word, gid_mismatch, local_gid_words, past_the_table, table_summary,
};
use super::mtu::mtu_min;
use super::peers::{link_layers_differ, without_grh};
use super::route::rtr_unreachable;
use super::{generic, Builder};

pub(super) fn rtr_errno(b: Builder, errno: i32) -> Diagnostic {
    let ctx = b.ctx;
    let local = &ctx.local;
    let peer = ctx.peer.as_ref();
    // GIDs of different families or RoCE versions fail whatever the errno (EINVAL, or a
    // resolution timeout); a scope mismatch has its own rule, with its route evidence.
    if let Some((summary, mut ev)) = peer
        .and_then(|p| gid_mismatch(local, p))
        .filter(|(s, _)| !s.starts_with("scope"))
    {
        ev.push(Seen::new(Source::Local, table_summary(local)));
        let fix = if b.suggestion.current_is_best {
            format!(
                "run the peer with a GID like this end's ({}); for ibv_rc_pingpong that is -g with the index of its {} GID",
                local_gid_words(local),
                local.gid_now().map_or("", |g| gid_family_word(&g))
            )
        } else {
            "use GIDs of the same RoCE version and address family on both ends".into()
        };
        return b.done(codes::GID_MISMATCH, summary, ev, fix, true);
    }
    match errno {
        e if e == libc::EINVAL => rtr_einval(b),
        e if e == libc::ENODATA => empty_slot(b),
        e if e == libc::ENODEV => gid_netdev_missing(b),
        e if e == libc::ETIMEDOUT
            || e == libc::ENETUNREACH
            || e == libc::EHOSTUNREACH
            || e == libc::EADDRNOTAVAIL =>
        {
            rtr_unreachable(b, e)
        }
        _ => generic(b),
    }
}

/// RTR refused with EINVAL: RoCE without a GRH, an index past the table, ends that cannot
/// be connected, or a path MTU above the port's.
fn rtr_einval(b: Builder) -> Diagnostic {
    let ctx = b.ctx;
    let local = &ctx.local;
    let peer = ctx.peer.as_ref();
    // RoCE without a GRH.
    if let Some((code, summary, ev, fix)) = without_grh(local, peer) {
        return b.done(code, summary, ev, fix, true);
    }
    // index past the table.
    if let Some((code, summary, ev, fix)) = past_the_table(local) {
        return b.done(code, summary, ev, fix, true);
    }
    // Mixed families or types.
    if let Some(peer) = peer {
        if let Some((summary, mut ev)) = gid_mismatch(local, peer) {
            ev.push(Seen::new(Source::Local, table_summary(local)));
            return b.done(
                codes::GID_MISMATCH,
                summary,
                ev,
                "use GIDs of the same RoCE version and address family on both ends".into(),
                true,
            );
        }
        // A peer's LID 0 is port_not_active's (a step that needs the port never gets here).
        if let Some((code, summary, ev, fix)) = link_layers_differ(local, peer) {
            return b.done(code, summary, ev, fix, false);
        }
    }
    // Path MTU above the port's.
    if let (Some(path), Some(active)) = (
        ctx.qp
            .as_ref()
            .and_then(|q| q.path_mtu)
            .or(ctx.requested_mtu),
        local.active_mtu,
    ) {
        if path > active {
            return b.done(
                codes::MTU_TOO_LARGE,
                format!(
                    "the path MTU {path} exceeds {}'s active MTU {active}",
                    local.name()
                ),
                vec![
                    Seen::new(Source::Qp, format!("requested MTU {path}")),
                    Seen::new(Source::Qp, format!("active_mtu {active}")),
                ],
                format!(
                    "use -m {} (the smaller active MTU of the two ports), or leave -m out",
                    mtu_min(ctx).unwrap_or(active)
                ),
                false,
            );
        }
    }
    let mut ev = vec![Seen::new(
        Source::Local,
        format!("local {}", local_gid_words(local)),
    )];
    if let Some(p) = peer {
        let lid = p
            .lid
            .map_or("unknown".to_string(), |l| format!("0x{l:04x}"));
        ev.push(Seen::new(
            Source::Peer,
            format!("peer {}, LID {lid}", local_gid_words(p)),
        ));
    }
    b.done(
        codes::RTR_INVALID,
        "the kernel rejected the RTR attributes (address vector, MTU or QP numbers)".into(),
        ev,
        "compare both ends with rdmactl check, and use the native exchange (it validates both sides before RTR)".into(),
        true,
    )
}

/// RTR refused with ENODEV: the GID's netdev is gone, down, or in another namespace.
fn gid_netdev_missing(b: Builder) -> Diagnostic {
    let ctx = b.ctx;
    let local = &ctx.local;
    let dev = local.netdev_now();
    let mut ev = Vec::new();
    let summary = match (&dev, &ctx.netdev) {
        (Some(d), Some(n)) if !n.exists => {
            ev.push(Seen::new(Source::Netdev, format!("gid_attrs/ndevs says {d}, but this network namespace has no {d}")));
            format!("the GID's netdev {d} does not exist here: it was removed, or it lives in another network namespace (a container or pod)")
        }
        (Some(d), Some(n)) if !n.up => {
            ev.push(Seen::new(Source::Netdev, format!("{d} operstate {}", n.operstate.as_ref().map_or("down", |o| o.name()))));
            format!("the GID's netdev {d} is down")
        }
        (Some(d), _) => format!("the kernel found no usable netdev for the GID (gid_attrs/ndevs: {d})"),
        (None, _) => "the GID has no netdev (gid_attrs/ndevs is unreadable), so the kernel cannot build the packet headers".into(),
    };
    ev.push(Seen::new(Source::Local, table_summary(local)));
    let fix = match (&dev, &ctx.netdev) {
        (Some(d), Some(n)) if n.exists && !n.up => format!("ip link set {d} up"),
        _ => "use a GID whose netdev is in this namespace and up (NVIDIA/nccl#718: in a pod only some indices are usable)".into(),
    };
    b.done(codes::GID_NETDEV_MISSING, summary, ev, fix, true)
}
