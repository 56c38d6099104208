//! `subnet`'s rules: the subnet manager, links trained below their norm or below what both
//! ends support, error counters on either end of a link, MTU and VL mismatches, nodes that
//! did not answer, and changes since a baseline. Pure: a `Subnet` (and a `TopologyBaseline`) in,
//! findings out, worst first.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::codes;
use crate::model::counter::{Counter, CounterSource, Flavor};
use crate::model::diagnostic::{Diagnostic, Severity, Subject};
use crate::model::mad::Speed;
use crate::model::topology::{guid_text, End, Link, Subnet, TopologyBaseline};

/// Counters judged on each link end: (name, count from which it is a problem). A few
/// symbol errors follow every link training; one link-downed or integrity error does not.
const ERROR_THRESHOLDS: &[(&str, u64)] = &[
    ("symbol_error", 10),
    ("link_error_recovery", 1),
    ("link_downed", 1),
    ("port_rcv_errors", 10),
    ("port_rcv_remote_physical_errors", 10),
    ("local_link_integrity_errors", 1),
    ("excessive_buffer_overrun_errors", 1),
    ("port_xmit_discards", 100),
    ("port_rcv_switch_relay_errors", 100),
    ("VL15_dropped", 100),
];

fn with_subject(mut f: Diagnostic, subject: String) -> Diagnostic {
    f.subject = Some(Subject::Other(subject));
    f
}

pub fn judge(subnet: &Subnet, baseline: Option<&TopologyBaseline>) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    out.extend(sm(subnet));
    out.extend(unanswered(subnet));
    out.extend(degraded(subnet));
    out.extend(counters(subnet));
    out.extend(mismatches(subnet));
    if let Some(b) = baseline {
        out.extend(compare(subnet, b));
    }
    // Worst first; the order within a severity is the rules' own (stable).
    out.sort_by_key(|f| std::cmp::Reverse(f.severity));
    out
}

/// The subnet manager: none, one master, or more than one.
pub fn sm(s: &Subnet) -> Vec<Diagnostic> {
    let masters: Vec<_> = s.sms.iter().filter(|m| m.state == "master").collect();
    let init_ports: usize = s
        .nodes
        .iter()
        .flat_map(|n| &n.ports)
        .filter(|p| p.state == "INIT")
        .count();
    let subject = "sm".to_string();
    match masters.len() {
        0 => {
            let mut f = Diagnostic::finding(
                Severity::Fail,
                codes::SUBNET_NO_SM,
                "no subnet manager is running: ports stay in INIT without LIDs, so no traffic \
                 can flow",
            )
            .evidence(format!(
                "the local port's SM LID is {}{}",
                s.local_sm_lid,
                if s.local_sm_lid == 0 {
                    " (none assigned)"
                } else {
                    ""
                }
            ))
            .evidence(format!("{init_ports} port(s) in INIT"));
            for other in &s.sms {
                f = f.evidence(format!(
                    "SM {} at LID {} is {}, priority {}",
                    guid_text(other.guid),
                    other.lid,
                    other.state,
                    other.priority
                ));
            }
            vec![with_subject(
                f.fix(
                    "start opensm on a host of this subnet (systemctl enable --now opensm), or \
                     enable the switch's embedded subnet manager",
                ),
                subject,
            )]
        }
        1 => {
            let m = masters[0];
            let standby = s.sms.iter().filter(|x| x.state == "standby").count();
            vec![with_subject(
                Diagnostic::finding(
                    Severity::Ok,
                    codes::SUBNET_SM,
                    format!(
                        "master SM {} at LID {}, priority {}{}",
                        guid_text(m.guid),
                        m.lid,
                        m.priority,
                        match standby {
                            0 => String::new(),
                            n => format!(", {n} standby"),
                        }
                    ),
                ),
                subject,
            )]
        }
        n => {
            let mut f = Diagnostic::finding(
                Severity::Fail,
                codes::SUBNET_SM_MULTIPLE_MASTERS,
                format!(
                    "{n} subnet managers claim to be master: they will fight over LIDs and \
                     routes"
                ),
            );
            for m in &masters {
                f = f.evidence(format!(
                    "master {} at LID {}, priority {}",
                    guid_text(m.guid),
                    m.lid,
                    m.priority
                ));
            }
            vec![with_subject(
                f.fix(
                    "run one master: stop the extra SMs, or give them distinct priorities so \
                     the others go standby (opensm -p)",
                ),
                subject,
            )]
        }
    }
}

