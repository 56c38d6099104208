//! The server's side of a CM connection: echo SENDs, speak rping's protocol to a stock
//! client, turn other clients away.

use std::time::Duration;

use super::{notice, SERVER_WAIT};
use crate::gather::verbs::cm::{self, CmEndpoint, CmOp, Listener, Region, Wake};
use crate::model::failure::{Cause, EventKind, Failure, Step};

/// What the server learned while it served one client.
#[derive(Debug, Default)]
pub(crate) struct Served {
    /// Messages answered.
    pub(crate) echoed: u64,
    /// The client said it ran every operation: its disconnect ends a finished run.
    pub(crate) finished: bool,
    /// The client's port, as it said in a probe when its run stalled.
    pub(crate) client_port: Option<crate::model::facts::StallFacts>,
    /// The client probed: it knows what this end saw.
    pub(crate) probed: bool,
    /// The client runs in this process (selftest --cm) and reports its own failures and
    /// signals: its disconnect ends the serving, whatever came before it. Otherwise a
    /// caught SIGINT/SIGTERM stops the serving and is told to the client.
    pub(crate) own_client: bool,
}

/// Echo every SEND until the client disconnects. The client's READs and WRITEs need no
/// help from this side, only the buffer advertised in the accept. An rdmactl client's
/// disconnect ends a good run only after its end-of-run message; before it, the client
/// went away (its failure, a probe, or a signal it told of says why).
///
/// A stock client gets its own protocol: rping sends a 16-byte {addr, rkey, len} (all
/// big-endian); the server READs the "ping", answers with a 16-byte go-ahead, gets the
/// sink's {addr, rkey, len}, WRITEs the ping back and sends another go-ahead.
/// rdma_client sends 16 zero bytes and waits for 16 bytes back, which the echo covers.
///
/// A second client meanwhile is turned away with a reject that says so, instead of waiting
/// out its timeout, and a probe from the client is answered: the listener is looked at
/// every `LOOK_AROUND` without a message (a client's WRITEs and READs give this side no
/// completion) and every 256 messages (a syscall that returns at once: a fraction of a
/// per cent of 256 round trips, and a second client waits well under a second even when
/// the run crawls, as under emulation with other work on the host).
pub(crate) fn serve(
    ep: &mut CmEndpoint,
    listener: &Listener,
    served: &mut Served,
) -> std::result::Result<(), Failure> {
    const LOOK_AROUND: Duration = Duration::from_secs(1);
    let waiting_for = "SEND or disconnect from the client";
    let mut rping_read_next = true;
    let mut idle = Duration::ZERO;
    loop {
        if !served.own_client {
            if let Some(signal) = crate::interrupt::caught() {
                notice::tell(ep, notice::InBand::Interrupted { signal });
                let mut f = ep.err(Step::CmTransfer, Cause::Interrupted { signal });
                f.context.note = Some(format!("after {} messages answered", served.echoed));
                return Err(f);
            }
        }
        let wake = match ep.wait(LOOK_AROUND, waiting_for) {
            Err(Failure {
                cause: Cause::Timeout { .. },
                ..
            }) => {
                idle += LOOK_AROUND;
                if idle >= SERVER_WAIT {
                    let cause = Cause::Timeout {
                        waited_ms: SERVER_WAIT.as_millis() as u64,
                        waiting_for: Some(waiting_for),
                    };
                    return Err(ep.err(Step::CmTransfer, cause));
                }
                turn_away_others(ep, listener, served)?;
                continue;
            }
            other => other?,
        };
        idle = Duration::ZERO;
        if served.echoed % 256 == 255 {
            turn_away_others(ep, listener, served)?;
        }
        match wake {
            Wake::Disconnected if ep.foreign || served.finished || served.own_client => {
                return Ok(())
            }
            Wake::Disconnected => {
                match notice::last_word(ep) {
                    Some(notice::InBand::Done) => return Ok(()),
                    Some(notice::InBand::Interrupted { signal }) => {
                        let notice = Box::new(notice::interrupted_notice("client", signal));
                        return Err(ep.err(Step::CmTransfer, Cause::PeerReported { notice }));
                    }
                    None => {}
                }
                let mut f = ep.err(
                    Step::CmTransfer,
                    Cause::cm_event(EventKind::Disconnected, 0),
                );
                f.context.note = Some(format!(
                    "after {} messages answered, before the client's end-of-run message",
                    served.echoed
                ));
                return Err(f);
            }
            Wake::Completion(c) if c.is_recv => {
                if !ep.foreign {
                    if let Some(n) = notice::heard(ep, &c, "client")? {
                        served.finished |= n == notice::InBand::Done;
                        continue;
                    }
                }
                let n = c.byte_len as usize;
                // The client sends its next message only after our answer, so the
                // receive area stays as it is until then.
                ep.post_recv()?;
                let rping = if ep.foreign {
                    rping_info(&ep.region(Region::Recv)[..n])
                } else {
                    None
                };
                match rping {
                    Some(remote) => {
                        let len = (remote.len as usize).min(ep.len());
                        ep.set_remote(remote);
                        if rping_read_next {
                            ep.post(CmOp::Read, len, WR_READ)?;
                            wait_for(ep, WR_READ)?;
                        } else {
                            // rping writes back the string it read, NUL included.
                            let rdma = ep.region(Region::Rdma)[..len].to_vec();
                            let text_len = rdma.iter().position(|b| *b == 0).map_or(len, |p| p + 1);
                            ep.region(Region::Send)[..text_len].copy_from_slice(&rdma[..text_len]);
                            ep.post(CmOp::Write, text_len, WR_WRITE)?;
                            wait_for(ep, WR_WRITE)?;
                        }
                        rping_read_next = !rping_read_next;
                        // The client may answer the go-ahead before its send completion
                        // is polled here; the main loop collects it.
                        ep.post(CmOp::Send, RPING_INFO_LEN, WR_SEND)?;
                    }
                    None => {
                        ep.copy_region(Region::Recv, Region::Send, n);
                        ep.post(CmOp::Send, n, WR_SEND)?;
                    }
                }
                served.echoed += 1;
            }
            Wake::Completion(_) => {}
        }
    }
}

