//! NCCL_IB_GID_INDEX and NCCL's own choice (NCCL_IB_ROCE_VERSION_NUM, NCCL_IB_ADDR_FAMILY,
//! NCCL_IB_ADDR_RANGE), as NCCL's `ncclIbGetGidIndex` makes it. The version boundary, read
//! in NCCL's tags: up to 2.20 NCCL_IB_GID_INDEX defaulted to 0 and NCCL used that fixed
//! index; 2.21.5 made the default -1 and added `ncclIbGetGidIndex` with
//! `ncclUpdateGidIndex` (src/transport/net_ib.cc; src/transport/net_ib/connect.cc in later
//! releases), which chooses by address family, range and RoCE version when the index is
//! negative.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::gid_index::{infiniband_index, judge_index};
use super::numbers::{c_strtoll, how_read, misread};
use super::{code_of, EnvTarget};
use crate::diagnose::gidselect::{select_gid, Family, Selection, Verdict, Want};
use crate::model::device::{GidEntry, GidType};
use crate::model::diagnostic::{Diagnostic, Seen, Severity};
use crate::model::gid::Gid;

/// The variables NCCL's own GID choice reads (NCCL 2.21+, RoCE, NCCL_IB_GID_INDEX unset
/// or negative), as NCCL reads them.
pub(super) struct NcclGidVars {
    /// NCCL_IB_GID_INDEX; None when unset, empty, or out of range.
    index: Option<i64>,
    /// NCCL_IB_ADDR_FAMILY: AF_INET unless the value is exactly `AF_INET6`.
    family: Family,
    /// NCCL_IB_ADDR_RANGE when it parses for `family`; else NCCL ignores it.
    range: Option<(IpAddr, i64)>,
    /// NCCL_IB_ROCE_VERSION_NUM, default 2.
    roce_version: i64,
}

impl NcclGidVars {
    pub(super) fn read(lookup: &impl Fn(&str) -> Option<String>) -> NcclGidVars {
        let number = |name: &str| {
            lookup(name)
                .filter(|v| !v.is_empty())
                .and_then(|v| c_strtoll(&v))
                .map(|n| n.value)
        };
        let family = match lookup("NCCL_IB_ADDR_FAMILY").as_deref() {
            Some("AF_INET6") => Family::V6,
            _ => Family::V4,
        };
        NcclGidVars {
            index: number("NCCL_IB_GID_INDEX"),
            family,
            range: lookup("NCCL_IB_ADDR_RANGE").and_then(|v| parse_addr_range(&v, family).ok()),
            roce_version: number("NCCL_IB_ROCE_VERSION_NUM").unwrap_or(2),
        }
    }

    /// Whether NCCL makes its own choice (else NCCL_IB_GID_INDEX names the index).
    fn choosing(&self) -> bool {
        self.index.map_or(true, |i| i < 0)
    }
}

/// NCCL_IB_ADDR_RANGE as NCCL's envIbAddrRange reads it: `ADDR/LEN`, ADDR of the
/// NCCL_IB_ADDR_FAMILY family, LEN read by strtol and at most 32 or 128. Err says why NCCL
/// ignores it.
fn parse_addr_range(text: &str, family: Family) -> Result<(IpAddr, i64), String> {
    let Some((addr, len)) = text.split_once('/') else {
        return Err(format!(
            "'{text}' has no '/': NCCL ignores a range without a prefix length"
        ));
    };
    let ip: IpAddr = match family {
        Family::V4 => addr.parse::<Ipv4Addr>().map(IpAddr::V4),
        Family::V6 => addr.parse::<Ipv6Addr>().map(IpAddr::V6),
    }
    .map_err(|_| {
        format!(
            "'{addr}' is not an {} address (NCCL_IB_ADDR_FAMILY is {}): NCCL ignores the range",
            family.name(),
            af_name(family)
        )
    })?;
    let len = c_strtoll(len)
        .filter(|n| n.base == 10 || n.value == 0)
        .map_or(0, |n| n.value);
    let max = if family == Family::V4 { 32 } else { 128 };
    if len > max {
        return Err(format!(
            "prefix length {len} is more than {max}: NCCL ignores the range"
        ));
    }
    Ok((ip, len))
}

fn af_name(family: Family) -> &'static str {
    match family {
        Family::V4 => "AF_INET",
        Family::V6 => "AF_INET6",
    }
}

/// NCCL's `getGidAddrFamily`: IPv4 for `::ffff:a.b.c.d` and its multicast form
/// `ff0e::ffff:a.b.c.d`, else IPv6.
fn nccl_family(gid: &Gid) -> Family {
    let b = &gid.0;
    let mapped = b[..10] == [0; 10] && b[10] == 0xff && b[11] == 0xff;
    let mapped_mc = b[..4] == [0xff, 0x0e, 0, 0] && b[4..10] == [0; 6] && b[10..12] == [0xff; 2];
    if mapped || mapped_mc {
        Family::V4
    } else {
        Family::V6
    }
}

