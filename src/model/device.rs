//! The plain data every command works on, whichever source (sysfs or verbs) filled it.
//! Kernel enums keep an `Other` catch-all so an unknown value never fails a parse.
//! Field names follow iproute2's `rdma -j` where it has one, else ibv_devinfo's, except
//! the device, which is `device` in every command's JSON; every key is documented in
//! docs/json.md.

use std::fmt;
use std::path::PathBuf;

use serde::{Serialize, Serializer};

use crate::model::gid::Gid;

/// `gid_attrs/types/N`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum GidType {
    /// "IB/RoCE v1": IB on an InfiniBand port, RoCE v1 on Ethernet.
    #[serde(rename = "IB")]
    Ib,
    #[serde(rename = "RoCE v1")]
    RoceV1,
    #[serde(rename = "RoCE v2")]
    RoceV2,
    #[serde(untagged)]
    Other(String),
}

impl fmt::Display for GidType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            GidType::Ib => "IB",
            GidType::RoceV1 => "RoCE v1",
            GidType::RoceV2 => "RoCE v2",
            GidType::Other(s) => s,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum LinkLayer {
    InfiniBand,
    Ethernet,
    #[serde(untagged)]
    Other(String),
}

impl fmt::Display for LinkLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LinkLayer::InfiniBand => "InfiniBand",
            LinkLayer::Ethernet => "Ethernet",
            LinkLayer::Other(s) => s,
        })
    }
}

/// `node_type`: "1: CA". The number is the kernel's `enum rdma_node_type`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeType {
    Ca,
    Switch,
    Router,
    Rnic,
    Usnic,
    UsnicUdp,
    Unspecified,
    Other(String),
}

impl NodeType {
    pub fn name(&self) -> &str {
        match self {
            NodeType::Ca => "CA",
            NodeType::Switch => "SWITCH",
            NodeType::Router => "ROUTER",
            NodeType::Rnic => "RNIC",
            NodeType::Usnic => "USNIC",
            NodeType::UsnicUdp => "USNIC_UDP",
            NodeType::Unspecified => "UNSPECIFIED",
            NodeType::Other(s) => s,
        }
    }

    /// An iWARP RNIC brings an RC QP up only through rdma_cm (the iWARP CM runs the MPA
    /// handshake over the TCP connection it opens): modify QP to RTR and RTS with an
    /// address from an out-of-band exchange, as ibv_rc_pingpong does, cannot work. Its
    /// one GID is the netdev's MAC, not an address, so no RoCE GID rule applies to it.
    pub fn is_iwarp(&self) -> bool {
        *self == NodeType::Rnic
    }

    /// The transport ibv_devinfo derives from the node type (RoCE is InfiniBand transport).
    pub fn transport(&self) -> &'static str {
        match self {
            NodeType::Ca | NodeType::Switch | NodeType::Router => "InfiniBand",
            NodeType::Rnic => "iWARP",
            NodeType::Usnic | NodeType::UsnicUdp => "usNIC",
            NodeType::Unspecified | NodeType::Other(_) => "unknown",
        }
    }
}

impl Serialize for NodeType {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// `ports/N/state`: "4: ACTIVE". Names as iproute2 `rdma link` prints them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PortState {
    Nop,
    Down,
    Init,
    Armed,
    Active,
    ActiveDefer,
    /// The kernel's text, for a value this build does not know.
    Other(String),
}

impl PortState {
    pub fn name(&self) -> &str {
        match self {
            PortState::Nop => "NOP",
            PortState::Down => "DOWN",
            PortState::Init => "INIT",
            PortState::Armed => "ARMED",
            PortState::Active => "ACTIVE",
            PortState::ActiveDefer => "ACTIVE_DEFER",
            PortState::Other(s) => s,
        }
    }

    /// The IBTA number: sysfs `ports/N/state`'s "4:", `ibv_port_state`, and
    /// SmpPortInfo.PortState all count the same way. None for a number this build does
    /// not name.
    pub fn from_number(n: u32) -> Option<PortState> {
        Some(match n {
            0 => PortState::Nop,
            1 => PortState::Down,
            2 => PortState::Init,
            3 => PortState::Armed,
            4 => PortState::Active,
            5 => PortState::ActiveDefer,
            _ => return None,
        })
    }

