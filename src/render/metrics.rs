//! The exporter's series, one row each: name, TYPE, HELP and labels. `render::exporter`
//! takes every family's `# HELP` and `# TYPE` from here, and docs/exporter.md's list of
//! series is `markdown()` of this table (a test fails when they differ). The counters of
//! `counters/` and `hw_counters/` are families by pattern: each counter's HELP is its own
//! meaning, so their rows say what the pattern holds.

use crate::render::exposition::{SeriesFamily, SeriesKind};

use SeriesKind::{Counter, Gauge};

/// One series family as exported and documented.
#[derive(Debug)]
pub struct Metric {
    /// The family's name; `<name>` stands for a counter file's name in a pattern row.
    pub name: &'static str,
    pub kind: SeriesKind,
    /// Every label a sample may carry (one with an empty value is left out of its line).
    pub labels: &'static [&'static str],
    /// `# HELP`, and the docs' description.
    pub help: &'static str,
    /// What the docs add to HELP: where the series is left out, what a label holds ("" for
    /// nothing).
    #[cfg_attr(not(test), allow(dead_code))]
    pub note: &'static str,
}

impl Metric {
    /// An empty family with this row's name, TYPE and HELP.
    pub fn family(&self) -> SeriesFamily {
        SeriesFamily::new(self.name, self.kind, self.help)
    }

    /// A pattern row's name up to `<name>`: `rdmactl_pma_`.
    pub fn prefix(&self) -> &'static str {
        self.name.split("<name>").next().unwrap_or(self.name)
    }
}

pub const DEVICE_INFO: Metric = Metric {
    name: "rdmactl_device_info",
    kind: Gauge,
    labels: &["device", "node_type", "driver", "fw_ver", "node_guid", "hca_type", "board_id"],
    help: "RDMA device (class/infiniband) with its node type, driver, firmware and GUID as labels; always 1",
    note: "",
};

pub const DEVICES: Metric = Metric {
    name: "rdmactl_devices",
    kind: Gauge,
    labels: &[],
    help: "RDMA devices class/infiniband lists (0 included, where rdmactl_device_info has no series to count): a device that disappears lowers it",
    note: "",
};

pub const PORTS: Metric = Metric {
    name: "rdmactl_ports",
    kind: Gauge,
    labels: &[],
    help: "Ports of the RDMA devices read this scrape (0 included)",
    note: "",
};

pub const SCRAPE_ERROR: Metric = Metric {
    name: "rdmactl_scrape_error",
    kind: Gauge,
    labels: &["device", "path"],
    help: "1 for each file of this device that could not be read this scrape, `path` relative to the sysfs root (its other series may be missing or partial), else 0 with `device` alone; a scrape whose reads did not return within --scrape-timeout is these series alone, one per read still blocked",
    note: "`path` is left out when the error names no one file",
};

pub const PMA_FILES_SKIPPED: Metric = Metric {
    name: "rdmactl_port_pma_files_skipped",
    kind: Gauge,
    labels: &["device", "port"],
    help: "Counter files of this port that read \"N/A (no PMA)\" among ones that hold numbers: skipped, not exported",
    note: "",
};

pub const PORT_INFO: Metric = Metric {
    name: "rdmactl_port_info",
    kind: Gauge,
    labels: &["device", "port", "link_layer", "netdev"],
    help: "RDMA port with its link layer and netdev as labels; always 1 (its state, rate and width are the values of their own series, so a state change makes no new series)",
    note: "",
};

pub const PORT_STATE: Metric = Metric {
    name: "rdmactl_port_state",
    kind: Gauge,
    labels: &["device", "port"],
    help: "Port state (ports/N/state): 1 DOWN, 2 INIT, 3 ARMED, 4 ACTIVE, 5 ACTIVE_DEFER",
    note: "",
};

