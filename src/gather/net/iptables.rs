//! iptables-legacy's tables (ip_tables, ip6_tables): the blob `iptables-legacy-save`
//! reads through getsockopt, parsed into the same chains and expressions as nf_tables'
//! rules, so one evaluator judges both. Layouts from include/uapi/linux/netfilter_ipv4/
//! ip_tables.h and netfilter_ipv6/ip6_tables.h (x86-64: `xt_counters` 8-byte aligned).
//! Only the tables the kernel lists as loaded are read: asking for one by name would load
//! its module.

use crate::model::netfilter::{
    Action, Backend, Base, BaseHook, CmpOp, Expr, Field, Hook, MetaKey, NfChain, NfFamily, NfRule,
    PortField, RuleCounter,
};

/// The offsets of one entry layout.
struct EntryLayout {
    entry_size: usize,
    src: usize,
    dst: usize,
    smsk: usize,
    dmsk: usize,
    iniface: usize,
    outiface: usize,
    iniface_mask: usize,
    outiface_mask: usize,
    proto: usize,
    flags: usize,
    invflags: usize,
    target_offset: usize,
    counters: usize,
    addr_len: usize,
    /// The flag that says a protocol is set (ip6t), or None when a non-zero one is (ipt).
    proto_flag: Option<u8>,
    goto_flag: u8,
    /// Where the source address sits in the network header (12 in IPv4, 8 in IPv6).
    nh_src: u32,
    nh_dst: u32,
}

const IPT: EntryLayout = EntryLayout {
    entry_size: 112,
    src: 0,
    dst: 4,
    smsk: 8,
    dmsk: 12,
    iniface: 16,
    outiface: 32,
    iniface_mask: 48,
    outiface_mask: 64,
    proto: 80,
    flags: 82,
    invflags: 83,
    target_offset: 88,
    counters: 96,
    addr_len: 4,
    proto_flag: None,
    goto_flag: 0x02,
    nh_src: 12,
    nh_dst: 16,
};

const IP6T: EntryLayout = EntryLayout {
    entry_size: 168,
    src: 0,
    dst: 16,
    smsk: 32,
    dmsk: 48,
    iniface: 64,
    outiface: 80,
    iniface_mask: 96,
    outiface_mask: 112,
    proto: 128,
    flags: 131,
    invflags: 132,
    target_offset: 140,
    counters: 152,
    addr_len: 16,
    proto_flag: Some(0x01),
    goto_flag: 0x04,
    nh_src: 8,
    nh_dst: 24,
};

// IPT_INV_* (the same bits in ip6t)
const INV_VIA_IN: u8 = 0x01;
const INV_VIA_OUT: u8 = 0x02;
const INV_SRCIP: u8 = 0x08;
const INV_DSTIP: u8 = 0x10;
const INV_PROTO: u8 = 0x40;

const HOOK_NAMES: [&str; 5] = ["PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING"];

