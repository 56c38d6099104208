//! `rdmactl devices -v`: every attribute `ibv_devinfo -v` prints, decoded the same way.
//!
//! The JSON contract, so scripts written against ibv_devinfo carry over:
//! - keys are ibv_devinfo's field names (`port_lid`, not `lid`);
//! - a value ibv_devinfo prints in decimal is a JSON number; one it prints in hex is a
//!   string in the same hex spelling (`"0x01223c76"`), which also keeps 64-bit masks exact
//!   for JSON readers that use doubles;
//! - an enumerated value (`PORT_ACTIVE (4)`) is the name as a string under the field's name
//!   and the number in parentheses under `<field>_raw`;
//! - a flag word also gets `<field>_decoded`, the flag names one per element, including
//!   ibv_devinfo's `Unknown flags: 0x..` remainder; sections ibv_devinfo prints only as
//!   names (ODP caps, supported_qp) are plain lists.
//!
//! JSON carries every value even where ibv_devinfo hides one (it prints `max_srq_wr` only
//! when `max_srq` is non-zero); the human output hides them exactly as ibv_devinfo does,
//! so the two can be diffed line by line.

use std::fmt::Write as _;
use std::net::Ipv6Addr;

use serde::Serialize;

use crate::ctx::Ctx;
use crate::error::Result;
use crate::gather::sysfs::SysfsRoot;
use crate::gather::verbs::{self, DeviceAttrs, OpenDevice, PortAttrs, VerbsError, VerbsGid};
use crate::model::device::{
    Device, GidType, NetdevSource, NodeType, PhysState, PkeyEntry, Port, PortState, ReadProblem,
};
use crate::model::gid::Gid;
use crate::output;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DevInfo {
    /// The device name (ibv_devinfo's `hca_id`; `device` in every command's JSON).
    pub device: String,
    /// From sysfs, as `devices -j` has it: `node_type`, `node_desc`, `hca_type`.
    pub node_type: Option<NodeType>,
    pub transport: String,
    pub transport_raw: i32,
    /// None when the driver reports an empty one (ibv_devinfo then omits the line), as
    /// every other command says it.
    pub fw_ver: Option<String>,
    pub node_guid: String,
    pub sys_image_guid: String,
    pub vendor_id: String,
    pub vendor_part_id: i32,
    pub hw_ver: String,
    pub board_id: Option<String>,
    pub node_desc: Option<String>,
    pub hca_type: Option<String>,
    pub phys_port_cnt: u8,
    pub max_mr_size: String,
    pub page_size_cap: String,
    pub max_qp: i32,
    pub max_qp_wr: i32,
    pub device_cap_flags: String,
    pub device_cap_flags_decoded: Vec<String>,
    pub max_sge: i32,
    pub max_sge_rd: i32,
    pub max_cq: i32,
    pub max_cqe: i32,
    pub max_mr: i32,
    pub max_pd: i32,
    pub max_qp_rd_atom: i32,
    pub max_ee_rd_atom: i32,
    pub max_res_rd_atom: i32,
    pub max_qp_init_rd_atom: i32,
    pub max_ee_init_rd_atom: i32,
    pub atomic_cap: String,
    pub atomic_cap_raw: u32,
    pub max_ee: i32,
    pub max_rdd: i32,
    pub max_mw: i32,
    pub max_raw_ipv6_qp: i32,
    pub max_raw_ethy_qp: i32,
    pub max_mcast_grp: i32,
    pub max_mcast_qp_attach: i32,
    pub max_total_mcast_qp_attach: i32,
    pub max_ah: i32,
    pub max_fmr: i32,
    pub max_map_per_fmr: i32,
    pub max_srq: i32,
    pub max_srq_wr: i32,
    pub max_srq_sge: i32,
    pub max_pkeys: u16,
    pub local_ca_ack_delay: u8,
    pub general_odp_caps: Vec<String>,
    /// Empty means "NO SUPPORT".
    pub rc_odp_caps: Vec<String>,
    pub uc_odp_caps: Vec<String>,
    pub ud_odp_caps: Vec<String>,
    pub xrc_odp_caps: Vec<String>,
    /// All zeros means not supported.
    pub completion_timestamp_mask: String,
    /// kHz; 0 means not supported.
    pub hca_core_clock: u64,
    pub raw_packet_caps: Vec<String>,
    pub device_cap_flags_ex: String,
    pub device_cap_flags_ex_decoded: Vec<String>,
    pub tso_caps: TsoCaps,
    pub rss_caps: RssCaps,
    pub max_wq_type_rq: u32,
    pub packet_pacing_caps: PacketPacingCaps,
    pub tm_caps: TmCaps,
    pub cq_moderation_caps: CqModerationCaps,
    /// Bytes of device memory; 0 means none.
    pub max_dm_size: u64,
    pub num_comp_vectors: i32,
    /// From sysfs: the kernel driver of the parent device (`device/driver`).
    pub driver: Option<String>,
    /// From sysfs: the `/dev/infiniband/uverbsN` node.
    pub uverbs: Option<String>,
    pub verbs: VerbsStatus,
    /// sysfs files (device or port) that exist but could not be read.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub read_problems: Vec<ReadProblem>,
    pub ports: Vec<PortInfo>,
}

/// Whether the verbs fields are there, and if not, why and which.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VerbsStatus {
    pub available: bool,
    pub reason: Option<String>,
    pub missing_fields: Vec<String>,
}

impl VerbsStatus {
    fn available() -> VerbsStatus {
        VerbsStatus {
            available: true,
            reason: None,
            missing_fields: Vec::new(),
        }
    }

    fn unavailable(reason: String) -> VerbsStatus {
        VerbsStatus {
            available: false,
            reason: Some(reason),
            missing_fields: MISSING_DEVICE_FIELDS
                .iter()
                .chain(MISSING_PORT_FIELDS)
                .map(|f| f.to_string())
                .collect(),
        }
    }
}

/// What sysfs adds to a port that verbs does not report: the netdev side.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PortSysfs {
    /// The kernel's `rate` text, e.g. `100 Gb/sec (4X EDR)`.
    pub rate: Option<String>,
    pub netdev: Option<String>,
    pub netdev_source: Option<NetdevSource>,
    pub netdev_mtu: Option<u32>,
    pub netdev_operstate: Option<String>,
    /// Every netdev the populated GID table refers to.
    pub gid_netdevs: Vec<String>,
    /// The populated slots of the port's P_Key table (`ports/N/pkeys/`).
    pub pkeys: Vec<PkeyEntry>,
}