    /// The IBTA number back ([`PortState::from_number`]'s inverse); None for `Other`.
    pub fn number(&self) -> Option<u32> {
        (0..=5).find(|n| PortState::from_number(*n).as_ref() == Some(self))
    }

    /// sysfs `ports/N/state` ("4: ACTIVE"): the number decides, as the label differs
    /// between drivers and kernels; text without a known number is kept as `Other`.
    pub fn from_sysfs(text: &str) -> PortState {
        text.split_once(':')
            .and_then(|(n, _)| n.trim().parse().ok())
            .and_then(PortState::from_number)
            .unwrap_or_else(|| PortState::Other(text.trim().to_string()))
    }

    /// A name as [`PortState::name`] writes it, read back (a peer's notice, a manifest);
    /// any other text is kept as `Other`.
    pub fn from_name(text: &str) -> PortState {
        let text = text.trim();
        [
            PortState::Nop,
            PortState::Down,
            PortState::Init,
            PortState::Armed,
            PortState::Active,
            PortState::ActiveDefer,
        ]
        .into_iter()
        .find(|s| s.name().eq_ignore_ascii_case(text))
        .unwrap_or_else(|| PortState::Other(text.to_string()))
    }

    /// ACTIVE: the port can carry traffic.
    pub fn is_active(&self) -> bool {
        *self == PortState::Active
    }
}

/// `ports/N/phys_state`: "5: LinkUp". Names as iproute2 `rdma link` prints them, except
/// 4, which iproute2 calls ARMED but the IBTA spec calls PortConfigurationTraining.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PhysState {
    Sleep,
    Polling,
    Disabled,
    PortConfigurationTraining,
    LinkUp,
    LinkErrorRecovery,
    PhyTest,
    Other(String),
}

impl PhysState {
    pub fn name(&self) -> &str {
        match self {
            PhysState::Sleep => "SLEEP",
            PhysState::Polling => "POLLING",
            PhysState::Disabled => "DISABLED",
            PhysState::PortConfigurationTraining => "PORT_CONFIGURATION_TRAINING",
            PhysState::LinkUp => "LINK_UP",
            PhysState::LinkErrorRecovery => "LINK_ERROR_RECOVERY",
            PhysState::PhyTest => "PHY_TEST",
            PhysState::Other(s) => s,
        }
    }

    /// The IBTA number: sysfs `ports/N/phys_state`'s "5:", ibv_port_attr's `phys_state`
    /// and SmpPortInfo.PortPhysicalState. None for a number this build does not name.
    pub fn from_number(n: u32) -> Option<PhysState> {
        Some(match n {
            1 => PhysState::Sleep,
            2 => PhysState::Polling,
            3 => PhysState::Disabled,
            4 => PhysState::PortConfigurationTraining,
            5 => PhysState::LinkUp,
            6 => PhysState::LinkErrorRecovery,
            7 => PhysState::PhyTest,
            _ => return None,
        })
    }
}

/// A netdev's operational state, RFC 2863's ifOperStatus as the kernel keeps it: sysfs
/// `class/net/NETDEV/operstate` spells it, rtnetlink's IFLA_OPERSTATE numbers it
/// (`IF_OPER_*`); both are read into this one type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OperState {
    /// The driver does not report carrier (loopback, many virtual links): with IFF_UP
    /// set such a link carries traffic, and iproute2 shows it as UNKNOWN.
    Unknown,
    NotPresent,
    Down,
    /// No carrier: the cable, the switch port, a veth's peer or a VLAN's parent is down.
    LowerLayerDown,
    Testing,
    Dormant,
    Up,
    /// The kernel's text, for a value this build does not know.
    Other(String),
}

impl OperState {
    pub fn name(&self) -> &str {
        match self {
            OperState::Unknown => "unknown",
            OperState::NotPresent => "notpresent",
            OperState::Down => "down",
            OperState::LowerLayerDown => "lowerlayerdown",
            OperState::Testing => "testing",
            OperState::Dormant => "dormant",
            OperState::Up => "up",
            OperState::Other(s) => s,
        }
    }

