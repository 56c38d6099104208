//! The measured figures of `pingpong` (TCP exchange and `--cm`) and their JSON shape: one
//! [`OpResult`] per operation, under `ops` in the order the operations ran.

use std::time::Duration;

use serde::Serialize;

/// Measured figures of one operation, as printed and as JSON. Throughput and usec/iter
/// use ibv_rc_pingpong's arithmetic.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OpResult {
    pub iters: u32,
    pub bytes: u64,
    // JSON rounds the figures: seconds to µs, the rest to 3 decimals.
    #[serde(serialize_with = "crate::output::ser_6dp")]
    pub seconds: f64,
    #[serde(serialize_with = "crate::output::ser_3dp")]
    pub mbit_per_sec: f64,
    #[serde(serialize_with = "crate::output::ser_3dp")]
    pub usec_per_iter: f64,
    pub latency_usec: Latency,
    /// What was checked after the transfer, if anything.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verified: Option<String>,
}

/// Per-iteration latency in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Latency {
    #[serde(serialize_with = "crate::output::ser_3dp")]
    pub min: f64,
    #[serde(serialize_with = "crate::output::ser_3dp")]
    pub median: f64,
    #[serde(serialize_with = "crate::output::ser_3dp")]
    pub p99: f64,
}

/// min / median (the upper one for an even count) / p99 (nearest rank) of per-iteration
/// durations in nanoseconds. Sorts in place.
pub fn latency_of(samples_ns: &mut [u64]) -> Latency {
    if samples_ns.is_empty() {
        return Latency {
            min: 0.0,
            median: 0.0,
            p99: 0.0,
        };
    }
    samples_ns.sort_unstable();
    let n = samples_ns.len();
    let us = |ns: u64| ns as f64 / 1000.0;
    let p99_rank = (n * 99).div_ceil(100).max(1) - 1;
    Latency {
        min: us(samples_ns[0]),
        median: us(samples_ns[n / 2]),
        p99: us(samples_ns[p99_rank]),
    }
}

/// The figures of `iters` iterations that moved `bytes` in `elapsed`.
pub fn op_result(iters: u32, bytes: u64, elapsed: Duration, samples_ns: &mut [u64]) -> OpResult {
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
        usec_per_iter: if iters > 0 {
            usec / f64::from(iters)
        } else {
            0.0
        },
        latency_usec: latency_of(samples_ns),
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

/// ibv_rc_pingpong's two lines per operation (bytes and Mbit/sec, iters and usec/iter),
/// with the latency percentiles and what was verified; both exchanges print this.
pub fn render_ops(ops: &OpResults) -> String {
    let mut out = String::new();
    for (name, o) in ops.iter() {
        out.push_str(&format!(
            "{name:<5} {} bytes in {:.2} seconds = {:.2} Mbit/sec\n",
            o.bytes, o.seconds, o.mbit_per_sec
        ));
        out.push_str(&format!(
            "{name:<5} {} iters in {:.2} seconds = {:.2} usec/iter; latency usec min {:.2}, median {:.2}, p99 {:.2}\n",
            o.iters, o.seconds, o.usec_per_iter, o.latency_usec.min, o.latency_usec.median, o.latency_usec.p99
        ));
        if let Some(v) = &o.verified {
            out.push_str(&format!("{name:<5} verified: {v}\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_percentiles() {
        type Row<'a> = (&'a [u64], (f64, f64, f64));
        let cases: &[Row] = &[
            (&[], (0.0, 0.0, 0.0)),
            (&[5000], (5.0, 5.0, 5.0)),
            (&[3000, 1000, 2000], (1.0, 2.0, 3.0)),
            // An even count takes the upper median.
            (&[4000, 1000, 3000, 2000], (1.0, 3.0, 4.0)),
        ];
        for (input, want) in cases {
            let l = latency_of(&mut input.to_vec());
            assert_eq!((l.min, l.median, l.p99), *want, "{input:?}");
        }
        let mut v: Vec<u64> = (1..=100).map(|i| i * 1000).collect();
        let l = latency_of(&mut v);
        assert_eq!((l.min, l.median, l.p99), (1.0, 51.0, 99.0));
        // Unsorted input, an odd count: the middle one.
        let mut v = vec![9000, 1000, 5000];
        let l = latency_of(&mut v);
        assert_eq!((l.min, l.median, l.p99), (1.0, 5.0, 9.0));
        let mut one = vec![5000];
        let l = latency_of(&mut one);
        assert_eq!((l.min, l.median, l.p99), (5.0, 5.0, 5.0));
        let l = latency_of(&mut []);
        assert_eq!(l.p99, 0.0);
    }

    #[test]
    fn results_use_rc_pingpong_arithmetic() {
        // 8192000 bytes in 1 s = 65.536 Mbit/s; 1000 iters = 1000 usec/iter.
        let r = op_result(1000, 8_192_000, Duration::from_secs(1), &mut [1000, 2000]);
        assert!((r.mbit_per_sec - 65.536).abs() < 1e-9);
        assert!((r.usec_per_iter - 1000.0).abs() < 1e-9);
        let json = serde_json::to_value(&r).unwrap();
        for key in ["iters", "bytes", "seconds", "mbit_per_sec", "usec_per_iter"] {
            assert!(json.get(key).is_some(), "{key}");
        }
        assert!(json["latency_usec"].get("p99").is_some());
        assert!(json.get("verified").is_none());
        assert_eq!(ns_per_tick(100, 300, Duration::from_nanos(1000)), 5.0);
        assert_eq!(ns_per_tick(300, 300, Duration::from_nanos(1000)), 0.0);
        // JSON figures are rounded: 3 decimals, seconds to the microsecond.
        let odd = op_result(
            3,
            4096,
            Duration::from_nanos(3_066_150_123),
            &mut [1_022_050],
        );
        let json = serde_json::to_string(&odd).unwrap();
        assert!(json.contains(r#""seconds":3.06615,"#), "{json}");
        assert!(json.contains(r#""usec_per_iter":1022050.041,"#), "{json}");
        assert!(json.contains(r#""min":1022.05,"#), "{json}");
        let zero = op_result(0, 0, Duration::ZERO, &mut []);
        assert_eq!((zero.mbit_per_sec, zero.usec_per_iter), (0.0, 0.0));
    }

    #[test]
    fn ops_keep_run_order_and_single_repeats_the_only_one() {
        let r = op_result(1, 1, Duration::from_secs(1), &mut [1]);
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
