//! The measured figures of `pingpong` (TCP exchange and `--cm`) and their JSON shape: one
//! [`OpResult`] per operation, under `ops` in the order the operations ran.
//!
//! `selftest`'s step lines and the `--cm` selftest's report are here too.
//!
//! Latency goes into a fixed-size histogram ([`LatencyRecorder`]), never one sample per
//! iteration, so a run of any length or duration uses the same memory.

use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::model::diagnostic::FailureReport;

/// Measured figures of one operation, as printed and as JSON. Throughput and usec/iter
/// use ibv_rc_pingpong's arithmetic.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OpResult {
    pub iters: u64,
    pub bytes: u64,
    // JSON rounds the figures: seconds to µs, the rest to 3 decimals.
    #[serde(serialize_with = "crate::model::rounding::ser_6dp")]
    pub seconds: f64,
    #[serde(serialize_with = "crate::model::rounding::ser_3dp")]
    pub mbit_per_sec: f64,
    #[serde(serialize_with = "crate::model::rounding::ser_3dp")]
    pub usec_per_iter: f64,
    /// Operations completed per second.
    #[serde(serialize_with = "crate::model::rounding::ser_3dp")]
    pub msgs_per_sec: f64,
    /// Work requests kept in flight: 1 when each was measured on its own.
    pub window: u32,
    /// Only for operations measured one at a time: with a window in flight the time from
    /// post to completion is mostly queueing, not latency.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_usec: Option<Latency>,
    /// What was checked after the transfer, if anything.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verified: Option<String>,
}

/// Per-iteration latency in microseconds (the histogram keeps 3 significant digits).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Latency {
    #[serde(serialize_with = "crate::model::rounding::ser_3dp")]
    pub min: f64,
    #[serde(serialize_with = "crate::model::rounding::ser_3dp")]
    pub p50: f64,
    #[serde(serialize_with = "crate::model::rounding::ser_3dp")]
    pub p90: f64,
    #[serde(serialize_with = "crate::model::rounding::ser_3dp")]
    pub p99: f64,
    #[serde(serialize_with = "crate::model::rounding::ser_3dp")]
    pub p99_9: f64,
    #[serde(serialize_with = "crate::model::rounding::ser_3dp")]
    pub max: f64,
}

/// Samples in clock ticks (see `verbs::qp::ticks`), kept in a histogram of fixed size: its
/// memory does not depend on how many samples it holds. Ticks are turned into time only
/// when read, with the tick length measured over the whole loop.
pub struct LatencyRecorder {
    histogram: Histogram<u64>,
}

/// 2^40 ticks: minutes at any TSC rate; a longer sample is counted as this long.
const MAX_TICKS: u64 = 1 << 40;

impl Default for LatencyRecorder {
    fn default() -> Self {
        LatencyRecorder::new()
    }
}

impl LatencyRecorder {
    pub fn new() -> LatencyRecorder {
        LatencyRecorder {
            // 3 significant digits over 1..2^40: about 250 KiB, allocated once, here.
            histogram: Histogram::new_with_bounds(1, MAX_TICKS, 3)
                .expect("constant histogram bounds are valid"),
        }
    }

    #[inline]
    pub fn record(&mut self, ticks: u64) {
        self.histogram.saturating_record(ticks.clamp(1, MAX_TICKS));
    }

    #[cfg(test)]
    pub fn count(&self) -> u64 {
        self.histogram.len()
    }

    pub fn reset(&mut self) {
        self.histogram.reset();
    }

    /// The percentiles in µs, `ns_per_tick` converting; None without samples.
    pub fn latency(&self, ns_per_tick: f64) -> Option<Latency> {
        if self.histogram.is_empty() {
            return None;
        }
        let h = &self.histogram;
        let us = |ticks: u64| ticks as f64 * ns_per_tick / 1000.0;
        let at = |q: f64| us(h.value_at_quantile(q));
        Some(Latency {
            min: us(h.min()),
            p50: at(0.5),
            p90: at(0.9),
            p99: at(0.99),
            p99_9: at(0.999),
            max: us(h.max()),
        })
    }
}

/// The figures of `iters` operations that moved `bytes` in `elapsed`, `window` of them in
/// flight at once. `latency` is given only when `window` is 1.
pub fn op_result(
    iters: u64,
    bytes: u64,
    elapsed: Duration,
    window: u32,
    latency: Option<Latency>,
) -> OpResult {
    let usec = elapsed.as_secs_f64() * 1e6;
    OpResult {
        iters,
        bytes,
        seconds: elapsed.as_secs_f64(),
        mbit_per_sec: if usec > 0.0 {
            bytes as f64 * 8.0 / usec
        } else {
            0.0
        },
        usec_per_iter: if iters > 0 { usec / iters as f64 } else { 0.0 },
        msgs_per_sec: if usec > 0.0 {
            iters as f64 * 1e6 / usec
        } else {
            0.0
        },
        window,
        latency_usec: if window == 1 { latency } else { None },
        verified: None,
    }
}

