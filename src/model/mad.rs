//! Management datagrams, encoded and decoded in pure Rust: the common MAD header, directed-
//! route SMPs (NodeInfo, NodeDescription, SmpPortInfo, SwitchInfo, SMInfo) and PMA PmaCounters,
//! laid out as the InfiniBand Architecture Specification (vol. 1, ch. 13-16) gives them.
//! Decoding never panics: a short or malformed reply is `None`.

use std::io;
use std::time::Duration;

use crate::model::device::{PhysState, PortState};

/// Every MAD is 256 bytes.
pub const MAD_SIZE: usize = 256;

pub const CLASS_SMP_LID: u8 = 0x01;
pub const CLASS_SMP_DR: u8 = 0x81;
pub const CLASS_PERF: u8 = 0x04;

pub const METHOD_GET: u8 = 0x01;
pub const METHOD_SET: u8 = 0x02;
pub const METHOD_GET_RESP: u8 = 0x81;

pub const ATTR_NODE_DESC: u16 = 0x0010;
pub const ATTR_NODE_INFO: u16 = 0x0011;
pub const ATTR_SWITCH_INFO: u16 = 0x0012;
pub const ATTR_PORT_INFO: u16 = 0x0015;
pub const ATTR_SM_INFO: u16 = 0x0020;
pub const ATTR_PORT_COUNTERS: u16 = 0x0012;
pub const ATTR_CLASS_PORT_INFO: u16 = 0x0001;
pub const ATTR_PORT_COUNTERS_EXT: u16 = 0x001d;

/// The permissive LID a directed-route SMP is sent to.
pub const PERMISSIVE_LID: u16 = 0xffff;
/// The GSI's well-known Q_Key (PMA requests go to QP1 with it).
pub const GSI_QKEY: u32 = 0x8001_0000;
/// A directed route holds at most 63 hops.
pub const MAX_HOPS: usize = 63;

/// Where a request goes: a directed route out of the local port, or a LID (QP1 for the
/// PMA, QP0 for a LID-routed SMP).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum DrPath {
    /// The output port at each hop; empty is the local node.
    Directed(Vec<u8>),
    Lid(u16),
}

impl std::fmt::Display for DrPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DrPath::Directed(path) => {
                write!(f, "DR path 0")?;
                for p in path {
                    write!(f, ",{p}")?;
                }
                Ok(())
            }
            DrPath::Lid(lid) => write!(f, "LID {lid}"),
        }
    }
}

/// What a transport hands back: an answer, or one of our own sends returned undelivered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Received {
    /// A MAD that arrived (an answer, by its TID).
    Mad(Vec<u8>),
    /// A send given back with a nonzero status (the kernel's ETIMEDOUT once the send's
    /// timeout passed; ibsim's at once for a MAD it dropped): that send is lost for sure.
    /// `tid` is the lower 32 bits the engine chose.
    Returned { tid: u32, status: u32 },
}

/// How MADs leave and arrive: the umad device, or a test's fake fabric.
pub trait MadTransport {
    /// Sends one 256-byte MAD; the transport fills in its own transaction-ID bits if it must.
    /// `timeout` is how long this send waits: a transport that reports undelivered sends
    /// (the umad device) gives it back after that long at most.
    fn send(&mut self, mad: &[u8; MAD_SIZE], to: &DrPath, timeout: Duration) -> io::Result<()>;
    /// The next MAD or returned send within `timeout`, or None.
    fn recv(&mut self, timeout: Duration) -> io::Result<Option<Received>>;
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(b.get(at..at + 2)?.try_into().ok()?))
}
fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}
fn be64(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_be_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// The common MAD header (24 bytes), as every class starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub base_version: u8,
    pub class: u8,
    pub class_version: u8,
    pub method: u8,
    /// For a directed-route SMP the top bit is the direction (D) bit, not status.
    pub status: u16,
    pub tid: u64,
    pub attr_id: u16,
    pub attr_mod: u32,
}

impl Header {
    pub fn decode(mad: &[u8]) -> Option<Header> {
        Some(Header {
            base_version: *mad.first()?,
            class: *mad.get(1)?,
            class_version: *mad.get(2)?,
            method: *mad.get(3)?,
            status: be16(mad, 4)?,
            tid: be64(mad, 8)?,
            attr_id: be16(mad, 16)?,
            attr_mod: be32(mad, 20)?,
        })
    }

