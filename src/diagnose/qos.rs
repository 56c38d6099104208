//! `qos`'s rules: is RoCE lossless as configured? Each traffic class in use (`--tclass`, the
//! job's NCCL/UCX variables, rdma_cm's default) is followed through the port: DSCP → the
//! priority under the trust mode in force → PFC on it → its ETS share → ECN notification and
//! reaction on it → the CNPs' priority; then 802.3x pause beside PFC and the MTU headroom.
//! When a link breaks nothing errors, traffic flows badly: each finding names the link, its
//! evidence and the command that mends it. What was not exposed is said, never passed as ok.
//! The counter rules read totals since the counters were cleared, or an interval's deltas.

use crate::diagnose::env::numbers;
use crate::model::codes;
use crate::model::diagnostic::{Diagnostic, Severity, Subject};
use crate::model::qos::{
    Chain, DcbConfig, Probe, QosFacts, QosPort, TclassSource, Trust, TrustSource, APP_SEL_DSCP,
    APP_SEL_PCP, DCBX_HOST, DCBX_LLD_MANAGED, ROCE_V2_OVERHEAD_IPV4, TSA_ETS,
};

/// The traffic classes in use on a port, each with who sets it: `--tclass`, the job's
/// variables, and rdma_cm's default (for applications that set none).
pub fn traffic_classes(facts: &QosFacts, port: &QosPort) -> Vec<(u8, TclassSource)> {
    let mut out = Vec::new();
    if let Some(t) = facts.tclass_flag {
        out.push((t, TclassSource::Flag));
    }
    for (name, text) in &facts.env.vars {
        if let Some(v) = job_tclass(name, text) {
            out.push((v, TclassSource::Env(name.clone())));
        }
    }
    if let Some(cm) = port.cm_default.read() {
        out.push((cm.tos, TclassSource::CmDefault));
    }
    out
}

/// A job variable's traffic class as its library reads it; None for one it would refuse
/// (no digits, past a byte) and for `NCCL_IB_SL`, a service level. NCCL: `strtoll(s, NULL,
/// 0)` (`0x` hex, leading-0 octal, what follows ignored). UCX: `sscanf("%lu")`, and `auto`
/// is 106 on RoCE v2 (`UCT_IB_DEFAULT_ROCEV2_DSCP`, the only kind of port `qos` reads).
pub fn job_tclass(name: &str, text: &str) -> Option<u8> {
    match name {
        "NCCL_IB_TC" => numbers::c_strtoll(text)
            .filter(|n| n.digits)
            .and_then(|n| u8::try_from(n.value).ok()),
        "UCX_IB_TRAFFIC_CLASS" if text.eq_ignore_ascii_case("auto") => Some(106),
        "UCX_IB_TRAFFIC_CLASS" => {
            numbers::c_sscanf_lu(text).and_then(|(v, _)| u8::try_from(v).ok())
        }
        _ => None,
    }
}

/// Each traffic class in use on the port, followed through its configuration.
pub fn chains(facts: &QosFacts, port: &QosPort) -> Vec<Chain> {
    let mut out: Vec<Chain> = Vec::new();
    for (tclass, source) in traffic_classes(facts, port) {
        if let Some(c) = out.iter_mut().find(|c| c.tclass == tclass) {
            c.sources.push(source);
            continue;
        }
        out.push(chain(port, tclass, source));
    }
    out
}

/// The trust mode in force and where it was read: DCB's trust table first (what the
/// driver applies), then MLNX_OFED's `qos/trust`; with DCB read and neither, PCP (the
/// kernel's default).
pub fn trust(port: &QosPort) -> Option<(Trust, TrustSource)> {
    let dcb = port.dcb.read();
    if let Some(table) = dcb.and_then(|d| d.trust.as_ref()).filter(|t| !t.is_empty()) {
        // The first trusted selector a packet carries decides. PCP before DSCP decides only
        // for VLAN-tagged frames, and whether RoCE is tagged here is not known: undecided.
        let at = |sel| table.iter().position(|s| *s == sel);
        return match (at(APP_SEL_DSCP), at(APP_SEL_PCP)) {
            (Some(d), Some(p)) if p < d => None,
            (Some(_), _) => Some((Trust::Dscp, TrustSource::DcbTrustTable)),
            (None, _) => Some((Trust::Pcp, TrustSource::DcbTrustTable)),
        };
    }
    match port.vendor.trust.as_deref() {
        Some("dscp") => return Some((Trust::Dscp, TrustSource::VendorSysfs)),
        Some("pcp") => return Some((Trust::Pcp, TrustSource::VendorSysfs)),
        _ => {}
    }
    // A driver that keeps DSCP entries without reporting a trust table (mlx5 before the
    // trust table existed switched to DSCP trust with the first DSCP entry) leaves it open.
    if dcb.is_some_and(|d| !d.has_dscp_entries()) {
        return Some((Trust::Pcp, TrustSource::Default));
    }
    None
}

fn chain(port: &QosPort, tclass: u8, source: TclassSource) -> Chain {
    let dcb = port.dcb.read();
    let dscp = tclass >> 2;
    let mut c = Chain {
        tclass,
        dscp,
        ecn: tclass & 3,
        sources: vec![source],
        trust: None,
        trust_source: None,
        priority: None,
        pfc: None,
        ets_tc: None,
        ets_tsa: None,
        ets_share: None,
        ecn_np: None,
        ecn_rp: None,
        unknown: Vec::new(),
    };
    match trust(port) {
        Some((mode, from)) => {
            c.trust = Some(mode);
            c.trust_source = Some(from);
        }
        None => c.unknown.push(match &port.dcb {
            Probe::Read(d) if d.trust.as_ref().is_some_and(|t| !t.is_empty()) => "the trust mode: the trust table puts PCP before DSCP, so VLAN-tagged frames take their PCP and untagged ones their DSCP, and whether RoCE is tagged here is not known".to_string(),
            Probe::Read(_) => "the trust mode: the driver reports neither a DCB trust table nor qos/trust, and the APP table holds DSCP entries (DSCP trust on mlx5, unknown elsewhere)".to_string(),
            Probe::NotExposed(_) => "the trust mode and priority: DCB is not exposed (qos-not-manageable)".to_string(),
            Probe::Failed(_) => "the trust mode and priority: DCB could not be read (qos-not-manageable)".to_string(),
        }),
    }
    match (c.trust, dcb) {
        (Some(Trust::Dscp), Some(d)) => match d.dscp_priority(dscp) {
            Some(p) => c.priority = Some(p),
            None => c.unknown.push(format!(
                "the priority of DSCP {dscp}: the APP table has no entry for it, so the NIC's default table decides"
            )),
        },
        (Some(Trust::Dscp), None) => c.unknown.push(format!(
            "the priority of DSCP {dscp}: the APP table (DSCP → priority) is read over DCB, which is not exposed"
        )),
        // Every GID on the port's own netdev: no VLAN netdev, so RoCE leaves and arrives
        // untagged, and PCP trust has no PCP to read: priority 0, whatever the traffic
        // class.
        (Some(Trust::Pcp), _) if untagged(port) => c.priority = Some(0),
        (Some(Trust::Pcp), _) => c.unknown.push(
            "the priority: under PCP trust it is the VLAN tag's PCP, set by the sender's egress map, not by the traffic class (untagged frames are priority 0)".to_string(),
        ),
        (None, _) => {}
    }
    if let Some(p) = c.priority {
        if let Some(pfc) = dcb.and_then(|d| d.pfc.as_ref()) {
            c.pfc = Some(pfc.enabled(p));
        }
        if let Some(ets) = dcb.and_then(|d| d.ets.as_ref()) {
            let tc = ets.prio_tc[usize::from(p)];
            c.ets_tc = Some(tc);
            let i = usize::from(tc);
            if i < 8 {
                c.ets_tsa = Some(ets.tc_tsa[i]);
                c.ets_share = Some(ets.tc_tx_bw[i]);
            }
        }
        c.ecn_np = port.vendor.ecn_np[usize::from(p)];
        c.ecn_rp = port.vendor.ecn_rp[usize::from(p)];
    }
    c
}

