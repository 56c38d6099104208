//! The host firewall's rules, read without `nft` or `iptables`: nf_tables over nfnetlink
//! (what `nft list ruleset` dumps, iptables-nft's rules included) and iptables-legacy's
//! tables through ip_tables' socket options (what `iptables-legacy-save` reads). Both need
//! CAP_NET_ADMIN; a source that cannot be read is said, never taken as "no rule".
//! Requests are built and replies parsed by pure functions, tested on bytes laid out as
//! the kernel writes them (include/uapi/linux/netfilter/nf_tables.h, x_tables.h,
//! ip_tables.h, ip6_tables.h); the sockets are apart.

use std::collections::BTreeSet;
use std::net::IpAddr;

use super::iptables::{xt_match, xt_target};
use super::rdma::{attributes, parse_with_header, Parsed, Reply};
use crate::model::netfilter::{
    Action, Backend, Base, BaseHook, CmpOp, Expr, Field, Firewall, FirewallFacts, Hook, Iface,
    MetaKey, NfChain, NfFamily, NfRule, RocePath, RuleCounter, SetElement,
};

const NFNL_SUBSYS_NFTABLES: u16 = 10;
const NFT_MSG_NEWCHAIN: u16 = 3;
const NFT_MSG_GETCHAIN: u16 = 4;
const NFT_MSG_NEWRULE: u16 = 6;
const NFT_MSG_GETRULE: u16 = 7;
const NFT_MSG_NEWSETELEM: u16 = 12;
const NFT_MSG_GETSETELEM: u16 = 13;

const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_DUMP: u16 = 0x300;
const NFGENMSG: usize = 4;

// enum nft_chain_attributes
const NFTA_CHAIN_TABLE: u16 = 1;
const NFTA_CHAIN_NAME: u16 = 3;
const NFTA_CHAIN_HOOK: u16 = 4;
const NFTA_CHAIN_POLICY: u16 = 5;
const NFTA_CHAIN_COUNTERS: u16 = 8;
const NFTA_HOOK_HOOKNUM: u16 = 1;
const NFTA_HOOK_PRIORITY: u16 = 2;
// enum nft_rule_attributes
const NFTA_RULE_TABLE: u16 = 1;
const NFTA_RULE_CHAIN: u16 = 2;
const NFTA_RULE_HANDLE: u16 = 3;
const NFTA_RULE_EXPRESSIONS: u16 = 4;
const NFTA_EXPR_NAME: u16 = 1;
const NFTA_EXPR_DATA: u16 = 2;
const NFTA_DATA_VALUE: u16 = 1;
const NFTA_DATA_VERDICT: u16 = 2;
const NFTA_VERDICT_CODE: u16 = 1;
const NFTA_VERDICT_CHAIN: u16 = 2;
// enum nft_set_elem_list_attributes / nft_set_elem_attributes
const NFTA_SET_ELEM_LIST_TABLE: u16 = 1;
const NFTA_SET_ELEM_LIST_SET: u16 = 2;
const NFTA_SET_ELEM_LIST_ELEMENTS: u16 = 3;
const NFTA_SET_ELEM_KEY: u16 = 1;
const NFTA_SET_ELEM_FLAGS: u16 = 3;
const NFT_SET_ELEM_INTERVAL_END: u32 = 1;

fn msg_type(op: u16) -> u16 {
    (NFNL_SUBSYS_NFTABLES << 8) | op
}

/// A dump request: the netlink header, `nfgenmsg` (family, version 0, res_id 0) and the
/// attributes, each a NUL-terminated string as the kernel's nla_strcmp wants.
pub fn request(op: u16, family: u8, strings: &[(u16, &str)], seq: u32) -> Vec<u8> {
    let mut attrs = Vec::new();
    for (kind, text) in strings {
        let len = 4 + text.len() + 1;
        attrs.extend_from_slice(&(len as u16).to_ne_bytes());
        attrs.extend_from_slice(&kind.to_ne_bytes());
        attrs.extend_from_slice(text.as_bytes());
        attrs.push(0);
        while attrs.len() % 4 != 0 {
            attrs.push(0);
        }
    }
    let mut body = vec![family, 0, 0, 0];
    body.extend_from_slice(&attrs);
    super::rdma::message(msg_type(op), NLM_F_REQUEST | NLM_F_DUMP, seq, &body)
}

