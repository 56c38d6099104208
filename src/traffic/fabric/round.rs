//! One round of pair tests: each pair's server told to serve, its client told to connect
//! once the server listens, both ends' results collected, with rank 0's own deadline per
//! pair and at most `--parallel` pairs at once.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::{Duration, Instant};

use crate::diagnose::fabric::{self as rules, PairInput};
use crate::model::fabric::{Drift, PairState, PairVerdict, PerfBaseline, RankInfo, Thresholds};
use crate::wire::rendezvous::ToRank;

use super::leader::Leader;
use super::round_state::{PairSlot, Results, RoundState};
use super::{secs, SEND};

impl Leader {
    pub(super) fn run_round(&mut self, number: u32, pairs: &[(u32, u32)], results: &mut Results) {
        let mut state = RoundState {
            number,
            pending: pairs.iter().copied().collect(),
            slots: pairs
                .iter()
                .map(|p| {
                    (
                        *p,
                        PairSlot {
                            round: number,
                            ..PairSlot::default()
                        },
                    )
                })
                .collect(),
            ready: Vec::new(),
            connected: BTreeSet::new(),
        };
        let test = self.cfg.test.clone();
        // Both ends' deadlines, the server's listen wait, and the reports' way back.
        let per_pair = secs(test.deadline * 2.0 + 15.0);
        let mut waiting: VecDeque<(u32, u32)> = pairs.iter().copied().collect();
        let mut started: BTreeMap<(u32, u32), Instant> = BTreeMap::new();
        let parallel = self.cfg.parallel.max(1) as usize;
        loop {
            // Start pairs up to --parallel (all of the round by default).
            while started.keys().filter(|p| state.pending.contains(p)).count() < parallel {
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
                let sent = self.conns.get_mut(&a).map(|(_, ch)| {
                    ch.send(
                        &ToRank::Serve {
                            round: number,
                            a,
                            b,
                            test: test.clone(),
                        },
                        SEND,
                    )
                });
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
            for (p, at) in &started {
                if state.pending.contains(p) && at.elapsed() >= per_pair {
                    state.fail_pair(
                        *p,
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
                let sent = self.conns.get_mut(&b).map(|(_, ch)| {
                    ch.send(
                        &ToRank::Connect {
                            round: number,
                            a,
                            b,
                            host,
                            port,
                            test: test.clone(),
                        },
                        SEND,
                    )
                });
                if !matches!(sent, Some(Ok(()))) {
                    state.client_lost((a, b), &format!("rank {b} could not be told to connect"));
                }
            }
            state.settle();
        }
        self.pairs_done += pairs.len();
        for (p, slot) in state.slots {
            results.ends.insert(p, slot);
        }
    }
}

/// What the rounds and the retests left for the report.
pub(super) struct Tested {
    pub(super) infos: Vec<RankInfo>,
    pub(super) drift: Vec<Drift>,
    pub(super) rounds: u32,
    pub(super) retest_rounds: u32,
    pub(super) results: Results,
    /// The pairs run again, and what their first run found.
    pub(super) retested: BTreeSet<(u32, u32)>,
    pub(super) first_states: BTreeMap<(u32, u32), PairState>,
}

impl Leader {
    /// Every round of the schedule, then the retest of the bad pairs, once.
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
        let mut results = Results {
            ends: BTreeMap::new(),
        };
        for (k, round) in rounds.iter().enumerate() {
            if let Some(signal) = self.interruption() {
                let why = format!(
                    "not run: the run was {}",
                    crate::render::fabric::interrupted_text(signal)
                );
                for p in round {
                    let slot = results.ends.entry(*p).or_default();
                    slot.round = k as u32 + 1;
                    slot.not_run = Some(why.clone());
                }
                continue;
            }
            self.round_now = k as u32 + 1;
            self.progress(rounds.len());
            self.run_round(k as u32 + 1, round, &mut results);
        }
        let t = self.cfg.thresholds.clone();
        let first = judge_all(&results, &t);
        // Retest what was bad, once; a pair that could not run is not retested.
        let bad: Vec<(u32, u32)> = first
            .1
            .iter()
            .filter(|v| v.state.is_bad() && v.state != PairState::NotRun)
            .filter(|v| !self.gone.contains_key(&v.a) && !self.gone.contains_key(&v.b))
            .filter(|_| self.interrupted.is_none())
            .map(|v| (v.a, v.b))
            .collect();
        let first_states: BTreeMap<(u32, u32), PairState> =
            first.1.iter().map(|v| ((v.a, v.b), v.state)).collect();
        let retest = rules::pack_rounds(&bad);
        let base_round = rounds.len() as u32;
        let mut retested = BTreeSet::new();
        for (k, round) in retest.iter().enumerate() {
            if self.interruption().is_some() {
                break;
            }
            let mut again = Results {
                ends: BTreeMap::new(),
            };
            self.round_now = base_round + k as u32 + 1;
            self.run_round(self.round_now, round, &mut again);
            for (pair, slot) in again.ends {
                retested.insert(pair);
                results.ends.insert(pair, slot);
            }
        }
        if self.cfg.progress {
            crate::output::note(crate::render::fabric::CLEAR_LINE);
        }
        Tested {
            infos,
            drift,
            rounds: rounds.len() as u32,
            retest_rounds: retest.len() as u32,
            results,
            retested,
            first_states,
        }
    }
}

/// Each pair's verdict against the baseline of them all.
pub(super) fn judge_all(results: &Results, t: &Thresholds) -> (PerfBaseline, Vec<PairVerdict>) {
    let inputs: Vec<PairInput> = results
        .ends
        .iter()
        .map(|((a, b), s)| s.input(*a, *b))
        .collect();
    let base = rules::baseline(&inputs, t);
    let verdicts = inputs
        .iter()
        .map(|p| rules::judge_pair(p, &base, t))
        .collect();
    (base, verdicts)
}
