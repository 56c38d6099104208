//! What `qos` reads of each RoCE port: the netdev's DCB configuration (rtnetlink), rdma_cm's
//! configfs defaults, MLNX_OFED's qos/ecn files, the netdev's ethtool statistics and pause
//! setting, and the port's congestion counters; and the job's QoS variables.
//!
//! A captured tree (`--sysfs`) holds what only the live host can answer beside it, under
//! `capture/`: `dcb/ND.nl` (the kernel's DCB_CMD_IEEE_GET reply), `ethtool/ND.stats`
//! (`ethtool -S ND`) and `ethtool/ND.pause` (`ethtool -a ND`).

use std::io;
use std::path::{Path, PathBuf};

use crate::ctx::Ctx;
use crate::gather::net::dcb;
use crate::gather::sysfs::SysfsRoot;
use crate::gather::verbs::sys;
use crate::model::counter::PortCounters;
use crate::model::device::{Device, LinkLayer, Port};
use crate::model::errno::errno_text;
use crate::model::qos::{
    CmDefault, CmDefaultSource, DcbConfig, EthtoolFacts, JobQosEnv, PauseParam, Probe, QosFacts,
    QosPort, VendorQos,
};

/// The congestion and retransmission counters `qos` judges, by the names drivers give them:
/// mlx5's `hw_counters` (DCQCN's notification and reaction points, receive buffer
/// exhaustion, RNR and sequence errors), rxe's, and the PMA's wait and discard counts.
const CONGESTION_COUNTERS: &[&str] = &[
    // mlx5
    "np_ecn_marked_roce_packets",
    "np_cnp_sent",
    "rp_cnp_handled",
    "rp_cnp_ignored",
    "out_of_buffer",
    "out_of_sequence",
    "rnr_nak_retry_err",
    "roce_adp_retrans",
    "roce_adp_retrans_to",
    "roce_slow_restart",
    "roce_slow_restart_cnps",
    "roce_slow_restart_trans",
    "rx_icrc_encapsulated",
    "packet_seq_err",
    "implied_nak_seq_err",
    "local_ack_timeout_err",
    "duplicate_request",
    "req_transport_retries_exceeded",
    // rxe
    "rcvd_rnr_err",
    "send_rnr_err",
    "rcvd_seq_err",
    "ack_deferred",
    "retry_exceeded_err",
    "retry_rnr_exceeded_err",
    "completer_retry_err",
    "out_of_seq_request",
    // counters/ (PMA)
    "port_xmit_wait",
    "port_xmit_discards",
];

/// Every RoCE port of `devices`, read. `make_cm_group`: on a live host, read rdma_cm's
/// default through a configfs group made for the read where none exists (`qos` does; doctor
/// and the exporter, which run unasked and often, leave configfs alone).
/// `known`: ports' counters the caller already read (doctor's), not read again.
pub fn ports(
    ctx: &Ctx,
    devices: &[Device],
    make_cm_group: bool,
    known: &[&PortCounters],
) -> Vec<QosPort> {
    let sysfs = SysfsRoot::new(&ctx.sysfs);
    devices
        .iter()
        .flat_map(|d| d.ports.iter().map(move |p| (d, p)))
        .filter(|(_, p)| p.link_layer == Some(LinkLayer::Ethernet))
        .map(|(d, p)| {
            let mut port = read_port(ctx, &sysfs, &d.name, p, make_cm_group);
            let counters = match known
                .iter()
                .find(|c| c.device == d.name && c.port == p.number)
            {
                Some(c) => Some((*c).clone()),
                None => sysfs.port_counters(&d.name, p.number).ok(),
            };
            port.hw_counters = counters
                .map(|c| congestion_counters(&c))
                .unwrap_or_default();
            port
        })
        .collect()
}