fn attr(attrs: &[(u16, Vec<u8>)], kind: u16) -> Option<&[u8]> {
    attrs
        .iter()
        .find(|(k, _)| *k == kind)
        .map(|(_, v)| v.as_slice())
}

fn string(attrs: &[(u16, Vec<u8>)], kind: u16) -> Option<String> {
    let v = attr(attrs, kind)?;
    let end = v.iter().position(|&b| b == 0).unwrap_or(v.len());
    Some(String::from_utf8_lossy(&v[..end]).into_owned())
}

fn be32(attrs: &[(u16, Vec<u8>)], kind: u16) -> Option<u32> {
    Some(u32::from_be_bytes(
        attr(attrs, kind)?.get(..4)?.try_into().ok()?,
    ))
}

fn be64(attrs: &[(u16, Vec<u8>)], kind: u16) -> Option<u64> {
    Some(u64::from_be_bytes(
        attr(attrs, kind)?.get(..8)?.try_into().ok()?,
    ))
}

fn nested(attrs: &[(u16, Vec<u8>)], kind: u16) -> Option<Vec<(u16, Vec<u8>)>> {
    attributes(attr(attrs, kind)?).ok()
}

fn family_of(reply: &Reply) -> NfFamily {
    NfFamily::from_nfproto(reply.fixed.first().copied().unwrap_or(0))
}

fn counter_of(attrs: &[(u16, Vec<u8>)]) -> RuleCounter {
    RuleCounter {
        bytes: be64(attrs, 1).unwrap_or(0),
        packets: be64(attrs, 2).unwrap_or(0),
    }
}

/// A chain of a NEWCHAIN reply, without its rules.
pub fn chain_of(reply: &Reply) -> Option<NfChain> {
    if reply.msg_type != msg_type(NFT_MSG_NEWCHAIN) {
        return None;
    }
    let a = &reply.attrs;
    let base = nested(a, NFTA_CHAIN_HOOK).and_then(|h| {
        Some(BaseHook {
            hook: Hook::from_number(be32(&h, NFTA_HOOK_HOOKNUM)?),
            priority: be32(&h, NFTA_HOOK_PRIORITY).unwrap_or(0) as i32,
        })
    });
    Some(NfChain {
        backend: Backend::Nftables,
        family: family_of(reply),
        table: string(a, NFTA_CHAIN_TABLE)?,
        name: string(a, NFTA_CHAIN_NAME)?,
        base,
        policy: be32(a, NFTA_CHAIN_POLICY).map(|p| verdict(p as i32, None)),
        policy_counter: nested(a, NFTA_CHAIN_COUNTERS).map(|c| counter_of(&c)),
        rules: Vec::new(),
    })
}

/// A rule of a NEWRULE reply: its family, table and chain, and the rule.
pub fn rule_of(reply: &Reply) -> Option<(NfFamily, String, String, NfRule)> {
    if reply.msg_type != msg_type(NFT_MSG_NEWRULE) {
        return None;
    }
    let a = &reply.attrs;
    let mut exprs = Vec::new();
    for (_, elem) in nested(a, NFTA_RULE_EXPRESSIONS).unwrap_or_default() {
        let Ok(e) = attributes(&elem) else {
            exprs.push(Expr::Opaque("malformed expression".into()));
            continue;
        };
        let name = string(&e, NFTA_EXPR_NAME).unwrap_or_default();
        let data = nested(&e, NFTA_EXPR_DATA).unwrap_or_default();
        exprs.extend(expression(&name, &data));
    }
    let rule = NfRule {
        position: 0,
        handle: be64(a, NFTA_RULE_HANDLE),
        exprs,
    };
    Some((
        family_of(reply),
        string(a, NFTA_RULE_TABLE)?,
        string(a, NFTA_RULE_CHAIN)?,
        rule,
    ))
}

