//! What a diagnosis produces, shared by every command: one `Diagnostic` (a catalogued code,
//! a severity, what it is about, the message, typed evidence, the fix, and the diagnostics
//! that follow from it), as rustc and miette shape theirs. Every rule builds one: a finding
//! (one judged fact, as doctor, check, counters and subnet list them) or an explanation (why
//! a step failed, the evidence seen in this run, and the fix). `render::diagnostic` prints
//! it as text; `json` holds its JSON shapes, each keeping the keys users already parse.
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
    pub fn finding_keys(&self) -> (Option<String>, Option<u32>, Option<String>) {
        match self {
            Subject::Device(d) => (Some(d.clone()), None, None),
            Subject::Port(d, p) => (Some(d.clone()), Some(*p), None),
            other => (None, None, Some(other.label())),
        }
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
    /// (`Diagnostic::evidence` lines, and seen lines read back from JSON that carried none).
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

    /// A fact a finding's rule was given, not attributed to a kind of `Source`.
    pub fn gathered(text: impl Into<String>) -> Seen {
        Seen::new(Source::Gathered, text)
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
/// the explanation shape's `seen` carries the tags through `tagged`.
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
}

/// One diagnosis: what every finding, explanation and suspect is. Text is its rendering by
/// `render::diagnostic`; JSON is one of the shapes in `json`, chosen by the report that holds
/// it (a finding of doctor/check/counters/subnet, the explanation of a failed run), so the
/// keys users already parse stay. It has no `Serialize` of its own: a report names the shape.
/// It deserializes from its own shape: evidence as `{"from", "text", "value"}` objects.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Diagnostic {
    /// Stable, kebab-case, one per rule; docs/failures.md lists them all.
    pub code: Code,
    pub severity: Severity,
    /// What it is about; None when the command's header already names it.
    pub subject: Option<Subject>,
    /// The finding's message, or why the step failed.
    pub message: String,
    /// What was seen in this run, each line with the fact it states.
    pub evidence: Vec<Seen>,
    /// What to change; None when nothing needs to change.
    pub fix: Option<String>,
    /// The GID index that would work toward the peer, when one exists (never set when the
    /// kernel chose the GID, as with the connection manager).
    #[serde(default)]
    pub suggested_gid_index: Option<u32>,
    /// Consequences, under their cause: each would be reported on its own otherwise.
    #[serde(default)]
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

    /// One judged fact, as doctor, check, counters and subnet list them.
    pub fn finding(severity: Severity, code: Code, message: impl Into<String>) -> Self {
        Diagnostic::new(severity, code, message)
    }

    /// Why a step failed (always `fail`), and what to change.
    pub fn explanation(code: Code, summary: impl Into<String>, fix: impl Into<String>) -> Self {
        Diagnostic::new(Severity::Fail, code, summary).fix(fix)
    }

    pub fn about(mut self, subject: Subject) -> Self {
        self.subject = Some(subject);
        self
    }

    /// A fact the rule was given, not attributed to one of the kinds of `Source`.
    pub fn evidence(mut self, line: impl Into<String>) -> Self {
        self.evidence.push(Seen::new(Source::Gathered, line));
        self
    }

    /// `evidence` for each line.
    pub fn evidences<S: Into<String>>(self, lines: impl IntoIterator<Item = S>) -> Self {
        lines.into_iter().fold(self, |d, line| d.evidence(line))
    }

    pub fn seen(mut self, seen: Seen) -> Self {
        self.evidence.push(seen);
        self
    }

    pub fn fix(mut self, fix: impl Into<String>) -> Self {
        self.fix = Some(fix.into());
        self
    }

    pub fn suggest_gid(mut self, index: Option<u32>) -> Self {
        self.suggested_gid_index = index;
        self
    }

    /// The fix as an explanation prints it: empty when there is none.
    pub fn fix_text(&self) -> &str {
        self.fix.as_deref().unwrap_or_default()
    }

    /// The subject column of the text output, or empty.
    pub fn label(&self) -> String {
        self.subject
            .as_ref()
            .map(Subject::label)
            .unwrap_or_default()
    }
}

/// The JSON shapes of a diagnostic, for `#[serde(serialize_with = ...)]` or as wrappers.
pub mod json {
    use super::{tagged::TaggedSeen, Diagnostic, Seen, Severity};
    use serde::{Serialize, Serializer};