    /// The status with a directed-route SMP's direction bit masked off.
    pub fn status_code(&self) -> u16 {
        if self.class == CLASS_SMP_DR {
            self.status & 0x7fff
        } else {
            self.status
        }
    }
}

/// A Get (or Set) request, encoded: an SMP when the class is an SMP class, a PMA MAD
/// otherwise. `data` goes at the class's data offset (64 for both SMPs and the PMA).
pub fn encode_request(
    class: u8,
    method: u8,
    tid: u64,
    attr_id: u16,
    attr_mod: u32,
    route: &DrPath,
    data: &[u8],
) -> Option<[u8; MAD_SIZE]> {
    let mut m = [0u8; MAD_SIZE];
    m[0] = 1;
    m[1] = class;
    m[2] = 1;
    m[3] = method;
    m[8..16].copy_from_slice(&tid.to_be_bytes());
    m[16..18].copy_from_slice(&attr_id.to_be_bytes());
    m[20..24].copy_from_slice(&attr_mod.to_be_bytes());
    if data.len() > 64 {
        return None;
    }
    m[64..64 + data.len()].copy_from_slice(data);
    if class == CLASS_SMP_DR {
        let DrPath::Directed(path) = route else {
            return None;
        };
        if path.len() > MAX_HOPS {
            return None;
        }
        // HopPointer 0, HopCount = hops; DrSLID and DrDLID permissive (the whole path is
        // directed); InitialPath[0] is unused, hop i's output port is InitialPath[i].
        m[6] = 0;
        m[7] = path.len() as u8;
        m[32..34].copy_from_slice(&PERMISSIVE_LID.to_be_bytes());
        m[34..36].copy_from_slice(&PERMISSIVE_LID.to_be_bytes());
        for (i, port) in path.iter().enumerate() {
            m[128 + 1 + i] = *port;
        }
    }
    Some(m)
}

/// The attribute data of a reply: bytes 64.. for SMPs and the PMA alike.
pub fn data(mad: &[u8]) -> Option<&[u8]> {
    mad.get(64..MAD_SIZE)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MadNodeType {
    Ca,
    Switch,
    Router,
    Other,
}

impl MadNodeType {
    pub fn from_raw(v: u8) -> MadNodeType {
        match v {
            1 => MadNodeType::Ca,
            2 => MadNodeType::Switch,
            3 => MadNodeType::Router,
            _ => MadNodeType::Other,
        }
    }
}

/// NodeInfo (attribute 0x0011).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeInfo {
    pub node_type: MadNodeType,
    pub num_ports: u8,
    pub system_image_guid: u64,
    pub node_guid: u64,
    pub port_guid: u64,
    pub partition_cap: u16,
    pub device_id: u16,
    pub revision: u32,
    /// The port the SMP entered by.
    pub local_port: u8,
    pub vendor_id: u32,
}

impl NodeInfo {
    pub fn decode(d: &[u8]) -> Option<NodeInfo> {
        Some(NodeInfo {
            node_type: MadNodeType::from_raw(*d.get(2)?),
            num_ports: *d.get(3)?,
            system_image_guid: be64(d, 4)?,
            node_guid: be64(d, 12)?,
            port_guid: be64(d, 20)?,
            partition_cap: be16(d, 28)?,
            device_id: be16(d, 30)?,
            revision: be32(d, 32)?,
            local_port: *d.get(36)?,
            vendor_id: be32(d, 36)? & 0x00ff_ffff,
        })
    }
}

/// NodeDescription (0x0010): up to 64 bytes of text, NUL-padded.
pub fn node_description(d: &[u8]) -> Option<String> {
    let raw = d.get(..64)?;
    let end = raw.iter().position(|b| *b == 0).unwrap_or(raw.len());
    Some(String::from_utf8_lossy(&raw[..end]).trim().to_string())
}

/// SmpPortInfo (0x0015), the fields discovery and the link checks read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SmpPortInfo {
    pub lid: u16,
    pub sm_lid: u16,
    pub capability_mask: u32,
    pub local_port: u8,
    pub width_enabled: u8,
    pub width_supported: u8,
    pub width_active: u8,
    pub speed_supported: u8,
    pub state: u8,
    pub phys_state: u8,
    pub lmc: u8,
    pub speed_active: u8,
    pub speed_enabled: u8,
    pub neighbor_mtu: u8,
    pub vl_cap: u8,
    pub mtu_cap: u8,
    pub operational_vls: u8,
    pub speed_ext_active: u8,
    pub speed_ext_supported: u8,
    pub speed_ext_enabled: u8,
}