fn read_port(
    ctx: &Ctx,
    sysfs: &SysfsRoot,
    device: &str,
    port: &Port,
    make_cm_group: bool,
) -> QosPort {
    let netdev = port.netdev.as_ref().map(|n| n.name.clone());
    let no_netdev = || format!("{device} port {} has no netdev", port.number);
    let (dcb, vendor, ethtool) = match &netdev {
        Some(nd) => (
            read_dcb(ctx, nd),
            read_vendor(&ctx.sysfs.join("class/net").join(nd)),
            read_ethtool(ctx, nd),
        ),
        None => (
            Probe::NotExposed(no_netdev()),
            VendorQos::default(),
            Probe::NotExposed(no_netdev()),
        ),
    };
    QosPort {
        device: device.to_string(),
        port: port.number,
        netdev_mtu: netdev.as_deref().and_then(|nd| sysfs.netdev(nd)?.mtu),
        netdev,
        active_mtu: port.active_mtu,
        dcb,
        cm_default: read_cm_default(
            &ctx.sysfs,
            device,
            port.number,
            (!ctx.captured).then_some(make_cm_group),
        ),
        vendor,
        ethtool,
        hw_counters: Vec::new(),
        gid_netdevs: {
            let mut nds: Vec<String> = port.gids.iter().filter_map(|g| g.netdev.clone()).collect();
            if nds.is_empty() {
                nds = port.gid_netdevs.clone();
            }
            nds.dedup();
            nds.sort();
            nds.dedup();
            nds
        },
    }
}

fn capture_file(ctx: &Ctx, dir: &str, netdev: &str, ext: &str) -> PathBuf {
    ctx.sysfs
        .join("capture")
        .join(dir)
        .join(format!("{netdev}.{ext}"))
}

fn read_dcb(ctx: &Ctx, netdev: &str) -> Probe<DcbConfig> {
    if !ctx.captured {
        return dcb::read(netdev);
    }
    dcb::read_capture(&capture_file(ctx, "dcb", netdev, "nl")).unwrap_or_else(|| {
        Probe::NotExposed(format!(
            "a captured tree: DCB is read over rtnetlink on the live host, and this capture \
             has no capture/dcb/{netdev}.nl"
        ))
    })
}

/// A file's text; None when it is not there. Err: the path and why it could not be read.
fn read_optional(path: &Path) -> Result<Option<String>, String> {
    match crate::gather::sysfs::read_text(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {}", path.display(), io_error_text(&e))),
    }
}

fn io_error_text(e: &io::Error) -> String {
    e.raw_os_error().map_or_else(|| e.to_string(), errno_text)
}

/// rdma_cm's defaults for the port: configfs `rdma_cm/DEV/ports/N/` (cma_configfs.c), a
/// group that exists only once someone ran `mkdir rdma_cm/DEV`. Removing the group keeps
/// the value it set, so on a live host a missing group is created for the read and removed
/// again when `live` is `Some(true)` (as root; otherwise the value is unknown). No rdma_cm
/// directory (the module not loaded, or configfs not mounted) and a captured tree without
/// the group: the kernel's default, TOS 0.
fn read_cm_default(sysfs: &Path, device: &str, port: u32, live: Option<bool>) -> Probe<CmDefault> {
    let cm_root = sysfs.join("kernel/config/rdma_cm");
    let group = cm_root.join(device);
    if live.is_some() && cm_root.is_dir() && !group.exists() {
        if live == Some(false) {
            return Probe::NotExposed(format!(
                "no configfs group {}: the value is 0 unless a group set it and was removed (removing keeps it); `rdmactl qos` reads it through a group made for the read",
                group.display()
            ));
        }
        return match std::fs::create_dir(&group) {
            Ok(()) => {
                let read = read_cm_group(sysfs, device, port);
                // Nothing else refers to a group made a moment ago: removing it restores
                // the state before the read (the value lives on in the kernel either way).
                let _ = std::fs::remove_dir(&group);
                match read {
                    Probe::Read(mut cm) => {
                        cm.source = CmDefaultSource::ConfigfsProbed(group.display().to_string());
                        Probe::Read(cm)
                    }
                    other => other,
                }
            }
            Err(e) => Probe::NotExposed(format!(
                "{} does not exist, and creating it to read the value failed ({}): it is 0 unless set earlier (removing the group keeps its value); run as root",
                group.display(),
                io_error_text(&e)
            )),
        };
    }
    read_cm_group(sysfs, device, port)
}

