//! Does this host's firewall drop a Soft-RoCE port's RoCE v2 (UDP 4791)? One judgement
//! of the gathered rules for `check`, `doctor` and a failed run, worded once: the rule that
//! drops it with its counter, the one that may (under a test rdmactl does not evaluate), or
//! what was read and passed it.

use crate::model::codes;
use crate::model::diagnostic::{Diagnostic, Seen, Severity, Source, Subject};
use crate::model::netfilter::{describe, fate, Backend, FirewallFacts, Hit, NfFamily, RocePath};

/// Why RoCE v2 meets netfilter here at all.
const WHY_NETFILTER: &str = "rxe sends and receives RoCE v2 as UDP to port 4791 through this host's IP stack, where netfilter filters it (a hardware RoCE NIC's traffic never reaches netfilter); the TCP exchange is not affected";

/// Each path's definite drop and possible drops.
struct Judged<'a> {
    dropped: Vec<(&'a RocePath, Hit)>,
    maybe: Vec<(&'a RocePath, Hit)>,
}

fn judge(facts: &FirewallFacts) -> Judged<'_> {
    let mut j = Judged {
        dropped: Vec::new(),
        maybe: Vec::new(),
    };
    for path in &facts.paths {
        let f = fate(&facts.firewall, &path.packet());
        if let Some(hit) = f.dropped {
            j.dropped.push((path, hit));
        }
        j.maybe.extend(f.maybe.into_iter().map(|h| (path, h)));
    }
    j
}

/// "arriving on veth0 from 192.168.77.2", "leaving through veth1 (the peer's netdev on this
/// host) toward any peer".
fn way(path: &RocePath) -> String {
    let dev = if path.peer_netdev {
        format!(
            "{} (the other end's netdev: both ends are on this host)",
            path.netdev.name
        )
    } else {
        path.netdev.name.clone()
    };
    let remote = path.remote.map_or_else(
        || "any peer".to_string(),
        |r| crate::model::gid::Gid::from_ip(r).ip().to_string(),
    );
    if path.arriving {
        format!("arriving on {dev} from {remote}")
    } else {
        format!("leaving through {dev} toward {remote}")
    }
}

fn backend_name(b: Backend) -> &'static str {
    match b {
        Backend::Nftables => "nftables",
        Backend::IptablesLegacy => "iptables-legacy",
        Backend::Ip6tablesLegacy => "ip6tables-legacy",
    }
}

/// iptables-nft keeps its rules in tables of these names, its chains in capitals.
fn made_by_iptables(hit: &Hit) -> bool {
    matches!(hit.family, NfFamily::Ip | NfFamily::Ip6)
        && matches!(
            hit.table.as_str(),
            "filter" | "raw" | "mangle" | "nat" | "security"
        )
        && hit.chain.chars().all(|c| !c.is_ascii_lowercase())
}

/// Where it is dropped: "rule 1 of chain INPUT in table ip filter (nftables, handle 2)".
fn place(hit: &Hit) -> String {
    let table = format!("table {} {}", hit.family.name(), hit.table);
    let via = if hit.via.is_empty() {
        String::new()
    } else {
        format!(", reached from {}", hit.via.join(" → "))
    };
    match &hit.rule {
        Some(rule) => {
            let handle = rule
                .handle
                .map(|h| format!(", handle {h}"))
                .unwrap_or_default();
            format!(
                "rule {} of chain {} in {table} ({}{handle}{via})",
                rule.position,
                hit.chain,
                backend_name(hit.backend)
            )
        }
        None => format!(
            "the drop policy of chain {} in {table} ({}): no rule accepts it first",
            hit.chain,
            backend_name(hit.backend)
        ),
    }
}