/// CapabilityMask bit: the port is a subnet manager.
pub const CAP_IS_SM: u32 = 1 << 1;
/// CapabilityMask bit: LinkSpeedExt* fields are valid (FDR and later).
pub const CAP_EXT_SPEEDS: u32 = 1 << 14;

impl SmpPortInfo {
    /// PortState: the IBTA numbering [`PortState`] shares; a number it does not name is
    /// kept as `Other`.
    pub fn port_state(&self) -> PortState {
        PortState::from_number(self.state.into())
            .unwrap_or_else(|| PortState::Other(self.state.to_string()))
    }

    /// PortPhysicalState, as [`PhysState`]; a number it does not name is kept as `Other`.
    pub fn phys_port_state(&self) -> PhysState {
        PhysState::from_number(self.phys_state.into())
            .unwrap_or_else(|| PhysState::Other(self.phys_state.to_string()))
    }

    pub fn decode(d: &[u8]) -> Option<SmpPortInfo> {
        let b = |i: usize| d.get(i).copied();
        Some(SmpPortInfo {
            lid: be16(d, 16)?,
            sm_lid: be16(d, 18)?,
            capability_mask: be32(d, 20)?,
            local_port: b(28)?,
            width_enabled: b(29)?,
            width_supported: b(30)?,
            width_active: b(31)?,
            speed_supported: b(32)? >> 4,
            state: b(32)? & 0x0f,
            phys_state: b(33)? >> 4,
            lmc: b(34)? & 0x07,
            speed_active: b(35)? >> 4,
            speed_enabled: b(35)? & 0x0f,
            neighbor_mtu: b(36)? >> 4,
            vl_cap: b(37)? >> 4,
            mtu_cap: b(41)? & 0x0f,
            operational_vls: b(43)? >> 4,
            speed_ext_active: b(62)? >> 4,
            speed_ext_supported: b(62)? & 0x0f,
            speed_ext_enabled: b(63)? & 0x1f,
        })
    }

    pub fn has_ext_speeds(&self) -> bool {
        self.capability_mask & CAP_EXT_SPEEDS != 0
    }

    /// The active speed, the extended field taking precedence where the port has one.
    pub fn speed(&self) -> Speed {
        if self.has_ext_speeds() && self.speed_ext_active != 0 {
            Speed::from_ext(self.speed_ext_active)
        } else {
            Speed::from_base(self.speed_active)
        }
    }

    /// The fastest speed the port may train at: supported and enabled (the SM can narrow
    /// what is enabled), as the link's two ends negotiate it.
    pub fn max_speed(&self) -> Speed {
        let ext = self.speed_ext_supported & self.speed_ext_enabled;
        let base = self.speed_supported & self.speed_enabled;
        if self.has_ext_speeds() && ext != 0 {
            Speed::from_ext(1 << (7 - (ext & 0x0f).leading_zeros()))
        } else if base != 0 {
            Speed::from_base(1 << (7 - base.leading_zeros()))
        } else {
            Speed::Unknown
        }
    }

    /// The widest width the port may train at (supported and enabled), in lanes.
    pub fn max_width_lanes(&self) -> u8 {
        lanes_max(self.width_supported & self.width_enabled)
    }

    /// The fastest speed the port's hardware supports, whatever is enabled: with
    /// `max_speed`, tells an older HCA from a LinkSpeedEnabled restriction.
    pub fn supported_speed(&self) -> Speed {
        let ext = self.speed_ext_supported & 0x0f;
        if self.has_ext_speeds() && ext != 0 {
            Speed::from_ext(1 << (7 - ext.leading_zeros()))
        } else if self.speed_supported != 0 {
            Speed::from_base(1 << (7 - self.speed_supported.leading_zeros()))
        } else {
            Speed::Unknown
        }
    }

    /// The widest width the port's hardware supports, whatever is enabled, in lanes.
    pub fn supported_width_lanes(&self) -> u8 {
        lanes_max(self.width_supported)
    }
}