/// Where a legacy table's base chains sit among nf_tables' (NF_IP_PRI_*).
fn priority(table: &str, hook: Hook) -> i32 {
    match table {
        "raw" => -300,
        "mangle" => -150,
        "nat" if matches!(hook, Hook::Prerouting | Hook::Output) => -100,
        "nat" => 100,
        "security" => 50,
        _ => 0,
    }
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

fn cstr(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

/// One entry as it sits in the blob.
struct BlobEntry<'a> {
    offset: usize,
    bytes: &'a [u8],
    target_name: String,
    target_data: &'a [u8],
}

/// A table's chains from `ipt_getinfo` (`info`) and the entries (`entries`, from the
/// start of the entry table). Any inconsistency is an error for the whole table.
pub fn parse_table(
    table: &str,
    v6: bool,
    info: &[u8],
    entries: &[u8],
) -> Result<Vec<NfChain>, String> {
    let l = if v6 { &IP6T } else { &IPT };
    let bad = |what: String| format!("iptables-legacy table {table}: {what}");
    let valid_hooks = u32_at(info, 32).ok_or_else(|| bad("short info".into()))?;
    let hook_entry: Vec<u32> = (0..5).filter_map(|h| u32_at(info, 36 + 4 * h)).collect();
    let underflow: Vec<u32> = (0..5).filter_map(|h| u32_at(info, 56 + 4 * h)).collect();
    if hook_entry.len() != 5 || underflow.len() != 5 {
        return Err(bad("short info".into()));
    }
    let list = split_entries(entries, l).map_err(bad)?;
    let family = if v6 { NfFamily::Ip6 } else { NfFamily::Ip };
    let backend = if v6 {
        Backend::Ip6tablesLegacy
    } else {
        Backend::IptablesLegacy
    };
    let new_chain = |name: String, base: Option<BaseHook>| NfChain {
        backend,
        family,
        table: table.to_string(),
        name,
        base,
        policy: None,
        policy_counter: None,
        rules: Vec::new(),
    };
    let chain_at = chain_starts(&list);
    let mut chains: Vec<NfChain> = Vec::new();
    for (i, e) in list.iter().enumerate() {
        let off = e.offset as u32;
        if let Some(h) = (0..5).find(|&h| valid_hooks & (1 << h) != 0 && hook_entry[h] == off) {
            let hook = Hook::from_number(h as u32);
            chains.push(new_chain(
                HOOK_NAMES[h].to_string(),
                Some(BaseHook {
                    hook,
                    priority: priority(table, hook),
                }),
            ));
        }
        if e.target_name == "ERROR" {
            let name = cstr(e.target_data);
            if name != "ERROR" {
                chains.push(new_chain(name, None));
            }
            continue;
        }
        let Some(chain) = chains.last_mut() else {
            return Err(bad(format!("entry at {} before any chain", e.offset)));
        };
        let counter = RuleCounter {
            packets: u64_at(e.bytes, l.counters).unwrap_or(0),
            bytes: u64_at(e.bytes, l.counters + 8).unwrap_or(0),
        };
        let action = target(e, l, &chain_at);
        if (0..5).any(|h| valid_hooks & (1 << h) != 0 && underflow[h] == off) {
            chain.policy = Some(action);
            chain.policy_counter = Some(counter);
            continue;
        }
        // A user chain ends in an unconditional RETURN that iptables does not list.
        let ends_user_chain = chain.base.is_none()
            && list.get(i + 1).is_some_and(|n| n.target_name == "ERROR")
            && action == Action::Return;
        if ends_user_chain {
            continue;
        }
        let mut exprs = conditions(e, l);
        exprs.push(Expr::RuleCounter(counter));
        exprs.extend(target_exprs(e, l, &chain_at));
        let rule = NfRule {
            position: chain.rules.len() + 1,
            handle: None,
            exprs,
        };
        chain.rules.push(rule);
    }
    Ok(chains)
}

/// The blob cut into its entries, each by its own sizes.
fn split_entries<'a>(entries: &'a [u8], l: &EntryLayout) -> Result<Vec<BlobEntry<'a>>, String> {
    let mut list = Vec::new();
    let mut at = 0;
    while at < entries.len() {
        let target_offset = u16_at(entries, at + l.target_offset)
            .ok_or_else(|| format!("entry at {at} cut short"))?
            as usize;
        let next = u16_at(entries, at + l.target_offset + 2)
            .ok_or_else(|| format!("entry at {at} cut short"))? as usize;
        if next < l.entry_size
            || target_offset < l.entry_size
            || target_offset + 32 > next
            || at + next > entries.len()
        {
            return Err(format!(
                "entry at {at}: sizes {target_offset}/{next} do not fit"
            ));
        }
        let bytes = &entries[at..at + next];
        let target = &bytes[target_offset..];
        let target_size = u16_at(target, 0).unwrap_or(0) as usize;
        list.push(BlobEntry {
            offset: at,
            bytes,
            target_name: cstr(&target[2..31]),
            target_data: &target[32..target_size.clamp(32, target.len())],
        });
        at += next;
    }
    Ok(list)
}

/// Where each user chain's rules start, for jumps (a verdict is an offset): the entry
/// after each ERROR entry that names a chain.
fn chain_starts(list: &[BlobEntry]) -> Vec<(usize, String)> {
    let mut chain_at: Vec<(usize, String)> = Vec::new();
    for (i, e) in list.iter().enumerate() {
        if e.target_name == "ERROR" {
            let name = cstr(e.target_data);
            if let Some(next) = list.get(i + 1) {
                if name != "ERROR" {
                    chain_at.push((next.offset, name));
                }
            }
        }
    }
    chain_at
}

