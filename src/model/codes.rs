//! Every diagnostic code, as a constant the compiler checks: build.rs writes one per code
//! that docs/failures.md (the catalogue `rdmactl explain` prints) names in a `### ` heading,
//! `IB_PEER_LID_ZERO` for `ib-peer-lid-zero`. A rule names its code through these, so a code without an
//! entry does not compile, and a heading renamed breaks the rules that used it.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

/// A diagnostic's stable code: kebab-case, one per rule, named in the catalogue
/// (docs/failures.md, `model::catalogue`). Scripts match on it. Rules build one only through
/// the constants below; another rdmactl's report reads back whatever code it carries.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Code(Cow<'static, str>);

impl Code {
    const fn catalogued(code: &'static str) -> Code {
        Code(Cow::Borrowed(code))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

include!(concat!(env!("OUT_DIR"), "/codes.rs"));

/// compare_peers' informational finding: it feeds a rule and is never printed, so the
/// catalogue has no entry for it.
pub const MTU_DIFFERS: Code = Code::catalogued("mtu-differs");

/// Tests build diagnostics with made-up codes.
#[cfg(test)]
impl From<&'static str> for Code {
    fn from(code: &'static str) -> Code {
        Code(Cow::Borrowed(code))
    }
}

impl std::ops::Deref for Code {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl PartialEq<str> for Code {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for Code {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_constant_is_its_heading() {
        assert_eq!(IB_PEER_LID_ZERO, "ib-peer-lid-zero");
        assert_eq!(SUBNET_VL_MISMATCH.as_str(), "subnet-vl-mismatch");
        assert_eq!(ALL, crate::model::catalogue::codes());
        let json = serde_json::to_string(&RETRY_EXCEEDED).unwrap();
        assert_eq!(json, "\"retry-exceeded\"");
        let back: Code = serde_json::from_str("\"from-a-newer-rdmactl\"").unwrap();
        assert_eq!(back, "from-a-newer-rdmactl");
    }
}
