//! SIGINT and SIGTERM during a run: the first one is caught, so the run stops at its next
//! check and still prints what it measured and why it stopped (and tells the peer); a
//! second one ends the process at once, as usual. Caught only while traffic runs: a
//! server waiting for its client stays killable by one Ctrl-C.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

struct Caught {
    seen: Arc<AtomicBool>,
    which: Arc<AtomicUsize>,
}

static CAUGHT: OnceLock<Caught> = OnceLock::new();

/// Start catching SIGINT and SIGTERM (idempotent). A registration error leaves the default
/// action, which only costs the partial report.
pub fn catch() {
    CAUGHT.get_or_init(|| {
        let seen = Arc::new(AtomicBool::new(false));
        let which = Arc::new(AtomicUsize::new(0));
        for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            // Handlers run in registration order: the default action only when an earlier
            // signal already set `seen`, then note this one.
            let _ = signal_hook::flag::register_conditional_default(signal, Arc::clone(&seen));
            let _ = signal_hook::flag::register_usize(signal, Arc::clone(&which), signal as usize);
            let _ = signal_hook::flag::register(signal, Arc::clone(&seen));
        }
        Caught { seen, which }
    });
}

/// The signal caught since `catch`, if any.
pub fn caught() -> Option<i32> {
    let c = CAUGHT.get()?;
    if !c.seen.load(Ordering::Relaxed) {
        return None;
    }
    Some(c.which.load(Ordering::Relaxed) as i32)
}

/// Sleep until `deadline`, waking every 100 ms to see whether a signal was caught (`catch`
/// must have been called). False when one was: the caller stops and reports what it has.
pub fn sleep_until(deadline: Instant) -> bool {
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        if caught().is_some() {
            return false;
        }
        std::thread::sleep(left.min(Duration::from_millis(100)));
    }
    true
}