/// The entry's target as expressions: a named target's, or a standard target's verdict.
fn target_exprs(e: &BlobEntry, l: &EntryLayout, chain_at: &[(usize, String)]) -> Vec<Expr> {
    if e.target_name.is_empty() {
        vec![Expr::Verdict(target(e, l, chain_at))]
    } else {
        xt_target(&e.target_name)
    }
}

/// The entry's target as an action; a standard target's verdict is NF_* negated minus one,
/// or the offset of the chain it jumps to.
fn target(e: &BlobEntry, l: &EntryLayout, chain_at: &[(usize, String)]) -> Action {
    if !e.target_name.is_empty() {
        return match xt_target(&e.target_name).pop() {
            Some(Expr::Verdict(a)) => a,
            _ => Action::Continue,
        };
    }
    let Some(v) = e
        .target_data
        .get(..4)
        .map(|b| i32::from_ne_bytes(b.try_into().unwrap_or([0; 4])))
    else {
        return Action::Other("standard target without a verdict".into());
    };
    match v {
        -1 => Action::Drop,
        -2 => Action::Accept,
        -5 => Action::Return,
        v if v >= 0 => {
            let to = v as usize;
            if to == e.offset + e.bytes.len() {
                return Action::Continue;
            }
            match chain_at.iter().find(|(at, _)| *at == to) {
                Some((_, name)) if e.bytes[l.flags] & l.goto_flag != 0 => {
                    Action::Goto(name.clone())
                }
                Some((_, name)) => Action::Jump(name.clone()),
                None => Action::Other(format!("jump to offset {to}")),
            }
        }
        v => Action::Other(format!("verdict {v}")),
    }
}

/// The entry's `ipt_ip` part and its matches, as register tests.
fn conditions(e: &BlobEntry, l: &EntryLayout) -> Vec<Expr> {
    let b = e.bytes;
    let inv = b[l.invflags];
    let op = |bit: u8| {
        if inv & bit != 0 {
            CmpOp::Neq
        } else {
            CmpOp::Eq
        }
    };
    let mut out = Vec::new();
    let mut masked = |field: Field, value: &[u8], mask: &[u8], op: CmpOp| {
        if mask.iter().all(|&m| m == 0) {
            return;
        }
        let data: Vec<u8> = value.iter().zip(mask).map(|(v, m)| v & m).collect();
        out.push(Expr::Load { dreg: 1, field });
        out.push(Expr::Bitwise {
            sreg: 1,
            dreg: 1,
            mask: mask.to_vec(),
            xor: vec![0; mask.len()],
        });
        out.push(Expr::Cmp { sreg: 1, op, data });
    };
    let a = l.addr_len;
    let nh = |offset| Field::Payload {
        base: Base::Network,
        offset,
        len: a as u32,
    };
    masked(
        nh(l.nh_src),
        &b[l.src..l.src + a],
        &b[l.smsk..l.smsk + a],
        op(INV_SRCIP),
    );
    masked(
        nh(l.nh_dst),
        &b[l.dst..l.dst + a],
        &b[l.dmsk..l.dmsk + a],
        op(INV_DSTIP),
    );
    masked(
        Field::Meta(MetaKey::IifName),
        &b[l.iniface..l.iniface + 16],
        &b[l.iniface_mask..l.iniface_mask + 16],
        op(INV_VIA_IN),
    );
    masked(
        Field::Meta(MetaKey::OifName),
        &b[l.outiface..l.outiface + 16],
        &b[l.outiface_mask..l.outiface_mask + 16],
        op(INV_VIA_OUT),
    );
    let proto = u16_at(b, l.proto).unwrap_or(0);
    let proto_set = match l.proto_flag {
        Some(flag) => b[l.flags] & flag != 0,
        None => proto != 0,
    };
    if proto_set {
        out.push(Expr::Load {
            dreg: 1,
            field: Field::Meta(MetaKey::L4Proto),
        });
        out.push(Expr::Cmp {
            sreg: 1,
            op: op(INV_PROTO),
            data: vec![proto as u8],
        });
    }
    // The matches: xt_entry_match { u16 match_size; char name[29]; u8 revision; } + data.
    let target_offset = u16_at(b, l.target_offset).unwrap_or(0) as usize;
    let mut at = l.entry_size;
    while at + 32 <= target_offset {
        let size = u16_at(b, at).unwrap_or(0) as usize;
        if size < 32 || at + size > target_offset {
            out.push(Expr::Opaque("malformed match".into()));
            break;
        }
        let name = cstr(&b[at + 2..at + 31]);
        out.extend(xt_match(
            &name,
            u32::from(b[at + 31]),
            &b[at + 32..at + size],
        ));
        at += size;
    }
    out
}