    /// sysfs `operstate`'s text (any case: iproute2 prints it upper-case).
    pub fn parse(text: &str) -> OperState {
        let text = text.trim();
        [
            OperState::Unknown,
            OperState::NotPresent,
            OperState::Down,
            OperState::LowerLayerDown,
            OperState::Testing,
            OperState::Dormant,
            OperState::Up,
        ]
        .into_iter()
        .find(|s| s.name().eq_ignore_ascii_case(text))
        .unwrap_or_else(|| OperState::Other(text.to_string()))
    }

    /// The uapi's `IF_OPER_*` number (IFLA_OPERSTATE).
    pub fn from_number(n: u8) -> OperState {
        match n {
            0 => OperState::Unknown,
            1 => OperState::NotPresent,
            2 => OperState::Down,
            3 => OperState::LowerLayerDown,
            4 => OperState::Testing,
            5 => OperState::Dormant,
            6 => OperState::Up,
            n => OperState::Other(n.to_string()),
        }
    }

    /// Administratively up but without carrier: fixed at the other end of the link.
    pub fn no_carrier(&self) -> bool {
        matches!(self, OperState::LowerLayerDown | OperState::Dormant)
    }
}

/// Whether a netdev carries traffic: the one rule every command asks. `up` does, and so
/// does `unknown` (a driver without carrier reporting) unless IFF_UP is known to be
/// clear; anything else does not. `admin_up` is IFF_UP when it was read (sysfs `flags`,
/// the rtnetlink header), None when not (a captured tree without `flags`: the kernel
/// reports `down` for a netdev without IFF_UP, so `unknown` alone still means up).
pub fn carries_traffic(operstate: &OperState, admin_up: Option<bool>) -> bool {
    admin_up != Some(false) && matches!(operstate, OperState::Up | OperState::Unknown)
}

macro_rules! serialize_by_name {
    ($($t:ty),*) => {$(
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    )*};
}
serialize_by_name!(PortState, PhysState, OperState);

/// Whether an RDMA device is Soft-RoCE (rxe), whose RoCE v2 goes through this host's IP
/// stack: the one rule, on what sysfs shows of `class/infiniband/NAME`. A device bound to
/// a driver (`device/driver`) is hardware; rxe has no parent device and names its netdev
/// in `parent` (siw has neither); rxe keeps `node_desc` "rxe" when renamed (`rdma dev set
/// rxe0 name roce7`); the name is the last resort, for a tree that recorded none of these.
pub fn is_soft_roce(name: &str, driver_link: bool, parent: bool, node_desc: Option<&str>) -> bool {
    if driver_link {
        return false;
    }
    parent || node_desc.map(str::trim) == Some("rxe") || name.starts_with("rxe")
}

/// `ports/N/rate`: "100 Gb/sec (4X EDR)".
#[derive(Debug, Clone, PartialEq)]
pub struct Rate {
    /// The kernel's text, unchanged.
    pub text: String,
    pub gbps: Option<f64>,
    /// "4X"
    pub width: Option<String>,
    /// "EDR"
    pub speed: Option<String>,
}

/// A 64-bit GUID, printed as sysfs and ibv_devinfo do: `fcc2:10ff:fefe:2b7e`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Guid(pub u64);

impl fmt::Display for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0;
        write!(
            f,
            "{:04x}:{:04x}:{:04x}:{:04x}",
            (v >> 48) & 0xffff,
            (v >> 32) & 0xffff,
            (v >> 16) & 0xffff,
            v & 0xffff
        )
    }
}

impl fmt::Debug for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Guid({self})")
    }
}

impl Serialize for Guid {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// One populated slot of a port's P_Key table. The high bit is full membership; 0xffff is
/// the default partition, 0x7fff its limited-member form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PkeyEntry {
    pub index: u32,
    #[serde(serialize_with = "ser_pkey")]
    pub pkey: u16,
}

fn ser_pkey<S: Serializer>(pkey: &u16, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("0x{pkey:04x}"))
}

impl std::fmt::Display for PkeyEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[{}] 0x{:04x}", self.index, self.pkey)
    }
}