/// The port's RoCE GIDs are all on its own netdev (no VLAN netdev behind any of them): RoCE
/// frames carry no VLAN tag. Unknown (false) when the GIDs' netdevs were not read.
fn untagged(port: &QosPort) -> bool {
    port.netdev
        .as_ref()
        .is_some_and(|nd| !port.gid_netdevs.is_empty() && port.gid_netdevs.iter().all(|g| g == nd))
}

/// How the chain's priority was decided, for the evidence.
fn priority_line(port: &QosPort, c: &Chain, p: u8) -> String {
    match c.trust {
        Some(Trust::Pcp) => format!(
            "untagged RoCE: every GID's netdev is {} itself (no VLAN netdev), so frames carry no PCP and PCP trust puts them on priority {p}",
            netdev_name(port)
        ),
        _ => format!("DSCP {} → priority {p} (APP table)", c.dscp),
    }
}

fn source_text(s: &TclassSource) -> String {
    match s {
        TclassSource::Flag => "--tclass".to_string(),
        TclassSource::Env(name) => name.clone(),
        TclassSource::CmDefault => "rdma_cm's default_roce_tos".to_string(),
    }
}

/// `106 (DSCP 26, ECN 2) from NCCL_IB_TC`.
pub fn chain_label(c: &Chain) -> String {
    let from: Vec<String> = c.sources.iter().map(source_text).collect();
    format!(
        "traffic class {} (DSCP {}, ECN {}) from {}",
        c.tclass,
        c.dscp,
        c.ecn,
        from.join(" and ")
    )
}

fn trust_text(c: &Chain) -> String {
    let mode = match c.trust {
        Some(Trust::Dscp) => "dscp",
        Some(Trust::Pcp) => "pcp",
        None => return "trust: unknown".to_string(),
    };
    let from = match c.trust_source {
        Some(TrustSource::DcbTrustTable) => "DCB trust table",
        Some(TrustSource::VendorSysfs) => "qos/trust",
        _ => "the default: no trust table or qos/trust",
    };
    format!("trust {mode} ({from})")
}

fn port_subject(port: &QosPort) -> Subject {
    Subject::Port(port.device.clone(), port.port)
}

fn netdev_name(port: &QosPort) -> &str {
    port.netdev.as_deref().unwrap_or("NETDEV")
}

/// Every finding of the static view (configuration, and counters since they were cleared),
/// port by port.
pub fn findings(facts: &QosFacts) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for port in &facts.ports {
        out.extend(port_findings(facts, port));
    }
    out
}

fn port_findings(facts: &QosFacts, port: &QosPort) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    out.extend(not_exposed(port));
    out.extend(dcbx(port));
    let chains = chains(facts, port);
    for c in &chains {
        out.extend(chain_findings(port, c));
    }
    out.extend(pfc_off(port, &chains));
    out.extend(cnp_priority(port));
    out.extend(global_pause(port));
    out.extend(mtu(port));
    out.extend(totals(port, &chains));
    out
}

/// What this host could not read, and so what no other finding vouches for.
fn not_exposed(port: &QosPort) -> Option<Diagnostic> {
    let mut missing = Vec::new();
    let mut failed = false;
    if let Some(why) = port.dcb.why_not() {
        failed |= matches!(port.dcb, Probe::Failed(_));
        missing.push(format!("DCB (PFC, ETS, APP table, trust): {why}"));
    }
    if port.dcb.read().is_some() && !port.vendor.any() {
        // Upstream drivers keep ECN settings in debugfs or firmware; only MLNX_OFED has files.
        missing.push(format!(
            "ECN notification/reaction and the CNP priority: no MLNX_OFED ecn/ or qos/ files under class/net/{}",
            netdev_name(port)
        ));
    }
    if let Some(why) = port.ethtool.why_not() {
        failed |= matches!(port.ethtool, Probe::Failed(_));
        missing.push(format!("per-priority pause counters (ethtool -S): {why}"));
    }
    if let Some(why) = port.cm_default.why_not() {
        failed |= matches!(port.cm_default, Probe::Failed(_));
        missing.push(format!("rdma_cm's default TOS: {why}"));
    }
    if missing.is_empty() {
        return None;
    }
    let dcb_missing = port.dcb.read().is_none();
    let (severity, message) = if failed {
        (
            Severity::Warn,
            "parts of the QoS chain could not be read: they are not checked".to_string(),
        )
    } else if dcb_missing {
        (
            Severity::Info,
            format!(
                "the lossless configuration of {} (PFC, ETS, DSCP mapping) is not checked: its DCB configuration was not read",
                netdev_name(port),
            ),
        )
    } else {
        (
            Severity::Info,
            "parts of the QoS chain are not exposed by this driver: they are not checked"
                .to_string(),
        )
    };
    let mut f =
        Diagnostic::finding(severity, codes::QOS_NOT_MANAGEABLE, message).about(port_subject(port));
    for line in missing {
        f = f.evidence(format!("not checked: {line}"));
    }
    // A virtual NIC's chain is on the physical NIC behind it: the commands name that one.
    let fix = if dcb_missing {
        "check the chain where it is configured: for a virtual NIC on the physical NIC behind it (on the hypervisor, or the host of the VF's PF: `dcb pfc show dev PF_NETDEV`, `dcb app show dev PF_NETDEV`, `mlnx_qos -i PF_NETDEV`) and on the switch port, as a VF or a Soft-RoCE netdev inherits what they set; for a captured tree, run `rdmactl qos` on the live host".to_string()
    } else {
        format!("run as root for the parts refused with a permission error; for the rest, read the NIC's own tool (`mlnx_qos -i {}`, the vendor's congestion settings)", netdev_name(port))
    };
    Some(f.fix(fix))
}

/// DCBX managed by the firmware or an LLDP agent: host-side changes are overwritten.
fn dcbx(port: &QosPort) -> Option<Diagnostic> {
    let mode = port.dcb.read()?.dcbx?;
    if mode & DCBX_LLD_MANAGED == 0 || mode & DCBX_HOST != 0 {
        return None;
    }
    let willing = port
        .dcb
        .read()
        .and_then(|d| d.ets.as_ref())
        .is_some_and(|e| e.willing);
    let mut f = Diagnostic::finding(
        Severity::Info,
        codes::QOS_DCBX_FIRMWARE,
        format!(
            "DCB on {} is managed by the NIC's firmware or an LLDP agent (DCBX), not by the host: what the switch advertises wins",
            netdev_name(port)
        ),
    )
    .about(port_subject(port))
    .evidence(format!("DCBX mode 0x{mode:02x}: LLD-managed, not host-managed"));
    if willing {
        f = f.evidence("ETS willing: the NIC takes the switch's ETS settings");
    }
    Some(f.fix(format!(
        "change PFC and ETS on the switch (it pushes them over DCBX), or make the host the manager (`mlnx_qos -i {} --dcbx os` or the driver's equivalent) before changing them here",
        netdev_name(port)
    )))
}

