//! `devices -v`'s gathering: each device's attributes from libibverbs, as ibv_devinfo -v
//! queries them, merged with what sysfs adds (netdevs, driver, P_Keys); a device verbs
//! cannot answer for is shown from sysfs alone, with why.

use crate::ctx::Ctx;
use crate::error::Result;
use crate::gather::sysfs::SysfsRoot;
use crate::gather::verbs::{self, DeviceAttrs, OpenDevice, PortAttrs, VerbsError, VerbsGid};
use crate::model::device::{Device, Port, PortState, ReadProblem};
use crate::model::devinfo::*;

/// One device as verbs answered: the attributes decoded as ibv_devinfo decodes them;
/// `merge_sysfs` adds what only sysfs knows. Over 100 lines as one struct literal, a line a
/// field in ibv_devinfo's order: the one place that says how each attribute is spelled,
/// which pieces would only scatter.
pub fn build(
    name: &str,
    transport: i32,
    board_id: Option<String>,
    num_comp_vectors: i32,
    d: &DeviceAttrs,
    ports: &[(u8, PortAttrs, Vec<VerbsGid>)],
) -> DevInfo {
    let odp = |v: u32| decode_flags(u64::from(v), ODP_TRANSPORT_CAPS);
    DevInfo {
        device: name.to_string(),
        // sysfs fills these (merge_sysfs): libibverbs does not report them.
        node_type: None,
        transport: transport_str(transport).into(),
        transport_raw: transport,
        fw_ver: Some(d.fw_ver.clone()).filter(|f| !f.is_empty()),
        node_guid: guid_str(d.node_guid),
        sys_image_guid: guid_str(d.sys_image_guid),
        vendor_id: format!("0x{:04x}", d.vendor_id),
        // ibv_devinfo prints these with %d.
        vendor_part_id: d.vendor_part_id as i32,
        hw_ver: format!("0x{:X}", d.hw_ver),
        board_id,
        node_desc: None,
        hca_type: None,
        phys_port_cnt: d.phys_port_cnt,
        max_mr_size: format!("0x{:x}", d.max_mr_size),
        page_size_cap: format!("0x{:x}", d.page_size_cap),
        max_qp: d.max_qp,
        max_qp_wr: d.max_qp_wr,
        device_cap_flags: format!("0x{:08x}", d.device_cap_flags),
        device_cap_flags_decoded: decode_flags(u64::from(d.device_cap_flags), DEVICE_CAP_FLAGS),
        max_sge: d.max_sge,
        max_sge_rd: d.max_sge_rd,
        max_cq: d.max_cq,
        max_cqe: d.max_cqe,
        max_mr: d.max_mr,
        max_pd: d.max_pd,
        max_qp_rd_atom: d.max_qp_rd_atom,
        max_ee_rd_atom: d.max_ee_rd_atom,
        max_res_rd_atom: d.max_res_rd_atom,
        max_qp_init_rd_atom: d.max_qp_init_rd_atom,
        max_ee_init_rd_atom: d.max_ee_init_rd_atom,
        atomic_cap: atomic_cap_str(d.atomic_cap).into(),
        atomic_cap_raw: d.atomic_cap,
        max_ee: d.max_ee,
        max_rdd: d.max_rdd,
        max_mw: d.max_mw,
        max_raw_ipv6_qp: d.max_raw_ipv6_qp,
        max_raw_ethy_qp: d.max_raw_ethy_qp,
        max_mcast_grp: d.max_mcast_grp,
        max_mcast_qp_attach: d.max_mcast_qp_attach,
        max_total_mcast_qp_attach: d.max_total_mcast_qp_attach,
        max_ah: d.max_ah,
        max_fmr: d.max_fmr,
        max_map_per_fmr: d.max_map_per_fmr,
        max_srq: d.max_srq,
        max_srq_wr: d.max_srq_wr,
        max_srq_sge: d.max_srq_sge,
        max_pkeys: d.max_pkeys,
        local_ca_ack_delay: d.local_ca_ack_delay,
        general_odp_caps: decode_flags(d.general_odp_caps, ODP_GENERAL_CAPS),
        rc_odp_caps: odp(d.rc_odp_caps),
        uc_odp_caps: odp(d.uc_odp_caps),
        ud_odp_caps: odp(d.ud_odp_caps),
        xrc_odp_caps: odp(d.xrc_odp_caps),
        completion_timestamp_mask: format!("0x{:016x}", d.completion_timestamp_mask),
        hca_core_clock: d.hca_core_clock,
        raw_packet_caps: decode_flags(u64::from(d.raw_packet_caps), RAW_PACKET_CAPS)
            .into_iter()
            .filter(|n| !n.starts_with("Unknown"))
            .collect(),
        device_cap_flags_ex: format!("0x{:X}", d.device_cap_flags_ex),
        device_cap_flags_ex_decoded: decode_flags(
            d.device_cap_flags_ex & 0xffff_ffff_0000_0000,
            DEVICE_CAP_FLAGS_EX_HIGH,
        ),
        tso_caps: TsoCaps {
            max_tso: d.max_tso as i32,
            supported_qp: decode_flags(u64::from(d.tso_supported_qpts), SUPPORTED_QPTS),
        },
        rss_caps: RssCaps {
            max_rwq_indirection_tables: d.max_rwq_indirection_tables,
            max_rwq_indirection_table_size: d.max_rwq_indirection_table_size,
            rx_hash_function: format!("0x{:x}", d.rx_hash_function),
            rx_hash_fields_mask: format!("0x{:X}", d.rx_hash_fields_mask),
            supported_qp: decode_flags(u64::from(d.rss_supported_qpts), SUPPORTED_QPTS),
        },
        max_wq_type_rq: d.max_wq_type_rq,
        packet_pacing_caps: PacketPacingCaps {
            qp_rate_limit_min: d.qp_rate_limit_min,
            qp_rate_limit_max: d.qp_rate_limit_max,
            supported_qp: decode_flags(u64::from(d.packet_pacing_supported_qpts), SUPPORTED_QPTS),
        },
        tm_caps: TmCaps {
            max_rndv_hdr_size: d.tm_max_rndv_hdr_size,
            max_num_tags: d.tm_max_num_tags,
            max_ops: d.tm_max_ops,
            max_sge: d.tm_max_sge,
            flags: decode_flags(u64::from(d.tm_flags), TM_CAP_FLAGS)
                .into_iter()
                .filter(|n| !n.starts_with("Unknown"))
                .collect(),
        },
        cq_moderation_caps: CqModerationCaps {
            max_cq_count: d.max_cq_count,
            max_cq_period: d.max_cq_period,
        },
        max_dm_size: d.max_dm_size,
        num_comp_vectors,
        driver: None,
        uverbs: None,
        verbs: DevinfoVerbsStatus::available(),
        read_problems: Vec::new(),
        ports: ports
            .iter()
            .map(|(n, p, gids)| build_port(*n, p, gids))
            .collect(),
    }
}

