//! Facts gathered for the rules: what sysfs, rtnetlink, /proc and the exchange said about
//! a failed run. Gatherers fill these in; `diagnose` reads them. A leaf below both.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use crate::model::device::{GidEntry, GidType, LinkLayer, OperState, PhysState, Port, PortState};
use crate::model::gid::Gid;

/// What is known of one end of a connection: its port (sysfs), what it sent in the
/// out-of-band exchange, and (local side) its GID table. The rules read this, not the wire
/// message.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct EndFacts {
    pub device: String,
    pub port: u32,
    pub link_layer: Option<LinkLayer>,
    pub port_state: Option<PortState>,
    pub phys_state: Option<PhysState>,
    pub lid: Option<u16>,
    /// Bytes: 256 .. 4096.
    pub active_mtu: Option<u32>,
    /// The GID index in use; None means no GRH (ibv_rc_pingpong without -g).
    pub gid_index: Option<u32>,
    /// The GID in use (the peer's: what it sent; zero when it sent `::`).
    pub gid: Option<Gid>,
    pub gid_type: Option<GidType>,
    /// The GID's netdev (local side only).
    pub netdev: Option<String>,
    /// The port's own netdev (local side only); a VLAN GID's netdev is another one.
    pub port_netdev: Option<String>,
    /// The port's GID table (local side; may be empty for the peer).
    pub gid_table: Vec<GidEntry>,
    /// `gid_tbl_len` from query_port.
    pub gid_table_len: Option<u32>,
    /// The GID's VLAN and prefix (this end's, and the peer's when its exchange sent it).
    pub segment: Option<crate::model::failure::Segment>,
}

impl EndFacts {
    pub fn is_ethernet(&self) -> bool {
        self.link_layer == Some(LinkLayer::Ethernet)
    }

    pub fn is_infiniband(&self) -> bool {
        self.link_layer == Some(LinkLayer::InfiniBand)
    }

    pub fn entry(&self) -> Option<&GidEntry> {
        let index = self.gid_index?;
        self.gid_table.iter().find(|e| e.index == index)
    }

    pub fn gid_now(&self) -> Option<Gid> {
        self.gid.or_else(|| self.entry().map(|e| e.gid))
    }

    pub fn type_now(&self) -> Option<GidType> {
        self.gid_type
            .clone()
            .or_else(|| self.entry().and_then(|e| e.gid_type.clone()))
    }

    pub fn netdev_now(&self) -> Option<String> {
        self.netdev
            .clone()
            .or_else(|| self.entry().and_then(|e| e.netdev.clone()))
    }

    pub fn name(&self) -> String {
        if self.device.is_empty() {
            "the port".into()
        } else {
            format!("{}/{}", self.device, self.port)
        }
    }
}

/// The local GID's netdev, as this network namespace sees it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct NetdevFacts {
    pub name: String,
    /// False: the netdev is gone, or lives in another network namespace (a pod).
    pub exists: bool,
    /// `model::device::carries_traffic`'s answer.
    pub up: bool,
    pub operstate: Option<OperState>,
    pub mtu: Option<u32>,
}

/// The kernel's view of the way to the peer, from the local GID's netdev.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct RouteFacts {
    pub peer: Option<IpAddr>,
    /// `ip route get PEER`: the netdev the kernel sends through. None: no route.
    pub route_netdev: Option<String>,
    /// The route's preferred source toward the peer (`src` in `ip route get`): the address
    /// rdma_cm and applications that bind no source send from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefsrc: Option<IpAddr>,
    /// The routing table the answer came from when it was not the main one: the GID's
    /// netdev is in a VRF (or policy rules chose another table).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table: Option<u32>,
    /// The route lookup failed outright (ENETUNREACH, unreachable route).
    pub no_route: bool,
    pub gateway: Option<IpAddr>,
    /// The peer address belongs to this host (loopback tests between two local ports).
    pub peer_is_local: bool,
    /// The netdev that owns the peer address when it is local (it must accept our ARP).
    pub peer_local_netdev: Option<String>,
    /// Neighbour state of the next hop on the GID's netdev: REACHABLE, FAILED, ... None: no entry.
    pub neighbour_state: Option<String>,
    pub accept_local: Option<bool>,
    pub rp_filter: Option<u32>,
    /// This host's addresses whose prefix holds the peer (the peer's subnet), other than
    /// the peer's own: on one host the route says "local", and this is what says which of
    /// this host's addresses faces the peer.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub subnet_addresses: Vec<IpAddr>,
    /// ARP flux around the GID's netdev: this host's RDMA netdevs on its subnet that answer
    /// ARP for each other's addresses (`arp_ignore` 0), the GID's netdev among them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arp_flux: Option<ArpFluxGroup>,
}

