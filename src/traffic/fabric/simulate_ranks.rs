//! `--simulate-ranks N`: N ranks as threads of one process, for control-plane scale tests
//! (tests/fabric_scale.rs). Each simulated rank is one thread on a small stack that joins
//! rank 0, answers its pair tests at once (`--simulate`), and says it is alive when idle:
//! the whole agent (a reader and a heartbeat thread beside it, a child per pair test) is for
//! real endpoints, and 4095 ranks of it would be 12,000 threads. Rank 0, the product, runs
//! unchanged.

use std::time::{Duration, Instant};

use crate::cli::FabricArgs;
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::model::fabric::{Placement, RankInfo};
use crate::wire::rendezvous::{self as wire, Polled, ToLeader, ToRank, HEARTBEAT, HUNG_AFTER};

use super::accept::CONNECTION_STACK;
use super::rank_info::rank_info;
use super::simulate::simulated;
use super::SEND;

/// Control-plane scale tests: ranks `place.rank ..` (n of them) as threads of this process.
pub fn simulate_many(
    ctx: &Ctx,
    args: &FabricArgs,
    place: &Placement,
    token: &str,
    n: u32,
    connect_to: &(String, u16),
    join_deadline: Instant,
) -> Result<u8> {
    let last = place.rank.saturating_add(n).min(place.size);
    std::thread::scope(|scope| {
        let mut handles = Vec::new();
        for rank in place.rank..last {
            let me = Placement {
                rank,
                ..place.clone()
            };
            let info = rank_info(ctx, args, &me, args.port_base.wrapping_add(rank as u16));
            let h = std::thread::Builder::new()
                .stack_size(CONNECTION_STACK)
                .spawn_scoped(scope, move || {
                    simulated_rank(&me, token, info, connect_to, join_deadline)
                })
                .map_err(|e| {
                    Error::Failed(format!(
                        "simulated rank {rank}: cannot start its thread: {e} (ulimit -u, /proc/sys/kernel/threads-max)"
                    ))
                })?;
            handles.push(h);
        }
        let mut code = 0;
        for h in handles {
            match h.join() {
                Ok(Ok(c)) => code = code.max(c),
                Ok(Err(e)) => return Err(e),
                Err(_) => return Err(Error::Failed("a simulated rank panicked".into())),
            }
        }
        Ok(code)
    })
}

/// One simulated rank: join, answer every pair test at once, say alive every `HEARTBEAT`,
/// exit with the status rank 0 says; rank 0 silent for `HUNG_AFTER` is an error.
fn simulated_rank(
    place: &Placement,
    token: &str,
    info: RankInfo,
    (host, port): &(String, u16),
    join_deadline: Instant,
) -> Result<u8> {
    let lost = |e: String| Error::Failed(format!("simulated rank {}: {e}", place.rank));
    let mut ch = wire::connect(host, *port, join_deadline).map_err(|e| lost(e.0))?;
    let me = info.clone();
    ch.send(
        &ToLeader::Join {
            token: token.to_string(),
            size: place.size,
            info: Box::new(info),
        },
        SEND,
    )
    .map_err(|e| lost(e.0))?;
    let mut said = Instant::now();
    let mut heard = Instant::now();
    loop {
        let wait = HEARTBEAT.saturating_sub(said.elapsed());
        let msg = match ch.poll::<ToRank>(Some(wait.max(Duration::from_millis(1)))) {
            Ok(Polled::Msg(m)) => m,
            Ok(Polled::Idle) => {
                if heard.elapsed() >= HUNG_AFTER {
                    return Err(lost(format!(
                        "rank 0 ({host}:{port}) sent nothing for {:.0} s",
                        heard.elapsed().as_secs_f64()
                    )));
                }
                ch.send(&ToLeader::Alive, SEND).map_err(|e| lost(e.0))?;
                said = Instant::now();
                continue;
            }
            Ok(Polled::Closed) => {
                return Err(lost(
                    "rank 0 closed the control connection before the run ended".into(),
                ))
            }
            Err(e) => return Err(lost(e.0)),
        };
        heard = Instant::now();
        let sent = match msg {
            ToRank::Welcome | ToRank::Stop { .. } | ToRank::Alive => Ok(()),
            ToRank::Refused { reason } => {
                return Err(Error::Usage(format!(
                    "rank {}: rank 0 refused this rank: {reason}",
                    place.rank
                )))
            }
            ToRank::Done { exit } => return Ok(exit),
            ToRank::Serve { round, a, b, test } => ch
                .send(
                    &ToLeader::Ready {
                        round,
                        a,
                        b,
                        port: me.pair_port,
                    },
                    SEND,
                )
                .and_then(|()| {
                    ch.send(
                        &ToLeader::Result {
                            round,
                            a,
                            b,
                            client: false,
                            end: Box::new(simulated(&me, &test)),
                        },
                        SEND,
                    )
                }),
            ToRank::Connect {
                round, a, b, test, ..
            } => ch.send(
                &ToLeader::Result {
                    round,
                    a,
                    b,
                    client: true,
                    end: Box::new(simulated(&me, &test)),
                },
                SEND,
            ),
        };
        sent.map_err(|e| lost(e.0))?;
        said = Instant::now();
    }
}