/// An nf_tables verdict code (NF_DROP 0, NF_ACCEPT 1, NFT_CONTINUE -1, NFT_BREAK -2,
/// NFT_JUMP -3, NFT_GOTO -4, NFT_RETURN -5).
fn verdict(code: i32, chain: Option<String>) -> Action {
    match code {
        0 => Action::Drop,
        1 => Action::Accept,
        -1 | -2 => Action::Continue,
        -3 => Action::Jump(chain.unwrap_or_default()),
        -4 => Action::Goto(chain.unwrap_or_default()),
        -5 => Action::Return,
        3 => Action::Other("queue".into()),
        n => Action::Other(format!("verdict {n}")),
    }
}

fn value(attrs: &[(u16, Vec<u8>)], kind: u16) -> Option<Vec<u8>> {
    nested(attrs, kind).and_then(|d| attr(&d, NFTA_DATA_VALUE).map(<[u8]>::to_vec))
}

/// One nf_tables expression in the evaluator's terms.
fn expression(name: &str, d: &[(u16, Vec<u8>)]) -> Vec<Expr> {
    let opaque = || vec![Expr::Opaque(name.to_string())];
    let reg = |kind| be32(d, kind);
    let one = |e: Option<Expr>| e.map_or_else(opaque, |e| vec![e]);
    match name {
        // meta: DREG 1, KEY 2; with SREG 3 it sets the key (mark, priority): no test.
        "meta" if attr(d, 3).is_some() => vec![Expr::Quiet("meta set".into())],
        "meta" => one((|| {
            Some(Expr::Load {
                dreg: reg(1)?,
                field: Field::Meta(MetaKey::from_number(reg(2)?)),
            })
        })()),
        // payload: DREG 1, BASE 2, OFFSET 3, LEN 4; with SREG 5 it rewrites the packet.
        "payload" if attr(d, 5).is_some() => vec![Expr::Quiet("payload set".into())],
        "payload" => one((|| {
            Some(Expr::Load {
                dreg: reg(1)?,
                field: Field::Payload {
                    base: Base::from_number(reg(2)?),
                    offset: reg(3)?,
                    len: reg(4)?,
                },
            })
        })()),
        // cmp: SREG 1, OP 2, DATA 3.
        "cmp" => one((|| {
            Some(Expr::Cmp {
                sreg: reg(1)?,
                op: CmpOp::from_number(reg(2)?)?,
                data: value(d, 3)?,
            })
        })()),
        // bitwise: SREG 1, DREG 2, LEN 3, MASK 4, XOR 5, OP 6 (0: mask and xor; shifts
        // are not modelled).
        "bitwise" if reg(6).unwrap_or(0) != 0 => opaque(),
        "bitwise" => one((|| {
            Some(Expr::Bitwise {
                sreg: reg(1)?,
                dreg: reg(2)?,
                mask: value(d, 4)?,
                xor: value(d, 5).unwrap_or_default(),
            })
        })()),
        // range: SREG 1, OP 2 (0 eq, 1 neq), FROM 3, TO 4.
        "range" => one((|| {
            Some(Expr::Range {
                sreg: reg(1)?,
                inverted: reg(2)? == 1,
                from: value(d, 3)?,
                to: value(d, 4)?,
            })
        })()),
        // lookup: SET 1, SREG 2, DREG 3 (a map: not a test), FLAGS 5 (1: inverted).
        "lookup" if attr(d, 3).is_some() => opaque(),
        "lookup" => one((|| {
            Some(Expr::Lookup {
                sreg: reg(2)?,
                set: string(d, 1)?,
                inverted: reg(5).unwrap_or(0) & 1 == 1,
                elements: None,
            })
        })()),
        "counter" => vec![Expr::RuleCounter(counter_of(d))],
        // immediate: DREG 1 (0: the verdict register), DATA 2.
        "immediate" => match (reg(1), nested(d, 2)) {
            (Some(0), Some(data)) => {
                let v = nested(&data, NFTA_DATA_VERDICT).unwrap_or_default();
                let code = be32(&v, NFTA_VERDICT_CODE).map(|c| c as i32);
                one(code.map(|c| Expr::Verdict(verdict(c, string(&v, NFTA_VERDICT_CHAIN)))))
            }
            _ => opaque(),
        },
        "reject" => vec![Expr::Verdict(Action::Reject)],
        "log" | "notrack" => vec![Expr::Quiet(name.into())],
        "queue" | "nat" | "masq" | "redir" | "fwd" | "tproxy" | "synproxy" => {
            vec![Expr::Verdict(Action::Other(name.into()))]
        }
        // xt compat, as iptables-nft writes what has no native form: NAME 1, REV 2, INFO 3.
        "match" => {
            let info = attr(d, 3).unwrap_or(&[]);
            xt_match(&string(d, 1).unwrap_or_default(), reg(2).unwrap_or(0), info)
        }
        "target" => xt_target(&string(d, 1).unwrap_or_default()),
        // ct: DREG 1 loads KEY 2; with SREG 4 it sets it (ct mark set): no test.
        "ct" if attr(d, 4).is_some() => vec![Expr::Quiet("ct set".into())],
        "ct" => one((|| {
            Some(Expr::Load {
                dreg: reg(1)?,
                field: Field::Ct(reg(2)?),
            })
        })()),
        _ => opaque(),
    }
}