fn build_port(port: u8, p: &PortAttrs, gids: &[VerbsGid]) -> DevinfoPort {
    DevinfoPort {
        port,
        state: port_state_str(p.state).into(),
        state_raw: p.state,
        max_mtu: mtu_str(p.max_mtu).into(),
        max_mtu_raw: p.max_mtu,
        active_mtu: mtu_str(p.active_mtu).into(),
        active_mtu_raw: p.active_mtu,
        sm_lid: p.sm_lid,
        port_lid: p.lid,
        port_lmc: format!("0x{:02x}", p.lmc),
        link_layer: link_layer_str(p.link_layer).into(),
        max_msg_sz: format!("0x{:x}", p.max_msg_sz),
        port_cap_flags: format!("0x{:08x}", p.port_cap_flags),
        port_cap_flags_decoded: decode_flags(u64::from(p.port_cap_flags), PORT_CAP_FLAGS),
        port_cap_flags2: format!("0x{:04x}", p.port_cap_flags2),
        port_cap_flags2_decoded: decode_flags(u64::from(p.port_cap_flags2), PORT_CAP_FLAGS2),
        max_vl_num: vl_str(p.max_vl_num).into(),
        max_vl_num_raw: p.max_vl_num,
        bad_pkey_cntr: format!("0x{:x}", p.bad_pkey_cntr),
        qkey_viol_cntr: format!("0x{:x}", p.qkey_viol_cntr),
        sm_sl: p.sm_sl,
        pkey_tbl_len: p.pkey_tbl_len,
        gid_tbl_len: p.gid_tbl_len,
        subnet_timeout: p.subnet_timeout,
        init_type_reply: p.init_type_reply,
        active_width: format!("{}X", width_str(p.active_width)),
        active_width_raw: p.active_width,
        active_speed: speed_str(p.active_speed).into(),
        active_speed_raw: p.active_speed,
        phys_state: phys_state_str(p.phys_state).into(),
        phys_state_raw: p.phys_state,
        sysfs: PortSysfs::default(),
        gids: gids
            .iter()
            .map(|g| GidInfo {
                index: g.index,
                gid: g.gid,
                gid_type: g.gid_type.clone(),
                netdev: None,
            })
            .collect(),
    }
}

