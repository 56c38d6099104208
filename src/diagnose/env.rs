//! The environment variables that decide which device, port and GID an NCCL or UCX job
//! uses, checked the way the libraries read them, against this host's port (`check
//! --env`).
//!
//! Each variable is parsed as its library parses it, not as a person would: NCCL reads its
//! numbers with `strtoll(s, NULL, 0)` (so `0x1` is 1, `010` is 8, trailing text is ignored
//! and no digits at all is 0), UCX with `sscanf("%lu")`; NCCL's lists take `^` (exclude)
//! and `=` (exact names) once at the start; UCX's take `^` and `all`. Where a library
//! silently ignores a value, the finding says so.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::diagnose::gidselect::{
    describe, is_link_local, select_gid, suggestion, Family, Selection, Verdict, Want,
};
use crate::model::device::{GidEntry, GidType, LinkLayer};
use crate::model::diagnostic::{Finding, Severity};
use crate::model::gid::Gid;

/// Every variable `--env` checks, in the order it reports them.
pub const VARIABLES: &[&str] = &[
    "NCCL_IB_HCA",
    "NCCL_IB_GID_INDEX",
    "NCCL_IB_ROCE_VERSION_NUM",
    "NCCL_IB_ADDR_FAMILY",
    "NCCL_IB_ADDR_RANGE",
    "NCCL_SOCKET_IFNAME",
    "UCX_NET_DEVICES",
    "UCX_IB_GID_INDEX",
];

/// An NCCL interface list (`NCCL_IB_HCA`, `NCCL_SOCKET_IFNAME`):
/// `[^][=]name[:port][,name[:port]...]`. `^` excludes, `=` asks for exact names instead of
/// prefixes; both apply to the whole list. An empty list matches everything (NCCL's
/// `matchIfList`), so `^` alone excludes everything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HcaFilter {
    pub exclude: bool,
    pub exact: bool,
    pub entries: Vec<(String, Option<u32>)>,
}

impl HcaFilter {
    pub fn parse(text: &str) -> Result<HcaFilter, String> {
        let mut rest = text.trim();
        let exclude = rest.starts_with('^');
        if exclude {
            rest = &rest[1..];
        }
        let exact = rest.starts_with('=');
        if exact {
            rest = &rest[1..];
        }
        let mut entries = Vec::new();
        for item in rest.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (name, port) = match item.split_once(':') {
                Some((n, p)) => {
                    // NCCL reads the port with atoi: anything else is port 0, which no
                    // port has, so the entry would match nothing.
                    let port = p.parse::<u32>().ok().filter(|p| *p > 0).ok_or_else(|| {
                        format!("'{item}': '{p}' is not a port number (ports count from 1; NCCL reads it as {}, which matches no port)", c_atoi(p))
                    })?;
                    (n, Some(port))
                }
                None => (item, None),
            };
            if name.is_empty() || name.contains(['^', '=']) {
                return Err(format!(
                    "'{item}' is not a device name; '^' and '=' go once at the start of the whole list (e.g. ^=mlx5_1,mlx5_4)"
                ));
            }
            entries.push((name.to_string(), port));
        }
        Ok(HcaFilter {
            exclude,
            exact,
            entries,
        })
    }

    fn names(&self, name: &str, entry: &str) -> bool {
        if self.exact {
            name == entry
        } else {
            name.starts_with(entry)
        }
    }

    /// Whether NCCL would use interface `name` (NCCL_SOCKET_IFNAME: no ports).
    pub fn selects_name(&self, name: &str) -> bool {
        let listed = self.entries.is_empty()
            || self
                .entries
                .iter()
                .any(|(entry, _)| self.names(name, entry));
        listed != self.exclude
    }

    /// Whether NCCL would use `device`/`port` under this filter.
    pub fn selects(&self, device: &str, port: u32) -> bool {
        let listed = self.entries.is_empty()
            || self
                .entries
                .iter()
                .any(|(name, p)| self.names(device, name) && p.map_or(true, |p| p == port));
        listed != self.exclude
    }

    /// The entries that name nothing in `names`.
    fn unknown<'n>(&'n self, names: &[String]) -> Vec<&'n str> {
        self.entries
            .iter()
            .map(|(n, _)| n.as_str())
            .filter(|n| !names.iter().any(|d| self.names(d, n)))
            .collect()
    }
}

/// What `--env` checks against: this host's port, its GID table, the automatic choice,
/// and the names the lists may use.
pub struct EnvTarget<'a> {
    pub device: &'a str,
    pub port: u32,
    pub link_layer: &'a LinkLayer,
    /// The port's populated GIDs.
    pub table: &'a [GidEntry],
    /// The port's GID table length, empty slots included: NCCL walks every slot.
    pub table_len: u32,
    pub auto: &'a Selection,
    /// What `auto` was asked (the peer, its route): asked again with NCCL_IB_ADDR_FAMILY's
    /// family when no peer says which.
    pub want: &'a Want,
    /// Every RDMA device on the host, for NCCL_IB_HCA.
    pub devices: &'a [String],
    /// Every RDMA port on the host: UCX_NET_DEVICES names them `DEV:PORT`.
    pub ports: &'a [(String, u32)],
    /// Every netdev (`class/net`) with its operstate: NCCL_SOCKET_IFNAME, and
    /// UCX_NET_DEVICES' TCP entries.
    pub netdevs: &'a [(String, Option<String>)],
}

