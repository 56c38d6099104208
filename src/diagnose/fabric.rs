//! `rdmactl fabric`'s rules: which pairs run in which round, what differs between the
//! endpoints before any traffic (drift), which pairs are bad against a baseline a bad
//! endpoint cannot drag, and who is to blame (attribution). Pure: ranks and pair results
//! in, verdicts out.

use std::collections::{BTreeMap, BTreeSet};

pub use super::doctor::arp_flux;
use super::doctor::{arp_flux_line, ARP_FLUX_FIX};
use crate::model::codes::{self, Code};
use crate::model::fabric::child::{ChildEvidence, ChildFailure};
use crate::model::fabric::{
    ArpFluxGroup, Departure, Drift, DriftValue, GoneRank, PairEnd, PairState, PairVerdict, Pattern,
    PerfBaseline, RanPairs, RankInfo, RunSpread, Spread, Suspect, SuspectExplanation, SuspectKind,
    Thresholds,
};

// ---------------------------------------------------------------------------------------
// Scheduling

/// Every pair of `ranks` in rounds, each round a matching (no rank twice): the circle
/// method, N-1 rounds for even N and N for odd N (each rank sits out once).
pub fn round_robin(ranks: &[u32]) -> Vec<Vec<(u32, u32)>> {
    let mut slots: Vec<Option<u32>> = ranks.iter().copied().map(Some).collect();
    if slots.len() < 2 {
        return Vec::new();
    }
    if slots.len() % 2 == 1 {
        slots.push(None);
    }
    let n = slots.len();
    let mut rounds = Vec::with_capacity(n - 1);
    for _ in 0..n - 1 {
        let round: Vec<(u32, u32)> = (0..n / 2)
            .filter_map(|i| match (slots[i], slots[n - 1 - i]) {
                (Some(a), Some(b)) => Some((a.min(b), a.max(b))),
                _ => None,
            })
            .collect();
        rounds.push(round);
        // Keep the first slot, rotate the rest by one.
        let last = slots.pop().expect("n >= 2");
        slots.insert(1, last);
    }
    rounds
}

/// Packs pairs into as few rounds as a greedy first fit gives, no rank twice per round.
pub fn pack_rounds(pairs: &[(u32, u32)]) -> Vec<Vec<(u32, u32)>> {
    // Each round with the ranks it keeps busy.
    type Round = (Vec<(u32, u32)>, BTreeSet<u32>);
    let mut rounds: Vec<Round> = Vec::new();
    for &(a, b) in pairs {
        match rounds
            .iter_mut()
            .find(|(_, busy)| !busy.contains(&a) && !busy.contains(&b))
        {
            Some((round, busy)) => {
                round.push((a, b));
                busy.insert(a);
                busy.insert(b);
            }
            None => rounds.push((vec![(a, b)], BTreeSet::from([a, b]))),
        }
    }
    rounds.into_iter().map(|(r, _)| r).collect()
}

/// The rounds of a pattern over the ranks that can take part, given each rank's local rank
/// (its rail). `seed` makes `random:K` the same for every run with the same token.
pub fn schedule(ranks: &[(u32, u32)], pattern: Pattern, seed: u64) -> Vec<Vec<(u32, u32)>> {
    let ids: Vec<u32> = ranks.iter().map(|r| r.0).collect();
    match pattern {
        Pattern::All => round_robin(&ids),
        Pattern::Rails => {
            let mut rails: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
            for &(rank, rail) in ranks {
                rails.entry(rail).or_default().push(rank);
            }
            // Rails are disjoint: their k-th rounds run together.
            let per_rail: Vec<Vec<Vec<(u32, u32)>>> =
                rails.values().map(|r| round_robin(r)).collect();
            let depth = per_rail.iter().map(Vec::len).max().unwrap_or(0);
            (0..depth)
                .map(|k| {
                    per_rail
                        .iter()
                        .filter_map(|r| r.get(k))
                        .flatten()
                        .copied()
                        .collect()
                })
                .collect()
        }
        Pattern::Random(k) => {
            let mut rng = SplitMix(seed);
            let mut pairs = BTreeSet::new();
            if ids.len() >= 2 {
                for &a in &ids {
                    let mut picked = 0;
                    let mut tries = 0;
                    while picked < k && tries < 64 * k {
                        tries += 1;
                        let b = ids[(rng.next() % ids.len() as u64) as usize];
                        if b != a && pairs.insert((a.min(b), a.max(b))) {
                            picked += 1;
                        }
                    }
                }
            }
            let pairs: Vec<(u32, u32)> = pairs.into_iter().collect();
            pack_rounds(&pairs)
        }
    }
}

