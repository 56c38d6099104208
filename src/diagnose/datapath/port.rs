//! A port that is not ACTIVE explains every later step.

use crate::diagnose::port_state;
use crate::model::codes;
use crate::model::device::PhysState;
use crate::model::diagnostic::{Seen, Source};
use crate::model::facts::Facts;

use super::Rule;

/// InfiniBand without an SM (LID 0, INIT/POLLING), or any port not ACTIVE.
pub(super) fn port_not_active(ctx: &Facts) -> Option<Rule> {
    let local = &ctx.local;
    let state = local.port_state.as_ref();
    let mut evidence = Vec::new();
    if let Some(s) = state {
        evidence.push(Seen::new(
            Source::Local,
            format!("{} state {s}", local.name()),
        ));
    }
    if let Some(p) = &local.phys_state {
        evidence.push(Seen::new(
            Source::Local,
            format!("{} phys_state {p}", local.name()),
        ));
    }
    if local.is_infiniband() {
        let lid_bad = matches!(local.lid, Some(0) | Some(0xffff));
        let not_active = state.is_some_and(|s| !s.is_active());
        if lid_bad || not_active {
            if let Some(lid) = local.lid {
                evidence.push(Seen::new(
                    Source::Local,
                    format!("{} LID 0x{lid:04x}", local.name()),
                ));
            }
            let polling = local
                .phys_state
                .as_ref()
                .is_some_and(|p| *p == PhysState::Polling);
            let fix = if polling {
                "the link is not trained (phys_state Polling): check the cable and the switch port"
                    .to_string()
            } else {
                "start a subnet manager (systemctl start opensm, or enable the switch's SM); an SR-IOV VF needs a virtualization-aware SM".to_string()
            };
            return Some((
                codes::IB_PORT_NOT_ACTIVE,
                format!(
                    "InfiniBand port {} is not ACTIVE or has no LID: no subnet manager has configured it, so there is no address to connect to",
                    local.name()
                ),
                evidence,
                fix,
            ));
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
    if !local.is_ethernet() {
        return None;
    }
    // The one rule (`port_state`) that check, doctor and `--cm` ask too: this end's port
    // not ACTIVE first, then its own netdev down (the QP can fail before the port's state
    // catches up with its netdev, since rxe learns of the link through a notifier).
    let x = port_state::run_port(local, ctx.netdev.as_ref())?;
    Some((x.code, x.message, x.evidence, x.fix.unwrap_or_default()))
}