/// Nodes and attributes that never answered, and the MADs it took.
fn unanswered(s: &Subnet) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let nodes: Vec<_> = s
        .unanswered
        .iter()
        .filter(|u| u.what == "NodeInfo")
        .collect();
    if !nodes.is_empty() {
        let mut f = Diagnostic::finding(
            Severity::Warn,
            codes::SUBNET_NODE_UNANSWERED,
            format!(
                "{} port(s) lead to a node that did not answer; what lies behind them is not \
                 in this report",
                nodes.len()
            ),
        );
        for u in &nodes {
            f = f.evidence(format!(
                "NodeInfo over {}{}",
                u.route,
                u.from
                    .map(|e| format!(" (out of {})", s.end_name(e)))
                    .unwrap_or_default()
            ));
        }
        out.push(with_subject(
            f.fix(
                "check the node is powered and its port is up; a node that drops MADs (a busy \
                 or faulty switch) answers with more --retries or a longer --timeout",
            ),
            "walk".into(),
        ));
    }
    let others: Vec<_> = s
        .unanswered
        .iter()
        .filter(|u| u.what != "NodeInfo")
        .collect();
    if !others.is_empty() {
        let mut f = Diagnostic::finding(
            Severity::Warn,
            codes::SUBNET_ATTRIBUTE_UNANSWERED,
            format!("{} request(s) got no usable answer", others.len()),
        );
        for u in others.iter().take(10) {
            f = f.evidence(format!("{} over {}", u.what, u.route));
        }
        out.push(with_subject(
            f.fix("re-run with more --retries or a longer --timeout"),
            "walk".into(),
        ));
    }
    if s.mads.resent > 0 {
        out.push(with_subject(
            Diagnostic::finding(
                Severity::Info,
                codes::SUBNET_MADS_RESENT,
                format!(
                    "{} of {} MADs went unanswered at first and were sent again; {} never got \
                     an answer",
                    s.mads.resent, s.mads.requests, s.mads.unanswered
                ),
            )
            .evidence("a node or link on the way drops management packets")
            .fix("if this repeats, look for the switch with errors on its ports below"),
            "walk".into(),
        ));
    }
    out
}

/// A link's own width, speed and both ends' best, read from its A end and B end.
struct Trained {
    link: Link,
    width: u8,
    speed: Speed,
    max_width: u8,
    max_speed: Speed,
    inter_switch: bool,
}

fn trained(s: &Subnet) -> Vec<Trained> {
    s.links
        .iter()
        .filter_map(|l| {
            let (a, b) = (s.port(l.a)?, s.port(l.b)?);
            if a.phys_state != "LINK_UP" || b.phys_state != "LINK_UP" {
                return None;
            }
            let switches = [l.a, l.b]
                .iter()
                .filter(|e| s.node(e.guid).is_some_and(|n| n.is_switch()))
                .count();
            Some(Trained {
                link: *l,
                width: a.width.min(b.width),
                speed: a.speed.min(b.speed),
                max_width: a.max_width.min(b.max_width),
                max_speed: a.max_speed.min(b.max_speed),
                inter_switch: switches == 2,
            })
        })
        .collect()
}