fn gid_infos(port: &Port) -> Vec<GidInfo> {
    port.gids
        .iter()
        .map(|g| GidInfo {
            index: g.index,
            gid: g.gid,
            gid_type: g.gid_type.clone(),
            netdev: g.netdev.clone(),
        })
        .collect()
}

/// A device verbs cannot answer for, from its sysfs read alone; `reason` says why.
pub fn from_sysfs(d: &Device, reason: String) -> SysfsDevInfo {
    let transport_raw = d.node_type.as_ref().and_then(transport_of);
    SysfsDevInfo {
        device: d.name.clone(),
        node_type: d.node_type.clone(),
        transport: transport_raw.map(|t| transport_str(t).to_string()),
        transport_raw,
        fw_ver: d.fw_ver.clone(),
        node_guid: d.node_guid.map(|g| g.to_string()),
        sys_image_guid: d.sys_image_guid.map(|g| g.to_string()),
        hw_ver: d.hw_rev.as_deref().map(hw_ver_text),
        board_id: d.board_id.clone(),
        node_desc: d.node_desc.clone(),
        hca_type: d.hca_type.clone(),
        phys_port_cnt: d.ports.len(),
        driver: d.driver.clone(),
        uverbs: d.uverbs.clone(),
        verbs: DevinfoVerbsStatus::unavailable(reason),
        read_problems: all_read_problems(d),
        ports: d
            .ports
            .iter()
            .map(|p| {
                let state_raw = p.state.as_ref().and_then(PortState::number);
                let phys_raw = p.phys_state.as_ref().and_then(phys_state_raw);
                let width = p.rate.as_ref().and_then(|r| r.width.as_deref());
                let width_raw = width.and_then(width_raw);
                let speed_raw = p
                    .rate
                    .as_ref()
                    .and_then(|r| r.speed.as_deref())
                    .and_then(speed_raw);
                SysfsPortInfo {
                    port: p.number,
                    state: state_raw.map(|s| port_state_str(s).to_string()),
                    state_raw,
                    sm_lid: p.sm_lid,
                    port_lid: p.lid,
                    port_lmc: p.lmc.map(|l| format!("0x{l:02x}")),
                    link_layer: p.link_layer.as_ref().map(|l| l.to_string()),
                    port_cap_flags: p.cap_mask.map(|c| format!("0x{c:08x}")),
                    port_cap_flags_decoded: p
                        .cap_mask
                        .map(|c| decode_flags(u64::from(c), PORT_CAP_FLAGS)),
                    sm_sl: p.sm_sl,
                    active_width: width_raw.map(|w| format!("{}X", width_str(w))),
                    active_width_raw: width_raw,
                    active_speed: speed_raw.map(|s| speed_str(s).to_string()),
                    active_speed_raw: speed_raw,
                    phys_state: phys_raw.map(|s| phys_state_str(s).to_string()),
                    phys_state_raw: phys_raw,
                    sysfs: PortSysfs::of(p),
                    gids: gid_infos(p),
                }
            })
            .collect(),
    }
}

fn all_read_problems(d: &Device) -> Vec<ReadProblem> {
    d.read_problems
        .iter()
        .chain(d.ports.iter().flat_map(|p| p.read_problems.iter()))
        .cloned()
        .collect()
}