/// Tick length (see `verbs::qp::ticks`) in nanoseconds, calibrated against the monotonic
/// clock over one measured loop.
pub fn ns_per_tick(start_tick: u64, end_tick: u64, elapsed: Duration) -> f64 {
    match end_tick.saturating_sub(start_tick) {
        0 => 0.0,
        ticks => elapsed.as_nanos() as f64 / ticks as f64,
    }
}

/// Per operation, in the order they run (a map would sort them).
#[derive(Debug, Default, Clone, Serialize)]
pub struct OpResults {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub send: Option<OpResult>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write: Option<OpResult>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read: Option<OpResult>,
}

impl OpResults {
    /// `name` is "send", "write" or "read".
    pub fn insert(&mut self, name: &str, result: OpResult) {
        match name {
            "send" => self.send = Some(result),
            "write" => self.write = Some(result),
            _ => self.read = Some(result),
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = (&'static str, &OpResult)> {
        [
            ("send", &self.send),
            ("write", &self.write),
            ("read", &self.read),
        ]
        .into_iter()
        .filter_map(|(n, r)| r.as_ref().map(|r| (n, r)))
    }

    /// With a single operation, its figures (a report repeats them at the top level).
    pub fn single(&self) -> Option<OpResult> {
        let mut ops = self.iter();
        match (ops.next(), ops.next()) {
            (Some((_, r)), None) => Some(r.clone()),
            _ => None,
        }
    }
}

/// The QoS one end of a run used: service level, GRH traffic class, P_Key index.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Qos {
    pub sl: u8,
    pub tclass: u8,
    pub pkey_index: u16,
}

/// The counters part of a pingpong or selftest report: what moved on each end's port
/// over the run, and what the counter rules make of it.
#[derive(Debug, Serialize)]
pub struct RunCounters {
    /// `port`: the counters are per port, so other traffic on the port counts too and the
    /// changes are an upper bound for this run.
    pub scope: &'static str,
    pub local: Option<crate::model::counter::WireDelta>,
    pub peer: Option<crate::model::counter::WireDelta>,
    /// Both ends ran on this one port (a same-host run without -d on either end): `local`
    /// holds the whole run's packets once, and the peer's copy of them is left out.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub shared_port: bool,
    /// Packets resent per thousand sent over the ends read (docs/failures.md,
    /// `counters-retransmission`); None when no packet was counted as sent.
    #[serde(serialize_with = "crate::model::rounding::ser_opt_3dp")]
    pub resent_per_mille: Option<f64>,
    /// What ran, kept to judge again when the peer's counters arrive with its notice.
    #[serde(skip)]
    pub mix: crate::model::counter::TrafficMix,
    #[serde(serialize_with = "crate::model::diagnostic::json::findings")]
    pub findings: Vec<crate::model::diagnostic::Diagnostic>,
}

/// One step of `selftest`, on either exchange: ok or FAIL, how long it took, and a failure
/// explained; with `--cm`, the side (server or client) that ran it.
#[derive(Debug, Clone, Serialize)]
pub struct StepLine {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub side: Option<&'static str>,
    pub step: String,
    pub ok: bool,
    /// Rounded to nanoseconds in JSON.
    #[serde(serialize_with = "crate::model::rounding::ser_3dp")]
    pub elapsed_us: f64,
    pub detail: String,
    pub failure: Option<FailureReport>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recorded(samples: impl IntoIterator<Item = u64>) -> LatencyRecorder {
        let mut r = LatencyRecorder::new();
        for s in samples {
            r.record(s);
        }
        r
    }

    /// Within the histogram's 3 significant digits of the exact figure.
    fn close(got: f64, want: f64) -> bool {
        (got - want).abs() <= want * 1e-3 + 1e-9
    }