/// An x_tables match (iptables-legacy, or iptables-nft's compat expression) in the
/// evaluator's terms: `udp` and `multiport` decoded, `comment` a no-op, the rest opaque.
pub fn xt_match(name: &str, revision: u32, info: &[u8]) -> Vec<Expr> {
    let u16_at = |at: usize| {
        info.get(at..at + 2)
            .map(|b| u16::from_ne_bytes([b[0], b[1]]))
    };
    match name {
        // struct xt_udp { __u16 spts[2], dpts[2]; __u8 invflags; } (1: source, 2: destination)
        "udp" => {
            let (Some(s0), Some(s1), Some(d0), Some(d1)) =
                (u16_at(0), u16_at(2), u16_at(4), u16_at(6))
            else {
                return vec![Expr::Opaque("udp".into())];
            };
            let inv = info.get(8).copied().unwrap_or(0);
            let mut out = Vec::new();
            for (field, lo, hi, bit) in [
                (PortField::Source, s0, s1, 1),
                (PortField::Destination, d0, d1, 2),
            ] {
                if (lo, hi) != (0, u16::MAX) || inv & bit != 0 {
                    out.push(Expr::Ports {
                        field,
                        ranges: vec![(lo, hi)],
                        inverted: inv & bit != 0,
                    });
                }
            }
            out
        }
        // struct xt_multiport_v1 { __u8 flags, count; __u16 ports[15]; __u8 pflags[15];
        // __u8 invert; }; flags 0 source, 1 destination, 2 either; pflags[i] opens a range
        // that ports[i + 1] closes.
        "multiport" if revision == 1 && info.len() >= 48 => {
            let count = (info[1] as usize).min(15);
            let field = match info[0] {
                0 => PortField::Source,
                1 => PortField::Destination,
                _ => PortField::Either,
            };
            let mut ranges = Vec::new();
            let mut i = 0;
            while i < count {
                let lo = u16_at(2 + 2 * i).unwrap_or(0);
                if info[32 + i] != 0 && i + 1 < count {
                    ranges.push((lo, u16_at(2 + 2 * (i + 1)).unwrap_or(lo)));
                    i += 2;
                } else {
                    ranges.push((lo, lo));
                    i += 1;
                }
            }
            vec![Expr::Ports {
                field,
                ranges,
                inverted: info[47] != 0,
            }]
        }
        "comment" => vec![Expr::Quiet("comment".into())],
        other => vec![Expr::Opaque(format!("match {other}"))],
    }
}

/// An x_tables target by name: REJECT drops, the targets that only mark or log let the
/// packet go on, the rest take it where rdmactl does not follow.
pub fn xt_target(name: &str) -> Vec<Expr> {
    match name {
        "REJECT" => vec![Expr::Verdict(Action::Reject)],
        "DROP" => vec![Expr::Verdict(Action::Drop)],
        "ACCEPT" => vec![Expr::Verdict(Action::Accept)],
        "LOG" | "NFLOG" | "MARK" | "CONNMARK" | "TRACE" | "CT" | "DSCP" | "TOS" | "CLASSIFY"
        | "TCPMSS" | "NOTRACK" => vec![Expr::Quiet(name.to_lowercase())],
        other => vec![Expr::Verdict(Action::Other(other.to_string()))],
    }
}

