//! What every rank runs: join rank 0, then run the pair tests it asks for (the server end
//! or the client end of a `pingpong` child) and send each result back, until rank 0 says
//! the run is done. Two threads beside it: one reads rank 0's messages (so a `Stop` or
//! `Done` cuts a running pair test short), one says every `HEARTBEAT` that this process is
//! alive (so a stopped process is told apart from a dead one). A caught SIGINT/SIGTERM is
//! told to rank 0, which stops the run and reports.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use crate::cli::FabricArgs;
use crate::error::{Error, Result};
use crate::model::fabric::{PairEnd, Placement, RankInfo};
use crate::wire::rendezvous::{
    self as wire, ControlChannel, PairTest, Polled, ToLeader, ToRank, WireError, HEARTBEAT,
    HUNG_AFTER,
};

use super::child::{pingpong_command, ChildRun};
use super::pair_port::{listener_of, port_taken, Holder, PortCandidates, PortListener};
use super::simulate::simulated;
use super::{secs, SEND};

/// How long an interrupted rank waits for rank 0's `Done` before it exits on its own.
const DONE_WAIT: Duration = Duration::from_secs(10);

/// What the agent's threads share: the writing half of the control channel, and what
/// rank 0 said to stop.
struct Shared {
    writer: Mutex<ControlChannel>,
    /// The run is over for this rank (rank 0 said `Done`, closed, or the agent returned).
    over: AtomicBool,
    /// The pair tests rank 0 said to stop, as (round, a, b).
    stopped: Mutex<BTreeSet<(u32, u32, u32)>>,
}

impl Shared {
    fn send(&self, msg: &ToLeader) -> std::result::Result<(), WireError> {
        match self.writer.lock() {
            Ok(mut w) => w.send(msg, SEND),
            Err(_) => Err(WireError("the control channel's writer panicked".into())),
        }
    }

    fn cut(&self, round: u32, a: u32, b: u32) -> bool {
        self.over.load(Ordering::Relaxed)
            || crate::interrupt::caught().is_some()
            || self
                .stopped
                .lock()
                .map(|s| s.contains(&(round, a, b)))
                .unwrap_or(false)
    }
}

type Incoming = std::result::Result<Option<ToRank>, WireError>;

pub fn agent(
    args: &FabricArgs,
    place: &Placement,
    token: &str,
    info: RankInfo,
    (host, port): &(String, u16),
    join_deadline: Instant,
) -> Result<u8> {
    let lost = |e: String| Error::Failed(format!("rank {}: {e}", place.rank));
    let ch = wire::connect(host, *port, join_deadline).map_err(|e| {
        Error::Failed(format!(
            "rank {}: {e}; is rank 0 running (--rendezvous {host}:{port})?",
            place.rank
        ))
    })?;
    let reader = ch.try_clone().map_err(|e| lost(e.to_string()))?;
    let shared = Arc::new(Shared {
        writer: Mutex::new(ch),
        over: AtomicBool::new(false),
        stopped: Mutex::new(BTreeSet::new()),
    });
    let ours = info.clone();
    shared
        .send(&ToLeader::Join {
            token: token.to_string(),
            size: place.size,
            info: Box::new(info),
        })
        .map_err(|e| lost(e.0))?;
    let (tx, rx) = mpsc::channel();
    read_rank0(reader, Arc::clone(&shared), tx, format!("{host}:{port}"));
    heartbeat(Arc::clone(&shared));
    let outcome = tasks(args, place, &ours, &shared, &rx);
    shared.over.store(true, Ordering::Relaxed);
    outcome
}

