//! What a diagnosis produces, shared by every command: one `Diagnostic` (a catalogued code,
//! a severity, what it is about, the message, typed evidence, the fix, and the diagnostics
//! that follow from it), as rustc and miette shape theirs. `render::diagnostic` prints it as
//! text; JSON is its serde form, and it deserializes, so one rdmactl can read another's.
//!
//! The rules build it in one of two shapes, kept source-compatible while they move:
//! `Finding` (one judged fact, as doctor, check, counters and subnet list them) and
//! `Explanation` (why a step failed, the evidence seen in this run, and the fix). Each turns
//! into a `Diagnostic` losslessly (`From`), and keeps the JSON keys users already parse.
//! A leaf: rules build these, renderers print them.

use serde::{Deserialize, Serialize};

pub use crate::model::codes::Code;
use crate::model::errno::{errno_name, wc_status_name};
use crate::model::failure::{Cause, Failure, FailureContext, Step};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
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

/// What a diagnostic is about. In a finding's JSON a device is always `device` (and a port
/// `port` beside it), as in every other command; only what is not a device keeps `subject`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Subject {
    /// The host as a whole: the kernel, libibverbs, memlock limits.
    Host,
    Device(String),
    Port(String, u32),
    /// One GID table entry: device, port, index.
    GidIndex(String, u32, u32),
    /// The other end of a test, by its address.
    Peer(String),
    /// A rank of a `fabric` run.
    Rank(u32),
    /// A node of a subnet, by its description or GUID.
    Node(String),
    /// Anything else a rule names in words: a link by both ends, `sm`, `walk`.
    Other(String),
}

impl Subject {
    /// The subject column of the text output: `host`, `rxe0`, `rxe0/1`, `rxe0/1 GID 3`.
    pub fn label(&self) -> String {
        match self {
            Subject::Host => "host".to_string(),
            Subject::Device(d) => d.clone(),
            Subject::Port(d, p) => format!("{d}/{p}"),
            Subject::GidIndex(d, p, i) => format!("{d}/{p} GID {i}"),
            Subject::Peer(p) => format!("peer {p}"),
            Subject::Rank(r) => format!("rank {r}"),
            Subject::Node(n) | Subject::Other(n) => n.clone(),
        }
    }

    /// As a finding's JSON holds it: (device, port, subject).
    fn finding_keys(self) -> (Option<String>, Option<u32>, Option<String>) {
        match self {
            Subject::Device(d) => (Some(d), None, None),
            Subject::Port(d, p) => (Some(d), Some(p), None),
            other => (None, None, Some(other.label())),
        }
    }

    /// From a finding's (device, port, subject); None when the command's header names it.
    fn from_finding_keys(
        device: Option<&str>,
        port: Option<u32>,
        subject: Option<&str>,
    ) -> Option<Subject> {
        match (subject, device, port) {
            (Some("host"), _, _) => Some(Subject::Host),
            (Some(s), _, _) => Some(Subject::Other(s.to_string())),
            (None, Some(d), Some(p)) => Some(Subject::Port(d.to_string(), p)),
            (None, Some(d), None) => Some(Subject::Device(d.to_string())),
            (None, None, _) => None,
        }
    }
}

/// One judged fact, as every command reports it (doctor, check, pingpong, selftest): the
/// finding shape of a `Diagnostic`, with its JSON keys.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    pub severity: Severity,
    /// Stable, kebab-case: scripts match on it.
    pub code: Code,
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
    pub fn new(severity: Severity, code: Code, message: impl Into<String>) -> Finding {
        Finding {
            severity,
            code,
            device: None,
            port: None,
            subject: None,
            message: message.into(),
            evidence: Vec::new(),
            fix: None,
        }
    }

    pub fn about(mut self, subject: Subject) -> Finding {
        (self.device, self.port, self.subject) = subject.finding_keys();
        self
    }

    /// What the finding judged, typed.
    pub fn subject(&self) -> Option<Subject> {
        Subject::from_finding_keys(self.device.as_deref(), self.port, self.subject.as_deref())
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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
    /// A fact a finding's rule was given, not yet attributed to one of the kinds above
    /// (`Finding::evidence` lines, and seen lines read back from JSON that carried none).
    Gathered,
}