    /// A finding as doctor, check, counters and subnet print it: a device is always
    /// `device` (and a port `port` beside it), as in every other command; only what is not a
    /// device keeps `subject`; `evidence` is an array of strings.
    pub struct AsFinding<'a>(pub &'a Diagnostic);

    impl Serialize for AsFinding<'_> {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            #[derive(Serialize)]
            struct Out<'a> {
                severity: Severity,
                code: &'a str,
                device: Option<String>,
                port: Option<u32>,
                subject: Option<String>,
                message: &'a str,
                evidence: &'a [Seen],
                fix: &'a Option<String>,
            }
            let d = self.0;
            let (device, port, subject) = match &d.subject {
                Some(s) => s.finding_keys(),
                None => (None, None, None),
            };
            Out {
                severity: d.severity,
                code: &d.code,
                device,
                port,
                subject,
                message: &d.message,
                evidence: &d.evidence,
                fix: &d.fix,
            }
            .serialize(serializer)
        }
    }

    /// Why a run failed, as pingpong and selftest print it: `summary`, `evidence` an array
    /// of strings as users parse it, `seen` beside it with the fact each line states.
    pub struct AsExplanation<'a>(pub &'a Diagnostic);

    impl Serialize for AsExplanation<'_> {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            #[derive(Serialize)]
            struct Out<'a> {
                code: &'a str,
                summary: &'a str,
                evidence: &'a [Seen],
                seen: TaggedSeen<'a>,
                fix: &'a str,
                suggested_gid_index: Option<u32>,
            }
            let d = self.0;
            Out {
                code: &d.code,
                summary: &d.message,
                evidence: &d.evidence,
                seen: TaggedSeen(&d.evidence),
                fix: d.fix_text(),
                suggested_gid_index: d.suggested_gid_index,
            }
            .serialize(serializer)
        }
    }

    /// `#[serde(serialize_with = "json::findings")]` on a list of findings.
    pub fn findings<L, S>(ds: &L, serializer: S) -> Result<S::Ok, S::Error>
    where
        L: AsRef<[Diagnostic]> + ?Sized,
        S: Serializer,
    {
        serializer.collect_seq(ds.as_ref().iter().map(AsFinding))
    }

    /// `#[serde(serialize_with = "json::explanation")]` on a failure's explanation.
    pub fn explanation<S: Serializer>(d: &Diagnostic, serializer: S) -> Result<S::Ok, S::Error> {
        AsExplanation(d).serialize(serializer)
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
    #[serde(serialize_with = "json::explanation")]
    pub explanation: Diagnostic,
}

impl FailureReport {
    pub fn new(failure: &Failure, explanation: Diagnostic) -> FailureReport {
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
    fn a_finding_keeps_its_json_keys() {
        let d = Diagnostic::finding(Severity::Warn, "mtu".into(), "netdev MTU 1500")
            .about(Subject::Port("rxe0".into(), 1))
            .evidence("mtu 1500")
            .fix("ip link set eth0 mtu 9000");
        assert_eq!(d.evidence[0].from, Source::Gathered);
        assert_eq!(d.label(), "rxe0/1");
        assert_eq!(
            serde_json::to_value(json::AsFinding(&d)).unwrap(),
            serde_json::json!({"severity": "warn", "code": "mtu", "device": "rxe0", "port": 1,
                "subject": null, "message": "netdev MTU 1500", "evidence": ["mtu 1500"],
                "fix": "ip link set eth0 mtu 9000"})
        );
        let host = Diagnostic::finding(Severity::Ok, "memlock".into(), "ok").about(Subject::Host);
        let json = serde_json::to_value(json::AsFinding(&host)).unwrap();
        assert_eq!(
            (&json["device"], &json["subject"]),
            (&serde_json::json!(null), &serde_json::json!("host"))
        );
        let walk = Diagnostic::finding(Severity::Info, "subnet-mads-resent".into(), "resent")
            .about(Subject::Other("walk".into()));
        assert_eq!(walk.label(), "walk");
        assert!(!crate::model::catalogue::lookup(&d.code).is_empty());
    }

    #[test]
    fn an_explanation_is_a_failing_diagnostic() {
        let x = Diagnostic::explanation("no-route".into(), "no route to 10.0.0.2", "add a route")
            .seen(Seen::new(
                Source::Route,
                "ip route get 10.0.0.2: unreachable",
            ))
            .suggest_gid(Some(3));
        assert_eq!(x.severity, Severity::Fail);
        assert_eq!(x.fix_text(), "add a route");
        assert_eq!(
            (x.message.as_str(), x.suggested_gid_index),
            ("no route to 10.0.0.2", Some(3))
        );
    }

    #[test]
    fn json_keeps_the_legacy_shapes_and_the_diagnostic_keeps_its_tags() {
        let mut seen = Seen::new(Source::Route, "seen");
        seen.value = Some(SeenValue::Number(7));
        let x = Diagnostic::explanation("no-route".into(), "why", "fix").seen(seen);
        let json = serde_json::to_value(json::AsExplanation(&x)).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"code": "no-route", "summary": "why", "evidence": ["seen"],
                "seen": [{"from": "route", "text": "seen", "value": 7}], "fix": "fix",
                "suggested_gid_index": null})
        );

        // Its own shape reads back, tags, subject and consequences and all.
        let own = serde_json::json!({"code": "no-route", "severity": "fail",
            "subject": {"gid_index": ["rxe0", 1, 3]}, "message": "why",
            "evidence": [{"from": "route", "text": "seen", "value": 7}, "plain"],
            "fix": "fix",
            "related": [{"code": "neighbour", "severity": "warn", "subject": null,
                "message": "no entry", "evidence": [], "fix": null}]});
        let d: Diagnostic = serde_json::from_value(own).unwrap();
        assert_eq!(d.subject, Some(Subject::GidIndex("rxe0".into(), 1, 3)));
        assert_eq!(d.evidence[0], x.evidence[0]);
        assert_eq!(d.evidence[1].from, Source::Gathered);
        assert_eq!(d.related[0].code, "neighbour");
        let tagged: Seen =
            serde_json::from_value(serde_json::json!({"from": "peer", "text": "t"})).unwrap();
        assert_eq!(tagged, Seen::new(Source::Peer, "t"));
    }
}