/// The name `subnet` prints for a port state, as infiniband-diags' tables spell
/// SmpPortInfo.PortState: NOP to ACTIVE as [`PortState::name`]; anything else (ACTIVE_DEFER
/// included, which these tables do not name) is UNKNOWN.
pub fn port_state_name(s: &PortState) -> &str {
    match s {
        PortState::ActiveDefer | PortState::Other(_) => "UNKNOWN",
        s => s.name(),
    }
}

/// The name `subnet` prints for a physical port state (SmpPortInfo.PortPhysicalState):
/// [`PhysState::name`] except TRAINING for PortConfigurationTraining, and NOP for a number
/// without a name (0 is "no state change").
pub fn phys_state_name(s: &PhysState) -> &str {
    match s {
        PhysState::PortConfigurationTraining => "TRAINING",
        PhysState::Other(_) => "NOP",
        s => s.name(),
    }
}

/// Serializes a port state by [`port_state_name`].
pub fn ser_port_state<S: serde::Serializer>(s: &PortState, ser: S) -> Result<S::Ok, S::Error> {
    ser.serialize_str(port_state_name(s))
}

/// Serializes a physical port state by [`phys_state_name`].
pub fn ser_phys_state<S: serde::Serializer>(s: &PhysState, ser: S) -> Result<S::Ok, S::Error> {
    ser.serialize_str(phys_state_name(s))
}

/// Link width in lanes from one LinkWidthActive code.
pub fn width_lanes(code: u8) -> u8 {
    match code {
        1 => 1,
        2 => 4,
        4 => 8,
        8 => 12,
        16 => 2,
        _ => 0,
    }
}

/// The most lanes among a LinkWidthSupported/Enabled bit set.
pub fn lanes_max(mask: u8) -> u8 {
    [1u8, 2, 4, 8, 16]
        .iter()
        .filter(|bit| mask & **bit != 0)
        .map(|bit| width_lanes(*bit))
        .max()
        .unwrap_or(0)
}

/// Link speed per lane, by its IBA name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub enum Speed {
    Unknown,
    #[serde(rename = "SDR")]
    Sdr,
    #[serde(rename = "DDR")]
    Ddr,
    #[serde(rename = "QDR")]
    Qdr,
    #[serde(rename = "FDR")]
    Fdr,
    #[serde(rename = "EDR")]
    Edr,
    #[serde(rename = "HDR")]
    Hdr,
    #[serde(rename = "NDR")]
    Ndr,
}

impl Speed {
    pub fn from_base(code: u8) -> Speed {
        match code {
            1 => Speed::Sdr,
            2 => Speed::Ddr,
            4 => Speed::Qdr,
            _ => Speed::Unknown,
        }
    }
    pub fn from_ext(code: u8) -> Speed {
        match code {
            1 => Speed::Fdr,
            2 => Speed::Edr,
            4 => Speed::Hdr,
            8 => Speed::Ndr,
            _ => Speed::Unknown,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Speed::Unknown => "?",
            Speed::Sdr => "SDR",
            Speed::Ddr => "DDR",
            Speed::Qdr => "QDR",
            Speed::Fdr => "FDR",
            Speed::Edr => "EDR",
            Speed::Hdr => "HDR",
            Speed::Ndr => "NDR",
        }
    }
}

/// MTU codes (NeighborMTU, MTUCap) in bytes.
pub fn mtu_bytes(code: u8) -> u32 {
    match code {
        1 => 256,
        2 => 512,
        3 => 1024,
        4 => 2048,
        5 => 4096,
        _ => 0,
    }
}

/// VLCap codes as a number of data VLs.
pub fn data_vls(code: u8) -> u8 {
    match code {
        1 => 1,
        2 => 2,
        3 => 4,
        4 => 8,
        5 => 15,
        _ => 0,
    }
}

/// SwitchInfo (0x0012), what discovery reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwitchInfo {
    pub linear_fdb_cap: u16,
    pub linear_fdb_top: u16,
    pub enhanced_port0: bool,
}

impl SwitchInfo {
    pub fn decode(d: &[u8]) -> Option<SwitchInfo> {
        Some(SwitchInfo {
            linear_fdb_cap: be16(d, 0)?,
            linear_fdb_top: be16(d, 6)?,
            enhanced_port0: d.get(16)? & 0x08 != 0,
        })
    }
}

/// SMInfo (0x0020).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SmInfo {
    pub guid: u64,
    pub act_count: u32,
    pub priority: u8,
    pub state: u8,
}