    #[test]
    fn latency_percentiles() {
        assert_eq!(LatencyRecorder::new().latency(1.0), None);
        // 1..=1000 µs at 1 ns per tick.
        let r = recorded((1..=1000).map(|i| i * 1000));
        assert_eq!(r.count(), 1000);
        let l = r.latency(1.0).unwrap();
        for (got, want) in [
            (l.min, 1.0),
            (l.p50, 500.0),
            (l.p90, 900.0),
            (l.p99, 990.0),
            (l.p99_9, 999.0),
            (l.max, 1000.0),
        ] {
            assert!(close(got, want), "{got} vs {want}: {l:?}");
        }
        // Ticks are scaled: 2 ticks per ns halves every figure.
        let half = r.latency(0.5).unwrap();
        assert!(close(half.max, 500.0), "{half:?}");
        // One slow outlier shows in max and p99.9 but leaves p50 alone.
        let r = recorded((0..999).map(|_| 2000).chain([5_000_000]));
        let l = r.latency(1.0).unwrap();
        assert!(close(l.p50, 2.0) && close(l.max, 5000.0), "{l:?}");
        // Zero and huge samples are clamped, never refused.
        let r = recorded([0, u64::MAX]);
        assert_eq!(r.count(), 2);
    }

    /// The whole point: a billion samples cost what ten do.
    #[test]
    fn memory_does_not_grow_with_samples() {
        let mut r = recorded([1000]);
        let before = r.histogram.distinct_values();
        for i in 0..1_000_000u64 {
            r.record(1000 + i % 7);
        }
        r.histogram.record_n(1000, 1_000_000_000).unwrap();
        assert_eq!(r.histogram.distinct_values(), before);
        assert_eq!(r.count(), 1_001_000_001);
        r.reset();
        assert_eq!(r.count(), 0);
    }

    #[test]
    fn results_use_rc_pingpong_arithmetic() {
        // 8192000 bytes in 1 s = 65.536 Mbit/s; 1000 iters = 1000 usec/iter, 1000 msg/s.
        let lat = recorded([1000, 2000]).latency(1.0);
        let r = op_result(1000, 8_192_000, Duration::from_secs(1), 1, lat);
        assert!((r.mbit_per_sec - 65.536).abs() < 1e-9);
        assert!((r.usec_per_iter - 1000.0).abs() < 1e-9);
        assert!((r.msgs_per_sec - 1000.0).abs() < 1e-9);
        let json = serde_json::to_value(&r).unwrap();
        for key in [
            "iters",
            "bytes",
            "seconds",
            "mbit_per_sec",
            "usec_per_iter",
            "msgs_per_sec",
            "window",
        ] {
            assert!(json.get(key).is_some(), "{key}");
        }
        assert!(json["latency_usec"].get("p99_9").is_some());
        assert!(json.get("verified").is_none());
        assert_eq!(ns_per_tick(100, 300, Duration::from_nanos(1000)), 5.0);
        assert_eq!(ns_per_tick(300, 300, Duration::from_nanos(1000)), 0.0);
        // JSON figures are rounded: 3 decimals, seconds to the microsecond.
        let odd = op_result(3, 4096, Duration::from_nanos(3_066_150_123), 1, None);
        let json = serde_json::to_string(&odd).unwrap();
        assert!(json.contains(r#""seconds":3.06615,"#), "{json}");
        assert!(json.contains(r#""usec_per_iter":1022050.041,"#), "{json}");
        let zero = op_result(0, 0, Duration::ZERO, 1, None);
        assert_eq!(
            (zero.mbit_per_sec, zero.usec_per_iter, zero.msgs_per_sec),
            (0.0, 0.0, 0.0)
        );
    }

    /// A window in flight measures queueing: no latency is reported.
    #[test]
    fn windowed_operations_report_no_latency() {
        let lat = recorded([4_000_000]).latency(1.0);
        let windowed = op_result(500, 500 * 4096, Duration::from_millis(90), 32, lat);
        assert_eq!(windowed.latency_usec, None);
        let json = serde_json::to_value(&windowed).unwrap();
        assert!(json.get("latency_usec").is_none(), "{json}");
        let one = op_result(500, 500 * 4096, Duration::from_millis(90), 1, lat);
        assert!(one.latency_usec.is_some());
    }

    #[test]
    fn ops_keep_run_order_and_single_repeats_the_only_one() {
        let r = op_result(1, 1, Duration::from_secs(1), 1, None);
        let mut ops = OpResults::default();
        ops.insert("read", r.clone());
        assert_eq!(ops.single(), Some(r.clone()));
        ops.insert("send", r.clone());
        assert_eq!(ops.single(), None);
        let names: Vec<&str> = ops.iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["send", "read"]);
        let json = serde_json::to_value(&ops).unwrap();
        let keys: Vec<&String> = json.as_object().unwrap().keys().collect();
        assert_eq!(keys.len(), 2);
    }
}