fn hit_lines(path: &RocePath, hit: &Hit) -> Vec<String> {
    let hook = format!("hook {}, priority {}", hit.hook.name(), hit.priority);
    let mut lines = vec![match &hit.rule {
        Some(rule) => format!(
            "{}: {} ({hook}): {}",
            way(path),
            place(hit),
            describe(rule, hit.family)
        ),
        None => format!("{}: {} ({hook})", way(path), place(hit)),
    }];
    let counter = match &hit.rule {
        Some(rule) => rule.counter(),
        None => hit.policy_counter,
    };
    lines.push(match counter {
        Some(c) => format!(
            "its counter: {} packets, {} bytes since it was loaded",
            c.packets, c.bytes
        ),
        None if hit.rule.is_some() => {
            "it has no counter (nft counts only with `counter`)".to_string()
        }
        None => "the chain keeps no counter of what its policy took".to_string(),
    });
    lines
}

/// The seen lines of the drops (or possible drops): each hit with its counter, why netfilter
/// sees RoCE at all, and what was read.
fn hits_evidence(hits: &[(&RocePath, Hit)], facts: &FirewallFacts) -> Vec<String> {
    hits.iter()
        .flat_map(|(p, h)| hit_lines(p, h))
        .chain([WHY_NETFILTER.to_string(), read_line(facts)])
        .collect()
}

fn read_line(facts: &FirewallFacts) -> String {
    let mut line = if facts.firewall.read.is_empty() {
        "read: nothing".to_string()
    } else {
        format!("read: {}", facts.firewall.read.join(", "))
    };
    if !facts.firewall.unread.is_empty() {
        line.push_str(&format!("; not read: {}", facts.firewall.unread.join("; ")));
    }
    line
}

/// The commands that take the drops away, each once: delete each rule, or accept RoCE v2
/// ahead of it on each netdev it drops (a same-host test crosses two).
fn fix(hits: &[(&RocePath, Hit)]) -> String {
    let mut deletes: Vec<String> = Vec::new();
    let mut accepts: Vec<String> = Vec::new();
    let push = |list: &mut Vec<String>, cmd: String| {
        if !list.contains(&cmd) {
            list.push(cmd);
        }
    };
    for (path, hit) in hits {
        let (delete, accept) = commands(path, hit);
        if let Some(d) = delete {
            push(&mut deletes, d);
        }
        push(&mut accepts, accept);
    }
    let accepts = accepts.join(" and ");
    if deletes.is_empty() {
        return format!("accept RoCE v2 from the RDMA peers in that chain: {accepts}");
    }
    format!(
        "delete the rule: {}; or accept RoCE v2 from the RDMA peers ahead of it: {accepts}",
        deletes.join(" and ")
    )
}

/// One hit's delete command (None for a policy) and accept command, quoted.
fn commands(path: &RocePath, hit: &Hit) -> (Option<String>, String) {
    let dev = &path.netdev.name;
    let dir = if path.arriving { "-i" } else { "-o" };
    let nft_dir = if path.arriving { "iifname" } else { "oifname" };
    let (tool, iptables) = match hit.backend {
        Backend::IptablesLegacy => ("iptables-legacy", true),
        Backend::Ip6tablesLegacy => ("ip6tables-legacy", true),
        Backend::Nftables if made_by_iptables(hit) => (
            if hit.family == NfFamily::Ip6 {
                "ip6tables"
            } else {
                "iptables"
            },
            true,
        ),
        Backend::Nftables => ("nft", false),
    };
    let accept = if iptables {
        format!(
            "`{tool} -I {} {dir} {dev} -p udp --dport 4791 -j ACCEPT`",
            hit.chain
        )
    } else {
        format!(
            "`nft insert rule {} {} {} {nft_dir} \"{dev}\" udp dport 4791 accept`",
            hit.family.name(),
            hit.table,
            hit.chain
        )
    };
    let delete = hit
        .rule
        .as_ref()
        .map(|rule| match (hit.backend, rule.handle) {
            (Backend::Nftables, Some(h)) if iptables => format!(
                "`{tool} -D {} {}` (or `nft delete rule {} {} {} handle {h}`)",
                hit.chain,
                rule.position,
                hit.family.name(),
                hit.table,
                hit.chain
            ),
            (Backend::Nftables, Some(h)) => format!(
                "`nft delete rule {} {} {} handle {h}`",
                hit.family.name(),
                hit.table,
                hit.chain
            ),
            _ => format!("`{tool} -D {} {}`", hit.chain, rule.position),
        });
    (delete, accept)
}

