//! What the two ends of a `--cm` run say to each other besides the measured messages.
//! In band, a short SEND: the client's end of a finished run (so the server tells a
//! finished run from a client that went away), and a caught signal, either way. Out of
//! band, a probe: a client whose run stalled asks the server, in a CM connect request of
//! its own, what its port looks like now, saying what its own looks like; the server
//! answers in the reject. CM messages are small and need no working QP, so the probe gets
//! through where the run's packets do not (a netdev MTU cut below the path MTU).

use std::time::{Duration, Instant};

use crate::diagnose::cm::PortSeen;
use crate::gather::verbs::cm::{CmEndpoint, CmOp, Completion, Region, Wake};
use crate::model::device::PortState;
use crate::model::diagnostic::FailureReport;
use crate::model::facts::Facts;
use crate::model::failure::{Cause, Failure, FailureContext, PeerNotice, Step};

/// An in-band message: magic, version, kind, signal, padding.
const MAGIC: [u8; 4] = *b"RDCN";
const VERSION: u8 = 1;
const LEN: usize = 8;

/// The work request id of a notice's SEND, apart from the measured ones.
const WR_NOTICE: u64 = u64::MAX - 1;

/// How long an end waits for its notice to be acknowledged, or for a probe's answer (the
/// server looks at its listener once a second while no message comes).
pub(super) const NOTICE_WAIT: Duration = Duration::from_secs(1);
pub(super) const PROBE_WAIT: Duration = Duration::from_secs(3);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum InBand {
    /// The client ran every operation; its disconnect that follows ends a good run.
    Done,
    /// A SIGINT or SIGTERM stopped the sender.
    Interrupted { signal: i32 },
}

impl InBand {
    fn encode(self) -> [u8; LEN] {
        let mut out = [0u8; LEN];
        out[0..4].copy_from_slice(&MAGIC);
        out[4] = VERSION;
        match self {
            InBand::Done => out[5] = b'D',
            InBand::Interrupted { signal } => {
                out[5] = b'I';
                out[6] = signal.clamp(0, 255) as u8;
            }
        }
        out
    }

    /// A received message as a notice; None for a measured message (its bytes are the
    /// test pattern, which never starts with the magic).
    fn decode(msg: &[u8]) -> Option<InBand> {
        if msg.len() != LEN || msg[0..4] != MAGIC || msg[4] != VERSION {
            return None;
        }
        match msg[5] {
            b'D' => Some(InBand::Done),
            b'I' => Some(InBand::Interrupted {
                signal: i32::from(msg[6]),
            }),
            _ => None,
        }
    }
}

/// Sends `notice` and waits (briefly) until the peer's HCA acknowledged it. Best effort: a
/// QP that cannot send any more leaves the peer to find out from the disconnect.
pub(crate) fn tell(ep: &mut CmEndpoint, notice: InBand) {
    let bytes = notice.encode();
    ep.region(Region::Send)[..LEN].copy_from_slice(&bytes);
    let deadline = Instant::now() + NOTICE_WAIT.min(ep.timeout());
    // A window of WRITEs may still fill the send queue: each completion makes room.
    let mut posted = false;
    while Instant::now() < deadline {
        if !posted {
            posted = ep.post(CmOp::Send, LEN, WR_NOTICE).is_ok();
        }
        let left = deadline.saturating_duration_since(Instant::now());
        match ep.wait(left, "completion of a notice to the peer") {
            Ok(Wake::Completion(c)) if posted && !c.is_recv && c.wr_id == WR_NOTICE => return,
            Ok(Wake::Completion(c)) if c.is_recv => {
                let _ = ep.post_recv();
            }
            Ok(Wake::Completion(_)) => {}
            Ok(Wake::Disconnected) | Err(_) => return,
        }
    }
}

/// A received message that is a notice: the peer's signal becomes this end's failure,
/// its end of run is noted (`Ok(Some)`); a measured message is `Ok(None)`.
pub(crate) fn heard(
    ep: &mut CmEndpoint,
    c: &Completion,
    peer_role: &'static str,
) -> Result<Option<InBand>, Failure> {
    if !c.is_recv || c.byte_len as usize != LEN {
        return Ok(None);
    }
    let Some(notice) = InBand::decode(&ep.region(Region::Recv)[..LEN]) else {
        return Ok(None);
    };
    ep.post_recv()?;
    if let InBand::Interrupted { signal } = notice {
        let cause = Cause::PeerReported {
            notice: Box::new(interrupted_notice(peer_role, signal)),
        };
        return Err(ep.err(Step::CmTransfer, cause));
    }
    Ok(Some(notice))
}

/// A notice the peer sent just before its disconnect, still in the CQ when the disconnect
/// was seen first (the CM channel is looked at before the CQ now and then).
pub(crate) fn last_word(ep: &mut CmEndpoint) -> Option<InBand> {
    // The flushed receives that follow a disconnect end the look (an error completion).
    while let Ok(Some(c)) = ep.try_completion() {
        if c.is_recv && c.byte_len as usize == LEN {
            if let Some(n) = InBand::decode(&ep.region(Region::Recv)[..LEN]) {
                return Some(n);
            }
        }
    }
    None
}

