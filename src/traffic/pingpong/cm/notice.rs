//! What the two ends of a `--cm` run say to each other besides the measured messages.
//! In band, a short SEND: the client's end of a finished run (so the server tells a
//! finished run from a client that went away), and a caught signal, either way. Out of
//! band, a probe: a client whose run stalled asks the server, in a CM connect request of
//! its own, what its port looks like now, saying what its own looks like; the server
//! answers in the reject. CM messages are small and need no working QP, so the probe gets
//! through where the run's packets do not (a netdev MTU cut below the path MTU).

use std::path::Path;
use std::time::{Duration, Instant};

use crate::gather::verbs::cm::{CmEndpoint, CmOp, Completion, Region, Wake};
use crate::model::diagnostic::FailureReport;
use crate::model::facts::{Facts, StallFacts};
use crate::model::failure::{Cause, Failure, FailureContext, PeerNotice, Step};
pub(crate) use crate::wire::cm::{decode_port, encode_port, InBand, LEN};

/// The work request id of a notice's SEND, apart from the measured ones.
const WR_NOTICE: u64 = u64::MAX - 1;

/// How long an end waits for its notice to be acknowledged, or for a probe's answer (the
/// server looks at its listener once a second while no message comes).
pub(super) const NOTICE_WAIT: Duration = Duration::from_secs(1);
pub(super) const PROBE_WAIT: Duration = Duration::from_secs(3);

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

/// This end's port now, against what the QP was connected with: the read the TCP
/// exchange makes too (`model::facts::PortNow`), as the port part of its stall facts.
/// `sysfs` names the port's netdev for a fix; a probe's answer has no room for it.
pub(crate) fn port_seen(ep: &CmEndpoint, role: &str, sysfs: Option<&Path>) -> StallFacts {
    let info = &ep.info;
    let netdev = sysfs.and_then(|root| {
        crate::gather::sysfs::SysfsRoot::new(root)
            .port(&info.device, u32::from(info.port))
            .ok()?
            .netdev
            .map(|n| n.name)
    });
    StallFacts {
        role: role.to_string(),
        device: info.device.clone(),
        port: u32::from(info.port),
        netdev,
        now: ep.port_now(),
        path_mtu: Some(info.path_mtu),
        gid_index: Some(u32::from(info.sgid_index)),
        gid: info.sgid.map(|g| g.ipv6().to_string()),
        ..StallFacts::default()
    }
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

    /// The peer's signal is told in the words of the `interrupted` rule.
    #[test]
    fn a_peer_signal_reads_as_the_interrupted_rule() {
        let n = interrupted_notice("client", libc::SIGINT);
        assert_eq!(n.code, crate::model::codes::INTERRUPTED);
        assert_eq!(n.message, "interrupted by SIGINT");
        assert!(n.summary.contains("stopped by SIGINT"), "{}", n.summary);
    }
}