fn read_cm_group(sysfs: &Path, device: &str, port: u32) -> Probe<CmDefault> {
    let dir = sysfs
        .join("kernel/config/rdma_cm")
        .join(device)
        .join("ports")
        .join(port.to_string());
    let tos_path = dir.join("default_roce_tos");
    let read = || -> Result<Option<CmDefault>, String> {
        // default_roce_tos_show prints "%u\n" of a u8.
        let Some(tos) = read_optional(&tos_path)? else {
            return Ok(None);
        };
        let tos = tos.trim().parse::<u8>().map_err(|_| {
            format!(
                "{}: {:?} is not a TOS value (0-255)",
                tos_path.display(),
                tos.trim()
            )
        })?;
        // default_roce_mode_show prints ib_cache_gid_type_str: "IB/RoCE v1" or "RoCE v2".
        let mode = read_optional(&dir.join("default_roce_mode"))?
            .map(|m| m.trim().to_string())
            .filter(|m| !m.is_empty());
        Ok(Some(CmDefault {
            tos,
            mode,
            source: CmDefaultSource::Configfs(dir.display().to_string()),
        }))
    };
    match read() {
        Ok(Some(cm)) => Probe::Read(cm),
        Ok(None) => Probe::Read(CmDefault {
            tos: 0,
            mode: None,
            source: CmDefaultSource::KernelDefault,
        }),
        Err(why) => Probe::Failed(why),
    }
}

/// MLNX_OFED's files under `class/net/ND/` (en_sysfs.c, en_ecn.c); each missing, unreadable
/// or malformed one stays None, as upstream drivers have none of them.
fn read_vendor(net_dir: &Path) -> VendorQos {
    let text = |rel: &str| read_optional(&net_dir.join(rel)).ok().flatten();
    // mlx5e_show_ecn_enable and the cnp files print "%d\n".
    let number = |rel: &str| text(rel).and_then(|t| t.trim().parse::<u8>().ok());
    let flag = |rel: &str| match number(rel) {
        Some(0) => Some(false),
        Some(1) => Some(true),
        _ => None,
    };
    // Upstream drivers have no ecn/ directory: one look instead of eighteen failed opens
    // on every doctor run and scrape.
    if !net_dir.join("ecn").is_dir() {
        return VendorQos {
            trust: text("qos/trust").and_then(|t| parse_trust(&t)),
            ..VendorQos::default()
        };
    }
    VendorQos {
        trust: text("qos/trust").and_then(|t| parse_trust(&t)),
        ecn_np: std::array::from_fn(|p| flag(&format!("ecn/roce_np/enable/{p}"))),
        ecn_rp: std::array::from_fn(|p| flag(&format!("ecn/roce_rp/enable/{p}"))),
        cnp_dscp: number("ecn/roce_np/cnp_dscp"),
        cnp_802p_prio: number("ecn/roce_np/cnp_802p_prio"),
    }
}

/// The trust mode word of MLNX_OFED's `qos/trust`: "pcp" or "dscp", alone or inside a
/// sentence ("Priority trust state: dscp"); another single word is kept as written, so an
/// unknown mode is shown rather than dropped.
pub fn parse_trust(text: &str) -> Option<String> {
    let words: Vec<String> = text
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_lowercase)
        .collect();
    match words.iter().find(|w| *w == "pcp" || *w == "dscp") {
        Some(w) => Some(w.clone()),
        None if words.len() == 1 => words.into_iter().next(),
        None => None,
    }
}

fn read_ethtool(ctx: &Ctx, netdev: &str) -> Probe<EthtoolFacts> {
    if ctx.captured {
        return read_ethtool_capture(ctx, netdev);
    }
    read_ethtool_live(netdev)
}

