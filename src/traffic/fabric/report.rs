//! Rank 0's report: the verdict on every pair, the suspects with their explanations, the
//! ranks as they joined or left, and the one-line verdict.

use std::collections::{BTreeMap, BTreeSet};

use crate::diagnose::fabric::{self as rules, PairInput};
use crate::model::fabric::{
    Drift, FabricReport, PairEnd, PairRow, PairVerdict, PerfBaseline, RankInfo, RankRow, RunFacts,
    Suspect, SuspectRow,
};

use super::leader::Leader;
use super::round::{judge_all, Tested};
use super::round3;

impl Leader {
    /// The whole run: the joins, the rounds and retests, then the report.
    pub(super) fn run(&mut self) -> FabricReport {
        self.join_phase();
        let tested = self.test_all();
        self.report(tested)
    }

    fn report(&self, tested: Tested) -> FabricReport {
        let Tested {
            infos,
            drift,
            rounds,
            retest_rounds,
            results,
            retested,
            first_states,
        } = tested;
        let t = self.cfg.thresholds.clone();
        let (baseline, verdicts) = judge_all(&results, &t);
        let joined: BTreeSet<u32> = self.infos.keys().copied().collect();
        let suspects = rules::attribute(self.cfg.size, &joined, &self.gone, &infos, &verdicts);
        let ends: BTreeMap<(u32, u32), PairEnd> = results
            .ends
            .iter()
            .filter_map(|(k, s)| s.merged().ok().map(|e| (*k, e)))
            .collect();
        let suspect_rows: Vec<SuspectRow> = suspects
            .iter()
            .map(|s| self.suspect_row(s, &verdicts, &ends, &drift, &baseline))
            .collect();
        let pairs: Vec<PairRow> = verdicts
            .iter()
            .map(|v| {
                let slot = &results.ends[&(v.a, v.b)];
                // One copy of the pair's result, taken apart into the row.
                let PairInput {
                    end,
                    resends_per_mille,
                    ..
                } = slot.input(v.a, v.b);
                let (end, not_run) = match end {
                    Ok(e) => (Some(e), None),
                    Err(why) => (None, Some(why)),
                };
                let retested_now = retested.contains(&(v.a, v.b));
                PairRow {
                    a: v.a,
                    b: v.b,
                    round: slot.round,
                    ok: !v.state.is_bad(),
                    state: v.state,
                    why: v.why.clone(),
                    usec_per_iter: end.as_ref().and_then(|e| e.usec_per_iter),
                    mbit_per_sec: end.as_ref().and_then(|e| e.mbit_per_sec),
                    path_mtu: end.as_ref().and_then(|e| e.path_mtu),
                    latency_ratio: v.latency_ratio.map(round3),
                    bandwidth_ratio: v.bandwidth_ratio.map(round3),
                    resends_per_mille: resends_per_mille.map(round3),
                    retested: retested_now,
                    first_state: retested_now
                        .then(|| first_states.get(&(v.a, v.b)).copied())
                        .flatten(),
                    problem: end.as_ref().and_then(|e| e.problem.clone()).or(not_run),
                    failure: end.as_ref().and_then(|e| e.failure.clone()),
                    counters: end.and_then(|e| {
                        let resends = e.resends_per_mille;
                        e.counters.map(|c| with_resends(c.into_raw(), resends))
                    }),
                }
            })
            .collect();
        let ranks: Vec<RankRow> = (0..self.cfg.size)
            .map(|r| match self.infos.get(&r) {
                Some(info) => RankRow {
                    info: info.clone().reported(rules::arp_flux_text(&info.arp_flux)),
                    status: self.gone.get(&r).map_or("joined", |g| g.status()),
                },
                None => RankRow {
                    info: RankInfo {
                        rank: r,
                        ..RankInfo::default()
                    },
                    status: "missing",
                },
            })
            .collect();
        let ok = suspect_rows.is_empty()
            && drift.is_empty()
            && pairs.iter().all(|p| p.ok)
            && self.interrupted.is_none();
        let verdict = crate::render::fabric::verdict_line(
            &suspect_rows,
            &drift,
            &pairs,
            &baseline,
            &ranks,
            self.interrupted,
        );
        FabricReport {
            run: RunFacts {
                launcher: self.cfg.launcher,
                token: if self.cfg.token.is_empty() {
                    "none"
                } else {
                    "checked"
                },
                size: self.cfg.size,
                joined: joined.len() as u32,
                pattern: self.cfg.pattern.name(),
                rounds,
                retest_rounds,
                message_size: self.cfg.test.size,
                iters: self.cfg.test.iters,
                deadline: self.cfg.test.deadline,
                thresholds: t,
                seconds: (self.started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0,
                signal: self.interrupted.map(|(s, _)| s),
                signal_rank: self.interrupted.map(|(_, r)| r),
            },
            ranks,
            drift,
            baseline,
            pairs,
            suspects: suspect_rows,
            verdict,
            ok,
        }
    }

    fn suspect_row(
        &self,
        s: &Suspect,
        verdicts: &[PairVerdict],
        ends: &BTreeMap<(u32, u32), PairEnd>,
        drift: &[Drift],
        baseline: &PerfBaseline,
    ) -> SuspectRow {
        let info = |r: Option<u32>| r.and_then(|r| self.infos.get(&r));
        let explanation = rules::explain_suspect(s, &self.infos, verdicts, ends, drift, baseline);
        SuspectRow {
            kind: s.kind,
            code: s.code.clone(),
            rank: s.rank,
            host: info(s.rank).map(|i| i.host.clone()),
            device: info(s.rank)
                .map(|i| i.device.clone())
                .filter(|d| !d.is_empty()),
            peer_rank: s.peer_rank,
            peer_host: info(s.peer_rank).map(|i| i.host.clone()),
            peer_device: info(s.peer_rank).map(|i| i.device.clone()),
            reason: s.reason.clone(),
            pairs: s.pairs.clone(),
            explanation,
        }
    }
}

/// pingpong's `counters` object as the report shows it: with the retransmissions counted.
fn with_resends(
    mut counters: serde_json::Value,
    resends_per_mille: Option<f64>,
) -> serde_json::Value {
    if let (Some(r), Some(obj)) = (resends_per_mille, counters.as_object_mut()) {
        obj.insert("resends_per_mille".into(), serde_json::json!(r));
    }
    counters
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_counts_the_resends_into_the_counters_object() {
        let c = with_resends(serde_json::json!({"scope": "port"}), Some(1.5));
        assert_eq!(
            c,
            serde_json::json!({"scope": "port", "resends_per_mille": 1.5})
        );
        let c = with_resends(serde_json::json!({"scope": "port"}), None);
        assert_eq!(c, serde_json::json!({"scope": "port"}));
    }
}