impl EnvTarget<'_> {
    fn name(&self) -> String {
        format!("{}/{}", self.device, self.port)
    }

    fn ethernet(&self) -> bool {
        *self.link_layer == LinkLayer::Ethernet
    }
}

/// Check every variable in `VARIABLES` that is set. `lookup` reads a variable
/// (std::env::var in production, a table in tests). Unset variables give no finding.
pub fn validate_env(lookup: impl Fn(&str) -> Option<String>, target: &EnvTarget) -> Vec<Finding> {
    let nccl = NcclGidVars::read(&lookup);
    let mut findings = Vec::new();
    for name in VARIABLES {
        let Some(value) = lookup(name) else { continue };
        findings.push(match *name {
            "NCCL_IB_HCA" => check_hca(&value, target),
            "NCCL_IB_GID_INDEX" => check_nccl_gid_index(&value, &nccl, target),
            "NCCL_IB_ROCE_VERSION_NUM" | "NCCL_IB_ADDR_FAMILY" | "NCCL_IB_ADDR_RANGE" => {
                check_nccl_auto_var(name, &value, &nccl, target)
            }
            "NCCL_SOCKET_IFNAME" => check_socket_ifname(&value, target),
            "UCX_NET_DEVICES" => check_ucx_net_devices(&value, target),
            "UCX_IB_GID_INDEX" => check_ucx_gid_index(&value, target),
            _ => unreachable!("every listed variable has a check"),
        });
    }
    findings
}

fn code_of(name: &str) -> String {
    format!("env-{}", name.to_lowercase().replace('_', "-"))
}

// ---------------------------------------------------------------------------------------
// Numbers as the libraries read them

/// What C's `strtoll(s, NULL, 0)` makes of `s`: leading white space skipped, a sign, then
/// `0x` hex, `0` octal or decimal digits; whatever follows is ignored, and no digits at
/// all is 0. None when it overflows (ERANGE: NCCL then keeps its default).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CNumber {
    pub value: i64,
    /// The text after the number (ignored by NCCL).
    pub rest: String,
    /// Whether any digit was read (`three` reads as 0 with no digit).
    pub digits: bool,
    /// 16 for `0x..`, 8 for a leading 0 followed by digits, else 10.
    pub base: u32,
}

