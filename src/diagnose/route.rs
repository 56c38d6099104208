//! The kernel's route toward the peer, judged once: `no-route` (none at all) and
//! `route-other-netdev` (it leaves through another netdev than the GID's). `check` asks
//! before a run, a failed run (the TCP exchange's connect, RTR) after; the same route gives
//! the same code, cause and fix. Each asker adds its own evidence and its GID suggestion to
//! the fix.

use crate::model::codes;
use crate::model::diagnostic::{Diagnostic, Seen, Source};

/// `no-route`: this host has no route to `peer`. `gid_netdev`, when known, is where the
/// route should leave.
pub fn no_route(peer: &str, gid_netdev: Option<&str>) -> Diagnostic {
    let through = gid_netdev.map_or(String::new(), |d| format!(" through {d}"));
    Diagnostic::explanation(
        codes::NO_ROUTE,
        format!("this host has no route to {peer}: the TCP connect, RTR and rdma_resolve_addr fail with ENETUNREACH"),
        format!("add a route to {peer}{through}, or check the address (`ip route get {peer}` finds none)"),
    )
}

/// `route-other-netdev`: the kernel routes `peer` through `route_netdev`, but the GID
/// belongs to `gid_netdev`, so the peer's MAC is resolved through `gid_netdev`, where the
/// peer never answers (RTR times out). Not for a peer that is an address of this host (the
/// route is then `lo`'s or the owner's, and the same-host rules judge it).
pub fn other_netdev(peer: &str, route_netdev: &str, gid_netdev: &str) -> Diagnostic {
    Diagnostic::explanation(
        codes::ROUTE_OTHER_NETDEV,
        format!("the kernel routes {peer} through {route_netdev}, but the GID belongs to {gid_netdev}; the peer's MAC is resolved through {gid_netdev}, where it never answers, so RTR times out"),
        format!("use a GID on {route_netdev}, or fix the routing so {peer} is reached through {gid_netdev}"),
    )
    .seen(Seen::new(
        Source::Route,
        format!("ip route get {peer}: dev {route_netdev}"),
    ))
}