/// The value a seen line states, where the rule had one at hand: what a script compares
/// instead of parsing the text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SeenValue {
    Number(i64),
    Flag(bool),
    Text(String),
}

/// One seen line: the text, the fact it states, and that fact's value when there is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    pub from: Source,
    pub text: String,
    pub value: Option<SeenValue>,
}

impl Seen {
    pub fn new(from: Source, text: impl Into<String>) -> Seen {
        Seen {
            from,
            text: text.into(),
            value: None,
        }
    }
}

impl std::borrow::Borrow<str> for Seen {
    fn borrow(&self) -> &str {
        &self.text
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

/// JSON keeps `evidence` an array of strings, as the text prints them (users parse that);
/// an explanation's `seen` and a `Diagnostic`'s `evidence` carry the tags through `tagged`.
impl Serialize for Seen {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}

/// A seen line reads back from either form: a plain string (`Source::Gathered`), or
/// `{"from": ..., "text": ..., "value": ...}`.
impl<'de> Deserialize<'de> for Seen {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Seen, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            Text(String),
            Tagged {
                from: Source,
                text: String,
                #[serde(default)]
                value: Option<SeenValue>,
            },
        }
        Ok(match Form::deserialize(deserializer)? {
            Form::Text(text) => Seen::new(Source::Gathered, text),
            Form::Tagged { from, text, value } => Seen { from, text, value },
        })
    }
}

/// Seen lines as objects that keep their source and value.
mod tagged {
    use super::{Seen, SeenValue, Source};
    use serde::{Serialize, Serializer};

    #[derive(Serialize)]
    struct Tagged<'a> {
        from: Source,
        text: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        value: &'a Option<SeenValue>,
    }

    /// `[{"from": ..., "text": ..., "value": ...}]`, `value` only where there is one.
    pub struct TaggedSeen<'a>(pub &'a [Seen]);

    impl Serialize for TaggedSeen<'_> {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            serializer.collect_seq(self.0.iter().map(|s| Tagged {
                from: s.from,
                text: &s.text,
                value: &s.value,
            }))
        }
    }

    pub fn serialize<S: Serializer>(seen: &[Seen], serializer: S) -> Result<S::Ok, S::Error> {
        TaggedSeen(seen).serialize(serializer)
    }
}

/// Why a step failed: the rule's stable code, the cause, the evidence seen in this run, and
/// what to change: the failure shape of a `Diagnostic` (always `fail`), with its JSON keys.
/// Every failure path (TCP exchange, connection manager, selftest) builds this.
///
/// JSON: `evidence` stays an array of strings, as users parse it; `seen` beside it holds the
/// same lines with the fact each states. Reading back prefers `seen`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(from = "ExplanationJson")]
pub struct Explanation {
    /// Stable, kebab-case, one per rule; docs/failures.md lists them all.
    pub code: Code,
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

impl Serialize for Explanation {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Out<'a> {
            code: &'a Code,
            summary: &'a str,
            evidence: &'a [Seen],
            seen: tagged::TaggedSeen<'a>,
            fix: &'a str,
            suggested_gid_index: Option<u32>,
        }
        Out {
            code: &self.code,
            summary: &self.summary,
            evidence: &self.evidence,
            seen: tagged::TaggedSeen(&self.evidence),
            fix: &self.fix,
            suggested_gid_index: self.suggested_gid_index,
        }
        .serialize(serializer)
    }
}