/// Rank 0's messages, passed on to the task loop; `Stop` and `Done` also act at once on a
/// running pair test.
fn read_rank0(
    mut reader: ControlChannel,
    shared: Arc<Shared>,
    tx: mpsc::Sender<Incoming>,
    rendezvous: String,
) {
    std::thread::spawn(move || loop {
        // Between tasks a rank may idle for many rounds, but rank 0 says it is alive every
        // HEARTBEAT: silence for HUNG_AFTER, its connection open, is a hung rank 0.
        let msg = match reader.poll::<ToRank>(Some(HUNG_AFTER)) {
            Ok(Polled::Msg(ToRank::Alive)) => continue,
            Ok(Polled::Msg(m)) => Ok(Some(m)),
            Ok(Polled::Closed) => Ok(None),
            Ok(Polled::Idle) => Err(WireError(rank0_hung(&rendezvous, &reader.peer))),
            Err(e) => Err(e),
        };
        let last = match &msg {
            Ok(Some(ToRank::Stop { round, a, b })) => {
                if let Ok(mut s) = shared.stopped.lock() {
                    s.insert((*round, *a, *b));
                }
                continue;
            }
            Ok(Some(ToRank::Done { .. })) | Ok(None) | Err(_) => {
                shared.over.store(true, Ordering::Relaxed);
                true
            }
            Ok(Some(_)) => false,
        };
        if tx.send(msg).is_err() || last {
            return;
        }
    });
}

/// Says "alive" every `HEARTBEAT` until the run is over or the channel fails: a process
/// that is stopped says nothing, while its connection stays open.
fn heartbeat(shared: Arc<Shared>) {
    std::thread::spawn(move || loop {
        std::thread::sleep(HEARTBEAT);
        if shared.over.load(Ordering::Relaxed) || shared.send(&ToLeader::Alive).is_err() {
            return;
        }
    });
}

fn tasks(
    args: &FabricArgs,
    place: &Placement,
    ours: &RankInfo,
    shared: &Shared,
    rx: &mpsc::Receiver<Incoming>,
) -> Result<u8> {
    let lost = |e: String| Error::Failed(format!("rank {}: {e}", place.rank));
    // The signal caught here, once told to rank 0, and when.
    let mut told: Option<(i32, Instant)> = None;
    loop {
        if told.is_none() {
            if let Some(signal) = crate::interrupt::caught() {
                // Rank 0 may be gone already: the exit status says the signal either way.
                let _ = shared.send(&ToLeader::Interrupted { signal });
                told = Some((signal, Instant::now()));
            }
        }
        if let Some((signal, at)) = told {
            if at.elapsed() >= DONE_WAIT {
                return Ok(signal_exit(signal));
            }
        }
        let msg = match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(m) => m,
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return match told {
                    Some((signal, _)) => Ok(signal_exit(signal)),
                    None => Err(lost("rank 0's control connection ended".into())),
                }
            }
        };
        let msg = match (msg, told) {
            (Ok(Some(m)), _) => m,
            // Rank 0 ended the run after this rank's signal: the signal's status.
            (Ok(None) | Err(_), Some((signal, _))) => return Ok(signal_exit(signal)),
            (Ok(None), None) => {
                return Err(lost(
                    "rank 0 closed the control connection before the run ended".into(),
                ))
            }
            (Err(e), None) => return Err(lost(e.0)),
        };
        match msg {
            ToRank::Welcome | ToRank::Stop { .. } | ToRank::Alive => {}
            ToRank::Refused { reason } => {
                return Err(Error::Usage(format!(
                    "rank {}: rank 0 refused this rank: {reason}",
                    place.rank
                )))
            }
            ToRank::Done { exit } => return Ok(exit),
            // An interrupted rank runs nothing more: rank 0 is ending the run.
            ToRank::Serve { .. } | ToRank::Connect { .. } if told.is_some() => {}
            ToRank::Serve { round, a, b, test } => {
                let cut = || shared.cut(round, a, b);
                let end = serve(args, place.size, ours, &test, &cut, &mut |port| {
                    shared.send(&ToLeader::Ready { round, a, b, port }).is_ok()
                });
                report(shared, round, a, b, false, end).map_err(|e| lost(e.0))?;
            }
            ToRank::Connect {
                round,
                a,
                b,
                host,
                port,
                test,
            } => {
                let cut = || shared.cut(round, a, b);
                let end = connect(args, ours, &test, &host, port, &cut);
                report(shared, round, a, b, true, end).map_err(|e| lost(e.0))?;
            }
        }
    }
}

