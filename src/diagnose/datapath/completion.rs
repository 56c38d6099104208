//! Work completions that failed and polls that waited in vain: what each IBV_WC status means
//! on this path (the connection manager's completions come here too).

use crate::model::codes;
use crate::model::diagnostic::{Diagnostic, Seen, Source};
use crate::model::errno::{
    WC_LOC_LEN_ERR, WC_LOC_PROT_ERR, WC_LOC_QP_OP_ERR, WC_REM_ACCESS_ERR, WC_REM_INV_REQ_ERR,
    WC_RETRY_EXC_ERR, WC_RNR_RETRY_EXC_ERR, WC_WR_FLUSH_ERR,
};

use super::gid::gid_mismatch;
use super::mtu::mtu_mismatch;
use super::route::{same_host_drop, same_host_ipv6};
use super::{generic, peer_ip, Builder};

pub(super) fn completion(b: Builder, status: u32) -> Diagnostic {
    let ctx = b.ctx;
    // A QP whose source GID left the table mid-run fails whatever the status (rxe says
    // IBV_WC_LOC_QP_OP_ERR): the table read now against the GID it was connected with.
    if let Some((summary, seen, fix)) = super::stall::gid_left(ctx) {
        return b.done(codes::GID_REMOVED_MIDRUN, summary, seen, fix, true);
    }
    let qp = ctx.qp.clone().unwrap_or_default();
    match status {
        WC_RETRY_EXC_ERR => {
            // packets never reach the peer.
            let mut ev = Vec::new();
            if let Some(peer) = &ctx.peer {
                if let Some((summary, mev)) = gid_mismatch(&ctx.local, peer) {
                    return b.done(
                        codes::RETRY_EXCEEDED_GID_MISMATCH,
                        format!("the peer never acknowledged: {summary}"),
                        mev,
                        "use the same RoCE version (v2 across subnets) and family on both ends; rdmactl's native exchange compares GID types before the QP, ibv_rc_pingpong's does not".into(),
                        true,
                    );
                }
            }
            if let Some((path, min)) = mtu_mismatch(ctx) {
                ev.push(Seen::new(Source::Qp, format!("path MTU {path}, smaller active MTU of the two ports {min}")));
                return b.done(
                    codes::RETRY_EXCEEDED_MTU,
                    format!("packets of {path} bytes exceed what the path carries ({min}), so they are dropped"),
                    ev,
                    format!("use -m {min} (the smaller active MTU)"),
                    false,
                );
            }
            let route = ctx.route.clone().unwrap_or_default();
            // Linux 6.1 resolves a local peer's MAC without ARP, so RTR passes and the
            // packets themselves are dropped: their source address is local too.
            let peer_text = peer_ip(ctx).map(|p| p.to_string()).unwrap_or_else(|| "the peer".into());
            let dev_name = ctx.local.netdev_now().unwrap_or_else(|| "the GID's netdev".into());
            if let Some((summary, more, fix)) = same_host_ipv6(ctx, &route, &dev_name) {
                return b.done(codes::SAME_HOST_IPV6, summary, more, fix, false);
            }
            if let Some((owner, more, fix)) = same_host_drop(&route, &peer_text, &dev_name) {
                return b.done(
                    codes::SAME_HOST_DROP,
                    format!("same-host test: {owner} drops the RoCE packets from {dev_name} because their source address is local to this host, so nothing is ever acknowledged"),
                    more,
                    fix,
                    false,
                );
            }
            if let Some(flux) = &route.arp_flux {
                return b.done(
                    codes::RETRY_EXCEEDED_ARP_FLUX,
                    format!("no ACK came back, and this host has ARP flux: {dev_name} shares its subnet with other RDMA netdevs that answer ARP for each other's addresses, so {peer_text} may send its packets for this port to another port's MAC, which drops them (its QPs do not know the QPN)"),
                    vec![Seen::new(Source::Route, format!("ARP flux: {}", crate::diagnose::doctor::arp_flux_line(flux)))],
                    format!("{}; then flush the neighbour entries (ip neigh flush all) on both hosts and run again", crate::diagnose::doctor::ARP_FLUX_FIX),
                    false,
                );
            }
            if let (Some(rd), Some(d)) = (&route.route_netdev, ctx.local.netdev_now()) {
                if !route.peer_is_local && *rd != d {
                    ev.push(Seen::new(Source::Route, format!("ip route get {}: dev {rd}; GID netdev {d}", peer_ip(ctx).map(|p| p.to_string()).unwrap_or_default())));
                }
            }
            if let Some(s) = &route.neighbour_state {
                ev.push(Seen::new(Source::Route, format!("neighbour state of the peer: {s}")));
            }
            if let Some(r) = qp.retry_cnt {
                ev.push(Seen::new(Source::Qp, format!("retry_cnt {r}")));
            }
            let counters = format!("`rdma statistic show link {}` before and after a run shows whether packets were retransmitted or dropped", ctx.local.name());
            b.done(
                codes::RETRY_EXCEEDED,
                "the peer never acknowledged: it died, its QP is gone, or packets are dropped on the way (wrong GID or route, switch filtering, RoCE v1 across L3)".into(),
                ev,
                format!("check that the peer process is alive; use the same GID type on both ends and RoCE v2 across subnets; {counters}"),
                true,
            )
        }
        WC_RNR_RETRY_EXC_ERR => {
            let mut ev = Vec::new();
            if let Some(r) = qp.rnr_retry {
                ev.push(Seen::new(Source::Qp, format!("rnr_retry {r}{}", if r == 0 { " (no retries at all)" } else { "" })));
            }
            if qp.recv_posted_before_rtr == Some(false) {
                ev.push(Seen::new(Source::Qp, "receives were posted after the QP reached RTR"));
            }
            b.done(
                codes::RNR_RETRY_EXCEEDED,
                "a SEND arrived at the peer when it had no receive posted (receiver not ready), more often than rnr_retry allows".into(),
                ev,
                "post receives before moving the QP to RTR and keep them replenished; set rnr_retry 7 (infinite) and min_rnr_timer 12".into(),
                false,
            )
        }
        WC_LOC_LEN_ERR => {
            let mut ev = Vec::new();
            if let Some(m) = qp.message_bytes {
                ev.push(Seen::new(Source::Qp, format!("message size {m}")));
            }
            if let Some((path, min)) = mtu_mismatch(ctx) {
                ev.push(Seen::new(Source::Qp, format!("path MTU {path}, smaller active MTU {min}")));
                return b.done(
                    codes::MTU_MISMATCH,
                    format!("path MTU mismatch: {path} set at RTR, but one port runs {min}"),
                    ev,
                    format!("use -m {min}, the smaller active MTU of the two ports"),
                    false,
                );
            }
            b.done(
                codes::LOCAL_LENGTH,
                "the received message is larger than the posted receive buffer (or the MTUs of the two ends differ)".into(),
                ev,
                "use the same -s on both ends, and -m no larger than the smaller active MTU".into(),
                false,
            )
        }
        WC_REM_ACCESS_ERR => b.done(
            codes::REMOTE_ACCESS,
            "the peer refused an RDMA READ/WRITE: wrong rkey or address, or its MR lacks the remote access right".into(),
            vec![],
            "use the rkey and address the peer sent; register with IBV_ACCESS_REMOTE_WRITE/READ as the operation needs".into(),
            false,
        ),
        WC_REM_INV_REQ_ERR => b.done(
            codes::REMOTE_INVALID_REQUEST,
            "the peer rejected the request: the operation is not enabled on its QP, or the message exceeds its limits".into(),
            vec![],
            "enable the operation's access flags on the peer's QP; check message size against max_msg_sz".into(),
            false,
        ),
        WC_LOC_PROT_ERR => b.done(
            codes::LOCAL_PROTECTION,
            "the work request's buffer is outside the registered MR or its lkey is wrong".into(),
            vec![],
            "post only buffers inside the registered MR, with its lkey".into(),
            false,
        ),
        WC_WR_FLUSH_ERR => b.done(
            codes::FLUSHED,
            "the QP was already in the error state: this completion is a consequence of an earlier failure".into(),
            vec![],
            "look at the first failed completion".into(),
            false,
        ),
        WC_LOC_QP_OP_ERR => b.done(
            codes::LOCAL_QP_OPERATION,
            "the local QP could not execute the request (on rxe: the device is in another network namespace, or the netdev went away)".into(),
            vec![],
            "run in the network namespace that owns the RDMA device; check the netdev".into(),
            true,
        ),
        _ => generic(b),
    }
}

