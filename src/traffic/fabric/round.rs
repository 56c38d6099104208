//! One round of pair tests: each pair's server told to serve, its client told to connect
//! once the server listens, both ends' results collected, with rank 0's own deadline per
//! pair and at most `--parallel` pairs at once.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::{Duration, Instant};

use crate::diagnose::fabric as rules;
use crate::model::fabric::{Drift, PairState, RankInfo};
use crate::wire::rendezvous::ToRank;

use super::leader::Leader;
use super::round_state::{PairSlot, RoundState};
use super::spool::Record;
use super::{secs, SEND};

impl Leader {
    pub(super) fn run_round(&mut self, number: u32, pairs: &[(u32, u32)], retest: bool) {
        let mut state = RoundState::new(number, pairs);
        let test = self.cfg.test.clone();
        // Both ends' deadlines, the server's listen wait, and the reports' way back.
        let per_pair = secs(test.deadline * 2.0 + 15.0);
        let mut waiting: VecDeque<(u32, u32)> = pairs.iter().copied().collect();
        let mut started: BTreeMap<(u32, u32), Instant> = BTreeMap::new();
        let parallel = self.cfg.parallel.max(1) as usize;
        let mut checked = Instant::now();
        loop {
            // Pairs that finished no longer count against --parallel.
            for p in std::mem::take(&mut state.left) {
                started.remove(&p);
            }
            // Start pairs up to --parallel (all of the round by default).
            while started.len() < parallel {
                let Some((a, b)) = waiting.pop_front() else {
                    break;
                };
                for r in [a, b] {
                    if let Some(g) = self.gone.get(&r) {
                        state.rank_gone(r, &g.why);
                    }
                }
                if !state.pending.contains(&(a, b)) {
                    continue;
                }
                started.insert((a, b), Instant::now());
                let sent = self.conns.send(
                    a,
                    &ToRank::Serve {
                        round: number,
                        a,
                        b,
                        test: test.clone(),
                    },
                    SEND,
                );
                if !matches!(sent, Some(Ok(()))) {
                    let why = format!("rank {a} could not be told to serve");
                    state.fail_pair((a, b), &why);
                }
            }
            if state.pending.is_empty() {
                break;
            }
            if let Some(signal) = self.interruption() {
                // Whatever is still running was cut short: not run, not failed.
                let why = format!(
                    "not run: the run was {}",
                    crate::render::fabric::interrupted_text(signal)
                );
                state.interrupt(waiting.iter().copied(), &why);
                break;
            }
            // Once a second: the deadline is seconds long, and a round has thousands of pairs.
            if checked.elapsed() >= Duration::from_secs(1) {
                checked = Instant::now();
                let late: Vec<(u32, u32)> = started
                    .iter()
                    .filter(|(_, at)| at.elapsed() >= per_pair)
                    .map(|(p, _)| *p)
                    .collect();
                for p in late {
                    state.fail_pair(
                        p,
                        "no result from either end before rank 0's deadline for the pair",
                    );
                }
            }
            if !self.next_events(Duration::from_millis(200), Some(&mut state)) {
                break;
            }
            self.watch_hung(Some(&mut state));
            for ((a, b), port) in std::mem::take(&mut state.ready) {
                if !state.connected.insert((a, b)) {
                    continue;
                }
                let host = match self.infos.get(&a) {
                    Some(i) => i.tcp_host.clone(),
                    None => continue,
                };
                let sent = self.conns.send(
                    b,
                    &ToRank::Connect {
                        round: number,
                        a,
                        b,
                        host,
                        port,
                        test: test.clone(),
                    },
                    SEND,
                );
                if !matches!(sent, Some(Ok(()))) {
                    state.client_lost((a, b), &format!("rank {b} could not be told to connect"));
                }
            }
            state.settle();
        }
        self.pairs_done += pairs.len();
        for (p, slot) in state.slots {
            self.keep(p, slot, retest);
        }
    }