/// NCCL's `validGid`: configured (not all zero, not a bare fe80::) and not link-local
/// (fe80::/64, the only link-local NCCL knows).
fn nccl_valid(gid: &Gid) -> bool {
    let b = &gid.0;
    let trailer_zero = b[4..] == [0; 12];
    let fe80 = b[..4] == [0xfe, 0x80, 0, 0];
    let configured = !trailer_zero || (b[..4] != [0; 4] && !fe80);
    let link_local = fe80 && b[4..8] == [0; 4];
    configured && !link_local
}

/// NCCL's `matchGidAddrPrefix`: no range matches everything; an IPv4 range compares the
/// GID's last 32 bits; a negative length matches nothing.
fn nccl_in_range(range: Option<(IpAddr, i64)>, gid: &Gid) -> bool {
    let Some((base, len)) = range else {
        return true;
    };
    if len < 0 {
        return false;
    }
    match base {
        IpAddr::V4(b) => {
            let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
            let last = u32::from_be_bytes([gid.0[12], gid.0[13], gid.0[14], gid.0[15]]);
            u32::from(b) & mask == last & mask
        }
        IpAddr::V6(b) => {
            let mask = if len == 0 {
                0
            } else {
                u128::MAX << (128 - len)
            };
            u128::from(b) & mask == u128::from_be_bytes(gid.0) & mask
        }
    }
}

/// The RoCE version NCCL reads from `gid_attrs/types/N`; -1 when unreadable.
fn nccl_version(t: Option<&GidType>) -> i64 {
    match t {
        Some(GidType::RoceV1 | GidType::Ib) => 1,
        Some(GidType::RoceV2) => 2,
        _ => -1,
    }
}

/// The index NCCL's `ncclIbGetGidIndex` (2.21+) takes: start at 0, walk every slot of the
/// table, and move to a candidate that is of the wanted family (and in the range) when the
/// current one is not, or that is valid and of the wanted RoCE version when the current
/// one is not.
fn nccl_choice(vars: &NcclGidVars, table: &[GidEntry], table_len: u32) -> u32 {
    let slot = |i: u32| -> (Gid, Option<&GidType>) {
        table
            .iter()
            .find(|e| e.index == i)
            .map_or((Gid::ZERO, None), |e| (e.gid, e.gid_type.as_ref()))
    };
    let len = table_len.max(table.iter().map(|e| e.index + 1).max().unwrap_or(0));
    let mut chosen = 0;
    for i in 1..len {
        let (gid, gid_type) = slot(chosen);
        let (cand, cand_type) = slot(i);
        let cand_family = nccl_family(&cand);
        let in_range = nccl_in_range(vars.range, &cand);
        if cand_family != nccl_family(&gid) && cand_family == vars.family && in_range {
            chosen = i;
        } else if cand_family == vars.family && nccl_valid(&cand) && in_range {
            let (v, cv) = (nccl_version(gid_type), nccl_version(cand_type));
            if (v != cv || !nccl_valid(&gid)) && cv == vars.roce_version {
                chosen = i;
            }
        }
    }
    chosen
}

/// rdmactl's ranking in NCCL_IB_ADDR_FAMILY's family when no peer decides the family.
fn selection_for(family: Family, target: &EnvTarget) -> Selection {
    if target.want.peer.is_some() || family == Family::V4 {
        return target.auto.clone();
    }
    let want = Want {
        family: Some(family),
        ..target.want.clone()
    };
    select_gid(target.table, target.link_layer, &want)
}

pub(super) fn check_nccl_gid_index(
    value: &str,
    vars: &NcclGidVars,
    target: &EnvTarget,
) -> Diagnostic {
    const NAME: &str = "NCCL_IB_GID_INDEX";
    let code = code_of(NAME);
    if value.is_empty() {
        return Diagnostic::finding(
            Severity::Info,
            code.clone(),
            format!("{NAME} is set but empty: NCCL ignores it"),
        );
    }
    let Some(n) = c_strtoll(value) else {
        return Diagnostic::finding(
            Severity::Warn,
            code.clone(),
            format!("{NAME}={value} is out of range: NCCL ignores it and keeps its default (-1: it chooses)"),
        )
        .fix(format!("unset {NAME}, or give a GID index"));
    };
    let how = how_read(value, &n);
    let sel = selection_for(vars.family, target);
    let index = (n.value >= 0).then(|| u32::try_from(n.value).unwrap_or(u32::MAX));
    let mut f = match index {
        _ if !target.ethernet() => {
            infiniband_index(NAME, &format!("{NAME}={value}"), index, target)
        }
        None => nccl_own_choice(
            &format!("with {NAME}={value}, NCCL 2.21+"),
            vars,
            &sel,
            target,
        ),
        Some(i) => judge_index(NAME, &format!("{NAME}={value}"), i, &sel, target),
    };
    f.evidence
        .insert(0, Seen::gathered(format!("{NAME}={value}")));
    if let Some(how) = how {
        f.evidence.insert(1, Seen::gathered(how));
        if misread(&n) {
            f.severity = f.severity.max(Severity::Warn);
        }
    }
    f
}