/// Verbs and sysfs describe the same device: add the sysfs-only parts.
pub fn merge_sysfs(info: &mut DevInfo, d: &Device, root: &SysfsRoot) {
    info.node_type = d.node_type.clone();
    info.node_desc = d.node_desc.clone();
    info.hca_type = d.hca_type.clone();
    info.driver = d.driver.clone();
    info.uverbs = d.uverbs.clone();
    info.read_problems = all_read_problems(d);
    for port in &mut info.ports {
        let Some(sp) = d.ports.iter().find(|p| p.number == u32::from(port.port)) else {
            continue;
        };
        port.sysfs = PortSysfs::of(sp);
        port.sysfs.pkeys = root.pkey_table(&d.name, sp.number).unwrap_or_default();
        if port.link_layer != "Ethernet" {
            continue;
        }
        // Only the slots verbs found populated: reading all 1024 sysfs slots again would
        // double the cost of -v.
        let mut gid_netdevs: Vec<String> = Vec::new();
        for g in &mut port.gids {
            g.netdev = root
                .gid(&d.name, sp.number, g.index)
                .ok()
                .and_then(|e| e.netdev);
            if let Some(nd) = &g.netdev {
                if !gid_netdevs.contains(nd) {
                    gid_netdevs.push(nd.clone());
                }
            }
        }
        port.sysfs.gid_netdevs = gid_netdevs;
    }
}

fn query_one(dev: &OpenDevice) -> Result<DevInfo, VerbsError> {
    let attrs = dev.query_device()?;
    let mut ports = Vec::with_capacity(usize::from(attrs.phys_port_cnt));
    for port in 1..=attrs.phys_port_cnt {
        let p = dev.query_port(port)?;
        let gids = dev.port_gids(port, &p)?;
        ports.push((port, p, gids));
    }
    Ok(build(
        dev.name(),
        dev.transport(),
        dev.board_id(),
        dev.num_comp_vectors(),
        &attrs,
        &ports,
    ))
}

/// What verbs says about each device it lists (a per-device failure as its reason), or
/// why verbs cannot be asked at all.
type VerbsAnswer = std::result::Result<Vec<(String, std::result::Result<DevInfo, String>)>, String>;

fn ask_verbs(ctx: &Ctx, device: Option<&str>) -> VerbsAnswer {
    if ctx.captured {
        return Err(crate::gather::inventory::captured_reason(ctx));
    }
    let opened = verbs::open_each(device).map_err(|e| e.to_string())?;
    Ok(opened
        .into_iter()
        .map(|(name, dev)| {
            let info = dev
                .and_then(|dev| query_one(&dev))
                .map_err(|e| e.to_string());
            (name, info)
        })
        .collect())
}

/// The sysfs devices (the list), each merged with verbs where verbs has it. A device
/// verbs lists but sysfs does not (a /sys that is not this host's) still shows.
pub fn gather(ctx: &Ctx, device: Option<&str>) -> Result<(Vec<Device>, Vec<DevView>)> {
    let root = SysfsRoot::new(&ctx.sysfs);
    // The port netdevs first; a GID table is read in full only for a device shown from
    // sysfs alone, where it is the GID list.
    let mut sysfs = root.clone().netdev_only().select(device, None)?;
    let mut verbs = ask_verbs(ctx, device);
    let listed: Vec<String> = match &verbs {
        Ok(list) => list.iter().map(|(n, _)| n.clone()).collect(),
        Err(_) => Vec::new(),
    };
    let mut views = Vec::with_capacity(sysfs.len());
    for d in &mut sysfs {
        let reason = match &mut verbs {
            Err(reason) => reason.clone(),
            Ok(list) => match list.iter().position(|(n, _)| *n == d.name) {
                None => crate::gather::inventory::not_listed(d, &listed),
                Some(i) => match list.remove(i).1 {
                    Ok(mut info) => {
                        merge_sysfs(&mut info, d, &root);
                        views.push(DevView::Verbs(Box::new(info)));
                        continue;
                    }
                    Err(reason) => reason,
                },
            },
        };
        if let Ok(full) = root.device(&d.name) {
            *d = full;
        }
        let mut view = from_sysfs(d, reason);
        for p in &mut view.ports {
            p.sysfs.pkeys = root.pkey_table(&d.name, p.port).unwrap_or_default();
        }
        views.push(DevView::Sysfs(Box::new(view)));
    }
    if let Ok(rest) = verbs {
        views.extend(
            rest.into_iter()
                .filter_map(|(_, info)| info.ok())
                .map(|info| DevView::Verbs(Box::new(info))),
        );
    }
    Ok((sysfs, views))
}

