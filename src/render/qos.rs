//! `qos`'s report: per RoCE port what each link of the chain reads (or why it was not
//! read), the chain of each traffic class in use, then the findings; the interval view
//! shows what the counters did. Text and JSON.

use serde::Serialize;

use crate::model::diagnostic::Diagnostic;
use crate::model::qos::{
    Chain, CmDefaultSource, DcbConfig, Probe, QosPort, Trust, APP_SEL_DSCP, APP_SEL_ETHERTYPE,
    APP_SEL_PCP, DCBX_HOST, DCBX_LLD_MANAGED, DCBX_STATIC, DCBX_VER_CEE, DCBX_VER_IEEE, TSA_ETS,
    TSA_STRICT,
};
use crate::output::Style;
use crate::render::diagnostic::{self as render, Evidence};
use crate::render::doctor::DoctorReport;

/// One port with its chains, as `-j` writes it.
#[derive(Debug, Serialize)]
pub struct PortView<'a> {
    #[serde(flatten)]
    pub port: &'a QosPort,
    pub chains: Vec<Chain>,
}

#[derive(Debug, Serialize)]
pub struct QosReport<'a> {
    pub ports: Vec<PortView<'a>>,
    /// The findings and their tally, as doctor's JSON has them.
    #[serde(flatten)]
    pub judged: DoctorReport,
}

impl<'a> QosReport<'a> {
    pub fn new(ports: Vec<PortView<'a>>, findings: Vec<Diagnostic>) -> QosReport<'a> {
        QosReport {
            ports,
            judged: DoctorReport::from(findings),
        }
    }
}

pub fn json(report: &QosReport) -> String {
    crate::output::json(report)
}

pub fn text(report: &QosReport, style: Style) -> String {
    let mut out = String::new();
    if report.ports.is_empty() {
        out.push_str("no RoCE port (qos judges Ethernet link layer ports only)\n");
    }
    for view in &report.ports {
        port_text(&mut out, view);
        out.push('\n');
    }
    out.push_str(&render::lines(
        &report.judged.findings,
        style,
        Evidence::Problems,
    ));
    out.push_str(&render::tally(&report.judged.findings));
    out
}

fn row(out: &mut String, label: &str, value: impl AsRef<str>) {
    out.push_str(&format!("  {label:<14}{}\n", value.as_ref()));
}

fn port_text(out: &mut String, view: &PortView) {
    let p = view.port;
    let mut head = format!("{}/{}", p.device, p.port);
    if let Some(nd) = &p.netdev {
        head.push_str(&format!("  {nd}"));
    }
    if let Some(m) = p.netdev_mtu {
        head.push_str(&format!("  MTU {m}"));
    }
    if let Some(m) = p.active_mtu {
        head.push_str(&format!("  RDMA MTU {m}"));
    }
    out.push_str(&head);
    out.push('\n');
    row(out, "rdma_cm", cm_text(&p.cm_default));
    match &p.dcb {
        Probe::Read(d) => dcb_rows(out, d),
        // The why is the qos-not-manageable finding's evidence: said once, there.
        Probe::NotExposed(_) => row(out, "DCB", "not exposed (qos-not-manageable below)"),
        Probe::Failed(_) => row(out, "DCB", "not read (qos-not-manageable below)"),
    }
    if let Some(t) = &p.vendor.trust {
        row(out, "qos/trust", t);
    }
    let ecn = ecn_text(p);
    row(out, "ECN", ecn);
    if p.vendor.cnp_dscp.is_some() || p.vendor.cnp_802p_prio.is_some() {
        row(
            out,
            "CNP",
            format!(
                "DSCP {}, 802.1p priority {}",
                opt(p.vendor.cnp_dscp),
                opt(p.vendor.cnp_802p_prio)
            ),
        );
    }
    match &p.ethtool {
        Probe::Read(e) => {
            row(
                out,
                "global pause",
                match &e.pause {
                    Probe::Read(pp) => format!(
                        "rx {}, tx {}, autoneg {}",
                        on(pp.rx),
                        on(pp.tx),
                        on(pp.autoneg)
                    ),
                    other => not_read(other),
                },
            );
            let pauses = crate::diagnose::qos::pauses(p);
            let moved: Vec<String> = pauses
                .iter()
                .enumerate()
                .filter(|(_, (rx, tx))| rx + tx > 0)
                .map(|(i, (rx, tx))| format!("prio {i}: rx {rx} tx {tx}"))
                .collect();
            row(
                out,
                "pause frames",
                if moved.is_empty() {
                    "none counted per priority".to_string()
                } else {
                    moved.join(", ")
                },
            );
        }
        Probe::NotExposed(_) => row(out, "ethtool", "not exposed (qos-not-manageable below)"),
        Probe::Failed(_) => row(out, "ethtool", "not read (qos-not-manageable below)"),
    }
    for c in &view.chains {
        row(out, "chain", chain_text(c));
        for u in &c.unknown {
            row(out, "", format!("unknown: {u}"));
        }
    }
}

fn on(b: bool) -> &'static str {
    if b {
        "on"
    } else {
        "off"
    }
}

