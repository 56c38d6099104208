//! The two results a diagnosis produces, shared by every command: a `Finding` (one judged
//! fact, as doctor and check list them) and an `Explanation` (why a step failed, the evidence
//! seen in this run, and the fix). One renderer prints each (`render::findings`,
//! `render::explanation`). A leaf: rules build these, renderers print them.

use serde::Serialize;

use crate::model::errno::{errno_name, wc_status_name};
use crate::model::failure::{Cause, Failure, FailureContext, Step};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Ok,
    Info,
    Warn,
    Fail,
}

impl Severity {
    pub fn label(self) -> &'static str {
        match self {
            Severity::Ok => "ok",
            Severity::Info => "info",
            Severity::Warn => "warn",
            Severity::Fail => "FAIL",
        }
    }
}

/// What a finding judged. A device is always `device` in JSON (and a port `port` beside
/// it), as in every other command; only what is not a device keeps `subject`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subject {
    /// The host as a whole: the kernel, libibverbs, memlock limits.
    Host,
    Device(String),
    Port(String, u32),
}

/// One judged fact, as every command reports it (doctor, check, pingpong, selftest) and
/// `render::findings` prints it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub severity: Severity,
    /// Stable, kebab-case: scripts match on it.
    pub code: String,
    /// The device judged, for a finding about a device or one of its ports; None when the
    /// finding is about the host, or when the command's header already names the port.
    pub device: Option<String>,
    /// The port judged, beside `device`.
    pub port: Option<u32>,
    /// What was judged when it is not a device: `host`.
    pub subject: Option<String>,
    pub message: String,
    pub evidence: Vec<String>,
    /// What to change; None when nothing needs to change.
    pub fix: Option<String>,
}

impl Finding {
    pub fn new(severity: Severity, code: &str, message: impl Into<String>) -> Finding {
        Finding {
            severity,
            code: code.to_string(),
            device: None,
            port: None,
            subject: None,
            message: message.into(),
            evidence: Vec::new(),
            fix: None,
        }
    }

    pub fn about(mut self, subject: Subject) -> Finding {
        (self.device, self.port, self.subject) = match subject {
            Subject::Host => (None, None, Some("host".to_string())),
            Subject::Device(d) => (Some(d), None, None),
            Subject::Port(d, p) => (Some(d), Some(p), None),
        };
        self
    }

    /// The subject column of the text output: `host`, `rxe0`, `rxe0/1`, or empty.
    pub fn label(&self) -> String {
        match (&self.subject, &self.device, self.port) {
            (Some(s), _, _) => s.clone(),
            (None, Some(d), Some(p)) => format!("{d}/{p}"),
            (None, Some(d), None) => d.clone(),
            (None, None, _) => String::new(),
        }
    }

    pub fn evidence(mut self, line: impl Into<String>) -> Finding {
        self.evidence.push(line.into());
        self
    }

    pub fn fix(mut self, fix: impl Into<String>) -> Finding {
        self.fix = Some(fix.into());
        self
    }
}

/// Which of the run's facts a seen line states. A seen line is evidence gathered in this
/// run, never advice: the rule tests check that each one's source was gathered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The failed call itself: its errno, completion status, note or mismatch.
    Failure,
    /// This end's port and GID table (sysfs, query_port).
    Local,
    /// What the peer sent in the exchange.
    Peer,
    /// The GID's netdev in this network namespace.
    Netdev,
    /// The kernel's route, neighbour entry and ARP sysctls toward the peer.
    Route,
    /// RLIMIT_MEMLOCK, CAP_IPC_LOCK, MemAvailable and the planned registration.
    Memlock,
    /// The QP attributes set, and the run's sizes.
    Qp,
    /// The uverbs device node.
    DeviceNode,
    /// Looked up on this host for this failure: the CM's source netdev and route, the
    /// processes holding a port.
    Host,
    /// The peer's own explanation, sent over the out-of-band connection.
    PeerNotice,
}

/// One seen line: the text, and the fact it states.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    pub from: Source,
    pub text: String,
}

impl Seen {
    pub fn new(from: Source, text: impl Into<String>) -> Seen {
        Seen {
            from,
            text: text.into(),
        }
    }
}

impl std::fmt::Display for Seen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::ops::Deref for Seen {
    type Target = str;
    fn deref(&self) -> &str {
        &self.text
    }
}

impl PartialEq<str> for Seen {
    fn eq(&self, other: &str) -> bool {
        self.text == other
    }
}

impl PartialEq<&str> for Seen {
    fn eq(&self, other: &&str) -> bool {
        self.text == *other
    }
}

/// JSON keeps `evidence` an array of strings, as the text prints them.
impl Serialize for Seen {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}

/// Why a step failed: the rule's stable code, the cause, the evidence seen in this run, and
/// what to change. Every failure path (TCP exchange, connection manager, selftest) builds
/// this one type, and `render::explanation` prints it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Explanation {
    /// Stable, kebab-case, one per rule; docs/failures.md lists them all.
    pub code: String,
    /// Why it happened, as far as the evidence tells.
    pub summary: String,
    /// What was seen in this run that supports the summary, each line with the fact it
    /// came from.
    pub evidence: Vec<Seen>,
    pub fix: String,
    /// The GID index that would work toward the peer, when one exists (never set when the
    /// kernel chose the GID, as with the connection manager).
    pub suggested_gid_index: Option<u32>,
}

impl Explanation {
    pub fn new(code: &str, summary: impl Into<String>, fix: impl Into<String>) -> Explanation {
        Explanation {
            code: code.to_string(),
            summary: summary.into(),
            evidence: Vec::new(),
            fix: fix.into(),
            suggested_gid_index: None,
        }
    }
}

/// A failure as `-j` prints it: the `failure` object of pingpong and selftest, one shape for
/// the TCP exchange and the connection manager. `message` is the one-line summary printed
/// above the explanation; `errno`, `errno_name` and `wc_status` name the raw numbers.
#[derive(Debug, Clone, Serialize)]
pub struct FailureReport {
    pub step: Step,
    pub message: String,
    pub cause: Cause,
    pub context: FailureContext,
    pub errno: Option<i32>,
    pub errno_name: Option<&'static str>,
    pub wc_status: Option<&'static str>,
    pub explanation: Explanation,
}

impl FailureReport {
    pub fn new(failure: &Failure, explanation: Explanation) -> FailureReport {
        let errno = failure.cause.errno_value();
        FailureReport {
            step: failure.step,
            message: failure.to_string(),
            cause: failure.cause.clone(),
            context: (*failure.context).clone(),
            errno,
            errno_name: errno.map(errno_name),
            wc_status: failure.cause.wc_status().map(wc_status_name),
            explanation,
        }
    }

    /// The exit code: a missing RDMA stack is not a failed test.
    pub fn exit_code(&self) -> u8 {
        match self.cause {
            Cause::LibraryMissing { .. } | Cause::NoKernelCm { .. } => crate::exit::NO_RDMA,
            // As a shell reports a process a signal ended: 130 for SIGINT, 143 for SIGTERM.
            Cause::Interrupted { signal } => 128u8.saturating_add(signal as u8),
            _ => crate::exit::FAILED,
        }
    }
}