pub const PHYSICAL_STATE: Metric = Metric {
    name: "rdmactl_port_physical_state",
    kind: Gauge,
    labels: &["device", "port"],
    help: "Physical port state (ports/N/phys_state): 1 Sleep, 2 Polling, 3 Disabled, 4 PortConfigurationTraining, 5 LinkUp, 6 LinkErrorRecovery, 7 PhyTest",
    note: "",
};

pub const RATE: Metric = Metric {
    name: "rdmactl_port_rate_bytes_per_second",
    kind: Gauge,
    labels: &["device", "port"],
    help: "Port data rate (ports/N/rate) in bytes per second",
    note: "",
};

pub const WIDTH: Metric = Metric {
    name: "rdmactl_port_width_lanes",
    kind: Gauge,
    labels: &["device", "port"],
    help: "Active link width in lanes (the 4 of 4X): fewer than the cable has is a degraded link",
    note: "",
};

pub const ACTIVE_MTU: Metric = Metric {
    name: "rdmactl_port_active_mtu_bytes",
    kind: Gauge,
    labels: &["device", "port"],
    help: "Active RDMA MTU in bytes (ibv_query_port; absent when libibverbs did not answer)",
    note: "not on a captured tree",
};

pub const MAX_MTU: Metric = Metric {
    name: "rdmactl_port_max_mtu_bytes",
    kind: Gauge,
    labels: &["device", "port"],
    help: "Largest RDMA MTU the port supports in bytes (ibv_query_port)",
    note: "absent when libibverbs did not answer: not on a captured tree",
};

pub const NETDEV_MTU: Metric = Metric {
    name: "rdmactl_port_netdev_mtu_bytes",
    kind: Gauge,
    labels: &["device", "port", "netdev"],
    help: "MTU of the port's netdev in bytes (class/net/NETDEV/mtu): RoCE's RDMA MTU follows it",
    note: "only for a port with a netdev",
};

pub const NETDEV_UP: Metric = Metric {
    name: "rdmactl_port_netdev_up",
    kind: Gauge,
    labels: &["device", "port", "netdev"],
    help: "1 when the port's netdev carries traffic (class/net/NETDEV/operstate up, or unknown with IFF_UP), else 0",
    note: "only for a port with a netdev; the same rule doctor and check apply",
};

pub const LID: Metric = Metric {
    name: "rdmactl_port_lid",
    kind: Gauge,
    labels: &["device", "port"],
    help: "InfiniBand port LID (ports/N/lid); 0 or 65535 means the subnet manager has not assigned one",
    note: "only for InfiniBand ports",
};

pub const SM_LID: Metric = Metric {
    name: "rdmactl_port_sm_lid",
    kind: Gauge,
    labels: &["device", "port"],
    help: "LID of the subnet manager this InfiniBand port answers to (ports/N/sm_lid)",
    note: "only for InfiniBand ports",
};

pub const GIDS: Metric = Metric {
    name: "rdmactl_port_gids",
    kind: Gauge,
    labels: &["device", "port", "type"],
    help: "Populated GID table entries by type (IB, RoCE v1, RoCE v2): a missing RoCE v2 entry breaks routed RoCE",
    note: "",
};

pub const GID_TABLE_SIZE: Metric = Metric {
    name: "rdmactl_port_gid_table_size",
    kind: Gauge,
    labels: &["device", "port"],
    help: "Slots in the port's GID table (ports/N/gids)",
    note: "",
};

pub const ROCE_V2_IPV4_GID_INDEX: Metric = Metric {
    name: "rdmactl_port_roce_v2_ipv4_gid_index",
    kind: Gauge,
    labels: &["device", "port"],
    help: "Lowest GID index of a RoCE v2 entry with an IPv4 address (what NCCL_IB_GID_INDEX and perftest -x pick); -1 when the Ethernet port has none",
    note: "only for Ethernet ports, iWARP's aside",
};

pub const STATE_CHANGES: Metric = Metric {
    name: "rdmactl_port_state_changes_total",
    kind: Counter,
    labels: &["device", "port"],
    help:
        "Port state changes seen since the exporter started, by polling ports/N/state every second",
    note: "only with `--listen`",
};