fn opt(v: Option<u8>) -> String {
    v.map_or("?".to_string(), |v| v.to_string())
}

fn not_read<T>(p: &Probe<T>) -> String {
    match p {
        Probe::Read(_) => String::new(),
        Probe::NotExposed(why) => format!("not exposed: {why}"),
        Probe::Failed(why) => format!("not read: {why}"),
    }
}

fn cm_text(p: &Probe<crate::model::qos::CmDefault>) -> String {
    match p {
        Probe::Read(cm) => {
            let mode = cm
                .mode
                .as_deref()
                .map(|m| format!(", default_roce_mode {m}"))
                .unwrap_or_default();
            let from = match &cm.source {
                CmDefaultSource::Configfs(path) => format!(" ({path})"),
                CmDefaultSource::ConfigfsProbed(path) => {
                    format!(" ({path}, created for the read and removed)")
                }
                CmDefaultSource::KernelDefault => {
                    " (the kernel's default: no configfs group for the device)".to_string()
                }
            };
            format!(
                "default_roce_tos {} (DSCP {}, ECN {}){mode}{from}",
                cm.tos,
                cm.tos >> 2,
                cm.tos & 3
            )
        }
        other => not_read(other),
    }
}

fn dcb_rows(out: &mut String, d: &DcbConfig) {
    if let Some(mode) = d.dcbx {
        let mut parts = Vec::new();
        if mode & DCBX_HOST != 0 {
            parts.push("host");
        }
        if mode & DCBX_LLD_MANAGED != 0 {
            parts.push("firmware/LLDP agent");
        }
        if mode & DCBX_VER_IEEE != 0 {
            parts.push("IEEE");
        }
        if mode & DCBX_STATIC != 0 {
            parts.push("static");
        }
        if mode & DCBX_VER_CEE != 0 {
            parts.push("CEE");
        }
        row(out, "DCBX", format!("0x{mode:02x} ({})", parts.join(", ")));
    }
    if let Some(t) = &d.trust {
        let names: Vec<String> = t.iter().map(|s| selector_name(*s)).collect();
        row(
            out,
            "trust",
            format!("{} (DCB trust table)", names.join(" ")),
        );
    }
    match &d.pfc {
        Some(pfc) => {
            let prios: Vec<String> = pfc.enabled_priorities().iter().map(u8::to_string).collect();
            row(
                out,
                "PFC",
                if prios.is_empty() {
                    format!("off on every priority (capable of {})", pfc.pfc_cap)
                } else {
                    format!("on priority {}", prios.join(", "))
                },
            );
        }
        None => row(out, "PFC", "not reported by the driver"),
    }
    let dscp: Vec<String> = d
        .app
        .iter()
        .filter(|a| a.selector == APP_SEL_DSCP)
        .map(|a| format!("{}→{}", a.protocol, a.priority))
        .collect();
    row(
        out,
        "APP (DSCP)",
        if dscp.is_empty() {
            "no DSCP entries".to_string()
        } else {
            dscp.join(" ")
        },
    );
    if let Some(ets) = &d.ets {
        row(
            out,
            "ETS",
            format!(
                "prio→tc {}; tc share % {}; tsa {}{}",
                join(&ets.prio_tc),
                join(&ets.tc_tx_bw),
                ets.tc_tsa
                    .iter()
                    .map(|t| tsa_name(*t))
                    .collect::<Vec<_>>()
                    .join(" "),
                if ets.willing { "; willing" } else { "" }
            ),
        );
    }
}

fn join(v: &[u8; 8]) -> String {
    v.iter().map(u8::to_string).collect::<Vec<_>>().join(" ")
}

fn tsa_name(t: u8) -> &'static str {
    match t {
        TSA_STRICT => "strict",
        1 => "cbs",
        TSA_ETS => "ets",
        255 => "vendor",
        _ => "?",
    }
}

