//! Rank 0's coordinator: it takes the joins, runs the rounds and the retests (round.rs),
//! builds the report (report.rs), has it printed, and only then tells the other ranks to
//! exit.

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use crate::diagnose::fabric::BaselineSeen;
use crate::error::{Error, Result};
use crate::model::fabric::{Departure, FabricReport, GoneRank, Pattern, RankInfo, Thresholds};
use crate::wire::rendezvous::{
    ControlChannel, PairTest, ToLeader, ToRank, WireError, HEARTBEAT, HUNG_AFTER,
};

use super::accept::{accept_loop, LeaderEvent};
use super::round_state::RoundState;
use super::spool::Spool;
use super::SEND;

/// How rank 0 runs the pair tests and judges them.
pub struct LeaderConfig {
    pub token: String,
    pub size: u32,
    pub pattern: Pattern,
    pub test: PairTest,
    pub thresholds: Thresholds,
    pub join_deadline: Instant,
    /// A progress line on stderr.
    pub progress: bool,
    pub launcher: &'static str,
    /// Pairs tested at once within a round.
    pub parallel: u32,
    /// `--csv`: every pair, written as the report is built (rank 0 does not keep them).
    pub csv: Option<std::path::PathBuf>,
}

pub(super) struct Leader {
    pub(super) cfg: LeaderConfig,
    pub(super) events: mpsc::Receiver<LeaderEvent>,
    pub(super) conns: Channels,
    pub(super) infos: BTreeMap<u32, RankInfo>,
    pub(super) gone: BTreeMap<u32, GoneRank>,
    /// When each rank last said anything: a silent rank with an open connection is hung.
    pub(super) last_heard: BTreeMap<u32, Instant>,
    /// The signal that stopped the run and the rank that caught it.
    pub(super) interrupted: Option<(i32, u32)>,
    pub(super) round_now: u32,
    pub(super) started: Instant,
    /// When `watch_hung` last looked.
    pub(super) watched: Instant,
    pub(super) pairs_done: usize,
    pub(super) pairs_total: usize,
    /// Every finished pair, on disk; and the first runs' baseline, gathered as they came.
    pub(super) spool: Spool,
    pub(super) seen: BaselineSeen,
    /// The first error of the spool or the CSV: the report still prints, then the run fails
    /// with it.
    pub(super) failed: Option<Error>,
}

/// Prints rank 0's report and says the exit status.
pub type PrintReport = Box<dyn FnOnce(&FabricReport) -> Result<u8> + Send>;

/// Rank 0's coordinator: the run, then the report printed, then the others told to exit
/// (in that order: a launcher that ends the job when a rank exits must not cut the report).
pub fn lead(listener: TcpListener, cfg: LeaderConfig, print: PrintReport) -> Result<u8> {
    let spool = Spool::new()?;
    let (tx, rx) = mpsc::channel();
    let token = cfg.token.clone();
    let size = cfg.size;
    std::thread::spawn(move || accept_loop(listener, tx, token, size));
    let mut leader = Leader {
        cfg,
        events: rx,
        conns: Channels::default(),
        infos: BTreeMap::new(),
        gone: BTreeMap::new(),
        last_heard: BTreeMap::new(),
        interrupted: None,
        round_now: 0,
        started: Instant::now(),
        watched: Instant::now(),
        pairs_done: 0,
        pairs_total: 0,
        spool,
        seen: BaselineSeen::default(),
        failed: None,
    };
    let beating = Arc::new(AtomicBool::new(true));
    heartbeat(leader.conns.clone(), Arc::clone(&beating));
    let report = leader.run();
    let printed = print(&report);
    beating.store(false, Ordering::Relaxed);
    let printed = match (printed, leader.failed.take()) {
        (Ok(_), Some(e)) => Err(e),
        (printed, _) => printed,
    };
    leader.done(match &printed {
        Ok(code) => *code,
        Err(e) => e.exit_code(),
    });
    printed
}

/// The welcomed ranks' control channels, shared by the coordinator and the heartbeat
/// thread; each channel has its own lock, so one frame is written whole.
#[derive(Clone, Default)]
pub(super) struct Channels(Arc<Mutex<ByRank>>);

/// Each rank's connection id and its channel.
type ByRank = BTreeMap<u32, (u64, Arc<Mutex<ControlChannel>>)>;