fn read_ethtool_live(netdev: &str) -> Probe<EthtoolFacts> {
    let stats = match sys::ethtool_stats(netdev) {
        Ok(stats) => stats,
        Err(libc::EOPNOTSUPP) => {
            return Probe::NotExposed(format!(
                "{netdev}'s driver has no ethtool statistics (ETHTOOL_GSSET_INFO)"
            ))
        }
        Err(libc::ENODEV) => {
            return Probe::NotExposed(format!(
                "{netdev} is not in this network namespace (SIOCETHTOOL: ENODEV)"
            ))
        }
        Err(e) => {
            return Probe::Failed(format!(
                "SIOCETHTOOL ETHTOOL_GSTATS on {netdev}: {}",
                errno_text(e)
            ))
        }
    };
    let pause = match sys::ethtool_pause(netdev) {
        Ok(p) => Probe::Read(p),
        Err(libc::EOPNOTSUPP) => Probe::NotExposed(format!(
            "{netdev}'s driver has no pause settings (ETHTOOL_GPAUSEPARAM: EOPNOTSUPP)"
        )),
        Err(e) => Probe::Failed(format!(
            "SIOCETHTOOL ETHTOOL_GPAUSEPARAM on {netdev}: {}",
            errno_text(e)
        )),
    };
    Probe::Read(EthtoolFacts { stats, pause })
}

fn read_ethtool_capture(ctx: &Ctx, netdev: &str) -> Probe<EthtoolFacts> {
    let missing = |file: String| {
        format!(
            "a captured tree: ethtool is asked over SIOCETHTOOL on the live host, and this \
             capture has no {file}"
        )
    };
    let stats_path = capture_file(ctx, "ethtool", netdev, "stats");
    let stats = match read_optional(&stats_path) {
        Ok(Some(text)) => match parse_ethtool_stats(&text) {
            Ok(stats) => stats,
            Err(why) => return Probe::Failed(format!("{}: {why}", stats_path.display())),
        },
        Ok(None) => return Probe::NotExposed(missing(format!("capture/ethtool/{netdev}.stats"))),
        Err(why) => return Probe::Failed(why),
    };
    let pause_path = capture_file(ctx, "ethtool", netdev, "pause");
    let pause = match read_optional(&pause_path) {
        Ok(Some(text)) => match parse_ethtool_pause(&text) {
            Some(p) => Probe::Read(p),
            None => Probe::Failed(format!(
                "{}: not `ethtool -a` output (Autonegotiate, RX and TX lines)",
                pause_path.display()
            )),
        },
        Ok(None) => Probe::NotExposed(missing(format!("capture/ethtool/{netdev}.pause"))),
        Err(why) => Probe::Failed(why),
    };
    Probe::Read(EthtoolFacts { stats, pause })
}

/// `ethtool -S` text: a "NIC statistics:" line, then one "name: value" line per counter
/// (indented). The name is everything before the last colon, so a name holding a colon
/// survives. Err: which line is not that.
pub fn parse_ethtool_stats(text: &str) -> Result<Vec<(String, u64)>, String> {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    if lines.next().map(str::trim) != Some("NIC statistics:") {
        return Err("not `ethtool -S` output: no \"NIC statistics:\" line first".to_string());
    }
    lines
        .map(|line| {
            line.rsplit_once(':')
                .and_then(|(name, value)| {
                    let name = name.trim();
                    let value = value.trim().parse::<u64>().ok()?;
                    (!name.is_empty()).then(|| (name.to_string(), value))
                })
                .ok_or_else(|| format!("not a \"name: value\" statistics line: {:?}", line.trim()))
        })
        .collect()
}

/// `ethtool -a` text: "Autonegotiate:", "RX:" and "TX:" lines, each "on" or "off" (newer
/// ethtool adds "RX negotiated:" lines, ignored). None when one of the three is missing or
/// is neither.
pub fn parse_ethtool_pause(text: &str) -> Option<PauseParam> {
    let mut found: [Option<bool>; 3] = [None; 3];
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let slot = match key.trim() {
            "Autonegotiate" => 0,
            "RX" => 1,
            "TX" => 2,
            _ => continue,
        };
        found[slot] = match value.trim() {
            "on" => Some(true),
            "off" => Some(false),
            _ => return None,
        };
    }
    Some(PauseParam {
        autoneg: found[0]?,
        rx: found[1]?,
        tx: found[2]?,
    })
}