/// A small seeded generator (SplitMix64): the schedule must be reproducible, not secret.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// A stable 64-bit hash of the run token (FNV-1a), the seed of `random:K`.
pub fn seed_of(token: &str) -> u64 {
    token.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

// ---------------------------------------------------------------------------------------
// Drift

type Attribute = (&'static str, fn(&RankInfo) -> Option<String>, &'static str);

const ATTRIBUTES: &[Attribute] = &[
    ("link_layer", |r| r.link_layer.clone(), "InfiniBand and RoCE endpoints cannot reach each other"),
    ("state", |r| r.state.clone(), "a port that is not ACTIVE carries no traffic"),
    ("roce_mtu", |r| r.active_mtu.map(|m| m.to_string()), "a pair runs at the smaller RDMA MTU: bandwidth to these endpoints drops, and an application that sets the path MTU itself fails against them"),
    ("netdev_mtu", |r| r.netdev_mtu.map(|m| m.to_string()), "frames above the smaller MTU are dropped on the way: the RoCE MTU follows the netdev's, and IP traffic (the TCP exchange, storage) stalls at the larger size"),
    ("gid_type", |r| r.gid_type.clone(), "both ends of a connection must use the same GID type (RoCE v1 or v2)"),
    ("gid_index", |r| r.gid_index.map(|i| i.to_string()), "a job that passes one GID index to every host (NCCL_IB_GID_INDEX, UCX_IB_GID_INDEX) picks a different GID on these endpoints"),
    ("rate", |r| r.rate.clone(), "a port that trained at a lower rate or width caps every pair it is in"),
    ("firmware", |r| r.firmware.clone(), "firmware differences change behaviour and defaults (congestion control, PFC, counters)"),
    ("kernel", |r| r.kernel.clone(), "a different kernel means a different RDMA stack (rxe, the CM, the GID cache)"),
    ("memlock", |r| r.memlock.clone(), "a lower memlock limit makes large registrations fail on these hosts only"),
    ("version", |r| Some(r.version.clone()), "ranks of different rdmactl versions may judge differently"),
];

/// The attributes on which the participating endpoints differ, each with the endpoints on
/// every side; then the ARP flux that any host reports, majority or not.
pub fn drift(ranks: &[RankInfo]) -> Vec<Drift> {
    let ranks: Vec<&RankInfo> = ranks.iter().filter(|r| r.problem.is_none()).collect();
    let mut out = Vec::new();
    for (attribute, value_of, why) in ATTRIBUTES {
        let mut groups: BTreeMap<String, Vec<&RankInfo>> = BTreeMap::new();
        for r in &ranks {
            // Unknown is not a value: a rank that cannot read it does not differ.
            if let Some(v) = value_of(r) {
                groups.entry(v).or_default().push(r);
            }
        }
        if groups.len() < 2 {
            continue;
        }
        let counted: usize = groups.values().map(Vec::len).sum();
        let (top, top_n) = groups
            .iter()
            .map(|(v, rs)| (v.clone(), rs.len()))
            .max_by_key(|(_, n)| *n)
            .expect("two groups");
        let majority = (top_n * 2 > counted).then_some(top);
        let mut values: Vec<DriftValue> = groups
            .into_iter()
            .map(|(value, rs)| value_group(value, &rs))
            .collect();
        // The majority first, then the smaller groups.
        values.sort_by_key(|v| {
            (
                Some(&v.value) != majority.as_ref(),
                std::cmp::Reverse(v.ranks.len()),
            )
        });
        out.push(Drift {
            attribute,
            majority,
            values,
            why_it_matters: why,
        });
    }
    let mut flux: BTreeMap<String, Vec<&RankInfo>> = BTreeMap::new();
    for r in &ranks {
        if let Some(f) = arp_flux_text(&r.arp_flux) {
            flux.entry(format!("{}: {f}", r.host)).or_default().push(r);
        }
    }
    if !flux.is_empty() {
        out.push(Drift {
            attribute: "arp_flux",
            majority: None,
            values: flux
                .into_iter()
                .map(|(value, rs)| value_group(value, &rs))
                .collect(),
            why_it_matters: ARP_FLUX_WHY,
        });
    }
    out
}

/// A host's ARP flux in one line, each group worded as `doctor` words it:
/// `veth0, veth1 on 10.0.0.0/24 answer ARP for each other's addresses (...)`; None when
/// there is none.
pub fn arp_flux_text(groups: &[ArpFluxGroup]) -> Option<String> {
    (!groups.is_empty()).then(|| {
        groups
            .iter()
            .map(arp_flux_line)
            .collect::<Vec<_>>()
            .join("; ")
    })
}

pub const ARP_FLUX_WHY: &str = "several RDMA netdevs of one host on one subnet with arp_ignore 0: each answers ARP for the others' addresses, so a peer may send the RoCE packets meant for one HCA to another HCA's MAC, which drops them (its QPs do not know the QPN): pairs crawl or fail with IBV_WC_RETRY_EXC_ERR";

fn value_group(value: String, rs: &[&RankInfo]) -> DriftValue {
    let mut hosts: Vec<String> = rs.iter().map(|r| r.host.clone()).collect();
    hosts.dedup();
    DriftValue {
        value,
        ranks: rs.iter().map(|r| r.rank).collect(),
        hosts,
    }
}

// ---------------------------------------------------------------------------------------
// Judging pairs

/// One pair as the run left it: the merged result of its two ends, or why it did not run.
#[derive(Debug, Clone, PartialEq)]
pub struct PairInput {
    pub a: u32,
    pub b: u32,
    pub end: Result<PairEnd, String>,
    /// Packets resent per thousand sent over the pair's test, from both ends' counters
    /// (`diagnose::counters::Resent`).
    pub resends_per_mille: Option<f64>,
}

/// The baseline: for each endpoint, its best pair (lowest latency, highest bandwidth); then
/// the lower median of those over the endpoints. A bad endpoint only moves its own entry,
/// and a bad link does not move either end's best, so with one bad endpoint of four (half
/// of all pairs slow) the baseline is still a good pair's figure. Below three endpoints
/// with a working pair there is nothing to compare with, unless absolute figures are given.
/// The baseline of pairs in hand (rank 0 gathers it as they come: `BaselineSeen`).
#[cfg(test)]
pub fn baseline(pairs: &[PairInput], t: &Thresholds) -> PerfBaseline {
    let mut seen = BaselineSeen::default();
    for p in pairs {
        seen.add(p);
    }
    seen.baseline(t)
}

/// The baseline's input gathered one pair at a time (rank 0 does not keep the pairs):
/// each endpoint's best latency and bandwidth so far, and the pair that gave it.
#[derive(Debug, Clone, Default)]
pub struct BaselineSeen {
    best_lat: BTreeMap<u32, (f64, (u32, u32))>,
    best_bw: BTreeMap<u32, (f64, (u32, u32))>,
}

impl BaselineSeen {
    pub fn add(&mut self, p: &PairInput) {
        let Ok(end) = &p.end else { return };
        if !end.ok {
            return;
        }
        for r in [p.a, p.b] {
            if let Some(u) = end.usec_per_iter.filter(|u| *u > 0.0) {
                let e = self.best_lat.entry(r).or_insert((u, (p.a, p.b)));
                if u < e.0 {
                    *e = (u, (p.a, p.b));
                }
            }
            if let Some(m) = end.mbit_per_sec.filter(|m| *m > 0.0) {
                let e = self.best_bw.entry(r).or_insert((m, (p.a, p.b)));
                if m > e.0 {
                    *e = (m, (p.a, p.b));
                }
            }
        }
    }

    /// The pairs the baseline stands on: some endpoint's best. Under a shared host's noise
    /// one of them is often a lucky run, and every other pair then looks low beside it;
    /// rank 0 runs them again when anything was bad, and judges on their runs' medians.
    pub fn defining_pairs(&self) -> BTreeSet<(u32, u32)> {
        self.best_lat
            .values()
            .chain(self.best_bw.values())
            .map(|(_, pair)| *pair)
            .collect()
    }

    pub fn baseline(&self, t: &Thresholds) -> PerfBaseline {
        let best_lat: BTreeMap<u32, f64> =
            self.best_lat.iter().map(|(r, (v, _))| (*r, *v)).collect();
        let best_bw: BTreeMap<u32, f64> = self.best_bw.iter().map(|(r, (v, _))| (*r, *v)).collect();
        let lower_median = |mut v: Vec<f64>| -> Option<f64> {
            if v.is_empty() {
                return None;
            }
            v.sort_by(f64::total_cmp);
            Some(v[(v.len() - 1) / 2])
        };
        let endpoints = best_lat.len().max(best_bw.len());
        let (mut usec, mut mbit, mut how) = if endpoints >= 3 {
            (
            lower_median(best_lat.into_values().collect()),
            // The upper median of bandwidths: the lower median's mirror image.
            {
                let mut v: Vec<f64> = best_bw.into_values().collect();
                v.sort_by(f64::total_cmp);
                (!v.is_empty()).then(|| v[v.len() / 2])
            },
            format!(
                "the median over {endpoints} endpoints of each endpoint's best pair (a bad endpoint moves only its own entry)"
            ),
        )
        } else {
            (
            None,
            None,
            format!(
                "none: {endpoints} endpoint(s) with a working pair, and a baseline needs 3; latency and bandwidth are reported, not judged (give --expect-usec/--expect-mbit)"
            ),
        )
        };
        if t.expect_usec.is_some() || t.expect_mbit.is_some() {
            usec = t.expect_usec.or(usec);
            mbit = t.expect_mbit.or(mbit);
            how = format!(
                "given: {}",
                [
                    t.expect_usec.map(|u| format!("--expect-usec {u}")),
                    t.expect_mbit.map(|m| format!("--expect-mbit {m}")),
                ]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(", ")
            );
        }
        PerfBaseline {
            usec_per_iter: usec,
            mbit_per_sec: mbit,
            how,
            usec_worst_run: None,
            mbit_worst_run: None,
        }
    }
}

pub fn judge_pair(p: &PairInput, base: &PerfBaseline, t: &Thresholds) -> PairVerdict {
    let mut v = PairVerdict {
        a: p.a,
        b: p.b,
        state: PairState::Ok,
        why: Vec::new(),
        latency_ratio: None,
        bandwidth_ratio: None,
        runs: None,
    };
    let end = match &p.end {
        Err(why) => {
            v.state = PairState::NotRun;
            v.why.push(why.clone());
            return v;
        }
        Ok(end) => end,
    };
    let worst = |s: PairState, why: String, v: &mut PairVerdict| {
        v.state = v.state.max(s);
        v.why.push(why);
    };
    if !end.ok {
        let text = end
            .failure
            .as_ref()
            .and_then(|f| f.message.clone())
            .or_else(|| end.problem.clone())
            .unwrap_or_else(|| "failed".into());
        worst(PairState::Failed, text, &mut v);
    }
    if let (Some(u), Some(b)) = (end.usec_per_iter, base.usec_per_iter) {
        if b > 0.0 {
            let ratio = u / b;
            v.latency_ratio = Some(ratio);
            if ratio > t.latency_factor {
                worst(
                    PairState::Slow,
                    format!("{u:.1} µs/iter, {ratio:.1}× the baseline {b:.1}"),
                    &mut v,
                );
            }
        }
    }
    if let (Some(m), Some(b)) = (end.mbit_per_sec, base.mbit_per_sec) {
        if b > 0.0 {
            let ratio = m / b;
            v.bandwidth_ratio = Some(ratio);
            if ratio < t.bandwidth_fraction {
                worst(
                    PairState::LowBandwidth,
                    format!(
                        "{m:.0} Mbit/s, {:.0}% of the baseline {b:.0}",
                        ratio * 100.0
                    ),
                    &mut v,
                );
            }
        }
    }
    if let Some(r) = p.resends_per_mille {
        if r > t.resends_per_mille {
            worst(
                PairState::Lossy,
                format!("{r:.1} packets resent per thousand sent (counters)"),
                &mut v,
            );
        }
    }
    v
}

/// A retested pair as the baseline sees it: its good runs' median figures (None when no
/// run was good).
pub fn median_run(runs: &[PairInput]) -> Option<PairInput> {
    let good: Vec<&PairEnd> = runs
        .iter()
        .filter_map(|r| r.end.as_ref().ok())
        .filter(|e| e.ok)
        .collect();
    let first = runs.first()?;
    let mut end = (*good.first()?).clone();
    let median = |f: fn(&PairEnd) -> Option<f64>| {
        Spread::of(&good.iter().filter_map(|e| f(e)).collect::<Vec<_>>()).map(|s| s.median)
    };
    end.usec_per_iter = median(|e| e.usec_per_iter);
    end.mbit_per_sec = median(|e| e.mbit_per_sec);
    Some(PairInput {
        a: first.a,
        b: first.b,
        end: Ok(end),
        resends_per_mille: first.resends_per_mille,
    })
}

/// The baseline after the retests: the pairs as they stand (a retested one by its runs'
/// medians, so a lucky first run no longer sets the bar), but never more demanding than
/// the first run's: a pair that was good against that one was not run again, and is not
/// made bad by a bar it never ran against.
pub fn settled_baseline(first: &PerfBaseline, again: PerfBaseline) -> PerfBaseline {
    let usec = match (first.usec_per_iter, again.usec_per_iter) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => b.or(a),
    };
    let mbit = match (first.mbit_per_sec, again.mbit_per_sec) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => b.or(a),
    };
    if usec == first.usec_per_iter && mbit == first.mbit_per_sec {
        return PerfBaseline {
            usec_worst_run: again.usec_worst_run,
            mbit_worst_run: again.mbit_worst_run,
            ..first.clone()
        };
    }
    PerfBaseline {
        usec_per_iter: usec,
        mbit_per_sec: mbit,
        how: format!(
            "{}; the pairs it stands on were run again, by their runs' medians",
            again.how
        ),
        usec_worst_run: again.usec_worst_run,
        mbit_worst_run: again.mbit_worst_run,
    }
}

