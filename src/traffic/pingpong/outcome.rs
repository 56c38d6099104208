//! The end of a run: its failure explained (and sent to the peer), the report printed,
//! the exit status.

use std::net::IpAddr;

use super::report::{PingpongReport, Show};
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::model::facts::Stall;
use crate::model::failure::{Cause, Failure, PeerNotice, Step};
use crate::traffic::failure::{self, Known};
use crate::wire::exchange::Conn;

/// Explains the failure, if any, shows the report and turns it into the exit status.
/// While the out-of-band connection is still open (`conn`), the cause this end found goes
/// to the peer too, so both ends print it (a peer that spoke first is not answered back).
#[allow(clippy::too_many_arguments)]
pub(super) fn finish(
    ctx: &Ctx,
    show: &mut Show,
    mut report: PingpongReport,
    failure: Option<Failure>,
    peer: Option<IpAddr>,
    gid_table_len: Option<u32>,
    plan_sends: bool,
    conn: Option<Conn>,
    stall: Option<&Stall>,
) -> Result<u8> {
    report.ok = failure.is_none();
    report.single = report.ops.single();
    if let Some(mut f) = failure {
        // Fill in what the step did not know but the run did; a listen happens before the
        // device is opened, so it has no device context.
        let opened = f.step != Step::Listen;
        if f.context.device.is_empty() && opened {
            f.context.device = report.device.clone();
        }
        // Device-level verbs (PD, MR, CQ) know no port; the run does.
        if f.context.port == 0 && f.context.device == report.device && opened {
            f.context.port = report.port;
        }
        if opened {
            f.context.gid_index = f.context.gid_index.or(report.gid_index);
        }
        f.context.local = f.context.local.take().or_else(|| report.local.clone());
        f.context.remote = f.context.remote.take().or_else(|| report.remote.clone());
        f.context.path_mtu = f.context.path_mtu.or(report.path_mtu);
        f.context.peer_addr = f.context.peer_addr.take().or_else(|| report.peer.clone());
        let known = Known {
            device: &report.device,
            port: report.port,
            gid_index: report.gid_index,
            local: report.local.as_ref(),
            remote: report.remote.as_ref(),
            // On RoCE the peer is where its GID leads, once the exchange gave it: the TCP
            // address only carried the exchange (localhost, a link-local address, or on one
            // host the server's own address as the client's source). Before that, the
            // address given is all there is; on InfiniBand the GID holds no address.
            peer: roce_peer(&report)
                .or(peer)
                .or_else(|| report.peer.as_deref().and_then(failure::peer_ip_of))
                .filter(|ip| !ip.is_loopback()),
            compat: report.exchange == "rc_pingpong",
            registered_bytes: 2 * u64::from(report.size),
            requested_mtu: report.requested_mtu,
            message_bytes: Some(report.size),
            gid_table_len,
            // open_side posts them before RTR when the run sends; WRITE and READ need none.
            recv_posted_before_rtr: plan_sends.then_some(true),
            stall,
        };
        // The peer's counters came with its notice: both ends' deltas, judged together.
        if let Cause::PeerReported { notice } = &f.cause {
            if let (Some(peer), Some(run)) = (&notice.counters, report.counters.take()) {
                report.counters = crate::traffic::counters::with_peer(run, peer);
            }
        }
        let mut x = failure::explain_failure(&ctx.sysfs, &known, &f);
        // A peer's notice answered here only when this end found a cause of its own (its GID
        // gone, its port down): the peer, which failed first, then learns it too.
        let from_peer = match &f.cause {
            Cause::PeerClosed => true,
            Cause::PeerReported { notice } => notice.code == x.explanation.code,
            _ => false,
        };
        if let (Some(mut conn), false, "native") = (conn, from_peer, report.exchange) {
            conn.send_notice(&PeerNotice {
                role: report.role.to_string(),
                message: x.message.clone(),
                code: x.explanation.code.clone(),
                summary: x.explanation.message.clone(),
                evidence: x
                    .explanation
                    .evidence
                    .iter()
                    .map(|e| e.text.clone())
                    .collect(),
                fix: x.explanation.fix_text().to_string(),
                counters: report.counters.as_ref().and_then(|c| c.local.clone()),
            });
            // The peer may have failed at the same moment: its counters complete both
            // ends' picture (the direction of a loss), and its words say it is alive.
            if let Some(notice) = conn.late_notice(std::time::Duration::from_secs(2)) {
                if let (Some(peer), Some(run)) = (&notice.counters, report.counters.take()) {
                    report.counters = crate::traffic::counters::with_peer(run, peer);
                }
                if crate::diagnose::datapath::peer_says_more(&x.explanation.code, &notice.code) {
                    // What this end saw stays in the message; the cause is the peer's.
                    let relayed = Failure {
                        cause: Cause::PeerReported {
                            notice: Box::new(notice),
                        },
                        ..f.clone()
                    };
                    x.explanation =
                        failure::explain_failure(&ctx.sysfs, &known, &relayed).explanation;
                } else {
                    x.explanation
                        .evidence
                        .push(crate::model::diagnostic::Seen::new(
                            crate::model::diagnostic::Source::PeerNotice,
                            format!("the {} failed too: {}", notice.role, notice.message),
                        ));
                }
            }
        }
        if let Some(c) = report.counters.as_mut() {
            crate::diagnose::counters::defer_to_failure(&mut c.findings, &x.explanation.code);
        }
        report.failure = Some(x);
    }
    show(&report)?;
    match report.failure {
        None => Ok(crate::exit::OK),
        Some(x) => {
            let bad_index =
                x.step == Step::QueryGid && crate::diagnose::setup::is_bad_gid_slot(&x.cause);
            if bad_index {
                return Err(Error::NoSuchGid {
                    device: report.device.clone(),
                    port: report.port,
                    index: x.context.gid_index.unwrap_or(0),
                    hint: format!("{}; {}", x.explanation.message, x.explanation.fix_text()),
                });
            }
            // Said once: in -j the report carries it; in text, on stderr with why/seen/fix.
            if ctx.json {
                Err(Error::Reported(x.exit_code()))
            } else {
                Err(Error::Explained(Box::new(x)))
            }
        }
    }
}

/// The IP the peer's GID holds, when this port is Ethernet and the exchange gave a GID. A
/// link-local GID is reached only on its own link, so no route or GID choice starts from
/// it: the exchange's address stands in, and a family mismatch asks the peer to use a GID
/// like this end's rather than this end a link-local one.
fn roce_peer(report: &PingpongReport) -> Option<IpAddr> {
    let ethernet = report
        .local
        .as_ref()
        .is_some_and(|l| l.link_layer == crate::model::device::LinkLayer::Ethernet);
    report
        .remote
        .as_ref()
        .map(|r| r.gid)
        .filter(|g| ethernet && !g.is_zero() && !crate::model::gid::is_link_local(g))
        .map(|g| g.ip())
}
