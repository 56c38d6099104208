//! The parts of a `pingpong -j` report (docs/json.md, tests/json-schema.txt) that `fabric`
//! reads from its pair tests' children, as serde types. Every field is read on its own and
//! falls back to its default when the child wrote something else, so a report is read as
//! far as it goes, never refused whole.

use serde::de::{DeserializeOwned, Deserializer, IgnoredAny};
use serde::{Deserialize, Serialize, Serializer};

use crate::model::counter::WireDelta;

/// A field's value as `T`, or `T`'s default where the JSON holds something else.
fn lenient<'de, D: Deserializer<'de>, T: DeserializeOwned + Default>(d: D) -> Result<T, D::Error> {
    let v = serde_json::Value::deserialize(d)?;
    Ok(T::deserialize(v).unwrap_or_default())
}

/// What one pair end reads of its child's report.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ChildReport {
    #[serde(default, deserialize_with = "lenient")]
    pub ok: bool,
    #[serde(default, deserialize_with = "lenient")]
    pub ops: ChildOps,
    #[serde(default, deserialize_with = "lenient")]
    pub path_mtu: Option<u32>,
    #[serde(default, deserialize_with = "lenient")]
    pub failure: Option<Verbatim<ChildFailure>>,
    #[serde(default, deserialize_with = "lenient")]
    pub counters: Option<Verbatim<ChildCounters>>,
}

impl ChildReport {
    /// The report in `json`; an empty one (not ok, no figures) where it is not an object.
    pub fn read(json: &serde_json::Value) -> ChildReport {
        ChildReport::deserialize(json).unwrap_or_default()
    }
}

/// `ops`: the figures of the operations fabric judges (the SEND latency, the WRITE
/// bandwidth).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ChildOps {
    #[serde(default, deserialize_with = "lenient")]
    pub send: Option<ChildOp>,
    #[serde(default, deserialize_with = "lenient")]
    pub write: Option<ChildOp>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct ChildOp {
    #[serde(default, deserialize_with = "lenient")]
    pub usec_per_iter: Option<f64>,
    #[serde(default, deserialize_with = "lenient")]
    pub mbit_per_sec: Option<f64>,
}

/// `failure`: its one-line message and its explanation.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ChildFailure {
    #[serde(default, deserialize_with = "lenient")]
    pub message: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub explanation: Option<ChildExplanation>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct ChildExplanation {
    #[serde(default, deserialize_with = "lenient")]
    pub code: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub summary: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub evidence: Vec<ChildEvidence>,
    #[serde(default, deserialize_with = "lenient")]
    pub fix: Option<String>,
}

/// One evidence item: a line, or an object whose `text` is the line.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum ChildEvidence {
    Line(String),
    Item { text: String },
    Other(IgnoredAny),
}

impl ChildEvidence {
    pub fn text(&self) -> Option<&str> {
        match self {
            ChildEvidence::Line(t) | ChildEvidence::Item { text: t } => Some(t),
            ChildEvidence::Other(_) => None,
        }
    }
}

/// `counters`: both ends' deltas and the findings on them.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ChildCounters {
    #[serde(default, deserialize_with = "lenient")]
    pub local: Option<WireDelta>,
    #[serde(default, deserialize_with = "lenient")]
    pub peer: Option<WireDelta>,
    #[serde(default, deserialize_with = "lenient")]
    pub findings: Vec<ChildFinding>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct ChildFinding {
    #[serde(default, deserialize_with = "lenient")]
    pub code: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub message: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub evidence: Vec<ChildEvidence>,
    #[serde(default, deserialize_with = "lenient")]
    pub fix: Option<String>,
}

/// A JSON object passed on as the child wrote it (fabric's report shows it whole), with
/// the typed view of the parts fabric reads.
#[derive(Debug, Clone)]
pub struct Verbatim<T> {
    raw: serde_json::Value,
    read: T,
}

impl<T: DeserializeOwned + Default> Verbatim<T> {
    pub fn new(raw: serde_json::Value) -> Verbatim<T> {
        let read = T::deserialize(&raw).unwrap_or_default();
        Verbatim { raw, read }
    }
}

impl<T> Verbatim<T> {
    pub fn into_raw(self) -> serde_json::Value {
        self.raw
    }
}

impl<T> std::ops::Deref for Verbatim<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.read
    }
}

/// Two copies are equal when the child wrote the same object.
impl<T> PartialEq for Verbatim<T> {
    fn eq(&self, other: &Verbatim<T>) -> bool {
        self.raw == other.raw
    }
}

impl<T> Serialize for Verbatim<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.raw.serialize(s)
    }
}

impl<'de, T: DeserializeOwned + Default> Deserialize<'de> for Verbatim<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Verbatim<T>, D::Error> {
        serde_json::Value::deserialize(d).map(Verbatim::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_is_read_as_far_as_it_goes() {
        let r: ChildReport = serde_json::from_str(
            r#"{"ok": "yes", "path_mtu": 4096, "ops": {"send": {"iters": 5, "usec_per_iter": "x"}, "write": 3},
                "failure": {"message": "m", "explanation": {"code": "c", "evidence": ["a", {"text": "b"}, 7], "fix": 1}},
                "counters": {"local": {"device": "rxe0"}, "peer": null, "findings": [{"code": "k", "message": "n", "evidence": ["e", {"text": "t"}]}]}}"#,
        )
        .unwrap();
        assert!(!r.ok);
        assert_eq!(r.path_mtu, Some(4096));
        assert!(r.ops.send.is_some() && r.ops.write.is_none());
        assert_eq!(r.ops.send.as_ref().unwrap().usec_per_iter, None);
        let f = r.failure.unwrap();
        let x = f.explanation.as_ref().unwrap();
        let lines: Vec<_> = x.evidence.iter().filter_map(ChildEvidence::text).collect();
        assert_eq!(lines, ["a", "b"]);
        assert_eq!((x.code.as_deref(), x.fix.as_deref()), (Some("c"), None));
        assert_eq!(serde_json::to_value(&f).unwrap()["explanation"]["fix"], 1);
        let c = r.counters.unwrap();
        assert!(c.local.is_none() && c.peer.is_none());
        assert_eq!(c.findings[0].message.as_deref(), Some("n"));
    }
}
