//! What the kernel's IP stack says about a peer: which netdev a route to it leaves through,
//! whether its neighbour (ARP/ND) entry is resolved, and the state of each netdev. RoCE
//! resolves the peer's MAC through exactly these tables (`rdma_resolve_ip`), so they explain
//! most RTR timeouts before a QP is ever created.
//!
//! Everything goes over rtnetlink in this network namespace (the namespace a QP's GID must
//! live in), without subprocesses. Requests are built and replies parsed by pure functions
//! (`*_request`, `parse_*`), so the parsers are tested on captured kernel bytes; only
//! `query` touches a socket.

// Parts of this API serve pingpong and selftest, which call it once the phases merge.

pub mod dcb;
mod facts;
mod iptables;
#[cfg(test)]
mod live_tests;
pub mod netfilter;
mod query;
pub mod rdma;
pub mod rdma_res;
mod reply;
mod request;

use std::net::IpAddr;

use serde::Serialize;

use crate::model::device::{carries_traffic, OperState};

pub use facts::{netdev_facts, route_facts, route_get_soft, segment};
pub use query::{address_owner, addresses, netdev, netdevs};
// check's tests compare a live route with it.
#[cfg(test)]
pub use query::route_get;

/// A netlink socket of `protocol` bound and connected to the kernel, for one request and
/// its replies; an error names the socket (`family`), the call and the OS error.
fn kernel_socket(protocol: isize, family: &str) -> Result<netlink_sys::Socket, String> {
    let fail = |what: &str, e: std::io::Error| format!("{family} socket: {what}: {e}");
    let mut socket = netlink_sys::Socket::new(protocol).map_err(|e| fail("socket", e))?;
    socket.bind_auto().map_err(|e| fail("bind", e))?;
    socket
        .connect(&netlink_sys::SocketAddr::new(0, 0))
        .map_err(|e| fail("connect", e))?;
    Ok(socket)
}

/// Why a netlink query could not be answered.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    #[error("netlink socket: {0}")]
    Socket(#[source] std::io::Error),
    /// The kernel refused the request (e.g. ENETUNREACH for `route get` with no route).
    #[error("the kernel answered {what} with {}", crate::model::errno::errno_text(*errno))]
    Kernel { what: String, errno: i32 },
    #[error("cannot parse the kernel's reply to {what}: {detail}")]
    Parse { what: String, detail: String },
    #[error("no netdev '{0}' in this network namespace")]
    NoSuchNetdev(String),
}

/// One row of `ip link`: enough to tell whether a GID's netdev is usable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NetdevLink {
    pub index: u32,
    pub name: String,
    /// `up`, `down`, `lowerlayerdown`, `unknown` (loopback and some virtual links), ...
    pub operstate: OperState,
    /// IFF_UP: the administrator set it up.
    pub admin_up: bool,
    pub mtu: Option<u32>,
    /// IFLA_LINK: a veth's peer, a VLAN's parent (`veth0@veth1` in `ip link`).
    pub link: Option<u32>,
    /// The 802.1Q VLAN ID of a VLAN netdev; None for any other.
    pub vlan: Option<u16>,
}

impl NetdevLink {
    /// Usable for traffic: administratively up and not reported down by its driver.
    pub fn is_up(&self) -> bool {
        carries_traffic(&self.operstate, Some(self.admin_up))
    }
}

/// One address of a netdev (`ip addr`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IfAddr {
    pub ifindex: u32,
    pub address: IpAddr,
    pub prefix_len: u8,
}

/// A neighbour (ARP or ND) entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Neighbour {
    pub ifindex: u32,
    pub address: IpAddr,
    /// As `ip neigh` prints it: REACHABLE, STALE, DELAY, PROBE, INCOMPLETE, FAILED, ...
    pub state: String,
    pub lladdr: Option<String>,
}

// Requests (pure)

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn netdev_up_needs_admin_and_oper() {
        let dev = |admin_up, op: &str| NetdevLink {
            index: 1,
            name: "x".into(),
            operstate: OperState::parse(op),
            admin_up,
            mtu: None,
            link: None,
            vlan: None,
        };
        assert!(dev(true, "up").is_up());
        assert!(dev(true, "unknown").is_up());
        assert!(!dev(true, "lowerlayerdown").is_up());
        assert!(!dev(false, "down").is_up());
    }
}