/// After this end's own failure mid-run (a work completion in error, a timeout), the
/// server stays until the client notices (its own timeout) and asks what this end saw, so
/// both ends name the cause: the client's probe is answered, and its disconnect, or the
/// client's timeout and the probe's wait, end the stay.
pub(crate) fn linger(ep: &mut CmEndpoint, listener: &Listener, served: &mut Served) {
    let deadline = std::time::Instant::now() + ep.timeout() + super::notice::PROBE_WAIT;
    while std::time::Instant::now() < deadline && !served.probed {
        if turn_away_others(ep, listener, served).is_err() {
            return;
        }
        // The QP is in error now: its flushed work requests come back as failures, which
        // say nothing new.
        match ep.wait(Duration::from_millis(200), "the client's probe") {
            Ok(Wake::Disconnected)
            | Err(Failure {
                cause:
                    Cause::CmEvent {
                        event: EventKind::Disconnected,
                        ..
                    },
                ..
            }) => return,
            _ => {}
        }
    }
}

/// Rejects every client waiting behind the one being served, naming that one; answers a
/// probe of the client being served with this end's port now, and keeps what the client
/// said of its own.
pub(super) fn turn_away_others(
    ep: &CmEndpoint,
    listener: &Listener,
    served: &mut Served,
) -> std::result::Result<(), Failure> {
    let reason = format!("busy serving {}", ep.info.peer);
    while let Some(request) = listener.next_request()? {
        if let Some(text) = cm::probe_text(&request.private_data) {
            served.client_port = notice::decode_port(&text, "client");
            served.probed = true;
            let answer = notice::encode_port(&notice::port_seen(ep, "server", None));
            request.reject(&answer);
            continue;
        }
        let other = request.peer;
        request.reject(&reason);
        if let Some(other) = other {
            crate::output::note(&crate::render::pingpong::turned_away(other, &reason));
        }
    }
    Ok(())
}

pub(super) const WR_SEND: u64 = 1;
pub(super) const WR_READ: u64 = 2;
pub(super) const WR_WRITE: u64 = 3;
pub(super) const RPING_INFO_LEN: usize = 16;

/// rping's `struct rping_rdma_info`: be64 buf, be32 rkey, be32 size.
pub(super) fn rping_info(msg: &[u8]) -> Option<cm::RemoteBuffer> {
    if msg.len() != RPING_INFO_LEN {
        return None;
    }
    let addr = u64::from_be_bytes(msg[0..8].try_into().ok()?);
    let rkey = u32::from_be_bytes(msg[8..12].try_into().ok()?);
    let len = u32::from_be_bytes(msg[12..16].try_into().ok()?);
    (addr != 0 && len != 0).then_some(cm::RemoteBuffer { addr, rkey, len })
}

/// Wait for the completion of our READ or WRITE `wr_id`; rping sends nothing until our
/// go-ahead, so a RECV meanwhile breaks its protocol.
pub(super) fn wait_for(ep: &mut CmEndpoint, wr_id: u64) -> std::result::Result<(), Failure> {
    loop {
        match ep.wait(ep.timeout(), "completion of our own work request")? {
            Wake::Completion(c) if !c.is_recv && c.wr_id == wr_id => return Ok(()),
            Wake::Completion(c) if !c.is_recv => {}
            Wake::Completion(_) => {
                let text = "the client sent a message before our answer completed";
                return Err(ep.err(Step::CmTransfer, Cause::invalid(text)));
            }
            Wake::Disconnected => {
                let event = EventKind::Disconnected;
                return Err(ep.err(Step::CmTransfer, Cause::cm_event(event, 0)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rping_info_messages() {
        let mut msg = [0u8; 16];
        msg[0..8].copy_from_slice(&0x5555_0000_1000u64.to_be_bytes());
        msg[8..12].copy_from_slice(&0x1234u32.to_be_bytes());
        msg[12..16].copy_from_slice(&64u32.to_be_bytes());
        assert_eq!(
            rping_info(&msg),
            Some(cm::RemoteBuffer {
                addr: 0x5555_0000_1000,
                rkey: 0x1234,
                len: 64
            })
        );
        // rdma_client's 16 zero bytes are a plain message to echo, not an rping advert.
        assert_eq!(rping_info(&[0u8; 16]), None);
        assert_eq!(rping_info(&msg[..12]), None);
    }
}