/// The baseline with the worst run of the retested pairs it stands on that are good by
/// their medians: how far this host's noise moves one good pair. A bad endpoint's best
/// pair is one of the pairs the baseline stands on too; its runs are left out, or a slow
/// endpoint would widen the band until its own pairs read as noise.
pub fn with_noise_band(
    mut base: PerfBaseline,
    defining_runs: &[Vec<PairInput>],
    t: &Thresholds,
) -> PerfBaseline {
    let good: Vec<&PairEnd> = defining_runs
        .iter()
        .filter(|runs| {
            median_run(runs).is_some_and(|m| judge_pair(&m, &base, t).state == PairState::Ok)
        })
        .flatten()
        .filter_map(|r| r.end.as_ref().ok())
        .filter(|e| e.ok)
        .collect();
    base.usec_worst_run = good
        .iter()
        .filter_map(|e| e.usec_per_iter)
        .max_by(f64::total_cmp);
    base.mbit_worst_run = good
        .iter()
        .filter_map(|e| e.mbit_per_sec)
        .min_by(f64::total_cmp);
    base
}

/// How many times a pair that was bad is run again: three runs in all. Noise that makes
/// one run in k look bad makes all three look bad once in k³.
pub const RETESTS: u32 = 2;

/// A retested pair judged on all its runs (the first, then the retests, in order). Slow,
/// low bandwidth and lossy are measures a shared host's noise moves: the pair is bad only
/// when every run that ran was bad (a consistent effect), with the state most of them
/// share, and its figures are the runs' medians. A failed run is an event with its own
/// cause, not a measure: one is enough, and the pair says in how many runs it failed.
pub fn judge_runs(runs: &[PairInput], base: &PerfBaseline, t: &Thresholds) -> PairVerdict {
    let judged: Vec<PairVerdict> = runs.iter().map(|r| judge_pair(r, base, t)).collect();
    let Some(first) = judged.first() else {
        return PairVerdict {
            a: 0,
            b: 0,
            state: PairState::NotRun,
            why: vec!["no run".into()],
            latency_ratio: None,
            bandwidth_ratio: None,
            runs: None,
        };
    };
    let ran: Vec<(&PairVerdict, &PairEnd)> = judged
        .iter()
        .zip(runs)
        .filter_map(|(v, r)| r.end.as_ref().ok().map(|e| (v, e)))
        .collect();
    if ran.is_empty() {
        return judged.last().cloned().unwrap_or_else(|| first.clone());
    }
    let figures = |f: fn(&PairEnd) -> Option<f64>| {
        Spread::of(&ran.iter().filter_map(|(_, e)| f(e)).collect::<Vec<_>>())
    };
    let spread = RunSpread {
        runs: ran.len() as u32,
        bad_runs: ran.iter().filter(|(v, _)| v.state.is_bad()).count() as u32,
        usec_per_iter: figures(|e| e.usec_per_iter),
        mbit_per_sec: figures(|e| e.mbit_per_sec),
    };
    let ratio = |m: Option<&Spread>, b: Option<f64>| match (m, b) {
        (Some(m), Some(b)) if b > 0.0 => Some(m.median / b),
        _ => None,
    };
    let mut v = PairVerdict {
        a: first.a,
        b: first.b,
        state: PairState::Ok,
        why: Vec::new(),
        latency_ratio: ratio(spread.usec_per_iter.as_ref(), base.usec_per_iter),
        bandwidth_ratio: ratio(spread.mbit_per_sec.as_ref(), base.mbit_per_sec),
        runs: None,
    };
    let count = |s: PairState| ran.iter().filter(|(v, _)| v.state == s).count();
    let n = ran.len();
    let failed = count(PairState::Failed);
    if failed > 0 {
        v.state = PairState::Failed;
        v.why.push(format!("failed in {failed} of {n} runs"));
        v.why.extend(
            ran.iter()
                .filter(|(r, _)| r.state == PairState::Failed)
                .flat_map(|(r, _)| r.why.iter().cloned()),
        );
    } else if spread.bad_runs as usize == n && within_noise(&spread, base, &ran) {
        v.why.push(format!(
            "{} in {n} of {n} runs, yet not decided: its best run reaches the worst run of the pairs the baseline stands on ({}), so this host's own noise covers the difference; rerun on an idle host or with a larger -n",
            bad_labels(&ran),
            [
                base.usec_worst_run.map(|u| format!("{u:.1} µs/iter")),
                base.mbit_worst_run.map(|m| format!("{m:.0} Mbit/s")),
            ]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(", ")
        ));
    } else if spread.bad_runs as usize == n {
        // The state most bad runs share; a tie goes to the worse one.
        // (max_by_key keeps the last of equals: the worst state is listed last.)
        v.state = [PairState::LowBandwidth, PairState::Slow, PairState::Lossy]
            .into_iter()
            .max_by_key(|s| count(*s))
            .unwrap_or(PairState::Slow);
        v.why.push(format!(
            "{} in {} of {n} runs",
            bad_labels(&ran),
            spread.bad_runs
        ));
        v.why.extend(
            ran.iter()
                .filter(|(r, _)| r.state.is_bad())
                .flat_map(|(r, _)| r.why.iter().cloned()),
        );
    } else if spread.bad_runs > 0 {
        v.why.push(format!(
            "{} in {} of {n} runs only: not consistent, taken for the host's noise",
            bad_labels(&ran),
            spread.bad_runs
        ));
    }
    v.runs = Some(spread);
    v
}

/// A pair slow or low in every run whose best run still reaches the worst run of the
/// pairs the baseline stands on: the difference is within what this host's noise does to
/// one pair, so the runs do not decide it. Loss (counted, not timed) is never noise.
fn within_noise(spread: &RunSpread, base: &PerfBaseline, ran: &[(&PairVerdict, &PairEnd)]) -> bool {
    if ran.iter().any(|(r, _)| r.state == PairState::Lossy) {
        return false;
    }
    let reaches =
        |figure: Option<Spread>, worst: Option<f64>, lower_is_better: bool| match (figure, worst) {
            (Some(f), Some(w)) if lower_is_better => f.min <= w,
            (Some(f), Some(w)) => f.max >= w,
            _ => false,
        };
    let slow = ran.iter().any(|(r, _)| r.state == PairState::Slow);
    let low = ran.iter().any(|(r, _)| r.state == PairState::LowBandwidth);
    (!slow || reaches(spread.usec_per_iter, base.usec_worst_run, true))
        && (!low || reaches(spread.mbit_per_sec, base.mbit_worst_run, false))
}

/// The bad states among runs, each once, mildest first ("low bandwidth, slow").
fn bad_labels(ran: &[(&PairVerdict, &PairEnd)]) -> String {
    let states: BTreeSet<PairState> = ran
        .iter()
        .map(|(r, _)| r.state)
        .filter(|s| s.is_bad())
        .collect();
    states
        .into_iter()
        .map(PairState::label)
        .collect::<Vec<_>>()
        .join(", ")
}

// ---------------------------------------------------------------------------------------
// Attribution

/// Ranks that never joined or left, endpoints bad with most of their partners, and bad
/// pairs that no endpoint explains.
/// `attribute_counted` of verdicts in hand, every pair's (the rules' tests).
#[cfg(test)]
pub fn attribute(
    size: u32,
    joined: &BTreeSet<u32>,
    gone: &BTreeMap<u32, GoneRank>,
    ranks: &[RankInfo],
    verdicts: &[PairVerdict],
) -> Vec<Suspect> {
    let top = verdicts.iter().map(|v| v.b + 1).max().unwrap_or(0);
    let mut ran = RanPairs::new(size.max(top));
    for v in verdicts.iter().filter(|v| v.state != PairState::NotRun) {
        ran.add(v.a, v.b);
    }
    attribute_counted(size, joined, gone, ranks, verdicts, &ran)
}

/// `attribute` from what rank 0 keeps at scale: the pairs that are not ok (the not-run
/// ones with them; good ones are skipped), and which pairs ran at all. Each suspect says
/// over how many runs of its pairs it was bad.
pub fn attribute_counted(
    size: u32,
    joined: &BTreeSet<u32>,
    gone: &BTreeMap<u32, GoneRank>,
    ranks: &[RankInfo],
    verdicts: &[PairVerdict],
    ran: &RanPairs,
) -> Vec<Suspect> {
    let mut out = suspects_of(size, joined, gone, ranks, verdicts, ran);
    let by_pair: BTreeMap<(u32, u32), &PairVerdict> =
        verdicts.iter().map(|v| ((v.a, v.b), v)).collect();
    for s in &mut out {
        for (runs, bad) in s
            .pairs
            .iter()
            .filter_map(|p| by_pair.get(p))
            .map(|v| v.run_count())
        {
            s.runs += runs;
            s.bad_runs += bad;
        }
    }
    out
}