/// The elements of a NEWSETELEM reply.
pub fn set_elements(replies: &[Reply]) -> Vec<SetElement> {
    let mut out = Vec::new();
    for reply in replies
        .iter()
        .filter(|r| r.msg_type == msg_type(NFT_MSG_NEWSETELEM))
    {
        for (_, elem) in nested(&reply.attrs, NFTA_SET_ELEM_LIST_ELEMENTS).unwrap_or_default() {
            let Ok(e) = attributes(&elem) else { continue };
            let flags = be32(&e, NFTA_SET_ELEM_FLAGS).unwrap_or(0);
            out.push(SetElement {
                key: value(&e, NFTA_SET_ELEM_KEY).unwrap_or_default(),
                interval_end: flags & NFT_SET_ELEM_INTERVAL_END != 0,
            });
        }
    }
    out
}

/// The chains of a chain dump with the rules of a rule dump in place, in the kernel's
/// order (a rule's position is its place in the dump of its chain).
pub fn ruleset(chain_replies: &[Reply], rule_replies: &[Reply]) -> Vec<NfChain> {
    let mut chains: Vec<NfChain> = chain_replies.iter().filter_map(chain_of).collect();
    for (family, table, chain, mut rule) in rule_replies.iter().filter_map(rule_of) {
        if let Some(c) = chains
            .iter_mut()
            .find(|c| c.family == family && c.table == table && c.name == chain)
        {
            rule.position = c.rules.len() + 1;
            c.rules.push(rule);
        }
    }
    chains
}

/// The sets the rules look up: (family, table, set).
fn sets_used(chains: &[NfChain]) -> BTreeSet<(u8, String, String)> {
    let mut out = BTreeSet::new();
    for c in chains {
        for r in &c.rules {
            for e in &r.exprs {
                if let Expr::Lookup { set, .. } = e {
                    out.insert((nfproto(c.family), c.table.clone(), set.clone()));
                }
            }
        }
    }
    out
}

fn nfproto(f: NfFamily) -> u8 {
    match f {
        NfFamily::Inet => 1,
        NfFamily::Ip => 2,
        NfFamily::Arp => 3,
        NfFamily::Netdev => 5,
        NfFamily::Bridge => 7,
        NfFamily::Ip6 => 10,
        NfFamily::Other(n) => n,
    }
}

/// One dump over a fresh socket: the replies, or the kernel's errno.
fn dump(request: &[u8], what: &str) -> Result<Result<Vec<Reply>, i32>, String> {
    let fail = |step: &str, e: std::io::Error| format!("nfnetlink socket: {step} ({what}): {e}");
    let socket = super::kernel_socket(netlink_sys::protocols::NETLINK_NETFILTER, "nfnetlink")?;
    socket.send(request, 0).map_err(|e| fail("send", e))?;
    let mut all = Vec::new();
    loop {
        let (bytes, _) = socket.recv_from_full().map_err(|e| fail("recv", e))?;
        if bytes.is_empty() {
            return Ok(Ok(all));
        }
        match parse_with_header(&bytes, NFGENMSG)? {
            Parsed::Errno(errno) => return Ok(Err(errno)),
            Parsed::Messages { replies, done } => {
                all.extend(replies);
                if done {
                    return Ok(Ok(all));
                }
            }
        }
    }
}