fn chain_findings(port: &QosPort, c: &Chain) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let nd = netdev_name(port);
    let subject = port_subject(port);
    let dcb = port.dcb.read();
    let base = |f: Diagnostic| {
        f.about(subject.clone())
            .evidence(chain_label(c))
            .evidence(trust_text(c))
    };
    // DSCP trust, and the APP table has entries, but not this DSCP.
    if c.trust == Some(Trust::Dscp) && c.priority.is_none() {
        if let Some(d) = dcb.filter(|d| d.has_dscp_entries()) {
            let pfc_prios = d
                .pfc
                .as_ref()
                .map(|p| p.enabled_priorities())
                .unwrap_or_default();
            let target = pfc_prios.first().copied().unwrap_or(3);
            out.push(
                base(Diagnostic::finding(
                    Severity::Warn,
                    codes::QOS_DSCP_UNMAPPED,
                    format!(
                        "DSCP {} is not in the APP table of {nd}: the NIC trusts DSCP, so these packets get the NIC's default priority for it, not a configured lossless one",
                        c.dscp
                    ),
                ))
                .evidence(format!("APP table DSCP entries: {}", dscp_entries(d)))
                .evidence(format!("PFC enabled on: {}", list_or_none(&pfc_prios)))
                .fix(format!(
                    "map it: `dcb app add dev {nd} dscp-prio {}:{target}` (or `mlnx_qos -i {nd} --dscp2prio set,{},{target}`){}",
                    c.dscp,
                    c.dscp,
                    mapped_tclass_hint(d, c)
                )),
            );
        }
        return out;
    }
    let Some(p) = c.priority else { return out };
    let pfc_prios = dcb
        .and_then(|d| d.pfc.as_ref())
        .map(|p| p.enabled_priorities())
        .unwrap_or_default();
    // PFC on other priorities, not this one: the traffic is lossy while the fabric is set up
    // for lossless on another priority.
    if c.pfc == Some(false) && !pfc_prios.is_empty() {
        let d = dcb.expect("pfc read implies dcb read");
        out.push(
            base(Diagnostic::finding(
                Severity::Fail,
                codes::QOS_PFC_PRIORITY,
                format!(
                    "PFC is not enabled on priority {p}, where {} goes: these packets are dropped under congestion instead of paused (PFC is on {})",
                    chain_label(c),
                    list_or_none(&pfc_prios)
                ),
            ))
            .evidence(priority_line(port, c, p))
            .evidence(format!("PFC enabled on: {}", list_or_none(&pfc_prios)))
            .fix(if c.trust == Some(Trust::Pcp) {
                format!(
                    "enable PFC on priority {p} on the NIC and the switch (`dcb pfc set dev {nd} prio-pfc {p}:on`); or give RoCE a priority: trust DSCP (`dcb apptrust set dev {nd} order dscp`, or `mlnx_qos -i {nd} --trust dscp`) and map DSCP {} to priority {} (`dcb app add dev {nd} dscp-prio {}:{}`), or run RoCE over a VLAN whose egress map sets PCP {} and use its GIDs",
                    c.dscp, pfc_prios[0], c.dscp, pfc_prios[0], pfc_prios[0]
                )
            } else {
                format!(
                    "enable PFC on priority {p} on the NIC and the switch (`dcb pfc set dev {nd} prio-pfc {p}:on`); or move the traffic to the lossless priority: map DSCP {} to priority {} (`dcb app add dev {nd} dscp-prio {}:{}`){}",
                    c.dscp,
                    pfc_prios[0],
                    c.dscp,
                    pfc_prios[0],
                    mapped_tclass_hint(d, c)
                )
            }),
        );
    }
    if let (Some(tc), Some(TSA_ETS), Some(0)) = (c.ets_tc, c.ets_tsa, c.ets_share) {
        out.push(
            base(Diagnostic::finding(
                Severity::Fail,
                codes::QOS_ETS_ZERO,
                format!(
                    "priority {p} is in ETS traffic class {tc}, whose bandwidth share is 0%: under load it gets nothing"
                ),
            ))
            .evidence(ets_line(dcb))
            .fix(format!(
                "give traffic class {tc} a share (`dcb ets set dev {nd} tc-bw ...` with tc {tc} above 0, summing to 100), or move priority {p} to a class with one (`dcb ets set dev {nd} prio-tc {p}:TC`)"
            )),
        );
    }
    let np_off = c.ecn_np == Some(false);
    let rp_off = c.ecn_rp == Some(false);
    if np_off || rp_off {
        let which = match (np_off, rp_off) {
            (true, true) => "neither sends CNPs for ECN-marked packets it receives (notification point) nor slows down on CNPs it receives (reaction point)",
            (true, false) => "does not send CNPs for ECN-marked packets it receives (notification point off): senders toward it are never slowed",
            _ => "does not slow down on CNPs it receives (reaction point off): it keeps sending at full rate into a congested queue",
        };
        let mut f = base(Diagnostic::finding(
            Severity::Warn,
            codes::QOS_ECN_OFF,
            format!("ECN (DCQCN) is off on priority {p} of {nd}: the NIC {which}"),
        ));
        f = f.evidence(format!(
            "ecn/roce_np/enable/{p}: {}, ecn/roce_rp/enable/{p}: {}",
            onoff(c.ecn_np),
            onoff(c.ecn_rp)
        ));
        out.push(f.fix(format!(
            "enable both on priority {p}: `echo 1 > /sys/class/net/{nd}/ecn/roce_np/enable/{p}` and `echo 1 > /sys/class/net/{nd}/ecn/roce_rp/enable/{p}` (persist them in the NIC's configuration), and check that the switch marks ECN on that queue"
        )));
    }
    if out.is_empty() && c.pfc == Some(true) {
        let mut links = vec![
            format!("DSCP {}", c.dscp),
            format!("priority {p} ({})", trust_text(c)),
            "PFC on".to_string(),
        ];
        if let (Some(tc), Some(share)) = (c.ets_tc, c.ets_share) {
            links.push(format!("ETS tc {tc} {share}%"));
        }
        match (c.ecn_np, c.ecn_rp) {
            (Some(true), Some(true)) => links.push("ECN NP and RP on".to_string()),
            _ => links.push("ECN not visible".to_string()),
        }
        let mut f = Diagnostic::finding(
            Severity::Ok,
            codes::QOS_CHAIN,
            format!("{}: {}", chain_label(c), links.join(" → ")),
        )
        .about(subject.clone());
        for u in &c.unknown {
            f = f.evidence(format!("not checked: {u}"));
        }
        out.push(f);
    }
    out
}

fn onoff(v: Option<bool>) -> &'static str {
    match v {
        Some(true) => "1",
        Some(false) => "0",
        None => "absent",
    }
}

fn list_or_none(prios: &[u8]) -> String {
    if prios.is_empty() {
        "no priority".to_string()
    } else {
        let p: Vec<String> = prios.iter().map(u8::to_string).collect();
        format!("priority {}", p.join(", "))
    }
}

fn dscp_entries(d: &DcbConfig) -> String {
    let e: Vec<String> = d
        .app
        .iter()
        .filter(|a| a.selector == APP_SEL_DSCP)
        .take(16)
        .map(|a| format!("{}→{}", a.protocol, a.priority))
        .collect();
    let more = d
        .app
        .iter()
        .filter(|a| a.selector == APP_SEL_DSCP)
        .count()
        .saturating_sub(e.len());
    if more > 0 {
        format!("{} and {more} more", e.join(", "))
    } else {
        e.join(", ")
    }
}

/// ", e.g. traffic class 106 (DSCP 26 → priority 3, PFC on)": a DSCP the APP table maps to a
/// PFC priority, with the job's ECN bits kept.
fn mapped_tclass_hint(d: &DcbConfig, c: &Chain) -> String {
    let Some(pfc) = d.pfc.as_ref() else {
        return String::new();
    };
    d.app
        .iter()
        .filter(|a| a.selector == APP_SEL_DSCP && pfc.enabled(a.priority) && a.protocol < 64)
        .min_by_key(|a| a.protocol)
        .map(|a| {
            let tclass = ((a.protocol as u8) << 2) | c.ecn;
            format!(
                "; or use traffic class {tclass} (DSCP {} → priority {}, PFC on), already mapped: NCCL_IB_TC={tclass}, UCX_IB_TRAFFIC_CLASS={tclass} or `--tclass {tclass}`",
                a.protocol, a.priority
            )
        })
        .unwrap_or_default()
}

fn ets_line(dcb: Option<&DcbConfig>) -> String {
    let Some(ets) = dcb.and_then(|d| d.ets.as_ref()) else {
        return "ETS: not reported".to_string();
    };
    format!(
        "ETS prio→tc {:?}, tc bandwidth % {:?}, tsa {:?} (0 strict, 2 ets)",
        ets.prio_tc, ets.tc_tx_bw, ets.tc_tsa
    )
}