/// One populated (or, with `--all`, empty) slot of a port's GID table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GidEntry {
    pub index: u32,
    pub gid: Gid,
    /// None when `gid_attrs/types/N` is missing or unreadable.
    #[serde(rename = "type")]
    pub gid_type: Option<GidType>,
    /// The netdev from `gid_attrs/ndevs/N`; None on InfiniBand or when unreadable.
    pub netdev: Option<String>,
}

/// `class/net/<name>/`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Netdev {
    #[serde(rename = "netdev")]
    pub name: String,
    /// "up", "down", "lowerlayerdown", ...
    pub operstate: Option<OperState>,
    /// IFF_UP from `flags`; None when the file is missing (older captured trees).
    #[serde(skip)]
    pub admin_up: Option<bool>,
    pub mtu: Option<u32>,
    /// The link-layer (MAC) address.
    pub address: Option<String>,
}

impl Netdev {
    /// [`carries_traffic`] for this netdev; false when its operstate was not read.
    pub fn carries_traffic(&self) -> bool {
        self.operstate
            .as_ref()
            .is_some_and(|o| carries_traffic(o, self.admin_up))
    }
}

/// Where a port's netdev was found, so a reader can judge how sure the mapping is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum NetdevSource {
    /// `gid_attrs/ndevs/N` of the port's first populated GID (index 0 on a healthy port):
    /// the netdev the kernel itself associates with the default GID.
    #[serde(rename = "gid_attrs/ndevs")]
    GidNdevs,
    /// `device/net/*` of the PCI function (mlx4/mlx5, IPoIB), matched to the port by
    /// `dev_port` when there are several.
    #[serde(rename = "device/net")]
    DeviceNet,
    /// `parent`: the netdev a software device (rxe, siw) was created on.
    #[serde(rename = "parent")]
    Parent,
}

/// A file that exists but could not be read (not a missing file: those are just absent).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReadProblem {
    pub path: PathBuf,
    pub error: String,
}

/// Whether libibverbs answered for a device or port, and if not, why. sysfs has no RDMA
/// MTU (and rxe leaves `fw_ver` empty there), so the inventory says where a value is
/// missing because verbs were not asked, rather than leaving a bare null to guess at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VerbsStatus {
    pub available: bool,
    /// Why not: a captured tree, no libibverbs, a device it does not list, a failed query.
    pub reason: Option<String>,
}

impl VerbsStatus {
    pub fn answered() -> VerbsStatus {
        VerbsStatus {
            available: true,
            reason: None,
        }
    }

    pub fn unavailable(reason: impl Into<String>) -> VerbsStatus {
        VerbsStatus {
            available: false,
            reason: Some(reason.into()),
        }
    }

    /// What a sysfs read starts with, until a command asks libibverbs.
    pub fn not_asked() -> VerbsStatus {
        VerbsStatus::unavailable("not asked: only sysfs was read")
    }
}

/// One port of a device, as `ports/N/` describes it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Port {
    pub device: String,
    #[serde(rename = "port")]
    pub number: u32,
    pub state: Option<PortState>,
    #[serde(rename = "physical_state")]
    pub phys_state: Option<PhysState>,
    #[serde(serialize_with = "ser_rate_text")]
    pub rate: Option<Rate>,
    pub link_layer: Option<LinkLayer>,
    pub lid: Option<u32>,
    pub sm_lid: Option<u32>,
    pub lmc: Option<u8>,
    pub sm_sl: Option<u8>,
    #[serde(rename = "port_cap_flags")]
    pub cap_mask: Option<u32>,
    /// The port's netdev name (RoCE: the Ethernet interface; IB: IPoIB, if any).
    #[serde(serialize_with = "ser_netdev_name")]
    pub netdev: Option<Netdev>,
    pub netdev_source: Option<NetdevSource>,
    /// Every netdev the populated GID table refers to (VLANs and other uppers included).
    pub gid_netdevs: Vec<String>,
    /// Populated GID slots, in index order. Not in the `ports` JSON; `gids` prints them.
    #[serde(skip)]
    pub gids: Vec<GidEntry>,
    /// The RDMA MTUs in bytes, from `ibv_query_port` (ibv_devinfo's `active_mtu` and
    /// `max_mtu`); the kernel does not expose them in sysfs, so None until verbs answer.
    pub active_mtu: Option<u32>,
    pub max_mtu: Option<u32>,
    /// Whether `active_mtu` and `max_mtu` came from verbs, and why not.
    pub verbs: VerbsStatus,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub read_problems: Vec<ReadProblem>,
    /// The port's device is Soft-RoCE ([`is_soft_roce`]).
    #[serde(skip)]
    pub soft_roce: bool,
}