/// `check`'s and `doctor`'s finding for one port.
pub fn finding(subject: Option<Subject>, facts: &FirewallFacts) -> Diagnostic {
    let about = |d: Diagnostic| match &subject {
        Some(s) => d.about(s.clone()),
        None => d,
    };
    let j = judge(facts);
    if let Some((path, hit)) = j.dropped.first() {
        let mut d = Diagnostic::finding(
            Severity::Fail,
            codes::FIREWALL,
            format!(
                "this host's firewall drops RoCE v2 (UDP 4791) {}: {}",
                way(path),
                place(hit)
            ),
        );
        for line in hits_evidence(&j.dropped, facts) {
            d = d.evidence(line);
        }
        return about(d.fix(fix(&j.dropped)));
    }
    if let Some((path, hit)) = j.maybe.first() {
        let rule = hit
            .rule
            .as_ref()
            .map(|r| describe(r, hit.family))
            .unwrap_or_default();
        let mut d = Diagnostic::finding(
            Severity::Warn,
            codes::FIREWALL,
            format!(
                "this host's firewall may drop RoCE v2 (UDP 4791) {}: {} drops it when a test rdmactl does not evaluate holds ({rule})",
                way(path),
                place(hit)
            ),
        );
        for line in hits_evidence(&j.maybe, facts) {
            d = d.evidence(line);
        }
        return about(d.fix(format!(
            "see whether its counter grows during a run; {}",
            fix(&j.maybe)
        )));
    }
    let ways: Vec<String> = facts.paths.iter().map(way).collect();
    if !facts.firewall.unread.is_empty() {
        return about(
            Diagnostic::finding(
                Severity::Info,
                codes::FIREWALL,
                format!(
                    "cannot tell whether this host's firewall drops RoCE v2 (UDP 4791): {}",
                    facts.firewall.unread.join("; ")
                ),
            )
            .evidence(WHY_NETFILTER)
            .evidence(read_line(facts))
            .fix("run as root: netfilter answers only CAP_NET_ADMIN"),
        );
    }
    about(
        Diagnostic::finding(
            Severity::Ok,
            codes::FIREWALL,
            format!(
                "this host's firewall passes RoCE v2 (UDP 4791) {}",
                ways.join(" and ")
            ),
        )
        .evidence(read_line(facts)),
    )
}

/// A failed run's cause when the firewall drops its packets; None when nothing read drops
/// them (a rule that only may drop them is no cause: it is said by `ruled_out`'s absence).
pub fn explanation(facts: &FirewallFacts) -> Option<Diagnostic> {
    let j = judge(facts);
    let (path, hit) = j.dropped.first()?;
    // Said to the peer too, which prints it as the cause: the host by name.
    let whose = facts.host.as_ref().map_or_else(
        || "this host's firewall".to_string(),
        |h| format!("the firewall of host {h}"),
    );
    let evidence = hits_evidence(&j.dropped, facts)
        .into_iter()
        .map(|l| Seen::new(Source::Host, l))
        .collect();
    Some(Diagnostic {
        evidence,
        ..Diagnostic::explanation(
            codes::FIREWALL,
            format!(
                "{whose} drops the RoCE v2 packets (UDP 4791) {}, so none is acknowledged: {}",
                way(path),
                place(hit)
            ),
            fix(&j.dropped),
        )
    })
}