#[cfg(test)]
pub mod fixture {
    use super::*;
    use crate::model::device::GidType;
    use crate::model::gid::Gid;

    /// rxe0 as ibv_devinfo 44 printed it in the VM
    /// (shared/fixtures/sysfs/rxe-veth-basic/ibv_devinfo-v.txt).
    pub fn rxe_attrs() -> (DeviceAttrs, PortAttrs, Vec<VerbsGid>) {
        let d = DeviceAttrs {
            fw_ver: "0.0.0".into(),
            node_guid: 0xfcc2_10ff_fefe_2b7e,
            sys_image_guid: 0xfcc2_10ff_fefe_2b7e,
            max_mr_size: u64::MAX,
            page_size_cap: 0xffff_f000,
            vendor_id: 0xffffff,
            max_qp: 1_048_560,
            max_qp_wr: 1_048_576,
            device_cap_flags: 0x0122_3c76,
            max_sge: 32,
            max_sge_rd: 32,
            max_cq: 1_048_576,
            max_cqe: 32767,
            max_mr: 524_287,
            max_pd: 1_048_576,
            max_qp_rd_atom: 128,
            max_res_rd_atom: 258_048,
            max_qp_init_rd_atom: 128,
            atomic_cap: 1,
            max_mw: 524_287,
            max_mcast_grp: 8192,
            max_mcast_qp_attach: 56,
            max_total_mcast_qp_attach: 458_752,
            max_ah: 32767,
            max_srq: 917_503,
            max_srq_wr: 1_048_576,
            max_srq_sge: 27,
            max_pkeys: 64,
            local_ca_ack_delay: 15,
            phys_port_cnt: 1,
            device_cap_flags_ex: 0x122_3c76,
            ..DeviceAttrs::default()
        };
        let p = PortAttrs {
            state: 4,
            max_mtu: 5,
            active_mtu: 3,
            gid_tbl_len: 1024,
            port_cap_flags: 0x0001_0000,
            max_msg_sz: 0x80_0000,
            pkey_tbl_len: 1,
            max_vl_num: 1,
            active_width: 1,
            active_speed: 8,
            phys_state: 5,
            link_layer: 2,
            ..PortAttrs::default()
        };
        let gids = vec![
            VerbsGid {
                index: 0,
                gid: Gid::parse("fe80::fcc2:10ff:fefe:2b7e").unwrap(),
                gid_type: Some(GidType::RoceV2),
            },
            VerbsGid {
                index: 1,
                gid: Gid::parse("::ffff:192.168.77.1").unwrap(),
                gid_type: Some(GidType::RoceV2),
            },
        ];
        (d, p, gids)
    }

    /// rxe0's attributes from that capture, as `build` models them.
    pub fn rxe0() -> DevInfo {
        let (d, p, gids) = rxe_attrs();
        build("rxe0", 0, None, 2, &d, &[(1, p, gids)])
    }

    /// The devices of a captured sysfs tree under tests/fixtures/sysfs.
    pub fn sysfs_devices(tree: &str) -> Vec<Device> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/sysfs")
            .join(tree);
        SysfsRoot::new(root).devices().unwrap()
    }
}

#[cfg(test)]
mod tests {
    use super::fixture::{rxe0, sysfs_devices};
    use super::*;
    use crate::output;