/// Links trained at a width or speed below both ends' capability, or below the norm of
/// links of their kind (switch to switch, switch to CA).
fn degraded(s: &Subnet) -> Vec<Diagnostic> {
    let all = trained(s);
    let mut out = Vec::new();
    for inter_switch in [true, false] {
        let kind: Vec<&Trained> = all
            .iter()
            .filter(|t| t.inter_switch == inter_switch)
            .collect();
        // The norm: the most common width and the most common speed of this kind.
        let norm = |f: &dyn Fn(&Trained) -> u32| -> Option<u32> {
            let mut count: BTreeMap<u32, usize> = BTreeMap::new();
            for t in &kind {
                *count.entry(f(t)).or_default() += 1;
            }
            let (best, n) = count.iter().max_by_key(|(v, n)| (**n, **v))?;
            // With two links of a kind there is no norm to fall below.
            (kind.len() >= 3 && *n * 2 > kind.len()).then_some(*best)
        };
        let norm_width = norm(&|t| u32::from(t.width));
        let norm_speed = norm(&|t| t.speed as u32);
        let what = if inter_switch {
            "inter-switch links"
        } else {
            "switch-to-CA links"
        };
        for t in &kind {
            let mut reasons = Vec::new();
            if t.max_width > 0 && t.width < t.max_width {
                reasons.push(format!(
                    "width {}X where both ends support {}X",
                    t.width, t.max_width
                ));
            } else if norm_width.is_some_and(|w| u32::from(t.width) < w) {
                reasons.push(format!(
                    "width {}X where most {what} run {}X",
                    t.width,
                    norm_width.unwrap_or(0)
                ));
            }
            if t.max_speed != Speed::Unknown && t.speed < t.max_speed {
                reasons.push(format!(
                    "speed {} where both ends support {}",
                    t.speed.name(),
                    t.max_speed.name()
                ));
            } else if let Some(n) = norm_speed.filter(|n| (t.speed as u32) < *n) {
                let norm_name = kind
                    .iter()
                    .find(|k| k.speed as u32 == n)
                    .map(|k| k.speed.name())
                    .unwrap_or("?");
                reasons.push(format!(
                    "speed {} where most {what} run {norm_name}",
                    t.speed.name()
                ));
            }
            if reasons.is_empty() {
                continue;
            }
            let mut f = Diagnostic::finding(
                Severity::Warn,
                codes::SUBNET_LINK_DEGRADED,
                format!(
                    "link trained at {}X {}: {}",
                    t.width,
                    t.speed.name(),
                    reasons.join("; ")
                ),
            );
            for end in [t.link.a, t.link.b] {
                if let Some(p) = s.port(end) {
                    f = f.evidence(format!(
                        "{}: active {}X {}, supported up to {}X {}",
                        s.end_name(end),
                        p.width,
                        p.speed.name(),
                        p.max_width,
                        p.max_speed.name()
                    ));
                }
            }
            out.push(with_subject(
                f.fix(
                    "a cable or port trained down: reseat or replace the cable, check the \
                     transceivers on both ends, then bounce the port (ibportstate ... reset)",
                ),
                s.link_name(&t.link),
            ));
        }
    }
    out
}

/// Error counters on both ends of each link, with their meanings: their totals against
/// the thresholds, or with `--interval` any increase between the two readings.
fn counters(s: &Subnet) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for link in &s.links {
        let mut lines = Vec::new();
        let mut saturated = false;
        for end in [link.a, link.b] {
            let Some(port) = s.port(end) else { continue };
            let Some(values) = port.counters.as_ref() else {
                continue;
            };
            for (name, value, width) in values {
                let Some(&(_, threshold)) = ERROR_THRESHOLDS.iter().find(|(n, _)| n == name) else {
                    continue;
                };
                let c = Counter::new(name, CounterSource::Counters, Flavor::Other, *value, false);
                let full = c.saturates && *value == max_of(*width);
                let meaning = c.meaning.map(|m| format!(": {m}")).unwrap_or_default();
                let before = match (s.interval_s, &port.counters_before) {
                    (Some(_), Some(b)) => b.iter().find(|(n, _, _)| n == name).map(|x| x.1),
                    _ => None,
                };
                let line = match (before, s.interval_s) {
                    (Some(b), Some(secs)) => {
                        if *value <= b && !full {
                            continue;
                        }
                        let grew = value.saturating_sub(b);
                        format!(
                            "{}: {name} +{grew} in {secs:.1} s ({:.1}/s), now {value}{}{meaning}",
                            s.end_name(end),
                            grew as f64 / secs.max(0.001),
                            if full {
                                format!(" (saturated at its {width}-bit maximum: the increase is not known)")
                            } else {
                                String::new()
                            }
                        )
                    }
                    _ => {
                        if *value < threshold {
                            continue;
                        }
                        format!(
                            "{}: {name} = {value}{}{meaning}",
                            s.end_name(end),
                            if full {
                                format!(" (saturated at its {width}-bit maximum: the true count is higher)")
                            } else {
                                String::new()
                            }
                        )
                    }
                };
                saturated |= full;
                lines.push(line);
            }
        }
        if lines.is_empty() {
            continue;
        }
        let message = match s.interval_s {
            Some(secs) => format!(
                "{} error counter(s) grew on this link in {secs:.1} s",
                lines.len()
            ),
            None => format!(
                "{} error counter(s) over threshold on this link",
                lines.len()
            ),
        };
        let mut f = Diagnostic::finding(
            if saturated {
                Severity::Fail
            } else {
                Severity::Warn
            },
            codes::SUBNET_LINK_ERRORS,
            message,
        );
        for l in lines {
            f = f.evidence(l);
        }
        out.push(with_subject(
            f.fix(
                "check the cable and transceivers of this link (reseat, swap, or replace), \
                 then clear the counters (--reset-counters) and watch whether they climb again",
            ),
            s.link_name(link),
        ));
    }
    out
}