pub fn c_strtoll(s: &str) -> Option<CNumber> {
    let t = s.trim_start_matches([' ', '\t', '\n', '\x0b', '\x0c', '\r']);
    let (negative, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let hex_digits = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .filter(|r| r.starts_with(|c: char| c.is_ascii_hexdigit()));
    let (base, body) = match hex_digits {
        Some(r) => (16, r),
        None if t.starts_with('0') => (8, t),
        None => (10, t),
    };
    let len = body.find(|c: char| !c.is_digit(base)).unwrap_or(body.len());
    let digits = &body[..len];
    let mut value: i128 = 0;
    for c in digits.chars() {
        value = value * i128::from(base) + i128::from(c.to_digit(base)?);
        if value > i128::from(i64::MAX) + 1 {
            return None;
        }
    }
    let value = if negative { -value } else { value };
    let value = i64::try_from(value).ok()?;
    Some(CNumber {
        value,
        rest: body[len..].to_string(),
        digits: !digits.is_empty(),
        base: if base == 8 && len <= 1 { 10 } else { base },
    })
}

/// C's `atoi` for messages: white space, a sign, decimal digits; 0 without any.
fn c_atoi(s: &str) -> i64 {
    let t = s.trim_start();
    let (sign, t) = match t.as_bytes().first() {
        Some(b'-') => (-1, &t[1..]),
        Some(b'+') => (1, &t[1..]),
        _ => (1, t),
    };
    let len = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    sign * t[..len].parse::<i64>().unwrap_or(0)
}

/// What UCX's `sscanf(s, "%lu")` makes of `s`: white space, a sign, decimal digits, the
/// rest ignored; a negative number wraps around. None when there is no digit (UCX then
/// refuses the value).
pub fn c_sscanf_lu(s: &str) -> Option<(u64, String)> {
    let t = s.trim_start();
    let (negative, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let len = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    if len == 0 {
        return None;
    }
    // strtoul saturates at ULONG_MAX on overflow.
    let value = t[..len].parse::<u64>().unwrap_or(u64::MAX);
    let value = if negative {
        value.wrapping_neg()
    } else {
        value
    };
    Some((value, t[len..].to_string()))
}

/// How NCCL read a number, for the evidence: nothing when it is the plain decimal text.
fn how_read(text: &str, n: &CNumber) -> Option<String> {
    let plain = text.trim() == n.value.to_string();
    if plain {
        return None;
    }
    Some(if !n.digits {
        format!("NCCL reads it with strtoll(s, NULL, 0): '{text}' has no digits, which is 0")
    } else if !n.rest.trim().is_empty() {
        format!(
            "NCCL reads it with strtoll(s, NULL, 0): the number is {} and '{}' after it is ignored",
            n.value,
            n.rest.trim()
        )
    } else if n.base == 8 {
        format!(
            "NCCL reads it with strtoll(s, NULL, 0): a leading 0 is octal, so '{}' is {}",
            text.trim(),
            n.value
        )
    } else {
        format!(
            "NCCL reads it with strtoll(s, NULL, 0): '{}' is {}",
            text.trim(),
            n.value
        )
    })
}

/// A text NCCL read as a number, but surely not as the person meant: no digits, text after
/// the number, or an octal leading 0.
fn misread(n: &CNumber) -> bool {
    !n.digits || !n.rest.trim().is_empty() || n.base == 8
}

// ---------------------------------------------------------------------------------------
// Judging one GID index

/// How GID `index` of the port fares toward the peer (or, without one, in general), as a
/// finding for variable `name`. `subject` leads the message: `NCCL_IB_GID_INDEX=3` or
/// `with NCCL_IB_GID_INDEX=-1, NCCL 2.21+`, followed by "selects ...".
fn judge_index(
    name: &str,
    subject: &str,
    index: u32,
    sel: &Selection,
    target: &EnvTarget,
) -> Finding {
    let code = code_of(name);
    let Some(entry) = target
        .table
        .iter()
        .find(|e| e.index == index && !e.gid.is_zero())
    else {
        return Finding::new(
            Severity::Fail,
            &code,
            format!(
                "{subject} names GID index {index}, which {} does not have",
                target.name()
            ),
        )
        .evidence(format!("populated indices: {}", populated(target)))
        .fix(fix_to(name, sel, target));
    };
    if sel.chosen == Some(index) {
        let mut f = Finding::new(
            Severity::Ok,
            &code,
            format!("{subject} selects {}", describe(entry)),
        );
        if let Some(r) = sel.reason(index) {
            f = f.evidence(r.why.clone());
        }
        return f;
    }
    let reason = sel.reason(index);
    let rejected = reason.is_some_and(|r| r.verdict == Verdict::Rejected);
    // Without a peer, a rejection is the default family's (IPv4, as perftest and NCCL)
    // or link-local's: right for some peers, so a warning; a peer makes it certain.
    let severity = if rejected && target.want.peer.is_some() {
        Severity::Fail
    } else {
        Severity::Warn
    };
    let mut f = Finding::new(
        severity,
        &code,
        format!("{subject} selects {}", describe(entry)),
    );
    if let Some(r) = reason {
        f = f.evidence(format!("index {index}: {}", r.why));
    }
    if target.ethernet() && is_link_local(&entry.gid) {
        f = f.evidence("a link-local GID works only within one L2 segment, toward peers that use a link-local GID too");
    }
    f.fix(fix_to(name, sel, target))
}

fn populated(target: &EnvTarget) -> String {
    target
        .table
        .iter()
        .filter(|e| !e.gid.is_zero())
        .map(|e| e.index.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn fix_to(name: &str, sel: &Selection, target: &EnvTarget) -> String {
    match (suggestion(target.table, sel), sel.chosen) {
        (Some(s), Some(i)) => format!("set {name}={i}: {s}"),
        _ => "no GID on this port qualifies; check the port's addresses (rdmactl gids)".into(),
    }
}

/// On InfiniBand both libraries address a peer in the subnet by its LID; a GID is used
/// only for routed (global) traffic, and recent NCCL picks that one itself.
fn infiniband_index(name: &str, prefix: &str, index: Option<u32>, target: &EnvTarget) -> Finding {
    let code = code_of(name);
    let why = "on InfiniBand peers in one subnet are addressed by LID: the GID index matters only for routed (global) traffic";
    let Some(index) = index else {
        return Finding::new(
            Severity::Ok,
            &code,
            format!("{prefix} lets the library choose; {why}"),
        );
    };
    let entry = target
        .table
        .iter()
        .find(|e| e.index == index && !e.gid.is_zero());
    match entry {
        Some(e) => Finding::new(
            Severity::Ok,
            &code,
            format!("{prefix} names {}; {why}", describe(e)),
        ),
        None => Finding::new(
            Severity::Warn,
            &code,
            format!(
                "{prefix}, but {} has no GID at index {index}; {why}",
                target.name()
            ),
        )
        .evidence(format!("populated indices: {}", populated(target)))
        .fix(format!("unset {name}, or give an index that exists")),
    }
    .evidence(if name.starts_with("NCCL") {
        "NCCL 2.21 and later ignore NCCL_IB_GID_INDEX on InfiniBand: they take index 0, or NCCL_IB_ROUTABLE_FLID_GID_INDEX when that GID carries a FLID"
    } else {
        "UCX uses the GID only when the path is global (UCX_IB_IS_GLOBAL, or a routed subnet)"
    })
}

// ---------------------------------------------------------------------------------------
// NCCL_IB_GID_INDEX and NCCL's own choice

/// The variables NCCL's own GID choice reads (NCCL 2.21+, RoCE, NCCL_IB_GID_INDEX unset
/// or negative), as NCCL reads them.
struct NcclGidVars {
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
    fn read(lookup: &impl Fn(&str) -> Option<String>) -> NcclGidVars {
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

/// The index NCCL's `ncclIbRoceGetGidIndex` takes: start at 0, walk every slot of the
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

fn check_nccl_gid_index(value: &str, vars: &NcclGidVars, target: &EnvTarget) -> Finding {
    const NAME: &str = "NCCL_IB_GID_INDEX";
    let code = code_of(NAME);
    if value.is_empty() {
        return Finding::new(
            Severity::Info,
            &code,
            format!("{NAME} is set but empty: NCCL ignores it"),
        );
    }
    let Some(n) = c_strtoll(value) else {
        return Finding::new(
            Severity::Warn,
            &code,
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
    f.evidence.insert(0, format!("{NAME}={value}"));
    if let Some(how) = how {
        f.evidence.insert(1, how);
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
) -> Finding {
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
    f.evidence.push(format!(
        "NCCL's choice: family {}, RoCE v{}{}; NCCL before 2.21 makes none (its default is index 0)",
        af_name(vars.family),
        vars.roce_version,
        vars.range
            .map(|(a, l)| format!(", range {a}/{l}"))
            .unwrap_or_default()
    ));
    f
}

/// NCCL_IB_ROCE_VERSION_NUM, NCCL_IB_ADDR_FAMILY, NCCL_IB_ADDR_RANGE: read only by NCCL's
/// own GID choice on RoCE.
fn check_nccl_auto_var(name: &str, value: &str, vars: &NcclGidVars, target: &EnvTarget) -> Finding {
    let code = code_of(name);
    let shown = format!("{name}={value}");
    if value.is_empty() {
        return Finding::new(
            Severity::Info,
            &code,
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
        return Finding::new(severity, &code, message).fix(fix);
    }
    if !target.ethernet() {
        return Finding::new(
            Severity::Info,
            &code,
            format!(
                "{shown} does not apply: NCCL reads it only to choose a RoCE GID, and {} is {}",
                target.name(),
                target.link_layer
            ),
        );
    }
    if !vars.choosing() {
        return Finding::new(
            Severity::Info,
            &code,
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
    f.evidence.insert(0, shown.clone());
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
        f.evidence.push(format!(
            "indices that fit: {}",
            fitting
                .iter()
                .map(|e| e.index.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    f
}

// ---------------------------------------------------------------------------------------
// UCX_IB_GID_INDEX

fn check_ucx_gid_index(value: &str, target: &EnvTarget) -> Finding {
    const NAME: &str = "UCX_IB_GID_INDEX";
    let code = code_of(NAME);
    let shown = format!("{NAME}={value}");
    if value.eq_ignore_ascii_case("auto") {
        let mut f = Finding::new(Severity::Ok, &code, format!("{shown} lets UCX choose"));
        if let Some(s) = suggestion(target.table, target.auto) {
            f = f.evidence(format!("rdmactl's own choice: {s}"));
        }
        return f;
    }
    let Some((index, rest)) = c_sscanf_lu(value) else {
        return Finding::new(
            Severity::Fail,
            &code,
            format!("{shown} is neither a number nor 'auto': UCX refuses it and does not start"),
        )
        .fix(
            match (suggestion(target.table, target.auto), target.auto.chosen) {
                (Some(s), Some(i)) => format!("unset it (auto), or set {NAME}={i}: {s}"),
                _ => format!("unset {NAME} (auto)"),
            },
        );
    };
    let index32 = u32::try_from(index).unwrap_or(u32::MAX);
    let mut f = if target.ethernet() {
        judge_index(NAME, &shown, index32, target.auto, target)
    } else {
        infiniband_index(NAME, &shown, Some(index32), target)
    };
    f.evidence.insert(0, shown.clone());
    if !rest.trim().is_empty() || value.trim() != index.to_string() {
        f.evidence.insert(
            1,
            format!(
                "UCX reads it with sscanf(\"%lu\"): '{}' is {index}",
                value.trim()
            ),
        );
        f.severity = f.severity.max(Severity::Warn);
    }
    f
}

// ---------------------------------------------------------------------------------------
// NCCL_IB_HCA, NCCL_SOCKET_IFNAME, UCX_NET_DEVICES

fn check_hca(value: &str, target: &EnvTarget) -> Finding {
    let code = "env-nccl-ib-hca";
    let evidence = vec![
        format!("NCCL_IB_HCA={value}"),
        format!("devices: {}", target.devices.join(", ")),
    ];
    let filter = match HcaFilter::parse(value) {
        Ok(f) => f,
        Err(why) => {
            let mut f = Finding::new(
                Severity::Fail,
                code,
                format!("NCCL_IB_HCA={value} does not parse: {why}"),
            );
            f.evidence = evidence;
            f.fix = Some(format!(
                "e.g. NCCL_IB_HCA={}:{}",
                target.device, target.port
            ));
            return f;
        }
    };
    if filter.entries.is_empty() && !filter.exclude {
        let mut f = Finding::new(
            Severity::Info,
            code,
            format!("NCCL_IB_HCA='{value}' names no device: NCCL uses every device"),
        );
        f.evidence = evidence;
        return f;
    }
    let selected: Vec<&String> = target
        .devices
        .iter()
        .filter(|d| filter.selects(d, target.port))
        .collect();
    let unknown = filter.unknown(target.devices);
    let mut f = if selected.is_empty() {
        let mut f = Finding::new(
            Severity::Fail,
            code,
            format!("NCCL_IB_HCA={value} selects no device on this host"),
        );
        f.fix = Some(format!(
            "name an existing device, e.g. NCCL_IB_HCA={}:{}",
            target.device, target.port
        ));
        f
    } else if !filter.selects(target.device, target.port) {
        let mut f = Finding::new(
            Severity::Warn,
            code,
            format!(
                "NCCL_IB_HCA={value} leaves out {}/{} (the port checked here)",
                target.device, target.port
            ),
        );
        f.fix = Some(format!(
            "add {}:{} if NCCL should use it",
            target.device, target.port
        ));
        f
    } else {
        Finding::new(
            Severity::Ok,
            code,
            format!(
                "NCCL_IB_HCA={value} selects {} (port {})",
                selected
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                target.port
            ),
        )
    };
    f.evidence = evidence;
    if filter.exclude {
        f.evidence
            .push("'^': the list names the devices NCCL must not use".into());
    }
    if !unknown.is_empty() && f.severity != Severity::Fail {
        f.severity = Severity::Warn;
        f.evidence
            .push(format!("no device matches {}", unknown.join(", ")));
        if !filter.exact && !filter.exclude {
            f.evidence
                .push("entries match as prefixes unless the list starts with '='".into());
        }
    }
    f
}

fn check_socket_ifname(value: &str, target: &EnvTarget) -> Finding {
    const NAME: &str = "NCCL_SOCKET_IFNAME";
    let code = code_of(NAME);
    let names: Vec<String> = target.netdevs.iter().map(|(n, _)| n.clone()).collect();
    let shown = format!("{NAME}={value}");
    let filter = match HcaFilter::parse(value) {
        Ok(f) => f,
        Err(why) => {
            return Finding::new(
                Severity::Fail,
                &code,
                format!("{shown} does not parse: {why}"),
            )
            .evidence(format!("netdevs: {}", names.join(", ")))
            .fix(format!("e.g. {NAME}=eth0, or {NAME}=^docker,lo"));
        }
    };
    if filter.entries.is_empty() && !filter.exclude {
        return Finding::new(
            Severity::Info,
            &code,
            format!("{NAME}='{value}' names no interface: NCCL picks one itself"),
        );
    }
    let chosen: Vec<&(String, Option<String>)> = target
        .netdevs
        .iter()
        .filter(|(n, _)| filter.selects_name(n))
        .collect();
    let unknown = filter.unknown(&names);
    let mut f = if chosen.is_empty() {
        Finding::new(
            Severity::Fail,
            &code,
            format!("{shown} matches no netdev here: NCCL finds no interface for its bootstrap and socket traffic, and fails to start"),
        )
        .fix(format!("name one of: {}", names.join(", ")))
    } else if chosen.iter().all(|(_, state)| {
        matches!(
            state.as_deref(),
            Some("down" | "lowerlayerdown" | "notpresent")
        )
    }) {
        Finding::new(
            Severity::Warn,
            &code,
            format!(
                "{shown} matches only interfaces that are down: {}",
                chosen
                    .iter()
                    .map(|(n, _)| n.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
        .fix("bring one up (ip link set IF up), or name one that is up")
    } else {
        Finding::new(
            Severity::Ok,
            &code,
            format!(
                "{shown} matches {}",
                chosen
                    .iter()
                    .map(|(n, _)| n.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
        .evidence("NCCL uses the first of them that has an address")
    };
    f.evidence
        .insert(0, format!("netdevs: {}", names.join(", ")));
    if !unknown.is_empty() && f.severity != Severity::Fail {
        f.severity = f.severity.max(Severity::Warn);
        f = f.evidence(format!("no netdev matches {}", unknown.join(", ")));
    }
    f
}

fn check_ucx_net_devices(value: &str, target: &EnvTarget) -> Finding {
    const NAME: &str = "UCX_NET_DEVICES";
    let code = code_of(NAME);
    let shown = format!("{NAME}={value}");
    let here = format!("{}:{}", target.device, target.port);
    let rdma: Vec<String> = target
        .ports
        .iter()
        .map(|(d, p)| format!("{d}:{p}"))
        .collect();
    let known = format!(
        "RDMA ports: {}; netdevs: {}",
        rdma.join(", "),
        target
            .netdevs
            .iter()
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let (negate, list) = match value.strip_prefix('^') {
        Some(rest) => (true, rest),
        None => (false, value),
    };
    let entries: Vec<&str> = list.split(',').filter(|s| !s.is_empty()).collect();
    if !negate && entries == ["all"] {
        return Finding::new(
            Severity::Ok,
            &code,
            format!("{shown}: UCX may use every device"),
        );
    }
    if entries.contains(&"all") {
        return Finding::new(
            Severity::Fail,
            &code,
            format!("{shown}: 'all' must stand alone (and without '^'); UCX refuses the value"),
        )
        .fix(format!("{NAME}=all, or a list such as {NAME}={here}"));
    }
    let mut unknown = Vec::new();
    let mut bare = Vec::new();
    let mut ports_named = Vec::new();
    for e in &entries {
        if rdma.iter().any(|r| r == e) {
            ports_named.push(e.to_string());
        } else if target.netdevs.iter().any(|(n, _)| n == e) {
            // A netdev: UCX's TCP transport, not RDMA.
        } else if target.devices.iter().any(|d| d == e) {
            bare.push(e.to_string());
        } else {
            unknown.push(e.to_string());
        }
    }
    let includes_here = ports_named.contains(&here) != negate;
    let mut f = if entries.is_empty() && !negate {
        Finding::new(
            Severity::Fail,
            &code,
            format!("{NAME} is set but empty: UCX allows no network device"),
        )
        .fix(format!("unset it, or {NAME}={here}"))
    } else if !negate && ports_named.is_empty() && entries.len() == unknown.len() + bare.len() {
        Finding::new(
            Severity::Fail,
            &code,
            format!("{shown} names no device on this host: UCX warns that each is not available and has no network device left"),
        )
        .fix(format!("name a port as UCX does, DEV:PORT: {NAME}={here}"))
    } else if !includes_here {
        Finding::new(
            Severity::Warn,
            &code,
            format!("{shown} leaves out {here} (the port checked here)"),
        )
        .fix(format!("add {here} if UCX should use it"))
    } else {
        Finding::new(Severity::Ok, &code, format!("{shown} lets UCX use {here}"))
    };
    f = f.evidence(known);
    if !bare.is_empty() {
        f.severity = f.severity.max(Severity::Warn);
        f = f.evidence(format!(
            "{}: UCX names an RDMA device by port, DEV:PORT (e.g. {}:1); a bare device name matches nothing",
            bare.join(", "),
            bare[0]
        ));
    }
    if !unknown.is_empty() {
        f.severity = f.severity.max(Severity::Warn);
        f = f.evidence(format!(
            "not on this host: {} (UCX warns and skips it)",
            unknown.join(", ")
        ));
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::gidselect::tests::{entry, mlx5, rxe0};

    #[test]
    fn hca_filter_syntax() {
        let cases: &[(&str, &str, u32, Option<bool>)] = &[
            ("mlx5", "mlx5_0", 1, Some(true)),
            ("mlx5", "mlx5_10", 2, Some(true)),
            ("=mlx5_1", "mlx5_10", 1, Some(false)),
            ("=mlx5_1", "mlx5_1", 1, Some(true)),
            ("mlx5_0:1,mlx5_1:1", "mlx5_1", 2, Some(false)),
            ("mlx5_0:1,mlx5_1:1", "mlx5_1", 1, Some(true)),
            ("^mlx5_1", "mlx5_1", 1, Some(false)),
            ("^mlx5_1", "mlx5_0", 1, Some(true)),
            ("^=mlx5_1", "mlx5_10", 1, Some(true)),
            ("^=mlx5_1:2", "mlx5_1", 1, Some(true)),
            ("mlx5_0:x", "mlx5_0", 1, None),
            ("mlx5_0:0", "mlx5_0", 1, None),
            ("mlx5_0,^mlx5_1", "mlx5_0", 1, None),
            // NCCL's matchIfList: an empty list matches every device, so `^` alone none.
            ("", "mlx5_0", 1, Some(true)),
            ("^", "mlx5_0", 1, Some(false)),
        ];
        for (text, dev, port, want) in cases {
            let got = HcaFilter::parse(text).ok().map(|f| f.selects(dev, *port));
            assert_eq!(got, *want, "{text} {dev}:{port}");
        }
    }

    #[test]
    fn numbers_as_strtoll_and_sscanf_read_them() {
        let n = |s: &str| c_strtoll(s).map(|n| (n.value, n.rest, n.digits, n.base));
        assert_eq!(n("3"), Some((3, String::new(), true, 10)));
        assert_eq!(n("0x1"), Some((1, String::new(), true, 16)));
        assert_eq!(n("0X1f"), Some((31, String::new(), true, 16)));
        assert_eq!(n("010"), Some((8, String::new(), true, 8)));
        assert_eq!(n("08"), Some((0, "8".into(), true, 10)));
        assert_eq!(n("0"), Some((0, String::new(), true, 10)));
        assert_eq!(n("  -1"), Some((-1, String::new(), true, 10)));
        assert_eq!(n("3abc"), Some((3, "abc".into(), true, 10)));
        assert_eq!(n("three"), Some((0, "three".into(), false, 10)));
        assert_eq!(n("0x"), Some((0, "x".into(), true, 10)));
        assert_eq!(n("99999999999999999999"), None);
        assert_eq!(c_atoi("x"), 0);
        assert_eq!(c_atoi("010"), 10);
        assert_eq!(c_sscanf_lu("3"), Some((3, String::new())));
        assert_eq!(c_sscanf_lu("0x1"), Some((0, "x1".into())));
        assert_eq!(c_sscanf_lu("-1"), Some((u64::MAX, String::new())));
        assert_eq!(c_sscanf_lu("auto3"), None);
    }

    /// NCCL's own choice (ncclIbRoceGetGidIndex) on the tables NCCL users have.
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

    type Vars = &'static [(&'static str, &'static str)];

    /// Runs `validate_env` on rxe0 (toward `peer`, or no peer) with `vars` set.
    fn run_on(
        table: &[GidEntry],
        link_layer: LinkLayer,
        peer: Option<&str>,
        vars: &[(&str, &str)],
    ) -> Vec<Finding> {
        let want = Want {
            peer: peer.map(|p| p.parse().unwrap()),
            route_netdev: peer.map(|_| "veth0".into()),
            peer_on_link: peer.map(|_| true),
            ..Want::default()
        };
        let auto = select_gid(table, &link_layer, &want);
        let devices = vec!["rxe0".to_string(), "rxe1".to_string()];
        let ports = vec![("rxe0".to_string(), 1), ("rxe1".to_string(), 1)];
        let netdevs = vec![
            ("eth0".to_string(), Some("up".to_string())),
            ("lo".to_string(), Some("unknown".to_string())),
            ("veth0".to_string(), Some("up".to_string())),
            ("veth1".to_string(), Some("down".to_string())),
        ];
        let target = EnvTarget {
            device: "rxe0",
            port: 1,
            link_layer: &link_layer,
            table,
            table_len: 2,
            auto: &auto,
            want: &want,
            devices: &devices,
            ports: &ports,
            netdevs: &netdevs,
        };
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        validate_env(
            |k| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()),
            &target,
        )
    }

    fn check_cases(
        table: &[GidEntry],
        link_layer: LinkLayer,
        peer: Option<&str>,
        cases: &[(Vars, Severity, &str)],
    ) {
        for (vars, severity, text) in cases {
            let findings = run_on(table, link_layer.clone(), peer, vars);
            assert_eq!(findings.len(), vars.len(), "{vars:?}");
            // The finding of the last variable given.
            let code = code_of(vars.last().unwrap().0);
            let f = findings.iter().find(|f| f.code == code).unwrap();
            let all = format!(
                "{} {} {}",
                f.message,
                f.evidence.join(" "),
                f.fix.clone().unwrap_or_default()
            );
            assert_eq!(f.severity, *severity, "{vars:?} {peer:?}: {all}");
            assert!(all.contains(text), "{vars:?} {peer:?}: {all}");
        }
    }

    #[test]
    fn gid_index_variables_toward_a_peer() {
        let peer = Some("192.168.77.2");
        check_cases(
            &rxe0(),
            LinkLayer::Ethernet,
            peer,
            &[
                (
                    &[("NCCL_IB_GID_INDEX", "0")],
                    Severity::Fail,
                    "set NCCL_IB_GID_INDEX=1",
                ),
                (&[("NCCL_IB_GID_INDEX", "1")], Severity::Ok, "GID index 1"),
                // strtoll(s, NULL, 0): hex is a number to NCCL.
                (&[("NCCL_IB_GID_INDEX", "0x1")], Severity::Ok, "'0x1' is 1"),
                (
                    &[("NCCL_IB_GID_INDEX", "-1")],
                    Severity::Ok,
                    "NCCL 2.21+ selects GID index 1",
                ),
                (
                    &[("NCCL_IB_GID_INDEX", "7")],
                    Severity::Fail,
                    "names GID index 7, which rxe0/1 does not have",
                ),
                // No digits is 0 to NCCL, and index 0 does not fit the peer.
                (
                    &[("NCCL_IB_GID_INDEX", "three")],
                    Severity::Fail,
                    "'three' has no digits, which is 0",
                ),
                // Trailing text is ignored, but said.
                (
                    &[("NCCL_IB_GID_INDEX", "1abc")],
                    Severity::Warn,
                    "'abc' after it is ignored",
                ),
                (
                    &[("NCCL_IB_GID_INDEX", "01")],
                    Severity::Warn,
                    "a leading 0 is octal",
                ),
                (&[("NCCL_IB_GID_INDEX", "")], Severity::Info, "empty"),
                (&[("UCX_IB_GID_INDEX", "auto")], Severity::Ok, "choose"),
                (
                    &[("UCX_IB_GID_INDEX", "0")],
                    Severity::Fail,
                    "UCX_IB_GID_INDEX=1",
                ),
                (
                    &[("UCX_IB_GID_INDEX", "x")],
                    Severity::Fail,
                    "UCX refuses it",
                ),
                (&[("UCX_IB_GID_INDEX", "0x1")], Severity::Fail, "'0x1' is 0"),
            ],
        );
    }

    /// Without a peer, a link-local or IPv6 index may be right: a warning, not a failure.
    #[test]
    fn gid_index_variables_without_a_peer() {
        check_cases(
            &rxe0(),
            LinkLayer::Ethernet,
            None,
            &[
                (
                    &[("NCCL_IB_GID_INDEX", "0")],
                    Severity::Warn,
                    "works only within one L2 segment",
                ),
                (&[("NCCL_IB_GID_INDEX", "1")], Severity::Ok, "GID index 1"),
                (
                    &[("UCX_IB_GID_INDEX", "0")],
                    Severity::Warn,
                    "works only within one L2 segment",
                ),
            ],
        );
        // An IPv6 port with NCCL_IB_ADDR_FAMILY=AF_INET6: the global IPv6 GID is fine.
        let v6 = vec![
            entry(0, "fe80::1", Some(GidType::RoceV2), Some("eth0")),
            entry(1, "2001:db8::1", Some(GidType::RoceV2), Some("eth0")),
        ];
        check_cases(
            &v6,
            LinkLayer::Ethernet,
            None,
            &[
                (
                    &[
                        ("NCCL_IB_ADDR_FAMILY", "AF_INET6"),
                        ("NCCL_IB_GID_INDEX", "1"),
                    ],
                    Severity::Ok,
                    "selects GID index 1",
                ),
                (&[("NCCL_IB_GID_INDEX", "1")], Severity::Warn, "IPv6"),
            ],
        );
    }

    /// On InfiniBand a GID index only matters for routed traffic: no failure for it.
    #[test]
    fn gid_index_variables_on_infiniband() {
        let ib = vec![entry(0, "fe80::2:c903:a:1", Some(GidType::Ib), None)];
        check_cases(
            &ib,
            LinkLayer::InfiniBand,
            None,
            &[
                (
                    &[("NCCL_IB_GID_INDEX", "0")],
                    Severity::Ok,
                    "addressed by LID",
                ),
                (
                    &[("NCCL_IB_GID_INDEX", "3")],
                    Severity::Warn,
                    "only for routed (global) traffic",
                ),
                (&[("NCCL_IB_GID_INDEX", "-1")], Severity::Ok, "choose"),
                (
                    &[("UCX_IB_GID_INDEX", "0")],
                    Severity::Ok,
                    "addressed by LID",
                ),
                (
                    &[("NCCL_IB_ROCE_VERSION_NUM", "1")],
                    Severity::Info,
                    "only to choose a RoCE GID",
                ),
            ],
        );
    }

    #[test]
    fn nccl_choice_variables() {
        check_cases(
            &rxe0(),
            LinkLayer::Ethernet,
            None,
            &[
                (
                    &[("NCCL_IB_ROCE_VERSION_NUM", "2")],
                    Severity::Ok,
                    "NCCL 2.21+ selects GID index 1",
                ),
                (
                    &[("NCCL_IB_ROCE_VERSION_NUM", "1")],
                    Severity::Warn,
                    "has no IPv4 GID of RoCE v1",
                ),
                (
                    &[("NCCL_IB_ROCE_VERSION_NUM", "3")],
                    Severity::Warn,
                    "which no GID has",
                ),
                (
                    &[("NCCL_IB_ADDR_FAMILY", "AF_INET6")],
                    Severity::Warn,
                    "has no IPv6 GID that is not link-local",
                ),
                (
                    &[("NCCL_IB_ADDR_FAMILY", "ipv6")],
                    Severity::Warn,
                    "ignores it without a word and uses AF_INET",
                ),
                (
                    &[("NCCL_IB_ADDR_RANGE", "192.168.77.0/24")],
                    Severity::Ok,
                    "indices that fit: 1",
                ),
                (
                    &[("NCCL_IB_ADDR_RANGE", "10.0.0.0/8")],
                    Severity::Warn,
                    "has no IPv4 GID in 10.0.0.0/8",
                ),
                (
                    &[("NCCL_IB_ADDR_RANGE", "10.0.0.0")],
                    Severity::Warn,
                    "no '/'",
                ),
                (
                    &[
                        ("NCCL_IB_GID_INDEX", "1"),
                        ("NCCL_IB_ADDR_RANGE", "10.0.0.0/8"),
                    ],
                    Severity::Info,
                    "NCCL_IB_GID_INDEX=1 names the GID",
                ),
            ],
        );
    }

    #[test]
    fn device_and_interface_lists() {
        check_cases(
            &rxe0(),
            LinkLayer::Ethernet,
            None,
            &[
                (&[("NCCL_IB_HCA", "rxe")], Severity::Ok, "rxe0, rxe1"),
                (&[("NCCL_IB_HCA", "rxe0:1")], Severity::Ok, "selects rxe0"),
                (
                    &[("NCCL_IB_HCA", "=rxe1")],
                    Severity::Warn,
                    "leaves out rxe0/1",
                ),
                (
                    &[("NCCL_IB_HCA", "^rxe0")],
                    Severity::Warn,
                    "leaves out rxe0/1",
                ),
                (
                    &[("NCCL_IB_HCA", "^=rxe1")],
                    Severity::Ok,
                    "selects rxe0 (port 1)",
                ),
                (
                    &[("NCCL_IB_HCA", "^=rxe")],
                    Severity::Warn,
                    "no device matches rxe",
                ),
                (&[("NCCL_IB_HCA", "^")], Severity::Fail, "selects no device"),
                (
                    &[("NCCL_IB_HCA", "mlx5")],
                    Severity::Fail,
                    "selects no device",
                ),
                (
                    &[("NCCL_IB_HCA", "rxe0,mlx5_0")],
                    Severity::Warn,
                    "no device matches mlx5_0",
                ),
                (
                    &[("NCCL_IB_HCA", "rxe0:x")],
                    Severity::Fail,
                    "not a port number",
                ),
                (
                    &[("NCCL_SOCKET_IFNAME", "eth")],
                    Severity::Ok,
                    "matches eth0",
                ),
                (
                    &[("NCCL_SOCKET_IFNAME", "^lo,veth")],
                    Severity::Ok,
                    "matches eth0",
                ),
                (
                    &[("NCCL_SOCKET_IFNAME", "=veth1")],
                    Severity::Warn,
                    "only interfaces that are down",
                ),
                (
                    &[("NCCL_SOCKET_IFNAME", "ib0")],
                    Severity::Fail,
                    "matches no netdev",
                ),
                (
                    &[("UCX_NET_DEVICES", "rxe0:1")],
                    Severity::Ok,
                    "lets UCX use rxe0:1",
                ),
                (&[("UCX_NET_DEVICES", "all")], Severity::Ok, "every device"),
                (
                    &[("UCX_NET_DEVICES", "mlx5_0:1")],
                    Severity::Fail,
                    "names no device on this host",
                ),
                (
                    &[("UCX_NET_DEVICES", "rxe0:1,mlx5_0:1")],
                    Severity::Warn,
                    "not on this host: mlx5_0:1",
                ),
                (
                    &[("UCX_NET_DEVICES", "rxe0")],
                    Severity::Fail,
                    "DEV:PORT (e.g. rxe0:1)",
                ),
                (
                    &[("UCX_NET_DEVICES", "rxe1:1,eth0")],
                    Severity::Warn,
                    "leaves out rxe0:1",
                ),
                (
                    &[("UCX_NET_DEVICES", "^rxe0:1")],
                    Severity::Warn,
                    "leaves out rxe0:1",
                ),
                (
                    &[("UCX_NET_DEVICES", "")],
                    Severity::Fail,
                    "allows no network device",
                ),
            ],
        );
        assert!(run_on(&rxe0(), LinkLayer::Ethernet, None, &[]).is_empty());
    }
}
