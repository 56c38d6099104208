//! A pair test's child: this same binary's `pingpong -j`, so a fabric pair chooses its GID,
//! explains a failure and reads its counters exactly as the command does; stopped at the
//! pair's deadline.

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::model::fabric::{PairEnd, RankInfo};
use crate::wire::rendezvous::PairTest;

/// The pair test: this same binary's `pingpong -j`, so a fabric pair chooses its GID,
/// explains a failure and reads its counters exactly as the command does.
pub fn pingpong_command(me: &RankInfo, test: &PairTest, port: u16) -> Command {
    let exe = std::env::current_exe().unwrap_or_else(|_| "rdmactl".into());
    let mut c = Command::new(exe);
    c.args(["-j", "--color", "never", "pingpong", "-d"])
        .arg(&me.device)
        .args(["-i", &me.port.to_string(), "-g", &test.gid_index])
        .args(["-p", &port.to_string(), "-s", &test.size.to_string()])
        .args(["-n", &test.iters.to_string()])
        .args(["--timeout", &test.step_timeout.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // pingpong refuses a captured tree, and fabric already refused it.
        .env_remove("RDMACTL_SYSFS");
    c
}

/// A pingpong child and the readers of its output (threads, so a full pipe never blocks it).
pub struct ChildRun {
    child: Child,
    stdout: Option<std::thread::JoinHandle<Vec<u8>>>,
    stderr: Option<std::thread::JoinHandle<Vec<u8>>>,
}

impl ChildRun {
    pub fn new(mut child: Child) -> ChildRun {
        let reader = |pipe: Option<Box<dyn Read + Send>>| {
            pipe.map(|mut p| {
                std::thread::spawn(move || {
                    let mut buf = Vec::new();
                    let _ = p.by_ref().take(4 << 20).read_to_end(&mut buf);
                    buf
                })
            })
        };
        let stdout = reader(
            child
                .stdout
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        );
        let stderr = reader(
            child
                .stderr
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        );
        ChildRun {
            child,
            stdout,
            stderr,
        }
    }

    pub fn exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }

    /// The child's report, or its stop at the deadline; None when `cut` said to stop it
    /// (rank 0 gave up on the pair, or a signal stops the run): then nothing it says counts.
    pub fn finish(
        mut self,
        start: Instant,
        deadline: Duration,
        me: &RankInfo,
        cut: &dyn Fn() -> bool,
    ) -> Option<PairEnd> {
        let mut killed = false;
        loop {
            match self.child.try_wait() {
                Ok(Some(_)) => break,
                Ok(None) if cut() => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    let _ = self.stdout.take().map(|h| h.join());
                    let _ = self.stderr.take().map(|h| h.join());
                    return None;
                }
                Ok(None) if start.elapsed() >= deadline => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    killed = true;
                    break;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
                Err(_) => break,
            }
        }
        let out = self
            .stdout
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        let err = self
            .stderr
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        let seconds = start.elapsed().as_secs_f64();
        if killed {
            return Some(PairEnd::problem(
                format!(
                    "the pair test on {} did not finish within --deadline {:.0} s and was stopped",
                    me.label(),
                    deadline.as_secs_f64()
                ),
                seconds,
            ));
        }
        Some(super::pair_end::end_of_report(&out, &err, seconds))
    }
}