pub const MEMLOCK_LIMIT: Metric = Metric {
    name: "rdmactl_memlock_limit_bytes",
    kind: Gauge,
    labels: &[],
    help: "Soft RLIMIT_MEMLOCK of the exporter process (+Inf: unlimited); services and jobs started the same way get the same: RDMA registration fails past it",
    note: "only on a live host",
};

pub const CAP_IPC_LOCK: Metric = Metric {
    name: "rdmactl_cap_ipc_lock",
    kind: Gauge,
    labels: &[],
    help: "1 when the exporter process holds CAP_IPC_LOCK (no memlock limit applies), else 0",
    note: "only on a live host",
};

pub const HAS_PMA: Metric = Metric {
    name: "rdmactl_port_has_pma",
    kind: Gauge,
    labels: &["device", "port"],
    help: "1 when the port has IB PMA counters (ports/N/counters/ with numbers), else 0: Soft-RoCE, siw, bnxt_re and irdma ports have none",
    note: "",
};

pub const HAS_HW_STATS: Metric = Metric {
    name: "rdmactl_port_has_hw_stats",
    kind: Gauge,
    labels: &["device", "port"],
    help: "1 when the port has driver counters (ports/N/hw_counters/), else 0",
    note: "",
};

pub const PMA_COUNTERS: Metric = Metric {
    name: "rdmactl_pma_<name>_total",
    kind: Counter,
    labels: &["device", "port"],
    help: "Every file of counters/, its HELP the counter's meaning as `rdmactl counters` explains it (or that rdmactl has none) and, for one that stops at its maximum until reset, its width; port_xmit_data and port_rcv_data count 4-byte words and are exported in bytes, as rdmactl_pma_port_xmit_data_bytes_total",
    note: "",
};

pub const HW_COUNTERS: Metric = Metric {
    name: "rdmactl_hw_<name>_total",
    kind: Counter,
    labels: &["device", "port"],
    help: "Every file of hw_counters/ (but lifespan, a setting), its HELP the counter's meaning as `rdmactl counters` explains it (or that rdmactl has none)",
    note: "",
};

pub const HW_LEVELS: Metric = Metric {
    name: "rdmactl_hw_<name>",
    kind: Gauge,
    labels: &["device", "port"],
    help: "The active_* and watermark_* files of hw_counters/ (bnxt_re, irdma): levels, not counts",
    note: "",
};

pub const DCB_READABLE: Metric = Metric {
    name: "rdmactl_qos_dcb_readable",
    kind: Gauge,
    labels: &["device", "port", "netdev"],
    help: "1 when the RoCE port's netdev exposes DCB (PFC, ETS, APP table) to this host, else 0 (a virtual NIC: the chain is configured elsewhere)",
    note: "only for RoCE ports",
};

pub const PFC_ENABLED: Metric = Metric {
    name: "rdmactl_qos_pfc_enabled",
    kind: Gauge,
    labels: &["device", "port", "netdev", "priority"],
    help: "1 when PFC is enabled on this priority of the RoCE port's netdev, else 0",
    note: "only where DCB is readable",
};

pub const TRUST_DSCP: Metric = Metric {
    name: "rdmactl_qos_trust_dscp",
    kind: Gauge,
    labels: &["device", "port", "netdev"],
    help: "1 when the NIC picks a packet's priority from its DSCP, 0 when from the VLAN PCP",
    note: "only where the trust in force is known",
};

pub const DEFAULT_ROCE_TOS: Metric = Metric {
    name: "rdmactl_qos_default_roce_tos",
    kind: Gauge,
    labels: &["device", "port", "netdev", "source"],
    help: "rdma_cm's default traffic class (IP TOS byte) for applications that set none (configfs default_roce_tos; 0 without a configfs group)",
    note: "only for RoCE ports; `source`: `configfs` or `kernel_default`",
};