/// An explanation as JSON holds it: from this version, or from one before `seen`.
#[derive(Deserialize)]
struct ExplanationJson {
    code: Code,
    summary: String,
    #[serde(default)]
    evidence: Vec<Seen>,
    #[serde(default)]
    seen: Option<Vec<Seen>>,
    fix: String,
    #[serde(default)]
    suggested_gid_index: Option<u32>,
}

impl From<ExplanationJson> for Explanation {
    fn from(json: ExplanationJson) -> Explanation {
        Explanation {
            code: json.code,
            summary: json.summary,
            evidence: json.seen.unwrap_or(json.evidence),
            fix: json.fix,
            suggested_gid_index: json.suggested_gid_index,
        }
    }
}

impl Explanation {
    pub fn new(code: Code, summary: impl Into<String>, fix: impl Into<String>) -> Explanation {
        Explanation {
            code,
            summary: summary.into(),
            evidence: Vec::new(),
            fix: fix.into(),
            suggested_gid_index: None,
        }
    }
}

/// One diagnosis: what every finding, explanation and suspect is. Text and JSON are two
/// renderings of it (`render::diagnostic`, and serde); it deserializes from its own JSON
/// and from the finding and explanation shapes through `Finding`/`Explanation`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnostic {
    pub code: Code,
    pub severity: Severity,
    /// What it is about; None when the command's header already names it.
    pub subject: Option<Subject>,
    /// The finding's message, or why the step failed.
    pub message: String,
    /// What was seen in this run, each line with the fact it states.
    #[serde(serialize_with = "tagged::serialize")]
    pub evidence: Vec<Seen>,
    /// What to change; None when nothing needs to change.
    pub fix: Option<String>,
    /// The GID index that would work toward the peer, when one exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggested_gid_index: Option<u32>,
    /// Consequences, under their cause: each would be reported on its own otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub related: Vec<Diagnostic>,
}

impl Diagnostic {
    pub fn new(severity: Severity, code: Code, message: impl Into<String>) -> Self {
        Diagnostic {
            code,
            severity,
            subject: None,
            message: message.into(),
            evidence: Vec::new(),
            fix: None,
            suggested_gid_index: None,
            related: Vec::new(),
        }
    }

    pub fn about(mut self, subject: Subject) -> Self {
        self.subject = Some(subject);
        self
    }

    pub fn seen(mut self, seen: Seen) -> Self {
        self.evidence.push(seen);
        self
    }

    pub fn fix(mut self, fix: impl Into<String>) -> Self {
        self.fix = Some(fix.into());
        self
    }

    /// The subject column of the text output, or empty.
    pub fn label(&self) -> String {
        self.subject
            .as_ref()
            .map(Subject::label)
            .unwrap_or_default()
    }
}

impl From<&Finding> for Diagnostic {
    fn from(f: &Finding) -> Diagnostic {
        Diagnostic {
            code: f.code.clone(),
            severity: f.severity,
            subject: f.subject(),
            message: f.message.clone(),
            evidence: f
                .evidence
                .iter()
                .map(|e| Seen::new(Source::Gathered, e.clone()))
                .collect(),
            fix: f.fix.clone(),
            suggested_gid_index: None,
            related: Vec::new(),
        }
    }
}

impl From<Finding> for Diagnostic {
    fn from(f: Finding) -> Diagnostic {
        Diagnostic::from(&f)
    }
}

/// An explanation is a failure: `fail`, about the step its report names.
impl From<&Explanation> for Diagnostic {
    fn from(x: &Explanation) -> Diagnostic {
        Diagnostic {
            code: x.code.clone(),
            severity: Severity::Fail,
            subject: None,
            message: x.summary.clone(),
            evidence: x.evidence.clone(),
            fix: Some(x.fix.clone()),
            suggested_gid_index: x.suggested_gid_index,
            related: Vec::new(),
        }
    }
}