impl Channels {
    fn map(&self) -> std::sync::MutexGuard<'_, ByRank> {
        // A panicked holder left the map whole: every change is one insert or remove.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn insert(&self, rank: u32, id: u64, ch: ControlChannel) {
        self.map().insert(rank, (id, Arc::new(Mutex::new(ch))));
    }

    fn id(&self, rank: u32) -> Option<u64> {
        self.map().get(&rank).map(|c| c.0)
    }

    fn remove(&self, rank: u32) {
        self.map().remove(&rank);
    }

    pub(super) fn ranks(&self) -> Vec<u32> {
        self.map().keys().copied().collect()
    }

    fn all(&self) -> Vec<Arc<Mutex<ControlChannel>>> {
        self.map().values().map(|c| Arc::clone(&c.1)).collect()
    }

    /// None when the rank has no open channel.
    pub(super) fn send(
        &self,
        rank: u32,
        msg: &ToRank,
        timeout: Duration,
    ) -> Option<Result<(), WireError>> {
        let ch = self.map().get(&rank).map(|c| Arc::clone(&c.1))?;
        let mut ch = ch.lock().unwrap_or_else(|e| e.into_inner());
        Some(ch.send(msg, timeout))
    }
}

/// Rank 0 says it is alive to every welcomed rank every `HEARTBEAT`, from its own thread,
/// so a coordinator busy judging millions of pairs still beats; a rank that hears nothing
/// for `HUNG_AFTER` names rank 0 hung. A rank whose socket takes no heartbeat within a
/// second is itself stuck (rank 0's hung-rank watch names it).
fn heartbeat(conns: Channels, beating: Arc<AtomicBool>) {
    std::thread::spawn(move || {
        while beating.load(Ordering::Relaxed) {
            std::thread::sleep(HEARTBEAT);
            if !beating.load(Ordering::Relaxed) {
                return;
            }
            for ch in conns.all() {
                let mut ch = ch.lock().unwrap_or_else(|e| e.into_inner());
                let _ = ch.send(&ToRank::Alive, Duration::from_secs(1));
            }
        }
    });
}

impl Leader {
    fn done(&mut self, exit: u8) {
        for rank in self.conns.ranks() {
            let _ = self
                .conns
                .send(rank, &ToRank::Done { exit }, Duration::from_secs(2));
        }
    }

    pub(super) fn join_phase(&mut self) {
        while (self.infos.len() as u32) < self.cfg.size {
            let left = self
                .cfg
                .join_deadline
                .saturating_duration_since(Instant::now());
            if left.is_zero() || self.interruption().is_some() {
                break;
            }
            if self.cfg.progress {
                crate::output::note(&crate::render::fabric::joining_line(
                    self.infos.len(),
                    self.cfg.size,
                ));
            }
            if !self.next_events(left.min(Duration::from_millis(500)), None) {
                break;
            }
            self.watch_hung(None);
        }
    }

    /// Waits up to `wait` for an event, then takes every one already queued, so that what
    /// `watch_hung` reads is as fresh as the ranks sent it. False when no connection
    /// thread is left.
    pub(super) fn next_events(
        &mut self,
        wait: Duration,
        mut round: Option<&mut RoundState>,
    ) -> bool {
        match self.events.recv_timeout(wait) {
            Ok(ev) => self.handle(ev, round.as_deref_mut()),
            Err(mpsc::RecvTimeoutError::Timeout) => return true,
            Err(mpsc::RecvTimeoutError::Disconnected) => return false,
        }
        // In a round, let the other ends' messages gather for a moment: thousands of
        // answers arrive together, and one wake-up for many is cheaper than one for each.
        if round.is_some() {
            std::thread::sleep(Duration::from_micros(500));
        }
        while let Ok(ev) = self.events.try_recv() {
            self.handle(ev, round.as_deref_mut());
        }
        true
    }

    /// The signal that stops the run: caught here (rank 0), or told by another rank.
    pub(super) fn interruption(&mut self) -> Option<(i32, u32)> {
        if self.interrupted.is_none() {
            self.interrupted = crate::interrupt::caught().map(|s| (s, 0));
        }
        self.interrupted
    }

    /// Ranks whose connection is open but that said nothing for `HUNG_AFTER` (every rank
    /// says it is alive every `HEARTBEAT`): hung, declared gone after that one deadline.
    /// Their partners are told to stop the pair tests they share; their pairs are not run.
    pub(super) fn watch_hung(&mut self, mut round: Option<&mut RoundState>) {
        // Twice a second is enough for a 15 s deadline; per event, 4096 clocks read
        // thousands of times a round would be most of rank 0's work.
        if self.watched.elapsed() < Duration::from_millis(500) {
            return;
        }
        self.watched = Instant::now();
        // Silent ones first (a clock read each), then whether their connection is open.
        let hung: Vec<(u32, Duration)> = self
            .last_heard
            .iter()
            .filter_map(|(r, at)| {
                let silent = at.elapsed();
                (silent >= HUNG_AFTER).then_some((*r, silent))
            })
            .filter(|(r, _)| !self.gone.contains_key(r) && self.conns.id(*r).is_some())
            .collect();
        for (rank, silent) in hung {
            let host = self.infos.get(&rank).map(|i| i.label()).unwrap_or_default();
            let why = format!(
                "rank {rank} ({host}) is hung {}: its control connection is open but it sent nothing for {:.0} s (every rank sends every {:.0} s, during pair tests too): the process is alive but stopped or stuck",
                self.when(),
                silent.as_secs_f64(),
                crate::wire::rendezvous::HEARTBEAT.as_secs_f64()
            );
            self.gone.insert(
                rank,
                GoneRank {
                    how: Departure::Hung,
                    why: why.clone(),
                },
            );
            if let Some(r) = round.as_deref_mut() {
                for (a, b) in r.pending.clone() {
                    let partner = match (a == rank, b == rank) {
                        (true, _) => b,
                        (_, true) => a,
                        _ => continue,
                    };
                    let _ = self.conns.send(
                        partner,
                        &ToRank::Stop {
                            round: r.number,
                            a,
                            b,
                        },
                        SEND,
                    );
                }
                r.rank_gone(rank, &why);
            }
        }
    }