    /// A finished pair onto the spool; a first run's figures also into the baseline.
    pub(super) fn keep(&mut self, (a, b): (u32, u32), slot: PairSlot, retest: bool) {
        let (end, not_run) = match slot.merged() {
            Ok(e) => (Some(e), None),
            Err(why) => (None, Some(why)),
        };
        let rec = Record {
            a,
            b,
            round: slot.round,
            retest,
            end,
            not_run,
        };
        if !retest {
            self.seen.add(&rec.input());
        }
        if let Err(e) = self.spool.push(&rec) {
            self.failed.get_or_insert(e);
        }
    }
}

/// What the rounds and the retests left for the report (the pairs are on the spool).
pub(super) struct Tested {
    pub(super) infos: Vec<RankInfo>,
    pub(super) drift: Vec<Drift>,
    pub(super) rounds: u32,
    pub(super) retest_rounds: u32,
    /// The pairs run again, and what their first run found.
    pub(super) retested: BTreeSet<(u32, u32)>,
    pub(super) first_states: BTreeMap<(u32, u32), PairState>,
}

impl Leader {
    /// Every round of the schedule, then the bad pairs again, `RETESTS` times.
    pub(super) fn test_all(&mut self) -> Tested {
        let infos: Vec<RankInfo> = self.infos.values().cloned().collect();
        let drift = rules::drift(&infos);
        let able: Vec<(u32, u32)> = infos
            .iter()
            .filter(|i| i.problem.is_none())
            .map(|i| (i.rank, i.local_rank))
            .collect();
        let rounds = rules::schedule(&able, self.cfg.pattern, rules::seed_of(&self.cfg.token));
        self.pairs_total = rounds.iter().map(Vec::len).sum();
        for (k, round) in rounds.iter().enumerate() {
            if let Some(signal) = self.interruption() {
                let why = format!(
                    "not run: the run was {}",
                    crate::render::fabric::interrupted_text(signal)
                );
                for p in round {
                    let slot = PairSlot {
                        round: k as u32 + 1,
                        not_run: Some(why.clone()),
                        ..PairSlot::default()
                    };
                    self.keep(*p, slot, false);
                }
                continue;
            }
            self.round_now = k as u32 + 1;
            self.progress(rounds.len());
            self.run_round(k as u32 + 1, round, false);
        }
        let t = self.cfg.thresholds.clone();
        let base = self.seen.baseline(&t);
        // Retest what was bad; a pair that could not run is not retested.
        let mut first_states: BTreeMap<(u32, u32), PairState> = BTreeMap::new();
        if self.interrupted.is_none() {
            let gone = &self.gone;
            let read = self.spool.each(|rec| {
                let v = rules::judge_pair(&rec.input(), &base, &t);
                if v.state.is_bad()
                    && v.state != PairState::NotRun
                    && !gone.contains_key(&v.a)
                    && !gone.contains_key(&v.b)
                {
                    first_states.insert((v.a, v.b), v.state);
                }
            });
            if let Err(e) = read {
                self.failed.get_or_insert(e);
            }
        }
        // When anything was bad, the pairs the baseline stands on run again too: a lucky
        // first run of one of them would make every other pair look bad beside it.
        if !first_states.is_empty() {
            for p in self.seen.defining_pairs() {
                if !self.gone.contains_key(&p.0) && !self.gone.contains_key(&p.1) {
                    first_states.entry(p).or_insert(PairState::Ok);
                }
            }
        }
        let bad: Vec<(u32, u32)> = first_states.keys().copied().collect();
        let retest = rules::pack_rounds(&bad);
        let mut retested = BTreeSet::new();
        self.round_now = rounds.len() as u32;
        'retests: for _ in 0..rules::RETESTS {
            for round in &retest {
                if self.interruption().is_some() {
                    break 'retests;
                }
                self.round_now += 1;
                self.run_round(self.round_now, round, true);
                retested.extend(round.iter().copied());
            }
        }
        if self.cfg.progress {
            crate::output::note(crate::render::fabric::CLEAR_LINE);
        }
        Tested {
            infos,
            drift,
            rounds: rounds.len() as u32,
            retest_rounds: self.round_now - rounds.len() as u32,
            retested,
            first_states,
        }
    }
}