/// The port's congestion counters, through the one `counters/` and `hw_counters/` reader;
/// none when the port cannot be read (the inventory says why).
fn congestion_counters(counters: &PortCounters) -> Vec<(String, u64)> {
    counters
        .counters
        .iter()
        .filter(|c| CONGESTION_COUNTERS.contains(&c.name.as_str()))
        .map(|c| (c.name.clone(), c.value))
        .collect()
}

/// A live RoCE port for a run's counter watch: only its netdev's DCB (the per-priority PFC
/// counts) and ethtool statistics, the two reads that cost little. The watch reads the
/// port's own counters itself; configfs and the vendor files are not read. None for a port
/// that is not RoCE or has no netdev.
pub fn run_port(sysfs: &Path, device: &str, port: u32) -> Option<QosPort> {
    let p = SysfsRoot::new(sysfs)
        .netdev_only()
        .link_layer_only()
        .port(device, port)
        .ok()?;
    if p.link_layer != Some(LinkLayer::Ethernet) {
        return None;
    }
    let netdev = p.netdev?.name;
    Some(QosPort {
        device: device.to_string(),
        port,
        netdev_mtu: None,
        active_mtu: None,
        dcb: dcb::read(&netdev),
        cm_default: Probe::NotExposed("not read for a run".to_string()),
        vendor: VendorQos::default(),
        ethtool: read_ethtool_live(&netdev),
        hw_counters: Vec::new(),
        // A run's port: its GIDs are not read here, so tagging stays unknown.
        gid_netdevs: Vec::new(),
        netdev: Some(netdev),
    })
}

/// The job's QoS variables that are set, as `lookup` (the environment) gives them.
pub fn job_env(lookup: &dyn Fn(&str) -> Option<String>) -> JobQosEnv {
    let vars = ["NCCL_IB_TC", "NCCL_IB_SL", "UCX_IB_TRAFFIC_CLASS"]
        .into_iter()
        .filter_map(|name| Some((name.to_string(), lookup(name)?)))
        .collect();
    JobQosEnv { vars }
}