/// Every loaded legacy table of both families: the chains, what was read, and what could
/// not be (with the errno).
pub fn legacy_tables() -> (Vec<NfChain>, Vec<String>, Vec<String>) {
    let (mut chains, mut read, mut unread) = (Vec::new(), Vec::new(), Vec::new());
    for v6 in [false, true] {
        let tool = if v6 {
            "ip6tables-legacy"
        } else {
            "iptables-legacy"
        };
        let Some(tables) = crate::gather::procfs::legacy_iptables_tables(v6) else {
            continue;
        };
        for table in tables {
            match crate::gather::verbs::sys::iptables_legacy_table(&table, v6) {
                Ok((info, entries)) => match parse_table(&table, v6, &info, &entries[40..]) {
                    Ok(c) => {
                        chains.extend(c);
                        read.push(format!("{tool} table {table}"));
                    }
                    Err(e) => unread.push(e),
                },
                Err(errno) => unread.push(format!(
                    "{tool} table {table}: getsockopt: {}{}",
                    crate::model::errno::errno_text(errno),
                    if errno == libc::EPERM {
                        " (reading the firewall needs CAP_NET_ADMIN: run as root)"
                    } else {
                        ""
                    }
                )),
            }
        }
    }
    (chains, read, unread)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::netfilter::{describe, fate, Firewall, Iface, Packet};

    /// One ipt_entry: the ipt_ip part from `ip`, matches, and a standard or named target.
    fn entry(
        ip: impl Fn(&mut [u8]),
        matches: &[(&str, u8, Vec<u8>)],
        target: &str,
        data: &[u8],
        counters: (u64, u64),
    ) -> Vec<u8> {
        let mut e = vec![0u8; 112];
        ip(&mut e);
        for (name, rev, info) in matches {
            let mut m = vec![0u8; 32];
            m[2..2 + name.len()].copy_from_slice(name.as_bytes());
            m[31] = *rev;
            m.extend_from_slice(info);
            while m.len() % 8 != 0 {
                m.push(0);
            }
            let size = m.len() as u16;
            m[0..2].copy_from_slice(&size.to_ne_bytes());
            e.extend(m);
        }
        let target_offset = e.len() as u16;
        let mut t = vec![0u8; 32];
        t[2..2 + target.len()].copy_from_slice(target.as_bytes());
        t.extend_from_slice(data);
        while t.len() % 8 != 0 {
            t.push(0);
        }
        let size = t.len() as u16;
        t[0..2].copy_from_slice(&size.to_ne_bytes());
        e.extend(t);
        let next = e.len() as u16;
        e[88..90].copy_from_slice(&target_offset.to_ne_bytes());
        e[90..92].copy_from_slice(&next.to_ne_bytes());
        e[96..104].copy_from_slice(&counters.0.to_ne_bytes());
        e[104..112].copy_from_slice(&counters.1.to_ne_bytes());
        e
    }

    fn verdict(v: i32) -> Vec<u8> {
        v.to_ne_bytes().to_vec()
    }

    fn name32(n: &str) -> Vec<u8> {
        let mut b = n.as_bytes().to_vec();
        b.resize(32, 0);
        b
    }

    /// `iptables-legacy -A INPUT -i veth0 -p udp --dport 4791 -j DROP` and
    /// `-A INPUT -j RDMA` with `-A RDMA -p udp --dport 4791 -j REJECT` in the filter table.
    fn filter_table() -> (Vec<u8>, Vec<u8>) {
        let udp_4791 = {
            let mut u = Vec::new();
            for p in [0u16, 65535, 4791, 4791] {
                u.extend_from_slice(&p.to_ne_bytes());
            }
            u.extend_from_slice(&[0, 0, 0, 0]);
            u
        };
        let none = |_: &mut [u8]| {};
        let veth0_udp = |e: &mut [u8]| {
            e[16..21].copy_from_slice(b"veth0");
            e[48..54].fill(0xff);
            e[80] = 17;
        };
        let udp = |e: &mut [u8]| e[80] = 17;
        let mut parts: Vec<Vec<u8>> = Vec::new();
        let mut offsets = Vec::new();
        let mut push = |parts: &mut Vec<Vec<u8>>, e: Vec<u8>| {
            offsets.push(parts.iter().map(Vec::len).sum::<usize>());
            parts.push(e);
        };
        // INPUT: the drop, the jump (offset filled below), the policy ACCEPT.
        push(
            &mut parts,
            entry(
                veth0_udp,
                &[("udp", 0, udp_4791.clone())],
                "",
                &verdict(-1),
                (28, 29904),
            ),
        );
        push(&mut parts, entry(none, &[], "", &verdict(0), (0, 0)));
        push(&mut parts, entry(none, &[], "", &verdict(-2), (5, 500)));
        // FORWARD and OUTPUT: their policies alone.
        push(&mut parts, entry(none, &[], "", &verdict(-2), (0, 0)));
        push(&mut parts, entry(none, &[], "", &verdict(-2), (0, 0)));
        // RDMA: the head, the reject, the closing return; then the table's end.
        push(
            &mut parts,
            entry(none, &[], "ERROR", &name32("RDMA"), (0, 0)),
        );
        push(
            &mut parts,
            entry(udp, &[("udp", 0, udp_4791)], "REJECT", &[0; 8], (3, 300)),
        );
        push(&mut parts, entry(none, &[], "", &verdict(-5), (0, 0)));
        push(
            &mut parts,
            entry(none, &[], "ERROR", &name32("ERROR"), (0, 0)),
        );
        let rdma_at = offsets[6] as i32;
        let jump = entry(none, &[], "", &verdict(rdma_at), (0, 0));
        parts[1] = jump;
        let entries = parts.concat();
        let mut info = vec![0u8; 84];
        info[..6].copy_from_slice(b"filter");
        info[32..36].copy_from_slice(&0b01110u32.to_ne_bytes());
        for (h, at) in [(1, 0), (2, 3), (3, 4)] {
            info[36 + 4 * h..40 + 4 * h].copy_from_slice(&(offsets[at] as u32).to_ne_bytes());
        }
        for (h, at) in [(1, 2), (2, 3), (3, 4)] {
            info[56 + 4 * h..60 + 4 * h].copy_from_slice(&(offsets[at] as u32).to_ne_bytes());
        }
        info[76..80].copy_from_slice(&9u32.to_ne_bytes());
        info[80..84].copy_from_slice(&(entries.len() as u32).to_ne_bytes());
        (info, entries)
    }

    #[test]
    fn a_legacy_filter_table_reads_as_iptables_lists_it() {
        let (info, entries) = filter_table();
        let chains = parse_table("filter", false, &info, &entries).unwrap();
        let names: Vec<&str> = chains.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["INPUT", "FORWARD", "OUTPUT", "RDMA"]);
        let input = &chains[0];
        assert_eq!(input.policy, Some(Action::Accept));
        assert_eq!(
            input.policy_counter,
            Some(RuleCounter {
                packets: 5,
                bytes: 500
            })
        );
        assert_eq!(input.rules.len(), 2);
        assert_eq!(
            describe(&input.rules[0], NfFamily::Ip),
            "iifname \"veth0\" meta l4proto udp udp dport 4791 counter packets 28 bytes 29904 drop"
        );
        assert_eq!(input.rules[1].action(), Action::Jump("RDMA".into()));
        // The user chain's closing RETURN is not a rule.
        assert_eq!(chains[3].rules.len(), 1);
        assert_eq!(chains[3].rules[0].action(), Action::Reject);

        let fw = Firewall {
            chains,
            ..Default::default()
        };
        let on = |n: &str| Iface {
            index: 3,
            name: n.into(),
        };
        let from = |n| {
            Packet::arriving(
                "192.168.77.2".parse().unwrap(),
                "192.168.77.1".parse().unwrap(),
                on(n),
            )
        };
        let hit = fate(&fw, &from("veth0")).dropped.unwrap();
        assert_eq!(
            (hit.backend, hit.chain.as_str(), hit.rule.unwrap().position),
            (Backend::IptablesLegacy, "INPUT", 1)
        );
        // Through another netdev the jump leads to the reject.
        let hit = fate(&fw, &from("veth1")).dropped.unwrap();
        assert_eq!(
            (hit.chain.as_str(), hit.via.as_slice()),
            ("RDMA", &["INPUT".to_string()][..])
        );
    }

    #[test]
    fn a_damaged_table_is_an_error_never_a_panic() {
        let (info, entries) = filter_table();
        for cut in 0..entries.len() {
            let _ = parse_table("filter", false, &info, &entries[..cut]);
        }
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..3000 {
            let mut e = entries.clone();
            for _ in 0..4 {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let at = (seed as usize) % e.len();
                e[at] = (seed >> 32) as u8;
            }
            if let Ok(chains) = parse_table("filter", false, &info, &e) {
                for c in &chains {
                    for r in &c.rules {
                        let _ = describe(r, c.family);
                    }
                }
            }
            let _ = parse_table("filter", true, &info, &e);
        }
        assert!(parse_table("filter", false, &info[..40], &entries).is_err());
    }
}