impl PortSysfs {
    fn of(p: &Port) -> PortSysfs {
        PortSysfs {
            rate: p.rate.as_ref().map(|r| r.text.clone()),
            netdev: p.netdev.as_ref().map(|n| n.name.clone()),
            netdev_source: p.netdev_source,
            netdev_mtu: p.netdev.as_ref().and_then(|n| n.mtu),
            netdev_operstate: p.netdev.as_ref().and_then(|n| n.operstate.clone()),
            gid_netdevs: p.gid_netdevs.clone(),
            pkeys: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TsoCaps {
    pub max_tso: i32,
    pub supported_qp: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RssCaps {
    pub max_rwq_indirection_tables: u32,
    pub max_rwq_indirection_table_size: u32,
    pub rx_hash_function: String,
    pub rx_hash_fields_mask: String,
    pub supported_qp: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PacketPacingCaps {
    /// kbps.
    pub qp_rate_limit_min: u32,
    pub qp_rate_limit_max: u32,
    pub supported_qp: Vec<String>,
}

/// Tag matching; `max_num_tags` 0 means not supported.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TmCaps {
    pub max_rndv_hdr_size: u32,
    pub max_num_tags: u32,
    pub max_ops: u32,
    pub max_sge: u32,
    pub flags: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CqModerationCaps {
    pub max_cq_count: u16,
    /// Microseconds.
    pub max_cq_period: u16,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PortInfo {
    pub port: u8,
    pub state: String,
    pub state_raw: u32,
    pub max_mtu: String,
    pub max_mtu_raw: u32,
    pub active_mtu: String,
    pub active_mtu_raw: u32,
    pub sm_lid: u16,
    pub port_lid: u16,
    pub port_lmc: String,
    pub link_layer: String,
    pub max_msg_sz: String,
    pub port_cap_flags: String,
    pub port_cap_flags_decoded: Vec<String>,
    pub port_cap_flags2: String,
    pub port_cap_flags2_decoded: Vec<String>,
    pub max_vl_num: String,
    pub max_vl_num_raw: u8,
    pub bad_pkey_cntr: String,
    pub qkey_viol_cntr: String,
    pub sm_sl: u8,
    pub pkey_tbl_len: u16,
    pub gid_tbl_len: i32,
    pub subnet_timeout: u8,
    pub init_type_reply: u8,
    pub active_width: String,
    pub active_width_raw: u8,
    pub active_speed: String,
    pub active_speed_raw: u8,
    /// ibv_devinfo prints it only for the InfiniBand transport.
    pub phys_state: String,
    pub phys_state_raw: u8,
    #[serde(flatten)]
    pub sysfs: PortSysfs,
    pub gids: Vec<GidInfo>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GidInfo {
    pub index: u32,
    pub gid: Gid,
    #[serde(rename = "type")]
    pub gid_type: Option<GidType>,
    /// From sysfs `gid_attrs/ndevs/N`; null on InfiniBand.
    pub netdev: Option<String>,
}

// ---- decoding, value for value as rdma-core 44's ibv_devinfo does it ----

fn transport_str(t: i32) -> &'static str {
    match t {
        0 => "InfiniBand",
        1 => "iWARP",
        2 => "usNIC",
        3 => "usNIC UDP",
        4 => "unspecified",
        _ => "invalid transport",
    }
}

fn port_state_str(s: u32) -> &'static str {
    match s {
        1 => "PORT_DOWN",
        2 => "PORT_INIT",
        3 => "PORT_ARMED",
        4 => "PORT_ACTIVE",
        _ => "invalid state",
    }
}

fn phys_state_str(s: u8) -> &'static str {
    match s {
        1 => "SLEEP",
        2 => "POLLING",
        3 => "DISABLED",
        // rdma-core's spelling, kept so output greps the same.
        4 => "PORT_CONFIGURATION TRAINNING",
        5 => "LINK_UP",
        6 => "LINK_ERROR_RECOVERY",
        7 => "PHY TEST",
        _ => "invalid physical state",
    }
}

fn atomic_cap_str(a: u32) -> &'static str {
    match a {
        0 => "ATOMIC_NONE",
        1 => "ATOMIC_HCA",
        2 => "ATOMIC_GLOB",
        _ => "invalid atomic capability",
    }
}

fn mtu_str(m: u32) -> &'static str {
    match m {
        1 => "256",
        2 => "512",
        3 => "1024",
        4 => "2048",
        5 => "4096",
        _ => "invalid MTU",
    }
}

/// The IB encoding is a bit per width, not the lane count.
fn width_str(w: u8) -> &'static str {
    match w {
        1 => "1",
        2 => "4",
        4 => "8",
        8 => "12",
        16 => "2",
        _ => "invalid width",
    }
}

/// Per-lane signalling rate; 4 (QDR's predecessor FDR10 code) and 8 (QDR) both read 10.
fn speed_str(s: u8) -> &'static str {
    match s {
        1 => "2.5 Gbps",
        2 => "5.0 Gbps",
        4 | 8 => "10.0 Gbps",
        16 => "14.0 Gbps",
        32 => "25.0 Gbps",
        64 => "50.0 Gbps",
        128 => "100.0 Gbps",
        _ => "invalid speed",
    }
}

fn vl_str(v: u8) -> &'static str {
    match v {
        1 => "1",
        2 => "2",
        3 => "4",
        4 => "8",
        5 => "15",
        _ => "invalid value",
    }
}

/// libibverbs 44 names an unspecified link layer as such (older ones said InfiniBand).
fn link_layer_str(l: u8) -> &'static str {
    match l {
        0 => "Unspecified",
        1 => "InfiniBand",
        2 => "Ethernet",
        _ => "Unknown",
    }
}

fn guid_str(guid: u64) -> String {
    format!(
        "{:04x}:{:04x}:{:04x}:{:04x}",
        (guid >> 48) & 0xffff,
        (guid >> 32) & 0xffff,
        (guid >> 16) & 0xffff,
        guid & 0xffff
    )
}

/// Names of the set bits in table order, then `Unknown flags: 0x..` for the rest.
fn decode_flags(value: u64, table: &[(u64, &str)]) -> Vec<String> {
    let mut names: Vec<String> = table
        .iter()
        .filter(|(bit, _)| value & bit != 0)
        .map(|(_, n)| n.to_string())
        .collect();
    let known = table.iter().fold(0u64, |acc, (bit, _)| acc | bit);
    if value & !known != 0 {
        names.push(format!("Unknown flags: 0x{:X}", value & !known));
    }
    names
}

const DEVICE_CAP_FLAGS: &[(u64, &str)] = &[
    (1, "RESIZE_MAX_WR"),
    (1 << 1, "BAD_PKEY_CNTR"),
    (1 << 2, "BAD_QKEY_CNTR"),
    (1 << 3, "RAW_MULTI"),
    (1 << 4, "AUTO_PATH_MIG"),
    (1 << 5, "CHANGE_PHY_PORT"),
    (1 << 6, "UD_AV_PORT_ENFORCE"),
    (1 << 7, "CURR_QP_STATE_MOD"),
    (1 << 8, "SHUTDOWN_PORT"),
    (1 << 9, "INIT_TYPE"),
    (1 << 10, "PORT_ACTIVE_EVENT"),
    (1 << 11, "SYS_IMAGE_GUID"),
    (1 << 12, "RC_RNR_NAK_GEN"),
    (1 << 13, "SRQ_RESIZE"),
    (1 << 14, "N_NOTIFY_CQ"),
    (1 << 17, "MEM_WINDOW"),
    (1 << 18, "UD_IP_CSUM"),
    (1 << 20, "XRC"),
    (1 << 21, "MEM_MGT_EXTENSIONS"),
    (1 << 23, "MEM_WINDOW_TYPE_2A"),
    (1 << 24, "MEM_WINDOW_TYPE_2B"),
    (1 << 25, "RC_IP_CSUM"),
    (1 << 26, "RAW_IP_CSUM"),
    (1 << 29, "MANAGED_FLOW_STEERING"),
];