/// PFC on no priority at all: RoCE runs lossy.
fn pfc_off(port: &QosPort, chains: &[Chain]) -> Option<Diagnostic> {
    let pfc = port.dcb.read()?.pfc.as_ref()?;
    if pfc.pfc_en != 0 {
        return None;
    }
    let nd = netdev_name(port);
    let ecn_on = (0..8).any(|p| port.vendor.ecn_np[p] == Some(true))
        && (0..8).any(|p| port.vendor.ecn_rp[p] == Some(true));
    let (severity, message) = if ecn_on {
        (
            Severity::Info,
            format!("PFC is off on every priority of {nd}: RoCE runs lossy, relying on ECN (on) and retransmission"),
        )
    } else {
        (
            Severity::Warn,
            format!("PFC is off on every priority of {nd}: RoCE runs lossy, and ECN is off or not visible, so congestion ends in drops and go-back-N retransmission"),
        )
    };
    let mut f = Diagnostic::finding(severity, codes::QOS_PFC_OFF, message)
        .about(port_subject(port))
        .evidence(format!("pfc_en 0x00 (pfc_cap {} priorities)", pfc.pfc_cap));
    for c in chains {
        f = f.evidence(chain_label(c));
    }
    let prio = chains.iter().find_map(|c| c.priority).unwrap_or(3);
    Some(f.fix(format!(
        "for lossless RoCE enable PFC on the RoCE priority on the NIC and on every switch port on the path (`dcb pfc set dev {nd} prio-pfc {prio}:on`); lossy RoCE is a valid design only with ECN on end to end and NICs built for it"
    )))
}

/// The CNPs' own priority: their DSCP under DSCP trust against the 802.1p priority they are
/// sent with, and the share of their traffic class.
fn cnp_priority(port: &QosPort) -> Option<Diagnostic> {
    let v = &port.vendor;
    let (cnp_dscp, cnp_prio) = (v.cnp_dscp?, v.cnp_802p_prio?);
    let dcb = port.dcb.read()?;
    let nd = netdev_name(port);
    let mapped = dcb.dscp_priority(cnp_dscp);
    let dscp_trust = trust(port).map(|t| t.0) == Some(Trust::Dscp);
    let mut problems = Vec::new();
    if dscp_trust {
        match mapped {
            Some(p) if p != cnp_prio => problems.push(format!(
                "CNPs carry DSCP {cnp_dscp}, which the APP table maps to priority {p}, but are sent on 802.1p priority {cnp_prio}: the switch and the NIC queue them differently"
            )),
            None if dcb.has_dscp_entries() => problems.push(format!(
                "CNPs carry DSCP {cnp_dscp}, which the APP table does not map"
            )),
            _ => {}
        }
    }
    let queue_prio = if dscp_trust {
        mapped.unwrap_or(cnp_prio)
    } else {
        cnp_prio
    };
    if let Some(ets) = dcb.ets.as_ref().filter(|_| queue_prio < 8) {
        let tc = usize::from(ets.prio_tc[usize::from(queue_prio)]);
        if tc < 8 && ets.tc_tsa[tc] == TSA_ETS && ets.tc_tx_bw[tc] == 0 {
            problems.push(format!(
                "the CNPs' priority {queue_prio} is in ETS traffic class {tc} with a 0% share: under load the notifications starve, and senders are slowed too late"
            ));
        }
    }
    if problems.is_empty() {
        return None;
    }
    let mut f = Diagnostic::finding(
        Severity::Warn,
        codes::QOS_CNP_PRIORITY,
        format!(
            "congestion notifications (CNPs) of {nd} do not travel where they should: {}",
            problems.join("; ")
        ),
    )
    .about(port_subject(port))
    .evidence(format!(
        "ecn/roce_np/cnp_dscp {cnp_dscp}, cnp_802p_prio {cnp_prio}"
    ));
    if let Some(p) = mapped {
        f = f.evidence(format!("APP table: DSCP {cnp_dscp} → priority {p}"));
    }
    Some(f.fix(format!(
        "send CNPs on one high priority end to end (commonly DSCP 48, priority 6, strict or with a share): `echo 48 > /sys/class/net/{nd}/ecn/roce_np/cnp_dscp`, `echo 6 > /sys/class/net/{nd}/ecn/roce_np/cnp_802p_prio`, and map DSCP 48 to 6 (`dcb app add dev {nd} dscp-prio 48:6`)"
    )))
}

/// 802.3x pause beside PFC: the two exclude each other; a NIC that honours global pause
/// stops every priority.
fn global_pause(port: &QosPort) -> Option<Diagnostic> {
    let pfc = port.dcb.read()?.pfc.as_ref()?;
    if pfc.pfc_en == 0 {
        return None;
    }
    let pause = port.ethtool.read()?.pause.read()?;
    if !pause.rx && !pause.tx {
        return None;
    }
    let nd = netdev_name(port);
    Some(
        Diagnostic::finding(
            Severity::Warn,
            codes::QOS_GLOBAL_PAUSE,
            format!("{nd} has 802.3x global pause on together with PFC: a global pause stops every priority, lossy ones included, and some NICs ignore PFC while it is on"),
        )
        .about(port_subject(port))
        .evidence(format!(
            "ethtool -a: autoneg {}, rx {}, tx {}",
            onoff(Some(pause.autoneg)),
            onoff(Some(pause.rx)),
            onoff(Some(pause.tx))
        ))
        .evidence(format!("PFC enabled on: {}", list_or_none(&pfc.enabled_priorities())))
        .fix(format!("turn global pause off: `ethtool -A {nd} rx off tx off` (and on the switch port)")),
    )
}

/// The netdev's MTU must hold the RDMA MTU plus the RoCE v2 headers: a larger packet is
/// refused by the netdev (never fragmented).
fn mtu(port: &QosPort) -> Option<Diagnostic> {
    let (Some(net), Some(rdma)) = (port.netdev_mtu, port.active_mtu) else {
        return None;
    };
    let need = rdma + ROCE_V2_OVERHEAD_IPV4;
    if net >= need {
        return None;
    }
    let nd = netdev_name(port);
    Some(
        Diagnostic::finding(
            Severity::Warn,
            codes::QOS_MTU,
            format!("{nd}'s MTU {net} cannot carry a full RoCE v2 packet of the port's RDMA MTU {rdma}: it needs at least {need}"),
        )
        .about(port_subject(port))
        .evidence(format!("netdev MTU {net}; active RDMA MTU {rdma}; RoCE v2 headers {ROCE_V2_OVERHEAD_IPV4} bytes (IPv4, UDP, BTH, RETH, ICRC)"))
        .fix(format!("raise the netdev MTU (`ip link set {nd} mtu {}` and the same on the switch path), or lower the RDMA MTU the job asks for", need)),
    )
}

fn eth(port: &QosPort, name: &str) -> Option<u64> {
    port.ethtool.read().and_then(|e| e.stat(name))
}

/// Whether the port counts pause frames per priority: ethtool's `rx_prioN_pause`, or DCB's
/// PFC counts. Without either, `pauses` is all zeros and says nothing.
pub fn pauses_counted(port: &QosPort) -> bool {
    port.ethtool.read().is_some_and(|e| {
        e.stats
            .iter()
            .any(|(n, _)| n.starts_with("rx_prio") && n.ends_with("_pause"))
    }) || port.dcb.read().is_some_and(|d| d.pfc.is_some())
}

/// Pause frames per priority, received (`rx`: the peer paused us) and sent (`tx`: we paused
/// the peer), from ethtool's `rx_prioN_pause` or DCB's PFC indications and requests.
pub fn pauses(port: &QosPort) -> [(u64, u64); 8] {
    let mut out = [(0, 0); 8];
    let pfc = port.dcb.read().and_then(|d| d.pfc.as_ref());
    for (p, slot) in out.iter_mut().enumerate() {
        let rx = eth(port, &format!("rx_prio{p}_pause"))
            .or_else(|| pfc.map(|f| f.indications[p]))
            .unwrap_or(0);
        let tx = eth(port, &format!("tx_prio{p}_pause"))
            .or_else(|| pfc.map(|f| f.requests[p]))
            .unwrap_or(0);
        *slot = (rx, tx);
    }
    out
}