pub const ECN_ENABLED: Metric = Metric {
    name: "rdmactl_qos_ecn_enabled",
    kind: Gauge,
    labels: &["device", "port", "netdev", "point", "priority"],
    help: "1 when ECN (DCQCN) is enabled on this priority at this point (np: sends CNPs, rp: slows down on them), from MLNX_OFED's ecn/ files",
    note: "",
};

pub const PAUSE_FRAMES: Metric = Metric {
    name: "rdmactl_qos_pause_frames_total",
    kind: Counter,
    labels: &["device", "port", "netdev", "priority", "direction"],
    help: "PFC pause frames per priority: direction rx (the link partner paused us: look along the network) or tx (we paused it: look at this host's receive path)",
    note: "only where the netdev counts pauses per priority: ethtool's `rx_prioN_pause`, or DCB's counts",
};

pub const GLOBAL_PAUSE: Metric = Metric {
    name: "rdmactl_qos_global_pause_enabled",
    kind: Gauge,
    labels: &["device", "port", "netdev", "direction"],
    help: "1 when 802.3x global pause is on in this direction (it conflicts with PFC), else 0",
    note: "only where ethtool answers",
};

pub const FINDING: Metric = Metric {
    name: "rdmactl_finding",
    kind: Gauge,
    labels: &["code", "severity", "device", "port", "subject"],
    help: "A problem `rdmactl doctor` finds (info, warn or fail), by code: `rdmactl explain CODE` says the cause and the fix; the value is how many findings share the labels",
    note: "",
};

pub const FINDINGS: Metric = Metric {
    name: "rdmactl_findings",
    kind: Gauge,
    labels: &["severity"],
    help: "Findings of `rdmactl doctor` by severity (ok ones included)",
    note: "",
};

pub const SCRAPE_DURATION: Metric = Metric {
    name: "rdmactl_scrape_duration_seconds",
    kind: Gauge,
    labels: &[],
    help: "Time this scrape took to read sysfs, run doctor's rules and render",
    note: "only with `--listen`",
};

pub const LAST_SUCCESS: Metric = Metric {
    name: "rdmactl_last_success_timestamp_seconds",
    kind: Gauge,
    labels: &[],
    help: "Unix time of the last scrape that read class/infiniband within its deadline: `time() - rdmactl_last_success_timestamp_seconds` is how old the other series are; a --textfile run that fails writes the previous value again",
    note: "absent until one scrape succeeded",
};

/// Every row, in the order a scrape writes the families.
pub const METRICS: &[&Metric] = &[
    &DEVICES,
    &PORTS,
    &DEVICE_INFO,
    &SCRAPE_ERROR,
    &PMA_FILES_SKIPPED,
    &PORT_INFO,
    &PORT_STATE,
    &PHYSICAL_STATE,
    &RATE,
    &WIDTH,
    &ACTIVE_MTU,
    &MAX_MTU,
    &NETDEV_MTU,
    &NETDEV_UP,
    &LID,
    &SM_LID,
    &GIDS,
    &GID_TABLE_SIZE,
    &ROCE_V2_IPV4_GID_INDEX,
    &STATE_CHANGES,
    &MEMLOCK_LIMIT,
    &CAP_IPC_LOCK,
    &HAS_PMA,
    &HAS_HW_STATS,
    &PMA_COUNTERS,
    &HW_COUNTERS,
    &HW_LEVELS,
    &DCB_READABLE,
    &PFC_ENABLED,
    &TRUST_DSCP,
    &DEFAULT_ROCE_TOS,
    &ECN_ENABLED,
    &PAUSE_FRAMES,
    &GLOBAL_PAUSE,
    &FINDING,
    &FINDINGS,
    &SCRAPE_DURATION,
    &LAST_SUCCESS,
];

