//! The route toward the peer: unreachable at RTR, and two ports of one host that drop
//! each other's packets.

use crate::diagnose::link_local;
use crate::diagnose::same_host::{self, SameHostSysctls};
use crate::model::codes;
use crate::model::diagnostic::{Diagnostic, Seen, Source};
use crate::model::errno::errno_name;
use crate::model::facts::{Facts, RouteFacts};

use super::gid::local_gid_words;
use super::{peer_ip, Builder};

/// Two ports of one host: the peer's netdev drops what arrives from a local source address
/// unless accept_local is set (and rp_filter is not strict). Returns the owner of the
/// peer's address, the evidence and the fix, when the sysctls say it drops.
pub(super) fn same_host_drop(
    route: &RouteFacts,
    peer_text: &str,
    dev_name: &str,
) -> Option<(String, Vec<Seen>, String)> {
    // accept_local and rp_filter are IPv4 sysctls; an IPv6 neighbour comes from NDP.
    if !route.peer_is_local || route.peer.is_some_and(|p| p.is_ipv6()) {
        return None;
    }
    let owner = route
        .peer_local_netdev
        .clone()
        .unwrap_or_else(|| "the peer's netdev".into());
    let seen = SameHostSysctls {
        accept_local: route.accept_local,
        rp_filter: route.rp_filter,
    };
    if !seen.drops() && route.accept_local.is_some() {
        return None;
    }
    let mut ev = vec![Seen::new(
        Source::Route,
        format!(
            "{peer_text} is an address of this host (on {owner}): both ports are in one kernel"
        ),
    )];
    if let Some(a) = route.accept_local {
        ev.push(Seen::new(
            Source::Route,
            format!(
                "net.ipv4.conf.{{all,{owner}}}.accept_local = {}",
                u8::from(a)
            ),
        ));
    }
    if let Some(r) = route.rp_filter {
        ev.push(Seen::new(
            Source::Route,
            format!("rp_filter (max of all, {owner}) = {r}"),
        ));
    }
    let fix = same_host::fix(&[dev_name, owner.as_str()], seen);
    Some((owner, ev, fix))
}

/// IPv6 between two rxe devices of one kernel: the one rule, `same_host`'s.
pub(super) fn same_host_ipv6(
    ctx: &Facts,
    route: &RouteFacts,
    dev_name: &str,
) -> Option<Diagnostic> {
    if !route.peer_is_local {
        return None;
    }
    same_host::ipv6_between_devices(&same_host::Ipv6Pair {
        port: &ctx.local.name(),
        soft_roce: ctx.qp.as_ref().is_some_and(|q| q.soft_roce),
        peer: route.peer?,
        owner: route.peer_local_netdev.as_deref()?,
        local: dev_name,
    })
}

/// `no-route`, the one rule's (`diagnose::route`), with this failure's evidence; `gid_fix`:
/// RTR may name a GID whose netdev has a route.
pub(super) fn no_route(
    b: Builder,
    peer: &str,
    gid_netdev: Option<&str>,
    evidence: Vec<Seen>,
    gid_fix: bool,
) -> Diagnostic {
    let d = crate::diagnose::route::no_route(peer, gid_netdev);
    b.done(
        d.code,
        d.message,
        evidence,
        d.fix.unwrap_or_default(),
        gid_fix,
    )
}

/// the kernel could not resolve the peer's MAC through the source GID's netdev.
pub(super) fn rtr_unreachable(b: Builder, errno: i32) -> Diagnostic {
    let ctx = b.ctx;
    let local = &ctx.local;
    let gid = local.gid_now();
    let dev = local.netdev_now();
    let dev_name = dev.clone().unwrap_or_else(|| "the GID's netdev".into());
    let route = ctx.route.clone().unwrap_or_default();
    let peer = peer_ip(ctx);
    let peer_text = peer
        .map(|p| p.to_string())
        .unwrap_or_else(|| "the peer".into());
    let mut ev = vec![Seen::new(
        Source::Local,
        format!("local {} on {dev_name}", local_gid_words(local)),
    )];

    // The one rule, `link_local`'s, that check asks too.
    if let Some(x) =
        gid.and_then(|g| link_local::routed_peer(&g, local.gid_index, &peer_text, &route))
    {
        ev.extend(x.evidence);
        return b.done(x.code, x.message, ev, x.fix.unwrap_or_default(), true);
    }
    if route.no_route {
        ev.push(Seen::new(
            Source::Route,
            format!("ip route get {peer_text}: no route"),
        ));
        return no_route(b, &peer_text, dev.as_deref(), ev, true);
    }
    if let (Some(rd), Some(d)) = (&route.route_netdev, &dev) {
        if !route.peer_is_local && rd != d {
            let x = crate::diagnose::route::other_netdev(&peer_text, rd, d);
            ev.extend(x.evidence);
            return b.done(x.code, x.message, ev, x.fix.unwrap_or_default(), true);
        }
    }
    if let Some((owner, more, fix)) = same_host_drop(&route, &peer_text, &dev_name) {
        ev.extend(more);
        let (code, summary) = same_host::arp_dropped_at_rtr(&owner, &dev_name);
        return b.done(code, summary, ev, fix, false);
    }
    // Both ends said where their GIDs sit: a VLAN apart, the ARP request never crosses.
    if let Some((code, summary, vev, fix)) =
        super::gid::vlan_mismatch(ctx, "the peer's MAC never resolves")
    {
        ev.extend(vev);
        return b.done(code, summary, ev, fix, true);
    }
    match route.neighbour_state.as_deref() {
        Some(s @ ("FAILED" | "INCOMPLETE")) => {
            let hop = route
                .gateway
                .map(|g| g.to_string())
                .unwrap_or_else(|| peer_text.clone());
            ev.push(Seen::new(
                Source::Route,
                format!("ip neigh show {hop} dev {dev_name}: {s}"),
            ));
            return b.done(
                codes::NEIGHBOUR_UNRESOLVED,
                format!("{hop} does not answer ARP/ND on {dev_name}: the peer is down, on another segment or VLAN, or a firewall drops ARP"),
                ev,
                format!("check that {hop} is up and reachable on {dev_name} (ping -I {dev_name} {hop}, arping)"),
                true,
            );
        }
        Some(s) => ev.push(Seen::new(
            Source::Route,
            format!("neighbour {peer_text} on {dev_name}: {s}"),
        )),
        None => {}
    }
    b.done(
        codes::ADDRESS_RESOLUTION_TIMEOUT,
        format!(
            "{}: the kernel could not resolve {peer_text}'s MAC through {dev_name} (rdma_resolve_ip gives up after 1 s)",
            errno_name(errno)
        ),
        ev,
        format!("check ip route get {peer_text} oif {dev_name} and ip neigh; use the GID of the netdev that routes to the peer"),
        true,
    )
}