fn max_of(width: u8) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

/// MTU or VL capability that differs between the two ends of a link.
fn mismatches(s: &Subnet) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for link in &s.links {
        let (Some(a), Some(b)) = (s.port(link.a), s.port(link.b)) else {
            continue;
        };
        if a.phys_state != "LINK_UP" || b.phys_state != "LINK_UP" {
            continue;
        }
        if a.mtu_cap != b.mtu_cap && a.mtu_cap != 0 && b.mtu_cap != 0 {
            out.push(with_subject(
                Diagnostic::finding(
                    Severity::Warn,
                    codes::SUBNET_MTU_MISMATCH,
                    format!(
                        "the two ends support different MTUs ({} and {}): the link runs at \
                         the smaller",
                        a.mtu_cap, b.mtu_cap
                    ),
                )
                .evidence(format!("{}: MTU cap {}", s.end_name(link.a), a.mtu_cap))
                .evidence(format!("{}: MTU cap {}", s.end_name(link.b), b.mtu_cap))
                .fix("set the same MTU on both ends (HCA firmware, switch port configuration)"),
                s.link_name(link),
            ));
        }
        if a.vl_cap != b.vl_cap && a.vl_cap != 0 && b.vl_cap != 0 {
            out.push(with_subject(
                Diagnostic::finding(
                    Severity::Warn,
                    codes::SUBNET_VL_MISMATCH,
                    format!(
                        "the two ends support different numbers of data VLs ({} and {}): QoS \
                         levels above the smaller share VLs on this link",
                        a.vl_cap, b.vl_cap
                    ),
                )
                .evidence(format!("{}: VL cap {}", s.end_name(link.a), a.vl_cap))
                .evidence(format!("{}: VL cap {}", s.end_name(link.b), b.vl_cap))
                .fix("align the VL capability of both ends, or map SLs to the common VLs"),
                s.link_name(link),
            ));
        }
    }
    out
}