/// Only the upper 32 bits are decoded: the lower half repeats device_cap_flags.
const DEVICE_CAP_FLAGS_EX_HIGH: &[(u64, &str)] = &[
    (1 << 34, "RAW_SCATTER_FCS"),
    (1 << 36, "PCI_WRITE_END_PADDING"),
];

const ODP_GENERAL_CAPS: &[(u64, &str)] = &[(1, "ODP_SUPPORT"), (1 << 1, "ODP_SUPPORT_IMPLICIT")];

const ODP_TRANSPORT_CAPS: &[(u64, &str)] = &[
    (1, "SUPPORT_SEND"),
    (1 << 1, "SUPPORT_RECV"),
    (1 << 2, "SUPPORT_WRITE"),
    (1 << 3, "SUPPORT_READ"),
    (1 << 4, "SUPPORT_ATOMIC"),
    (1 << 5, "SUPPORT_SRQ"),
];

/// Bits are `1 << enum ibv_qp_type`: IBV_QPT_UD is 4, IBV_QPT_RAW_PACKET is 8.
const SUPPORTED_QPTS: &[(u64, &str)] = &[(1 << 8, "SUPPORT_RAW_PACKET"), (1 << 4, "SUPPORT_UD")];

const RAW_PACKET_CAPS: &[(u64, &str)] = &[
    (1, "C-VLAN stripping offload"),
    (1 << 1, "Scatter FCS offload"),
    (1 << 2, "IP csum offload"),
    (1 << 3, "Delay drop"),
];

/// ibv_devinfo prints these as hex only; the names are the IB spec's PortInfo
/// CapabilityMask bits as verbs.h spells them.
const PORT_CAP_FLAGS: &[(u64, &str)] = &[
    (1 << 1, "SM"),
    (1 << 2, "NOTICE_SUP"),
    (1 << 3, "TRAP_SUP"),
    (1 << 4, "OPT_IPD_SUP"),
    (1 << 5, "AUTO_MIGR_SUP"),
    (1 << 6, "SL_MAP_SUP"),
    (1 << 7, "MKEY_NVRAM"),
    (1 << 8, "PKEY_NVRAM"),
    (1 << 9, "LED_INFO_SUP"),
    (1 << 11, "SYS_IMAGE_GUID_SUP"),
    (1 << 12, "PKEY_SW_EXT_PORT_TRAP_SUP"),
    (1 << 14, "EXTENDED_SPEEDS_SUP"),
    (1 << 15, "CAP_MASK2_SUP"),
    (1 << 16, "CM_SUP"),
    (1 << 17, "SNMP_TUNNEL_SUP"),
    (1 << 18, "REINIT_SUP"),
    (1 << 19, "DEVICE_MGMT_SUP"),
    (1 << 20, "VENDOR_CLASS_SUP"),
    (1 << 21, "DR_NOTICE_SUP"),
    (1 << 22, "CAP_MASK_NOTICE_SUP"),
    (1 << 23, "BOOT_MGMT_SUP"),
    (1 << 24, "LINK_LATENCY_SUP"),
    (1 << 25, "CLIENT_REG_SUP"),
    (1 << 26, "IP_BASED_GIDS"),
];

const PORT_CAP_FLAGS2: &[(u64, &str)] = &[
    (1, "SET_NODE_DESC_SUP"),
    (1 << 1, "INFO_EXT_SUP"),
    (1 << 2, "VIRT_SUP"),
    (1 << 3, "SWITCH_PORT_STATE_TABLE_SUP"),
    (1 << 4, "LINK_WIDTH_2X_SUP"),
    (1 << 5, "LINK_SPEED_HDR_SUP"),
    (1 << 10, "LINK_SPEED_NDR_SUP"),
    (1 << 12, "LINK_SPEED_XDR_SUP"),
];

const TM_CAP_FLAGS: &[(u64, &str)] = &[(1, "IBV_TM_CAP_RC")];

/// GID text as ibv_devinfo prints it: inet_ntop for RoCE v2, hex groups otherwise.
fn gid_text(gid: &Gid, gid_type: &GidType) -> String {
    if *gid_type != GidType::RoceV2 {
        return gid.sysfs_form();
    }
    let b = &gid.0;
    // glibc writes ::a.b.c.d (IPv4-compatible) where Rust writes hex groups.
    if b[..12] == [0; 12] && b[12..14] != [0, 0] {
        return format!("::{}.{}.{}.{}", b[12], b[13], b[14], b[15]);
    }
    Ipv6Addr::from(*b).to_string()
}

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
        verbs: VerbsStatus::available(),
        read_problems: Vec::new(),
        ports: ports
            .iter()
            .map(|(n, p, gids)| build_port(*n, p, gids))
            .collect(),
    }
}