fn ser_rate_text<S: Serializer>(rate: &Option<Rate>, s: S) -> Result<S::Ok, S::Error> {
    match rate {
        Some(r) => s.serialize_str(&r.text),
        None => s.serialize_none(),
    }
}

fn ser_netdev_name<S: Serializer>(nd: &Option<Netdev>, s: S) -> Result<S::Ok, S::Error> {
    match nd {
        Some(n) => s.serialize_str(&n.name),
        None => s.serialize_none(),
    }
}

/// One RDMA device, `class/infiniband/<name>/`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Device {
    /// `device` in JSON, the one key every command uses for a device.
    #[serde(rename = "device")]
    pub name: String,
    pub node_type: Option<NodeType>,
    pub node_guid: Option<Guid>,
    pub sys_image_guid: Option<Guid>,
    /// As libibverbs reports it (`ibv_query_device`) when verbs answer, else sysfs
    /// `fw_ver`; None when the source has none (rxe's sysfs `fw_ver` is empty, while
    /// libibverbs says `0.0.0`).
    pub fw_ver: Option<String>,
    pub node_desc: Option<String>,
    pub hca_type: Option<String>,
    pub board_id: Option<String>,
    #[serde(rename = "hw_ver")]
    pub hw_rev: Option<String>,
    /// Kernel driver bound to the parent device (`device/driver`), e.g. mlx5_core.
    pub driver: Option<String>,
    /// `uverbsN` from `class/infiniband_verbs/*/ibdev`: the /dev/infiniband node.
    pub uverbs: Option<String>,
    /// Left out of the derived JSON: `render::inventory` prints each port with the
    /// values derived from it (rate parts, netdev MTU and state).
    #[serde(skip)]
    pub ports: Vec<Port>,
    /// Whether `fw_ver` came from verbs, and why not.
    pub verbs: VerbsStatus,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub read_problems: Vec<ReadProblem>,
    /// The kernel is removing the device (libibverbs no longer lists it, sysfs does); set
    /// where verbs were asked. The inventory's notes word it.
    #[serde(skip)]
    pub removal: Option<Box<DeviceRemoval>>,
}

impl Device {
    /// Distinct link layers of the ports, in port order.
    pub fn link_layers(&self) -> Vec<&LinkLayer> {
        let mut out: Vec<&LinkLayer> = Vec::new();
        for ll in self.ports.iter().filter_map(|p| p.link_layer.as_ref()) {
            if !out.contains(&ll) {
                out.push(ll);
            }
        }
        out
    }
}

/// A device sysfs still lists while the kernel removes it (`rdma link delete`, a driver
/// unbind or module unload): the core has unregistered it, uverbs has deleted its node and
/// waits, in `ib_uverbs_remove_one`, until every process that opened the node closes it.
/// Measured on 6.1: `rdma dev` and `rdma res` drop the device at once, so the holders come
/// from /proc (their fd links to the deleted node).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceRemoval {
    pub device: String,
    /// `class/infiniband/DEV`, which is still there.
    pub sysfs_path: String,
    /// Where ib_uverbs was seen loaded (`module/ib_uverbs`).
    pub uverbs_module: String,
    /// `class/infiniband_verbs`, where no entry names the device any more.
    pub uverbs_class: String,
    /// The devices the RDMA netlink dump lists (the device is not among them); Err says
    /// why the kernel was not asked or did not answer.
    pub netlink: Result<Vec<String>, String>,
    /// The processes holding a deleted uverbs node.
    pub holders: Vec<NodeHolder>,
    /// How the holders were looked for.
    pub scan: HolderScan,
    /// Other devices being removed at the same time: a deleted node does not say which
    /// device it was, so with more than one the holders are not attributed.
    pub also_removing: Vec<String>,
}

