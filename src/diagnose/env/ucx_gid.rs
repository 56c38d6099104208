//! UCX's own GID choice under `UCX_IB_GID_INDEX=auto` (its default), predicted from the
//! port's GID table, so that `check --env` judges the index UCX will use as it judges an
//! explicit one.
//!
//! The rule, from UCX's `uct_ib_device_select_gid` (src/uct/ib/base/ib_device.c), the same
//! from 1.13 (Debian 12's) through 1.20: four passes over the whole table, in this order of
//! (RoCE version, address family): (v2, IPv4), (v2, IPv6), (v1, IPv4), (v1, IPv6); the
//! first index in table order whose entry fits the pass and on which an address handle can
//! be created wins. Nothing of the peer is looked at. When no entry fits, index 0.
//! - The version is the sysfs `gid_attrs/types/N` text: "RoCE v2" is v2, "IB/RoCE v1" or an
//!   unreadable file is v1; any other text is an error and the interface fails to open.
//! - The family is IPv4 for an IPv4-mapped GID (and IPv4-encoded multicast), else IPv6.
//! - UCX 1.18 added UCX_IB_ROCE_SUBNETS, a filter on the entries (default: all); 1.21 puts a
//!   global IPv6 GID before a link-local one within each version. Neither changes a table
//!   that has a RoCE v2 IPv4 entry, which wins first in every version.

use super::gid_index::judge_index;
use super::{code_of, EnvTarget};
use crate::diagnose::gidselect::{describe, Verdict};
use crate::model::device::{GidEntry, GidType};
use crate::model::diagnostic::{Diagnostic, Seen, Severity};

/// What UCX makes of one GID table under auto.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum UcxAuto {
    /// The index UCX uses, and whether an entry fitted (false: the index-0 fallback).
    Index { index: u32, matched: bool },
    /// An entry's type text UCX cannot parse: it logs "failed to parse gid type" and the
    /// interface does not open.
    Refused { index: u32, text: String },
}

/// UCX's `uct_ib_device_select_gid` on `table` (the populated entries; UCX's address
/// handle test fails on an empty slot, so empty ones never win).
pub(super) fn ucx_auto_index(table: &[GidEntry]) -> UcxAuto {
    #[derive(PartialEq)]
    enum Ver {
        V1,
        V2,
    }
    let mut entries = Vec::new();
    for e in table.iter().filter(|e| !e.gid.is_zero()) {
        let ver = match &e.gid_type {
            Some(GidType::RoceV2) => Ver::V2,
            Some(GidType::RoceV1 | GidType::Ib) | None => Ver::V1,
            Some(GidType::Other(text)) => {
                return UcxAuto::Refused {
                    index: e.index,
                    text: text.clone(),
                }
            }
        };
        entries.push((e.index, ver, ucx_ipv4(e)));
    }
    entries.sort_by_key(|(i, _, _)| *i);
    let passes = [
        (Ver::V2, true),
        (Ver::V2, false),
        (Ver::V1, true),
        (Ver::V1, false),
    ];
    passes
        .iter()
        .find_map(|(ver, v4)| {
            entries
                .iter()
                .find(|(_, v, f)| v == ver && f == v4)
                .map(|(i, _, _)| *i)
        })
        .map_or(
            UcxAuto::Index {
                index: 0,
                matched: false,
            },
            |index| UcxAuto::Index {
                index,
                matched: true,
            },
        )
}

/// UCX's `uct_ib_device_get_addr_family`: IPv4 for `::ffff:a.b.c.d`, and for the
/// IPv4-encoded multicast form `ff0e::ffff:a.b.c.d`.
fn ucx_ipv4(e: &GidEntry) -> bool {
    let b = e.gid.ipv6().octets();
    let mapped_tail = b[8..10] == [0, 0] && b[10..12] == [0xff, 0xff];
    mapped_tail && (b[..8] == [0; 8] || (b[..4] == [0xff, 0x0e, 0, 0] && b[4..8] == [0; 4]))
}

