//! Rank 0's report: the verdict on every pair, the suspects with their explanations, the
//! ranks as they joined or left, and the one-line verdict. The pairs are read back from the
//! spool once: each is judged, written to the CSV, counted, and kept only when the report
//! lists it or it is bad.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;

use crate::diagnose::fabric::{self as rules, BaselineSeen, PairInput};
use crate::error::Error;
use crate::model::fabric::{
    Drift, FabricReport, PairEnd, PairRow, PairState, PairTally, PairVerdict, PerfBaseline,
    RanPairs, RankInfo, RankRow, RunFacts, Suspect, SuspectRow, PAIRS_LISTED,
};

use super::leader::Leader;
use super::round::Tested;
use super::round3;
use super::spool::Record;

/// The retested pairs' records with their inputs, each pair's runs in the order they ran.
type RetestedRuns = BTreeMap<(u32, u32), Vec<(Record, PairInput)>>;

/// What the one pass over the pairs keeps.
struct PairsRead {
    rows: Vec<PairRow>,
    tally: PairTally,
    ran: RanPairs,
    /// Every pair that is not ok, and its result (for the suspects' explanations).
    bad: Vec<PairVerdict>,
    ends: BTreeMap<(u32, u32), PairEnd>,
}

impl Leader {
    /// The whole run: the joins, the rounds and retests, then the report.
    pub(super) fn run(&mut self) -> FabricReport {
        self.join_phase();
        let tested = self.test_all();
        self.report(tested)
    }