/// The peer's signal in the words this end would use for its own.
pub(crate) fn interrupted_notice(role: &'static str, signal: i32) -> PeerNotice {
    let f = Failure::new(
        Step::CmTransfer,
        Cause::Interrupted { signal },
        FailureContext::default(),
    );
    let x = crate::diagnose::explain(&f, &Facts::default());
    PeerNotice {
        role: role.to_string(),
        message: f.cause.to_string(),
        code: x.code.clone(),
        summary: x.message.clone(),
        evidence: Vec::new(),
        fix: x.fix_text().to_string(),
        counters: None,
    }
}

/// This end's port and the QP's GID slot now, against what the QP was connected with.
pub(crate) fn port_seen(ep: &CmEndpoint) -> Option<PortSeen> {
    let now = ep.port_now()?;
    let info = &ep.info;
    Some(PortSeen {
        port: format!("{}/{}", info.device, info.port),
        state: PortState::from_number(u32::from(now.state))
            .unwrap_or_else(|| PortState::Other(now.state.to_string())),
        active_mtu: now.active_mtu,
        path_mtu: info.path_mtu,
        gid_index: info.sgid_index,
        gid_in_table: match (now.gid, info.sgid) {
            (Some(now), Some(then)) => now == then,
            (now, None) => now.is_some(),
            (None, Some(_)) => false,
        },
    })
}

/// A port as a probe or its answer carries it: `ACTIVE 512 1024 1+ rxe1/1` (state, active
/// MTU or `?`, path MTU, GID index with `+` still in the table or `-` gone, the port).
/// 40 bytes at most fit a reject: the port name goes first when space runs out.
pub(crate) fn encode_port(p: &PortSeen) -> String {
    let head = format!(
        "{} {} {} {}{}",
        p.state,
        p.active_mtu.map_or("?".to_string(), |m| m.to_string()),
        p.path_mtu,
        p.gid_index,
        if p.gid_in_table { '+' } else { '-' }
    );
    let full = format!("{head} {}", p.port);
    if full.len() <= 40 {
        full
    } else {
        head
    }
}

pub(crate) fn decode_port(text: &str) -> Option<PortSeen> {
    let mut words = text.split_whitespace();
    let state = PortState::from_name(words.next()?);
    let active_mtu = words.next()?.parse().ok();
    let path_mtu = words.next()?.parse().ok()?;
    let gid = words.next()?;
    let (index, mark) = gid.split_at(gid.len().checked_sub(1)?);
    Some(PortSeen {
        state,
        active_mtu,
        path_mtu,
        gid_index: index.parse().ok()?,
        gid_in_table: mark == "+",
        port: words.next().unwrap_or("its port").to_string(),
    })
}

/// A stalled run explained with both ports: this end's, and the peer's as it said.
pub(crate) fn explain_stalled(
    f: &Failure,
    stall: &crate::diagnose::cm::CmStall,
    facts: &Facts,
) -> FailureReport {
    FailureReport::new(f, crate::diagnose::cm::explain_stall(f, facts, stall))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_band_notices_round_trip_and_never_match_the_pattern() {
        for n in [InBand::Done, InBand::Interrupted { signal: 15 }] {
            assert_eq!(InBand::decode(&n.encode()), Some(n));
        }
        // A measured message of the notice's length carries the test pattern.
        let pattern: Vec<u8> = (0..LEN).map(super::super::pattern).collect();
        assert_eq!(InBand::decode(&pattern), None);
        assert_eq!(InBand::decode(&InBand::Done.encode()[..7]), None);
    }

    #[test]
    fn a_port_fits_a_reject_and_reads_back() {
        let p = PortSeen {
            port: "rxe1/1".into(),
            state: PortState::Active,
            active_mtu: Some(512),
            path_mtu: 1024,
            gid_index: 1,
            gid_in_table: true,
        };
        let text = encode_port(&p);
        assert_eq!(text, "ACTIVE 512 1024 1+ rxe1/1");
        assert_eq!(decode_port(&text), Some(p.clone()));
        // A long device name is left out rather than cut.
        let long = PortSeen {
            port: "mlx5_bond_0_with_a_very_long_name/1".into(),
            gid_in_table: false,
            active_mtu: None,
            ..p
        };
        let text = encode_port(&long);
        assert_eq!(text, "ACTIVE ? 1024 1-");
        let back = decode_port(&text).unwrap();
        assert_eq!(back.active_mtu, None);
        assert!(!back.gid_in_table);
        assert_eq!(back.port, "its port");
        assert_eq!(decode_port("no run"), None);
    }

    /// The peer's signal is told in the words of the `interrupted` rule.
    #[test]
    fn a_peer_signal_reads_as_the_interrupted_rule() {
        let n = interrupted_notice("client", libc::SIGINT);
        assert_eq!(n.code, crate::model::codes::INTERRUPTED);
        assert_eq!(n.message, "interrupted by SIGINT");
        assert!(n.summary.contains("stopped by SIGINT"), "{}", n.summary);
    }
}