impl SmInfo {
    pub fn decode(d: &[u8]) -> Option<SmInfo> {
        Some(SmInfo {
            guid: be64(d, 0)?,
            act_count: be32(d, 16)?,
            priority: d.get(20)? >> 4,
            state: d.get(20)? & 0x0f,
        })
    }
}

pub fn sm_state_name(v: u8) -> &'static str {
    match v {
        0 => "not-active",
        1 => "discovering",
        2 => "standby",
        3 => "master",
        _ => "unknown",
    }
}

/// PMA PmaCounters (0x0012): the classic 8/16/32-bit error and traffic counters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PmaCounters {
    pub port_select: u8,
    /// (sysfs name, value, width in bits)
    pub values: Vec<(&'static str, u64, u8)>,
}

/// The PmaCounters fields: name (the kernel's sysfs name, so `crate::model::counter` gives the
/// meaning), byte offset, bit offset within that byte from the top,
/// width in bits.
const PORT_COUNTER_FIELDS: &[(&str, usize, u8, u8)] = &[
    ("symbol_error", 4, 0, 16),
    ("link_error_recovery", 6, 0, 8),
    ("link_downed", 7, 0, 8),
    ("port_rcv_errors", 8, 0, 16),
    ("port_rcv_remote_physical_errors", 10, 0, 16),
    ("port_rcv_switch_relay_errors", 12, 0, 16),
    ("port_xmit_discards", 14, 0, 16),
    ("port_xmit_constraint_errors", 16, 0, 8),
    ("port_rcv_constraint_errors", 17, 0, 8),
    ("local_link_integrity_errors", 19, 0, 4),
    ("excessive_buffer_overrun_errors", 19, 4, 4),
    ("VL15_dropped", 22, 0, 16),
    ("port_xmit_data", 24, 0, 32),
    ("port_rcv_data", 28, 0, 32),
    ("port_xmit_packets", 32, 0, 32),
    ("port_rcv_packets", 36, 0, 32),
    ("port_xmit_wait", 40, 0, 32),
];

impl PmaCounters {
    pub fn decode(d: &[u8]) -> Option<PmaCounters> {
        let mut values = Vec::with_capacity(PORT_COUNTER_FIELDS.len());
        for &(name, at, shift_from_top, bits) in PORT_COUNTER_FIELDS {
            let v = match bits {
                32 => u64::from(be32(d, at)?),
                16 => u64::from(be16(d, at)?),
                8 => u64::from(*d.get(at)?),
                _ => {
                    let byte = *d.get(at)?;
                    u64::from((byte >> (8 - shift_from_top - bits)) & ((1u8 << bits) - 1))
                }
            };
            values.push((name, v, bits));
        }
        Some(PmaCounters {
            port_select: *d.get(1)?,
            values,
        })
    }

    #[cfg(test)]
    pub fn get(&self, name: &str) -> Option<u64> {
        self.values
            .iter()
            .find(|(n, _, _)| *n == name)
            .map(|(_, v, _)| *v)
    }
}

/// The PMA's ClassPortInfo CapabilityMask (data bytes 2-3).
pub fn class_port_info_capmask(d: &[u8]) -> Option<u16> {
    be16(d, 2)
}

/// ClassPortInfo CapabilityMask bits: PortCountersExtended is there (with or without the
/// IETF counters).
pub const PM_EXT_WIDTH: u16 = (1 << 9) | (1 << 10);

/// PortCountersExtended (0x001D): the 64-bit data and packet counters, by the kernel's
/// names, at data bytes 8 to 71.
pub fn port_counters_ext(d: &[u8]) -> Option<Vec<(&'static str, u64)>> {
    const NAMES: [&str; 8] = [
        "port_xmit_data",
        "port_rcv_data",
        "port_xmit_packets",
        "port_rcv_packets",
        "unicast_xmit_packets",
        "unicast_rcv_packets",
        "multicast_xmit_packets",
        "multicast_rcv_packets",
    ];
    NAMES
        .iter()
        .enumerate()
        .map(|(i, n)| Some((*n, be64(d, 8 + 8 * i)?)))
        .collect()
}

/// The request data of a PmaCounters Get: which port.
pub fn port_counters_select(port: u8) -> [u8; 4] {
    [0, port, 0, 0]
}

