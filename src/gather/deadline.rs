//! A read of the system that may never return, given a deadline. A sysfs file is a driver's
//! `show()` function: a stuck driver (a firmware command that never completes) blocks the
//! reader in the kernel, where no timeout reaches it. So the whole gather runs in a worker
//! thread and the caller waits for it at most `limit`; the reads that had not returned by
//! then are named, because each sysfs read registers its path while it runs (`reading`).
//! A worker that is past its deadline is left to finish on its own (a thread blocked in the
//! kernel cannot be cancelled), and at most `MAX_WORKERS` run at once, so a file that stays
//! stuck costs a bounded number of threads, not one per scrape.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex};
use std::thread::ThreadId;
use std::time::Duration;

/// Gathers running at once, those stuck in the kernel included. Past it, a gather is not
/// started: the caller is answered at once with the reads still stuck.
const MAX_WORKERS: usize = 4;

/// Each thread's read in progress: (thread, path).
static IN_FLIGHT: Mutex<Vec<(ThreadId, PathBuf)>> = Mutex::new(Vec::new());
static WORKERS: AtomicUsize = AtomicUsize::new(0);

/// A gather that did not finish in time: the reads that had not returned (empty when the
/// gather was inside something other than a sysfs read, such as a netlink or verbs query).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Late {
    pub paths: Vec<PathBuf>,
    pub limit: Duration,
    /// True when no gather was started because `MAX_WORKERS` were still stuck.
    pub not_started: bool,
}

/// While alive, `path` is this thread's read in progress.
pub struct InFlight(ThreadId);

/// Registers `path` as this thread's read in progress until the guard drops.
pub fn reading(path: &Path) -> InFlight {
    let me = std::thread::current().id();
    in_flight().push((me, path.to_path_buf()));
    InFlight(me)
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut table = in_flight();
        if let Some(i) = table.iter().rposition(|(t, _)| *t == self.0) {
            table.swap_remove(i);
        }
    }
}

/// The table survives a panic in a reader: it holds only paths.
fn in_flight() -> std::sync::MutexGuard<'static, Vec<(ThreadId, PathBuf)>> {
    IN_FLIGHT.lock().unwrap_or_else(|e| e.into_inner())
}

/// Every read in progress in this process, in path order.
pub fn stuck_reads() -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = in_flight().iter().map(|(_, p)| p.clone()).collect();
    paths.sort();
    paths.dedup();
    paths
}

/// Counts a worker from its start to its end, a panic included.
struct Worker;

impl Drop for Worker {
    fn drop(&mut self) {
        WORKERS.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Runs `work` in a worker thread and waits for it at most `limit`.
pub fn within<T: Send + 'static>(
    limit: Duration,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Late> {
    let overdue = |not_started| Late {
        paths: stuck_reads(),
        limit,
        not_started,
    };
    if WORKERS.fetch_add(1, Ordering::SeqCst) >= MAX_WORKERS {
        WORKERS.fetch_sub(1, Ordering::SeqCst);
        return Err(overdue(true));
    }
    let (tx, rx) = mpsc::sync_channel(1);
    let spawned = std::thread::Builder::new()
        .name("rdmactl-gather".into())
        .spawn(move || {
            let _counted = Worker;
            // The caller may have stopped waiting: then nobody wants the answer.
            let _ = tx.send(work());
        });
    if spawned.is_err() {
        WORKERS.fetch_sub(1, Ordering::SeqCst);
        return Err(overdue(true));
    }
    match rx.recv_timeout(limit) {
        Ok(done) => Ok(done),
        // Timeout, or the worker panicked (its sender dropped without an answer).
        Err(_) => Err(overdue(false)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// A read blocked in the kernel (opening a FIFO that has no writer blocks, as a stuck
    /// driver's show() does) costs one deadline, and its path is named.
    #[test]
    fn a_blocked_read_costs_one_deadline_and_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("symbol_error");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let path = fifo.clone();
        let start = Instant::now();
        let got = within(Duration::from_millis(300), move || {
            let _r = reading(&path);
            std::fs::read_to_string(&path).map(|t| t.len())
        });
        let took = start.elapsed();
        let overdue = got.unwrap_err();
        assert!(took < Duration::from_secs(2), "{took:?}");
        assert!(overdue.paths.contains(&fifo), "{overdue:?}");
        assert!(!overdue.not_started);
        // A writer lets the stuck worker finish; its read is then no longer in flight.
        std::fs::write(&fifo, "0\n").unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while stuck_reads().contains(&fifo) {
            assert!(Instant::now() < deadline, "the worker never finished");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn a_prompt_gather_answers_its_value() {
        assert_eq!(within(Duration::from_secs(5), || 7), Ok(7));
    }
}