/// RDMA netdevs of one host on one IPv4 subnet, one of which answers ARP for the others'
/// addresses (`arp_ignore` 0): a peer may send one HCA's RoCE packets to another's MAC.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArpFluxGroup {
    /// `10.0.0.0/24`.
    pub subnet: String,
    pub netdevs: Vec<ArpFluxNetdev>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArpFluxNetdev {
    pub netdev: String,
    /// `arp_ignore` as the kernel applies it (max of all and the netdev's).
    pub arp_ignore: Option<u32>,
}

impl RouteFacts {
    pub fn on_link(&self) -> Option<bool> {
        if self.no_route || self.peer.is_none() {
            return None;
        }
        Some(self.gateway.is_none())
    }
}

/// RLIMIT_MEMLOCK and the planned registration.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct MemlockFacts {
    /// Soft limit in bytes; None is unlimited.
    pub limit_bytes: Option<u64>,
    pub cap_ipc_lock: bool,
    /// What the test registers (buffers, rounded to pages).
    pub needed_bytes: u64,
}

/// The QP attributes that decide retry behaviour.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct QpFacts {
    pub retry_cnt: Option<u8>,
    pub rnr_retry: Option<u8>,
    /// Were receives posted before the QP went to RTR (or before the peer's first send)?
    pub recv_posted_before_rtr: Option<bool>,
    pub message_bytes: Option<u32>,
    /// The peer's -s, when its exchange carried it (rdmactl's native one does).
    pub peer_message_bytes: Option<u32>,
    /// The peer spoke ibv_rc_pingpong's exchange (a stock peer, or `--compat rc_pingpong`):
    /// it carries no -s, so the two sizes were never compared.
    pub peer_stock_exchange: bool,
    /// The path MTU set at RTR.
    pub path_mtu: Option<u32>,
    /// The provider is rxe (it retries forever with retry_cnt 7).
    pub soft_roce: bool,
    /// An inline post: its bytes, and the QP's max_inline_data.
    pub inline_bytes: Option<u32>,
    pub max_inline_data: Option<u32>,
    /// The P_Key index given at INIT, and the length of the port's P_Key table.
    pub pkey_index: Option<u32>,
    pub pkey_table_len: Option<u32>,
}

/// A `/dev/infiniband` node (the device's uverbs node, or rdma_cm) as this process found it:
/// what the kernel checks an open against (the node's mode and owner, this process's ids)
/// and what the open answered, so a rule can say which of them refused it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct DeviceNodeFacts {
    pub path: String,
    pub exists: bool,
    pub accessible: bool,
    /// The kernel driver, e.g. mlx5_core, rdma_rxe.
    pub driver: Option<String>,
    /// The provider library libibverbs needs, e.g. libmlx5-rdmav34.so.
    pub provider: Option<String>,
    /// stat(2) of the node; None when it was not read (missing, or not looked at).
    pub stat: Option<NodeStat>,
    /// The errno of this process's own open of the node, read-write; None when it opened
    /// or was not tried.
    pub open_errno: Option<i32>,
    /// Who this process is; None when /proc/self/status did not say.
    pub process: Option<ProcessIds>,
    /// Signs of a container around this process (empty: none seen, or not looked for).
    #[serde(skip)]
    pub container: Vec<crate::model::container::Marker>,
}

/// A node's permission bits and owner, as stat(2) gives them, with the names
/// /etc/passwd and /etc/group give the ids (None when they list none).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct NodeStat {
    /// `st_mode & 0o7777`.
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub owner: Option<String>,
    pub group: Option<String>,
}