/// Nodes and links missing, added, moved to another port, and LIDs changed since the
/// baseline.
pub fn compare(s: &Subnet, b: &TopologyBaseline) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let name = |guid: u64| -> String {
        match (s.node(guid), b.nodes.get(&guid)) {
            (Some(n), _) if !n.description.is_empty() => format!("\"{}\"", n.description),
            (_, Some((_, d, _))) if !d.is_empty() => format!("\"{d}\""),
            _ => guid_text(guid),
        }
    };
    let end_text = |e: End| format!("{} port {}", name(e.guid), e.port);
    for (guid, (is_switch, _, lid)) in &b.nodes {
        match s.node(*guid) {
            None => {
                let mut f = Diagnostic::finding(
                    Severity::Fail,
                    codes::SUBNET_NODE_MISSING,
                    format!(
                        "{} {} was in the baseline and is not in the subnet now",
                        if *is_switch { "switch" } else { "node" },
                        name(*guid)
                    ),
                )
                .evidence(format!(
                    "GUID {}, LID {lid} in the baseline",
                    guid_text(*guid)
                ));
                for l in b
                    .links
                    .iter()
                    .filter(|l| l.a.guid == *guid || l.b.guid == *guid)
                {
                    let peer = if l.a.guid == *guid { l.b } else { l.a };
                    let state = s
                        .port(peer)
                        .map(|p| format!("{} ({})", p.state, p.phys_state))
                        .unwrap_or_else(|| "not reached".into());
                    f = f.evidence(format!("its peer {} is {state}", end_text(peer)));
                }
                out.push(with_subject(
                    f.fix(
                        "check the node is powered and its cable seated; a peer port in \
                         POLLING sees no light from the other end",
                    ),
                    name(*guid),
                ));
            }
            Some(n) if *lid != 0 && n.lid != 0 && n.lid != *lid => {
                out.push(with_subject(
                    Diagnostic::finding(
                        Severity::Info,
                        codes::SUBNET_LID_CHANGED,
                        format!("LID {} in the baseline, {} now", lid, n.lid),
                    )
                    .evidence(format!("GUID {}", guid_text(*guid)))
                    .fix("expected after an SM restart without a guid2lid cache; update anything that names the old LID"),
                    name(*guid),
                ));
            }
            _ => {}
        }
    }
    for n in &s.nodes {
        if !b.nodes.contains_key(&n.guid) {
            out.push(with_subject(
                Diagnostic::finding(
                    Severity::Info,
                    codes::SUBNET_NODE_ADDED,
                    format!(
                        "{} {} is new since the baseline",
                        if n.is_switch() { "switch" } else { "node" },
                        name(n.guid)
                    ),
                )
                .evidence(format!("GUID {}, LID {}", guid_text(n.guid), n.lid)),
                name(n.guid),
            ));
        }
    }
    let now: BTreeSet<Link> = s.links.iter().copied().collect();
    let then: BTreeSet<Link> = b.links.iter().copied().collect();
    let pair = |l: &Link| (l.a.guid.min(l.b.guid), l.a.guid.max(l.b.guid));
    for l in then.difference(&now) {
        // Both nodes are still here: moved to other ports, or the link is down.
        // A link to a node that is gone is named in that node's finding.
        if s.node(l.a.guid).is_none() || s.node(l.b.guid).is_none() {
            continue;
        }
        let moved: Vec<&Link> = now
            .difference(&then)
            .filter(|n| pair(n) == pair(l))
            .collect();
        if let Some(m) = moved.first() {
            out.push(with_subject(
                Diagnostic::finding(
                    Severity::Warn,
                    codes::SUBNET_LINK_MOVED,
                    "a cable was moved to another port since the baseline",
                )
                .evidence(format!("then: {} ↔ {}", end_text(l.a), end_text(l.b)))
                .evidence(format!("now: {} ↔ {}", end_text(m.a), end_text(m.b)))
                .fix("put the cable back, or take a new baseline if the move was meant"),
                format!("{} ↔ {}", end_text(l.a), end_text(l.b)),
            ));
            continue;
        }
        let mut f = Diagnostic::finding(
            Severity::Fail,
            codes::SUBNET_LINK_DOWN,
            "a link of the baseline is down",
        );
        for e in [l.a, l.b] {
            let state = s
                .port(e)
                .map(|p| {
                    let hint = if p.phys_state == "POLLING" {
                        ": no signal from the other end"
                    } else {
                        ""
                    };
                    format!("{} ({}){hint}", p.state, p.phys_state)
                })
                .unwrap_or_else(|| "not read".into());
            f = f.evidence(format!("{} is {state}", end_text(e)));
        }
        out.push(with_subject(
            f.fix("reseat or replace the cable; check that neither port is disabled (ibportstate)"),
            format!("{} ↔ {}", end_text(l.a), end_text(l.b)),
        ));
    }
    for l in now.difference(&then) {
        if !then.iter().any(|t| pair(t) == pair(l))
            && b.nodes.contains_key(&l.a.guid)
            && b.nodes.contains_key(&l.b.guid)
        {
            out.push(with_subject(
                Diagnostic::finding(
                    Severity::Info,
                    codes::SUBNET_LINK_ADDED,
                    "a link that was not in the baseline",
                ),
                format!("{} ↔ {}", end_text(l.a), end_text(l.b)),
            ));
        }
    }
    out
}

