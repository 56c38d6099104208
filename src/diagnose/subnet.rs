//! `subnet`'s rules: the subnet manager, links not passing data, links trained below what
//! their ends allow (and links slower than the norm or than their parallel links only
//! because an end allows no more), every PMA error and congestion counter on either end of
//! a link with the cause it points at, MTU and VL mismatches, requests that went
//! unanswered, and changes since a baseline. Pure: a `Subnet` (and a `TopologyBaseline`)
//! in, findings out, worst first.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::codes::{self, Code};
use crate::model::counter::{Counter, CounterSource, Flavor};
use crate::model::device::{PhysState, PortState};
use crate::model::diagnostic::{Diagnostic, Severity, Subject};
use crate::model::mad::Speed;
use crate::model::topology::{guid_text, End, Link, Subnet, SubnetPort, TopologyBaseline};

/// What one PMA counter on a link end points at: the finding it feeds, from which total it
/// is a problem (with `--interval`, any increase is), and the cause and fix it stands for.
pub struct CounterRule {
    /// The counter's name as the PMA decoder (and sysfs) gives it.
    pub counter: &'static str,
    /// PortCounters' own name, as ibqueryerrors and perfquery print it.
    pub pma_name: &'static str,
    pub code: Code,
    pub threshold: u64,
    pub severity: Severity,
    pub cause: &'static str,
    pub fix: &'static str,
}

const CABLE_FIX: &str = "check the cable and transceivers of this link (reseat, swap, or \
     replace), then clear the counters (--reset-counters) and watch whether they climb again";

/// Every PortCounters error and congestion counter that ibqueryerrors reports, judged.
/// A few symbol errors follow every link training; one link-downed or integrity error
/// does not. The data and packet counters are not judged: they measure traffic.
pub const COUNTER_RULES: &[CounterRule] = &[
    CounterRule {
        counter: "symbol_error",
        pma_name: "SymbolErrorCounter",
        code: codes::SUBNET_LINK_ERRORS,
        threshold: 10,
        severity: Severity::Warn,
        cause: "bad symbols on this port's receiver: a marginal cable, transceiver or connector",
        fix: CABLE_FIX,
    },
    CounterRule {
        counter: "link_error_recovery",
        pma_name: "LinkErrorRecoveryCounter",
        code: codes::SUBNET_LINK_ERRORS,
        threshold: 1,
        severity: Severity::Warn,
        cause: "the link retrained after errors: a marginal cable or transceiver",
        fix: CABLE_FIX,
    },
    CounterRule {
        counter: "link_downed",
        pma_name: "LinkDownedCounter",
        code: codes::SUBNET_LINK_ERRORS,
        threshold: 1,
        severity: Severity::Warn,
        cause: "the link went down (a flapping cable, or the peer rebooted or reset its port)",
        fix: CABLE_FIX,
    },
    CounterRule {
        counter: "port_rcv_errors",
        pma_name: "PortRcvErrors",
        code: codes::SUBNET_LINK_ERRORS,
        threshold: 10,
        severity: Severity::Warn,
        cause: "packets received with errors (CRC, malformed): physical corruption on this link",
        fix: CABLE_FIX,
    },
    CounterRule {
        counter: "local_link_integrity_errors",
        pma_name: "LocalLinkIntegrityErrors",
        code: codes::SUBNET_LINK_ERRORS,
        threshold: 1,
        severity: Severity::Warn,
        cause: "the link's physical error rate passed its integrity threshold",
        fix: CABLE_FIX,
    },
    CounterRule {
        counter: "port_rcv_remote_physical_errors",
        pma_name: "PortRcvRemotePhysicalErrors",
        code: codes::SUBNET_REMOTE_PHYSICAL_ERRORS,
        threshold: 10,
        severity: Severity::Warn,
        cause: "packets arrived already marked bad by a link upstream: this link is not the cause",
        fix: "repair the upstream link named in the evidence (its own symbol or receive \
              errors); this link needs nothing",
    },
    CounterRule {
        counter: "port_rcv_switch_relay_errors",
        pma_name: "PortRcvSwitchRelayErrors",
        code: codes::SUBNET_RELAY_ERRORS,
        threshold: 100,
        severity: Severity::Warn,
        cause: "the switch could not forward packets it received: a DLID with no entry in its \
                forwarding table, a packet that would leave by the port it came in, or a \
                multicast group with no route: routing or a wrong DLID, not the cable",
        fix: "check the SM's routing (its log, and the switch's forwarding table for the DLIDs \
              in use: ibroute), and hosts that send to LIDs that no longer exist (stale LIDs \
              after an SM restart without a guid2lid cache)",
    },
    CounterRule {
        counter: "port_xmit_discards",
        pma_name: "PortXmitDiscards",
        code: codes::SUBNET_XMIT_DISCARDS,
        threshold: 100,
        severity: Severity::Warn,
        cause: "packets dropped on the way out: congestion (past the head-of-queue lifetime), \
                the port or its peer going down with packets queued, or a peer port not ACTIVE",
        fix: "if the link went down, see to that first; otherwise find the hot spot \
              (PortXmitWait here and on the next hops) and the traffic pattern, and check the \
              SM's head-of-queue lifetime and VL arbitration",
    },
    CounterRule {
        counter: "excessive_buffer_overrun_errors",
        pma_name: "ExcessiveBufferOverrunErrors",
        code: codes::SUBNET_BUFFER_OVERRUN,
        threshold: 1,
        severity: Severity::Warn,
        cause: "the receive buffer overflowed: the sender went past the flow-control credits \
                this end advertised, so the two ends disagree about credits or VLs",
        fix: "compare both ends' VL configuration (OperationalVLs, VL arbitration, buffer \
              allocation) and firmware; a new SM sweep gives both ends the same VL setup",
    },
    CounterRule {
        counter: "VL15_dropped",
        pma_name: "VL15Dropped",
        code: codes::SUBNET_VL15_DROPPED,
        threshold: 100,
        severity: Severity::Warn,
        cause: "subnet-management packets (SMPs) dropped for lack of buffers: an overloaded \
                SMA, or an SM storm (several SMs, a short sweep interval, a tool polling hard)",
        fix: "check how many SMs run and their sweep interval, and tools that poll the fabric \
              with SMPs (a walk with many MADs in flight adds to it); if this node alone drops \
              them, its management firmware",
    },
    CounterRule {
        counter: "port_xmit_constraint_errors",
        pma_name: "PortXmitConstraintErrors",
        code: codes::SUBNET_CONSTRAINT_ERRORS,
        threshold: 1,
        severity: Severity::Warn,
        cause: "partition enforcement dropped outbound packets: a P_Key the port on the other \
                side does not accept, or a filtered raw packet",
        fix: "check the SM's partition configuration (opensm's partitions.conf) against the \
              P_Keys the hosts use (`rdmactl ports -v` lists a port's P_Key table)",
    },
    CounterRule {
        counter: "port_rcv_constraint_errors",
        pma_name: "PortRcvConstraintErrors",
        code: codes::SUBNET_CONSTRAINT_ERRORS,
        threshold: 1,
        severity: Severity::Warn,
        cause: "partition enforcement dropped inbound packets: a sender used a P_Key this port \
                is not a member of",
        fix: "check the SM's partition configuration (opensm's partitions.conf) against the \
              P_Keys the hosts use (`rdmactl ports -v` lists a port's P_Key table)",
    },
    CounterRule {
        counter: "port_xmit_wait",
        pma_name: "PortXmitWait",
        code: codes::SUBNET_XMIT_WAIT,
        threshold: 1_000_000,
        severity: Severity::Info,
        cause: "ticks with data to send and no credit to send it: congestion on the next hop \
                or a slow receiver, not an error",
        fix: "only if jobs are slow: find the hot spot (the ports with the most wait) and the \
              traffic pattern; adaptive routing or another job placement",
    },
];

