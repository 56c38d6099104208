//! One end's view of a pair test from its `pingpong -j` child's report: the figures, the
//! failure and the counters, with the retransmissions counted.

use crate::model::counter::WireDelta;
use crate::model::fabric::child::ChildReport;
use crate::model::fabric::PairEnd;

use super::round3;

/// A pair end from `pingpong -j`'s report: its figures, failure and counters.
pub fn end_of_report(stdout: &[u8], stderr: &[u8], seconds: f64) -> PairEnd {
    let Ok(json) = serde_json::from_slice::<serde_json::Value>(stdout) else {
        let text = String::from_utf8_lossy(stderr);
        let last = text
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("no output");
        return PairEnd::problem(format!("pingpong gave no report: {last}"), seconds);
    };
    let report = ChildReport::read(&json);
    let finite = |v: Option<f64>| v.filter(|v| v.is_finite());
    // The counters rules' one ratio: resent packets per thousand sent, over both ends.
    let resends_per_mille = report.counters.as_ref().and_then(|c| {
        let local: &WireDelta = c.local.as_ref()?;
        crate::diagnose::counters::resent_per_mille(local, c.peer.as_ref()).map(round3)
    });
    PairEnd {
        ok: report.ok,
        usec_per_iter: finite(report.ops.send.as_ref().and_then(|o| o.usec_per_iter)),
        mbit_per_sec: finite(report.ops.write.as_ref().and_then(|o| o.mbit_per_sec)),
        path_mtu: report.path_mtu,
        failure: report.failure,
        counters: report.counters,
        resends_per_mille,
        problem: None,
        seconds: round3(seconds),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pingpong_report_becomes_a_pair_end() {
        let out = br#"{"ok": true, "ops": {"send": {"iters": 500, "usec_per_iter": 310.5, "mbit_per_sec": 105.0},
            "write": {"iters": 500, "usec_per_iter": 50.0, "mbit_per_sec": 880.25}},
            "counters": {"scope": "port", "local": {"device": "rxe0", "port": 1, "flavor": "rxe", "has_counters_dir": false, "seconds": 1.0,
               "counters": [{"name": "completer_retry_err", "source": "hw_counters", "at_least": 30, "exact": true},
                            {"name": "sent_pkts", "source": "hw_counters", "at_least": 1000, "exact": true}]},
               "peer": null, "findings": []}, "failure": null}"#;
        let end = end_of_report(out, b"", 1.5);
        assert!(end.ok);
        assert_eq!(end.usec_per_iter, Some(310.5));
        assert_eq!(end.mbit_per_sec, Some(880.25));
        assert!(end.failure.is_none());
        let _ = end.counters.as_ref().unwrap();
        // 30 resends over 1000 packets sent (this end alone: the peer sent none).
        assert_eq!(end.resends_per_mille, Some(30.0));
        let failed = end_of_report(
            br#"{"ok": false, "ops": {}, "failure": {"message": "IBV_WC_RETRY_EXC_ERR", "explanation": {"code": "retry-exceeded"}}}"#,
            b"",
            2.0,
        );
        let f = failed.failure.as_ref().unwrap();
        assert_eq!(f.message.as_deref(), Some("IBV_WC_RETRY_EXC_ERR"));
        assert_eq!(
            f.explanation.as_ref().unwrap().code.as_deref(),
            Some("retry-exceeded")
        );
        assert_eq!(failed.resends_per_mille, None);
        let failed = end_of_report(b"", b"rdmactl: no device 'rxe9'; devices: rxe0\n", 0.1);
        assert!(!failed.ok);
        assert_eq!(
            failed.problem.as_deref(),
            Some("pingpong gave no report: rdmactl: no device 'rxe9'; devices: rxe0")
        );
    }
}