/// Counters as numbers over a span: totals since cleared, or an interval's deltas.
pub struct Span<'a> {
    pub port: &'a QosPort,
    /// The counters to judge (totals, or after − before).
    pub counts: CounterView,
    /// "since the counters were last cleared", or "in the last 10 s".
    pub when: String,
    /// The interval in seconds, for durations; None for totals.
    pub seconds: Option<f64>,
}

/// The counters the rules read, by name.
#[derive(Debug, Clone, Default)]
pub struct CounterView {
    pub values: Vec<(String, u64)>,
    pub pauses: [(u64, u64); 8],
    /// Whether the port counts pause frames per priority at all (`pauses_counted`).
    pub pauses_counted: bool,
}

impl CounterView {
    fn get(&self, name: &str) -> u64 {
        self.values
            .iter()
            .find(|(n, _)| n == name)
            .map_or(0, |(_, v)| *v)
    }

    fn has(&self, name: &str) -> bool {
        self.values.iter().any(|(n, _)| n == name)
    }

    /// A port's totals.
    pub fn totals(port: &QosPort) -> CounterView {
        let mut values = port.hw_counters.clone();
        if let Some(e) = port.ethtool.read() {
            values.extend(e.stats.iter().cloned());
        }
        CounterView {
            values,
            pauses: pauses(port),
            pauses_counted: pauses_counted(port),
        }
    }

    /// What moved between two reads of one port (a counter that went back counts as 0).
    pub fn delta(before: &QosPort, after: &QosPort) -> CounterView {
        let (b, a) = (CounterView::totals(before), CounterView::totals(after));
        let values = a
            .values
            .iter()
            .map(|(n, v)| (n.clone(), v.saturating_sub(b.get(n))))
            .collect();
        let mut pauses = [(0, 0); 8];
        for (p, slot) in pauses.iter_mut().enumerate() {
            *slot = (
                a.pauses[p].0.saturating_sub(b.pauses[p].0),
                a.pauses[p].1.saturating_sub(b.pauses[p].1),
            );
        }
        CounterView {
            values,
            pauses,
            pauses_counted: a.pauses_counted && b.pauses_counted,
        }
    }
}

fn totals(port: &QosPort, chains: &[Chain]) -> Vec<Diagnostic> {
    counter_findings(
        &Span {
            port,
            counts: CounterView::totals(port),
            when: "since the counters were last cleared".to_string(),
            seconds: None,
        },
        chains,
    )
}

/// The interval view: the chains of the port (for the priority the traffic should use) and
/// what its counters did in the interval.
pub fn interval_findings(
    facts: &QosFacts,
    before: &QosPort,
    after: &QosPort,
    seconds: f64,
) -> Vec<Diagnostic> {
    let chains = chains(facts, after);
    counter_findings(
        &Span {
            port: after,
            counts: CounterView::delta(before, after),
            when: format!("in the last {seconds:.1} s"),
            seconds: Some(seconds),
        },
        &chains,
    )
}

/// What a pingpong run's netdev did: pause storms and pauses on a priority its traffic
/// class does not map to (`gather::qos::run_port` reads only DCB and ethtool; the RNR and
/// ECN rules are the run's own counter rules, which see both ends).
pub fn run_findings(
    tclass: Option<u8>,
    before: &QosPort,
    after: &QosPort,
    seconds: f64,
) -> Vec<Diagnostic> {
    let facts = QosFacts {
        ports: Vec::new(),
        tclass_flag: tclass,
        env: Default::default(),
    };
    interval_findings(&facts, before, after, seconds)
        .into_iter()
        .filter(|f| f.code != codes::QOS_RNR_NOT_CONGESTION)
        .collect()
}