/// The counters whose counts say a link itself corrupts packets: where remote physical
/// errors come from.
const PHYSICAL: &[&str] = &[
    "symbol_error",
    "port_rcv_errors",
    "link_error_recovery",
    "local_link_integrity_errors",
];

fn with_subject(mut f: Diagnostic, subject: String) -> Diagnostic {
    f.subject = Some(Subject::Other(subject));
    f
}

pub fn judge(subnet: &Subnet, baseline: Option<&TopologyBaseline>) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    out.extend(sm(subnet));
    out.extend(not_active(subnet));
    out.extend(unanswered(subnet));
    out.extend(degraded(subnet));
    out.extend(parallel(subnet));
    out.extend(counters(subnet));
    out.extend(counters_unavailable(subnet));
    out.extend(mismatches(subnet));
    if let Some(b) = baseline {
        out.extend(compare(subnet, b));
    }
    // Worst first; the order within a severity is the rules' own (stable).
    out.sort_by_key(|f| std::cmp::Reverse(f.severity));
    out
}

fn is_up(p: &SubnetPort) -> bool {
    p.is_link_up()
}

/// Links physically up with an end that is not ACTIVE, with both ends' states.
fn idle_links(s: &Subnet) -> Vec<(Link, &SubnetPort, &SubnetPort)> {
    s.links
        .iter()
        .filter_map(|l| {
            let (a, b) = (s.port(l.a)?, s.port(l.b)?);
            (is_up(a) && is_up(b) && (!a.state.is_active() || !b.state.is_active()))
                .then_some((*l, a, b))
        })
        .collect()
}

fn ends_states(s: &Subnet, l: &Link, a: &SubnetPort, b: &SubnetPort) -> String {
    format!(
        "{} is {}, {} is {}",
        s.end_name(l.a),
        a.state_name(),
        s.end_name(l.b),
        b.state_name()
    )
}