/// nf_tables' ruleset in this network namespace, sets' elements filled in.
fn nftables() -> Result<Vec<NfChain>, String> {
    let refused = |what: &str, errno: i32| {
        format!(
            "the kernel answered the nf_tables {what} dump with {}{}",
            crate::model::errno::errno_text(errno),
            if errno == libc::EPERM {
                " (reading the firewall needs CAP_NET_ADMIN: run as root)"
            } else {
                ""
            }
        )
    };
    let chains =
        dump(&request(NFT_MSG_GETCHAIN, 0, &[], 1), "chains")?.map_err(|e| refused("chain", e))?;
    let rules =
        dump(&request(NFT_MSG_GETRULE, 0, &[], 2), "rules")?.map_err(|e| refused("rule", e))?;
    let mut chains = ruleset(&chains, &rules);
    for (family, table, set) in sets_used(&chains) {
        let req = request(
            NFT_MSG_GETSETELEM,
            family,
            &[
                (NFTA_SET_ELEM_LIST_TABLE, &table),
                (NFTA_SET_ELEM_LIST_SET, &set),
            ],
            3,
        );
        // A set that cannot be read leaves its lookups undecided.
        let Ok(Ok(replies)) = dump(&req, "set elements") else {
            continue;
        };
        let elements = set_elements(&replies);
        for c in chains
            .iter_mut()
            .filter(|c| nfproto(c.family) == family && c.table == table)
        {
            for r in &mut c.rules {
                for e in &mut r.exprs {
                    if let Expr::Lookup {
                        set: s,
                        elements: el,
                        ..
                    } = e
                    {
                        if *s == set {
                            *el = Some(elements.clone());
                        }
                    }
                }
            }
        }
    }
    Ok(chains)
}

/// Whether nf_tables is in this kernel: loaded as a module, or built in. Asking nfnetlink
/// for a subsystem that is not there makes the kernel load its module (request_module),
/// which a diagnostic must not do; with no nf_tables no nftables rule can exist.
fn nf_tables_present() -> bool {
    if crate::gather::procfs::module_loaded("nf_tables")
        || std::path::Path::new("/sys/module/nf_tables").exists()
    {
        return true;
    }
    // Built in: the kernel's own list of what it holds without a module file.
    let builtin = crate::gather::procfs::kernel_release()
        .and_then(|r| std::fs::read_to_string(format!("/lib/modules/{r}/modules.builtin")).ok());
    builtin.is_some_and(|b| b.lines().any(|l| l.ends_with("/nf_tables.ko")))
}

/// Everything this process can read of the firewall in its network namespace.
pub fn firewall() -> Firewall {
    let mut fw = Firewall::default();
    if !nf_tables_present() {
        fw.read
            .push("nftables (nf_tables is not loaded: no rule there)".into());
    } else {
        read_nftables(&mut fw);
    }
    let (legacy, read, unread) = super::iptables::legacy_tables();
    fw.chains.extend(legacy);
    fw.read.extend(read);
    fw.unread.extend(unread);
    fw
}

fn read_nftables(fw: &mut Firewall) {
    match nftables() {
        Ok(chains) => {
            fw.read.push("nftables (netlink)".into());
            fw.chains.extend(chains);
        }
        Err(e) => fw.unread.push(format!("nftables: {e}")),
    }
}