/// The groups `exporter --collect`/`--no-collect` pick, and what each holds; a family in
/// none (device and port counts, state, rates, MTUs, scrape errors, the scrape's own
/// series) is always exported. (The CLI's names are `cli::COLLECT_GROUPS`; a test checks
/// each group has families.)
#[cfg_attr(not(test), allow(dead_code))]
pub const GROUPS: &[(&str, &str)] = &[
    (
        "info",
        "rdmactl_device_info and rdmactl_port_info (labels: firmware, GUID, netdev)",
    ),
    (
        "gids",
        "rdmactl_port_gids, rdmactl_port_gid_table_size, rdmactl_port_roce_v2_ipv4_gid_index",
    ),
    ("pma", "rdmactl_pma_*: every file of counters/"),
    ("hw", "rdmactl_hw_*: every file of hw_counters/"),
    (
        "qos",
        "rdmactl_qos_*: the RoCE QoS configuration and pause frames",
    ),
    ("findings", "rdmactl_finding and rdmactl_findings"),
];

/// The group of a family name, None for one always exported.
pub fn group_of(family: &str) -> Option<&'static str> {
    let group = if family == DEVICE_INFO.name || family == PORT_INFO.name {
        "info"
    } else if [GIDS.name, GID_TABLE_SIZE.name, ROCE_V2_IPV4_GID_INDEX.name].contains(&family) {
        "gids"
    } else if family.starts_with(PMA_COUNTERS.prefix()) {
        "pma"
    } else if family.starts_with(HW_COUNTERS.prefix()) {
        "hw"
    } else if family.starts_with("rdmactl_qos_") {
        "qos"
    } else if family == FINDING.name || family == FINDINGS.name {
        "findings"
    } else {
        return None;
    };
    Some(group)
}

/// Which groups a scrape writes: `--collect` (only these) and `--no-collect` (all but these).
#[derive(Debug, Clone, Default)]
pub struct Collect {
    pub only: Vec<String>,
    pub not: Vec<String>,
}

impl Collect {
    pub fn keeps(&self, family: &str) -> bool {
        match group_of(family) {
            None => true,
            Some(g) => {
                (self.only.is_empty() || self.only.iter().any(|o| o == g))
                    && !self.not.iter().any(|n| n == g)
            }
        }
    }
}

/// The families of `families` that no row declares, or that carry a label their row does not
/// list: what a debug build checks of every scrape, so the table stays the exporter's.
pub fn undeclared(families: &[SeriesFamily]) -> Vec<String> {
    let row = |name: &str| {
        METRICS.iter().find(|m| match m.name.split_once("<name>") {
            Some((head, tail)) => {
                name.len() > head.len() + tail.len()
                    && name.starts_with(head)
                    && name.ends_with(tail)
            }
            None => m.name == name,
        })
    };
    let mut wrong = Vec::new();
    for f in families {
        let Some(m) = row(&f.name).filter(|m| m.kind == f.kind) else {
            wrong.push(format!("{} has no row", f.name));
            continue;
        };
        for (labels, _) in &f.samples {
            for (label, _) in labels.iter().filter(|(l, _)| !m.labels.contains(l)) {
                wrong.push(format!("{}'s label {label} is not in its row", f.name));
            }
        }
    }
    wrong
}