/// What to do when the umad device would not open, by errno.
pub fn umad_open_fix(errno: Option<i32>) -> &'static str {
    match errno {
        Some(libc::EACCES) | Some(libc::EPERM) => {
            ": sending MADs needs read-write access to the umad device; run as root, or add \
             yourself to the group that owns it (often `rdma`) with a udev rule such as \
             KERNEL==\"umad*\", GROUP=\"rdma\", MODE=\"0660\" in /etc/udev/rules.d/"
        }
        Some(libc::ENOENT) | Some(libc::ENODEV) => {
            ": the umad device node is missing; modprobe ib_umad, and check udev created \
             /dev/infiniband/umad*"
        }
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_umad_device_that_will_not_open_says_how_to_get_access() {
        let denied = umad_open_fix(Some(libc::EACCES));
        assert!(
            denied.contains("root") && denied.contains("`rdma`"),
            "{denied}"
        );
        assert!(denied.contains("KERNEL==\"umad*\""), "{denied}");
        assert!(umad_open_fix(Some(libc::ENOENT)).contains("modprobe ib_umad"));
        assert_eq!(umad_open_fix(Some(libc::EIO)), "");
    }
    use crate::model::mad::MadNodeType;
    use crate::model::topology::{MadStats, Node, SmSeen, SubnetPort};

    fn port(num: u8, width: u8, speed: Speed) -> SubnetPort {
        SubnetPort {
            port: num,
            lid: 0,
            state: "ACTIVE",
            phys_state: "LINK_UP",
            width,
            max_width: width,
            speed,
            max_speed: speed,
            supported_width: width,
            supported_speed: speed,
            mtu_cap: 4096,
            active_mtu: 4096,
            vl_cap: 8,
            operational_vls: 8,
            sm_lid: 1,
            is_sm: false,
            counters: None,
            counters_before: None,
        }
    }

    fn node(guid: u64, t: MadNodeType, desc: &str, lid: u16, ports: Vec<SubnetPort>) -> Node {
        Node {
            guid,
            node_type: t,
            description: desc.into(),
            lid,
            num_ports: ports.len() as u8,
            system_image_guid: guid,
            vendor_id: 0,
            device_id: 0,
            enhanced_port0: false,
            port_guids: vec![],
            route: vec![],
            ports,
        }
    }

    fn end(guid: u64, port: u8) -> End {
        End { guid, port }
    }

    /// Two switches joined by four EDR links, the fourth at DDR; three hosts at 4X EDR,
    /// the third at 1X.
    fn fabric() -> Subnet {
        let mut s1 = vec![port(0, 0, Speed::Unknown)];
        let mut s2 = vec![port(0, 0, Speed::Unknown)];
        for p in 1..=4 {
            let speed = if p == 4 { Speed::Ddr } else { Speed::Edr };
            s1.push(port(p, 4, speed));
            s2.push(port(p, 4, speed));
        }
        for p in 5..=7 {
            s1.push(port(p, if p == 7 { 1 } else { 4 }, Speed::Edr));
        }
        let mut nodes = vec![
            node(0xa, MadNodeType::Switch, "leaf1", 1, s1),
            node(0xb, MadNodeType::Switch, "spine1", 2, s2),
        ];
        let mut links = Vec::new();
        for p in 1..=4 {
            links.push(Link::new(end(0xa, p), end(0xb, p)));
        }
        for (i, p) in (5..=7).enumerate() {
            let width = if p == 7 { 1 } else { 4 };
            let host = 0x100 + i as u64;
            nodes.push(node(
                host,
                MadNodeType::Ca,
                &format!("node04{i} HCA-1"),
                10 + i as u16,
                vec![port(1, width, Speed::Edr)],
            ));
            links.push(Link::new(end(0xa, p), end(host, 1)));
        }
        Subnet {
            local: end(0x100, 1),
            local_lid: 10,
            local_sm_lid: 1,
            local_state: "ACTIVE",
            nodes,
            links,
            sms: vec![SmSeen {
                guid: 0xa,
                lid: 1,
                priority: 0,
                state: "master",
                act_count: 9,
            }],
            unanswered: vec![],
            mads: MadStats::default(),
            mads_by_node: vec![],
            counters_skipped: vec![],
            elapsed_ms: 1,
            interval_s: None,
        }
    }

    fn codes(f: &[Diagnostic]) -> Vec<&str> {
        f.iter().map(|f| f.code.as_str()).collect()
    }

    #[test]
    fn a_clean_fabric_has_only_the_sm_finding() {
        let mut s = fabric();
        for n in &mut s.nodes {
            for p in &mut n.ports {
                p.width = if p.port == 0 { 0 } else { 4 };
                if p.port != 0 {
                    p.speed = Speed::Edr;
                    p.max_speed = Speed::Edr;
                    p.max_width = 4;
                }
            }
        }
        let f = judge(&s, None);
        assert_eq!(codes(&f), ["subnet-sm"]);
    }

    #[test]
    fn the_ddr_inter_switch_link_and_the_1x_host_link_are_degraded() {
        let s = fabric();
        let f: Vec<_> = judge(&s, None)
            .into_iter()
            .filter(|f| f.code == "subnet-link-degraded")
            .collect();
        assert_eq!(f.len(), 2, "{f:#?}");
        let ddr = &f[0];
        assert!(ddr
            .message
            .contains("speed DDR where most inter-switch links run EDR"));
        assert_eq!(
            ddr.label(),
            "switch \"leaf1\" port 4 ↔ switch \"spine1\" port 4"
        );
        let narrow = &f[1];
        assert!(narrow
            .message
            .contains("width 1X where most switch-to-CA links run 4X"));
        assert!(narrow.label().contains("\"node042 HCA-1\" port 1"));
    }

    #[test]
    fn a_link_below_what_both_ends_support_is_degraded_without_a_norm() {
        let mut s = fabric();
        s.links.truncate(1);
        s.nodes.truncate(2);
        for n in &mut s.nodes {
            n.ports[1].width = 1;
        }
        let f = judge(&s, None);
        let d = f.iter().find(|f| f.code == "subnet-link-degraded").unwrap();
        assert!(
            d.message.contains("width 1X where both ends support 4X"),
            "{}",
            d.message
        );
    }

    #[test]
    fn no_master_sm_fails_with_the_init_ports_and_the_fix() {
        let mut s = fabric();
        s.sms.clear();
        s.local_sm_lid = 0;
        s.nodes[2].ports[0].state = "INIT";
        let f = judge(&s, None);
        assert_eq!(f[0].code, "subnet-no-sm");
        assert_eq!(f[0].severity, Severity::Fail);
        assert!(f[0]
            .evidence
            .iter()
            .any(|e| e == "the local port's SM LID is 0 (none assigned)"));
        assert!(f[0].evidence.iter().any(|e| e == "1 port(s) in INIT"));
        assert!(f[0].fix.as_deref().unwrap().contains("opensm"));
    }

    #[test]
    fn two_masters_are_a_failure() {
        let mut s = fabric();
        let mut other = s.sms[0].clone();
        other.guid = 0xb;
        s.sms.push(other);
        assert_eq!(judge(&s, None)[0].code, "subnet-sm-multiple-masters");
    }

    #[test]
    fn symbol_errors_and_link_downed_name_both_ends_and_saturation_fails() {
        let mut s = fabric();
        s.nodes[0].ports[2].counters = Some(vec![
            ("symbol_error", 77, 16),
            ("link_downed", 3, 8),
            ("port_xmit_data", 1_000_000, 32),
        ]);
        let f = judge(&s, None);
        let e = f.iter().find(|f| f.code == "subnet-link-errors").unwrap();
        assert_eq!(e.severity, Severity::Warn);
        assert_eq!(e.evidence.len(), 2);
        assert!(e.evidence[0]
            .starts_with("switch \"leaf1\" port 2: symbol_error = 77: minor link errors"));
        assert!(e.evidence[1].contains("link_downed = 3"));
        s.nodes[0].ports[2].counters = Some(vec![("symbol_error", 65535, 16)]);
        let e = judge(&s, None)
            .into_iter()
            .find(|f| f.code == "subnet-link-errors")
            .unwrap();
        assert_eq!(e.severity, Severity::Fail);
        assert!(e.evidence[0].contains("saturated at its 16-bit maximum"));
    }

    #[test]
    fn with_an_interval_any_increase_is_judged_and_a_steady_total_is_not() {
        let mut s = fabric();
        s.interval_s = Some(2.0);
        s.nodes[0].ports[2].counters_before =
            Some(vec![("symbol_error", 500, 16), ("link_downed", 4, 8)]);
        s.nodes[0].ports[2].counters = Some(vec![("symbol_error", 512, 16), ("link_downed", 4, 8)]);
        let f = judge(&s, None);
        let e = f.iter().find(|f| f.code == "subnet-link-errors").unwrap();
        assert_eq!(
            e.evidence.len(),
            1,
            "link_downed did not move: {:?}",
            e.evidence
        );
        assert!(
            e.evidence[0].contains("symbol_error +12 in 2.0 s (6.0/s), now 512"),
            "{}",
            e.evidence[0]
        );
        assert!(e.message.contains("grew on this link in 2.0 s"));
        s.nodes[0].ports[2].counters = s.nodes[0].ports[2].counters_before.clone();
        assert!(!codes(&judge(&s, None)).contains(&"subnet-link-errors"));
    }

    #[test]
    fn below_threshold_counts_are_not_findings() {
        let mut s = fabric();
        s.nodes[0].ports[1].counters = Some(vec![("symbol_error", 9, 16)]);
        assert!(!codes(&judge(&s, None)).contains(&"subnet-link-errors"));
    }

    #[test]
    fn mtu_mismatch_is_reported_with_both_ends() {
        let mut s = fabric();
        s.nodes[2].ports[0].mtu_cap = 2048;
        let f = judge(&s, None);
        let m = f.iter().find(|f| f.code == "subnet-mtu-mismatch").unwrap();
        assert!(m.message.contains("4096 and 2048") || m.message.contains("2048 and 4096"));
    }

    #[test]
    fn baseline_finds_a_missing_host_a_moved_cable_and_a_changed_lid() {
        let s = fabric();
        let mut b = TopologyBaseline::default();
        for n in &s.nodes {
            b.nodes
                .insert(n.guid, (n.is_switch(), n.description.clone(), n.lid));
        }
        b.links = s.links.clone();
        // A host that is gone, on leaf1 port 8.
        b.nodes.insert(0x200, (false, "node099 HCA-1".into(), 40));
        b.links.push(Link::new(end(0xa, 8), end(0x200, 1)));
        // The first host was on port 6 of leaf1 (now 5).
        b.links
            .retain(|l| *l != Link::new(end(0xa, 5), end(0x100, 1)));
        b.links.push(Link::new(end(0xa, 6), end(0x100, 1)));
        b.links
            .retain(|l| *l != Link::new(end(0xa, 6), end(0x101, 1)));
        b.nodes.get_mut(&0xb).unwrap().2 = 9;
        let f = compare(&s, &b);
        let c = codes(&f);
        assert!(c.contains(&"subnet-node-missing"), "{c:?}");
        assert!(c.contains(&"subnet-link-moved"), "{c:?}");
        assert!(c.contains(&"subnet-lid-changed"), "{c:?}");
        let missing = f.iter().find(|f| f.code == "subnet-node-missing").unwrap();
        assert!(missing.message.contains("\"node099 HCA-1\""));
        assert!(missing
            .evidence
            .iter()
            .any(|e| e.contains("\"leaf1\" port 8 is not read")
                || e.contains("\"leaf1\" port 8 is not reached")));
    }
}