/// One Soft-RoCE port's RoCE v2 through this host: arriving on `netdev` and leaving
/// through it, between `local` and `remote` (None: any peer); and in a same-host test also
/// through the peer's netdev (`peer_netdev`), which carries the other end of each packet.
/// Empty when the netdev is not in this network namespace.
pub fn roce_paths(
    port: &str,
    netdev: &str,
    local: IpAddr,
    remote: Option<IpAddr>,
    peer_netdev: Option<&str>,
) -> Vec<RocePath> {
    let Ok(links) = super::netdevs() else {
        return Vec::new();
    };
    let iface = |name: &str| {
        links.iter().find(|l| l.name == name).map(|l| Iface {
            index: l.index,
            name: l.name.clone(),
        })
    };
    let mut paths = Vec::new();
    if let Some(dev) = iface(netdev) {
        for arriving in [true, false] {
            paths.push(RocePath {
                port: port.to_string(),
                netdev: dev.clone(),
                arriving,
                local,
                remote,
                peer_netdev: false,
            });
        }
    }
    if let (Some(peer), Some(remote)) =
        (peer_netdev.filter(|p| *p != netdev).and_then(iface), remote)
    {
        for arriving in [true, false] {
            paths.push(RocePath {
                port: port.to_string(),
                netdev: peer.clone(),
                arriving,
                local: remote,
                remote: Some(local),
                peer_netdev: true,
            });
        }
    }
    paths
}

