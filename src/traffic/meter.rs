//! When a measured loop of `pingpong` stops (after -n iterations or --duration), and its
//! progress lines. The clock is read once per stride of iterations, not per iteration (under
//! qemu a clock read is an emulated HPET access); the stride adapts to the rate so a check
//! happens about every 10 ms.

use std::time::{Duration, Instant};

use crate::gather::verbs::qp::ticks;
use crate::model::results::{ns_per_tick, op_result, LatencyRecorder, OpResult};

/// How often the clock is read, as a target.
const CHECK_EVERY: Duration = Duration::from_millis(10);

pub struct Meter {
    name: &'static str,
    limit: Option<u64>,
    deadline: Option<Instant>,
    progress: Option<Duration>,
    window: u32,
    start: Instant,
    start_tick: u64,
    /// The operation count at which the clock is next read.
    next_check: u64,
    last_check: (Instant, u64),
    next_print: Option<Instant>,
    last_print: (Instant, u64),
    total: LatencyRecorder,
    /// Since the last progress line.
    recent: LatencyRecorder,
    /// Operations done and bytes moved when the loop stopped early (a failure, a signal).
    reached: Option<(u64, u64)>,
}

impl Meter {
    /// A loop of `name` that ends after `limit` operations or at `duration`, whichever
    /// comes first (neither: it ends when its caller says), printing progress every
    /// `progress`. Starts the clock.
    pub fn start(
        name: &'static str,
        limit: Option<u64>,
        duration: Option<Duration>,
        progress: Option<Duration>,
        window: u32,
    ) -> Meter {
        // The histograms are allocated before the clock starts, so the run's time is the
        // traffic's alone.
        let total = LatencyRecorder::new();
        let recent = LatencyRecorder::new();
        let now = Instant::now();
        Meter {
            name,
            limit,
            deadline: duration.map(|d| now + d),
            progress,
            window,
            start: now,
            start_tick: ticks(),
            next_check: 1,
            last_check: (now, 0),
            next_print: progress.map(|p| now + p),
            last_print: (now, 0),
            total,
            recent,
            reached: None,
        }
    }

    /// The count the run stops at, if it has one.
    pub fn limit(&self) -> Option<u64> {
        self.limit
    }

    /// One operation's time in ticks (only operations measured one at a time).
    #[inline]
    pub fn record(&mut self, ticks: u64) {
        self.total.record(ticks);
        if self.progress.is_some() {
            self.recent.record(ticks);
        }
    }

    /// After `done` operations: has the run reached its count or its deadline? Prints a
    /// progress line when one is due.
    #[inline]
    pub fn done(&mut self, done: u64) -> bool {
        if self.limit.is_some_and(|l| done >= l) {
            return true;
        }
        // Without a deadline or progress lines the clock has nothing to tell.
        if self.deadline.is_none() && self.next_print.is_none() {
            return false;
        }
        if done < self.next_check {
            return false;
        }
        let now = Instant::now();
        let (at, count) = self.last_check;
        let spent = now.duration_since(at).as_nanos().max(1);
        let per_check = (done - count) as u128 * CHECK_EVERY.as_nanos() / spent;
        self.next_check = done + (per_check as u64).clamp(1, 65536);
        self.last_check = (now, done);
        if self.next_print.is_some_and(|p| now >= p) {
            crate::output::note(&self.progress_line(now, done));
            self.next_print = self.progress.map(|p| now + p);
            self.last_print = (now, done);
            self.recent.reset();
        }
        self.deadline.is_some_and(|d| now >= d)
    }

    /// The progress line over the time since the last one (`render::pingpong::progress`).
    fn progress_line(&self, now: Instant, done: u64) -> String {
        let (at, count) = self.last_print;
        let secs = now.duration_since(at).as_secs_f64();
        let rate = if secs > 0.0 {
            (done - count) as f64 / secs
        } else {
            0.0
        };
        let total_secs = now.duration_since(self.start).as_secs_f64();
        let scale = ns_per_tick(self.start_tick, ticks(), now.duration_since(self.start));
        let latency = self.recent.latency(scale).filter(|_| self.window == 1);
        crate::render::pingpong::progress(self.name, done, total_secs, secs, rate, latency.as_ref())
    }

    /// The loop stopped before its end, with `done` operations that moved `bytes`: kept
    /// for [`Meter::partial`].
    pub fn stopped_at(&mut self, done: u64, bytes: u64) {
        self.reached = Some((done, bytes));
    }

    /// The figures of a loop that stopped early (see [`Meter::stopped_at`]), if it did.
    pub fn partial(&self) -> Option<OpResult> {
        self.reached.map(|(done, bytes)| self.finish(done, bytes))
    }

    /// The figures of `done` operations that moved `bytes`; stops the clock.
    pub fn finish(&self, done: u64, bytes: u64) -> OpResult {
        let elapsed = self.start.elapsed();
        let scale = ns_per_tick(self.start_tick, ticks(), elapsed);
        op_result(done, bytes, elapsed, self.window, self.total.latency(scale))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stops_at_the_count() {
        let mut m = Meter::start("send", Some(3), None, None, 1);
        assert!(!m.done(0) && !m.done(2));
        assert!(m.done(3));
        m.record(1000);
        let r = m.finish(3, 3 * 64);
        assert_eq!((r.iters, r.bytes, r.window), (3, 192, 1));
        assert!(r.latency_usec.is_some());
    }

    /// A loop stopped early (Ctrl-C) keeps what it measured up to there.
    #[test]
    fn a_loop_stopped_early_keeps_its_figures() {
        let mut m = Meter::start("send", Some(1_000_000), None, None, 1);
        assert!(m.partial().is_none(), "nothing stopped yet");
        for _ in 0..5 {
            m.record(1000);
        }
        m.stopped_at(5, 5 * 2 * 64);
        let r = m.partial().expect("stopped early");
        assert_eq!((r.iters, r.bytes, r.window), (5, 640, 1));
        assert!(r.latency_usec.is_some());
    }

    #[test]
    fn stops_at_the_deadline_and_never_before() {
        // Taken before the meter's own start, so the deadline cannot precede it.
        let started = Instant::now();
        let mut m = Meter::start(
            "write",
            None,
            Some(Duration::from_millis(50)),
            Some(Duration::from_millis(20)),
            32,
        );
        let mut n = 0u64;
        while !m.done(n) {
            n += 1;
            assert!(started.elapsed() < Duration::from_secs(5), "never stopped");
        }
        assert!(started.elapsed() >= Duration::from_millis(50));
        // A windowed run keeps no latency; a progress line says so by leaving it out.
        let line = m.progress_line(Instant::now(), n);
        assert!(line.starts_with("rdmactl: write "), "{line}");
        assert!(!line.contains("latency"), "{line}");
        assert_eq!(m.finish(n, 0).latency_usec, None);
    }

    #[test]
    fn progress_shows_percentiles_of_one_at_a_time_operations() {
        let mut m = Meter::start("send", None, None, Some(Duration::from_secs(1)), 1);
        m.record(1000);
        let line = m.progress_line(Instant::now(), 1);
        assert!(line.contains("latency usec p50 "), "{line}");
        assert!(line.contains("p99.9"), "{line}");
    }
}