/// The ids the kernel checks a file's mode against: effective uid and gid, and the
/// supplementary groups (/proc/self/status `Uid:`, `Gid:`, `Groups:`), with names where
/// /etc/passwd and /etc/group have them.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct ProcessIds {
    pub uid: u32,
    pub gid: u32,
    pub groups: Vec<u32>,
    pub user: Option<String>,
    /// Names of `gid` and `groups`, where /etc/group has them.
    pub group_names: Vec<(u32, String)>,
}

/// Everything gathered about a failed run, for the rules: both ends, the netdev and the route
/// toward the peer, the memlock limit, and the QP parameters actually used.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Facts {
    pub local: EndFacts,
    /// Known after the out-of-band exchange.
    pub peer: Option<EndFacts>,
    /// `-m`: the MTU asked for on the command line.
    pub requested_mtu: Option<u32>,
    pub netdev: Option<NetdevFacts>,
    pub route: Option<RouteFacts>,
    pub memlock: Option<MemlockFacts>,
    pub qp: Option<QpFacts>,
    pub device_node: Option<DeviceNodeFacts>,
    /// The CM's source address (`--bind`, or the address `-d` stands for); None: the kernel
    /// picks it from the route.
    pub cm_source: Option<IpAddr>,
    /// The processes (pid, name) that hold the TCP port a listen could not bind.
    pub port_holders: Vec<(u32, String)>,
    /// What the gatherer looked at and found, in words, when no rule derives it from a
    /// field above (the CM path's look at the source address's netdev and the route).
    pub evidence: Vec<String>,
    /// This process runs in the initial network namespace (`/proc/self/ns/net` against
    /// `/proc/1/ns/net`), where rxe (kernel 6.1) has its devices; None: not read (not root,
    /// or a captured tree). A rule names a namespace only on `Some(false)`.
    pub in_initial_netns: Option<bool>,
    /// What both ends re-read when a completion did not come mid-run.
    pub stall: Option<Stall>,
    /// A Soft-RoCE port's paths through this host's firewall, read when the run's packets
    /// went unanswered.
    pub firewall: Option<crate::model::netfilter::FirewallFacts>,
}

/// The answer to `ip route get DST [oif DEV]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Route {
    pub destination: IpAddr,
    /// `unicast`, `local` (DST is an address of this host), `unreachable`, ...
    pub kind: String,
    pub oif_index: Option<u32>,
    /// Filled in by `route_get` from the link table; None in a pure parse.
    pub oif: Option<String>,
    /// Set when the peer is reached through a router: it is not on-link.
    pub gateway: Option<IpAddr>,
    pub prefsrc: Option<IpAddr>,
    pub table: u32,
}

impl Route {
    pub fn is_local(&self) -> bool {
        self.kind == "local"
    }
}

/// One port as `check` sees it: the sysfs model, plus what check needs beyond it.
#[derive(Debug, Clone, PartialEq)]
pub struct PortFacts {
    pub sysfs: Port,
    /// `sysfs.link_layer`, or `unknown` when sysfs has none.
    pub link_layer: LinkLayer,
    /// Slots in the GID table (the `gids/N` files), populated or not.
    pub gid_table_len: u32,
    /// From ibv_query_port; sysfs does not carry it.
    pub active_mtu: Option<u32>,
    /// Where `active_mtu` came from, or why there is none.
    pub active_mtu_source: String,
    /// The kernel is removing the device (verbs could not open it while sysfs lists it).
    pub removal: Option<Box<crate::model::device::DeviceRemoval>>,
}

impl PortFacts {
    pub fn name(&self) -> String {
        format!("{}/{}", self.sysfs.device, self.sysfs.number)
    }

    pub fn gids(&self) -> &[GidEntry] {
        &self.sysfs.gids
    }
}

/// What the network side told us; None fields were not checked (and say why).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetFacts {
    pub netdev: Option<NetdevFacts>,
    pub route: Option<RouteFacts>,
    /// `ip route get PEER oif GID_NETDEV` when the plain lookup is not conclusive.
    pub route_via_gid_netdev: Option<Route>,
    /// Why the route was not checked (no --peer, captured tree, netlink error).
    pub route_skipped: Option<String>,
    /// Where `netdev` came from: this network namespace, or the captured tree.
    pub netdev_source: &'static str,
}