fn suspects_of(
    size: u32,
    joined: &BTreeSet<u32>,
    gone: &BTreeMap<u32, GoneRank>,
    ranks: &[RankInfo],
    verdicts: &[PairVerdict],
    ran: &RanPairs,
) -> Vec<Suspect> {
    let verdicts: Vec<&PairVerdict> = verdicts.iter().filter(|v| v.state.is_bad()).collect();
    let mut out = Vec::new();
    for r in 0..size {
        if !joined.contains(&r) {
            out.push(Suspect {
                kind: SuspectKind::Rank,
                code: codes::FABRIC_RANK_MISSING,
                rank: Some(r),
                peer_rank: None,
                reason: format!("rank {r} never joined the run"),
                pairs: Vec::new(),
                runs: 0,
                bad_runs: 0,
            });
        } else if let Some(g) = gone.get(&r) {
            out.push(Suspect {
                kind: SuspectKind::Rank,
                // A hung rank's pairs are its own: no link is blamed for them (below).
                code: match g.how {
                    Departure::Left => codes::FABRIC_RANK_LEFT,
                    Departure::Hung => codes::FABRIC_RANK_HUNG,
                },
                rank: Some(r),
                peer_rank: None,
                reason: g.why.clone(),
                pairs: pairs_of(&verdicts, r, |v| {
                    v.state == PairState::NotRun || v.state.is_bad()
                }),
                runs: 0,
                bad_runs: 0,
            });
        }
    }
    for info in ranks {
        if let Some(p) = &info.problem {
            out.push(Suspect {
                kind: SuspectKind::Rank,
                code: codes::FABRIC_NO_PORT,
                rank: Some(info.rank),
                peer_rank: None,
                reason: p.clone(),
                pairs: Vec::new(),
                runs: 0,
                bad_runs: 0,
            });
        }
    }
    let blamed: BTreeSet<u32> = out.iter().filter_map(|s| s.rank).collect();
    // Partners tested and bad, per endpoint, over pairs that ran.
    let tested = ran.tested();
    let mut bad: BTreeMap<u32, Vec<&PairVerdict>> = BTreeMap::new();
    for v in verdicts.iter().filter(|v| v.state != PairState::NotRun) {
        for r in [v.a, v.b] {
            bad.entry(r).or_default().push(v);
        }
    }
    let endpoints = tested.len();
    let majority_bad = explain_away(&verdicts, ran, &bad);
    // More than half the endpoints to blame is no longer "one endpoint": whatever they
    // share is the suspect (a single bad endpoint takes at most half the pairs with it).
    if endpoints >= 3 && majority_bad.len() * 2 > endpoints {
        let pairs: Vec<(u32, u32)> = verdicts
            .iter()
            .filter(|v| v.state.is_bad() && v.state != PairState::NotRun)
            .map(|v| (v.a, v.b))
            .collect();
        out.push(Suspect {
            kind: SuspectKind::Fabric,
            code: codes::FABRIC_WIDE,
            rank: None,
            peer_rank: None,
            reason: format!(
                "{} of the {endpoints} endpoints are bad with most of their partners: a cause they share (switch, subnet, PFC/ECN configuration, the subnet manager), not one endpoint",
                majority_bad.len()
            ),
            pairs,
            runs: 0,
            bad_runs: 0,
        });
        return out;
    }
    for &r in &majority_bad {
        let mine = &bad[&r];
        let n = tested[&r];
        let states: BTreeSet<PairState> = mine.iter().map(|v| v.state).collect();
        let what = states
            .iter()
            .map(|s| s.label())
            .collect::<Vec<_>>()
            .join(", ");
        let code = match states.iter().max() {
            Some(PairState::Failed) => codes::FABRIC_ENDPOINT_FAILING,
            Some(PairState::Lossy) => codes::FABRIC_ENDPOINT_LOSSY,
            _ => codes::FABRIC_ENDPOINT_SLOW,
        };
        out.push(Suspect {
            kind: SuspectKind::Endpoint,
            code,
            rank: Some(r),
            peer_rank: None,
            reason: format!("{what} with {} of {n} partners", mine.len()),
            pairs: mine.iter().map(|v| (v.a, v.b)).collect(),
            runs: 0,
            bad_runs: 0,
        });
    }
    let explained: BTreeSet<u32> = majority_bad.iter().chain(&blamed).copied().collect();
    for v in &verdicts {
        if !v.state.is_bad() || v.state == PairState::NotRun {
            continue;
        }
        if explained.contains(&v.a) || explained.contains(&v.b) {
            continue;
        }
        let (kind, code, reason) = if endpoints <= 2 {
            (
                SuspectKind::Pair,
                codes::FABRIC_PAIR,
                format!(
                    "{}; with two endpoints there is no third to tell which end or the link between them is at fault",
                    v.state.label()
                ),
            )
        } else {
            (
                SuspectKind::Link,
                codes::FABRIC_LINK,
                format!(
                    "{} between two endpoints that are good with their other partners: the link or path between them",
                    v.state.label()
                ),
            )
        };
        out.push(Suspect {
            kind,
            code,
            rank: Some(v.a),
            peer_rank: Some(v.b),
            reason,
            pairs: vec![(v.a, v.b)],
            runs: 0,
            bad_runs: 0,
        });
    }
    out
}

/// Endpoints bad with most of their partners, found one at a time: the worst (largest
/// share of bad pairs, then most bad pairs) is blamed and its pairs set aside before the
/// next is judged, so two bad endpoints of four do not drag the good two into the count.
fn explain_away(
    verdicts: &[&PairVerdict],
    ran: &RanPairs,
    bad: &BTreeMap<u32, Vec<&PairVerdict>>,
) -> Vec<u32> {
    let tested = ran.tested();
    let mut blamed: Vec<u32> = Vec::new();
    loop {
        // Bad pairs left, per endpoint, once the blamed endpoints' pairs are set aside.
        let mut left_bad: BTreeMap<u32, u32> = BTreeMap::new();
        for v in verdicts.iter().filter(|v| v.state != PairState::NotRun) {
            if blamed.contains(&v.a) || blamed.contains(&v.b) {
                continue;
            }
            for r in [v.a, v.b] {
                *left_bad.entry(r).or_default() += 1;
            }
        }
        // Pairs left: the ones it ran, less those with a blamed partner.
        let left_tested = |r: u32| -> u32 {
            let with_blamed = blamed.iter().filter(|b| ran.ran(r, **b)).count() as u32;
            tested
                .get(&r)
                .copied()
                .unwrap_or(0)
                .saturating_sub(with_blamed)
        };
        let next = left_bad
            .iter()
            .filter(|(r, b)| {
                let all_bad = bad.get(r).map_or(0, Vec::len);
                let n = left_tested(**r);
                // Bad with at least two partners overall, and with most of those left.
                all_bad >= 2 && tested.get(r).copied().unwrap_or(0) > 0 && **b * 2 > n
            })
            .max_by(|(ra, ba), (rb, bb)| {
                let fa = f64::from(**ba) / f64::from(left_tested(**ra).max(1));
                let fb = f64::from(**bb) / f64::from(left_tested(**rb).max(1));
                fa.total_cmp(&fb).then(ba.cmp(bb)).then(rb.cmp(ra))
            })
            .map(|(r, _)| *r);
        match next {
            Some(r) => blamed.push(r),
            None => break,
        }
    }
    blamed.sort_unstable();
    blamed
}

fn pairs_of(
    verdicts: &[&PairVerdict],
    r: u32,
    keep: impl Fn(&PairVerdict) -> bool,
) -> Vec<(u32, u32)> {
    verdicts
        .iter()
        .filter(|v| (v.a == r || v.b == r) && keep(v))
        .map(|v| (v.a, v.b))
        .collect()
}

// ---------------------------------------------------------------------------------------
// Explaining a suspect