/// A pair test's result back to rank 0, unless it was cut short: rank 0 stopped it (it
/// gave up on the pair already) or a signal did (then rank 0 is told that instead).
fn report(
    shared: &Shared,
    round: u32,
    a: u32,
    b: u32,
    client: bool,
    end: Option<PairEnd>,
) -> std::result::Result<(), WireError> {
    match end {
        Some(end) if crate::interrupt::caught().is_none() => shared.send(&ToLeader::Result {
            round,
            a,
            b,
            client,
            end: Box::new(end),
        }),
        _ => Ok(()),
    }
}

/// Why this rank gives up on a rank 0 that stopped talking: its address as given and as
/// connected, what was expected, and where to look.
fn rank0_hung(rendezvous: &str, peer: &std::net::SocketAddr) -> String {
    format!(
        "rank 0 ({rendezvous}, connected to {peer}) is hung: its control connection is open but it sent nothing for {:.0} s (rank 0 sends every {:.0} s): the process is alive but stopped or stuck; on that host, `ps -o pid,stat,wchan:32,cmd -C rdmactl` (stat T: stopped, `kill -CONT` it; D: stuck in the kernel)",
        HUNG_AFTER.as_secs_f64(),
        HEARTBEAT.as_secs_f64()
    )
}

/// 128 + the signal, as every command that a signal stops exits.
fn signal_exit(signal: i32) -> u8 {
    128u8.saturating_add(signal.clamp(0, 127) as u8)
}

/// The server end: a `pingpong` child on this rank's pair port, or on the next free one
/// when another process holds it (another fabric run on this host); `ready` says which
/// once the child itself listens there, so the partner never reaches a stranger's server.
/// None when the test was cut short.
fn serve(
    args: &FabricArgs,
    size: u32,
    me: &RankInfo,
    test: &PairTest,
    cut: &dyn Fn() -> bool,
    ready: &mut dyn FnMut(u16) -> bool,
) -> Option<PairEnd> {
    let start = Instant::now();
    if args.simulate {
        ready(me.pair_port);
        return Some(simulated(me, test));
    }
    let mut taken: Vec<(u16, Holder)> = Vec::new();
    for port in PortCandidates::new(me.pair_port, size) {
        if let Some(holder) = port_taken(port) {
            taken.push((port, holder));
            continue;
        }
        let child = match pingpong_command(me, test, port).spawn() {
            Ok(c) => c,
            Err(e) => return Some(PairEnd::problem(format!("cannot start pingpong: {e}"), 0.0)),
        };
        let pid = child.id();
        let mut run = ChildRun::new(child);
        // The partner may connect once the server listens; a server that dies first reports.
        let listen_by = Instant::now() + Duration::from_secs(10);
        let mut listens = false;
        loop {
            if listener_of(port, pid) == PortListener::Ours {
                listens = true;
                break;
            }
            if run.exited() || Instant::now() >= listen_by || cut() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        if !listens && run.exited() {
            if let PortListener::Other(holder) = listener_of(port, pid) {
                // Another process bound the port between the probe and the child: the
                // child's bind failed. Take the next port.
                let _ = run.finish(start, secs(test.deadline), me, cut);
                taken.push((port, holder));
                continue;
            }
        }
        if listens {
            if !taken.is_empty() {
                crate::output::note(&crate::render::fabric::port_moved_line(me, &taken, port));
            }
            ready(port);
        }
        return run.finish(start, secs(test.deadline), me, cut);
    }
    Some(PairEnd::problem(
        crate::render::fabric::no_free_port(me, &taken),
        start.elapsed().as_secs_f64(),
    ))
}

fn connect(
    args: &FabricArgs,
    me: &RankInfo,
    test: &PairTest,
    host: &str,
    port: u16,
    cut: &dyn Fn() -> bool,
) -> Option<PairEnd> {
    let start = Instant::now();
    if args.simulate {
        return Some(simulated(me, test));
    }
    let mut c = pingpong_command(me, test, port);
    c.arg(host);
    match c.spawn() {
        Ok(child) => ChildRun::new(child).finish(start, secs(test.deadline), me, cut),
        Err(e) => Some(PairEnd::problem(format!("cannot start pingpong: {e}"), 0.0)),
    }
}