/// One RoCE port's netdev as the host-wide rules see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoceNetdev {
    /// `rxe0/1`.
    pub port: String,
    pub netdev: String,
    pub mtu: Option<u32>,
    /// Its IPv4 addresses with prefix lengths.
    pub ipv4: Vec<(std::net::Ipv4Addr, u8)>,
    /// `accept_local` (all OR dev) and `rp_filter` (max of all, dev) of this netdev.
    pub accept_local: Option<bool>,
    pub rp_filter: Option<u32>,
    /// `arp_ignore` and `arp_announce`, max of all and dev, as the kernel applies them.
    pub arp_ignore: Option<u32>,
    pub arp_announce: Option<u32>,
    /// The netdev at the other end of this one's link (IFLA_LINK): a veth's peer.
    pub link_peer: Option<String>,
}

impl RoceNetdev {
    /// The two ends of one veth pair: a point-to-point link, where no third port hears
    /// an ARP request, so there is no flux between them.
    pub fn paired_with(&self, other: &RoceNetdev) -> bool {
        self.link_peer.as_deref() == Some(other.netdev.as_str())
            && other.link_peer.as_deref() == Some(self.netdev.as_str())
    }
}

/// What the kernel's CM picked to reach a peer: device, port, source GID and its index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Resolution {
    pub peer: IpAddr,
    /// The source address the kernel chose (or the one given).
    pub source: Option<IpAddr>,
    pub device: String,
    pub port: u8,
    pub link_layer: LinkLayer,
    /// The GID the kernel will put in the GRH (on RoCE, the source IP as a GID).
    pub sgid: Gid,
    /// The GID table slot holding `sgid` with the type the CM uses; None when not found.
    pub gid_index: Option<u32>,
    pub gid_type: Option<GidType>,
    pub netdev: Option<String>,
    /// Other slots holding the same GID with another type (RoCE v1 next to v2).
    pub other_indices: Vec<u32>,
    /// On RoCE, the GID type the CM uses: configfs `default_roce_mode`, else the kernel's
    /// default, RoCE v2; `default_roce_mode_set` says which.
    pub default_roce_mode: Option<GidType>,
    pub default_roce_mode_set: bool,
}

/// One port as re-read mid-run, against what its QP was connected with: the state, the
/// active MTU and the QP's source GID slot. Both exchanges (TCP and `--cm`) read it with
/// one function (`gather::verbs`), and the mid-run rules (`diagnose::midrun`) judge it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PortNow {
    /// The port state now, from ibv_query_port; on the wire as its IBTA number (4 is
    /// ACTIVE), as earlier versions sent it.
    #[serde(with = "port_state_number")]
    pub port_state: Option<PortState>,
    /// Bytes, now.
    pub active_mtu: Option<u32>,
    /// What the QP's source GID slot holds now.
    pub gid_now: GidNow,
}

impl PortNow {
    /// The port moves traffic as far as its state, MTU and GID can tell: ACTIVE, at or above
    /// the QP's path MTU, and its source GID still in place.
    pub fn unchanged_for(&self, path_mtu: Option<u32>) -> bool {
        self.port_state.as_ref().is_some_and(PortState::is_active)
            && !matches!((self.active_mtu, path_mtu), (Some(a), Some(p)) if a < p)
            && matches!(self.gid_now, GidNow::Same | GidNow::Unknown)
    }
}

/// A port state as its IBTA number (a kernel value this build does not name is kept as
/// its number text, and read back the same way).
mod port_state_number {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::model::device::PortState;