    fn report(&mut self, tested: Tested) -> FabricReport {
        let Tested {
            infos,
            drift,
            rounds,
            retest_rounds,
            retested,
            first_states,
        } = tested;
        let t = self.cfg.thresholds.clone();
        let first = self.seen.baseline(&t);
        let (baseline, runs) = if retested.is_empty() {
            (first, BTreeMap::new())
        } else {
            let (again, runs) = self.baseline_again(&retested, &t);
            (rules::settled_baseline(&first, again), runs)
        };
        let judged = self.judge_every_pair(&baseline, runs, &first_states);
        let PairsRead {
            mut rows,
            mut tally,
            ran,
            bad,
            ends,
        } = judged;
        rows.sort_by_key(|p| (p.a, p.b));
        tally.listed_all = tally.total <= PAIRS_LISTED;
        let joined: BTreeSet<u32> = self.infos.keys().copied().collect();
        let suspects =
            rules::attribute_counted(self.cfg.size, &joined, &self.gone, &infos, &bad, &ran);
        let suspect_rows: Vec<SuspectRow> = suspects
            .iter()
            .map(|s| self.suspect_row(s, &bad, &ends, &drift, &baseline))
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
            && tally.bad == 0
            && tally.not_run == 0
            && self.interrupted.is_none();
        let verdict = crate::render::fabric::verdict_line(
            &suspect_rows,
            &drift,
            &tally,
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
                pairs_total: tally.total,
                pairs_listed: if tally.listed_all { "all" } else { "bad" },
            },
            ranks,
            drift,
            baseline,
            pairs: rows,
            suspects: suspect_rows,
            verdict,
            ok,
            tally,
        }
    }

    /// The baseline from the pairs as they stand after the retests: a retested pair by its
    /// runs' medians, the others by their one run. Also the retested pairs' runs, in the
    /// order they ran (few: the bad pairs and the baseline's own, three runs each), which
    /// the judging pass takes instead of grouping them again.
    fn baseline_again(
        &mut self,
        retested: &BTreeSet<(u32, u32)>,
        t: &crate::model::fabric::Thresholds,
    ) -> (PerfBaseline, RetestedRuns) {
        let mut seen = BaselineSeen::default();
        let mut runs = RetestedRuns::new();
        let read = self.spool.each(|rec| {
            if retested.contains(&(rec.a, rec.b)) {
                let input = rec.input();
                runs.entry((rec.a, rec.b)).or_default().push((rec, input));
            } else {
                seen.add(&rec.input());
            }
        });
        if let Err(e) = read {
            self.failed.get_or_insert(e);
        }
        for recs in runs.values() {
            let inputs: Vec<PairInput> = recs.iter().map(|(_, i)| i.clone()).collect();
            if let Some(p) = rules::median_run(&inputs) {
                seen.add(&p);
            }
        }
        let base = seen.baseline(t);
        let defining: Vec<Vec<PairInput>> = seen
            .defining_pairs()
            .iter()
            .filter_map(|p| runs.get(p))
            .map(|recs| recs.iter().map(|(_, i)| i.clone()).collect())
            .collect();
        (rules::with_noise_band(base, &defining, t), runs)
    }

    /// One pass over the spool: each pair judged against the baseline (a retested one on
    /// all its runs, once the pass has them), written to the CSV, counted; kept when the
    /// report lists every pair, or when it is bad.
    fn judge_every_pair(
        &mut self,
        baseline: &PerfBaseline,
        runs: RetestedRuns,
        first_states: &BTreeMap<(u32, u32), PairState>,
    ) -> PairsRead {
        let t = self.cfg.thresholds.clone();
        let list_all = (self.pairs_total as u64) <= PAIRS_LISTED;
        let mut csv = self
            .cfg
            .csv
            .clone()
            .and_then(|path| match std::fs::File::create(&path) {
                Ok(f) => Some((path, std::io::BufWriter::with_capacity(1 << 16, f))),
                Err(e) => {
                    self.failed.get_or_insert(Error::Io { path, source: e });
                    None
                }
            });
        let mut csv_failed: Option<Error> = None;
        let mut write_csv = |line: &str| {
            if let Some((path, w)) = csv.as_mut() {
                if csv_failed.is_none() {
                    if let Err(e) = w.write_all(line.as_bytes()) {
                        csv_failed = Some(Error::Io {
                            path: path.clone(),
                            source: e,
                        });
                    }
                }
            }
        };
        write_csv(crate::render::fabric::CSV_HEADER);
        let infos = &self.infos;
        let host = |r: u32| infos.get(&r).map(|i| i.host.as_str()).unwrap_or("");
        let dev = |r: u32| infos.get(&r).map(|i| i.device.as_str()).unwrap_or("");
        let mut j = PairsRead {
            rows: Vec::new(),
            tally: PairTally::default(),
            ran: RanPairs::new(self.cfg.size),
            bad: Vec::new(),
            ends: BTreeMap::new(),
        };
        let mut one = |rec: Record, v: PairVerdict, input: PairInput| {
            let retested_now = v.runs.is_some();
            let first = retested_now
                .then(|| first_states.get(&(v.a, v.b)).copied())
                .flatten();
            let row = row(&rec, input, &v, retested_now, first);
            write_csv(&crate::render::fabric::csv_line(
                &row,
                [host(row.a), dev(row.a), host(row.b), dev(row.b)],
            ));
            j.tally.add(v.a, v.b, v.state, retested_now);
            if v.state != PairState::NotRun {
                j.ran.add(v.a, v.b);
            }
            let bad = v.state.is_bad();
            if bad {
                if let Some(e) = rec.end {
                    j.ends.insert((v.a, v.b), e);
                }
            }
            if list_all || (bad && (j.rows.len() as u64) < PAIRS_LISTED) {
                j.rows.push(row);
            }
            if bad {
                j.bad.push(v);
            }
        };
        let read = self.spool.each(|rec| {
            if runs.contains_key(&(rec.a, rec.b)) {
                return;
            }
            let input = rec.input();
            let v = rules::judge_pair(&input, baseline, &t);
            one(rec, v, input);
        });
        if let Err(e) = read {
            self.failed.get_or_insert(e);
        }
        for recs in runs.values() {
            let inputs: Vec<PairInput> = recs.iter().map(|(_, i)| i.clone()).collect();
            let v = rules::judge_runs(&inputs, baseline, &t);
            // The row shows the runs' medians, the pair's evidence its first bad run.
            let pick = recs
                .iter()
                .find(|(_, i)| rules::judge_pair(i, baseline, &t).state == v.state)
                .or_else(|| recs.last());
            if let Some((rec, input)) = pick {
                let mut input = input.clone();
                if let (Ok(end), Some(spread)) = (input.end.as_mut(), v.runs.as_ref()) {
                    end.usec_per_iter = spread.usec_per_iter.map(|s| s.median);
                    end.mbit_per_sec = spread.mbit_per_sec.map(|s| s.median);
                }
                let rec = Record {
                    end: input.end.clone().ok(),
                    ..rec.clone()
                };
                one(rec, v, input);
            }
        }
        if let Some((path, mut w)) = csv {
            if let Err(e) = w.flush() {
                csv_failed.get_or_insert(Error::Io { path, source: e });
            }
        }
        if let Some(e) = csv_failed {
            self.failed.get_or_insert(e);
        }
        j
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
            runs: s.runs,
            bad_runs: s.bad_runs,
            explanation,
        }
    }
}

/// A judged pair as the report and the CSV show it.
fn row(
    rec: &Record,
    input: PairInput,
    v: &PairVerdict,
    retested: bool,
    first_state: Option<PairState>,
) -> PairRow {
    let PairInput {
        end,
        resends_per_mille,
        ..
    } = input;
    let (end, not_run) = match end {
        Ok(e) => (Some(e), None),
        Err(why) => (None, Some(why)),
    };
    PairRow {
        a: v.a,
        b: v.b,
        round: rec.round,
        ok: !v.state.is_bad(),
        state: v.state,
        why: v.why.clone(),
        usec_per_iter: end.as_ref().and_then(|e| e.usec_per_iter),
        mbit_per_sec: end.as_ref().and_then(|e| e.mbit_per_sec),
        path_mtu: end.as_ref().and_then(|e| e.path_mtu),
        latency_ratio: v.latency_ratio.map(round3),
        bandwidth_ratio: v.bandwidth_ratio.map(round3),
        resends_per_mille: resends_per_mille.map(round3),
        retested,
        first_state,
        runs: v.runs.clone(),
        problem: end.as_ref().and_then(|e| e.problem.clone()).or(not_run),
        failure: end.as_ref().and_then(|e| e.failure.clone()),
        counters: end.and_then(|e| {
            let resends = e.resends_per_mille;
            e.counters.map(|c| with_resends(c.into_raw(), resends))
        }),
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