/// The request data of a PmaCounters Set that clears every counter of a port.
pub fn port_counters_clear(port: u8) -> [u8; 4] {
    [0, port, 0xff, 0xff]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reply with `data` placed at the attribute offset.
    fn reply(class: u8, attr: u16, data: &[u8]) -> Vec<u8> {
        let mut m = vec![0u8; MAD_SIZE];
        m[0] = 1;
        m[1] = class;
        m[3] = METHOD_GET_RESP;
        m[16..18].copy_from_slice(&attr.to_be_bytes());
        m[64..64 + data.len()].copy_from_slice(data);
        m
    }

    /// Typing the states keeps the names `subnet` has always printed for every 4-bit value.
    #[test]
    fn state_names_are_the_subnet_tables() {
        let states = ["NOP", "DOWN", "INIT", "ARMED", "ACTIVE"];
        let phys = [
            "NOP",
            "SLEEP",
            "POLLING",
            "DISABLED",
            "TRAINING",
            "LINK_UP",
            "LINK_ERROR_RECOVERY",
            "PHY_TEST",
        ];
        for v in 0u8..16 {
            let p = SmpPortInfo {
                state: v,
                phys_state: v,
                ..SmpPortInfo::decode(&[0; 64]).unwrap()
            };
            let want = states.get(usize::from(v)).copied().unwrap_or("UNKNOWN");
            assert_eq!(port_state_name(&p.port_state()), want, "{v}");
            let want = phys.get(usize::from(v)).copied().unwrap_or("NOP");
            assert_eq!(phys_state_name(&p.phys_port_state()), want, "{v}");
        }
    }

    #[test]
    fn a_directed_route_get_is_laid_out_as_iba_table_151() {
        let m = encode_request(
            CLASS_SMP_DR,
            METHOD_GET,
            0x1122_3344_5566_7788,
            ATTR_PORT_INFO,
            3,
            &DrPath::Directed(vec![1, 7, 12]),
            &[],
        )
        .unwrap();
        assert_eq!(&m[0..4], &[1, 0x81, 1, 0x01]);
        assert_eq!(&m[4..6], &[0, 0], "status and D bit clear on a request");
        assert_eq!((m[6], m[7]), (0, 3), "hop pointer 0, hop count 3");
        assert_eq!(&m[8..16], &0x1122_3344_5566_7788u64.to_be_bytes());
        assert_eq!(&m[16..18], &[0x00, 0x15]);
        assert_eq!(&m[20..24], &[0, 0, 0, 3]);
        assert_eq!(&m[32..36], &[0xff, 0xff, 0xff, 0xff], "DrSLID, DrDLID");
        assert_eq!(&m[128..132], &[0, 1, 7, 12], "InitialPath[0] unused");
        assert!(m[132..].iter().all(|b| *b == 0));
    }

    #[test]
    fn a_route_longer_than_63_hops_or_a_lid_for_a_dr_smp_is_refused() {
        let long = DrPath::Directed(vec![1; 64]);
        assert!(
            encode_request(CLASS_SMP_DR, METHOD_GET, 1, ATTR_NODE_INFO, 0, &long, &[]).is_none()
        );
        assert!(encode_request(
            CLASS_SMP_DR,
            METHOD_GET,
            1,
            ATTR_NODE_INFO,
            0,
            &DrPath::Lid(4),
            &[]
        )
        .is_none());
    }

    #[test]
    fn a_pma_get_carries_the_port_select_at_data_byte_1() {
        let m = encode_request(
            CLASS_PERF,
            METHOD_GET,
            9,
            ATTR_PORT_COUNTERS,
            0,
            &DrPath::Lid(6),
            &port_counters_select(17),
        )
        .unwrap();
        assert_eq!(&m[0..4], &[1, 0x04, 1, 0x01]);
        assert_eq!(m[65], 17);
        assert_eq!(&m[128..132], &[0, 0, 0, 0], "no directed path on a PMA MAD");
    }

    #[test]
    fn header_decodes_status_and_masks_the_direction_bit() {
        let mut m = reply(CLASS_SMP_DR, ATTR_NODE_INFO, &[]);
        m[4] = 0x80;
        m[5] = 0x1c;
        m[8..16].copy_from_slice(&42u64.to_be_bytes());
        let h = Header::decode(&m).unwrap();
        assert_eq!(h.method, METHOD_GET_RESP);
        assert_eq!(h.status_code(), 0x1c);
        assert_eq!(h.tid, 42);
        assert_eq!(h.attr_id, ATTR_NODE_INFO);
    }

    #[test]
    fn node_info_fields_sit_at_their_iba_offsets() {
        let mut d = [0u8; 40];
        d[0] = 1;
        d[1] = 1;
        d[2] = 2; // switch
        d[3] = 36;
        d[4..12].copy_from_slice(&0xaaaa_0000_0000_0001u64.to_be_bytes());
        d[12..20].copy_from_slice(&0xec0d_9a03_00ec_8240u64.to_be_bytes());
        d[20..28].copy_from_slice(&0xec0d_9a03_00ec_8240u64.to_be_bytes());
        d[28..30].copy_from_slice(&8u16.to_be_bytes());
        d[30..32].copy_from_slice(&0xcf08u16.to_be_bytes());
        d[32..36].copy_from_slice(&0xa0u32.to_be_bytes());
        d[36] = 17;
        d[37..40].copy_from_slice(&[0x00, 0x02, 0xc9]);
        let n = NodeInfo::decode(&d).unwrap();
        assert_eq!(n.node_type, MadNodeType::Switch);
        assert_eq!(n.num_ports, 36);
        assert_eq!(n.node_guid, 0xec0d_9a03_00ec_8240);
        assert_eq!(n.device_id, 0xcf08);
        assert_eq!(n.local_port, 17);
        assert_eq!(n.vendor_id, 0x0002c9);
    }

    #[test]
    fn port_info_reads_lids_states_widths_and_extended_speeds() {
        let mut d = [0u8; 64];
        d[16..18].copy_from_slice(&7u16.to_be_bytes());
        d[18..20].copy_from_slice(&1u16.to_be_bytes());
        d[20..24].copy_from_slice(&(CAP_EXT_SPEEDS | CAP_IS_SM).to_be_bytes());
        d[28] = 3;
        d[29] = 0x03;
        d[30] = 0x03; // 1X and 4X
        d[31] = 0x02; // 4X active
        d[32] = (0x7 << 4) | 4; // SDR|DDR|QDR supported, ACTIVE
        d[33] = (5 << 4) | 2; // LinkUp
        d[34] = 0x02; // LMC 2
        d[35] = (4 << 4) | 7; // QDR active
        d[36] = (5 << 4) | 1; // neighbour MTU 4096
        d[37] = 4 << 4; // VL0-7
        d[41] = 5; // MTU cap 4096
        d[43] = 4 << 4;
        d[62] = (2 << 4) | 0x3; // EDR active, FDR|EDR supported
        d[63] = 0x03;
        let p = SmpPortInfo::decode(&d).unwrap();
        assert_eq!((p.lid, p.sm_lid, p.local_port, p.lmc), (7, 1, 3, 2));
        assert_eq!(p.port_state(), PortState::Active);
        assert_eq!(p.phys_port_state(), PhysState::LinkUp);
        assert_eq!(width_lanes(p.width_active), 4);
        assert_eq!(p.max_width_lanes(), 4);
        assert_eq!(p.speed(), Speed::Edr, "the extended field wins");
        assert_eq!(p.max_speed(), Speed::Edr);
        assert_eq!(mtu_bytes(p.neighbor_mtu), 4096);
        assert_eq!(mtu_bytes(p.mtu_cap), 4096);
        assert_eq!(data_vls(p.vl_cap), 8);
        // Without the capability bit the extended fields are not read.
        d[20..24].copy_from_slice(&0u32.to_be_bytes());
        let p = SmpPortInfo::decode(&d).unwrap();
        assert_eq!(p.speed(), Speed::Qdr);
        assert_eq!(p.max_speed(), Speed::Qdr);
    }

    #[test]
    fn sm_info_priority_and_state_share_a_byte() {
        let mut d = [0u8; 24];
        d[0..8].copy_from_slice(&0x0020_0000u64.to_be_bytes());
        d[16..20].copy_from_slice(&116u32.to_be_bytes());
        d[20] = (14 << 4) | 3;
        let s = SmInfo::decode(&d).unwrap();
        assert_eq!(
            (s.guid, s.act_count, s.priority, s.state),
            (0x200000, 116, 14, 3)
        );
        assert_eq!(sm_state_name(s.state), "master");
    }

    #[test]
    fn port_counters_fields_and_widths_match_perfquery() {
        let mut d = [0u8; 44];
        d[1] = 5;
        d[4..6].copy_from_slice(&77u16.to_be_bytes());
        d[6] = 3;
        d[7] = 255;
        d[8..10].copy_from_slice(&0xffffu16.to_be_bytes());
        d[14..16].copy_from_slice(&9u16.to_be_bytes());
        d[19] = 0xa5;
        d[40..44].copy_from_slice(&0xdead_beefu32.to_be_bytes());
        let c = PmaCounters::decode(&d).unwrap();
        assert_eq!(c.port_select, 5);
        assert_eq!(c.get("symbol_error"), Some(77));
        assert_eq!(c.get("link_error_recovery"), Some(3));
        assert_eq!(c.get("link_downed"), Some(255));
        assert_eq!(c.get("port_rcv_errors"), Some(0xffff));
        assert_eq!(c.get("port_xmit_discards"), Some(9));
        assert_eq!(c.get("local_link_integrity_errors"), Some(0xa));
        assert_eq!(c.get("excessive_buffer_overrun_errors"), Some(0x5));
        assert_eq!(c.get("port_xmit_wait"), Some(0xdead_beef));
        let widths: Vec<u8> = c.values.iter().map(|v| v.2).collect();
        assert_eq!(widths[..3], [16, 8, 8]);
    }

    #[test]
    fn port_counters_extended_holds_eight_64_bit_counters_from_byte_8() {
        let mut d = [0u8; 72];
        d[8..16].copy_from_slice(&0x1_0000_0000u64.to_be_bytes());
        d[64..72].copy_from_slice(&7u64.to_be_bytes());
        let c = port_counters_ext(&d).unwrap();
        assert_eq!(c[0], ("port_xmit_data", 0x1_0000_0000));
        assert_eq!(c[7], ("multicast_rcv_packets", 7));
        assert!(port_counters_ext(&d[..71]).is_none());
        let mut cpi = [0u8; 4];
        cpi[2..4].copy_from_slice(&0x1300u16.to_be_bytes());
        assert_eq!(class_port_info_capmask(&cpi), Some(0x1300));
        assert_ne!(0x1300 & PM_EXT_WIDTH, 0);
    }

    #[test]
    fn node_description_stops_at_the_first_nul() {
        let mut d = [0u8; 64];
        d[..12].copy_from_slice(b"node042 HCA-");
        assert_eq!(node_description(&d).unwrap(), "node042 HCA-");
        assert!(node_description(&d[..10]).is_none());
    }

    #[test]
    fn speeds_and_widths_name_as_ibnetdiscover_does() {
        assert_eq!(Speed::from_base(2).name(), "DDR");
        assert_eq!(Speed::from_ext(8).name(), "NDR");
        assert_eq!(width_lanes(1), 1);
        assert_eq!(lanes_max(0x0b), 12);
    }

    /// A small xorshift generator: the property below needs many arbitrary buffers, and a
    /// fixed seed keeps a failure reproducible.
    fn xorshift(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    #[test]
    fn no_reply_of_any_length_or_content_makes_a_decoder_panic() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for round in 0..20_000 {
            let len = (xorshift(&mut seed) % 300) as usize;
            let mut buf: Vec<u8> = (0..len).map(|_| xorshift(&mut seed) as u8).collect();
            if round % 3 == 0 {
                // Half-valid replies: a real header with garbage after it.
                buf.resize(len.max(24), 0);
                buf[1] = [CLASS_SMP_DR, CLASS_PERF, CLASS_SMP_LID][(round / 3) % 3];
            }
            let _ = Header::decode(&buf).map(|h| h.status_code());
            let d = data(&buf).unwrap_or(&buf);
            for slice in [&buf[..], d] {
                let _ = NodeInfo::decode(slice);
                let _ = node_description(slice);
                if let Some(p) = SmpPortInfo::decode(slice) {
                    let _ = (p.speed(), p.max_speed(), p.max_width_lanes());
                    let _ = (mtu_bytes(p.mtu_cap), data_vls(p.vl_cap));
                    let _ = (
                        port_state_name(&p.port_state()),
                        phys_state_name(&p.phys_port_state()),
                    );
                }
                let _ = SwitchInfo::decode(slice);
                let _ = SmInfo::decode(slice).map(|s| sm_state_name(s.state));
                let _ = PmaCounters::decode(slice);
                let _ = port_counters_ext(slice);
                let _ = class_port_info_capmask(slice);
            }
        }
    }
}