/// A process holding a uverbs node open, as its fd link shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeHolder {
    pub pid: u32,
    pub comm: String,
    /// `/proc/PID/cmdline` with spaces for NULs; empty when unreadable.
    pub cmdline: String,
    /// `/proc/PID/fd/N -> TARGET`.
    pub link: String,
}

/// The bounded walk over /proc/*/fd that found the holders.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HolderScan {
    /// Processes whose fd directory was read.
    pub processes: usize,
    /// Processes whose fd directory could not be read (another user's, without privilege).
    pub unreadable: usize,
    /// The walk stopped at its deadline before the end of /proc.
    pub timed_out: bool,
    /// The deadline, in milliseconds.
    pub limit_ms: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operstate_spelling_parses_and_prints_back() {
        for (text, n, want) in [
            ("unknown", 0, OperState::Unknown),
            ("notpresent", 1, OperState::NotPresent),
            ("down", 2, OperState::Down),
            ("lowerlayerdown", 3, OperState::LowerLayerDown),
            ("testing", 4, OperState::Testing),
            ("dormant", 5, OperState::Dormant),
            ("up", 6, OperState::Up),
        ] {
            assert_eq!(OperState::parse(text), want, "{text}");
            assert_eq!(
                OperState::parse(&format!("{}\n", text.to_uppercase())),
                want
            );
            assert_eq!(OperState::from_number(n), want, "{n}");
            assert_eq!(want.name(), text);
        }
        assert_eq!(OperState::parse("weird"), OperState::Other("weird".into()));
        assert_eq!(OperState::from_number(9), OperState::Other("9".into()));
    }

    #[test]
    fn carries_traffic_truth_table() {
        use OperState::*;
        for (oper, admin, want) in [
            (Up, Some(true), true),
            (Up, None, true),
            (Up, Some(false), false),
            (Unknown, Some(true), true),
            (Unknown, None, true),
            (Unknown, Some(false), false),
            (Down, Some(true), false),
            (Down, None, false),
            (LowerLayerDown, Some(true), false),
            (Dormant, Some(true), false),
            (Testing, Some(true), false),
            (NotPresent, Some(true), false),
            (Other("x".into()), Some(true), false),
        ] {
            assert_eq!(carries_traffic(&oper, admin), want, "{oper:?} {admin:?}");
        }
    }

    #[test]
    fn port_states_by_number_name_and_sysfs_text() {
        for (n, name) in [
            (0, "NOP"),
            (1, "DOWN"),
            (2, "INIT"),
            (3, "ARMED"),
            (4, "ACTIVE"),
            (5, "ACTIVE_DEFER"),
        ] {
            let s = PortState::from_number(n).unwrap();
            assert_eq!(s.name(), name);
            assert_eq!(PortState::from_name(name), s);
            assert_eq!(PortState::from_sysfs(&format!("{n}: {name}\n")), s);
        }
        assert!(PortState::from_sysfs("4: ACTIVE").is_active());
        assert!(!PortState::from_sysfs("1: DOWN").is_active());
        assert_eq!(PortState::from_number(9), None);
        assert_eq!(PortState::from_sysfs("odd"), PortState::Other("odd".into()));
        assert_eq!(PhysState::from_number(5), Some(PhysState::LinkUp));
        assert_eq!(PhysState::from_number(0), None);
    }

    #[test]
    fn soft_roce_is_decided_once() {
        // A renamed rxe device: no driver link, node_desc still "rxe".
        assert!(is_soft_roce("roce7", false, false, Some("rxe\n")));
        // A live rxe device shows `parent`.
        assert!(is_soft_roce("roce7", false, true, None));
        // A tree that recorded neither: the name.
        assert!(is_soft_roce("rxe0", false, false, None));
        // Hardware: a driver link, whatever the name.
        assert!(!is_soft_roce("mlx5_0", true, false, Some("host mlx5_0")));
        assert!(!is_soft_roce("rxe_named_mlx", true, false, None));
        assert!(!is_soft_roce("mlx5_1", false, false, Some("node mlx5_1")));
        // siw: no driver link, no parent, its own node_desc.
        assert!(!is_soft_roce(
            "siw0",
            false,
            false,
            Some("Software iWARP stack")
        ));
    }
}