    pub fn serialize<S: Serializer>(s: &Option<PortState>, ser: S) -> Result<S::Ok, S::Error> {
        let number = s.as_ref().and_then(|s| match s {
            PortState::Other(text) => text.trim().parse::<u32>().ok(),
            known => known.number(),
        });
        match number {
            Some(n) => ser.serialize_some(&n),
            None => ser.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(de: D) -> Result<Option<PortState>, D::Error> {
        let n: Option<u32> = Option::deserialize(de)?;
        Ok(n.map(|n| PortState::from_number(n).unwrap_or_else(|| PortState::Other(n.to_string()))))
    }
}

/// This process not running this long means it was stopped (SIGSTOP, Ctrl-Z, a debugger, a
/// paused VM), not starved for a time slice: the one threshold the stall look and the
/// `process-stopped` rule share.
pub const STOPPED_MS: u64 = 2000;

/// What one end re-read when a completion did not come mid-run: what can have changed since
/// the QP was connected. Each end gathers its own and sends them to the other in a stall
/// probe, so both name the same cause. A `--cm` end fills the port's part only (its probe
/// fits a CM reject).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct StallFacts {
    /// "client" or "server".
    pub role: String,
    pub device: String,
    pub port: u32,
    /// The port's netdev (RoCE), to name in a fix.
    pub netdev: Option<String>,
    /// The port now: state, active MTU, the QP's GID slot.
    #[serde(flatten)]
    pub now: PortNow,
    /// The path MTU the QP was given at RTR.
    pub path_mtu: Option<u32>,
    /// The QP's source GID index and the GID it held when the QP was connected.
    pub gid_index: Option<u32>,
    pub gid: Option<String>,
    /// Port counters that rose since the run started, by name (send_err, retries, NAKs):
    /// only the error and retry counters a stall is decided by.
    pub counters: Vec<(String, u64)>,
    /// Every SEND/WRITE/READ this end posted had completed (the peer's HCA acknowledged
    /// it): the peer's device is alive, whatever its process does.
    pub own_requests_acked: Option<bool>,
    /// Requests of this end that completed, and messages it received.
    pub completed: u64,
    pub received: u64,
    /// This end's -n, and whether the exchange told the peer (a stock ibv_rc_pingpong's
    /// does not carry it).
    pub iterations: Option<u64>,
    pub peer_knows_iterations: bool,
    /// Since the last completion of this end.
    pub since_last_completion_ms: u64,
    /// The longest this process did not run since the run began (a thread of its own that
    /// wakes every 0.25 s overslept by it): from `STOPPED_MS` on, it was stopped, not its
    /// peer.
    pub stopped_ms: u64,
    /// The message size and --timeout, and what one message needs at the rate the port
    /// moved while this end waited (None: nothing moved, or no counter to tell).
    pub message_bytes: u32,
    pub timeout_ms: u64,
    pub message_needs_ms: Option<u64>,
}

impl StallFacts {
    /// `rxe1/1`; "its port" when the peer's probe had no room for the name.
    pub fn name(&self) -> String {
        if self.device.is_empty() {
            return "its port".into();
        }
        format!("{}/{}", self.device, self.port)
    }

    pub fn counter(&self, name: &str) -> u64 {
        self.counters
            .iter()
            .find(|(n, _)| n == name)
            .map_or(0, |(_, v)| *v)
    }
}

/// The QP's source GID slot, read again.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GidNow {
    /// Not read (no GID index: no GRH).
    #[default]
    Unknown,
    Same,
    /// The slot holds another GID now.
    Changed(String),
    /// The slot is empty.
    Gone,
}

/// The out-of-band TCP connection when the stall was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub enum OobLink {
    /// A stock ibv_rc_pingpong exchange closes it before the traffic.
    #[default]
    None,
    /// Open; segments this end sent that the peer's kernel has not acknowledged, and
    /// milliseconds since its last ACK came (TCP_INFO), read after the probe's wait.
    Open {
        unacked: Option<u32>,
        last_ack_ms: Option<u32>,
    },
    /// The peer closed it.
    Closed,
}

/// A stall as both ends saw it: this end's facts, the peer's answer to the probe, and the
/// out-of-band connection.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Stall {
    pub local: StallFacts,
    /// The peer's facts; None when it did not answer.
    pub peer: Option<StallFacts>,
    /// How long this end waited for the peer's answer (None: no probe was sent).
    pub probe_waited_ms: Option<u64>,
    pub link: OobLink,
}

impl Stall {
    /// The peer's kernel acknowledged the probe: nothing unacknowledged, and an ACK came
    /// after the probe was sent.
    pub fn probe_acked_by_kernel(&self) -> bool {
        // The kernel keeps the ACK's time in jiffies (up to 10 ms each): a little slack.
        match (self.link, self.probe_waited_ms) {
            (
                OobLink::Open {
                    unacked: Some(0),
                    last_ack_ms: Some(ack),
                },
                Some(waited),
            ) => u64::from(ack) <= waited + 20,
            _ => false,
        }
    }
}
