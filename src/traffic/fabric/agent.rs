//! What every rank runs: join rank 0, then run the pair tests it asks for (the server end
//! or the client end of a `pingpong` child) and send each result back, until rank 0 says
//! the run is done.

use std::time::{Duration, Instant};

use crate::cli::FabricArgs;
use crate::error::{Error, Result};
use crate::model::fabric::{PairEnd, Placement, RankInfo};
use crate::wire::rendezvous::{self as wire, PairTest, ToLeader, ToRank};

use super::child::{pingpong_command, ChildRun};
use super::simulate::simulated;
use super::{secs, SEND};

pub fn agent(
    args: &FabricArgs,
    place: &Placement,
    token: &str,
    info: RankInfo,
    (host, port): &(String, u16),
    join_deadline: Instant,
) -> Result<u8> {
    let mut ch = wire::connect(host, *port, join_deadline).map_err(|e| {
        Error::Failed(format!(
            "rank {}: {e}; is rank 0 running (--rendezvous {host}:{port})?",
            place.rank
        ))
    })?;
    let ours = info.clone();
    ch.send(
        &ToLeader::Join {
            token: token.to_string(),
            size: place.size,
            info: Box::new(info),
        },
        SEND,
    )
    .map_err(|e| Error::Failed(format!("rank {}: {e}", place.rank)))?;
    let lost = |e: String| Error::Failed(format!("rank {}: {e}", place.rank));
    loop {
        // Between tasks a rank may idle for many rounds: no deadline, but rank 0 closing
        // the connection (or dying) ends the wait.
        let msg: Option<ToRank> = ch.recv(None).map_err(|e| lost(e.0))?;
        match msg {
            None => {
                return Err(lost(
                    "rank 0 closed the control connection before the run ended".into(),
                ))
            }
            Some(ToRank::Welcome) => {}
            Some(ToRank::Refused { reason }) => {
                return Err(Error::Usage(format!(
                    "rank {}: rank 0 refused this rank: {reason}",
                    place.rank
                )))
            }
            Some(ToRank::Done { exit }) => return Ok(exit),
            Some(ToRank::Serve { round, a, b, test }) => {
                let end = serve(args, &ours, &test, &mut || {
                    ch.send(&ToLeader::Ready { round, a, b }, SEND).is_ok()
                });
                ch.send(
                    &ToLeader::Result {
                        round,
                        a,
                        b,
                        client: false,
                        end: Box::new(end),
                    },
                    SEND,
                )
                .map_err(|e| lost(e.0))?;
            }
            Some(ToRank::Connect {
                round,
                a,
                b,
                host,
                port,
                test,
            }) => {
                let end = connect(args, &ours, &test, &host, port);
                ch.send(
                    &ToLeader::Result {
                        round,
                        a,
                        b,
                        client: true,
                        end: Box::new(end),
                    },
                    SEND,
                )
                .map_err(|e| lost(e.0))?;
            }
        }
    }
}

fn serve(
    args: &FabricArgs,
    me: &RankInfo,
    test: &PairTest,
    ready: &mut dyn FnMut() -> bool,
) -> PairEnd {
    let start = Instant::now();
    if args.simulate {
        ready();
        return simulated(me, test);
    }
    let child = match pingpong_command(me, test, me.pair_port).spawn() {
        Ok(c) => c,
        Err(e) => return PairEnd::problem(format!("cannot start pingpong: {e}"), 0.0),
    };
    let mut run = ChildRun::new(child);
    // The partner may connect once the server listens; a server that dies first reports.
    let listen_by = Instant::now() + Duration::from_secs(10);
    loop {
        if crate::gather::procfs::listening(me.pair_port) {
            ready();
            break;
        }
        if run.exited() || Instant::now() >= listen_by {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    run.finish(start, secs(test.deadline), me)
}

fn connect(args: &FabricArgs, me: &RankInfo, test: &PairTest, host: &str, port: u16) -> PairEnd {
    let start = Instant::now();
    if args.simulate {
        return simulated(me, test);
    }
    let mut c = pingpong_command(me, test, port);
    c.arg(host);
    match c.spawn() {
        Ok(child) => ChildRun::new(child).finish(start, secs(test.deadline), me),
        Err(e) => PairEnd::problem(format!("cannot start pingpong: {e}"), 0.0),
    }
}