/// The subnet manager: none (ports in INIT, or ports ACTIVE under an SM that has gone), one
/// master, or more than one.
pub fn sm(s: &Subnet) -> Vec<Diagnostic> {
    let masters: Vec<_> = s.sms.iter().filter(|m| m.state == "master").collect();
    let init_ports: usize = s
        .nodes
        .iter()
        .flat_map(|n| &n.ports)
        .filter(|p| p.state == PortState::Init && is_up(p))
        .count();
    let active_ports: usize = s
        .nodes
        .iter()
        .flat_map(|n| &n.ports)
        .filter(|p| p.port != 0 && p.state.is_active())
        .count();
    let subject = "sm".to_string();
    let others = |mut f: Diagnostic| {
        for u in s.unanswered.iter().filter(|u| u.what.starts_with("SMInfo")) {
            f = f.evidence(format!(
                "SMInfo got no answer from {} ({}), whose port still says it runs an SM: that \
                 SM is not running",
                node_at(s, &u.route).unwrap_or_else(|| u.route.clone()),
                u.route
            ));
        }
        for other in &s.sms {
            f = f.evidence(format!(
                "SM {} at LID {} is {}, priority {}",
                guid_text(other.guid),
                other.lid,
                other.state,
                other.priority
            ));
        }
        f
    };
    match masters.len() {
        0 if init_ports == 0 && active_ports > 0 => {
            let f = Diagnostic::finding(
                Severity::Fail,
                codes::SUBNET_SM_GONE,
                "no subnet manager answers, but the ports stay ACTIVE: forwarding goes on with \
                 the tables the last SM programmed, while SA queries fail (path records, so new \
                 rdma_cm connections and jobs that resolve paths; multicast joins) and no change \
                 in the fabric is handled",
            )
            .evidence(if s.local_sm_lid == 0 {
                "the local port's SM LID is 0".to_string()
            } else {
                format!(
                    "the local port's SM LID is {}: the SM that configured it does not answer \
                     SMInfo there",
                    s.local_sm_lid
                )
            })
            .evidence(format!(
                "{active_ports} port(s) ACTIVE with their LIDs, 0 in INIT"
            ));
            vec![with_subject(
                others(f).fix(
                    "restart the subnet manager (systemctl restart opensm on its host, or the \
                     switch's embedded SM), or bring up a standby, before the next change in \
                     the fabric",
                ),
                subject,
            )]
        }
        0 => {
            let idle = idle_links(s);
            let mut f = Diagnostic::finding(
                Severity::Fail,
                codes::SUBNET_NO_SM,
                format!(
                    "no subnet manager is running: {init_ports} port(s) stay in INIT without \
                     LIDs, so no traffic can flow"
                ),
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
            for (l, a, b) in idle.iter().take(10) {
                f = f.evidence(ends_states(s, l, a, b));
            }
            if idle.len() > 10 {
                f = f.evidence(format!("and {} more link(s) not ACTIVE", idle.len() - 10));
            }
            vec![with_subject(
                others(f).fix(
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

/// Links physically up that pass no data because an end is INIT or ARMED, with a master SM
/// present (without one, `sm` names them).
fn not_active(s: &Subnet) -> Vec<Diagnostic> {
    if !s.sms.iter().any(|m| m.state == "master") {
        return Vec::new();
    }
    idle_links(s)
        .into_iter()
        .map(|(l, a, b)| {
            let armed = a.state == PortState::Armed || b.state == PortState::Armed;
            let (message, fix) = if armed {
                (
                    "link up but not passing data: the SM set it ARMED and never ACTIVE, an SM \
                     sweep problem",
                    "read the master SM's log for errors on these ports (opensm: \
                     /var/log/opensm.log) and force a heavy sweep (send opensm SIGHUP); if it \
                     stays ARMED, reset the port (ibportstate LID PORT reset)",
                )
            } else {
                (
                    "link up but not passing data: an end is still INIT, so the SM has not \
                     configured it (new since its last sweep, unreachable to the SM, or refused)",
                    "wait one SM sweep (opensm's default is 10 s) and re-run; if it stays INIT, \
                     look for the port's GUID in the SM's log, then reset the port \
                     (ibportstate LID PORT reset)",
                )
            };
            let mut f = Diagnostic::finding(Severity::Fail, codes::SUBNET_LINK_NOT_ACTIVE, message);
            for (end, p) in [(l.a, a), (l.b, b)] {
                f = f.evidence(format!(
                    "{}: {} ({}){}",
                    s.end_name(end),
                    p.state_name(),
                    p.phys_state_name(),
                    lid_text(s, end, p)
                ));
            }
            with_subject(f.fix(fix), s.link_name(&l))
        })
        .collect()
}

/// The node a directed route leads to, by its name: "switch \"Switch1\"".
fn node_at(s: &Subnet, route: &str) -> Option<String> {
    let n = s.nodes.iter().find(|n| {
        let text: String = n.route.iter().map(|p| format!(",{p}")).collect();
        format!("DR path 0{text}") == route
    })?;
    Some(match (n.is_switch(), n.description.is_empty()) {
        (_, true) => guid_text(n.guid),
        (true, false) => format!("switch \"{}\"", n.description),
        (false, false) => format!("\"{}\"", n.description),
    })
}

/// ", LID 12" for a CA's port; a switch's external ports have no LID of their own.
fn lid_text(s: &Subnet, end: End, p: &SubnetPort) -> String {
    match s.node(end.guid) {
        Some(n) if n.is_switch() => String::new(),
        _ => format!(", LID {}", p.lid),
    }
}

/// What a nonzero MAD status says (IBA 13.4.7): the node answered and refused.
fn mad_status_meaning(status: u16) -> &'static str {
    if status & 0x0001 != 0 {
        return "busy: the node asks to be asked again later";
    }
    match (status >> 2) & 0x7 {
        1 => "bad version: the node does not speak this class version",
        2 => "method not supported",
        3 => "method and attribute combination not supported",
        7 => "an attribute or attribute modifier value the node does not support",
        _ => "an error status",
    }
}

/// Nodes and attributes that never answered (or answered with an error status), and the
/// MADs it took.
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
                "check the node is powered and its port is up (the walk gives up on a node, and \
                 what lies behind it, after about one --timeout of silence); a busy node that \
                 drops most of its MADs may answer with a longer --timeout",
            ),
            "walk".into(),
        ));
    }
    // An SM's silence is `sm`'s evidence, not a request to resend.
    let (refused, lost): (Vec<_>, Vec<_>) = s
        .unanswered
        .iter()
        .filter(|u| u.what != "NodeInfo" && !u.what.starts_with("SMInfo"))
        .partition(|u| u.status.is_some());
    if !lost.is_empty() {
        let port_infos = lost
            .iter()
            .filter(|u| u.what.starts_with("SmpPortInfo"))
            .count();
        let mut message = format!("{} request(s) got no answer", lost.len());
        if port_infos > 0 {
            message.push_str(&format!(
                ": the walk is incomplete, {port_infos} port(s) were not read and what lies \
                 behind them is not in this report"
            ));
        }
        let mut f =
            Diagnostic::finding(Severity::Warn, codes::SUBNET_ATTRIBUTE_UNANSWERED, message);
        for u in lost.iter().take(10) {
            f = f.evidence(format!("{} over {}", u.what, u.route));
        }
        if lost.len() > 10 {
            f = f.evidence(format!("and {} more", lost.len() - 10));
        }
        out.push(with_subject(
            f.fix(
                "re-run with more --retries or a longer --timeout; if the same node stays \
                   silent, check its management (SMA) and the links on its route",
            ),
            "walk".into(),
        ));
    }
    if !refused.is_empty() {
        let mut f = Diagnostic::finding(
            Severity::Warn,
            codes::SUBNET_ATTRIBUTE_UNANSWERED,
            format!(
                "{} request(s) were refused with an error status: resending cannot help",
                refused.len()
            ),
        );
        for u in refused.iter().take(10) {
            let meaning = u.status.map(mad_status_meaning).unwrap_or_default();
            f = f.evidence(format!("{} over {}: {meaning}", u.what, u.route));
        }
        out.push(with_subject(
            f.fix(
                "the node does not support what was asked (an older firmware or a PMA without \
                 the extended counters); its other answers stand",
            ),
            "walk".into(),
        ));
    }
    if s.mads.resent > 0 {
        let retried = if s.mads.retried > 0 {
            s.mads.retried
        } else {
            s.mads.resent.min(s.mads.requests)
        };
        let mut f = Diagnostic::finding(
            Severity::Info,
            codes::SUBNET_MADS_RESENT,
            format!(
                "{retried} of {} MADs went unanswered at first and were sent again ({} resends \
                 in all); {} never got an answer",
                s.mads.requests, s.mads.resent, s.mads.unanswered
            ),
        );
        let mut lossy: Vec<_> = s.mads_by_node.iter().filter(|n| n.retried > 0).collect();
        lossy.sort_by_key(|n| std::cmp::Reverse((n.retried * 1000 / n.requests.max(1), n.retried)));
        for n in lossy.iter().take(5) {
            let name = s
                .node(n.guid)
                .map(|node| {
                    if node.description.is_empty() {
                        guid_text(n.guid)
                    } else {
                        format!(
                            "{}\"{}\"",
                            if node.is_switch() { "switch " } else { "" },
                            node.description
                        )
                    }
                })
                .unwrap_or_else(|| guid_text(n.guid));
            f = f.evidence(format!(
                "{name}: {} of {} requests resent",
                n.retried, n.requests
            ));
        }
        let fix = if lossy.is_empty() {
            "if this repeats, something on the way drops management packets: look for \
             VL15Dropped on the switches"
                .to_string()
        } else {
            "if this repeats, the nodes named (or a switch on their route) drop management \
             packets: check their VL15Dropped and their management load"
                .to_string()
        };
        out.push(with_subject(f.fix(fix), "walk".into()));
    }
    out
}

/// A link's own width and speed and what its ends allow, read from both ends.
struct Trained {
    link: Link,
    width: u8,
    speed: Speed,
    /// The best both ends may run: supported and enabled.
    max_width: u8,
    max_speed: Speed,
    inter_switch: bool,
}

impl Trained {
    /// Below what both ends allow: trained down.
    fn trained_down(&self) -> bool {
        (self.max_width > 0 && self.width < self.max_width)
            || (self.max_speed != Speed::Unknown && self.speed < self.max_speed)
    }
}

fn trained(s: &Subnet) -> Vec<Trained> {
    s.links
        .iter()
        .filter_map(|l| {
            let (a, b) = (s.port(l.a)?, s.port(l.b)?);
            if !is_up(a) || !is_up(b) {
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

fn rate(width: u8, speed: Speed) -> String {
    format!("{width}X {}", speed.name())
}

/// One end as the link rules show it: active, enabled and supported.
fn end_evidence(s: &Subnet, end: End) -> Option<String> {
    let p = s.port(end)?;
    Some(format!(
        "{}: active {}, enabled up to {}, supported up to {}",
        s.end_name(end),
        rate(p.width, p.speed),
        rate(p.max_width, p.max_speed),
        rate(p.supported_width, p.supported_speed)
    ))
}

/// Why an end allows no more than `width`/`speed` where `want` is wanted: it supports no
/// more (an older generation), or its enabled set restricts what it supports.
fn limit_reason(s: &Subnet, end: End, want_width: u8, want_speed: Speed) -> Option<String> {
    let p = s.port(end)?;
    let mut why = Vec::new();
    if p.max_speed < want_speed {
        let who = s.end_name(end);
        let (max, sup) = (p.max_speed.name(), p.supported_speed.name());
        why.push(if p.supported_speed >= want_speed {
            format!(
                "{who} is enabled only up to {max} though it supports {sup} (LinkSpeedEnabled \
                 restricts it)"
            )
        } else if p.max_speed < p.supported_speed {
            format!(
                "{who} supports only up to {sup} and is enabled only up to {max} \
                 (LinkSpeedEnabled restricts it further)"
            )
        } else {
            format!("{who} supports only up to {max} (an older generation)")
        });
    }
    if p.max_width > 0 && p.max_width < want_width {
        let who = s.end_name(end);
        let (max, sup) = (p.max_width, p.supported_width);
        why.push(if sup >= want_width {
            format!(
                "{who} is enabled only up to {max}X though it supports {sup}X \
                 (LinkWidthEnabled restricts it)"
            )
        } else if max < sup {
            format!(
                "{who} supports only up to {sup}X and is enabled only up to {max}X \
                 (LinkWidthEnabled restricts it further)"
            )
        } else {
            format!("{who} supports only up to {max}X")
        });
    }
    (!why.is_empty()).then(|| why.join("; "))
}

/// Links trained below what both ends allow (a cable or port trained down), and links below
/// the norm of their kind only because an end allows no more (a capability or
/// configuration difference, said as info).
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
        let norm_width = norm(&|t| u32::from(t.width)).map(|w| w as u8);
        let norm_speed = norm(&|t| t.speed as u32)
            .and_then(|n| kind.iter().find(|k| k.speed as u32 == n).map(|k| k.speed));
        let what = if inter_switch {
            "inter-switch links"
        } else {
            "switch-to-CA links"
        };
        for t in &kind {
            if t.trained_down() {
                let mut reasons = Vec::new();
                if t.max_width > 0 && t.width < t.max_width {
                    reasons.push(format!(
                        "width {}X where both ends allow {}X",
                        t.width, t.max_width
                    ));
                }
                if t.max_speed != Speed::Unknown && t.speed < t.max_speed {
                    reasons.push(format!(
                        "speed {} where both ends allow {}",
                        t.speed.name(),
                        t.max_speed.name()
                    ));
                }
                let mut f = Diagnostic::finding(
                    Severity::Warn,
                    codes::SUBNET_LINK_DEGRADED,
                    format!(
                        "link trained down to {}: {}",
                        rate(t.width, t.speed),
                        reasons.join("; ")
                    ),
                );
                for end in [t.link.a, t.link.b] {
                    if let Some(e) = end_evidence(s, end) {
                        f = f.evidence(e);
                    }
                }
                out.push(with_subject(
                    f.fix(
                        "a cable or port trained down: reseat or replace the cable, check the \
                         transceivers on both ends, then reset the port (ibportstate LID PORT \
                         reset)",
                    ),
                    s.link_name(&t.link),
                ));
                continue;
            }
            // At the best both ends allow: below the norm only by capability or
            // configuration. A faster link in parallel makes it `parallel`'s, said once.
            if has_faster_parallel(&all, t) {
                continue;
            }
            let slow_width = norm_width.filter(|w| t.width < *w);
            let slow_speed = norm_speed.filter(|n| t.speed < *n);
            if slow_width.is_none() && slow_speed.is_none() {
                continue;
            }
            let want_width = slow_width.unwrap_or(t.width);
            let want_speed = slow_speed.unwrap_or(t.speed);
            let limits: Vec<String> = [t.link.a, t.link.b]
                .iter()
                .filter_map(|e| limit_reason(s, *e, want_width, want_speed))
                .collect();
            let restricted = limits.iter().any(|l| l.contains("restricts it"));
            let mut f = Diagnostic::finding(
                Severity::Info,
                codes::SUBNET_LINK_CAPABILITY,
                format!(
                    "link runs at {}, the best both ends allow, where most {what} run {}: {}",
                    rate(t.width, t.speed),
                    rate(want_width, want_speed),
                    if limits.is_empty() {
                        "a capability difference".to_string()
                    } else {
                        limits.join("; ")
                    }
                ),
            );
            for end in [t.link.a, t.link.b] {
                if let Some(e) = end_evidence(s, end) {
                    f = f.evidence(e);
                }
            }
            out.push(with_subject(
                f.fix(if restricted {
                    "nothing is broken; if this link should run at the fabric's rate, enable \
                     the speed or width on the restricted port (the switch's port settings, or \
                     ibportstate LID PORT speed/espeed/width)"
                } else {
                    "nothing is broken: the link runs as fast as its ends can; only if this \
                     host needs the fabric's rate, a newer HCA (or switch port)"
                }),
                s.link_name(&t.link),
            ));
        }
    }
    out
}

fn same_nodes(x: &Link, y: &Link) -> bool {
    let pair = |l: &Link| (l.a.guid.min(l.b.guid), l.a.guid.max(l.b.guid));
    pair(x) == pair(y)
}

fn has_faster_parallel(all: &[Trained], t: &Trained) -> bool {
    all.iter().any(|o| {
        o.link != t.link && same_nodes(&o.link, &t.link) && (o.width > t.width || o.speed > t.speed)
    })
}

/// Links in parallel between the same two nodes, compared with each other: a slower one
/// holds back the traffic spread over them. A link trained below what its ends allow is
/// `degraded`'s; here the slow link runs at its ends' best, and the end that allows no
/// more is named.
fn parallel(s: &Subnet) -> Vec<Diagnostic> {
    let all = trained(s);
    let mut groups: BTreeMap<(u64, u64), Vec<&Trained>> = BTreeMap::new();
    for t in &all {
        let (x, y) = (t.link.a.guid, t.link.b.guid);
        if x != y {
            groups.entry((x.min(y), x.max(y))).or_default().push(t);
        }
    }
    let mut out = Vec::new();
    for group in groups.values().filter(|g| g.len() >= 2) {
        let Some(best) = group
            .iter()
            .max_by_key(|t| (u32::from(t.width) * 100 + t.speed as u32, t.width))
        else {
            continue;
        };
        for t in group {
            let slower = t.width < best.width || t.speed < best.speed;
            if !slower || t.trained_down() {
                continue;
            }
            let want_width = best.width.max(t.width);
            let want_speed = best.speed.max(t.speed);
            let limits: Vec<String> = [t.link.a, t.link.b]
                .iter()
                .filter_map(|e| limit_reason(s, *e, want_width, want_speed))
                .collect();
            let mut f = Diagnostic::finding(
                Severity::Warn,
                codes::SUBNET_PARALLEL_LINK_SLOWER,
                format!(
                    "link runs at {} while its parallel link between the same two nodes runs \
                     at {}: traffic spread over them is held back on this one{}",
                    rate(t.width, t.speed),
                    rate(best.width, best.speed),
                    if limits.is_empty() {
                        String::new()
                    } else {
                        format!("; {}", limits.join("; "))
                    }
                ),
            );
            for end in [t.link.a, t.link.b] {
                if let Some(e) = end_evidence(s, end) {
                    f = f.evidence(e);
                }
            }
            f = f.evidence(format!(
                "the parallel link {} runs at {}",
                s.link_name(&best.link),
                rate(best.width, best.speed)
            ));
            out.push(with_subject(
                f.fix(
                    "enable the same speed and width on the ports of both links (the switch's \
                     port settings, or ibportstate LID PORT speed/espeed/width), or move the \
                     cable to ports alike",
                ),
                s.link_name(&t.link),
            ));
        }
    }
    out
}

/// One counter on one end, over its threshold or grown within the interval.
struct Reading {
    end: End,
    rule: &'static CounterRule,
    value: u64,
    width: u8,
    /// With `--interval`: how much it grew.
    grew: Option<u64>,
    saturated: bool,
}

fn max_of(width: u8) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

/// Every judged counter of `end` that is a problem: over its threshold, or with
/// `--interval` grown (or stuck at its maximum, where growth cannot be seen).
fn readings(s: &Subnet, end: End) -> Vec<Reading> {
    let Some(port) = s.port(end) else {
        return Vec::new();
    };
    let Some(values) = port.counters.as_ref() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (name, value, width) in values {
        let Some(rule) = COUNTER_RULES.iter().find(|r| r.counter == *name) else {
            continue;
        };
        let saturated = *value == max_of(*width)
            && Counter::new(name, CounterSource::Counters, Flavor::Other, *value, false).saturates;
        let before = match (s.interval_s, &port.counters_before) {
            (Some(_), Some(b)) => b.iter().find(|(n, _, _)| n == name).map(|x| x.1),
            _ => None,
        };
        let grew = match before {
            Some(b) => {
                if *value <= b && !saturated {
                    continue;
                }
                Some(value.saturating_sub(b))
            }
            None => {
                if *value < rule.threshold {
                    continue;
                }
                None
            }
        };
        out.push(Reading {
            end,
            rule,
            value: *value,
            width: *width,
            grew,
            saturated,
        });
    }
    out
}

fn reading_line(s: &Subnet, r: &Reading) -> String {
    let name = r.rule.counter;
    let full = if !r.saturated {
        String::new()
    } else if r.grew.is_some() {
        format!(
            " (saturated at its {}-bit maximum: the increase is not known)",
            r.width
        )
    } else {
        format!(
            " (saturated at its {}-bit maximum: the true count is higher)",
            r.width
        )
    };
    match (r.grew, s.interval_s) {
        (Some(grew), Some(secs)) => format!(
            "{}: {name} +{grew} in {secs:.1} s ({:.1}/s), now {}{full}: {}",
            s.end_name(r.end),
            grew as f64 / secs.max(0.001),
            r.value,
            r.rule.cause
        ),
        _ => format!(
            "{}: {name} = {}{full}: {}",
            s.end_name(r.end),
            r.value,
            r.rule.cause
        ),
    }
}

/// Error and congestion counters on both ends of each link: one finding per link and per
/// cause, with the cause and the fix that counter points at.
fn counters(s: &Subnet) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    // Where packets get corrupted: the ends with physical errors, for remote physical errors
    // to point back to.
    let physical: Vec<Reading> = s
        .links
        .iter()
        .flat_map(|l| [l.a, l.b])
        .flat_map(|e| readings(s, e))
        .filter(|r| PHYSICAL.contains(&r.rule.counter))
        .collect();
    for link in &s.links {
        let all: Vec<Reading> = [link.a, link.b]
            .into_iter()
            .flat_map(|e| readings(s, e))
            .collect();
        let mut codes_here: Vec<&Code> = all.iter().map(|r| &r.rule.code).collect();
        codes_here.dedup();
        let mut seen_codes: Vec<&Code> = Vec::new();
        for code in codes_here {
            if seen_codes.contains(&code) {
                continue;
            }
            seen_codes.push(code);
            let group: Vec<&Reading> = all.iter().filter(|r| &r.rule.code == code).collect();
            let first = group[0].rule;
            let saturated = group.iter().any(|r| r.saturated);
            let severity = if saturated && first.severity == Severity::Warn {
                Severity::Fail
            } else {
                first.severity
            };
            let message = match (s.interval_s, group.len()) {
                (Some(secs), 1) => {
                    format!("{} grew in {secs:.1} s: {}", first.pma_name, first.cause)
                }
                (Some(secs), n) => format!(
                    "{n} counter(s) grew on this link in {secs:.1} s: {}",
                    first.cause
                ),
                (None, 1) => format!("{} over threshold: {}", first.pma_name, first.cause),
                (None, n) => format!(
                    "{n} counter(s) over threshold on this link: {}",
                    first.cause
                ),
            };
            let mut f = Diagnostic::finding(severity, code.clone(), message);
            for r in &group {
                f = f.evidence(reading_line(s, r));
            }
            let mut fix = first.fix.to_string();
            if *code == codes::SUBNET_REMOTE_PHYSICAL_ERRORS {
                let (evidence, origin_fix) = upstream(s, link, &group, &physical);
                for e in evidence {
                    f = f.evidence(e);
                }
                fix = origin_fix;
            }
            if *code == codes::SUBNET_XMIT_DISCARDS {
                for r in all.iter().filter(|r| {
                    r.rule.counter == "link_downed" || r.rule.counter == "port_xmit_wait"
                }) {
                    f = f.evidence(format!("on the same link, {}", reading_line(s, r)));
                }
                for end in [link.a, link.b] {
                    if let Some(p) = s.port(end).filter(|p| !p.state.is_active()) {
                        f = f.evidence(format!("{} is {}", s.end_name(end), p.state_name()));
                    }
                }
            }
            out.push(with_subject(f.fix(fix), s.link_name(link)));
        }
    }
    out
}

/// Remote physical errors at an end: the packets were corrupted before they reached this
/// link. The ports with physical errors on the sending node come first, then any in the
/// walk; none found is said as such.
fn upstream(
    s: &Subnet,
    link: &Link,
    group: &[&Reading],
    physical: &[Reading],
) -> (Vec<String>, String) {
    let mut evidence = Vec::new();
    let mut origins: Vec<&Reading> = Vec::new();
    // Whether an origin is on the sending node itself (its inbound ports), or only found
    // elsewhere in the walk, where the path is not known to pass.
    let mut on_sender = true;
    for r in group {
        let sender = if r.end == link.a { link.b } else { link.a };
        // Errors on the sending node's other ports: the links that feed it.
        let near: Vec<&Reading> = physical
            .iter()
            .filter(|p| p.end.guid == sender.guid && p.end != sender)
            .collect();
        let found: Vec<&Reading> = if near.is_empty() {
            on_sender = false;
            physical
                .iter()
                .filter(|p| p.end.guid != r.end.guid)
                .collect()
        } else {
            near
        };
        for p in found {
            if !origins
                .iter()
                .any(|o| o.end == p.end && o.rule.counter == p.rule.counter)
            {
                origins.push(p);
            }
        }
    }
    if origins.is_empty() {
        evidence.push(
            "no port read in this walk shows physical errors (symbol or receive errors): the \
             bad link is outside what was read, or its counters were cleared"
                .to_string(),
        );
        return (
            evidence,
            "follow the packets' path upstream from the sending node (perfquery on its other \
             ports, or rdmactl subnet from another port) to the port with symbol or receive \
             errors, and repair that link; this link needs nothing"
                .into(),
        );
    }
    let label = if on_sender {
        "upstream"
    } else {
        "not on the sending node's ports; elsewhere in the walk"
    };
    for o in origins.iter().take(5) {
        evidence.push(format!("{label}: {}", reading_line(s, o)));
    }
    let first = s.end_name(origins[0].end);
    let fix = if on_sender {
        format!("repair the link at {first} (its own link-errors finding); this link needs nothing")
    } else {
        format!(
            "follow the packets' path upstream from the sending node (the forwarding tables \
             say which ports feed it); the nearest physical errors found are at {first}, \
             which may or may not be on that path; this link needs nothing"
        )
    };
    (evidence, fix)
}

/// Link ends whose counters were not asked for, and why.
fn counters_unavailable(s: &Subnet) -> Vec<Diagnostic> {
    if s.counters_skipped.is_empty() {
        return Vec::new();
    }
    let mut f = Diagnostic::finding(
        Severity::Info,
        codes::SUBNET_COUNTERS_UNAVAILABLE,
        format!(
            "the counters of {} link end(s) were not read: LID-routed PMA requests cannot \
             reach a port that is not ACTIVE or has no LID, so none was sent",
            s.counters_skipped.len()
        ),
    );
    for e in s.counters_skipped.iter().take(10) {
        let state = s
            .port(*e)
            .map(|p| format!("{}{}", p.state_name(), lid_text(s, *e, p)))
            .unwrap_or_else(|| "not read".into());
        f = f.evidence(format!("{}: {state}", s.end_name(*e)));
    }
    if s.counters_skipped.len() > 10 {
        f = f.evidence(format!("and {} more", s.counters_skipped.len() - 10));
    }
    vec![with_subject(
        f.fix("bring the links up (a running SM gives the ports LIDs and activates them), then run again"),
        "walk".into(),
    )]
}

/// MTU or VL capability that differs between the two ends of a link (info: the link runs
/// at the smaller), or an active MTU or VL count below what both ends support (warn).
fn mismatches(s: &Subnet) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for link in &s.links {
        let (Some(a), Some(b)) = (s.port(link.a), s.port(link.b)) else {
            continue;
        };
        if !is_up(a) || !is_up(b) || !a.state.is_active() || !b.state.is_active() {
            continue;
        }
        let both_mtu = a.mtu_cap.min(b.mtu_cap);
        let active_mtu = a.active_mtu.min(b.active_mtu);
        if both_mtu != 0 && active_mtu != 0 && active_mtu < both_mtu {
            out.push(with_subject(
                Diagnostic::finding(
                    Severity::Warn,
                    codes::SUBNET_MTU_MISMATCH,
                    format!(
                        "the link runs an MTU of {active_mtu} where both ends support \
                         {both_mtu}: the SM set less"
                    ),
                )
                .evidence(format!(
                    "{}: MTU cap {}, active {}",
                    s.end_name(link.a),
                    a.mtu_cap,
                    a.active_mtu
                ))
                .evidence(format!(
                    "{}: MTU cap {}, active {}",
                    s.end_name(link.b),
                    b.mtu_cap,
                    b.active_mtu
                ))
                .fix("check the SM's MTU settings (the partition's mtu= in partitions.conf)"),
                s.link_name(link),
            ));
        } else if a.mtu_cap != b.mtu_cap && a.mtu_cap != 0 && b.mtu_cap != 0 {
            out.push(with_subject(
                Diagnostic::finding(
                    Severity::Info,
                    codes::SUBNET_MTU_MISMATCH,
                    format!(
                        "the two ends support different MTUs ({} and {}): the link runs at \
                         the smaller",
                        a.mtu_cap, b.mtu_cap
                    ),
                )
                .evidence(format!("{}: MTU cap {}", s.end_name(link.a), a.mtu_cap))
                .evidence(format!("{}: MTU cap {}", s.end_name(link.b), b.mtu_cap))
                .fix("nothing is broken; paths through this link carry the smaller MTU"),
                s.link_name(link),
            ));
        }
        let both_vls = a.vl_cap.min(b.vl_cap);
        let op_vls = a.operational_vls.min(b.operational_vls);
        if both_vls != 0 && op_vls != 0 && op_vls < both_vls {
            out.push(with_subject(
                Diagnostic::finding(
                    Severity::Warn,
                    codes::SUBNET_VL_MISMATCH,
                    format!(
                        "the link runs {op_vls} data VLs where both ends support {both_vls}: \
                         QoS levels above share VLs"
                    ),
                )
                .evidence(format!(
                    "{}: VL cap {}, operational {}",
                    s.end_name(link.a),
                    a.vl_cap,
                    a.operational_vls
                ))
                .evidence(format!(
                    "{}: VL cap {}, operational {}",
                    s.end_name(link.b),
                    b.vl_cap,
                    b.operational_vls
                ))
                .fix("check the SM's max_op_vls (opensm.conf) and the SL-to-VL mapping"),
                s.link_name(link),
            ));
        } else if a.vl_cap != b.vl_cap && a.vl_cap != 0 && b.vl_cap != 0 {
            out.push(with_subject(
                Diagnostic::finding(
                    Severity::Info,
                    codes::SUBNET_VL_MISMATCH,
                    format!(
                        "the two ends support different numbers of data VLs ({} and {}): QoS \
                         levels above the smaller share VLs on this link",
                        a.vl_cap, b.vl_cap
                    ),
                )
                .evidence(format!("{}: VL cap {}", s.end_name(link.a), a.vl_cap))
                .evidence(format!("{}: VL cap {}", s.end_name(link.b), b.vl_cap))
                .fix("nothing is broken; map SLs to the VLs both ends have if QoS matters"),
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
    // Ends read as `Subnet::end_name` writes them ("switch \"leaf1\" port 4"), so a link
    // has one name in every finding and the SVG; a node that is gone is a switch or not as
    // the baseline says.
    let is_switch = |guid: u64| match (s.node(guid), b.nodes.get(&guid)) {
        (Some(n), _) => n.is_switch(),
        (None, Some((sw, _, _))) => *sw,
        _ => false,
    };
    let end_text = |e: End| {
        format!(
            "{}{} port {}",
            if is_switch(e.guid) { "switch " } else { "" },
            name(e.guid),
            e.port
        )
    };
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
                        .map(|p| format!("{} ({})", p.state_name(), p.phys_state_name()))
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
                    let hint = if p.phys_state == PhysState::Polling {
                        ": no signal from the other end"
                    } else {
                        ""
                    };
                    format!("{} ({}){hint}", p.state_name(), p.phys_state_name())
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
            state: PortState::Active,
            phys_state: PhysState::LinkUp,
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
            local_state: Some(PortState::Active),
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

    fn of<'a>(f: &'a [Diagnostic], code: &str) -> Vec<&'a Diagnostic> {
        f.iter().filter(|f| f.code == code).collect()
    }

    #[test]
    fn a_slow_parallel_link_warns_and_a_host_at_its_best_is_capability_info() {
        // leaf1 ↔ spine1: four parallel links, the fourth at DDR; node042 at 1X, both ends
        // supporting no more.
        let s = fabric();
        let f = judge(&s, None);
        assert!(of(&f, "subnet-link-degraded").is_empty(), "{f:#?}");
        let slow = of(&f, "subnet-parallel-link-slower");
        assert_eq!(slow.len(), 1, "{f:#?}");
        assert_eq!(slow[0].severity, Severity::Warn);
        assert_eq!(
            slow[0].label(),
            "switch \"leaf1\" port 4 ↔ switch \"spine1\" port 4"
        );
        assert!(
            slow[0].message.contains(
                "runs at 4X DDR while its parallel link between the same two nodes runs at 4X EDR"
            ),
            "{}",
            slow[0].message
        );
        assert!(slow[0].message.contains("supports only up to DDR"));
        let cap = of(&f, "subnet-link-capability");
        assert_eq!(
            cap.len(),
            1,
            "the parallel link is not said twice: {cap:#?}"
        );
        assert_eq!(cap[0].severity, Severity::Info);
        assert!(cap[0].label().contains("\"node042 HCA-1\" port 1"));
        assert!(
            cap[0].message.contains(
                "runs at 1X EDR, the best both ends allow, where most switch-to-CA links run 4X EDR"
            ),
            "{}",
            cap[0].message
        );
        assert!(cap[0].message.contains("supports only up to 1X"));
        for d in slow.iter().chain(&cap) {
            assert!(!d.fix_text().contains("cable") || d.code == "subnet-parallel-link-slower");
            assert!(!d.message.contains("trained down"), "{}", d.message);
        }
    }

    #[test]
    fn qdr_hosts_in_an_edr_fabric_are_info_and_a_restricted_port_is_named() {
        let mut s = fabric();
        s.links.retain(|l| l.b.port != 4 || l.a.guid != 0xa);
        // Three hosts more so the norm is EDR; the first host is QDR-only.
        for (i, p) in (8..=10).enumerate() {
            let host = 0x300 + i as u64;
            s.nodes[0].ports.push(port(p, 4, Speed::Edr));
            s.nodes.push(node(
                host,
                MadNodeType::Ca,
                &format!("node09{i}"),
                30 + i as u16,
                vec![port(1, 4, Speed::Edr)],
            ));
            s.links.push(Link::new(end(0xa, p), end(host, 1)));
        }
        s.nodes[2].ports[0] = port(1, 4, Speed::Qdr);
        s.nodes[0].ports[5] = port(5, 4, Speed::Qdr);
        s.nodes[0].ports[5].supported_speed = Speed::Edr;
        let f = judge(&s, None);
        assert!(of(&f, "subnet-link-degraded").is_empty(), "{f:#?}");
        let cap = of(&f, "subnet-link-capability");
        let qdr = cap
            .iter()
            .find(|d| d.label().contains("node040"))
            .expect("the QDR host");
        assert_eq!(qdr.severity, Severity::Info);
        assert!(
            qdr.message
                .contains("\"node040 HCA-1\" port 1 supports only up to QDR (an older generation)"),
            "{}",
            qdr.message
        );
        assert!(
            qdr.message.contains(
                "switch \"leaf1\" port 5 is enabled only up to QDR though it supports EDR"
            ),
            "{}",
            qdr.message
        );
        assert!(
            qdr.evidence.iter().any(|e| e
                .text
                .contains("enabled up to 4X QDR, supported up to 4X EDR")),
            "{:?}",
            qdr.evidence
        );
        assert!(qdr.fix_text().contains("enable the speed"));
        assert!(!qdr.fix_text().contains("cable"));
        // Trained down: both ends allow EDR and the link runs QDR.
        s.nodes[2].ports[0] = port(1, 4, Speed::Edr);
        s.nodes[2].ports[0].speed = Speed::Qdr;
        s.nodes[0].ports[5] = port(5, 4, Speed::Edr);
        s.nodes[0].ports[5].speed = Speed::Qdr;
        let f = judge(&s, None);
        let down = of(&f, "subnet-link-degraded");
        assert_eq!(down.len(), 1, "{f:#?}");
        assert!(
            down[0]
                .message
                .contains("trained down to 4X QDR: speed QDR where both ends allow EDR"),
            "{}",
            down[0].message
        );
        assert!(down[0].fix_text().contains("reseat or replace the cable"));
        assert!(of(&f, "subnet-link-capability")
            .iter()
            .all(|d| !d.label().contains("node040")));
    }

    #[test]
    fn a_link_below_what_both_ends_support_is_degraded_without_a_norm() {
        let mut s = fabric();
        s.links.truncate(1);
        s.nodes.truncate(2);
        for n in &mut s.nodes {
            n.ports[1].width = 1;
        }
        assert!(judge(&s, None)[0].severity >= Severity::Warn);
        let f = judge(&s, None);
        let d = f.iter().find(|f| f.code == "subnet-link-degraded").unwrap();
        assert!(
            d.message.contains("width 1X where both ends allow 4X"),
            "{}",
            d.message
        );
    }

    #[test]
    fn no_master_sm_fails_with_the_init_ports_and_the_fix() {
        let mut s = fabric();
        s.sms.clear();
        s.local_sm_lid = 0;
        s.nodes[2].ports[0].state = PortState::Init;
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
            .text
            .starts_with("switch \"leaf1\" port 2: symbol_error = 77: bad symbols"));
        assert!(e.fix_text().contains("cable"));
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
        assert!(
            e.message.contains("SymbolErrorCounter grew in 2.0 s"),
            "{}",
            e.message
        );
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

    /// Every PortCounters counter the PMA decoder gives is either judged by one rule or is
    /// a traffic counter; each rule's finding carries its own cause and fix, at its severity,
    /// from its threshold and not below it.
    #[test]
    fn every_port_counter_is_judged_with_its_own_cause_fix_and_severity() {
        let names: Vec<&str> = crate::model::mad::PmaCounters::decode(&[0u8; 64])
            .unwrap()
            .values
            .iter()
            .map(|(n, _, _)| *n)
            .collect();
        let traffic = [
            "port_xmit_data",
            "port_rcv_data",
            "port_xmit_packets",
            "port_rcv_packets",
        ];
        for name in &names {
            let rules = COUNTER_RULES.iter().filter(|r| r.counter == *name).count();
            let want = usize::from(!traffic.contains(name));
            assert_eq!(rules, want, "{name}: {rules} rule(s)");
        }
        // (counter, code, severity, a word of its cause, whether the cable is the fix)
        let table: &[(&str, &str, Severity, &str, bool)] = &[
            (
                "symbol_error",
                "subnet-link-errors",
                Severity::Warn,
                "bad symbols",
                true,
            ),
            (
                "link_error_recovery",
                "subnet-link-errors",
                Severity::Warn,
                "retrained",
                true,
            ),
            (
                "link_downed",
                "subnet-link-errors",
                Severity::Warn,
                "went down",
                true,
            ),
            (
                "port_rcv_errors",
                "subnet-link-errors",
                Severity::Warn,
                "CRC",
                true,
            ),
            (
                "local_link_integrity_errors",
                "subnet-link-errors",
                Severity::Warn,
                "integrity",
                true,
            ),
            (
                "port_rcv_remote_physical_errors",
                "subnet-remote-physical-errors",
                Severity::Warn,
                "upstream",
                false,
            ),
            (
                "port_rcv_switch_relay_errors",
                "subnet-relay-errors",
                Severity::Warn,
                "forwarding table",
                false,
            ),
            (
                "port_xmit_discards",
                "subnet-xmit-discards",
                Severity::Warn,
                "head-of-queue",
                false,
            ),
            (
                "excessive_buffer_overrun_errors",
                "subnet-buffer-overrun",
                Severity::Warn,
                "credits",
                false,
            ),
            (
                "VL15_dropped",
                "subnet-vl15-dropped",
                Severity::Warn,
                "SM storm",
                false,
            ),
            (
                "port_xmit_constraint_errors",
                "subnet-constraint-errors",
                Severity::Warn,
                "partition",
                false,
            ),
            (
                "port_rcv_constraint_errors",
                "subnet-constraint-errors",
                Severity::Warn,
                "P_Key",
                false,
            ),
            (
                "port_xmit_wait",
                "subnet-xmit-wait",
                Severity::Info,
                "congestion",
                false,
            ),
        ];
        assert_eq!(table.len(), COUNTER_RULES.len());
        for (name, code, severity, cause, cable) in table {
            let rule = COUNTER_RULES.iter().find(|r| r.counter == *name).unwrap();
            let width = 32;
            let mut s = fabric();
            s.nodes[0].ports[2].counters = Some(vec![(rule.counter, rule.threshold - 1, width)]);
            assert!(
                of(&judge(&s, None), code).is_empty(),
                "{name} below its threshold"
            );
            s.nodes[0].ports[2].counters = Some(vec![(rule.counter, rule.threshold, width)]);
            let f = judge(&s, None);
            let d = of(&f, code);
            assert_eq!(d.len(), 1, "{name}: {f:#?}");
            let d = d[0];
            assert_eq!(d.severity, *severity, "{name}");
            assert_eq!(
                d.label(),
                "switch \"leaf1\" port 2 ↔ switch \"spine1\" port 2"
            );
            assert!(d.message.contains(rule.pma_name), "{name}: {}", d.message);
            assert!(d.message.contains(cause), "{name}: {}", d.message);
            assert!(d.evidence[0].text.contains(&format!(
                "switch \"leaf1\" port 2: {name} = {}",
                rule.threshold
            )));
            assert_eq!(
                d.fix_text().contains("cable"),
                *cable,
                "{name}: {}",
                d.fix_text()
            );
            // Only the physical counters are the link's own fault.
            let others: Vec<_> = f
                .iter()
                .filter(|x| {
                    x.code.as_str().starts_with("subnet-")
                        && x.code != *code
                        && x.code != "subnet-sm"
                        && x.code != "subnet-parallel-link-slower"
                        && x.code != "subnet-link-capability"
                })
                .collect();
            assert!(others.is_empty(), "{name}: {others:#?}");
        }
    }

    #[test]
    fn remote_physical_errors_point_upstream_to_the_port_with_symbol_errors() {
        let mut s = fabric();
        // node040 (on leaf1 port 5) receives packets marked bad; leaf1 port 1 receives
        // symbol errors from spine1: the corruption happens there.
        s.nodes[2].ports[0].counters = Some(vec![("port_rcv_remote_physical_errors", 40, 16)]);
        s.nodes[0].ports[1].counters = Some(vec![("symbol_error", 500, 16)]);
        let f = judge(&s, None);
        let r = of(&f, "subnet-remote-physical-errors");
        assert_eq!(r.len(), 1, "{f:#?}");
        assert!(r[0].label().contains("\"node040 HCA-1\" port 1"));
        assert!(
            r[0].evidence.iter().any(|e| e
                .text
                .starts_with("upstream: switch \"leaf1\" port 1: symbol_error = 500")),
            "{:?}",
            r[0].evidence
        );
        assert!(
            r[0].fix_text()
                .contains("repair the link at switch \"leaf1\" port 1"),
            "{}",
            r[0].fix_text()
        );
        assert!(!r[0]
            .fix_text()
            .contains("check the cable and transceivers of this link"));
        // The upstream link has its own finding, with the cable as the fix.
        let up = of(&f, "subnet-link-errors");
        assert_eq!(up.len(), 1);
        assert!(up[0].label().starts_with("switch \"leaf1\" port 1 ↔"));
        // Errors only on a port that does not feed the sending node: named, not claimed.
        s.nodes[0].ports[1].counters = None;
        s.nodes[1].ports[1].counters = Some(vec![("symbol_error", 500, 16)]);
        let f = judge(&s, None);
        let r = of(&f, "subnet-remote-physical-errors");
        assert!(r[0].evidence.iter().any(|e| e.text.starts_with(
            "not on the sending node's ports; elsewhere in the walk: switch \"spine1\" port 1"
        )));
        assert!(r[0].fix_text().contains("may or may not be on that path"));
        assert!(!r[0]
            .evidence
            .iter()
            .any(|e| e.text.starts_with("upstream:")));
        // Nothing upstream read: said so, no guess.
        s.nodes[1].ports[1].counters = None;
        let f = judge(&s, None);
        let r = of(&f, "subnet-remote-physical-errors");
        assert!(r[0].evidence.iter().any(|e| e
            .text
            .contains("no port read in this walk shows physical errors")));
        assert!(r[0]
            .fix_text()
            .contains("follow the packets' path upstream"));
    }

    #[test]
    fn a_saturated_xmit_wait_is_congestion_info_not_a_failure() {
        let mut s = fabric();
        s.nodes[0].ports[1].counters = Some(vec![("port_xmit_wait", u64::from(u32::MAX), 32)]);
        let f = judge(&s, None);
        let w = of(&f, "subnet-xmit-wait");
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].severity, Severity::Info);
        assert!(w[0].evidence[0]
            .text
            .contains("saturated at its 32-bit maximum: the true count is higher"));
        assert!(w[0].message.contains("not an error"));
        assert!(of(&f, "subnet-link-errors").is_empty());
    }

    #[test]
    fn xmit_discards_on_a_link_that_went_down_say_so() {
        let mut s = fabric();
        s.nodes[0].ports[1].counters =
            Some(vec![("port_xmit_discards", 500, 16), ("link_downed", 2, 8)]);
        let f = judge(&s, None);
        let d = of(&f, "subnet-xmit-discards");
        assert_eq!(d.len(), 1);
        assert!(d[0].evidence.iter().any(|e| e
            .text
            .starts_with("on the same link, switch \"leaf1\" port 1: link_downed = 2")));
        assert_eq!(
            of(&f, "subnet-link-errors").len(),
            1,
            "link_downed has its own finding"
        );
    }

    #[test]
    fn a_link_in_init_or_armed_under_a_master_sm_is_named_with_both_ends() {
        let mut s = fabric();
        s.nodes[3].ports[0].state = PortState::Armed;
        let f = judge(&s, None);
        let n = of(&f, "subnet-link-not-active");
        assert_eq!(n.len(), 1, "{f:#?}");
        assert_eq!(n[0].severity, Severity::Fail);
        assert!(n[0].label().contains("\"node041 HCA-1\" port 1"));
        assert!(n[0].message.contains("ARMED") && n[0].message.contains("SM sweep problem"));
        assert!(n[0].evidence.iter().any(|e| e
            .text
            .starts_with("\"node041 HCA-1\" port 1: ARMED (LINK_UP)")));
        assert!(n[0]
            .evidence
            .iter()
            .any(|e| e.text.starts_with("switch \"leaf1\" port 6: ACTIVE")));
        s.nodes[3].ports[0].state = PortState::Init;
        let f = judge(&s, None);
        let n = of(&f, "subnet-link-not-active");
        assert!(n[0].message.contains("still INIT") && !n[0].message.contains("ARMED"));
        // Without an SM the no-SM finding names the INIT link, and there is no per-link one.
        s.sms.clear();
        let f = judge(&s, None);
        assert!(of(&f, "subnet-link-not-active").is_empty());
        let no = of(&f, "subnet-no-sm");
        assert!(
            no[0]
                .evidence
                .iter()
                .any(|e| e.text.contains("\"node041 HCA-1\" port 1 is INIT")),
            "{:?}",
            no[0].evidence
        );
    }

    #[test]
    fn an_sm_that_died_with_ports_active_is_not_said_to_leave_them_in_init() {
        let mut s = fabric();
        s.sms.clear();
        let f = judge(&s, None);
        assert!(of(&f, "subnet-no-sm").is_empty());
        let gone = of(&f, "subnet-sm-gone");
        assert_eq!(gone.len(), 1, "{f:#?}");
        assert_eq!(gone[0].severity, Severity::Fail);
        assert!(gone[0].message.contains("forwarding goes on"));
        assert!(gone[0].message.contains("new rdma_cm connections"));
        assert!(!gone[0].message.contains("INIT without LIDs"));
        assert!(gone[0]
            .evidence
            .iter()
            .any(|e| e.text.contains("the SM that configured it does not answer")));
    }

    #[test]
    fn a_refused_request_is_not_told_to_retry_and_resends_count_requests() {
        let mut s = fabric();
        s.unanswered.push(crate::model::topology::Unanswered {
            route: "LID 63".into(),
            what: "PortCountersExtended port 2 (MAD status 0x001c)".into(),
            status: Some(0x001c),
            via: None,
            from: None,
        });
        let f = judge(&s, None);
        let a = of(&f, "subnet-attribute-unanswered");
        assert_eq!(a.len(), 1);
        assert!(a[0]
            .message
            .contains("refused with an error status: resending cannot help"));
        assert!(a[0].evidence[0]
            .text
            .contains("attribute modifier value the node does not support"));
        assert!(!a[0].fix_text().contains("--retries"));
        s.unanswered.clear();
        s.mads = MadStats {
            requests: 318,
            resent: 1455,
            retried: 97,
            unanswered: 2,
            ..MadStats::default()
        };
        s.mads_by_node = vec![crate::model::topology::NodeMads {
            guid: 0xb,
            requests: 20,
            retried: 15,
        }];
        let f = judge(&s, None);
        let r = of(&f, "subnet-mads-resent");
        assert!(
            r[0].message
                .starts_with("97 of 318 MADs went unanswered at first"),
            "{}",
            r[0].message
        );
        assert!(r[0].message.contains("1455 resends"));
        assert!(r[0].evidence[0]
            .text
            .contains("switch \"spine1\": 15 of 20 requests resent"));
    }

    #[test]
    fn skipped_counters_are_said_with_why() {
        let mut s = fabric();
        s.counters_skipped = vec![end(0x100, 1)];
        s.nodes[2].ports[0].state = PortState::Init;
        s.nodes[2].ports[0].lid = 0;
        let f = judge(&s, None);
        let c = of(&f, "subnet-counters-unavailable");
        assert_eq!(c[0].severity, Severity::Info);
        assert!(c[0]
            .message
            .contains("cannot reach a port that is not ACTIVE or has no LID"));
        assert!(c[0].evidence[0]
            .text
            .contains("\"node040 HCA-1\" port 1: INIT, LID 0"));
    }
}