/// `UCX_IB_GID_INDEX=auto` on RoCE: the index UCX will use, judged as an explicit one.
pub(super) fn check_ucx_auto(shown: &str, target: &EnvTarget) -> Diagnostic {
    const NAME: &str = "UCX_IB_GID_INDEX";
    const RULE: &str = "UCX (1.13 to 1.20) under auto takes the first RoCE v2 IPv4 GID in table order, then v2 IPv6, v1 IPv4, v1 IPv6, whatever the peer (uct_ib_device_select_gid)";
    let code = code_of(NAME);
    let (index, matched) = match ucx_auto_index(target.table) {
        UcxAuto::Refused { index, text } => {
            return Diagnostic::finding(
                Severity::Fail,
                code,
                format!("{shown}: UCX cannot read the type of GID index {index} ('{text}') and does not open {}", target.name()),
            )
            .evidence(format!("gid_attrs/types/{index}: {text}"))
            .evidence(RULE)
            .fix(match target.auto.chosen {
                Some(i) => format!("set {NAME}={i}: UCX then reads no other entry"),
                None => "check the port's GID table (rdmactl gids)".into(),
            });
        }
        UcxAuto::Index { index, matched } => (index, matched),
    };
    let Some(entry) = target.table.iter().find(|e| e.index == index) else {
        // No entry fitted and slot 0 is empty: UCX's address would not work.
        return Diagnostic::finding(
            Severity::Fail,
            code,
            format!("{shown}: UCX under auto finds no RoCE GID on {} and falls back to index 0, which is empty", target.name()),
        )
        .evidence(RULE)
        .fix("give the port's netdev an address (rdmactl gids shows the table)");
    };
    let subject = format!("UCX under auto will use {}", describe(entry));
    let mut f = judge_index(NAME, &subject, index, target.auto, target);
    let reason = target.auto.reason(index);
    f.message = match (f.severity, reason) {
        (Severity::Ok, _) => format!("{subject}, as rdmactl would"),
        (_, Some(r)) if r.why.contains("not on the peer's subnet") => {
            format!("{subject}, which is not on the peer's subnet")
        }
        (_, Some(r)) if r.verdict == Verdict::Rejected => {
            format!("{subject}, which does not fit the peer")
        }
        _ => format!("{subject}, not the GID rdmactl would pick"),
    };
    f.evidence.insert(0, Seen::gathered(shown.to_string()));
    let rule = if matched {
        RULE.to_string()
    } else {
        format!("{RULE}; no entry fits, so index 0")
    };
    f.evidence.insert(1, Seen::gathered(rule));
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::gidselect::tests::{entry, mlx5, rxe0};

    fn index(table: &[GidEntry]) -> UcxAuto {
        ucx_auto_index(table)
    }

    #[test]
    fn first_v2_ipv4_whatever_comes_before_it() {
        // rxe (v2 only): the link-local index 0 is IPv6, so the IPv4 one at 1 wins.
        assert_eq!(
            index(&rxe0()),
            UcxAuto::Index {
                index: 1,
                matched: true
            }
        );
        // A second IPv4 address later in the table never wins: UCX ignores the peer.
        let mut two = rxe0();
        two.push(entry(
            2,
            "::ffff:10.93.0.1",
            Some(GidType::RoceV2),
            Some("veth0"),
        ));
        assert_eq!(
            index(&two),
            UcxAuto::Index {
                index: 1,
                matched: true
            }
        );
        // mlx5: v1 and v2 per address; the first v2 IPv4 is index 3.
        assert_eq!(
            index(&mlx5()),
            UcxAuto::Index {
                index: 3,
                matched: true
            }
        );
    }

    #[test]
    fn version_outranks_family_and_the_fallback_is_zero() {
        use GidType::*;
        // v2 IPv6 before v1 IPv4.
        let t = vec![
            entry(0, "::ffff:10.0.0.5", Some(RoceV1), None),
            entry(1, "2001:db8::5", Some(RoceV2), None),
        ];
        assert_eq!(
            index(&t),
            UcxAuto::Index {
                index: 1,
                matched: true
            }
        );
        // An unreadable type is v1 to UCX.
        let t = vec![
            entry(0, "fe80::1", None, None),
            entry(1, "::ffff:10.0.0.5", None, None),
        ];
        assert_eq!(
            index(&t),
            UcxAuto::Index {
                index: 1,
                matched: true
            }
        );
        assert_eq!(
            index(&[]),
            UcxAuto::Index {
                index: 0,
                matched: false
            }
        );
        // A type text UCX does not know stops it.
        let t = vec![entry(
            0,
            "::ffff:10.0.0.5",
            Some(Other("RoCE v3".into())),
            None,
        )];
        assert_eq!(
            index(&t),
            UcxAuto::Refused {
                index: 0,
                text: "RoCE v3".into()
            }
        );
    }

    #[test]
    fn ipv4_encoded_multicast_counts_as_ipv4() {
        let mc = entry(0, "ff0e::ffff:239.1.1.1", Some(GidType::RoceV2), None);
        assert!(ucx_ipv4(&mc));
        assert!(!ucx_ipv4(&entry(0, "fe80::1", None, None)));
        assert!(!ucx_ipv4(&entry(0, "::1", None, None)));
    }
}
