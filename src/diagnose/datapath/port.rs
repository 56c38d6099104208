//! A port that is not ACTIVE explains every later step.

use crate::diagnose::port_state;
use crate::model::codes;
use crate::model::diagnostic::{Seen, Source};
use crate::model::facts::Facts;

use super::Rule;

/// This end's port not ACTIVE (an InfiniBand port without a LID counts), or its netdev
/// down: the one rule, `port_state`'s, that check, doctor and `--cm` ask too. Then the
/// peer's InfiniBand port without a LID, as the exchange told it.
pub(super) fn port_not_active(ctx: &Facts) -> Option<Rule> {
    let local = &ctx.local;
    // A RoCE port first, then its own netdev down (the QP can fail before the port's state
    // catches up with its netdev, since rxe learns of the link through a notifier).
    let netdev = if local.is_ethernet() {
        ctx.netdev.as_ref()
    } else {
        None
    };
    if local.is_infiniband() || local.is_ethernet() {
        if let Some(x) = port_state::run_port(local, netdev) {
            return Some((x.code, x.message, x.evidence, x.fix.unwrap_or_default()));
        }
    }
    if let Some(peer) = &ctx.peer {
        if peer.is_infiniband() && peer.lid == Some(0) {
            return Some((
                codes::IB_PEER_LID_ZERO,
                "the peer sent LID 0: its InfiniBand port has no LID (no subnet manager on its fabric)".into(),
                vec![Seen::new(Source::Peer, format!("peer {} LID 0x0000", peer.name()))],
                "start a subnet manager on the peer's fabric, then rerun".into(),
            ));
        }
    }
    None
}
