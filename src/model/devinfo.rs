//! The fields of `rdmactl devices -v`: every attribute `ibv_devinfo -v` prints, and the
//! tables that decode its flag bits and enumerated values the same way.
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

use serde::Serialize;

use crate::model::device::{
    GidType, NetdevSource, NodeType, PhysState, PkeyEntry, Port, ReadProblem,
};
use crate::model::gid::Gid;

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
    pub verbs: DevinfoVerbsStatus,
    /// sysfs files (device or port) that exist but could not be read.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub read_problems: Vec<ReadProblem>,
    pub ports: Vec<DevinfoPort>,
}

/// Whether the verbs fields are there, and if not, why and which.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DevinfoVerbsStatus {
    pub available: bool,
    pub reason: Option<String>,
    pub missing_fields: Vec<String>,
}

impl DevinfoVerbsStatus {
    pub fn available() -> DevinfoVerbsStatus {
        DevinfoVerbsStatus {
            available: true,
            reason: None,
            missing_fields: Vec::new(),
        }
    }

    pub fn unavailable(reason: String) -> DevinfoVerbsStatus {
        DevinfoVerbsStatus {
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
    pub netdev_operstate: Option<crate::model::device::OperState>,
    /// Every netdev the populated GID table refers to.
    pub gid_netdevs: Vec<String>,
    /// The populated slots of the port's P_Key table (`ports/N/pkeys/`).
    pub pkeys: Vec<PkeyEntry>,
}

impl PortSysfs {
    pub fn of(p: &Port) -> PortSysfs {
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
pub struct DevinfoPort {
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

/// ibv_devinfo's device fields that only a verbs query returns, in its order.
pub const MISSING_DEVICE_FIELDS: &[&str] = &[
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
pub const MISSING_PORT_FIELDS: &[&str] = &[
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
    pub verbs: DevinfoVerbsStatus,
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

// ---- sysfs's values mapped back to the numbers verbs report ----

/// libibverbs derives the transport from the node type exactly this way.
pub fn transport_of(node_type: &NodeType) -> Option<i32> {
    match node_type {
        NodeType::Ca | NodeType::Switch | NodeType::Router => Some(0),
        NodeType::Rnic => Some(1),
        NodeType::Usnic => Some(2),
        NodeType::UsnicUdp => Some(3),
        NodeType::Unspecified => Some(4),
        NodeType::Other(_) => None,
    }
}

pub fn phys_state_raw(s: &PhysState) -> Option<u8> {
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
pub fn width_raw(name: &str) -> Option<u8> {
    match name {
        "1X" => Some(1),
        "4X" => Some(2),
        "8X" => Some(4),
        "12X" => Some(8),
        "2X" => Some(16),
        _ => None,
    }
}

pub fn speed_raw(name: &str) -> Option<u8> {
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
pub fn hw_ver_text(rev: &str) -> String {
    u64::from_str_radix(rev.strip_prefix("0x").unwrap_or(rev), 16)
        .ok()
        .map_or_else(|| rev.to_string(), |v| format!("0x{v:X}"))
}

// ---- decoding, value for value as rdma-core 44's ibv_devinfo does it ----

pub fn transport_str(t: i32) -> &'static str {
    match t {
        0 => "InfiniBand",
        1 => "iWARP",
        2 => "usNIC",
        3 => "usNIC UDP",
        4 => "unspecified",
        _ => "invalid transport",
    }
}

pub fn port_state_str(s: u32) -> &'static str {
    match s {
        1 => "PORT_DOWN",
        2 => "PORT_INIT",
        3 => "PORT_ARMED",
        4 => "PORT_ACTIVE",
        _ => "invalid state",
    }
}

pub fn phys_state_str(s: u8) -> &'static str {
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

pub fn atomic_cap_str(a: u32) -> &'static str {
    match a {
        0 => "ATOMIC_NONE",
        1 => "ATOMIC_HCA",
        2 => "ATOMIC_GLOB",
        _ => "invalid atomic capability",
    }
}

pub fn mtu_str(m: u32) -> &'static str {
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
pub fn width_str(w: u8) -> &'static str {
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
pub fn speed_str(s: u8) -> &'static str {
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

pub fn vl_str(v: u8) -> &'static str {
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
pub fn link_layer_str(l: u8) -> &'static str {
    match l {
        0 => "Unspecified",
        1 => "InfiniBand",
        2 => "Ethernet",
        _ => "Unknown",
    }
}

pub fn guid_str(guid: u64) -> String {
    format!(
        "{:04x}:{:04x}:{:04x}:{:04x}",
        (guid >> 48) & 0xffff,
        (guid >> 32) & 0xffff,
        (guid >> 16) & 0xffff,
        guid & 0xffff
    )
}

/// Names of the set bits in table order, then `Unknown flags: 0x..` for the rest.
pub fn decode_flags(value: u64, table: &[(u64, &str)]) -> Vec<String> {
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

pub const DEVICE_CAP_FLAGS: &[(u64, &str)] = &[
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
pub const DEVICE_CAP_FLAGS_EX_HIGH: &[(u64, &str)] = &[
    (1 << 34, "RAW_SCATTER_FCS"),
    (1 << 36, "PCI_WRITE_END_PADDING"),
];

pub const ODP_GENERAL_CAPS: &[(u64, &str)] =
    &[(1, "ODP_SUPPORT"), (1 << 1, "ODP_SUPPORT_IMPLICIT")];

pub const ODP_TRANSPORT_CAPS: &[(u64, &str)] = &[
    (1, "SUPPORT_SEND"),
    (1 << 1, "SUPPORT_RECV"),
    (1 << 2, "SUPPORT_WRITE"),
    (1 << 3, "SUPPORT_READ"),
    (1 << 4, "SUPPORT_ATOMIC"),
    (1 << 5, "SUPPORT_SRQ"),
];

/// Bits are `1 << enum ibv_qp_type`: IBV_QPT_UD is 4, IBV_QPT_RAW_PACKET is 8.
pub const SUPPORTED_QPTS: &[(u64, &str)] =
    &[(1 << 8, "SUPPORT_RAW_PACKET"), (1 << 4, "SUPPORT_UD")];

pub const RAW_PACKET_CAPS: &[(u64, &str)] = &[
    (1, "C-VLAN stripping offload"),
    (1 << 1, "Scatter FCS offload"),
    (1 << 2, "IP csum offload"),
    (1 << 3, "Delay drop"),
];

/// ibv_devinfo prints these as hex only; the names are the IB spec's PortInfo
/// CapabilityMask bits as verbs.h spells them.
pub const PORT_CAP_FLAGS: &[(u64, &str)] = &[
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

pub const PORT_CAP_FLAGS2: &[(u64, &str)] = &[
    (1, "SET_NODE_DESC_SUP"),
    (1 << 1, "INFO_EXT_SUP"),
    (1 << 2, "VIRT_SUP"),
    (1 << 3, "SWITCH_PORT_STATE_TABLE_SUP"),
    (1 << 4, "LINK_WIDTH_2X_SUP"),
    (1 << 5, "LINK_SPEED_HDR_SUP"),
    (1 << 10, "LINK_SPEED_NDR_SUP"),
    (1 << 12, "LINK_SPEED_XDR_SUP"),
];

pub const TM_CAP_FLAGS: &[(u64, &str)] = &[(1, "IBV_TM_CAP_RC")];

#[cfg(test)]
mod tests {
    use super::*;

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
    fn hw_ver_is_printed_as_ibv_devinfo_does() {
        assert_eq!(hw_ver_text("0xa0"), "0xA0");
        assert_eq!(hw_ver_text("a0"), "0xA0");
        assert_eq!(hw_ver_text("rev B"), "rev B");
    }
}