/// What a run that failed for no visible reason can rule out: every rule of every source
/// read, and none drops or may drop its packets here.
pub fn ruled_out(facts: &FirewallFacts) -> Option<Seen> {
    let j = judge(facts);
    if !j.dropped.is_empty() || !j.maybe.is_empty() || !facts.firewall.unread.is_empty() {
        return None;
    }
    let ways: Vec<String> = facts.paths.iter().map(way).collect();
    Some(Seen::new(
        Source::Host,
        format!(
            "this host's firewall passes RoCE v2 {} ({})",
            ways.join(" and "),
            read_line(facts)
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::netfilter::{
        Action, BaseHook, Expr, Field, Firewall, Hook, Iface, MetaKey, NfChain, NfRule, RuleCounter,
    };

    fn path(arriving: bool, dev: &str, peer_netdev: bool) -> RocePath {
        RocePath {
            port: "rxe0/1".into(),
            netdev: Iface {
                index: 3,
                name: dev.into(),
            },
            arriving,
            local: "::ffff:192.168.77.1".parse().unwrap(),
            remote: Some("::ffff:192.168.77.2".parse().unwrap()),
            peer_netdev,
        }
    }

    fn dport_4791() -> Vec<Expr> {
        vec![
            Expr::Load {
                dreg: 1,
                field: Field::Meta(MetaKey::L4Proto),
            },
            Expr::Cmp {
                sreg: 1,
                op: crate::model::netfilter::CmpOp::Eq,
                data: vec![17],
            },
            Expr::Load {
                dreg: 1,
                field: Field::Payload {
                    base: crate::model::netfilter::Base::Transport,
                    offset: 2,
                    len: 2,
                },
            },
            Expr::Cmp {
                sreg: 1,
                op: crate::model::netfilter::CmpOp::Eq,
                data: 4791u16.to_be_bytes().to_vec(),
            },
        ]
    }

    fn facts(extra: Vec<Expr>, backend: Backend, table: &str, chain: &str) -> FirewallFacts {
        let mut exprs = dport_4791();
        exprs.extend(extra);
        FirewallFacts {
            firewall: Firewall {
                chains: vec![NfChain {
                    backend,
                    family: NfFamily::Ip,
                    table: table.into(),
                    name: chain.into(),
                    base: Some(BaseHook {
                        hook: Hook::Input,
                        priority: 0,
                    }),
                    policy: Some(Action::Accept),
                    policy_counter: None,
                    rules: vec![NfRule {
                        position: 1,
                        handle: (backend == Backend::Nftables).then_some(2),
                        exprs,
                    }],
                }],
                read: vec!["nftables (netlink)".into()],
                unread: vec![],
            },
            paths: vec![path(true, "veth0", false), path(false, "veth0", false)],
            host: Some("node7".into()),
        }
    }

    fn drop_counted() -> Vec<Expr> {
        vec![
            Expr::RuleCounter(RuleCounter {
                packets: 28,
                bytes: 29904,
            }),
            Expr::Verdict(Action::Drop),
        ]
    }

    /// The VM's case: iptables (nft flavour) drops UDP 4791 on the input hook.
    #[test]
    fn an_iptables_drop_is_named_with_its_counter_and_both_commands() {
        let f = facts(drop_counted(), Backend::Nftables, "filter", "INPUT");
        let d = finding(Some(Subject::Port("rxe0".into(), 1)), &f);
        assert_eq!(d.severity, Severity::Fail);
        assert_eq!(
            d.message,
            "this host's firewall drops RoCE v2 (UDP 4791) arriving on veth0 from 192.168.77.2: rule 1 of chain INPUT in table ip filter (nftables, handle 2)"
        );
        let ev: Vec<&str> = d.evidence.iter().map(|s| s.text.as_str()).collect();
        assert!(
            ev.iter()
                .any(|l| l.contains("its counter: 28 packets, 29904 bytes")),
            "{ev:?}"
        );
        assert!(
            ev.iter().any(|l| l
                .ends_with("meta l4proto udp th dport 4791 counter packets 28 bytes 29904 drop")),
            "{ev:?}"
        );
        assert_eq!(
            d.fix_text(),
            "delete the rule: `iptables -D INPUT 1` (or `nft delete rule ip filter INPUT handle 2`); or accept RoCE v2 from the RDMA peers ahead of it: `iptables -I INPUT -i veth0 -p udp --dport 4791 -j ACCEPT`"
        );
        let x = explanation(&f).expect("a cause");
        assert!(x.message.starts_with("the firewall of host node7 drops the RoCE v2 packets (UDP 4791) arriving on veth0 from 192.168.77.2, so none is acknowledged"), "{}", x.message);
        // Nothing of the old guesses.
        for false_cause in ["switch", "RoCE v1", "wrong GID", "peer process"] {
            assert!(!x.message.contains(false_cause) && !x.fix_text().contains(false_cause));
        }
        assert_eq!(ruled_out(&f), None);
    }

    #[test]
    fn a_native_nft_table_gets_the_nft_commands_and_legacy_its_tool() {
        let f = facts(drop_counted(), Backend::Nftables, "fw", "in");
        let d = finding(None, &f);
        assert_eq!(
            d.fix_text(),
            "delete the rule: `nft delete rule ip fw in handle 2`; or accept RoCE v2 from the RDMA peers ahead of it: `nft insert rule ip fw in iifname \"veth0\" udp dport 4791 accept`"
        );
        let f = facts(drop_counted(), Backend::IptablesLegacy, "filter", "INPUT");
        let d = finding(None, &f);
        assert!(
            d.message
                .ends_with("rule 1 of chain INPUT in table ip filter (iptables-legacy)"),
            "{}",
            d.message
        );
        assert!(d
            .fix_text()
            .starts_with("delete the rule: `iptables-legacy -D INPUT 1`"));
    }

    #[test]
    fn an_undecided_rule_is_a_warning_and_no_cause_of_a_failed_run() {
        let mut extra = vec![Expr::Opaque("limit".into())];
        extra.extend(drop_counted());
        let f = facts(extra, Backend::Nftables, "fw", "in");
        let d = finding(None, &f);
        assert_eq!(d.severity, Severity::Warn);
        assert!(d.message.contains("may drop"), "{}", d.message);
        assert!(d.message.contains("[limit]"), "{}", d.message);
        assert_eq!(explanation(&f), None);
        assert_eq!(ruled_out(&f), None);
    }

    #[test]
    fn passing_rules_rule_the_firewall_out_and_unread_ones_do_not() {
        let mut f = facts(
            vec![Expr::Verdict(Action::Accept)],
            Backend::Nftables,
            "fw",
            "in",
        );
        let d = finding(None, &f);
        assert_eq!(d.severity, Severity::Ok);
        assert_eq!(
            d.message,
            "this host's firewall passes RoCE v2 (UDP 4791) arriving on veth0 from 192.168.77.2 and leaving through veth0 toward 192.168.77.2"
        );
        assert!(ruled_out(&f)
            .unwrap()
            .text
            .contains("read: nftables (netlink)"));
        f.firewall
            .unread
            .push("nftables: the kernel answered the nf_tables chain dump with EPERM".into());
        let d = finding(None, &f);
        assert_eq!(d.severity, Severity::Info);
        assert!(d.message.starts_with("cannot tell whether"));
        assert_eq!(
            d.fix_text(),
            "run as root: netfilter answers only CAP_NET_ADMIN"
        );
        assert_eq!(ruled_out(&f), None);
    }

    #[test]
    fn the_peers_netdev_on_this_host_is_named_as_the_peers() {
        let mut f = facts(drop_counted(), Backend::Nftables, "filter", "INPUT");
        f.paths = vec![path(true, "veth0", true)];
        let x = explanation(&f).unwrap();
        assert!(
            x.message
                .contains("arriving on veth0 (the other end's netdev: both ends are on this host)"),
            "{}",
            x.message
        );
        // Both netdevs of a same-host test dropped by a policy: an accept for each.
        let mut f = facts(
            vec![Expr::Verdict(Action::Continue)],
            Backend::Nftables,
            "fw",
            "in",
        );
        f.firewall.chains[0].policy = Some(Action::Drop);
        f.paths = vec![path(true, "veth0", false), path(true, "veth1", true)];
        assert_eq!(
            explanation(&f).unwrap().fix_text(),
            "accept RoCE v2 from the RDMA peers in that chain: `nft insert rule ip fw in iifname \"veth0\" udp dport 4791 accept` and `nft insert rule ip fw in iifname \"veth1\" udp dport 4791 accept`"
        );
    }
}