    fn when(&self) -> String {
        if self.round_now == 0 {
            "before the pair tests".to_string()
        } else {
            format!("in round {}", self.round_now)
        }
    }

    /// Book-keeping for any event; `round` collects a pair's messages during a round.
    pub(super) fn handle(&mut self, ev: LeaderEvent, round: Option<&mut RoundState>) {
        match ev {
            LeaderEvent::Joined(id, info, mut ch) => {
                let rank = info.rank;
                if self.infos.contains_key(&rank) {
                    let _ = ch.send(
                        &ToRank::Refused {
                            reason: format!("rank {rank} has already joined this run (two processes were given the same --rank?)"),
                        },
                        SEND,
                    );
                    ch.shutdown();
                    return;
                }
                if self.round_now > 0 {
                    let _ = ch.send(
                        &ToRank::Refused {
                            reason: "joined after the pair tests began (--join-timeout)".into(),
                        },
                        SEND,
                    );
                    ch.shutdown();
                    return;
                }
                if ch.send(&ToRank::Welcome, SEND).is_ok() {
                    self.infos.insert(rank, *info);
                    self.conns.insert(rank, id, ch);
                    self.last_heard.insert(rank, Instant::now());
                }
            }
            LeaderEvent::Gone(id, rank, why) => {
                if self.conns.id(rank) != Some(id) {
                    return;
                }
                self.conns.remove(rank);
                // A hung rank that dies later stays named as hung: that is what the run saw.
                if self.gone.contains_key(&rank) {
                    return;
                }
                let host = self.infos.get(&rank).map(|i| i.label()).unwrap_or_default();
                let why = format!("rank {rank} ({host}) left the run {}: {why}", self.when());
                if let Some(r) = round {
                    r.rank_gone(rank, &why);
                }
                self.gone.insert(
                    rank,
                    GoneRank {
                        how: Departure::Left,
                        why,
                    },
                );
            }
            LeaderEvent::Msg(id, rank, msg) => {
                if self.conns.id(rank) != Some(id) {
                    return;
                }
                self.last_heard.insert(rank, Instant::now());
                if let ToLeader::Interrupted { signal } = msg {
                    self.interrupted.get_or_insert((signal, rank));
                    return;
                }
                // A rank declared hung that wakes up takes no further part.
                if self.gone.contains_key(&rank) {
                    return;
                }
                let Some(r) = round else { return };
                match msg {
                    ToLeader::Join { .. } | ToLeader::Alive | ToLeader::Interrupted { .. } => {}
                    ToLeader::Ready { round, a, b, port } => {
                        if round == r.number && r.pending.contains(&(a, b)) && rank == a {
                            r.ready.push(((a, b), port));
                        }
                    }
                    ToLeader::Result {
                        round,
                        a,
                        b,
                        client,
                        end,
                    } => {
                        // Only the pair's own ends report on it.
                        let from_end = (client && rank == b) || (!client && rank == a);
                        // A pair given up on (a hung partner, a signal) stays not run.
                        if round == r.number && from_end && r.pending.contains(&(a, b)) {
                            r.result((a, b), client, *end);
                        }
                    }
                }
            }
        }
    }

    pub(super) fn progress(&self, rounds: usize) {
        if !self.cfg.progress {
            return;
        }
        let elapsed = self.started.elapsed().as_secs_f64();
        let done = self.pairs_done.max(1) as f64;
        let eta = if self.pairs_done > 0 {
            format!(
                ", ETA {}",
                clock(elapsed / done * (self.pairs_total - self.pairs_done) as f64)
            )
        } else {
            String::new()
        };
        crate::output::note(&format!(
            "{}round {} of {rounds}, pairs {}/{}, {} elapsed{eta}",
            crate::render::fabric::CLEAR_LINE,
            self.round_now,
            self.pairs_done,
            self.pairs_total,
            clock(elapsed)
        ));
    }
}

fn clock(secs: f64) -> String {
    let s = secs.max(0.0) as u64;
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}
