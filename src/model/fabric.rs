//! `rdmactl fabric`'s vocabulary: where a rank sits in the run, what it publishes about
//! its endpoint, what one pair test found, and what rank 0 reports.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub mod child;

use crate::model::diagnostic::{Code, Diagnostic, Seen, Severity, Source, Subject};
use child::{ChildCounters, ChildFailure, Verbatim};

/// The launcher that placed this process, as far as its environment tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Launcher {
    Slurm,
    /// Open MPI's mpirun (`OMPI_COMM_WORLD_*`).
    OpenMpi,
    /// MPICH/Hydra and Intel MPI (`PMI_RANK`, `MPI_LOCALRANKID`).
    Pmi,
    Pmix,
    /// `--rank`/`--size` given on the command line (pdsh, ssh, Kubernetes).
    Explicit,
}

impl Launcher {
    pub fn name(self) -> &'static str {
        match self {
            Launcher::Slurm => "Slurm",
            Launcher::OpenMpi => "Open MPI",
            Launcher::Pmi => "PMI",
            Launcher::Pmix => "PMIx",
            Launcher::Explicit => "--rank/--size",
        }
    }
}

/// This process's place in the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    pub rank: u32,
    pub size: u32,
    /// The n-th process on this host takes the n-th active port (or the n-th `-d`).
    pub local_rank: u32,
    pub launcher: Launcher,
    /// The launcher's job id, from which the run token is derived when none is given.
    pub job_id: Option<String>,
}

/// What the command line says, which wins over the environment.
#[derive(Debug, Clone, Default)]
pub struct Given {
    pub rank: Option<u32>,
    pub size: Option<u32>,
    pub local_rank: Option<u32>,
}

/// Which pairs are tested.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// Every pair, in N-1 rounds.
    All,
    /// Only endpoints with the same local rank (rail-optimized fabrics).
    Rails,
    /// K random partners per endpoint (seeded by the run token, so every run with the same
    /// token tests the same pairs).
    Random(u32),
}

impl Pattern {
    pub fn parse(s: &str) -> Result<Pattern, String> {
        match s {
            "all" => Ok(Pattern::All),
            "rails" => Ok(Pattern::Rails),
            _ => match s.strip_prefix("random:").map(str::parse::<u32>) {
                Some(Ok(k)) if k > 0 => Ok(Pattern::Random(k)),
                _ => Err(format!(
                    "'{s}' is not a pattern: all, rails or random:K (K ≥ 1)"
                )),
            },
        }
    }

    pub fn name(&self) -> String {
        match self {
            Pattern::All => "all".into(),
            Pattern::Rails => "rails".into(),
            Pattern::Random(k) => format!("random:{k}"),
        }
    }
}

/// What a rank publishes about itself and its endpoint before any traffic; rank 0 compares
/// them (drift) and tells partners where to connect. `F` is how the host's ARP flux is
/// held: the groups as published, or the sentence that says so in the report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RankInfo<F = Vec<ArpFluxGroup>> {
    pub rank: u32,
    pub local_rank: u32,
    pub host: String,
    /// Empty when the rank found no port to test (then `problem` says why).
    pub device: String,
    pub port: u32,
    pub link_layer: Option<String>,
    pub state: Option<String>,
    /// The index `-g auto` picks on this port with no peer known, its type and address.
    pub gid_index: Option<u32>,
    pub gid: Option<String>,
    pub gid_type: Option<String>,
    /// Populated GID slots.
    pub gids: u32,
    /// RoCE MTU (ibv_query_port's active_mtu) and the netdev's MTU.
    pub active_mtu: Option<u32>,
    pub netdev: Option<String>,
    pub netdev_mtu: Option<u32>,
    /// `rate` as sysfs says it: `100 Gb/sec (4X EDR)`.
    pub rate: Option<String>,
    pub firmware: Option<String>,
    pub kernel: Option<String>,
    pub version: String,
    /// RLIMIT_MEMLOCK soft limit: `unlimited` or bytes.
    pub memlock: Option<String>,
    /// Where this rank's pair servers listen: an address partners can reach.
    pub tcp_host: String,
    pub pair_port: u16,
    /// Host-level: the RDMA netdevs of this host that share a subnet and answer ARP for each
    /// other's addresses (`arp_ignore` 0).
    pub arp_flux: F,
    /// Why this rank cannot take part (no active port, device cannot be opened).
    pub problem: Option<String>,
}

/// A rank as the report shows it: the ARP flux in words.
pub type ReportedRank = RankInfo<Option<String>>;