/// NCCL's own choice, judged like a given index; `subject` as for `judge_index`.
fn nccl_own_choice(
    subject: &str,
    vars: &NcclGidVars,
    sel: &Selection,
    target: &EnvTarget,
) -> Diagnostic {
    let index = nccl_choice(vars, target.table, target.table_len);
    let mut f = judge_index("NCCL_IB_GID_INDEX", subject, index, sel, target);
    // NCCL's pick being usable, if not rdmactl's first, is fine.
    if f.severity == Severity::Warn
        && sel
            .reason(index)
            .is_some_and(|r| r.verdict == Verdict::Usable)
    {
        f.severity = Severity::Ok;
        f.fix = None;
    }
    f.evidence.push(Seen::gathered(format!(
        "NCCL's choice: family {}, RoCE v{}{}; NCCL before 2.21 makes none (its default is index 0)",
        af_name(vars.family),
        vars.roce_version,
        vars.range
            .map(|(a, l)| format!(", range {a}/{l}"))
            .unwrap_or_default()
    )));
    f
}

/// NCCL_IB_ROCE_VERSION_NUM, NCCL_IB_ADDR_FAMILY, NCCL_IB_ADDR_RANGE: read only by NCCL's
/// own GID choice on RoCE.
pub(super) fn check_nccl_auto_var(
    name: &str,
    value: &str,
    vars: &NcclGidVars,
    target: &EnvTarget,
) -> Diagnostic {
    let code = code_of(name);
    let shown = format!("{name}={value}");
    if value.is_empty() {
        return Diagnostic::finding(
            Severity::Info,
            code.clone(),
            format!("{name} is set but empty: NCCL ignores it"),
        );
    }
    // What NCCL makes of the value, and a problem with it.
    let problem: Option<(Severity, String, String)> = match name {
        "NCCL_IB_ROCE_VERSION_NUM" => match c_strtoll(value) {
            None => Some((
                Severity::Warn,
                format!("{shown} is out of range: NCCL keeps RoCE v2"),
                format!("set {name}=2 or 1"),
            )),
            Some(n) if n.value != 1 && n.value != 2 => Some((
                Severity::Warn,
                format!("{shown} is RoCE version {}, which no GID has: NCCL's choice never moves to a GID for its version", n.value),
                format!("set {name}=2 (or 1 for RoCE v1)"),
            )),
            Some(n) if misread(&n) => Some((
                Severity::Warn,
                format!("{shown}: {}", how_read(value, &n).unwrap_or_default()),
                format!("set {name}={}", n.value),
            )),
            Some(_) => None,
        },
        "NCCL_IB_ADDR_FAMILY" => (value != "AF_INET" && value != "AF_INET6").then(|| {
            (
                Severity::Warn,
                format!("{shown} is neither AF_INET nor AF_INET6: NCCL ignores it without a word and uses AF_INET"),
                format!("set {name}=AF_INET or AF_INET6 (exactly)"),
            )
        }),
        _ => parse_addr_range(value, vars.family).err().map(|why| {
            (
                Severity::Warn,
                format!("{shown}: {why}"),
                format!(
                    "give ADDR/LEN in {} (NCCL_IB_ADDR_FAMILY), e.g. 10.0.0.0/8 or fd00::/64",
                    af_name(vars.family)
                ),
            )
        }),
    };
    if let Some((severity, message, fix)) = problem {
        return Diagnostic::finding(severity, code.clone(), message).fix(fix);
    }
    if !target.ethernet() {
        return Diagnostic::finding(
            Severity::Info,
            code.clone(),
            format!(
                "{shown} does not apply: NCCL reads it only to choose a RoCE GID, and {} is {}",
                target.name(),
                target.link_layer
            ),
        );
    }
    if !vars.choosing() {
        return Diagnostic::finding(
            Severity::Info,
            code.clone(),
            format!(
                "{shown} does not apply: NCCL_IB_GID_INDEX={} names the GID, so NCCL does not choose one",
                vars.index.unwrap_or_default()
            ),
        );
    }
    // Does any GID fit what the variable asks for? Else NCCL's choice falls back.
    let wanted = |e: &&GidEntry| match name {
        "NCCL_IB_ROCE_VERSION_NUM" => {
            nccl_family(&e.gid) == vars.family
                && nccl_valid(&e.gid)
                && nccl_version(e.gid_type.as_ref()) == vars.roce_version
        }
        "NCCL_IB_ADDR_FAMILY" => nccl_family(&e.gid) == vars.family && nccl_valid(&e.gid),
        _ => nccl_family(&e.gid) == vars.family && nccl_in_range(vars.range, &e.gid),
    };
    let fitting: Vec<&GidEntry> = target.table.iter().filter(wanted).collect();
    let sel = selection_for(vars.family, target);
    let mut f = nccl_own_choice(&format!("with {shown}, NCCL 2.21+"), vars, &sel, target);
    f.code = code.clone();
    f.evidence.insert(0, Seen::gathered(shown.clone()));
    if fitting.is_empty() {
        let what = match name {
            "NCCL_IB_ROCE_VERSION_NUM" => format!(
                "no {} GID of RoCE v{} that is not link-local",
                vars.family.name(),
                vars.roce_version
            ),
            "NCCL_IB_ADDR_FAMILY" => {
                format!("no {} GID that is not link-local", vars.family.name())
            }
            _ => format!("no {} GID in {}", vars.family.name(), value.trim()),
        };
        f.severity = f.severity.max(Severity::Warn);
        f.message = format!("{}: {} has {what}", f.message, target.name());
        if f.fix.is_none() {
            f.fix = Some(format!(
                "unset {name}, or give {} the address it asks for",
                target.name()
            ));
        }
    } else {
        f.evidence.push(Seen::gathered(format!(
            "indices that fit: {}",
            fitting
                .iter()
                .map(|e| e.index.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::gidselect::tests::{entry, mlx5, rxe0};

    /// NCCL's own choice (ncclIbGetGidIndex) on the tables NCCL users have.
    #[test]
    fn nccl_chooses_as_nccl_does() {
        let vars = |family, range: Option<&str>, version| NcclGidVars {
            index: None,
            family,
            range: range.map(|r| parse_addr_range(r, family).unwrap()),
            roce_version: version,
        };
        let choose = |table: &[GidEntry], len: u32, v: &NcclGidVars| nccl_choice(v, table, len);
        // mlx5: v1/v2 of link-local, IPv4, IPv6 global, VLAN IPv4.
        assert_eq!(choose(&mlx5(), 256, &vars(Family::V4, None, 2)), 3);
        assert_eq!(choose(&mlx5(), 256, &vars(Family::V4, None, 1)), 2);
        assert_eq!(choose(&mlx5(), 256, &vars(Family::V6, None, 2)), 5);
        assert_eq!(
            choose(&mlx5(), 256, &vars(Family::V4, Some("10.100.0.0/16"), 2)),
            7
        );
        // rxe: v2 only; asking for v1 stays on the first IPv4 GID.
        assert_eq!(choose(&rxe0(), 2, &vars(Family::V4, None, 1)), 1);
        // A pod's slots 0-3 are empty: NCCL walks them and lands on 7.
        let pod: Vec<GidEntry> = mlx5()
            .into_iter()
            .filter(|e| e.index < 4)
            .map(|e| GidEntry {
                index: e.index + 4,
                ..e
            })
            .collect();
        assert_eq!(choose(&pod, 256, &vars(Family::V4, None, 2)), 7);
        // No IPv4 at all: NCCL stays at index 0.
        let v6 = vec![entry(0, "fe80::1", Some(GidType::RoceV2), Some("eth0"))];
        assert_eq!(choose(&v6, 2, &vars(Family::V4, None, 2)), 0);
    }

    #[test]
    fn addr_ranges_as_nccl_reads_them() {
        assert!(parse_addr_range("10.0.0.0/8", Family::V4).is_ok());
        assert!(parse_addr_range("fd00::/64", Family::V6).is_ok());
        let no = |t: &str, f| parse_addr_range(t, f).unwrap_err();
        assert!(no("10.0.0.0", Family::V4).contains("no '/'"));
        assert!(no("fd00::/64", Family::V4).contains("not an IPv4 address"));
        assert!(no("10.0.0.0/33", Family::V4).contains("more than 32"));
        let gid = |t: &str| Gid::parse(t).unwrap();
        let r = parse_addr_range("10.100.0.0/16", Family::V4).ok();
        assert!(nccl_in_range(r, &gid("::ffff:10.100.0.5")));
        assert!(!nccl_in_range(r, &gid("::ffff:10.0.0.5")));
        assert!(nccl_in_range(None, &gid("::ffff:10.0.0.5")));
    }
}