fn build_port(port: u8, p: &PortAttrs, gids: &[VerbsGid]) -> PortInfo {
    PortInfo {
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

// ---- rendering in ibv_devinfo -v's layout ----

fn list(out: &mut String, names: &[String]) {
    for n in names {
        let _ = writeln!(out, "\t\t\t\t\t{n}");
    }
}

pub fn render(d: &DevInfo) -> String {
    let mut o = String::new();
    let w = &mut o;
    let _ = writeln!(w, "hca_id:\t{}", d.device);
    let _ = writeln!(w, "\ttransport:\t\t\t{} ({})", d.transport, d.transport_raw);
    if let Some(fw) = &d.fw_ver {
        let _ = writeln!(w, "\tfw_ver:\t\t\t\t{fw}");
    }
    let _ = writeln!(w, "\tnode_guid:\t\t\t{}", d.node_guid);
    let _ = writeln!(w, "\tsys_image_guid:\t\t\t{}", d.sys_image_guid);
    let _ = writeln!(w, "\tvendor_id:\t\t\t{}", d.vendor_id);
    let _ = writeln!(w, "\tvendor_part_id:\t\t\t{}", d.vendor_part_id);
    let _ = writeln!(w, "\thw_ver:\t\t\t\t{}", d.hw_ver);
    if let Some(board) = &d.board_id {
        let _ = writeln!(w, "\tboard_id:\t\t\t{board}");
    }
    let _ = writeln!(w, "\tphys_port_cnt:\t\t\t{}", d.phys_port_cnt);
    let _ = writeln!(w, "\tmax_mr_size:\t\t\t{}", d.max_mr_size);
    let _ = writeln!(w, "\tpage_size_cap:\t\t\t{}", d.page_size_cap);
    let _ = writeln!(w, "\tmax_qp:\t\t\t\t{}", d.max_qp);
    let _ = writeln!(w, "\tmax_qp_wr:\t\t\t{}", d.max_qp_wr);
    let _ = writeln!(w, "\tdevice_cap_flags:\t\t{}", d.device_cap_flags);
    list(w, &d.device_cap_flags_decoded);
    let _ = writeln!(w, "\tmax_sge:\t\t\t{}", d.max_sge);
    let _ = writeln!(w, "\tmax_sge_rd:\t\t\t{}", d.max_sge_rd);
    let _ = writeln!(w, "\tmax_cq:\t\t\t\t{}", d.max_cq);
    let _ = writeln!(w, "\tmax_cqe:\t\t\t{}", d.max_cqe);
    let _ = writeln!(w, "\tmax_mr:\t\t\t\t{}", d.max_mr);
    let _ = writeln!(w, "\tmax_pd:\t\t\t\t{}", d.max_pd);
    let _ = writeln!(w, "\tmax_qp_rd_atom:\t\t\t{}", d.max_qp_rd_atom);
    let _ = writeln!(w, "\tmax_ee_rd_atom:\t\t\t{}", d.max_ee_rd_atom);
    let _ = writeln!(w, "\tmax_res_rd_atom:\t\t{}", d.max_res_rd_atom);
    let _ = writeln!(w, "\tmax_qp_init_rd_atom:\t\t{}", d.max_qp_init_rd_atom);
    let _ = writeln!(w, "\tmax_ee_init_rd_atom:\t\t{}", d.max_ee_init_rd_atom);
    let _ = writeln!(
        w,
        "\tatomic_cap:\t\t\t{} ({})",
        d.atomic_cap, d.atomic_cap_raw
    );
    let _ = writeln!(w, "\tmax_ee:\t\t\t\t{}", d.max_ee);
    let _ = writeln!(w, "\tmax_rdd:\t\t\t{}", d.max_rdd);
    let _ = writeln!(w, "\tmax_mw:\t\t\t\t{}", d.max_mw);
    let _ = writeln!(w, "\tmax_raw_ipv6_qp:\t\t{}", d.max_raw_ipv6_qp);
    let _ = writeln!(w, "\tmax_raw_ethy_qp:\t\t{}", d.max_raw_ethy_qp);
    let _ = writeln!(w, "\tmax_mcast_grp:\t\t\t{}", d.max_mcast_grp);
    let _ = writeln!(w, "\tmax_mcast_qp_attach:\t\t{}", d.max_mcast_qp_attach);
    let _ = writeln!(
        w,
        "\tmax_total_mcast_qp_attach:\t{}",
        d.max_total_mcast_qp_attach
    );
    let _ = writeln!(w, "\tmax_ah:\t\t\t\t{}", d.max_ah);
    let _ = writeln!(w, "\tmax_fmr:\t\t\t{}", d.max_fmr);
    if d.max_fmr != 0 {
        let _ = writeln!(w, "\tmax_map_per_fmr:\t\t{}", d.max_map_per_fmr);
    }
    let _ = writeln!(w, "\tmax_srq:\t\t\t{}", d.max_srq);
    if d.max_srq != 0 {
        let _ = writeln!(w, "\tmax_srq_wr:\t\t\t{}", d.max_srq_wr);
        let _ = writeln!(w, "\tmax_srq_sge:\t\t\t{}", d.max_srq_sge);
    }
    let _ = writeln!(w, "\tmax_pkeys:\t\t\t{}", d.max_pkeys);
    let _ = writeln!(w, "\tlocal_ca_ack_delay:\t\t{}", d.local_ca_ack_delay);
    let _ = writeln!(w, "\tgeneral_odp_caps:");
    list(w, &d.general_odp_caps);
    for (label, caps) in [
        ("rc_odp_caps", &d.rc_odp_caps),
        ("uc_odp_caps", &d.uc_odp_caps),
        ("ud_odp_caps", &d.ud_odp_caps),
        ("xrc_odp_caps", &d.xrc_odp_caps),
    ] {
        let _ = writeln!(w, "\t{label}:");
        if caps.is_empty() {
            let _ = writeln!(w, "\t\t\t\t\tNO SUPPORT");
        }
        list(w, caps);
    }
    if d.completion_timestamp_mask
        .trim_start_matches("0x")
        .bytes()
        .all(|b| b == b'0')
    {
        let _ = writeln!(w, "\tcompletion_timestamp_mask not supported");
    } else {
        let _ = writeln!(
            w,
            "\tcompletion timestamp_mask:\t\t\t{}",
            d.completion_timestamp_mask
        );
    }
    if d.hca_core_clock != 0 {
        let _ = writeln!(w, "\thca_core_clock:\t\t\t{}kHZ", d.hca_core_clock);
    } else {
        let _ = writeln!(w, "\tcore clock not supported");
    }
    if !d.raw_packet_caps.is_empty() {
        let _ = writeln!(w, "\traw packet caps:");
        list(w, &d.raw_packet_caps);
    }
    let _ = writeln!(w, "\tdevice_cap_flags_ex:\t\t{}", d.device_cap_flags_ex);
    list(w, &d.device_cap_flags_ex_decoded);
    let _ = writeln!(w, "\ttso_caps:");
    let _ = writeln!(w, "\t\tmax_tso:\t\t\t{}", d.tso_caps.max_tso);
    if d.tso_caps.max_tso != 0 {
        let _ = writeln!(w, "\t\tsupported_qp:");
        list(w, &d.tso_caps.supported_qp);
    }
    let r = &d.rss_caps;
    let _ = writeln!(w, "\trss_caps:");
    let _ = writeln!(
        w,
        "\t\tmax_rwq_indirection_tables:\t\t\t{}",
        r.max_rwq_indirection_tables
    );
    let _ = writeln!(
        w,
        "\t\tmax_rwq_indirection_table_size:\t\t\t{}",
        r.max_rwq_indirection_table_size
    );
    let _ = writeln!(w, "\t\trx_hash_function:\t\t\t\t{}", r.rx_hash_function);
    let _ = writeln!(
        w,
        "\t\trx_hash_fields_mask:\t\t\t\t{}",
        r.rx_hash_fields_mask
    );
    if !r.supported_qp.is_empty() {
        let _ = writeln!(w, "\t\tsupported_qp:");
        list(w, &r.supported_qp);
    }
    let _ = writeln!(w, "\tmax_wq_type_rq:\t\t\t{}", d.max_wq_type_rq);
    let p = &d.packet_pacing_caps;
    let _ = writeln!(w, "\tpacket_pacing_caps:");
    let _ = writeln!(w, "\t\tqp_rate_limit_min:\t{}kbps", p.qp_rate_limit_min);
    let _ = writeln!(w, "\t\tqp_rate_limit_max:\t{}kbps", p.qp_rate_limit_max);
    if p.qp_rate_limit_max != 0 {
        let _ = writeln!(w, "\t\tsupported_qp:");
        list(w, &p.supported_qp);
    }
    let t = &d.tm_caps;
    if t.max_num_tags != 0 {
        let _ = writeln!(w, "\tmax_rndv_hdr_size:\t\t{}", t.max_rndv_hdr_size);
        let _ = writeln!(w, "\tmax_num_tags:\t\t\t{}", t.max_num_tags);
        let _ = writeln!(w, "\tmax_ops:\t\t\t{}", t.max_ops);
        let _ = writeln!(w, "\tmax_sge:\t\t\t{}", t.max_sge);
        let _ = writeln!(w, "\tflags:");
        list(w, &t.flags);
    } else {
        let _ = writeln!(w, "\ttag matching not supported");
    }
    let c = &d.cq_moderation_caps;
    if c.max_cq_count != 0 && c.max_cq_period != 0 {
        let _ = writeln!(w, "\n\tcq moderation caps:");
        let _ = writeln!(w, "\t\tmax_cq_count:\t{}", c.max_cq_count);
        let _ = writeln!(w, "\t\tmax_cq_period:\t{} us\n", c.max_cq_period);
    }
    if d.max_dm_size != 0 {
        let _ = writeln!(
            w,
            "\tmaximum available device memory:\t{}Bytes\n",
            d.max_dm_size
        );
    }
    let _ = writeln!(w, "\tnum_comp_vectors:\t\t{}", d.num_comp_vectors);
    render_device_sysfs(w, d.driver.as_deref(), d.uverbs.as_deref());
    for port in &d.ports {
        render_port(w, port, d.transport_raw == 0);
    }
    o
}

fn render_port(w: &mut String, p: &PortInfo, infiniband_transport: bool) {
    let _ = writeln!(w, "\t\tport:\t{}", p.port);
    let _ = writeln!(w, "\t\t\tstate:\t\t\t{} ({})", p.state, p.state_raw);
    let _ = writeln!(w, "\t\t\tmax_mtu:\t\t{} ({})", p.max_mtu, p.max_mtu_raw);
    let _ = writeln!(
        w,
        "\t\t\tactive_mtu:\t\t{} ({})",
        p.active_mtu, p.active_mtu_raw
    );
    let _ = writeln!(w, "\t\t\tsm_lid:\t\t\t{}", p.sm_lid);
    let _ = writeln!(w, "\t\t\tport_lid:\t\t{}", p.port_lid);
    let _ = writeln!(w, "\t\t\tport_lmc:\t\t{}", p.port_lmc);
    let _ = writeln!(w, "\t\t\tlink_layer:\t\t{}", p.link_layer);
    let _ = writeln!(w, "\t\t\tmax_msg_sz:\t\t{}", p.max_msg_sz);
    let _ = writeln!(w, "\t\t\tport_cap_flags:\t\t{}", p.port_cap_flags);
    let _ = writeln!(w, "\t\t\tport_cap_flags2:\t{}", p.port_cap_flags2);
    let _ = writeln!(
        w,
        "\t\t\tmax_vl_num:\t\t{} ({})",
        p.max_vl_num, p.max_vl_num_raw
    );
    let _ = writeln!(w, "\t\t\tbad_pkey_cntr:\t\t{}", p.bad_pkey_cntr);
    let _ = writeln!(w, "\t\t\tqkey_viol_cntr:\t\t{}", p.qkey_viol_cntr);
    let _ = writeln!(w, "\t\t\tsm_sl:\t\t\t{}", p.sm_sl);
    let _ = writeln!(w, "\t\t\tpkey_tbl_len:\t\t{}", p.pkey_tbl_len);
    let _ = writeln!(w, "\t\t\tgid_tbl_len:\t\t{}", p.gid_tbl_len);
    let _ = writeln!(w, "\t\t\tsubnet_timeout:\t\t{}", p.subnet_timeout);
    let _ = writeln!(w, "\t\t\tinit_type_reply:\t{}", p.init_type_reply);
    let _ = writeln!(
        w,
        "\t\t\tactive_width:\t\t{} ({})",
        p.active_width, p.active_width_raw
    );
    let _ = writeln!(
        w,
        "\t\t\tactive_speed:\t\t{} ({})",
        p.active_speed, p.active_speed_raw
    );
    if infiniband_transport {
        let _ = writeln!(
            w,
            "\t\t\tphys_state:\t\t{} ({})",
            p.phys_state, p.phys_state_raw
        );
    }
    render_gids(w, &p.gids, p.link_layer == "Ethernet");
    render_port_sysfs(w, &p.sysfs);
    let _ = writeln!(w);
}

fn render_gids(w: &mut String, gids: &[GidInfo], ethernet: bool) {
    for g in gids {
        let Some(gid_type) = &g.gid_type else {
            // ibv_devinfo stays silent here; say what we know instead of dropping it.
            let _ = writeln!(w, "\t\t\tGID[{:3}]:\t\t{}, type unknown", g.index, g.gid);
            continue;
        };
        let suffix = if ethernet {
            match gid_type {
                GidType::RoceV2 => ", RoCE v2".to_string(),
                GidType::Other(t) => format!(", {t}"),
                _ => ", RoCE v1".to_string(),
            }
        } else {
            String::new()
        };
        let _ = writeln!(
            w,
            "\t\t\tGID[{:3}]:\t\t{}{suffix}",
            g.index,
            gid_text(&g.gid, gid_type)
        );
    }
}

/// `key:` indented by `depth` tabs, then tabs up to ibv_devinfo's value column (40 for
/// device fields, 48 for port fields), so added lines line up with the ones it prints.
fn field(w: &mut String, depth: usize, key: &str, value: impl std::fmt::Display) {
    let target = if depth == 1 { 40 } else { 48 };
    let mut col = 8 * depth + key.len() + 1;
    let mut tabs = 0;
    while col < target || tabs == 0 {
        col = (col / 8 + 1) * 8;
        tabs += 1;
    }
    let _ = writeln!(
        w,
        "{}{key}:{}{value}",
        "\t".repeat(depth),
        "\t".repeat(tabs)
    );
}

/// The sysfs lines after ibv_devinfo's own, so a diff against it shows only additions.
fn render_device_sysfs(w: &mut String, driver: Option<&str>, uverbs: Option<&str>) {
    if let Some(driver) = driver {
        field(w, 1, "driver", driver);
    }
    if let Some(uverbs) = uverbs {
        field(w, 1, "uverbs", format!("/dev/infiniband/{uverbs}"));
    }
}

fn render_port_sysfs(w: &mut String, s: &PortSysfs) {
    if let Some(rate) = &s.rate {
        field(w, 3, "rate", rate);
    }
    if let Some(netdev) = &s.netdev {
        let mut details = Vec::new();
        if let Some(state) = &s.netdev_operstate {
            details.push(state.clone());
        }
        if let Some(mtu) = s.netdev_mtu {
            details.push(format!("mtu {mtu}"));
        }
        let details = if details.is_empty() {
            String::new()
        } else {
            format!(" ({})", details.join(", "))
        };
        field(w, 3, "netdev", format!("{netdev}{details}"));
    }
    if !s.gid_netdevs.is_empty() && s.gid_netdevs.as_slice() != s.netdev.as_slice() {
        field(w, 3, "gid_netdevs", s.gid_netdevs.join(", "));
    }
    if !s.pkeys.is_empty() {
        field(
            w,
            3,
            "pkeys",
            crate::render::inventory::show_pkeys(&s.pkeys),
        );
    }
}

// ---- without verbs: what sysfs has, under the same names ----

/// ibv_devinfo's device fields that only a verbs query returns, in its order.
const MISSING_DEVICE_FIELDS: &[&str] = &[
    "vendor_id",
    "vendor_part_id",
    "max_mr_size",
    "page_size_cap",
    "max_qp",
    "max_qp_wr",
    "device_cap_flags",
    "max_sge",
    "max_sge_rd",
    "max_cq",
    "max_cqe",
    "max_mr",
    "max_pd",
    "max_qp_rd_atom",
    "max_ee_rd_atom",
    "max_res_rd_atom",
    "max_qp_init_rd_atom",
    "max_ee_init_rd_atom",
    "atomic_cap",
    "max_ee",
    "max_rdd",
    "max_mw",
    "max_raw_ipv6_qp",
    "max_raw_ethy_qp",
    "max_mcast_grp",
    "max_mcast_qp_attach",
    "max_total_mcast_qp_attach",
    "max_ah",
    "max_fmr",
    "max_map_per_fmr",
    "max_srq",
    "max_srq_wr",
    "max_srq_sge",
    "max_pkeys",
    "local_ca_ack_delay",
    "general_odp_caps",
    "rc_odp_caps",
    "uc_odp_caps",
    "ud_odp_caps",
    "xrc_odp_caps",
    "completion_timestamp_mask",
    "hca_core_clock",
    "raw_packet_caps",
    "device_cap_flags_ex",
    "tso_caps",
    "rss_caps",
    "max_wq_type_rq",
    "packet_pacing_caps",
    "tm_caps",
    "cq_moderation_caps",
    "max_dm_size",
    "num_comp_vectors",
];

/// The same for each port.
const MISSING_PORT_FIELDS: &[&str] = &[
    "max_mtu",
    "active_mtu",
    "max_msg_sz",
    "port_cap_flags2",
    "max_vl_num",
    "bad_pkey_cntr",
    "qkey_viol_cntr",
    "pkey_tbl_len",
    "gid_tbl_len",
    "subnet_timeout",
    "init_type_reply",
];

/// A device shown from sysfs alone: ibv_devinfo's names and spellings for the values
/// sysfs has, null where it lacks one, and `verbs` saying what is missing and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SysfsDevInfo {
    /// The device name (ibv_devinfo's `hca_id`; `device` in every command's JSON).
    pub device: String,
    pub node_type: Option<NodeType>,
    pub transport: Option<String>,
    pub transport_raw: Option<i32>,
    pub fw_ver: Option<String>,
    pub node_guid: Option<String>,
    pub sys_image_guid: Option<String>,
    pub hw_ver: Option<String>,
    pub board_id: Option<String>,
    pub node_desc: Option<String>,
    pub hca_type: Option<String>,
    pub phys_port_cnt: usize,
    pub driver: Option<String>,
    pub uverbs: Option<String>,
    pub verbs: VerbsStatus,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub read_problems: Vec<ReadProblem>,
    pub ports: Vec<SysfsPortInfo>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SysfsPortInfo {
    pub port: u32,
    pub state: Option<String>,
    pub state_raw: Option<u32>,
    pub sm_lid: Option<u32>,
    pub port_lid: Option<u32>,
    pub port_lmc: Option<String>,
    pub link_layer: Option<String>,
    pub port_cap_flags: Option<String>,
    pub port_cap_flags_decoded: Option<Vec<String>>,
    pub sm_sl: Option<u8>,
    pub active_width: Option<String>,
    pub active_width_raw: Option<u8>,
    pub active_speed: Option<String>,
    pub active_speed_raw: Option<u8>,
    pub phys_state: Option<String>,
    pub phys_state_raw: Option<u8>,
    #[serde(flatten)]
    pub sysfs: PortSysfs,
    pub gids: Vec<GidInfo>,
}

/// One entry of `devices -v`: verbs merged with sysfs, or sysfs alone.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum DevView {
    Verbs(Box<DevInfo>),
    Sysfs(Box<SysfsDevInfo>),
}

/// libibverbs derives the transport from the node type exactly this way.
fn transport_of(node_type: &NodeType) -> Option<i32> {
    match node_type {
        NodeType::Ca | NodeType::Switch | NodeType::Router => Some(0),
        NodeType::Rnic => Some(1),
        NodeType::Usnic => Some(2),
        NodeType::UsnicUdp => Some(3),
        NodeType::Unspecified => Some(4),
        NodeType::Other(_) => None,
    }
}

fn port_state_raw(s: &PortState) -> Option<u32> {
    match s {
        PortState::Nop => Some(0),
        PortState::Down => Some(1),
        PortState::Init => Some(2),
        PortState::Armed => Some(3),
        PortState::Active => Some(4),
        PortState::ActiveDefer => Some(5),
        PortState::Other(_) => None,
    }
}

fn phys_state_raw(s: &PhysState) -> Option<u8> {
    match s {
        PhysState::Sleep => Some(1),
        PhysState::Polling => Some(2),
        PhysState::Disabled => Some(3),
        PhysState::PortConfigurationTraining => Some(4),
        PhysState::LinkUp => Some(5),
        PhysState::LinkErrorRecovery => Some(6),
        PhysState::PhyTest => Some(7),
        PhysState::Other(_) => None,
    }
}

/// The kernel writes `rate` from active_width/active_speed with one name per value, so
/// the names map back exactly (`1X` is 1, `4X` is 2; `FDR10` is 8).
fn width_raw(name: &str) -> Option<u8> {
    match name {
        "1X" => Some(1),
        "4X" => Some(2),
        "8X" => Some(4),
        "12X" => Some(8),
        "2X" => Some(16),
        _ => None,
    }
}

fn speed_raw(name: &str) -> Option<u8> {
    match name {
        "SDR" => Some(1),
        "DDR" => Some(2),
        "QDR" => Some(4),
        "FDR10" => Some(8),
        "FDR" => Some(16),
        "EDR" => Some(32),
        "HDR" => Some(64),
        "NDR" => Some(128),
        _ => None,
    }
}

/// sysfs `hw_rev` is hex, with or without `0x` (mlx5 and ibsim write a bare "%x");
/// ibv_devinfo prints hw_ver as `0x%X`.
fn hw_ver_text(rev: &str) -> String {
    u64::from_str_radix(rev.strip_prefix("0x").unwrap_or(rev), 16)
        .ok()
        .map_or_else(|| rev.to_string(), |v| format!("0x{v:X}"))
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
        verbs: VerbsStatus::unavailable(reason),
        read_problems: all_read_problems(d),
        ports: d
            .ports
            .iter()
            .map(|p| {
                let state_raw = p.state.as_ref().and_then(port_state_raw);
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
fn merge_sysfs(info: &mut DevInfo, d: &Device, root: &SysfsRoot) {
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

/// `value (raw)` as ibv_devinfo writes enumerated values, or "-" when sysfs lacks it.
fn with_raw<R: std::fmt::Display>(value: &Option<String>, raw: Option<R>) -> String {
    match (value, raw) {
        (Some(v), Some(r)) => format!("{v} ({r})"),
        _ => "-".to_string(),
    }
}

fn or_dash<T: std::fmt::Display>(v: &Option<T>) -> String {
    v.as_ref()
        .map_or_else(|| "-".to_string(), |v| v.to_string())
}

/// ibv_devinfo's layout for the fields sysfs has; the note on stderr lists the rest.
pub fn render_sysfs(d: &SysfsDevInfo) -> String {
    let mut o = String::new();
    let w = &mut o;
    let _ = writeln!(w, "hca_id:\t{}", d.device);
    field(w, 1, "transport", with_raw(&d.transport, d.transport_raw));
    if let Some(fw) = &d.fw_ver {
        field(w, 1, "fw_ver", fw);
    }
    field(w, 1, "node_guid", or_dash(&d.node_guid));
    field(w, 1, "sys_image_guid", or_dash(&d.sys_image_guid));
    if let Some(hw) = &d.hw_ver {
        field(w, 1, "hw_ver", hw);
    }
    if let Some(board) = &d.board_id {
        field(w, 1, "board_id", board);
    }
    field(w, 1, "phys_port_cnt", d.phys_port_cnt);
    render_device_sysfs(w, d.driver.as_deref(), d.uverbs.as_deref());
    for p in &d.ports {
        let _ = writeln!(w, "\t\tport:\t{}", p.port);
        field(w, 3, "state", with_raw(&p.state, p.state_raw));
        field(w, 3, "sm_lid", or_dash(&p.sm_lid));
        field(w, 3, "port_lid", or_dash(&p.port_lid));
        field(w, 3, "port_lmc", or_dash(&p.port_lmc));
        field(w, 3, "link_layer", or_dash(&p.link_layer));
        field(w, 3, "port_cap_flags", or_dash(&p.port_cap_flags));
        field(w, 3, "sm_sl", or_dash(&p.sm_sl));
        field(
            w,
            3,
            "active_width",
            with_raw(&p.active_width, p.active_width_raw),
        );
        field(
            w,
            3,
            "active_speed",
            with_raw(&p.active_speed, p.active_speed_raw),
        );
        field(
            w,
            3,
            "phys_state",
            with_raw(&p.phys_state, p.phys_state_raw),
        );
        render_gids(w, &p.gids, p.link_layer.as_deref() == Some("Ethernet"));
        render_port_sysfs(w, &p.sysfs);
        let _ = writeln!(w);
    }
    o
}

// ---- the command ----

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

/// The stderr note: which devices lack verbs, why, and which fields that costs. One line
/// per distinct reason, so a host without libibverbs gets one line, not one per device.
/// On a captured tree verbs are never asked, so the line only says that their fields are
/// absent (the JSON still lists them in `verbs.missing_fields`).
pub fn missing_notes(views: &[DevView], captured: bool) -> Vec<String> {
    let mut by_reason: Vec<(String, Vec<String>)> = Vec::new();
    for v in views {
        let DevView::Sysfs(d) = v else { continue };
        let reason = d.verbs.reason.clone().unwrap_or_default();
        match by_reason.iter_mut().find(|(r, _)| *r == reason) {
            Some((_, names)) => names.push(d.device.clone()),
            None => by_reason.push((reason, vec![d.device.clone()])),
        }
    }
    by_reason
        .into_iter()
        .map(|(reason, names)| {
            if captured {
                return format!(
                    "{}: {}; shown from sysfs, without the fields only verbs report",
                    names.join(", "),
                    reason.trim_end_matches('.')
                );
            }
            format!(
                "{}: verbs unavailable: {}; shown from sysfs, missing: {}; per port: {}",
                names.join(", "),
                reason.trim_end_matches('.'),
                MISSING_DEVICE_FIELDS.join(", "),
                MISSING_PORT_FIELDS.join(", ")
            )
        })
        .collect()
}

/// `rdmactl devices -v [-d DEV]`. Exit 0 whenever a device was shown: without verbs the
/// sysfs values are still real, and the note says what is missing.
pub fn run_verbose(ctx: &Ctx, device: Option<&str>) -> Result<u8> {
    let (sysfs, views) = gather(ctx, device)?;
    let text = if ctx.json {
        output::json(&views)
    } else {
        views
            .iter()
            .map(|v| match v {
                DevView::Verbs(info) => render(info),
                DevView::Sysfs(d) => render_sysfs(d),
            })
            .collect::<String>()
    };
    if !ctx.json {
        crate::output::note(&crate::render::inventory::unreadable_warnings(&sysfs));
        for note in missing_notes(&views, ctx.captured) {
            eprintln!("rdmactl: note: {note}");
        }
    }
    output::print(&text)?;
    Ok(crate::exit::OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// rxe0 as ibv_devinfo 44 printed it in the VM
    /// (shared/fixtures/sysfs/rxe-veth-basic/ibv_devinfo-v.txt).
    fn rxe_attrs() -> (DeviceAttrs, PortAttrs, Vec<VerbsGid>) {
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

    /// The human output is ibv_devinfo -v's text, byte for byte, on a real capture.
    #[test]
    fn render_matches_captured_ibv_devinfo_for_rxe0() {
        let (d, p, gids) = rxe_attrs();
        let info = build("rxe0", 0, None, 2, &d, &[(1, p, gids)]);
        let captured = include_str!("../../tests/fixtures/devinfo/rxe0-ibv_devinfo-v.txt");
        let ours = render(&info);
        for (i, (a, b)) in ours.lines().zip(captured.lines()).enumerate() {
            assert_eq!(a, b, "line {}", i + 1);
        }
        assert_eq!(ours.lines().count(), captured.lines().count());
    }

    #[test]
    fn json_keys_are_ibv_devinfo_names() {
        let (d, p, gids) = rxe_attrs();
        let info = build("rxe0", 0, None, 2, &d, &[(1, p, gids)]);
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
    fn vm_parity_script_accepts_our_json_for_the_capture_and_rejects_a_change() {
        if std::process::Command::new("python3")
            .arg("-V")
            .output()
            .is_err()
        {
            panic!("python3 is not installed: run scripts/setup");
        }
        let (d, p, gids) = rxe_attrs();
        let mut info = build("rxe0", 0, None, 2, &d, &[(1, p, gids)]);
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

    fn fixture_devices(tree: &str) -> Vec<Device> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/sysfs")
            .join(tree);
        SysfsRoot::new(root).devices().unwrap()
    }

    /// Lines sysfs adds after ibv_devinfo's own.
    fn is_sysfs_line(line: &str) -> bool {
        let key = line.trim_start().split(':').next().unwrap_or("");
        ["driver", "uverbs", "rate", "netdev", "gid_netdevs", "pkeys"].contains(&key)
    }

    /// Without verbs, every line that is not a sysfs addition is one ibv_devinfo printed,
    /// byte for byte, on the same capture: the values and the layout are ibv_devinfo's.
    #[test]
    fn sysfs_fallback_lines_are_ibv_devinfo_lines_of_the_same_capture() {
        let captured = include_str!("../../tests/fixtures/sysfs/rxe-vm-basic/ibv_devinfo-v.txt");
        for d in fixture_devices("rxe-vm-basic") {
            let ours = render_sysfs(&from_sysfs(&d, "test".into()));
            let mut compared = 0;
            for line in ours.lines().filter(|l| !l.is_empty() && !is_sysfs_line(l)) {
                assert!(
                    captured.lines().any(|c| c == line),
                    "{}: {line:?} is not in ibv_devinfo's output",
                    d.name
                );
                compared += 1;
            }
            assert!(compared >= 15, "{}: only {compared} lines", d.name);
            assert!(ours.contains("netdev:\t\t\tveth"), "{ours}");
        }
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
        let (d, p, gids) = rxe_attrs();
        let verbs = serde_json::to_value(build("rxe0", 0, None, 2, &d, &[(1, p, gids)])).unwrap();
        let dev = fixture_devices("rxe-vm-basic").remove(0);
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

    /// Merged output: ibv_devinfo's text unchanged, sysfs lines only added; JSON gains
    /// the netdev per port and per GID.
    #[test]
    fn merged_view_adds_sysfs_without_changing_ibv_devinfo_lines() {
        let (d, p, gids) = rxe_attrs();
        let mut info = build("rxe0", 0, None, 2, &d, &[(1, p, gids)]);
        let plain = render(&info);
        let root = SysfsRoot::new(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/sysfs/rxe-veth-basic"),
        );
        let dev = root.clone().netdev_only().devices().unwrap().remove(0);
        merge_sysfs(&mut info, &dev, &root);
        let merged = render(&info);
        let kept: Vec<&str> = merged.lines().filter(|l| !is_sysfs_line(l)).collect();
        assert_eq!(kept, plain.lines().collect::<Vec<_>>());
        assert!(
            merged.contains("\t\t\tnetdev:\t\t\tveth0 (up, mtu 1500)\n"),
            "{merged}"
        );
        assert!(
            merged.contains("\tuverbs:\t\t\t\t/dev/infiniband/uverbs0\n"),
            "{merged}"
        );
        let v = serde_json::to_value(&info).unwrap();
        assert_eq!(v["verbs"]["available"], true);
        assert_eq!(v["uverbs"], "uverbs0");
        assert_eq!(v["ports"][0]["netdev"], "veth0");
        assert_eq!(v["ports"][0]["netdev_mtu"], 1500);
        assert_eq!(v["ports"][0]["gids"][1]["netdev"], "veth0");
        assert_eq!(v["ports"][0]["gid_netdevs"], serde_json::json!(["veth0"]));
    }

    #[test]
    fn notes_group_devices_by_reason() {
        let devs = fixture_devices("rxe-veth-basic");
        let views = vec![
            DevView::Sysfs(Box::new(from_sysfs(&devs[0], "no libibverbs.".into()))),
            DevView::Sysfs(Box::new(from_sysfs(&devs[1], "no libibverbs.".into()))),
        ];
        let notes = missing_notes(&views, false);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].starts_with(
            "rxe0, rxe1: verbs unavailable: no libibverbs; shown from sysfs, missing: vendor_id,"
        ));
        assert!(notes[0].ends_with("subnet_timeout, init_type_reply"));
        // A captured tree: one short line, no field list.
        let views = vec![DevView::Sysfs(Box::new(from_sysfs(
            &devs[0],
            "--sysfs T is a captured tree".into(),
        )))];
        assert_eq!(
            missing_notes(&views, true),
            ["rxe0: --sysfs T is a captured tree; shown from sysfs, without the fields only verbs report"]
        );
        let listed = crate::gather::inventory::not_listed(&devs[0], &["rxe1".to_string()]);
        assert!(
            listed.starts_with("not listed by libibverbs (which lists rxe1): no provider"),
            "{listed}"
        );
    }

    #[test]
    fn added_lines_use_ibv_devinfo_columns() {
        let mut w = String::new();
        field(&mut w, 1, "max_qp", 1);
        field(&mut w, 1, "max_total_mcast_qp_attach", 2);
        field(&mut w, 3, "state", 3);
        field(&mut w, 3, "port_cap_flags2", 4);
        assert_eq!(
            w,
            "\tmax_qp:\t\t\t\t1\n\tmax_total_mcast_qp_attach:\t2\n\t\t\tstate:\t\t\t3\n\t\t\tport_cap_flags2:\t4\n"
        );
        assert_eq!(hw_ver_text("0xa0"), "0xA0");
        assert_eq!(hw_ver_text("a0"), "0xA0");
        assert_eq!(hw_ver_text("rev B"), "rev B");
    }

    #[test]
    fn enum_decoding_tables() {
        let cases: &[(&str, &str)] = &[
            (width_str(2), "4"),
            (width_str(16), "2"),
            (width_str(3), "invalid width"),
            (speed_str(4), "10.0 Gbps"),
            (speed_str(128), "100.0 Gbps"),
            (speed_str(0), "invalid speed"),
            (vl_str(5), "15"),
            (vl_str(0), "invalid value"),
            (mtu_str(0), "invalid MTU"),
            (port_state_str(5), "invalid state"),
            (phys_state_str(3), "DISABLED"),
            (link_layer_str(0), "Unspecified"),
            (link_layer_str(7), "Unknown"),
            (transport_str(-1), "invalid transport"),
            (atomic_cap_str(2), "ATOMIC_GLOB"),
        ];
        for (got, want) in cases {
            assert_eq!(got, want);
        }
    }

    #[test]
    fn unknown_flags_are_reported_like_ibv_devinfo() {
        assert_eq!(
            decode_flags(
                0x1C0_0122_3C76 & 0xffff_ffff_0000_0000,
                DEVICE_CAP_FLAGS_EX_HIGH
            ),
            vec!["Unknown flags: 0x1C000000000".to_string()]
        );
        assert_eq!(
            decode_flags((1 << 34) | (1 << 40), DEVICE_CAP_FLAGS_EX_HIGH),
            vec![
                "RAW_SCATTER_FCS".to_string(),
                "Unknown flags: 0x10000000000".to_string()
            ]
        );
        assert_eq!(decode_flags(0, ODP_TRANSPORT_CAPS), Vec::<String>::new());
    }

    #[test]
    fn gid_text_follows_inet_ntop_for_roce_v2_and_hex_otherwise() {
        let g = Gid::parse("::ffff:192.168.77.1").unwrap();
        assert_eq!(gid_text(&g, &GidType::RoceV2), "::ffff:192.168.77.1");
        assert_eq!(
            gid_text(&g, &GidType::RoceV1),
            "0000:0000:0000:0000:0000:ffff:c0a8:4d01"
        );
        let compat = Gid::parse("::c0a8:4d01").unwrap();
        assert_eq!(gid_text(&compat, &GidType::RoceV2), "::192.168.77.1");
        let ll = Gid::parse("fe80::1:2").unwrap();
        assert_eq!(gid_text(&ll, &GidType::RoceV2), "fe80::1:2");
    }
}