/// `qos`'s facts: the ports, `--tclass` and the job's variables.
pub fn gather(
    ctx: &Ctx,
    devices: &[Device],
    tclass_flag: Option<u8>,
    make_cm_group: bool,
    known: &[&PortCounters],
) -> QosFacts {
    QosFacts {
        ports: ports(ctx, devices, make_cm_group, known),
        tclass_flag,
        env: job_env(&|name| std::env::var(name).ok()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one RoCE port of a qos fixture tree, as `qos` reads it.
    fn fixture_port(tree: &str) -> QosPort {
        let ctx = Ctx::fixture(tree);
        let devices = SysfsRoot::new(&ctx.sysfs).devices().unwrap();
        let mut ports = ports(&ctx, &devices, false, &[]);
        assert_eq!(ports.len(), 1, "{tree}");
        ports.remove(0)
    }

    fn counter(p: &QosPort, name: &str) -> Option<u64> {
        p.hw_counters
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| *v)
    }

    fn ethtool(p: &QosPort) -> &EthtoolFacts {
        p.ethtool.read().expect("ethtool read")
    }

    const ON_3: [Option<bool>; 8] = [
        Some(false),
        Some(false),
        Some(false),
        Some(true),
        Some(false),
        Some(false),
        Some(false),
        Some(false),
    ];

    #[test]
    fn a_good_chain_reads_whole() {
        let p = fixture_port("qos-good");
        assert_eq!((p.device.as_str(), p.port), ("mlx5_0", 1));
        assert_eq!(p.netdev.as_deref(), Some("ens1f0np0"));
        assert_eq!(p.netdev_mtu, Some(9000));
        // Verbs are not asked on a captured tree.
        assert_eq!(p.active_mtu, None);
        assert_eq!(
            p.vendor,
            VendorQos {
                trust: Some("dscp".into()),
                ecn_np: ON_3,
                ecn_rp: ON_3,
                cnp_dscp: Some(48),
                cnp_802p_prio: Some(6),
            }
        );
        let cm = p.cm_default.read().unwrap();
        assert_eq!((cm.tos, cm.mode.as_deref()), (106, Some("RoCE v2")));
        assert!(
            matches!(&cm.source, CmDefaultSource::Configfs(dir) if dir.ends_with("kernel/config/rdma_cm/mlx5_0/ports/1")),
            "{cm:?}"
        );
        let e = ethtool(&p);
        assert_eq!(e.stats.len(), 115);
        assert_eq!(e.stats[0], ("rx_packets".to_string(), 541889824));
        assert_eq!(e.stat("rx_prio3_packets"), Some(541880112));
        assert_eq!(e.stat("rx_prio0_pause"), Some(0));
        assert_eq!(e.pause, Probe::Read(PauseParam::default()));
        assert_eq!(counter(&p, "np_ecn_marked_roce_packets"), Some(0));
        assert_eq!(counter(&p, "port_xmit_wait"), Some(0));
        // Not a congestion counter: left out.
        assert_eq!(counter(&p, "rx_read_requests"), None);
        // The DCB reply is added to the trees by make-dcb.py; until then, said.
        if p.dcb.read().is_none() {
            assert!(
                p.dcb
                    .why_not()
                    .unwrap()
                    .contains("capture/dcb/ens1f0np0.nl"),
                "{:?}",
                p.dcb
            );
        }
    }

    #[test]
    fn each_story_tree_reads_its_story() {
        let p = fixture_port("qos-pfc-wrong-priority");
        let e = ethtool(&p);
        assert_eq!(e.stat("rx_prio0_pause"), Some(183442));
        assert_eq!(e.stat("rx_prio4_pause"), Some(52110));
        assert_eq!(e.stat("rx_prio3_pause"), Some(0));
        assert_eq!(e.pause, Probe::Read(PauseParam::default()));
        assert_eq!(p.vendor.cnp_dscp, Some(48));

        let p = fixture_port("qos-dscp-unmapped");
        assert_eq!(p.cm_default.read().unwrap().tos, 106);
        assert_eq!(p.vendor.trust.as_deref(), Some("dscp"));
        assert!(ethtool(&p)
            .stats
            .iter()
            .all(|(n, v)| !n.contains("pause") || *v == 0));

        let p = fixture_port("qos-ecn-off");
        assert_eq!(p.vendor.ecn_np[3], Some(false));
        assert_eq!(p.vendor.ecn_rp[3], Some(false));
        assert_eq!(p.vendor.ecn_np[2], Some(true));
        assert_eq!(counter(&p, "np_ecn_marked_roce_packets"), Some(88213407));
        assert_eq!(counter(&p, "np_cnp_sent"), Some(0));

        let p = fixture_port("qos-pause-storm");
        let e = ethtool(&p);
        assert_eq!(e.stat("tx_pause_storm_warning_events"), Some(12));
        assert_eq!(e.stat("tx_pause_storm_error_events"), Some(3));
        assert_eq!(e.stat("tx_prio3_pause"), Some(4123456789));
        assert_eq!(e.stat("tx_prio3_pause_duration"), Some(987654321));
        assert_eq!(
            e.pause,
            Probe::Read(PauseParam {
                autoneg: false,
                rx: true,
                tx: true
            })
        );

        let p = fixture_port("qos-rnr-not-congestion");
        assert_eq!(counter(&p, "out_of_buffer"), Some(1543));
        assert_eq!(counter(&p, "rnr_nak_retry_err"), Some(1543));
        assert_eq!(counter(&p, "np_ecn_marked_roce_packets"), Some(0));
        assert_eq!(counter(&p, "np_cnp_sent"), Some(0));
    }

    /// mlx5-roce-vlan has no capture/ and no MLNX_OFED files: each link says why it was
    /// not read, and rdma_cm's default is the kernel's.
    #[test]
    fn a_tree_without_captures_says_what_is_missing() {
        let p = fixture_port("mlx5-roce-vlan");
        assert_eq!(p.vendor, VendorQos::default());
        assert!(!p.vendor.any());
        assert_eq!(
            p.cm_default,
            Probe::Read(CmDefault {
                tos: 0,
                mode: None,
                source: CmDefaultSource::KernelDefault
            })
        );
        let why = p.ethtool.why_not().unwrap();
        assert!(why.contains("capture/ethtool/ens1f0np0.stats"), "{why}");
        assert!(matches!(p.ethtool, Probe::NotExposed(_)));
        assert!(matches!(p.dcb, Probe::NotExposed(_)));
        assert_eq!(counter(&p, "np_cnp_sent"), Some(5120));
        // rxe's names, from its own tree.
        let ctx = Ctx::fixture("rxe-counters");
        let devices = SysfsRoot::new(&ctx.sysfs).devices().unwrap();
        let rxe = ports(&ctx, &devices, false, &[]);
        let names: Vec<&str> = rxe[0].hw_counters.iter().map(|(n, _)| n.as_str()).collect();
        for want in [
            "rcvd_rnr_err",
            "send_rnr_err",
            "rcvd_seq_err",
            "ack_deferred",
        ] {
            assert!(names.contains(&want), "{want} not in {names:?}");
        }
    }

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn configfs_absent_empty_malformed_and_unreadable() {
        let t = tempfile::tempdir().unwrap();
        let kernel_default = Probe::Read(CmDefault {
            tos: 0,
            mode: None,
            source: CmDefaultSource::KernelDefault,
        });
        // No configfs mounted: kernel/config is an empty directory.
        std::fs::create_dir_all(t.path().join("kernel/config")).unwrap();
        assert_eq!(read_cm_default(t.path(), "mlx5_0", 1, None), kernel_default);
        // rdma_cm's group made for another device only.
        let dir = "kernel/config/rdma_cm/mlx5_1/ports/1";
        write(t.path(), &format!("{dir}/default_roce_tos"), "96\n");
        assert_eq!(read_cm_default(t.path(), "mlx5_0", 1, None), kernel_default);
        let cm = read_cm_default(t.path(), "mlx5_1", 1, None);
        assert_eq!(cm.read().map(|c| (c.tos, c.mode.clone())), Some((96, None)));
        write(t.path(), &format!("{dir}/default_roce_tos"), "300\n");
        let why = read_cm_default(t.path(), "mlx5_1", 1, None);
        assert!(
            matches!(&why, Probe::Failed(w) if w.contains("\"300\"")),
            "{why:?}"
        );
        // A directory where the file belongs: EISDIR, with the path.
        std::fs::remove_file(t.path().join(dir).join("default_roce_tos")).unwrap();
        std::fs::create_dir(t.path().join(dir).join("default_roce_tos")).unwrap();
        let why = read_cm_default(t.path(), "mlx5_1", 1, None);
        assert!(
            matches!(&why, Probe::Failed(w) if w.contains("default_roce_tos: EISDIR")),
            "{why:?}"
        );
    }

    #[test]
    fn vendor_files_malformed_stay_unknown() {
        let t = tempfile::tempdir().unwrap();
        write(t.path(), "qos/trust", "Priority trust state: DSCP\n");
        write(t.path(), "ecn/roce_np/enable/3", "1\n");
        write(t.path(), "ecn/roce_np/enable/4", "2\n");
        write(t.path(), "ecn/roce_rp/enable/3", "yes\n");
        write(t.path(), "ecn/roce_np/cnp_dscp", "480\n");
        write(t.path(), "ecn/roce_np/cnp_802p_prio", "6");
        let v = read_vendor(t.path());
        assert_eq!(v.trust.as_deref(), Some("dscp"));
        assert_eq!(
            (v.ecn_np[3], v.ecn_np[4], v.ecn_np[0]),
            (Some(true), None, None)
        );
        assert_eq!(v.ecn_rp[3], None);
        assert_eq!((v.cnp_dscp, v.cnp_802p_prio), (None, Some(6)));
    }

    #[test]
    fn trust_words() {
        assert_eq!(parse_trust("pcp\n").as_deref(), Some("pcp"));
        assert_eq!(parse_trust("dscp").as_deref(), Some("dscp"));
        assert_eq!(
            parse_trust("Priority trust state: pcp").as_deref(),
            Some("pcp")
        );
        assert_eq!(parse_trust("vlan\n").as_deref(), Some("vlan"));
        assert_eq!(parse_trust(""), None);
        assert_eq!(parse_trust("no idea what\n"), None);
    }

    #[test]
    fn ethtool_stats_text() {
        // veth's names: a name with a colon would split at the last one.
        let text = "NIC statistics:\n     peer_ifindex: 5\n     rx_queue_0_xdp_packets: 0\n     \
                    odd: name: 7\n\n";
        assert_eq!(
            parse_ethtool_stats(text).unwrap(),
            [
                ("peer_ifindex".to_string(), 5),
                ("rx_queue_0_xdp_packets".to_string(), 0),
                ("odd: name".to_string(), 7)
            ]
        );
        assert_eq!(parse_ethtool_stats("NIC statistics:\n").unwrap(), []);
        for bad in [
            "",
            "no stats available\n",
            "NIC statistics:\n     rx: 12a\n",
            "NIC statistics:\n     rx: -1\n",
            "NIC statistics:\n     rx 12\n",
            "NIC statistics:\n     : 12\n",
            "NIC statistics:\n     rx: 99999999999999999999999\n",
        ] {
            assert!(parse_ethtool_stats(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn ethtool_pause_text() {
        let text = "Pause parameters for eth0:\nAutonegotiate:\ton\nRX:\t\toff\nTX:\t\ton\n\
                    RX negotiated: on\nTX negotiated: on\n";
        assert_eq!(
            parse_ethtool_pause(text),
            Some(PauseParam {
                autoneg: true,
                rx: false,
                tx: true
            })
        );
        for bad in [
            "",
            "Pause parameters for eth0:\nAutonegotiate:\ton\nRX:\t\toff\n",
            "Autonegotiate:\ton\nRX:\t\tmaybe\nTX:\t\toff\n",
            "netlink error: Operation not supported\n",
        ] {
            assert_eq!(parse_ethtool_pause(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_malformed_capture_fails_with_its_path() {
        let t = tempfile::tempdir().unwrap();
        write(
            t.path(),
            "capture/ethtool/eth9.stats",
            "NIC statistics:\n  x: y\n",
        );
        let mut ctx = Ctx::fixture("qos-good");
        ctx.sysfs = t.path().to_path_buf();
        let e = read_ethtool(&ctx, "eth9");
        assert!(
            matches!(&e, Probe::Failed(w) if w.contains("eth9.stats") && w.contains("\"x: y\"")),
            "{e:?}"
        );
        write(
            t.path(),
            "capture/ethtool/eth9.stats",
            "NIC statistics:\n  x: 1\n",
        );
        let e = read_ethtool(&ctx, "eth9");
        let facts = e.read().unwrap();
        assert_eq!(facts.stats, [("x".to_string(), 1)]);
        assert!(facts.pause.why_not().unwrap().contains("eth9.pause"));
        write(t.path(), "capture/ethtool/eth9.pause", "RX: on\n");
        assert!(matches!(
            read_ethtool(&ctx, "eth9").read().unwrap().pause,
            Probe::Failed(_)
        ));
    }

    #[test]
    fn job_variables_as_the_environment_gives_them() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            job_env(&move |name| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| v.to_string())
            })
            .vars
        };
        assert_eq!(env(&[]), []);
        assert_eq!(
            env(&[
                ("UCX_IB_TRAFFIC_CLASS", "auto"),
                ("NCCL_IB_TC", "0x6a"),
                ("NCCL_IB_SL", "3"),
                ("OTHER", "1"),
            ]),
            [
                ("NCCL_IB_TC".to_string(), "0x6a".to_string()),
                ("NCCL_IB_SL".to_string(), "3".to_string()),
                ("UCX_IB_TRAFFIC_CLASS".to_string(), "auto".to_string()),
            ]
        );
    }
}