pub use crate::model::facts::ArpFluxGroup;

impl RankInfo {
    /// The rank as the report shows it, with its ARP flux in words.
    pub fn reported(self, arp_flux: Option<String>) -> ReportedRank {
        RankInfo {
            rank: self.rank,
            local_rank: self.local_rank,
            host: self.host,
            device: self.device,
            port: self.port,
            link_layer: self.link_layer,
            state: self.state,
            gid_index: self.gid_index,
            gid: self.gid,
            gid_type: self.gid_type,
            gids: self.gids,
            active_mtu: self.active_mtu,
            netdev: self.netdev,
            netdev_mtu: self.netdev_mtu,
            rate: self.rate,
            firmware: self.firmware,
            kernel: self.kernel,
            version: self.version,
            memlock: self.memlock,
            tcp_host: self.tcp_host,
            pair_port: self.pair_port,
            arp_flux,
            problem: self.problem,
        }
    }
}

impl<F> RankInfo<F> {
    /// `host/device:port` as reports name an endpoint.
    pub fn label(&self) -> String {
        if self.device.is_empty() {
            format!("{} (rank {})", self.host, self.rank)
        } else {
            format!("{} {}/{}", self.host, self.device, self.port)
        }
    }
}

/// One end's view of a pair test: the figures and the failure of the `pingpong` it ran
/// (its JSON, with the same explanation and counters), or why there is no such view.
/// Absent figures are left out of its JSON (a missing key reads as null): the wire and
/// rank 0's spool carry millions of these.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PairEnd {
    pub ok: bool,
    /// SEND ping-pong: µs per round trip iteration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usec_per_iter: Option<f64>,
    /// RDMA WRITE, windowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mbit_per_sec: Option<f64>,
    /// The path MTU the pair ran at (the smaller active MTU of the two ports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_mtu: Option<u32>,
    /// `pingpong -j`'s `failure` object, unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<Verbatim<ChildFailure>>,
    /// `pingpong -j`'s `counters` object, unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<Verbatim<ChildCounters>>,
    /// Packets resent per thousand sent, from both ends' counters (the ratio of
    /// `counters-retransmission`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resends_per_mille: Option<f64>,
    /// What went wrong around the test itself: killed at the deadline, no JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    pub seconds: f64,
}

impl PairEnd {
    pub fn problem(text: impl Into<String>, seconds: f64) -> PairEnd {
        PairEnd {
            problem: Some(text.into()),
            seconds,
            ..PairEnd::default()
        }
    }
}

// ---------------------------------------------------------------------------------------
// What the rules find and rank 0 reports

/// One attribute on which the endpoints differ, or a host-level problem every rank reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Drift {
    pub attribute: &'static str,
    /// The value most endpoints have; None when no value has a majority (or for a problem).
    pub majority: Option<String>,
    pub values: Vec<DriftValue>,
    pub why_it_matters: &'static str,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DriftValue {
    pub value: String,
    pub ranks: Vec<u32>,
    pub hosts: Vec<String>,
}

/// When a pair is bad. Latency above `latency_factor` × the baseline, bandwidth below
/// `bandwidth_fraction` × the baseline, retransmissions above `resends_per_mille`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Thresholds {
    pub latency_factor: f64,
    pub bandwidth_fraction: f64,
    pub resends_per_mille: f64,
    /// Absolute baselines (`--expect-usec`, `--expect-mbit`): with two endpoints there is
    /// no other.
    pub expect_usec: Option<f64>,
    pub expect_mbit: Option<f64>,
}

impl Default for Thresholds {
    fn default() -> Thresholds {
        Thresholds {
            latency_factor: 2.0,
            bandwidth_fraction: 0.8,
            resends_per_mille: 10.0,
            expect_usec: None,
            expect_mbit: None,
        }
    }
}

/// The baseline a pair is compared with, and how it was found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PerfBaseline {
    pub usec_per_iter: Option<f64>,
    pub mbit_per_sec: Option<f64>,
    /// Said with the verdict: which baseline, over how many endpoints.
    pub how: String,
    /// After retests: the worst run of the pairs the baseline stands on (their highest
    /// latency, their lowest bandwidth). A pair whose best run reaches that far is within
    /// this host's own noise, and three runs do not decide it.
    pub usec_worst_run: Option<f64>,
    pub mbit_worst_run: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PairState {
    Ok,
    /// Bandwidth below the threshold.
    LowBandwidth,
    Slow,
    /// Counters show retransmissions above the threshold.
    Lossy,
    Failed,
    /// A rank was missing or gone: nothing to judge.
    NotRun,
}