/// Counter rules: pause storms, pauses on a priority the traffic should not use, ECN marks
/// without CNPs, and RNR NAKs that are an empty receive queue rather than congestion.
pub fn counter_findings(span: &Span, chains: &[Chain]) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let port = span.port;
    let nd = netdev_name(port);
    let subject = port_subject(port);
    let c = &span.counts;
    let when = &span.when;

    // Pause storms: the NIC's own watchdog, or a priority paused most of an interval.
    let storm_warn = c.get("tx_pause_storm_warning_events");
    let storm_err = c.get("tx_pause_storm_error_events");
    let mut storm_lines = Vec::new();
    if storm_warn > 0 || storm_err > 0 {
        storm_lines.push(format!(
            "tx_pause_storm_warning_events +{storm_warn}, tx_pause_storm_error_events +{storm_err} {when}"
        ));
    }
    if let Some(secs) = span.seconds.filter(|s| *s > 0.0) {
        for p in 0..8 {
            for dir in ["rx", "tx"] {
                let us = c.get(&format!("{dir}_prio{p}_pause_duration"));
                let share = us as f64 / (secs * 1e6);
                if share >= 0.5 {
                    storm_lines.push(format!(
                        "{dir}_prio{p}_pause_duration +{us} µs: priority {p} paused {:.0}% of the interval",
                        share * 100.0
                    ));
                }
            }
        }
    }
    if !storm_lines.is_empty() {
        let from_here =
            storm_warn > 0 || storm_err > 0 || storm_lines.iter().any(|l| l.starts_with("tx_"));
        let mut f = Diagnostic::finding(
            if storm_err > 0 || span.seconds.is_some() { Severity::Fail } else { Severity::Warn },
            codes::QOS_PAUSE_STORM,
            if from_here {
                format!("pause storm from {nd}: it kept sending PFC pause frames {when}, stalling its link partner (a stuck receive path on this host: a hung driver, PCIe back-pressure or a full receive buffer)")
            } else {
                format!("pause storm toward {nd}: the link partner paused it most of the time {when} (congestion or a stuck device further on the network path)")
            },
        )
        .about(subject.clone());
        for l in storm_lines {
            f = f.evidence(l);
        }
        out.push(f.fix(if from_here {
            format!("find why this host cannot drain its receive queues (`ethtool -S {nd} | grep -e discard -e buf`, the PCIe link in `rdmactl doctor`, a hung process); the NIC's storm watchdog (`ethtool --set-tunable {nd} pfc-prevention-tout MSECS`) limits the damage meanwhile")
        } else {
            "follow the pauses upstream: the switch port's PFC counters show which port keeps its queue full".to_string()
        }));
    }

    // Pauses on a priority the traffic does not use: the switch and the host disagree on
    // the mapping (or other traffic is paused).
    let ours: Vec<u8> = chains.iter().filter_map(|ch| ch.priority).collect();
    if !ours.is_empty() {
        let others: Vec<String> = (0..8u8)
            .filter(|p| !ours.contains(p))
            .filter_map(|p| {
                let (rx, tx) = c.pauses[usize::from(p)];
                (rx + tx > 0).then(|| format!("priority {p}: received {rx}, sent {tx}"))
            })
            .collect();
        let on_ours: u64 = ours
            .iter()
            .map(|p| c.pauses[usize::from(*p)].0 + c.pauses[usize::from(*p)].1)
            .sum();
        if !others.is_empty() {
            let mut f = Diagnostic::finding(
                Severity::Warn,
                codes::QOS_PAUSE_OTHER_PRIORITY,
                format!(
                    "pause frames on {} {when}, but RoCE traffic here goes to {}: the switch and this host map DSCP to different priorities, or the pauses are for other traffic",
                    if others.len() == 1 { "another priority" } else { "other priorities" },
                    list_or_none(&ours)
                ),
            )
            .about(subject.clone());
            for l in &others {
                f = f.evidence(l.clone());
            }
            f = f.evidence(format!("pauses on {}: {on_ours}", list_or_none(&ours)));
            for ch in chains {
                f = f.evidence(chain_label(ch));
            }
            out.push(f.fix(format!(
                "compare the switch's DSCP-to-priority map and PFC priorities with this host's (`dcb app show dev {nd}`, `dcb pfc show dev {nd}`): both ends must put the RoCE DSCP on the same PFC priority"
            )));
        }
    }

    // ECN-marked packets arrived, but this NIC sent no CNP: the notification point is off.
    let marked = c.get("np_ecn_marked_roce_packets");
    let cnp_sent = c.get("np_cnp_sent");
    if marked > 0 && cnp_sent == 0 {
        let np: Vec<String> = (0..8)
            .filter_map(|p| port.vendor.ecn_np[p].map(|v| format!("{p}:{}", u8::from(v))))
            .collect();
        let mut f = Diagnostic::finding(
            Severity::Warn,
            codes::QOS_ECN_NO_CNP,
            format!("{marked} ECN-marked RoCE packets arrived {when} and no CNP was sent: the notification point is not working, so the senders never slow down"),
        )
        .about(subject.clone())
        .evidence(format!("np_ecn_marked_roce_packets +{marked}, np_cnp_sent +{cnp_sent}"));
        if !np.is_empty() {
            f = f.evidence(format!("ecn/roce_np/enable per priority: {}", np.join(" ")));
        }
        out.push(f.fix(format!(
            "enable the notification point on the RoCE priority (`echo 1 > /sys/class/net/{nd}/ecn/roce_np/enable/PRIO`, or the NIC's congestion-control setting in firmware)"
        )));
    }

    // RNR: an empty receive queue, told apart from congestion by what did not move.
    let oob = c.get("out_of_buffer");
    let rnr_retry = c.get("rnr_nak_retry_err");
    if oob > 0 || rnr_retry > 0 {
        // Congestion is ruled out only by the signals this port counts.
        let mut read = Vec::new();
        let mut moved = 0;
        for name in [
            "np_ecn_marked_roce_packets",
            "np_cnp_sent",
            "rp_cnp_handled",
        ] {
            if c.has(name) {
                read.push(format!("{name} +{}", c.get(name)));
                moved += c.get(name);
            }
        }
        if c.pauses_counted {
            let pause_total: u64 = c.pauses.iter().map(|(r, t)| r + t).sum();
            read.push(format!("pause frames +{pause_total}"));
            moved += pause_total;
        }
        // ECN marks arriving and pause frames are what congestion toward this receiver
        // shows; the CNP counters only add to them.
        let all_read = c.has("np_ecn_marked_roce_packets") && c.pauses_counted;
        let message = if moved > 0 {
            format!("receiver not ready {when}: the receive queue was empty when SENDs arrived (out_of_buffer); congestion signals moved too, so both may play a part")
        } else if all_read {
            format!("receiver not ready, not congestion: {when} the receive queue was empty when SENDs arrived (out_of_buffer), and nothing shows congestion")
        } else {
            format!("receiver not ready {when}: the receive queue was empty when SENDs arrived (out_of_buffer); no congestion signal this port counts moved, but not every one is counted here")
        };
        let mut f = Diagnostic::finding(Severity::Warn, codes::QOS_RNR_NOT_CONGESTION, message)
            .about(subject.clone())
            .evidence(format!("out_of_buffer +{oob} (receives that found no posted buffer), rnr_nak_retry_err +{rnr_retry} (sends that ran out of RNR retries)"))
            .evidence(if read.is_empty() {
                "congestion: no ECN, CNP or per-priority pause counter on this port".to_string()
            } else {
                format!("congestion: {}", read.join(", "))
            });
        if oob > 0 && oob == rnr_retry {
            f = f.evidence(format!("out_of_buffer equals rnr_nak_retry_err ({oob}) on this port: one cause fits both, though the tie is between a receiver's out_of_buffer and its peer's rnr_nak_retry_err (compare the peer's)"));
        }
        out.push(f.fix("post receives before the peer sends and keep the receive queue deeper than the sends in flight (the application's receive depth, an SRQ's limit); PFC and ECN settings do not change this"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::qos::{
        CmDefault, CmDefaultSource, DcbApp, EthtoolFacts, Ets, JobQosEnv, PauseParam, Pfc,
        VendorQos,
    };

    fn app(dscp: u16, prio: u8) -> DcbApp {
        DcbApp {
            selector: APP_SEL_DSCP,
            priority: prio,
            protocol: dscp,
        }
    }

    /// A ConnectX-like port done right: DSCP trust, DSCP 26 → 3 and 48 → 6, PFC on 3, ETS
    /// shares for every class, ECN on 3, CNPs on DSCP 48 / priority 6, rdma_cm TOS 106.
    fn good() -> QosPort {
        let mut ets = Ets {
            tc_tsa: [TSA_ETS; 8],
            tc_tx_bw: [10, 10, 10, 40, 10, 10, 10, 0],
            ..Ets::default()
        };
        ets.prio_tc = [0, 1, 2, 3, 4, 5, 6, 7];
        ets.tc_tsa[7] = 0; // strict: a 0% share is not starvation there
        let mut vendor = VendorQos {
            trust: Some("dscp".into()),
            cnp_dscp: Some(48),
            cnp_802p_prio: Some(6),
            ..VendorQos::default()
        };
        vendor.ecn_np = [Some(true); 8];
        vendor.ecn_rp = [Some(true); 8];
        QosPort {
            device: "mlx5_0".into(),
            port: 1,
            netdev: Some("ens1f0np0".into()),
            netdev_mtu: Some(4200),
            active_mtu: Some(4096),
            dcb: Probe::Read(DcbConfig {
                dcbx: Some(DCBX_HOST | crate::model::qos::DCBX_VER_IEEE),
                ets: Some(ets),
                pfc: Some(Pfc {
                    pfc_cap: 8,
                    pfc_en: 1 << 3,
                    ..Pfc::default()
                }),
                app: vec![app(26, 3), app(48, 6)],
                trust: Some(vec![APP_SEL_DSCP, APP_SEL_PCP]),
                ..DcbConfig::default()
            }),
            cm_default: Probe::Read(CmDefault {
                tos: 106,
                mode: Some("RoCE v2".into()),
                source: CmDefaultSource::Configfs(
                    "/sys/kernel/config/rdma_cm/mlx5_0/ports/1".into(),
                ),
            }),
            vendor,
            ethtool: Probe::Read(EthtoolFacts {
                stats: vec![("rx_prio3_pause".into(), 0)],
                pause: Probe::Read(PauseParam::default()),
            }),
            hw_counters: vec![
                ("np_ecn_marked_roce_packets".into(), 0),
                ("np_cnp_sent".into(), 0),
            ],
            // RoCE on VLAN 200 too, as in qos-good.
            gid_netdevs: vec!["ens1f0np0".into(), "ens1f0np0.200".into()],
        }
    }

    fn facts(port: QosPort) -> QosFacts {
        QosFacts {
            ports: vec![port],
            tclass_flag: None,
            env: JobQosEnv::default(),
        }
    }

    fn codes_of(f: &[Diagnostic]) -> Vec<&str> {
        f.iter().map(|d| d.code.as_str()).collect()
    }

    fn dcb_mut(p: &mut QosPort) -> &mut DcbConfig {
        match &mut p.dcb {
            Probe::Read(d) => d,
            _ => unreachable!(),
        }
    }

    fn all_text(d: &Diagnostic) -> String {
        format!("{} {:?} {}", d.message, d.evidence, d.fix_text())
    }

    #[test]
    fn a_correct_chain_is_one_ok_finding_that_names_every_link() {
        let f = findings(&facts(good()));
        assert_eq!(codes_of(&f), ["qos-chain"], "{f:#?}");
        assert_eq!(f[0].severity, Severity::Ok);
        let m = &f[0].message;
        for part in [
            "traffic class 106",
            "DSCP 26",
            "priority 3",
            "PFC on",
            "ETS tc 3 40%",
            "ECN NP and RP on",
        ] {
            assert!(m.contains(part), "{part}: {m}");
        }
    }

    #[test]
    fn pfc_on_the_wrong_priority_fails_and_names_a_traffic_class_that_works() {
        let mut p = good();
        dcb_mut(&mut p).pfc.as_mut().unwrap().pfc_en = 1 << 4;
        dcb_mut(&mut p).app.push(app(34, 4));
        let f = findings(&facts(p));
        assert_eq!(codes_of(&f), ["qos-pfc-priority"], "{f:#?}");
        let t = all_text(&f[0]);
        assert_eq!(f[0].severity, Severity::Fail);
        assert!(t.contains("not enabled on priority 3"), "{t}");
        assert!(t.contains("PFC is on priority 4"), "{t}");
        assert!(t.contains("prio-pfc 3:on"), "{t}");
        // DSCP 34 → priority 4 (PFC on), the job's ECN bits (2) kept: 34 << 2 | 2 = 138.
        assert!(t.contains("traffic class 138"), "{t}");
        assert!(
            !t.contains("ECN (DCQCN) is off") && !t.contains("cable"),
            "{t}"
        );
    }

    #[test]
    fn an_unmapped_dscp_under_dscp_trust_warns_and_is_not_called_a_pfc_fault() {
        let mut p = good();
        dcb_mut(&mut p).app = vec![app(24, 3), app(48, 6)];
        let f = findings(&facts(p));
        assert_eq!(codes_of(&f), ["qos-dscp-unmapped"], "{f:#?}");
        let t = all_text(&f[0]);
        assert!(t.contains("DSCP 26 is not in the APP table"), "{t}");
        assert!(t.contains("dscp-prio 26:3"), "{t}");
        assert!(t.contains("traffic class 98"), "DSCP 24 with ECN 2: {t}");
        assert!(!t.contains("PFC is not enabled"), "{t}");
    }

    #[test]
    fn ecn_off_on_the_roce_priority_warns_naming_the_point_that_is_off() {
        let mut p = good();
        p.vendor.ecn_np[3] = Some(false);
        let f = findings(&facts(p.clone()));
        assert_eq!(codes_of(&f), ["qos-ecn-off"], "{f:#?}");
        assert!(
            f[0].message.contains("notification point off"),
            "{}",
            f[0].message
        );
        assert!(!f[0].message.contains("reaction point off"));
        p.vendor.ecn_np[3] = Some(true);
        p.vendor.ecn_rp[3] = Some(false);
        let f = findings(&facts(p));
        assert!(
            f[0].message.contains("reaction point off"),
            "{}",
            f[0].message
        );
        assert!(!f[0].message.contains("notification point off"));
    }

    #[test]
    fn a_zero_ets_share_fails_but_a_strict_class_does_not() {
        let mut p = good();
        dcb_mut(&mut p).ets.as_mut().unwrap().tc_tx_bw[3] = 0;
        let f = findings(&facts(p));
        assert_eq!(codes_of(&f), ["qos-ets-zero"], "{f:#?}");
        // The good port's tc 7 has 0% but is strict: no finding for the CNPs or anyone.
        assert!(findings(&facts(good()))
            .iter()
            .all(|d| d.code.as_str() != "qos-ets-zero"));
    }

    #[test]
    fn cnps_on_a_priority_their_dscp_does_not_map_to_warn() {
        let mut p = good();
        p.vendor.cnp_802p_prio = Some(5);
        let f = findings(&facts(p));
        assert_eq!(codes_of(&f), ["qos-chain", "qos-cnp-priority"], "{f:#?}");
        assert!(f[1]
            .message
            .contains("maps to priority 6, but are sent on 802.1p priority 5"));
    }

    #[test]
    fn global_pause_beside_pfc_warns() {
        let mut p = good();
        p.ethtool = Probe::Read(EthtoolFacts {
            stats: vec![],
            pause: Probe::Read(PauseParam {
                autoneg: false,
                rx: true,
                tx: true,
            }),
        });
        let f = findings(&facts(p));
        assert_eq!(codes_of(&f), ["qos-chain", "qos-global-pause"], "{f:#?}");
        assert!(f[1]
            .fix_text()
            .contains("ethtool -A ens1f0np0 rx off tx off"));
    }

    #[test]
    fn an_mtu_without_room_for_the_headers_warns() {
        let mut p = good();
        p.netdev_mtu = Some(4096);
        let f = findings(&facts(p));
        assert_eq!(codes_of(&f), ["qos-chain", "qos-mtu"], "{f:#?}");
        assert!(
            f[1].message.contains("needs at least 4156"),
            "{}",
            f[1].message
        );
    }

    #[test]
    fn pfc_off_everywhere_is_info_with_ecn_on_and_warn_without() {
        let mut p = good();
        dcb_mut(&mut p).pfc.as_mut().unwrap().pfc_en = 0;
        let f = findings(&facts(p.clone()));
        assert_eq!(codes_of(&f), ["qos-pfc-off"], "{f:#?}");
        assert_eq!(f[0].severity, Severity::Info);
        p.vendor.ecn_np = [None; 8];
        p.vendor.ecn_rp = [None; 8];
        let f = findings(&facts(p));
        assert_eq!(
            f.iter()
                .find(|d| d.code.as_str() == "qos-pfc-off")
                .unwrap()
                .severity,
            Severity::Warn
        );
    }

    #[test]
    fn a_virtual_nic_is_not_manageable_and_nothing_is_called_ok() {
        let mut p = good();
        p.dcb = Probe::NotExposed("veth0 has no DCB support".into());
        p.vendor = VendorQos::default();
        let f = findings(&facts(p));
        assert_eq!(codes_of(&f), ["qos-not-manageable"], "{f:#?}");
        assert_eq!(f[0].severity, Severity::Info);
        assert!(
            f[0].message
                .contains("is not checked: its DCB configuration was not read"),
            "{}",
            f[0].message
        );
        assert!(f[0]
            .evidence
            .iter()
            .any(|e| e.text.contains("veth0 has no DCB support")));
        assert!(f.iter().all(|d| d.severity != Severity::Ok));
        let chains = chains(&facts(good()), &good());
        assert_eq!(chains.len(), 1);
    }

    #[test]
    fn the_job_variables_and_the_flag_are_chains_beside_the_cm_default() {
        let mut fx = facts(good());
        fx.tclass_flag = Some(106);
        fx.env.vars = vec![
            ("NCCL_IB_TC".into(), "96".into()),
            ("NCCL_IB_SL".into(), "3".into()),
        ];
        let c = chains(&fx, &fx.ports[0]);
        assert_eq!(c.len(), 2, "{c:#?}");
        assert_eq!(c[0].tclass, 106);
        assert_eq!(c[0].sources, [TclassSource::Flag, TclassSource::CmDefault]);
        assert_eq!(c[1].tclass, 96);
        // DSCP 24 is unmapped in the good port's table.
        let f = findings(&fx);
        assert_eq!(codes_of(&f), ["qos-chain", "qos-dscp-unmapped"], "{f:#?}");
        assert!(f[1]
            .evidence
            .iter()
            .any(|e| e.text.contains("from NCCL_IB_TC")));
    }

    #[test]
    fn pcp_trust_leaves_the_priority_unknown_and_says_why() {
        let mut p = good();
        dcb_mut(&mut p).trust = Some(vec![APP_SEL_PCP]);
        let c = chains(&facts(p.clone()), &p);
        assert_eq!(c[0].priority, None);
        assert!(
            c[0].unknown[0].contains("VLAN tag's PCP"),
            "{:?}",
            c[0].unknown
        );
        let f = findings(&facts(p));
        assert!(
            f.iter()
                .all(|d| d.severity != Severity::Ok && d.code.as_str() != "qos-pfc-priority"),
            "{f:#?}"
        );
    }

    /// PCP trust with no VLAN netdev behind any RoCE GID: RoCE arrives untagged, on
    /// priority 0, and PFC on 3 only leaves it lossy. The GIDs' netdevs decide, and the
    /// finding says so; with a VLAN's GIDs beside them it stays unknown (above).
    #[test]
    fn pcp_trust_with_untagged_roce_lands_on_priority_0() {
        let mut p = good();
        dcb_mut(&mut p).trust = Some(vec![APP_SEL_PCP]);
        p.gid_netdevs = vec!["ens1f0np0".into()];
        let c = chains(&facts(p.clone()), &p);
        assert_eq!(c[0].priority, Some(0), "{c:?}");
        assert_eq!(c[0].pfc, Some(false));
        let f = findings(&facts(p));
        let pfc = f
            .iter()
            .find(|d| d.code.as_str() == "qos-pfc-priority")
            .expect("PFC off on priority 0 is named");
        assert_eq!(pfc.severity, Severity::Fail);
        assert!(
            pfc.message.contains("not enabled on priority 0"),
            "{}",
            pfc.message
        );
        let all = pfc
            .evidence
            .iter()
            .map(|e| e.text.clone())
            .collect::<Vec<_>>()
            .join("\n");
        assert!(
            all.contains("untagged RoCE: every GID's netdev is ens1f0np0 itself (no VLAN netdev)"),
            "{all}"
        );
        assert!(!all.contains("APP table"), "{all}");
        let fix = pfc.fix.as_deref().unwrap();
        assert!(
            fix.contains("prio-pfc 0:on") && fix.contains("trust dscp"),
            "{fix}"
        );
    }

    fn with_counters(mut p: QosPort, hw: &[(&str, u64)], eth: &[(&str, u64)]) -> QosPort {
        p.hw_counters = hw.iter().map(|(n, v)| (n.to_string(), *v)).collect();
        p.ethtool = Probe::Read(EthtoolFacts {
            stats: eth.iter().map(|(n, v)| (n.to_string(), *v)).collect(),
            pause: Probe::Read(PauseParam::default()),
        });
        p
    }

    #[test]
    fn rnr_with_no_congestion_signal_is_an_empty_receive_queue() {
        // sonic-buildimage #21891: no ECN marks, no CNPs, out_of_buffer = rnr_nak_retry_err.
        let p = with_counters(
            good(),
            &[
                ("np_ecn_marked_roce_packets", 0),
                ("np_cnp_sent", 0),
                ("out_of_buffer", 1543),
                ("rnr_nak_retry_err", 1543),
            ],
            &[],
        );
        let f = findings(&facts(p));
        assert_eq!(
            codes_of(&f),
            ["qos-chain", "qos-rnr-not-congestion"],
            "{f:#?}"
        );
        let t = all_text(&f[1]);
        assert!(t.contains("not congestion"), "{t}");
        assert!(t.contains("equals rnr_nak_retry_err (1543)"), "{t}");
        assert!(t.contains("post receives"), "{t}");
        assert!(
            !t.contains("enable PFC") && !t.contains("DCQCN is off"),
            "{t}"
        );
    }

    #[test]
    fn ecn_marks_without_cnps_say_the_notification_point_is_off() {
        let p = with_counters(
            good(),
            &[("np_ecn_marked_roce_packets", 5000), ("np_cnp_sent", 0)],
            &[],
        );
        let f = findings(&facts(p));
        assert_eq!(codes_of(&f), ["qos-chain", "qos-ecn-no-cnp"], "{f:#?}");
        assert!(f[1].message.contains("5000 ECN-marked"));
        assert!(!all_text(&f[1]).contains("receive queue"));
    }

    #[test]
    fn a_pause_storm_says_which_side_is_stuck() {
        let p = with_counters(
            good(),
            &[],
            &[
                ("tx_pause_storm_warning_events", 2),
                ("tx_pause_storm_error_events", 1),
                ("tx_prio3_pause", 9_000_000),
            ],
        );
        let f = findings(&facts(p));
        assert_eq!(codes_of(&f), ["qos-chain", "qos-pause-storm"], "{f:#?}");
        assert_eq!(f[1].severity, Severity::Fail);
        assert!(
            f[1].message.contains("pause storm from ens1f0np0"),
            "{}",
            f[1].message
        );
        assert!(!f[1].message.contains("toward"));
    }

    #[test]
    fn pauses_on_another_priority_over_an_interval_point_at_the_mapping() {
        let before = with_counters(
            good(),
            &[],
            &[("rx_prio0_pause", 10), ("rx_prio3_pause", 5)],
        );
        let after = with_counters(
            good(),
            &[],
            &[("rx_prio0_pause", 9010), ("rx_prio3_pause", 5)],
        );
        let f = interval_findings(&facts(good()), &before, &after, 2.0);
        assert_eq!(codes_of(&f), ["qos-pause-other-priority"], "{f:#?}");
        let t = all_text(&f[0]);
        assert!(t.contains("priority 0: received 9000, sent 0"), "{t}");
        assert!(t.contains("pauses on priority 3: 0"), "{t}");
        assert!(t.contains("in the last 2.0 s"), "{t}");
        // A priority paused most of the interval is a storm.
        let before = with_counters(good(), &[], &[("rx_prio3_pause_duration", 0)]);
        let after = with_counters(
            good(),
            &[],
            &[
                ("rx_prio3_pause_duration", 1_500_000),
                ("rx_prio3_pause", 100),
            ],
        );
        let f = interval_findings(&facts(good()), &before, &after, 2.0);
        assert_eq!(codes_of(&f), ["qos-pause-storm"], "{f:#?}");
        assert!(
            f[0].message.contains("toward ens1f0np0"),
            "{}",
            f[0].message
        );
    }

    #[test]
    fn a_run_s_pauses_on_another_priority_are_judged_with_its_traffic_class() {
        // The run used traffic class 0x68 (DSCP 26 → priority 3); the pauses were on 0.
        let mut before = with_counters(good(), &[("out_of_buffer", 0)], &[("rx_prio0_pause", 0)]);
        before.cm_default = Probe::NotExposed("no group".into());
        let mut after = with_counters(good(), &[("out_of_buffer", 9)], &[("rx_prio0_pause", 700)]);
        after.cm_default = Probe::NotExposed("no group".into());
        let f = run_findings(Some(0x68), &before, &after, 1.0);
        assert_eq!(codes_of(&f), ["qos-pause-other-priority"], "{f:#?}");
        assert!(all_text(&f[0]).contains("traffic class 104 (DSCP 26, ECN 0) from --tclass"));
        // Without a traffic class (rdma_cm's default unknown) no priority is known: silent.
        assert!(run_findings(None, &before, &after, 1.0).is_empty());
    }

    #[test]
    fn a_trust_order_of_pcp_then_dscp_leaves_the_priority_undecided() {
        let mut p = good();
        dcb_mut(&mut p).trust = Some(vec![APP_SEL_PCP, APP_SEL_DSCP]);
        p.vendor.trust = None;
        let c = chains(&facts(p.clone()), &p);
        assert_eq!((c[0].trust, c[0].priority), (None, None));
        assert!(
            c[0].unknown[0].contains("PCP before DSCP"),
            "{:?}",
            c[0].unknown
        );
        let f = findings(&facts(p));
        assert!(
            f.iter()
                .all(|d| d.severity != Severity::Ok && d.code.as_str() != "qos-pfc-priority"),
            "{f:#?}"
        );
    }

    #[test]
    fn nccl_numbers() {
        for (text, want) in [
            ("106", Some(106)),
            (" 106", Some(106)),
            ("0x6A", Some(106)),
            ("0152", Some(106)),
            ("106abc", Some(106)),
            ("+7", Some(7)),
            ("0", Some(0)),
            ("0x", Some(0)),
            ("-0", Some(0)),
            ("08", Some(0)),
            ("255", Some(255)),
            ("256", None),
            ("-1", None),
            ("", None),
            ("abc", None),
            ("-", None),
            ("99999999999999999999999", None),
        ] {
            assert_eq!(job_tclass("NCCL_IB_TC", text), want, "{text:?}");
        }
        assert_eq!(job_tclass("NCCL_IB_SL", "3"), None, "a service level");
    }

    #[test]
    fn ucx_numbers() {
        for (text, want) in [
            ("106", Some(106)),
            ("AUTO", Some(106)),
            (" 96", Some(96)),
            ("96 trailing", Some(96)),
            ("0x6a", Some(0)),
            ("-0", Some(0)),
            ("-1", None),
            ("256", None),
            ("inf", None),
            ("", None),
            ("99999999999999999999999", None),
        ] {
            assert_eq!(job_tclass("UCX_IB_TRAFFIC_CLASS", text), want, "{text:?}");
        }
    }

    #[test]
    fn firmware_managed_dcbx_is_said() {
        let mut p = good();
        dcb_mut(&mut p).dcbx = Some(DCBX_LLD_MANAGED | crate::model::qos::DCBX_VER_IEEE);
        let f = findings(&facts(p));
        assert_eq!(codes_of(&f), ["qos-dcbx-firmware", "qos-chain"], "{f:#?}");
    }
}