    #[test]
    fn json_keys_are_ibv_devinfo_names() {
        let info = rxe0();
        let v: serde_json::Value = serde_json::from_str(&output::json(&info)).unwrap();
        assert_eq!(v["device"], "rxe0");
        assert_eq!(v["max_mr_size"], "0xffffffffffffffff");
        assert_eq!(v["device_cap_flags"], "0x01223c76");
        assert_eq!(v["device_cap_flags_decoded"][0], "BAD_PKEY_CNTR");
        assert_eq!(v["atomic_cap"], "ATOMIC_HCA");
        assert_eq!(v["atomic_cap_raw"], 1);
        assert_eq!(v["rc_odp_caps"], serde_json::json!([]));
        let port = &v["ports"][0];
        assert_eq!(port["state"], "PORT_ACTIVE");
        assert_eq!(port["state_raw"], 4);
        assert_eq!(port["port_lid"], 0);
        assert_eq!(port["active_width"], "1X");
        assert_eq!(
            port["port_cap_flags_decoded"],
            serde_json::json!(["CM_SUP"])
        );
        assert_eq!(port["gids"][1]["type"], "RoCE v2");
        assert_eq!(
            port["gids"][1]["gid"],
            "0000:0000:0000:0000:0000:ffff:c0a8:4d01"
        );
    }

    /// The VM's parity checker, run on the captured ibv_devinfo text against our JSON for
    /// the same attributes, so a change on either side is caught without a VM.
    #[test]
    #[ignore = "needs python3 (package python3); scripts/test runs it"]
    fn vm_parity_script_accepts_our_json_for_the_capture_and_rejects_a_change() {
        if std::process::Command::new("python3")
            .arg("-V")
            .output()
            .is_err()
        {
            panic!("python3 is not installed: run scripts/setup");
        }
        let mut info = rxe0();
        let dir = tempfile::tempdir().unwrap();
        let text = dir.path().join("devinfo.txt");
        std::fs::copy(
            concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/devinfo/rxe0-ibv_devinfo-v.txt"
            ),
            &text,
        )
        .unwrap();
        let json = dir.path().join("rdmactl.json");
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vm/devinfo_parity.py");
        let run = |info: &DevInfo| {
            std::fs::write(&json, output::json(&vec![info.clone()])).unwrap();
            std::process::Command::new("python3")
                .args([script, text.to_str().unwrap(), json.to_str().unwrap()])
                .output()
                .unwrap()
        };
        let out = run(&info);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        info.ports[0].active_mtu_raw = 4;
        info.max_cqe = 1;
        let out = run(&info);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(!out.status.success());
        assert!(stdout.contains("ports.1.active_mtu"), "{stdout}");
        assert!(stdout.contains("max_cqe"), "{stdout}");
    }

    /// The note's lists are exactly ibv_devinfo's fields that the sysfs view lacks.
    #[test]
    fn missing_fields_are_the_verbs_keys_sysfs_lacks() {
        let keys = |v: &serde_json::Value| -> std::collections::BTreeSet<String> {
            v.as_object()
                .unwrap()
                .keys()
                .filter(|k| !k.ends_with("_raw") && !k.ends_with("_decoded"))
                .cloned()
                .collect()
        };
        let verbs = serde_json::to_value(rxe0()).unwrap();
        let dev = sysfs_devices("rxe-vm-basic").remove(0);
        let sysfs = serde_json::to_value(from_sysfs(&dev, "test".into())).unwrap();
        let want: std::collections::BTreeSet<String> =
            keys(&verbs).difference(&keys(&sysfs)).cloned().collect();
        let listed: std::collections::BTreeSet<String> = MISSING_DEVICE_FIELDS
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(listed, want);
        let want: std::collections::BTreeSet<String> = keys(&verbs["ports"][0])
            .difference(&keys(&sysfs["ports"][0]))
            .cloned()
            .collect();
        let listed: std::collections::BTreeSet<String> =
            MISSING_PORT_FIELDS.iter().map(|s| s.to_string()).collect();
        assert_eq!(listed, want);
        assert_eq!(sysfs["verbs"]["available"], false);
        assert_eq!(sysfs["verbs"]["reason"], "test");
        assert_eq!(
            sysfs["verbs"]["missing_fields"].as_array().unwrap().len(),
            MISSING_DEVICE_FIELDS.len() + MISSING_PORT_FIELDS.len()
        );
    }
}