/// nothing completed before the deadline. A run that looked at the stall (pingpong's TCP
/// exchange) is judged on what it re-read; otherwise nothing tells why, and the text says
/// so instead of guessing the peer's death.
pub(super) fn poll_timeout(b: Builder, seconds: f64) -> Diagnostic {
    if let Some(stall) = b.ctx.stall.as_ref() {
        return super::stall::stalled(b, stall, seconds);
    }
    let qp = b.ctx.qp.clone().unwrap_or_default();
    let mut ev = vec![Seen::new(
        Source::Failure,
        format!("no completion within {seconds} s"),
    )];
    if let Some(r) = qp.retry_cnt {
        ev.push(Seen::new(Source::Qp, format!("retry_cnt {r}")));
    }
    if qp.soft_roce && qp.retry_cnt == Some(7) {
        return b.done(
            codes::RXE_INFINITE_RETRY,
            "Soft-RoCE with retry_cnt 7 retries forever, so an unreachable or dead peer never produces an error completion".into(),
            ev,
            "use retry_cnt 6 or less; the peer is probably dead or unreachable".into(),
            true,
        );
    }
    b.done(
        codes::NO_COMPLETION,
        format!("no completion within {seconds} s, and nothing was re-read to tell why: the peer stopped sending, its QP went to the error state, or the path drops packets"),
        ev,
        "check the peer process and the path (rdmactl check --peer IP on both ends)".into(),
        true,
    )
}
