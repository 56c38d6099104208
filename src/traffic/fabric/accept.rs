//! Rank 0's door: a thread per connection that checks the join (the run's token and size)
//! and then passes the rank's messages on to the coordinator.

use std::net::TcpListener;
use std::sync::mpsc;
use std::time::Duration;

use crate::model::fabric::RankInfo;
use crate::wire::rendezvous::{ControlChannel, ToLeader, ToRank};

use super::SEND;

/// The stack of a connection thread (and of a simulated rank's).
pub(super) const CONNECTION_STACK: usize = 256 * 1024;

/// What the connection threads tell the coordinator.
pub(super) enum LeaderEvent {
    Joined(u64, Box<RankInfo>, ControlChannel),
    Msg(u64, u32, ToLeader),
    Gone(u64, u32, String),
}

/// Takes connections for as long as the run lasts: a rank that joins with another token or
/// size is refused; one that joins has its messages passed on until its connection ends.
pub(super) fn accept_loop(
    listener: TcpListener,
    tx: mpsc::Sender<LeaderEvent>,
    token: String,
    size: u32,
) {
    let mut next_id = 0u64;
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        next_id += 1;
        let id = next_id;
        let tx = tx.clone();
        let token = token.clone();
        // One thread per rank: 4096 of them at scale, each needing little stack (a frame,
        // a JSON parse); the default 2 MiB reserves 8 GiB of address space for nothing.
        let spawned = std::thread::Builder::new()
            .stack_size(CONNECTION_STACK)
            .spawn(move || {
            let Ok(mut ch) = ControlChannel::new(stream) else {
                return;
            };
            // A stranger gets 10 s to say who it is, then the door closes.
            let join: Option<ToLeader> = ch.recv(Some(Duration::from_secs(10))).ok().flatten();
            let refuse = |ch: &mut ControlChannel, reason: String| {
                let _ = ch.send(&ToRank::Refused { reason }, SEND);
                ch.shutdown();
            };
            let Some(ToLeader::Join {
                token: t,
                size: s,
                info,
            }) = join
            else {
                ch.shutdown();
                return;
            };
            if t != token {
                return refuse(
                    &mut ch,
                    "the run token differs: this rank belongs to another run (--token, or the launcher's job id)".into(),
                );
            }
            if s != size || info.rank >= size {
                return refuse(
                    &mut ch,
                    format!(
                        "rank {} of size {s}, but this run has size {size}",
                        info.rank
                    ),
                );
            }
            let rank = info.rank;
            let Ok(reader) = ch.try_clone() else { return };
            if tx.send(LeaderEvent::Joined(id, info, ch)).is_err() {
                return;
            }
            let mut reader = reader;
            loop {
                match reader.recv::<ToLeader>(None) {
                    Ok(Some(msg)) => {
                        if tx.send(LeaderEvent::Msg(id, rank, msg)).is_err() {
                            return;
                        }
                    }
                    Ok(None) => {
                        let _ =
                            tx.send(LeaderEvent::Gone(id, rank, "closed its connection".into()));
                        return;
                    }
                    Err(e) => {
                        let _ = tx.send(LeaderEvent::Gone(id, rank, e.0));
                        return;
                    }
                }
            }
        });
        // Out of threads: the connection is dropped and the rank retries or reports.
        drop(spawned);
    }
}
