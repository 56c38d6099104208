//! `rdmactl fabric`'s engine. Every rank runs the agent: it joins rank 0 and runs the pair
//! tests rank 0 asks for, each a `pingpong -j` child with a deadline. Rank 0 also runs the
//! leader: it takes the joins, runs the rounds, retests the bad pairs once, and has the
//! report printed before it tells the others to exit.

mod accept;
pub mod address;
pub mod agent;
mod child;
pub mod leader;
mod pair_end;
mod pair_port;
pub mod rank_info;
mod report;
mod round;
mod round_state;
mod simulate;
pub mod simulate_ranks;
mod spool;

use std::time::Duration;

/// How long one control message may take to send.
const SEND: Duration = Duration::from_secs(10);

/// Seconds as given on the command line, as a duration.
pub fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s.clamp(0.0, 1e6))
}

/// JSON figures to 3 decimals, as every other command rounds them.
fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}