/// docs/exporter.md's table of series: one row per family, its labels in braces.
#[cfg(test)]
pub fn markdown() -> String {
    let mut out = String::from("| series | type | what |\n| --- | --- | --- |\n");
    for m in METRICS {
        let labels = if m.labels.is_empty() {
            String::new()
        } else {
            format!("{{{}}}", m.labels.join(","))
        };
        let kind = match m.kind {
            Counter => "counter",
            Gauge => "gauge",
        };
        let note = if m.note.is_empty() {
            String::new()
        } else {
            format!("; {}", m.note)
        };
        out.push_str(&format!(
            "| `{}{labels}` | {kind} | {}{note} |\n",
            m.name,
            m.help.replace('|', "\\|")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::exposition::SampleValue;

    const BEGIN: &str = "<!-- series: generated from src/render/metrics.rs";
    const END: &str = "<!-- end of series -->";

    /// docs/exporter.md's table is this table's `markdown()`; `UPDATE_GOLDEN=1` rewrites it
    /// (the golden files' convention).
    #[test]
    fn docs_list_every_series_as_the_table_says() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/exporter.md");
        let doc = std::fs::read_to_string(&path).unwrap();
        let start = doc.find(BEGIN).expect("docs/exporter.md's series marker");
        let start = start + doc[start..].find('\n').unwrap() + 1;
        let end = doc
            .find(END)
            .expect("docs/exporter.md's end of series marker");
        let want = markdown();
        if doc[start..end] == want {
            return;
        }
        if std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1") {
            std::fs::write(&path, format!("{}{want}{}", &doc[..start], &doc[end..])).unwrap();
            return;
        }
        panic!(
            "docs/exporter.md's series differ from src/render/metrics.rs; run \
             UPDATE_GOLDEN=1 cargo test --bin rdmactl metrics, or paste:\n{want}"
        );
    }

    /// A family or label the table lacks is named.
    #[test]
    fn undeclared_names_a_family_or_label_the_table_lacks() {
        let mut state = PORT_STATE.family();
        state.push(
            vec![("device", "rxe0".into()), ("port", "1".into())],
            SampleValue::Int(4),
        );
        let mut pma = SeriesFamily::new("rdmactl_pma_port_xmit_data_bytes_total", Counter, "x");
        pma.push(vec![("device", "rxe0".into())], SampleValue::Int(4));
        let level = SeriesFamily::new("rdmactl_hw_active_qps", Gauge, "x");
        assert!(undeclared(&[state.clone(), pma, level]).is_empty());
        state.push(vec![("netdev", "eth0".into())], SampleValue::Int(4));
        let stray = SeriesFamily::new("rdmactl_port_stray", Gauge, "x");
        // A counter pattern's name with a gauge's TYPE is not that row.
        let wrong_kind = SeriesFamily::new("rdmactl_pma_x_total", Gauge, "x");
        assert_eq!(
            undeclared(&[state, stray, wrong_kind]),
            [
                "rdmactl_port_state's label netdev is not in its row",
                "rdmactl_port_stray has no row",
                "rdmactl_pma_x_total has no row",
            ]
        );
    }

    #[test]
    fn collect_picks_groups_and_keeps_the_rest() {
        assert_eq!(group_of("rdmactl_pma_symbol_error_total"), Some("pma"));
        assert_eq!(group_of("rdmactl_hw_rdma_sends_total"), Some("hw"));
        assert_eq!(group_of("rdmactl_port_state"), None);
        let only_pma = Collect {
            only: vec!["pma".into()],
            not: vec![],
        };
        assert!(only_pma.keeps("rdmactl_pma_symbol_error_total"));
        assert!(!only_pma.keeps("rdmactl_hw_rdma_sends_total"));
        assert!(only_pma.keeps("rdmactl_port_state"));
        let no_hw = Collect {
            only: vec![],
            not: vec!["hw".into(), "qos".into()],
        };
        assert!(!no_hw.keeps("rdmactl_hw_rdma_sends_total"));
        assert!(!no_hw.keeps("rdmactl_qos_pfc_enabled"));
        assert!(no_hw.keeps("rdmactl_finding"));
        // Every group named has a family in it.
        for (g, _) in GROUPS {
            assert!(
                METRICS
                    .iter()
                    .any(|m| group_of(&m.name.replace("<name>", "x")) == Some(*g)),
                "{g}"
            );
        }
    }

    #[test]
    fn names_are_unique_and_follow_the_conventions() {
        let mut seen = std::collections::BTreeSet::new();
        for m in METRICS {
            assert!(seen.insert(m.name), "{} twice", m.name);
            assert!(m.name.starts_with("rdmactl_"), "{}", m.name);
            // Prometheus' conventions, as promtool checks them on a scrape.
            assert_eq!(m.kind == Counter, m.name.ends_with("_total"), "{}", m.name);
            assert!(!m.help.is_empty() && !m.help.contains('\n'), "{}", m.name);
        }
    }
}