fn selector_name(s: u8) -> String {
    match s {
        APP_SEL_DSCP => "dscp".to_string(),
        APP_SEL_PCP => "pcp".to_string(),
        APP_SEL_ETHERTYPE => "ethtype".to_string(),
        2 => "stream-port".to_string(),
        3 => "dgram-port".to_string(),
        4 => "port".to_string(),
        other => other.to_string(),
    }
}

fn ecn_text(p: &QosPort) -> String {
    let v = &p.vendor;
    let list = |a: &[Option<bool>; 8]| -> Option<String> {
        let on: Vec<String> = (0..8)
            .filter(|i| a[*i] == Some(true))
            .map(|i| i.to_string())
            .collect();
        a.iter().any(Option::is_some).then(|| {
            if on.is_empty() {
                "off".to_string()
            } else {
                format!("on {}", on.join(","))
            }
        })
    };
    match (list(&v.ecn_np), list(&v.ecn_rp)) {
        (None, None) => {
            "not visible (no MLNX_OFED ecn/ files: upstream drivers keep it in firmware or debugfs)"
                .to_string()
        }
        (np, rp) => format!(
            "notification point {}, reaction point {}",
            np.unwrap_or("absent".into()),
            rp.unwrap_or("absent".into())
        ),
    }
}

fn chain_text(c: &Chain) -> String {
    let mut s = crate::diagnose::qos::chain_label(c);
    let trust = match c.trust {
        Some(Trust::Dscp) => "dscp",
        Some(Trust::Pcp) => "pcp",
        None => "?",
    };
    s.push_str(&format!(": trust {trust}"));
    if let Some(p) = c.priority {
        s.push_str(&format!(" → priority {p}"));
        if let Some(pfc) = c.pfc {
            s.push_str(if pfc { " → PFC on" } else { " → PFC OFF" });
        }
        if let (Some(tc), Some(share)) = (c.ets_tc, c.ets_share) {
            s.push_str(&format!(" → ETS tc {tc} {share}%"));
        }
        if c.ecn_np.is_some() || c.ecn_rp.is_some() {
            s.push_str(&format!(
                " → ECN NP {} RP {}",
                c.ecn_np.map_or("?", on),
                c.ecn_rp.map_or("?", on)
            ));
        }
    } else {
        s.push_str(" → priority ?");
    }
    s
}

/// The interval view's JSON: what moved per port, and the findings.
#[derive(Debug, Serialize)]
pub struct IntervalPort {
    pub device: String,
    pub port: u32,
    pub netdev: Option<String>,
    /// Pause frames per priority in the interval: (received, sent).
    pub pauses: Vec<PausePair>,
    /// Every counter that moved, by name.
    pub moved: Vec<(String, u64)>,
}

#[derive(Debug, Serialize)]
pub struct PausePair {
    pub priority: u8,
    pub rx: u64,
    pub tx: u64,
}

#[derive(Debug, Serialize)]
pub struct IntervalReport {
    pub seconds: f64,
    pub ports: Vec<IntervalPort>,
    #[serde(serialize_with = "crate::model::diagnostic::json::findings")]
    pub findings: Vec<Diagnostic>,
}

pub fn interval_json(report: &IntervalReport) -> String {
    crate::output::json(report)
}

pub fn interval_text(report: &IntervalReport, style: Style) -> String {
    let mut out = String::new();
    for p in &report.ports {
        out.push_str(&format!(
            "{}/{}  {}  over {:.1} s\n",
            p.device,
            p.port,
            p.netdev.as_deref().unwrap_or("-"),
            report.seconds
        ));
        let pauses: Vec<String> = p
            .pauses
            .iter()
            .filter(|x| x.rx + x.tx > 0)
            .map(|x| format!("prio {}: rx {} tx {}", x.priority, x.rx, x.tx))
            .collect();
        row(
            &mut out,
            "pause frames",
            if pauses.is_empty() {
                "none".to_string()
            } else {
                pauses.join(", ")
            },
        );
        let moved: Vec<String> = p.moved.iter().map(|(n, v)| format!("{n} +{v}")).collect();
        row(
            &mut out,
            "moved",
            if moved.is_empty() {
                "nothing".to_string()
            } else {
                moved.join(", ")
            },
        );
        out.push('\n');
    }
    out.push_str(&render::lines(&report.findings, style, Evidence::Problems));
    out.push_str(&render::tally(&report.findings));
    out
}