impl From<Explanation> for Diagnostic {
    fn from(x: Explanation) -> Diagnostic {
        Diagnostic::from(&x)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finding_is_a_diagnostic_and_back() {
        let f = Finding::new(Severity::Warn, "mtu".into(), "netdev MTU 1500")
            .about(Subject::Port("rxe0".into(), 1))
            .evidence("mtu 1500")
            .fix("ip link set eth0 mtu 9000");
        let d = Diagnostic::from(&f);
        assert_eq!(d.subject, Some(Subject::Port("rxe0".into(), 1)));
        assert_eq!(d.evidence[0].from, Source::Gathered);
        assert_eq!(d.label(), "rxe0/1");
        assert_eq!(d.fix, f.fix);
        let host = Finding::new(Severity::Ok, "memlock".into(), "ok").about(Subject::Host);
        assert_eq!(Diagnostic::from(&host).subject, Some(Subject::Host));
        let walk = Finding::new(Severity::Info, "subnet-mads-resent".into(), "resent")
            .about(Subject::Other("walk".into()));
        assert_eq!(Diagnostic::from(&walk).label(), "walk");
        assert_eq!(walk.subject.as_deref(), Some("walk"));
        assert_eq!(d.code, "mtu");
        assert!(!crate::model::catalogue::lookup(&d.code).is_empty());
    }

    #[test]
    fn an_explanation_is_a_failing_diagnostic_and_back() {
        let mut x = Explanation::new("no-route".into(), "no route to 10.0.0.2", "add a route");
        x.evidence.push(Seen::new(
            Source::Route,
            "ip route get 10.0.0.2: unreachable",
        ));
        x.suggested_gid_index = Some(3);
        let d = Diagnostic::from(&x);
        assert_eq!(d.severity, Severity::Fail);
        assert_eq!(d.fix.as_deref(), Some("add a route"));
        assert_eq!(
            (d.message.as_str(), d.suggested_gid_index),
            ("no route to 10.0.0.2", Some(3))
        );
        assert_eq!(d.evidence, x.evidence);
    }

    #[test]
    fn json_keeps_the_legacy_shapes_and_the_diagnostic_keeps_its_tags() {
        let mut x = Explanation::new("no-route".into(), "why", "fix");
        let mut seen = Seen::new(Source::Route, "seen");
        seen.value = Some(SeenValue::Number(7));
        x.evidence.push(seen);
        let json = serde_json::to_value(&x).unwrap();
        assert_eq!(json["evidence"], serde_json::json!(["seen"]));
        assert_eq!(
            json["seen"],
            serde_json::json!([{"from": "route", "text": "seen", "value": 7}])
        );
        // A child's report reads back with serde, tags and all.
        let back: Explanation = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(back, x);
        // A report from before `seen` has no tag to keep.
        let mut legacy = json;
        legacy.as_object_mut().unwrap().remove("seen");
        let back: Explanation = serde_json::from_value(legacy).unwrap();
        assert_eq!(back.evidence[0].from, Source::Gathered);
        assert_eq!(back.evidence[0], "seen");

        let mut d = Diagnostic::from(&x).about(Subject::GidIndex("rxe0".into(), 1, 3));
        d.related.push(Diagnostic::new(
            Severity::Warn,
            "neighbour".into(),
            "no entry",
        ));
        let json = serde_json::to_value(&d).unwrap();
        assert_eq!(
            json["evidence"],
            serde_json::json!([{"from": "route", "text": "seen", "value": 7}])
        );
        assert_eq!(
            json["subject"],
            serde_json::json!({"gid_index": ["rxe0", 1, 3]})
        );
        let round: Diagnostic = serde_json::from_value(json).unwrap();
        assert_eq!(round, d);
        let plain =
            serde_json::to_value(Diagnostic::new(Severity::Ok, "kernel".into(), "ok")).unwrap();
        assert!(plain.get("related").is_none(), "{plain}");
        let tagged: Seen =
            serde_json::from_value(serde_json::json!({"from": "peer", "text": "t"})).unwrap();
        assert_eq!(tagged, Seen::new(Source::Peer, "t"));
    }
}