impl PairState {
    pub fn is_bad(self) -> bool {
        !matches!(self, PairState::Ok)
    }

    pub fn label(self) -> &'static str {
        match self {
            PairState::Ok => "ok",
            PairState::LowBandwidth => "low bandwidth",
            PairState::Slow => "slow",
            PairState::Lossy => "lossy",
            PairState::Failed => "failed",
            PairState::NotRun => "not run",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairVerdict {
    pub a: u32,
    pub b: u32,
    /// The worst thing found; `why` says every one.
    pub state: PairState,
    pub why: Vec<String>,
    /// usec_per_iter / baseline, and mbit_per_sec / baseline (of the runs' medians, for a
    /// retested pair).
    pub latency_ratio: Option<f64>,
    pub bandwidth_ratio: Option<f64>,
    /// A retested pair's runs; None for a pair that ran once.
    pub runs: Option<RunSpread>,
}

impl PairVerdict {
    /// (runs that ran, of them bad): a pair that ran once counts as one run.
    pub fn run_count(&self) -> (u32, u32) {
        match &self.runs {
            Some(r) => (r.runs, r.bad_runs),
            None if self.state == PairState::NotRun => (0, 0),
            None => (1, u32::from(self.state.is_bad())),
        }
    }
}

/// A pair bad the first time is run again (`RETESTS` times): each run judged on its own, and
/// the pair on what most of them found, so one slow spell of a shared host is not a suspect.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSpread {
    /// Runs that ran (the first and the retests), and how many of them were bad.
    pub runs: u32,
    pub bad_runs: u32,
    pub usec_per_iter: Option<Spread>,
    pub mbit_per_sec: Option<Spread>,
}

/// The lowest, median and highest of one figure over a pair's runs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    pub min: f64,
    pub median: f64,
    pub max: f64,
}

impl Spread {
    /// None for no values; the median of an even count is the mean of the middle two.
    pub fn of(values: &[f64]) -> Option<Spread> {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Some(Spread {
            min: v[0],
            median,
            max: v[n - 1],
        })
    }
}

/// How a rank that joined stopped taking part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Departure {
    /// Its control connection ended: the process died or its host went away.
    Left,
    /// Its control connection stayed open but it sent nothing for a whole deadline: the
    /// process is alive and stopped (SIGSTOP, a debugger) or stuck.
    Hung,
}

/// A rank that stopped taking part, and the sentence that says when and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoneRank {
    pub how: Departure,
    pub why: String,
}

