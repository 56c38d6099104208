//! `--simulate`: pair tests that answer at once with made-up figures, for control-plane
//! tests without RDMA.

use crate::model::fabric::{PairEnd, RankInfo};
use crate::wire::rendezvous::PairTest;

/// Made-up figures for control-plane tests: a pair "runs" at once.
pub fn simulated(me: &RankInfo, test: &PairTest) -> PairEnd {
    PairEnd {
        ok: true,
        usec_per_iter: Some(10.0 + f64::from(me.rank % 3)),
        mbit_per_sec: Some(f64::from(test.size) * 8.0 / 10.0),
        ..PairEnd::default()
    }
}