/// The firewall and `paths` through it; None when there is no path to judge.
pub fn roce_firewall(paths: Vec<RocePath>) -> Option<FirewallFacts> {
    (!paths.is_empty()).then(|| FirewallFacts {
        firewall: firewall(),
        paths,
        // "(none)" is the kernel's word for a host nobody named.
        host: crate::gather::procfs::hostname().filter(|h| !h.is_empty() && h != "(none)"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::netfilter::{describe, fate, Iface, Packet, PortField};

    /// One netlink attribute; nested ones are built from their own bytes.
    fn nla(kind: u16, payload: &[u8]) -> Vec<u8> {
        let mut a = Vec::new();
        a.extend_from_slice(&((4 + payload.len()) as u16).to_ne_bytes());
        a.extend_from_slice(&kind.to_ne_bytes());
        a.extend_from_slice(payload);
        while a.len() % 4 != 0 {
            a.push(0);
        }
        a
    }

    fn cstr(s: &str) -> Vec<u8> {
        let mut b = s.as_bytes().to_vec();
        b.push(0);
        b
    }

    fn message(op: u16, family: u8, attrs: &[Vec<u8>]) -> Vec<u8> {
        let body: Vec<u8> = attrs.concat();
        let mut m = Vec::new();
        m.extend_from_slice(&((16 + 4 + body.len()) as u32).to_ne_bytes());
        m.extend_from_slice(&msg_type(op).to_ne_bytes());
        m.extend_from_slice(&0x2u16.to_ne_bytes());
        m.extend_from_slice(&[1, 0, 0, 0, 0, 0, 0, 0]);
        m.extend_from_slice(&[family, 0, 0, 0]);
        m.extend_from_slice(&body);
        m
    }

    fn expr(name: &str, data: &[Vec<u8>]) -> Vec<u8> {
        nla(
            1,
            &[
                nla(NFTA_EXPR_NAME, &cstr(name)),
                nla(NFTA_EXPR_DATA | 0x8000, &data.concat()),
            ]
            .concat(),
        )
    }

    fn be(n: u32) -> Vec<u8> {
        n.to_be_bytes().to_vec()
    }

    /// The chain and rule `iptables -I INPUT -i veth0 -p udp --dport 4791 -j DROP` makes
    /// in iptables-nft 1.8.9, laid out as the kernel dumps them (the expressions as
    /// `nft --debug=netlink` showed them in the VM).
    fn dumps() -> (Vec<u8>, Vec<u8>) {
        let hook = nla(
            NFTA_CHAIN_HOOK | 0x8000,
            &[
                nla(NFTA_HOOK_HOOKNUM, &be(1)),
                nla(NFTA_HOOK_PRIORITY, &be(0)),
            ]
            .concat(),
        );
        let counters = nla(
            NFTA_CHAIN_COUNTERS | 0x8000,
            &[nla(1, &7u64.to_be_bytes()), nla(2, &1u64.to_be_bytes())].concat(),
        );
        let chain = message(
            NFT_MSG_NEWCHAIN,
            2,
            &[
                nla(NFTA_CHAIN_TABLE, &cstr("filter")),
                nla(2, &5u64.to_be_bytes()),
                nla(NFTA_CHAIN_NAME, &cstr("INPUT")),
                hook,
                nla(NFTA_CHAIN_POLICY, &be(1)),
                nla(7, &cstr("filter")),
                counters,
            ],
        );
        let data = |v: &[u8]| nla(3 | 0x8000, &nla(NFTA_DATA_VALUE, v));
        let exprs = [
            expr("meta", &[nla(2, &be(6)), nla(1, &be(1))]),
            expr("cmp", &[nla(1, &be(1)), nla(2, &be(0)), data(b"veth0\0")]),
            expr("meta", &[nla(2, &be(16)), nla(1, &be(1))]),
            expr("cmp", &[nla(1, &be(1)), nla(2, &be(0)), data(&[17])]),
            expr(
                "payload",
                &[
                    nla(1, &be(1)),
                    nla(2, &be(2)),
                    nla(3, &be(2)),
                    nla(4, &be(2)),
                ],
            ),
            expr(
                "cmp",
                &[nla(1, &be(1)), nla(2, &be(0)), data(&4791u16.to_be_bytes())],
            ),
            expr(
                "counter",
                &[
                    nla(1, &29904u64.to_be_bytes()),
                    nla(2, &28u64.to_be_bytes()),
                ],
            ),
            expr(
                "immediate",
                &[
                    nla(1, &be(0)),
                    nla(
                        2 | 0x8000,
                        &nla(NFTA_DATA_VERDICT | 0x8000, &nla(NFTA_VERDICT_CODE, &be(0))),
                    ),
                ],
            ),
        ];
        let rule = message(
            NFT_MSG_NEWRULE,
            2,
            &[
                nla(NFTA_RULE_TABLE, &cstr("filter")),
                nla(NFTA_RULE_CHAIN, &cstr("INPUT")),
                nla(NFTA_RULE_HANDLE, &2u64.to_be_bytes()),
                nla(NFTA_RULE_EXPRESSIONS | 0x8000, &exprs.concat()),
            ],
        );
        (chain, rule)
    }

    fn replies(buf: &[u8]) -> Vec<Reply> {
        match parse_with_header(buf, NFGENMSG).unwrap() {
            Parsed::Messages { replies, .. } => replies,
            Parsed::Errno(e) => panic!("errno {e}"),
        }
    }

    #[test]
    fn requests_are_nfnetlink_dumps() {
        let r = request(NFT_MSG_GETSETELEM, 1, &[(1, "fw"), (2, "__set0")], 3);
        assert_eq!(u16::from_ne_bytes([r[4], r[5]]), 0x0a0d);
        assert_eq!(u16::from_ne_bytes([r[6], r[7]]), 0x301);
        assert_eq!(&r[16..20], &[1, 0, 0, 0]);
        assert_eq!(
            u32::from_ne_bytes(r[0..4].try_into().unwrap()) as usize,
            r.len()
        );
        assert_eq!(&r[24..27], b"fw\0");
    }

    #[test]
    fn the_iptables_nft_rule_is_read_and_drops_roce_on_its_netdev() {
        let (chain, rule) = dumps();
        let chains = ruleset(&replies(&chain), &replies(&rule));
        assert_eq!(chains.len(), 1);
        let c = &chains[0];
        assert_eq!(
            (c.family, c.table.as_str(), c.name.as_str()),
            (NfFamily::Ip, "filter", "INPUT")
        );
        assert_eq!(
            c.base,
            Some(BaseHook {
                hook: Hook::Input,
                priority: 0
            })
        );
        assert_eq!(c.policy, Some(Action::Accept));
        assert_eq!(
            c.policy_counter,
            Some(RuleCounter {
                packets: 1,
                bytes: 7
            })
        );
        let r = &c.rules[0];
        assert_eq!((r.position, r.handle), (1, Some(2)));
        assert_eq!(
            describe(r, c.family),
            "iifname \"veth0\" meta l4proto udp th dport 4791 counter packets 28 bytes 29904 drop"
        );
        let fw = Firewall {
            chains,
            ..Default::default()
        };
        let veth0 = Iface {
            index: 3,
            name: "veth0".into(),
        };
        let p = Packet::arriving(
            "192.168.77.2".parse().unwrap(),
            "192.168.77.1".parse().unwrap(),
            veth0,
        );
        assert_eq!(fate(&fw, &p).dropped.unwrap().rule.unwrap().handle, Some(2));
    }

    #[test]
    fn xt_matches_decode_udp_and_multiport() {
        // udp --dport 4791: spts 0-65535, dpts 4791-4791, no inversion.
        let mut udp = Vec::new();
        for p in [0u16, 65535, 4791, 4791] {
            udp.extend_from_slice(&p.to_ne_bytes());
        }
        udp.extend_from_slice(&[0, 0, 0, 0]);
        assert_eq!(
            xt_match("udp", 0, &udp),
            vec![Expr::Ports {
                field: PortField::Destination,
                ranges: vec![(4791, 4791)],
                inverted: false
            }]
        );
        // multiport --dports 4000:4999,53
        let mut mp = vec![0u8; 48];
        mp[0] = 1;
        mp[1] = 3;
        for (i, p) in [4000u16, 4999, 53].iter().enumerate() {
            mp[2 + 2 * i..4 + 2 * i].copy_from_slice(&p.to_ne_bytes());
        }
        mp[32] = 1;
        assert_eq!(
            xt_match("multiport", 1, &mp),
            vec![Expr::Ports {
                field: PortField::Destination,
                ranges: vec![(4000, 4999), (53, 53)],
                inverted: false
            }]
        );
        assert_eq!(
            xt_match("conntrack", 3, &[]),
            vec![Expr::Opaque("match conntrack".into())]
        );
        assert_eq!(xt_target("REJECT"), vec![Expr::Verdict(Action::Reject)]);
        // A short or garbled blob is undecided, never a panic.
        assert_eq!(
            xt_match("udp", 0, &[1, 2]),
            vec![Expr::Opaque("udp".into())]
        );
        assert_eq!(
            xt_match("multiport", 1, &[9; 3]),
            vec![Expr::Opaque("match multiport".into())]
        );
    }

    #[test]
    fn set_elements_keep_interval_ends() {
        let elem = |port: u16, end: bool| {
            let mut a = nla(
                NFTA_SET_ELEM_KEY | 0x8000,
                &nla(NFTA_DATA_VALUE, &port.to_be_bytes()),
            );
            if end {
                a.extend(nla(NFTA_SET_ELEM_FLAGS, &be(1)));
            }
            nla(1 | 0x8000, &a)
        };
        let m = message(
            NFT_MSG_NEWSETELEM,
            1,
            &[
                nla(1, &cstr("fw")),
                nla(2, &cstr("__set0")),
                nla(3 | 0x8000, &[elem(4000, false), elem(5000, true)].concat()),
            ],
        );
        let els = set_elements(&replies(&m));
        assert_eq!(
            els,
            vec![
                SetElement {
                    key: 4000u16.to_be_bytes().to_vec(),
                    interval_end: false
                },
                SetElement {
                    key: 5000u16.to_be_bytes().to_vec(),
                    interval_end: true
                },
            ]
        );
    }

    /// A small xorshift generator: many arbitrary buffers, reproducibly.
    fn xorshift(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    #[test]
    fn damaged_dumps_never_panic() {
        let (chain, rule) = dumps();
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for round in 0..4000 {
            let mut buf = if round % 2 == 0 {
                chain.clone()
            } else {
                rule.clone()
            };
            match xorshift(&mut seed) % 3 {
                0 => {
                    for _ in 0..1 + xorshift(&mut seed) % 8 {
                        let bit = (xorshift(&mut seed) as usize) % (buf.len() * 8);
                        buf[bit / 8] ^= 1 << (bit % 8);
                    }
                }
                1 => buf.truncate((xorshift(&mut seed) as usize) % buf.len()),
                _ => {
                    let at = 20 + (xorshift(&mut seed) as usize) % (buf.len() - 20);
                    buf[at] = xorshift(&mut seed) as u8;
                }
            }
            if let Ok(Parsed::Messages { replies, .. }) = parse_with_header(&buf, NFGENMSG) {
                let chains = ruleset(&replies, &replies);
                let _ = set_elements(&replies);
                for c in &chains {
                    for r in &c.rules {
                        let _ = describe(r, c.family);
                    }
                }
            }
        }
    }
}
