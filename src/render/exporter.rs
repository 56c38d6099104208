//! `rdmactl exporter`: one scrape's facts and doctor's findings as Prometheus series.
//! Names follow the Prometheus conventions: `rdmactl_` prefix, base units (bytes, bytes
//! per second), `_total` on counters, `device` and `port` labels. Each family's name, HELP
//! and TYPE are its row of `render::metrics`, which docs/exporter.md lists with the alerts
//! they are meant for.

use std::collections::BTreeMap;

use crate::model::counter::{Counter, CounterSource, Unit};
use crate::model::device::{Device, LinkLayer, PhysState, Port, PortState};
use crate::model::diagnostic::{Diagnostic, Severity, Subject};
use crate::model::exporter::{ScrapeFacts, ScrapeProblem};
use crate::model::gid::GidKind;
use crate::render::exposition::{metric_name_part, write, SampleValue, SeriesFamily, SeriesKind};
use crate::render::metrics;

use SampleValue::{Float, Int, Signed};

type Labels = Vec<(&'static str, String)>;

/// The whole exposition of one scrape: device and port state, configuration, every
/// counter, doctor's findings (`findings`, from the same facts) and per-device errors.
/// Only the groups `collect` keeps are written (`--collect`, `--no-collect`).
pub fn exposition(
    facts: &ScrapeFacts,
    findings: &[Diagnostic],
    collect: &metrics::Collect,
) -> String {
    let mut families = Vec::new();
    families.extend(device_families(facts));
    families.extend(port_families(facts));
    families.extend(host_families(facts));
    families.extend(counter_families(facts));
    families.extend(qos_families(facts));
    families.extend(finding_families(findings));
    families.retain(|f| collect.keeps(&f.name));
    debug_assert_eq!(metrics::undeclared(&families), Vec::<String>::new());
    write(&families)
}

/// How long the scrape took: only the HTTP endpoint says it, so a textfile (and the golden
/// files) stay the same from run to run.
pub fn scrape_duration(seconds: f64) -> String {
    let mut f = metrics::SCRAPE_DURATION.family();
    f.push(vec![], Float((seconds * 1e6).round() / 1e6));
    debug_assert_eq!(
        metrics::undeclared(std::slice::from_ref(&f)),
        Vec::<String>::new()
    );
    write(&[f])
}

/// Unix time of the last scrape that finished: written by `--listen` on each scrape and by
/// `--textfile` (a failed run writes the previous value again), so an alert can say how old
/// the other series are.
pub fn last_success(unix_secs: f64) -> String {
    let mut f = metrics::LAST_SUCCESS.family();
    f.push(vec![], Float(unix_secs.round()));
    write(&[f])
}

/// A scrape that read nothing (in time): the reads still blocked, or the error that ended
/// it, each a scrape error with its path, and no other series (half a scrape, or the last
/// one's, would pass for healthy).
pub fn unread(stuck: &[ScrapeProblem]) -> String {
    let mut error = metrics::SCRAPE_ERROR.family();
    for stuck in stuck {
        error.push(
            vec![
                ("device", stuck.device().unwrap_or_default().to_string()),
                ("path", stuck.path.clone().unwrap_or_default()),
            ],
            Int(1),
        );
    }
    if stuck.is_empty() {
        error.push(vec![], Int(1));
    }
    debug_assert_eq!(
        metrics::undeclared(std::slice::from_ref(&error)),
        Vec::<String>::new()
    );
    write(&[error])
}

fn dev(d: &str) -> Labels {
    vec![("device", d.to_string())]
}

fn port_labels(p: &Port) -> Labels {
    vec![("device", p.device.clone()), ("port", p.number.to_string())]
}

fn device_families(facts: &ScrapeFacts) -> Vec<SeriesFamily> {
    let mut devices = metrics::DEVICES.family();
    devices.push(vec![], Int(facts.doctor.listed.len() as u64));
    let mut ports = metrics::PORTS.family();
    let n: usize = facts.doctor.devices.iter().map(|d| d.ports.len()).sum();
    ports.push(vec![], Int(n as u64));
    let mut info = metrics::DEVICE_INFO.family();
    for d in &facts.doctor.devices {
        info.push(device_info_labels(d), Int(1));
    }
    let mut error = metrics::SCRAPE_ERROR.family();
    let mut skipped = metrics::PMA_FILES_SKIPPED.family();
    for (name, scrape) in &facts.devices {
        if scrape.errors.is_empty() {
            error.push(dev(name), Int(0));
        }
        // One series per file that failed, so the alert names it; deduplicated, as two
        // whole-device errors name no file.
        let failed: std::collections::BTreeSet<_> =
            scrape.errors.iter().map(|e| e.path.clone()).collect();
        for path in failed {
            let mut l = dev(name);
            l.push(("path", path.unwrap_or_default()));
            error.push(l, Int(1));
        }
        for (port, n) in &scrape.no_pma {
            skipped.push(
                vec![("device", name.clone()), ("port", port.to_string())],
                Int(*n),
            );
        }
    }
    vec![devices, ports, info, error, skipped]
}

fn device_info_labels(d: &Device) -> Labels {
    let mut l = dev(&d.name);
    let opt = |v: &Option<String>| v.clone().unwrap_or_default();
    l.push((
        "node_type",
        d.node_type
            .as_ref()
            .map(|t| t.name().to_string())
            .unwrap_or_default(),
    ));
    l.push(("driver", opt(&d.driver)));
    l.push(("fw_ver", opt(&d.fw_ver)));
    l.push((
        "node_guid",
        d.node_guid.map(|g| g.to_string()).unwrap_or_default(),
    ));
    l.push(("hca_type", opt(&d.hca_type)));
    l.push(("board_id", opt(&d.board_id)));
    l
}

/// The kernel's number for a port state (`ports/N/state`), as `ibstat` shows it.
fn state_number(s: &PortState) -> Option<u64> {
    Some(match s {
        PortState::Nop => 0,
        PortState::Down => 1,
        PortState::Init => 2,
        PortState::Armed => 3,
        PortState::Active => 4,
        PortState::ActiveDefer => 5,
        PortState::Other(_) => return None,
    })
}

/// The IBTA number for a physical port state (`ports/N/phys_state`).
fn phys_number(s: &PhysState) -> Option<u64> {
    Some(match s {
        PhysState::Sleep => 1,
        PhysState::Polling => 2,
        PhysState::Disabled => 3,
        PhysState::PortConfigurationTraining => 4,
        PhysState::LinkUp => 5,
        PhysState::LinkErrorRecovery => 6,
        PhysState::PhyTest => 7,
        PhysState::Other(_) => return None,
    })
}

fn port_families(facts: &ScrapeFacts) -> Vec<SeriesFamily> {
    let mut info = metrics::PORT_INFO.family();
    let mut state = metrics::PORT_STATE.family();
    let mut phys = metrics::PHYSICAL_STATE.family();
    let mut rate = metrics::RATE.family();
    let mut width = metrics::WIDTH.family();
    let mut active_mtu = metrics::ACTIVE_MTU.family();
    let mut max_mtu = metrics::MAX_MTU.family();
    let mut netdev_mtu = metrics::NETDEV_MTU.family();
    let mut netdev_up = metrics::NETDEV_UP.family();
    let mut lid = metrics::LID.family();
    let mut sm_lid = metrics::SM_LID.family();
    let mut gids = metrics::GIDS.family();
    let mut table = metrics::GID_TABLE_SIZE.family();
    let mut v4 = metrics::ROCE_V2_IPV4_GID_INDEX.family();
    let mut changes = metrics::STATE_CHANGES.family();
    // An iWARP port has no RoCE GIDs to pick from: no GID index series for it.
    let ports = facts.doctor.devices.iter().flat_map(|d| {
        let iwarp = d.node_type.as_ref().is_some_and(|t| t.is_iwarp());
        d.ports.iter().map(move |p| (p, iwarp))
    });
    for ((p, iwarp), extras) in ports.zip(&facts.doctor.ports) {
        let l = port_labels(p);
        info.push(port_info_labels(p), Int(1));
        if let Some(n) = p.state.as_ref().and_then(state_number) {
            state.push(l.clone(), Int(n));
        }
        if let Some(n) = p.phys_state.as_ref().and_then(phys_number) {
            phys.push(l.clone(), Int(n));
        }
        if let Some(r) = &p.rate {
            if let Some(gbps) = r.gbps {
                rate.push(l.clone(), Float((gbps * 1e9 / 8.0).round()));
            }
            if let Some(lanes) = r
                .width
                .as_deref()
                .and_then(|w| w.trim_end_matches('X').parse::<u64>().ok())
            {
                width.push(l.clone(), Int(lanes));
            }
        }
        if let Some(m) = p.active_mtu {
            active_mtu.push(l.clone(), Int(u64::from(m)));
        }
        if let Some(m) = p.max_mtu {
            max_mtu.push(l.clone(), Int(u64::from(m)));
        }
        if let Some(nd) = &p.netdev {
            let mut nl = l.clone();
            nl.push(("netdev", nd.name.clone()));
            if let Some(m) = nd.mtu {
                netdev_mtu.push(nl.clone(), Int(u64::from(m)));
            }
            if nd.operstate.is_some() {
                netdev_up.push(nl, Int(u64::from(nd.carries_traffic())));
            }
        }
        let ib = p.link_layer == Some(LinkLayer::InfiniBand);
        if ib {
            if let Some(v) = p.lid {
                lid.push(l.clone(), Int(u64::from(v)));
            }
            if let Some(v) = p.sm_lid {
                sm_lid.push(l.clone(), Int(u64::from(v)));
            }
        }
        for (t, n) in gids_by_type(p) {
            let mut gl = l.clone();
            gl.push(("type", t));
            gids.push(gl, Int(n));
        }
        if extras.gid_table_len > 0 {
            table.push(l.clone(), Int(extras.gid_table_len as u64));
        }
        if p.link_layer == Some(LinkLayer::Ethernet) && !iwarp {
            v4.push(l.clone(), Signed(roce_v2_ipv4_index(p)));
        }
        if let Some(seen) = &facts.state_changes {
            let n = seen
                .get(&(p.device.clone(), p.number))
                .copied()
                .unwrap_or(0);
            changes.push(l, Int(n));
        }
    }
    vec![
        info, state, phys, rate, width, active_mtu, max_mtu, netdev_mtu, netdev_up, lid, sm_lid,
        gids, table, v4, changes,
    ]
}

/// `rdmactl_port_info`'s labels: what of a port does not change while it runs (its state,
/// rate and width are values, so a flap makes no new series).
fn port_info_labels(p: &Port) -> Labels {
    let mut l = port_labels(p);
    let name = |v: Option<&str>| v.unwrap_or_default().to_string();
    l.push((
        "link_layer",
        p.link_layer
            .as_ref()
            .map(|x| x.to_string())
            .unwrap_or_default(),
    ));
    l.push(("netdev", name(p.netdev.as_ref().map(|n| n.name.as_str()))));
    l
}

/// Populated GID entries by type name, in name order (the same order every scrape).
fn gids_by_type(p: &Port) -> BTreeMap<String, u64> {
    let mut by_type: BTreeMap<String, u64> = BTreeMap::new();
    for g in &p.gids {
        let t = g
            .gid_type
            .as_ref()
            .map_or("unknown".to_string(), |t| t.to_string());
        *by_type.entry(t).or_insert(0) += 1;
    }
    by_type
}

/// The lowest RoCE v2 GID index holding an IPv4 address, -1 for none.
fn roce_v2_ipv4_index(p: &Port) -> i64 {
    p.gids
        .iter()
        .find(|g| {
            g.gid_type == Some(crate::model::device::GidType::RoceV2)
                && g.gid.kind() == GidKind::Ipv4Mapped
        })
        .map_or(-1, |g| i64::from(g.index))
}

/// What only a live host answers (a captured tree is another host's): the limits.
fn host_families(facts: &ScrapeFacts) -> Vec<SeriesFamily> {
    let mut memlock = metrics::MEMLOCK_LIMIT.family();
    let mut cap = metrics::CAP_IPC_LOCK.family();
    if let Some(host) = &facts.doctor.host {
        if let Some(limit) = host.memlock_soft {
            memlock.push(vec![], limit.map_or(Float(f64::INFINITY), Int));
        }
        if let Some(c) = host.cap_ipc_lock {
            cap.push(vec![], Int(u64::from(c)));
        }
    }
    vec![memlock, cap]
}

/// The RoCE QoS configuration `qos` reads, as gauges a fleet compares across nodes (a node
/// whose PFC or trust differs from its rack's), and the per-priority pause frames.
fn qos_families(facts: &ScrapeFacts) -> Vec<SeriesFamily> {
    use crate::model::qos::{CmDefaultSource, Probe};
    let mut dcb = metrics::DCB_READABLE.family();
    let mut pfc = metrics::PFC_ENABLED.family();
    let mut trust = metrics::TRUST_DSCP.family();
    let mut tos = metrics::DEFAULT_ROCE_TOS.family();
    let mut ecn = metrics::ECN_ENABLED.family();
    let mut pause = metrics::PAUSE_FRAMES.family();
    let mut global = metrics::GLOBAL_PAUSE.family();
    for p in &facts.doctor.qos.ports {
        let base = || -> Labels {
            vec![
                ("device", p.device.clone()),
                ("port", p.port.to_string()),
                ("netdev", p.netdev.clone().unwrap_or_default()),
            ]
        };
        dcb.push(base(), Int(u64::from(p.dcb.read().is_some())));
        if let Some(d) = p.dcb.read() {
            if let Some(f) = &d.pfc {
                for prio in 0..8u8 {
                    let mut l = base();
                    l.push(("priority", prio.to_string()));
                    pfc.push(l, Int(u64::from(f.enabled(prio))));
                }
            }
        }
        if let Some((t, _)) = crate::diagnose::qos::trust(p) {
            trust.push(base(), Int(u64::from(t == crate::model::qos::Trust::Dscp)));
        }
        if let Some(cm) = p.cm_default.read() {
            let mut l = base();
            l.push((
                "source",
                match cm.source {
                    CmDefaultSource::Configfs(_) | CmDefaultSource::ConfigfsProbed(_) => {
                        "configfs".to_string()
                    }
                    CmDefaultSource::KernelDefault => "kernel_default".to_string(),
                },
            ));
            tos.push(l, Int(u64::from(cm.tos)));
        }
        for (point, values) in [("np", &p.vendor.ecn_np), ("rp", &p.vendor.ecn_rp)] {
            for (prio, v) in values.iter().enumerate() {
                if let Some(on) = v {
                    let mut l = base();
                    l.push(("point", point.to_string()));
                    l.push(("priority", prio.to_string()));
                    ecn.push(l, Int(u64::from(*on)));
                }
            }
        }
        if crate::diagnose::qos::pauses_counted(p) {
            for (prio, (rx, tx)) in crate::diagnose::qos::pauses(p).iter().enumerate() {
                for (dir, v) in [("rx", rx), ("tx", tx)] {
                    let mut l = base();
                    l.push(("priority", prio.to_string()));
                    l.push(("direction", dir.to_string()));
                    pause.push(l, Int(*v));
                }
            }
        }
        if let Some(Probe::Read(pp)) = p.ethtool.read().map(|e| &e.pause) {
            for (dir, on) in [("rx", pp.rx), ("tx", pp.tx)] {
                let mut l = base();
                l.push(("direction", dir.to_string()));
                global.push(l, Int(u64::from(on)));
            }
        }
    }
    vec![dcb, pfc, trust, tos, ecn, pause, global]
}

/// Every counter of `counters/` and `hw_counters/`, one family per name, with its meaning
/// as HELP. PMA data counters count 4-byte words: exported in bytes.
fn counter_families(facts: &ScrapeFacts) -> Vec<SeriesFamily> {
    let mut presence = [metrics::HAS_PMA.family(), metrics::HAS_HW_STATS.family()];
    let mut families: Vec<SeriesFamily> = Vec::new();
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    for pc in facts
        .doctor
        .ports
        .iter()
        .filter_map(|x| x.counters.as_ref())
    {
        let l = vec![("device", pc.device.clone()), ("port", pc.port.to_string())];
        presence[0].push(l.clone(), Int(u64::from(pc.has_counters_dir)));
        presence[1].push(l.clone(), Int(u64::from(pc.has_hw_counters_dir)));
        for c in &pc.counters {
            let (name, kind, help) = counter_family(c);
            let i = *index.entry(name.clone()).or_insert_with(|| {
                families.push(SeriesFamily::new(name, kind, help));
                families.len() - 1
            });
            families[i].push(l.clone(), Int(c.bytes().unwrap_or(c.value)));
        }
    }
    let mut out = presence.to_vec();
    out.extend(families);
    out
}

/// A counter's family: name, TYPE and HELP.
fn counter_family(c: &Counter) -> (String, SeriesKind, String) {
    let prefix = match c.source {
        CounterSource::Counters => metrics::PMA_COUNTERS.prefix(),
        CounterSource::HwCounters => metrics::HW_COUNTERS.prefix(),
    };
    let mut name = format!("{prefix}{}", without_type_words(&metric_name_part(&c.name)));
    let meaning = c.meaning.map_or_else(
        || {
            format!(
                "{}/{}: a driver statistic rdmactl has no meaning for",
                c.source.dir(),
                c.name
            )
        },
        |m| format!("{}/{}: {m}", c.source.dir(), c.name),
    );
    if c.is_level() {
        return (name, metrics::HW_LEVELS.kind, meaning);
    }
    let mut help = meaning;
    if c.unit == Unit::Words {
        // The meaning already says the words are shown as bytes.
        name.push_str("_bytes");
    }
    if c.saturates {
        help.push_str(&format!("; stops at 2^{}-1 until reset", c.width));
    }
    if !name.ends_with("_total") {
        name.push_str("_total");
    }
    (name, SeriesKind::Counter, help)
}

/// A counter file's name part with the words Prometheus keeps for metric types said
/// otherwise: `promtool check metrics` refuses a name with `counter` or `gauge` between
/// underscores (`..._cnp_counter_total`), so `counter` is `count` and `gauge` is `level`.
/// The HELP still names the file.
fn without_type_words(part: &str) -> String {
    part.split('_')
        .map(|w| match w {
            "counter" | "counters" => "count",
            "gauge" => "level",
            other => other,
        })
        .collect::<Vec<_>>()
        .join("_")
}

fn finding_families(findings: &[Diagnostic]) -> Vec<SeriesFamily> {
    let mut each = metrics::FINDING.family();
    let mut tally = metrics::FINDINGS.family();
    let mut grouped: BTreeMap<Labels, u64> = BTreeMap::new();
    let mut by_severity: BTreeMap<Severity, u64> =
        [Severity::Ok, Severity::Info, Severity::Warn, Severity::Fail]
            .into_iter()
            .map(|s| (s, 0))
            .collect();
    for d in findings {
        *by_severity.entry(d.severity).or_insert(0) += 1;
        if d.severity == Severity::Ok {
            continue;
        }
        let mut l: Labels = vec![
            ("code", d.code.to_string()),
            ("severity", severity_name(d.severity).to_string()),
        ];
        match &d.subject {
            Some(Subject::Device(dv)) => l.push(("device", dv.clone())),
            Some(Subject::Port(dv, p)) | Some(Subject::GidIndex(dv, p, _)) => {
                l.push(("device", dv.clone()));
                l.push(("port", p.to_string()));
            }
            Some(Subject::Host) | None => {}
            Some(other) => l.push(("subject", other.label())),
        }
        *grouped.entry(l).or_insert(0) += 1;
    }
    // By code, then subject: the same order every scrape, whatever order the rules ran in.
    for (l, n) in grouped {
        each.push(l, Int(n));
    }
    for (s, n) in by_severity {
        tally.push(vec![("severity", severity_name(s).to_string())], Int(n));
    }
    vec![each, tally]
}

/// Lower case, as a label value is matched in an alert rule.
fn severity_name(s: Severity) -> &'static str {
    match s {
        Severity::Ok => "ok",
        Severity::Info => "info",
        Severity::Warn => "warn",
        Severity::Fail => "fail",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_words_leave_counter_names() {
        assert_eq!(without_type_words("np_cnp_counter"), "np_cnp_count");
        assert_eq!(without_type_words("counter_rx_gauge"), "count_rx_level");
        // Only whole words: a name that merely contains the letters stays.
        assert_eq!(without_type_words("encounters_x"), "encounters_x");
    }

    /// A scrape that ran out of time is its blocked reads alone, each named with its
    /// device; none of the healthy series of the last scrape.
    #[test]
    fn an_overdue_scrape_is_its_blocked_reads_alone() {
        let stuck = [
            ScrapeProblem {
                path: Some("class/infiniband/mlx5_0/ports/1/counters/symbol_error".into()),
                error: "no answer within 5 s".into(),
            },
            ScrapeProblem {
                path: Some("bus/pci/devices/0000:3b:00.0/config".into()),
                error: "no answer within 5 s".into(),
            },
        ];
        let text = unread(&stuck);
        let samples: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(
            samples,
            [
                "rdmactl_scrape_error{device=\"mlx5_0\",path=\"class/infiniband/mlx5_0/ports/1/counters/symbol_error\"} 1",
                "rdmactl_scrape_error{path=\"bus/pci/devices/0000:3b:00.0/config\"} 1",
            ]
        );
        // A gather stuck outside any file read still says the scrape failed.
        assert!(unread(&[]).contains("\nrdmactl_scrape_error 1\n"));
    }
}