impl GoneRank {
    /// `left` or `hung`, as a rank row's status says it.
    pub fn status(&self) -> &'static str {
        match self.how {
            Departure::Left => "left",
            Departure::Hung => "hung",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SuspectKind {
    /// A rank that never joined, left during the run, or had no port to test.
    Rank,
    /// One endpoint bad with most of its partners.
    Endpoint,
    /// One pair bad between two otherwise good endpoints: the link or path between them.
    Link,
    /// Two endpoints only: the fault is between them, on either side.
    Pair,
    /// Every endpoint bad with most partners: nothing singles one out.
    Fabric,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Suspect {
    pub kind: SuspectKind,
    pub code: Code,
    pub rank: Option<u32>,
    /// The other end, for a link or pair.
    pub peer_rank: Option<u32>,
    pub reason: String,
    /// The pairs behind the verdict, as (a, b).
    pub pairs: Vec<(u32, u32)>,
    /// Over those pairs' runs (first runs and retests): how many ran, and how many were bad;
    /// how sure the verdict is (0 and 0 for a rank that never joined or left).
    pub runs: u32,
    pub bad_runs: u32,
}

/// Why a suspect is one, in the why/seen/fix shape of every other explanation: the pair
/// tests' own explanations where they failed, the counters where they were lossy, the
/// drift and the figures where they were slow.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SuspectExplanation {
    pub summary: String,
    pub evidence: Vec<String>,
    pub fix: String,
}

/// What rank 0 prints, as `-j` shows it.
#[derive(Debug, Serialize)]
pub struct FabricReport {
    pub run: RunFacts,
    pub ranks: Vec<RankRow>,
    pub drift: Vec<Drift>,
    pub baseline: PerfBaseline,
    /// Every pair up to `PAIRS_LISTED`; above, the bad ones (the CSV has them all).
    pub pairs: Vec<PairRow>,
    pub suspects: Vec<SuspectRow>,
    pub verdict: String,
    pub ok: bool,
    /// Every pair counted, listed or not.
    #[serde(skip)]
    pub tally: PairTally,
}

/// Up to this many pairs (256 ranks make 32,640) the report lists every one; above, only
/// the bad ones, and at most this many of them: 4096 ranks make 8.4 M pairs, which no
/// terminal, JSON reader or rank 0's memory should hold. The CSV lists every pair.
pub const PAIRS_LISTED: u64 = 40_000;

/// What the pairs came to, counted as each was judged: the text report's figures and its
/// per-endpoint summary do not need the pairs themselves.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PairTally {
    pub total: u64,
    /// Ran and not ok.
    pub bad: u64,
    pub not_run: u64,
    pub retested: u64,
    /// Per rank: the pairs it was in, and those not ok by state.
    pub per_rank: BTreeMap<u32, RankTally>,
    /// `pairs` lists every pair (else only bad ones, up to `PAIRS_LISTED`).
    pub listed_all: bool,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct RankTally {
    pub pairs: u32,
    pub not_ok: BTreeMap<PairState, u32>,
}

impl PairTally {
    pub fn add(&mut self, a: u32, b: u32, state: PairState, retested: bool) {
        self.total += 1;
        match state {
            PairState::Ok => {}
            PairState::NotRun => self.not_run += 1,
            _ => self.bad += 1,
        }
        if retested {
            self.retested += 1;
        }
        for r in [a, b] {
            let t = self.per_rank.entry(r).or_default();
            t.pairs += 1;
            if state != PairState::Ok {
                *t.not_ok.entry(state).or_default() += 1;
            }
        }
    }

    /// The tally of rows that are every pair.
    #[cfg(test)]
    pub fn of_rows(rows: &[PairRow]) -> PairTally {
        let mut t = PairTally {
            listed_all: true,
            ..PairTally::default()
        };
        for p in rows {
            t.add(p.a, p.b, p.state, p.retested);
        }
        t
    }
}

/// Which pairs ran (a result to judge, good or bad), one bit per pair of ranks: 2 MiB at
/// 4096 ranks, where the pairs themselves would be gigabytes. Attribution asks it how many
/// partners an endpoint was tested with, and whether it was tested with a given one.
#[derive(Debug, Clone, Default)]
pub struct RanPairs {
    size: u32,
    bits: Vec<u64>,
    tested: BTreeMap<u32, u32>,
}

impl RanPairs {
    pub fn new(size: u32) -> RanPairs {
        let n = u64::from(size) * u64::from(size);
        RanPairs {
            size,
            bits: vec![0; n.div_ceil(64) as usize],
            tested: BTreeMap::new(),
        }
    }

    fn index(&self, a: u32, b: u32) -> Option<usize> {
        let (a, b) = (a.min(b), a.max(b));
        (b < self.size).then(|| (u64::from(a) * u64::from(self.size) + u64::from(b)) as usize)
    }

    pub fn add(&mut self, a: u32, b: u32) {
        let Some(i) = self.index(a, b) else { return };
        if self.bits[i / 64] & (1 << (i % 64)) == 0 {
            self.bits[i / 64] |= 1 << (i % 64);
            for r in [a, b] {
                *self.tested.entry(r).or_default() += 1;
            }
        }
    }

    pub fn ran(&self, a: u32, b: u32) -> bool {
        self.index(a, b)
            .is_some_and(|i| self.bits[i / 64] & (1 << (i % 64)) != 0)
    }

    /// Partners each endpoint ran a pair with.
    pub fn tested(&self) -> &BTreeMap<u32, u32> {
        &self.tested
    }
}

#[derive(Debug, Serialize)]
pub struct RunFacts {
    pub launcher: &'static str,
    /// Whether a token kept other runs out (`none` when no job id or --token was there).
    pub token: &'static str,
    pub size: u32,
    pub joined: u32,
    pub pattern: String,
    pub rounds: u32,
    pub retest_rounds: u32,
    pub message_size: u32,
    pub iters: u32,
    pub deadline: f64,
    pub thresholds: Thresholds,
    /// Rounded to milliseconds.
    pub seconds: f64,
    /// SIGINT (2) or SIGTERM (15) stopped the run, on `signal_rank`; else null.
    pub signal: Option<i32>,
    pub signal_rank: Option<u32>,
    /// Every pair tested, and which of them `pairs` lists: `all`, or `bad` above
    /// `PAIRS_LISTED` pairs.
    pub pairs_total: u64,
    pub pairs_listed: &'static str,
}

#[derive(Debug, Serialize)]
pub struct RankRow {
    #[serde(flatten)]
    pub info: ReportedRank,
    /// `joined`, `missing` (never joined), `left` (its connection ended mid-run) or `hung`
    /// (its connection open, silent for a deadline).
    pub status: &'static str,
}

#[derive(Debug, Serialize)]
pub struct PairRow {
    pub a: u32,
    pub b: u32,
    pub round: u32,
    pub ok: bool,
    pub state: PairState,
    pub why: Vec<String>,
    pub usec_per_iter: Option<f64>,
    pub mbit_per_sec: Option<f64>,
    pub path_mtu: Option<u32>,
    pub latency_ratio: Option<f64>,
    pub bandwidth_ratio: Option<f64>,
    pub resends_per_mille: Option<f64>,
    /// Bad the first time, so run again; `first_state` is what the first run found, `runs`
    /// every run's spread (the figures above are the runs' medians).
    pub retested: bool,
    pub first_state: Option<PairState>,
    pub runs: Option<RunSpread>,
    /// pingpong's failure object (why/seen/fix under `explanation`) and counters (with
    /// `resends_per_mille` added).
    pub failure: Option<Verbatim<ChildFailure>>,
    pub counters: Option<serde_json::Value>,
    /// Why there is no pingpong report (a deadline, a gone rank).
    pub problem: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct SuspectRow {
    pub kind: SuspectKind,
    pub code: Code,
    pub rank: Option<u32>,
    pub host: Option<String>,
    pub device: Option<String>,
    pub peer_rank: Option<u32>,
    pub peer_host: Option<String>,
    pub peer_device: Option<String>,
    pub reason: String,
    pub pairs: Vec<(u32, u32)>,
    /// How sure: of the runs of `pairs` (first runs and retests), how many were bad.
    pub runs: u32,
    pub bad_runs: u32,
    pub explanation: SuspectExplanation,
}

impl SuspectRow {
    /// The suspect as every other diagnosis is: `fail`, about its rank, its explanation's
    /// why/seen/fix. What the pair tests saw is evidence relayed from their reports.
    pub fn diagnostic(&self) -> Diagnostic {
        let mut d = Diagnostic::new(Severity::Fail, self.code.clone(), &self.explanation.summary)
            .fix(&self.explanation.fix);
        if let Some(rank) = self.rank {
            d = d.about(Subject::Rank(rank));
        }
        self.explanation
            .evidence
            .iter()
            .fold(d, |d, e| d.seen(Seen::new(Source::Gathered, e.clone())))
    }

    pub fn kind_word(&self) -> &'static str {
        match self.kind {
            SuspectKind::Link => "the link between them",
            SuspectKind::Pair => "one of the two, or the link",
            _ => "",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ran_pairs_count_each_pair_once_either_way_round() {
        let mut r = RanPairs::new(4096);
        r.add(4095, 7);
        r.add(7, 4095);
        r.add(0, 1);
        r.add(1, 4096); // past the run's size: not a pair of it
        assert!(r.ran(7, 4095) && r.ran(4095, 7) && r.ran(1, 0));
        assert!(!r.ran(0, 2) && !r.ran(1, 4096));
        assert_eq!(r.tested().get(&7), Some(&1));
        assert_eq!(r.tested().get(&1), Some(&1));
        assert_eq!(r.tested().len(), 4);
        // A bit per pair of ranks: 2 MiB at 4096, not the pairs themselves.
        assert_eq!(r.bits.len() * 8, 4096 * 4096 / 8);
        let mut t = PairTally::default();
        t.add(0, 1, PairState::Slow, true);
        t.add(0, 2, PairState::NotRun, false);
        t.add(1, 2, PairState::Ok, false);
        assert_eq!((t.total, t.bad, t.not_run, t.retested), (3, 1, 1, 1));
        assert_eq!(t.per_rank[&0].pairs, 2);
        assert_eq!(t.per_rank[&0].not_ok.len(), 2);
        assert!(t.per_rank[&1].not_ok.contains_key(&PairState::Slow));
        assert!(t.per_rank[&2].not_ok.contains_key(&PairState::NotRun));
    }

    #[test]
    fn patterns_parse() {
        assert_eq!(Pattern::parse("all"), Ok(Pattern::All));
        assert_eq!(Pattern::parse("rails"), Ok(Pattern::Rails));
        assert_eq!(Pattern::parse("random:3"), Ok(Pattern::Random(3)));
        assert!(Pattern::parse("random:0").is_err());
        assert!(Pattern::parse("ring").is_err());
        assert_eq!(Pattern::Random(3).name(), "random:3");
    }
}