fn failure_text(f: &ChildFailure) -> (Option<String>, Vec<String>, Option<String>) {
    let x = f.explanation.as_ref();
    let evidence = x
        .map(|x| {
            x.evidence
                .iter()
                .filter_map(ChildEvidence::text)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    (
        x.and_then(|x| x.summary.clone()),
        evidence,
        x.and_then(|x| x.fix.clone()),
    )
}

/// The first counter finding of a pair end with `code`: (message, evidence, fix).
fn counter_finding(end: &PairEnd, code: &Code) -> Option<(String, Vec<String>, Option<String>)> {
    let f = end
        .counters
        .as_ref()?
        .findings
        .iter()
        .find(|f| f.code.as_deref() == Some(code.as_str()))?;
    let evidence = f
        .evidence
        .iter()
        .filter_map(|e| match e {
            ChildEvidence::Line(line) => Some(line.as_str()),
            _ => None,
        })
        // "this end" and "the peer" were the pair's client and server; here the
        // port names alone say whose counters moved.
        .map(|e| {
            e.strip_prefix("this end ")
                .or_else(|| e.strip_prefix("the peer "))
                .unwrap_or(e)
                .to_string()
        })
        .collect();
    Some((f.message.clone()?, evidence, f.fix.clone()))
}

pub fn explain_suspect(
    s: &Suspect,
    infos: &BTreeMap<u32, RankInfo>,
    verdicts: &[PairVerdict],
    ends: &BTreeMap<(u32, u32), PairEnd>,
    drift: &[Drift],
    baseline: &PerfBaseline,
) -> SuspectExplanation {
    let label = |r: u32| {
        infos
            .get(&r)
            .map(|i| format!("{} (rank {r})", i.label()))
            .unwrap_or_else(|| format!("rank {r}"))
    };
    let mut evidence = Vec::new();
    let mut bad_pairs: Vec<&PairVerdict> = verdicts
        .iter()
        .filter(|v| s.pairs.contains(&(v.a, v.b)))
        .collect();
    bad_pairs.sort_by_key(|v| std::cmp::Reverse(v.state));
    for v in bad_pairs.iter().take(6) {
        evidence.push(format!(
            "{} ↔ {}: {}: {}",
            label(v.a),
            label(v.b),
            v.state.label(),
            v.why.join("; ")
        ));
    }
    if bad_pairs.len() > 6 {
        evidence.push(format!("and {} more pairs like these", bad_pairs.len() - 6));
    }
    // The endpoint's own differences from the rest.
    if let Some(r) = s.rank.filter(|_| s.kind != SuspectKind::Fabric) {
        for d in drift {
            for v in &d.values {
                if v.ranks.contains(&r) && d.majority.as_ref() != Some(&v.value) {
                    let others = d
                        .majority
                        .as_ref()
                        .map(|m| format!(", most endpoints {m}"))
                        .unwrap_or_default();
                    evidence.push(format!("its {} is {}{others}", d.attribute, v.value));
                }
            }
        }
    }
    let info = s.rank.and_then(|r| infos.get(&r));
    let flux = [s.rank, s.peer_rank]
        .into_iter()
        .flatten()
        .filter_map(|r| infos.get(&r))
        .find_map(|i| arp_flux_text(&i.arp_flux).map(|f| (i.host.clone(), f)));
    let first_failure = bad_pairs
        .iter()
        .filter(|v| v.state == PairState::Failed)
        .find_map(|v| ends.get(&(v.a, v.b))?.failure.as_deref().map(failure_text));
    let first_loss = bad_pairs
        .iter()
        .find_map(|v| counter_finding(ends.get(&(v.a, v.b))?, &codes::COUNTERS_RETRANSMISSION));
    let look_at = info
        .map(|i| {
            format!(
                "on {}: `rdmactl counters -d {}` for errors, `rdmactl doctor`, {}the cable and the switch port",
                i.host,
                i.device,
                i.netdev
                    .as_ref()
                    .map(|n| format!("`tc qdisc show dev {n}` (shaping, delay, loss), `ip -s link show {n}`, "))
                    .unwrap_or_default()
            )
        })
        .unwrap_or_default();
    let (summary, fix) = match s.kind {
        SuspectKind::Rank if s.code == codes::FABRIC_RANK_MISSING => (
            format!("{}; its pairs were not tested", s.reason),
            "look at that rank's own output (the launcher prints it): it may not have started, not reached rank 0's rendezvous address, or used another --token or --size".to_string(),
        ),
        SuspectKind::Rank if s.code == codes::FABRIC_NO_PORT => (
            s.reason.clone(),
            "bring the port up (`rdmactl ports` on that host), or give the endpoint with -d".to_string(),
        ),
        SuspectKind::Rank if s.code == codes::FABRIC_RANK_HUNG => (
            format!("{}; its remaining pairs were not run", s.reason),
            "on that host, `ps -o pid,stat,wchan:32,cmd -C rdmactl`: stat T is a stopped process (`kill -CONT` it, or find who sent SIGSTOP: a debugger, a job suspend), D is one stuck in the kernel (`cat /proc/PID/stack`, `dmesg`); then run again".to_string(),
        ),
        SuspectKind::Rank => (
            format!("{}; its remaining pairs were not tested", s.reason),
            "look at that host: the rank's stderr, `dmesg` (an OOM kill or a driver reset); then run again".to_string(),
        ),
        SuspectKind::Fabric => (
            s.reason.clone(),
            format!(
                "the baseline is {}; if every pair is slow against --expect-usec/--expect-mbit, look at what all endpoints share: the switch, PFC/ECN settings, the subnet manager",
                baseline.how
            ),
        ),
        _ => {
            if let Some((summary, seen, fix)) = first_failure {
                evidence.extend(seen);
                (
                    format!(
                        "{}: {}",
                        s.reason,
                        summary.unwrap_or_else(|| "the pair tests failed".into())
                    ),
                    fix.unwrap_or_else(|| look_at.clone()),
                )
            } else if let (Some((message, seen, fix)), true) =
                (first_loss, s.code == codes::FABRIC_ENDPOINT_LOSSY || bad_pairs.iter().any(|v| v.state == PairState::Lossy))
            {
                evidence.extend(seen);
                (
                    format!("{}: {message}", s.reason),
                    format!("{look_at}; {}", fix.unwrap_or_default()),
                )
            } else {
                let ratios: Vec<f64> = bad_pairs.iter().filter_map(|v| v.latency_ratio).collect();
                let worst = ratios.iter().copied().fold(0.0, f64::max);
                (
                    format!(
                        "{}{}",
                        s.reason,
                        if worst > 0.0 {
                            format!(": up to {worst:.1}× the baseline latency ({})", baseline.how)
                        } else {
                            String::new()
                        }
                    ),
                    match s.kind {
                        SuspectKind::Link => format!(
                            "the path between the two: the cables and switch ports on it, a route or ECMP hash that differs; rerun `rdmactl pingpong` between them, and {look_at}"
                        ),
                        _ => format!("look at this endpoint {look_at}"),
                    },
                )
            }
        }
    };
    let mut fix = fix;
    if let Some((host, f)) = flux {
        evidence.push(format!("ARP flux on {host}: {f}"));
        fix = format!("{ARP_FLUX_FIX}; then {fix}");
    }
    SuspectExplanation {
        summary,
        evidence,
        fix,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fabric::child::Verbatim;
    use crate::model::facts::ArpFluxNetdev;

    fn all_pairs(rounds: &[Vec<(u32, u32)>]) -> Vec<(u32, u32)> {
        let mut v: Vec<(u32, u32)> = rounds.iter().flatten().copied().collect();
        v.sort_unstable();
        v
    }

    fn matching(round: &[(u32, u32)]) -> bool {
        let mut seen = BTreeSet::new();
        round
            .iter()
            .all(|(a, b)| a != b && seen.insert(*a) && seen.insert(*b))
    }

    #[test]
    fn round_robin_schedules_every_pair_once_in_n_minus_1_rounds() {
        for n in 2..=40u32 {
            let ids: Vec<u32> = (0..n).collect();
            let rounds = round_robin(&ids);
            let expect_rounds = if n % 2 == 0 { n - 1 } else { n } as usize;
            assert_eq!(rounds.len(), expect_rounds, "n={n}");
            assert!(rounds.iter().all(|r| matching(r)), "n={n}");
            let pairs = all_pairs(&rounds);
            let mut expect = Vec::new();
            for a in 0..n {
                for b in a + 1..n {
                    expect.push((a, b));
                }
            }
            assert_eq!(pairs, expect, "n={n}");
            if n % 2 == 0 {
                assert!(
                    rounds.iter().all(|r| r.len() == n as usize / 2),
                    "perfect matchings"
                );
            }
        }
        assert!(round_robin(&[7]).is_empty());
    }

    #[test]
    fn rails_pair_only_the_same_local_rank() {
        // Two hosts with 4 rails each, and a third host with 2.
        let ranks: Vec<(u32, u32)> = (0..10).map(|r| (r, r % 4)).collect();
        let rounds = schedule(&ranks, Pattern::Rails, 0);
        assert!(rounds.iter().all(|r| matching(r)));
        let pairs = all_pairs(&rounds);
        assert!(pairs.iter().all(|(a, b)| a % 4 == b % 4), "{pairs:?}");
        // rail 0: 0,4,8 → 3 pairs; rail 1: 1,5,9 → 3; rails 2, 3: 1 each.
        assert_eq!(pairs.len(), 8);
        assert_eq!(rounds.len(), 3);
    }

    #[test]
    fn random_k_gives_each_endpoint_k_partners_reproducibly() {
        let ranks: Vec<(u32, u32)> = (0..64).map(|r| (r, 0)).collect();
        let a = schedule(&ranks, Pattern::Random(3), seed_of("job-1"));
        let b = schedule(&ranks, Pattern::Random(3), seed_of("job-1"));
        assert_eq!(a, b);
        assert!(a.iter().all(|r| matching(r)));
        let pairs = all_pairs(&a);
        let mut dedup = pairs.clone();
        dedup.dedup();
        assert_eq!(pairs, dedup, "no pair twice");
        for r in 0..64 {
            let partners = pairs.iter().filter(|(x, y)| *x == r || *y == r).count();
            assert!(partners >= 3, "rank {r} has {partners}");
        }
        assert_ne!(a, schedule(&ranks, Pattern::Random(3), seed_of("job-2")));
    }

    fn info(rank: u32, host: &str) -> RankInfo {
        RankInfo {
            rank,
            host: host.into(),
            device: format!("rxe{rank}"),
            port: 1,
            netdev_mtu: Some(1500),
            active_mtu: Some(1024),
            gid_type: Some("RoCE v2".into()),
            gid_index: Some(1),
            version: "1".into(),
            ..RankInfo::default()
        }
    }

    #[test]
    fn drift_names_the_minority_and_the_majority() {
        let mut ranks: Vec<RankInfo> = (0..4).map(|r| info(r, &format!("h{r}"))).collect();
        ranks[2].netdev_mtu = Some(1200);
        let d = drift(&ranks);
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].attribute, "netdev_mtu");
        assert_eq!(d[0].majority.as_deref(), Some("1500"));
        assert_eq!(d[0].values[0].ranks, vec![0, 1, 3]);
        assert_eq!(d[0].values[1].value, "1200");
        assert_eq!(d[0].values[1].hosts, vec!["h2".to_string()]);
        // Two endpoints that differ: no majority, both named.
        let mut two = vec![info(0, "a"), info(1, "b")];
        two[1].gid_index = Some(3);
        let d = drift(&two);
        assert_eq!(d[0].attribute, "gid_index");
        assert_eq!(d[0].majority, None);
        // Unknown is not a difference; alike is not drift.
        let mut same: Vec<RankInfo> = (0..3).map(|r| info(r, "h")).collect();
        same[1].firmware = Some("1.0".into());
        assert!(drift(&same).is_empty());
    }

    fn flux(netdevs: &[&str]) -> Vec<ArpFluxGroup> {
        vec![ArpFluxGroup {
            subnet: "10.0.0.0/24".into(),
            netdevs: netdevs
                .iter()
                .map(|n| ArpFluxNetdev {
                    netdev: n.to_string(),
                    arp_ignore: Some(0),
                })
                .collect(),
        }]
    }

    #[test]
    fn arp_flux_is_worded_as_doctor_words_it() {
        assert_eq!(arp_flux_text(&[]), None);
        let mut two = flux(&["e0", "e1"]);
        two.push(ArpFluxGroup {
            subnet: "10.1.0.0/16".into(),
            netdevs: vec![ArpFluxNetdev {
                netdev: "e2".into(),
                arp_ignore: None,
            }],
        });
        assert_eq!(
            arp_flux_text(&two).unwrap(),
            "e0, e1 on 10.0.0.0/24 answer ARP for each other's addresses (e0 arp_ignore 0, e1 arp_ignore 0); \
             e2 on 10.1.0.0/16 answer ARP for each other's addresses (e2 arp_ignore ?)"
        );
    }

    #[test]
    fn arp_flux_is_reported_even_when_every_host_has_it() {
        let mut ranks: Vec<RankInfo> = (0..2).map(|r| info(r, "h")).collect();
        for r in &mut ranks {
            r.arp_flux = flux(&["e0", "e1"]);
        }
        let d = drift(&ranks);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].attribute, "arp_flux");
        assert_eq!(d[0].values[0].ranks, vec![0, 1]);
        assert_eq!(d[0].values[0].hosts, vec!["h".to_string()]);
    }

    fn ok_pair(a: u32, b: u32, usec: f64, mbit: f64) -> PairInput {
        PairInput {
            a,
            b,
            end: Ok(PairEnd {
                ok: true,
                usec_per_iter: Some(usec),
                mbit_per_sec: Some(mbit),
                ..PairEnd::default()
            }),
            resends_per_mille: Some(0.0),
        }
    }

    /// All pairs of n endpoints; `slow` endpoints add `extra` µs and halve bandwidth.
    fn fabric(n: u32, slow: &[u32], extra: f64) -> Vec<PairInput> {
        let mut out = Vec::new();
        for a in 0..n {
            for b in a + 1..n {
                let k = slow.iter().filter(|s| **s == a || **s == b).count() as f64;
                out.push(ok_pair(
                    a,
                    b,
                    100.0 + 3.0 * f64::from(a + b) + k * extra,
                    1000.0 / (1.0 + k),
                ));
            }
        }
        out
    }

    fn verdicts_of(pairs: &[PairInput], t: &Thresholds) -> (PerfBaseline, Vec<PairVerdict>) {
        let base = baseline(pairs, t);
        let v = pairs.iter().map(|p| judge_pair(p, &base, t)).collect();
        (base, v)
    }

    fn suspects(n: u32, verdicts: &[PairVerdict]) -> Vec<Suspect> {
        let joined: BTreeSet<u32> = (0..n).collect();
        let ranks: Vec<RankInfo> = (0..n).map(|r| info(r, "h")).collect();
        attribute(n, &joined, &BTreeMap::new(), &ranks, verdicts)
    }

    fn base() -> PerfBaseline {
        PerfBaseline {
            usec_per_iter: Some(100.0),
            mbit_per_sec: Some(1000.0),
            how: "given".into(),
            usec_worst_run: None,
            mbit_worst_run: None,
        }
    }

    /// Issue 40: one slow spell of a shared host in three runs is noise, not a slow pair;
    /// its figures are the runs' medians and its why says what the runs found.
    #[test]
    fn a_pair_slow_in_one_run_of_three_is_cleared() {
        let t = Thresholds::default();
        let runs = [
            ok_pair(0, 1, 300.0, 1000.0),
            ok_pair(0, 1, 110.0, 950.0),
            ok_pair(0, 1, 105.0, 990.0),
        ];
        let v = judge_runs(&runs, &base(), &t);
        assert_eq!(v.state, PairState::Ok, "{v:?}");
        assert_eq!(
            v.why,
            vec!["slow in 1 of 3 runs only: not consistent, taken for the host's noise"]
        );
        let r = v.runs.clone().unwrap();
        assert_eq!((r.runs, r.bad_runs), (3, 1));
        let u = r.usec_per_iter.unwrap();
        assert_eq!((u.min, u.median, u.max), (105.0, 110.0, 300.0));
        assert_eq!(v.latency_ratio, Some(1.1));
        assert_eq!(v.run_count(), (3, 1));
    }

    /// Slow in two runs of three, low bandwidth in the third: every run was bad, and the
    /// pair is slow, said with the runs that found it.
    #[test]
    fn a_pair_bad_in_every_run_stays_bad_with_the_state_most_share() {
        let t = Thresholds::default();
        let runs = [
            ok_pair(0, 1, 300.0, 1000.0),
            ok_pair(0, 1, 280.0, 990.0),
            ok_pair(0, 1, 100.0, 500.0),
        ];
        let v = judge_runs(&runs, &base(), &t);
        assert_eq!(v.state, PairState::Slow, "{v:?}");
        assert_eq!(v.why[0], "low bandwidth, slow in 3 of 3 runs");
        assert_eq!(v.run_count(), (3, 3));
        // The medians: 280 µs (2.8× the baseline), 990 Mbit/s.
        assert_eq!(v.latency_ratio, Some(2.8));
        assert_eq!(v.bandwidth_ratio, Some(0.99));
    }

    /// A failure is an event with its own cause, not a measure noise moves: one failed run
    /// of three keeps the pair failed, and says how often.
    #[test]
    fn one_failed_run_keeps_the_pair_failed() {
        let t = Thresholds::default();
        let mut failed = ok_pair(0, 1, 100.0, 1000.0);
        if let Ok(e) = failed.end.as_mut() {
            e.ok = false;
            e.problem = Some("timed out".into());
        }
        let runs = [
            failed,
            ok_pair(0, 1, 100.0, 1000.0),
            ok_pair(0, 1, 100.0, 1000.0),
        ];
        let v = judge_runs(&runs, &base(), &t);
        assert_eq!(v.state, PairState::Failed, "{v:?}");
        assert_eq!(v.why[0], "failed in 1 of 3 runs");
        assert!(v.why.iter().any(|w| w == "timed out"), "{v:?}");
    }

    /// A run a gone rank kept from running counts neither way.
    #[test]
    fn a_run_that_did_not_run_is_not_counted() {
        let t = Thresholds::default();
        let gone = PairInput {
            a: 0,
            b: 1,
            end: Err("rank 1 left".into()),
            resends_per_mille: None,
        };
        let runs = [
            ok_pair(0, 1, 300.0, 1000.0),
            gone,
            ok_pair(0, 1, 290.0, 1000.0),
        ];
        let v = judge_runs(&runs, &base(), &t);
        assert_eq!(v.state, PairState::Slow);
        assert_eq!(v.run_count(), (2, 2));
    }

    /// Slow in two runs of three: not consistent, so not slow; bad in every run: slow.
    #[test]
    fn a_pair_bad_in_two_runs_of_three_is_not_consistent() {
        let t = Thresholds::default();
        let slow = ok_pair(0, 1, 300.0, 1000.0);
        let v = judge_runs(
            &[slow.clone(), slow.clone(), ok_pair(0, 1, 100.0, 1000.0)],
            &base(),
            &t,
        );
        assert_eq!(v.state, PairState::Ok, "{v:?}");
        assert_eq!(v.run_count(), (3, 2));
    }

    /// Issue 40's clean VM fabric: one lucky first run of pair 1-3 set the bandwidth bar
    /// and four pairs that are as good as it looked low beside it, in every run. The pairs
    /// the baseline stands on run again; by their medians the bar falls to the fabric's
    /// level, and nothing is bad.
    #[test]
    fn a_lucky_run_that_set_the_baseline_is_run_again_and_nothing_is_bad() {
        let t = Thresholds::default();
        let mut first: Vec<PairInput> = fabric(4, &[], 0.0)
            .into_iter()
            .map(|mut p| {
                if let Ok(e) = p.end.as_mut() {
                    e.mbit_per_sec = Some(if (p.a, p.b) == (1, 3) { 1000.0 } else { 520.0 });
                }
                p
            })
            .collect();
        let mut seen = BaselineSeen::default();
        first.iter().for_each(|p| seen.add(p));
        let base = seen.baseline(&t);
        assert_eq!(base.mbit_per_sec, Some(1000.0));
        let bad: Vec<(u32, u32)> = first
            .iter()
            .filter(|p| judge_pair(p, &base, &t).state.is_bad())
            .map(|p| (p.a, p.b))
            .collect();
        assert_eq!(bad.len(), 5, "{bad:?}");
        assert!(seen.defining_pairs().contains(&(1, 3)));
        // The retests: 1-3 at the fabric's level twice, the others as before.
        let bw = |p: &PairInput, m: f64| {
            let mut p = p.clone();
            if let Ok(e) = p.end.as_mut() {
                e.mbit_per_sec = Some(m);
            }
            p
        };
        let runs: Vec<Vec<PairInput>> = first
            .iter_mut()
            .map(|p| {
                let again = if (p.a, p.b) == (1, 3) { 530.0 } else { 515.0 };
                vec![p.clone(), bw(p, again), bw(p, again + 10.0)]
            })
            .collect();
        let mut again = BaselineSeen::default();
        runs.iter()
            .filter_map(|r| median_run(r))
            .for_each(|p| again.add(&p));
        let settled = settled_baseline(&base, again.baseline(&t));
        assert_eq!(settled.mbit_per_sec, Some(540.0), "{settled:?}");
        assert!(settled.how.contains("run again"), "{}", settled.how);
        for r in &runs {
            let v = judge_runs(r, &settled, &t);
            assert_eq!(v.state, PairState::Ok, "{v:?}");
        }
    }

    /// Issue 40, a clean VM fabric: pair 1-2 under 0.8 of the baseline in all three runs
    /// (43, 54, 57 Mbit/s against 72), while a pair the baseline stands on ran as low as 54
    /// itself. The noise covers the difference: not decided, not low. A real limiter whose
    /// best run stays below every run of those pairs is low.
    #[test]
    fn a_pair_low_within_the_baselines_own_runs_is_not_decided() {
        let t = Thresholds::default();
        let base = PerfBaseline {
            mbit_per_sec: Some(71.7),
            mbit_worst_run: Some(54.4),
            usec_worst_run: Some(1118.7),
            ..base()
        };
        let bw = |m: f64| {
            let mut p = ok_pair(1, 2, 100.0, m);
            p.resends_per_mille = Some(0.0);
            p
        };
        let v = judge_runs(&[bw(43.3), bw(53.5), bw(57.3)], &base, &t);
        assert_eq!(v.state, PairState::Ok, "{v:?}");
        assert!(
            v.why[0].starts_with("low bandwidth in 3 of 3 runs, yet not decided"),
            "{v:?}"
        );
        assert!(v.why[0].contains("54 Mbit/s"), "{v:?}");
        let v = judge_runs(&[bw(20.0), bw(25.0), bw(22.0)], &base, &t);
        assert_eq!(v.state, PairState::LowBandwidth, "{v:?}");
        assert!(!v.why.iter().any(|w| w.contains("not decided")), "{v:?}");
    }

    /// The noise band comes from the good pairs the baseline stands on only: a slow
    /// endpoint's best pair is one of them, and its runs must not make its own pairs read
    /// as noise.
    #[test]
    fn a_bad_endpoints_best_pair_does_not_widen_the_noise_band() {
        let t = Thresholds::default();
        let base = PerfBaseline {
            mbit_per_sec: Some(1000.0),
            ..base()
        };
        let bw = |a, b, m: f64| ok_pair(a, b, 100.0, m);
        let good = vec![bw(0, 1, 1000.0), bw(0, 1, 900.0), bw(0, 1, 1050.0)];
        let limited = vec![bw(2, 3, 300.0), bw(2, 3, 280.0), bw(2, 3, 310.0)];
        let banded = with_noise_band(base, &[good, limited.clone()], &t);
        assert_eq!(banded.mbit_worst_run, Some(900.0));
        let v = judge_runs(&limited, &banded, &t);
        assert_eq!(v.state, PairState::LowBandwidth, "{v:?}");
    }

    /// The settled baseline is never more demanding than the first run's.
    #[test]
    fn the_settled_baseline_never_raises_the_bar() {
        let first = PerfBaseline {
            usec_per_iter: Some(100.0),
            mbit_per_sec: Some(1000.0),
            how: "first".into(),
            usec_worst_run: None,
            mbit_worst_run: None,
        };
        let better = PerfBaseline {
            usec_per_iter: Some(80.0),
            mbit_per_sec: Some(1200.0),
            how: "again".into(),
            usec_worst_run: None,
            mbit_worst_run: None,
        };
        assert_eq!(settled_baseline(&first, better), first);
    }

    /// A suspect says over how many runs of its pairs it was bad.
    #[test]
    fn a_suspect_counts_the_runs_of_its_pairs() {
        let t = Thresholds::default();
        let pairs = fabric(4, &[3], 400.0);
        let (b, mut verdicts) = verdicts_of(&pairs, &t);
        // Rank 3's pairs with ranks 0 and 1 were retested: slow in all 3 runs.
        for v in verdicts.iter_mut().filter(|v| v.b == 3 && v.a < 2) {
            let p = pairs.iter().find(|p| (p.a, p.b) == (v.a, v.b)).unwrap();
            *v = judge_runs(&[p.clone(), p.clone(), p.clone()], &b, &t);
        }
        let s = suspects(4, &verdicts);
        assert_eq!(s.len(), 1, "{s:?}");
        assert_eq!(
            (s[0].rank, s[0].runs, s[0].bad_runs),
            (Some(3), 7, 7),
            "{s:?}"
        );
    }

    #[test]
    fn one_slow_endpoint_of_three_or_four_is_the_suspect() {
        let t = Thresholds::default();
        for n in [3, 4, 5, 8] {
            let pairs = fabric(n, &[n - 1], 400.0);
            let (base, v) = verdicts_of(&pairs, &t);
            let b = base.usec_per_iter.unwrap();
            assert!(
                b < 150.0,
                "n={n}: the slow endpoint dragged the baseline to {b}"
            );
            let s = suspects(n, &v);
            assert_eq!(s.len(), 1, "n={n}: {s:?}");
            assert_eq!((s[0].kind, s[0].rank), (SuspectKind::Endpoint, Some(n - 1)));
            assert_eq!(s[0].code, "fabric-endpoint-slow");
            assert!(
                s[0].reason
                    .contains(&format!("with {} of {} partners", n - 1, n - 1)),
                "{}",
                s[0].reason
            );
        }
    }

    #[test]
    fn two_bad_endpoints_of_four_are_both_found() {
        let t = Thresholds::default();
        let pairs = fabric(4, &[2, 3], 400.0);
        let (_, v) = verdicts_of(&pairs, &t);
        let s = suspects(4, &v);
        let ranks: Vec<Option<u32>> = s.iter().map(|s| s.rank).collect();
        assert_eq!(ranks, vec![Some(2), Some(3)], "{s:?}");
    }

    #[test]
    fn a_single_slow_pair_is_a_link() {
        let t = Thresholds::default();
        let mut pairs = fabric(4, &[], 0.0);
        let ab = pairs.iter_mut().find(|p| (p.a, p.b) == (0, 2)).unwrap();
        if let Ok(e) = &mut ab.end {
            e.usec_per_iter = Some(900.0);
        }
        let (_, v) = verdicts_of(&pairs, &t);
        let s = suspects(4, &v);
        assert_eq!(s.len(), 1, "{s:?}");
        assert_eq!(
            (s[0].kind, s[0].rank, s[0].peer_rank),
            (SuspectKind::Link, Some(0), Some(2))
        );
    }

    #[test]
    fn two_endpoints_have_no_baseline_unless_given() {
        let t = Thresholds::default();
        let pairs = vec![ok_pair(0, 1, 5000.0, 10.0)];
        let (base, v) = verdicts_of(&pairs, &t);
        assert_eq!(base.usec_per_iter, None);
        assert!(base.how.starts_with("none"), "{}", base.how);
        assert_eq!(v[0].state, PairState::Ok);
        let given = Thresholds {
            expect_usec: Some(100.0),
            ..Thresholds::default()
        };
        let (base, v) = verdicts_of(&pairs, &given);
        assert!(base.how.contains("--expect-usec 100"), "{}", base.how);
        assert_eq!(v[0].state, PairState::Slow);
        let s = suspects(2, &v);
        assert_eq!(s[0].kind, SuspectKind::Pair);
    }

    #[test]
    fn a_failed_endpoint_is_failing_and_counters_make_a_pair_lossy() {
        let t = Thresholds::default();
        let mut pairs = fabric(4, &[], 0.0);
        for p in pairs.iter_mut().filter(|p| p.b == 3) {
            p.end = Ok(PairEnd {
                ok: false,
                failure: Some(Verbatim::new(
                    serde_json::json!({"message": "IBV_WC_RETRY_EXC_ERR", "explanation": {"code": "retry-exceeded"}}),
                )),
                ..PairEnd::default()
            });
        }
        let (_, v) = verdicts_of(&pairs, &t);
        let s = suspects(4, &v);
        assert_eq!(s[0].code, "fabric-endpoint-failing");
        assert_eq!(s[0].rank, Some(3));
        let mut lossy = fabric(3, &[], 0.0);
        lossy[0].resends_per_mille = Some(340.0);
        let (_, v) = verdicts_of(&lossy, &t);
        assert_eq!(v[0].state, PairState::Lossy);
        assert!(v[0].why[0].contains("340.0 packets resent per thousand sent"));
    }

    #[test]
    fn missing_and_gone_ranks_are_named_and_their_pairs_not_blamed_on_others() {
        let t = Thresholds::default();
        let mut pairs = fabric(4, &[], 0.0);
        for p in pairs.iter_mut().filter(|p| p.a == 1 || p.b == 1) {
            p.end = Err("rank 1 left the run in round 2".into());
        }
        let (_, v) = verdicts_of(&pairs, &t);
        let joined: BTreeSet<u32> = (0..4).collect();
        let gone = BTreeMap::from([(
            1,
            GoneRank {
                how: Departure::Left,
                why: "rank 1 (h) left the run in round 2".to_string(),
            },
        )]);
        let ranks: Vec<RankInfo> = (0..5).map(|r| info(r, "h")).collect();
        let s = attribute(5, &joined, &gone, &ranks[..4], &v);
        assert_eq!(s.len(), 2, "{s:?}");
        assert_eq!(
            (s[0].code.as_str(), s[0].rank),
            ("fabric-rank-left", Some(1))
        );
        assert_eq!(
            (s[1].code.as_str(), s[1].rank),
            ("fabric-rank-missing", Some(4))
        );
    }

    /// Issue 26 case 14: rank 2 of four SIGSTOPped under --parallel 1. The pair it was in
    /// when it stopped failed on its partner's side; its later pairs never ran. It is the
    /// one suspect, named hung; no link and no partner is blamed.
    #[test]
    fn a_hung_rank_is_named_hung_and_no_link_is_blamed_for_its_pairs() {
        let t = Thresholds::default();
        let mut pairs = fabric(4, &[], 0.0);
        for p in pairs.iter_mut().filter(|p| p.a == 2 || p.b == 2) {
            p.end = Err("rank 2 (h2 rxe2/1) is hung in round 1: its control connection is open but it sent nothing for 15 s".into());
        }
        let first = pairs.iter_mut().find(|p| (p.a, p.b) == (0, 2)).unwrap();
        first.end = Ok(PairEnd {
            ok: false,
            problem: Some(
                "the pair test on h0 rxe0/1 did not finish within --deadline 30 s and was stopped"
                    .into(),
            ),
            ..PairEnd::default()
        });
        let (base, v) = verdicts_of(&pairs, &t);
        let joined: BTreeSet<u32> = (0..4).collect();
        let why = "rank 2 (h2 rxe2/1) is hung in round 1: its control connection is open but it sent nothing for 15 s (every rank sends every 2 s, during pair tests too): the process is alive but stopped or stuck";
        let gone = BTreeMap::from([(
            2,
            GoneRank {
                how: Departure::Hung,
                why: why.into(),
            },
        )]);
        let ranks: Vec<RankInfo> = (0..4).map(|r| info(r, &format!("h{r}"))).collect();
        let s = attribute(4, &joined, &gone, &ranks, &v);
        assert_eq!(s.len(), 1, "{s:?}");
        assert_eq!(
            (s[0].kind, s[0].code.as_str(), s[0].rank),
            (SuspectKind::Rank, "fabric-rank-hung", Some(2))
        );
        assert!(s
            .iter()
            .all(|s| s.kind != SuspectKind::Link && s.peer_rank.is_none()));
        let infos: BTreeMap<u32, RankInfo> = ranks.iter().map(|r| (r.rank, r.clone())).collect();
        let x = explain_suspect(&s[0], &infos, &v, &BTreeMap::new(), &[], &base);
        let all = format!("{} {} {}", x.summary, x.evidence.join(" "), x.fix);
        assert!(x.summary.contains("is hung"), "{}", x.summary);
        assert!(
            x.summary.contains("its remaining pairs were not run"),
            "{}",
            x.summary
        );
        assert!(x.fix.contains("kill -CONT"), "{}", x.fix);
        for false_cause in ["link", "killed", "namespace"] {
            assert!(!all.contains(false_cause), "{false_cause}: {all}");
        }
        // The same pairs with the rank merely silent and not declared: the old blame.
        let s = attribute(4, &joined, &BTreeMap::new(), &ranks, &v);
        assert!(s.iter().any(|s| s.kind == SuspectKind::Link), "{s:?}");
    }

    #[test]
    fn a_failing_endpoint_is_explained_by_its_pairs_own_explanation() {
        let t = Thresholds::default();
        let mut pairs = fabric(4, &[], 0.0);
        for p in pairs.iter_mut().filter(|p| p.b == 3) {
            p.end = Ok(PairEnd {
                ok: false,
                failure: Some(Verbatim::new(
                    serde_json::json!({"message": "IBV_WC_RETRY_EXC_ERR",
                    "explanation": {"code": "retry-exceeded", "summary": "no ACK from the peer",
                        "evidence": [{"from": "route", "text": "neighbour 10.0.0.4 FAILED"}], "fix": "check the link"}}),
                )),
                ..PairEnd::default()
            });
        }
        let (base, v) = verdicts_of(&pairs, &t);
        let s = suspects(4, &v);
        let ends: BTreeMap<(u32, u32), PairEnd> = pairs
            .iter()
            .map(|p| ((p.a, p.b), p.end.clone().unwrap()))
            .collect();
        let mut infos: BTreeMap<u32, RankInfo> =
            (0..4).map(|r| (r, info(r, &format!("h{r}")))).collect();
        infos.get_mut(&3).unwrap().arp_flux = flux(&["e0", "e3"]);
        let x = explain_suspect(&s[0], &infos, &v, &ends, &[], &base);
        assert!(x.summary.contains("no ACK from the peer"), "{}", x.summary);
        assert!(
            x.evidence.iter().any(|e| e == "neighbour 10.0.0.4 FAILED"),
            "{:?}",
            x.evidence
        );
        assert!(
            x.evidence.iter().any(|e| e.starts_with("ARP flux on h3")),
            "{:?}",
            x.evidence
        );
        assert!(x.fix.starts_with("on each of those netdevs"), "{}", x.fix);
        assert!(x.fix.ends_with("check the link"), "{}", x.fix);
    }

    #[test]
    fn a_slow_endpoint_names_its_drift_and_where_to_look() {
        let t = Thresholds::default();
        let pairs = fabric(4, &[2], 400.0);
        let (base, v) = verdicts_of(&pairs, &t);
        let s = suspects(4, &v);
        let mut infos: BTreeMap<u32, RankInfo> =
            (0..4).map(|r| (r, info(r, &format!("h{r}")))).collect();
        infos.get_mut(&2).unwrap().netdev_mtu = Some(1200);
        infos.get_mut(&2).unwrap().netdev = Some("e2".into());
        let ranks: Vec<RankInfo> = infos.values().cloned().collect();
        let d = drift(&ranks);
        let x = explain_suspect(&s[0], &infos, &v, &BTreeMap::new(), &d, &base);
        assert!(
            x.summary.contains("slow with 3 of 3 partners: up to"),
            "{}",
            x.summary
        );
        assert!(
            x.evidence
                .iter()
                .any(|e| e == "its netdev_mtu is 1200, most endpoints 1500"),
            "{:?}",
            x.evidence
        );
        assert!(x.fix.contains("tc qdisc show dev e2"), "{}", x.fix);
    }

    #[test]
    fn everyone_bad_is_fabric_wide() {
        let t = Thresholds {
            expect_usec: Some(10.0),
            ..Thresholds::default()
        };
        let pairs = fabric(4, &[], 0.0);
        let (_, v) = verdicts_of(&pairs, &t);
        let s = suspects(4, &v);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].kind, SuspectKind::Fabric);
    }
}
