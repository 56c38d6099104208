//! The one rule for a port that changed under a connected QP mid-run, for both exchanges
//! (TCP and `--cm`): its netdev MTU cut below the QP's path MTU (`mtu-cut-midrun`), or its
//! source GID gone from the table (`gid-removed-midrun`). Each end re-reads its port
//! (`model::facts::PortNow`) and, where it can, hears the peer's; the same facts give the
//! same words on either exchange and on either end.

use crate::model::codes::{self, Code};
use crate::model::device::PortState;
use crate::model::diagnostic::{Seen, Source};
use crate::model::facts::{Facts, GidNow, StallFacts};
use crate::model::gid::Gid;

/// A change found: the code, what it means, the lines that show it, and the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortChanged {
    pub code: Code,
    pub summary: String,
    pub seen: Vec<Seen>,
    pub fix: String,
    /// The change is on this end's port (its GID is the thing to change here).
    pub here: bool,
}

/// `rxe1/1 (the server)`.
pub fn who(e: &StallFacts) -> String {
    format!("{} (the {})", e.name(), e.role)
}

/// The error and retry counters that rose on one end, as one seen line.
pub fn counter_lines(e: &StallFacts, from: Source) -> Vec<Seen> {
    if e.counters.is_empty() {
        return Vec::new();
    }
    let moved: Vec<String> = e
        .counters
        .iter()
        .map(|(name, by)| format!("{name} +{by}"))
        .collect();
    vec![Seen::new(
        from,
        format!("{} since the run started: {}", who(e), moved.join(", ")),
    )]
}

/// One end's port now, as a seen line: state, active MTU against the QP's path MTU, and
/// the QP's GID slot.
pub fn port_line(e: &StallFacts) -> String {
    let state = match &e.now.port_state {
        Some(PortState::Active) => PortState::Active.to_string(),
        Some(s) => format!("{s}, not ACTIVE"),
        None => "state unknown".to_string(),
    };
    let slot = match (&e.gid_index, &e.now.gid_now) {
        (None, _) => String::new(),
        (Some(i), GidNow::Same) => format!(", GID index {i} still in the table"),
        (Some(i), GidNow::Gone) => format!(", GID index {i} empty now"),
        (Some(i), GidNow::Changed(now)) => format!(", GID index {i} holds {now} now"),
        (Some(i), GidNow::Unknown) => format!(", GID index {i} not read"),
    };
    format!(
        "{}: {state}, active MTU {}, the QP's path MTU {}{slot}",
        who(e),
        e.now.active_mtu.map_or("unknown".into(), |m| m.to_string()),
        e.path_mtu.map_or("unknown".into(), |m| m.to_string()),
    )
}

/// What changed under the QP on either end, in the order that decides: an MTU cut (on
/// this end first) explains a stall whatever else is seen; then a GID gone. `ends` is
/// this end first, then the peer's as it said. `rerun_with_m`: the exchange takes -m (the
/// TCP one; `--cm` takes the path MTU from the route).
pub fn port_changed(ends: &[(&StallFacts, Source)], rerun_with_m: bool) -> Option<PortChanged> {
    ends.iter()
        .find_map(|(e, from)| mtu_cut(e, *from, rerun_with_m))
        .or_else(|| ends.iter().find_map(|(e, from)| gid_gone(e, *from)))
}

/// One end's port now has an active MTU below the path MTU its QP was connected with.
fn mtu_cut(e: &StallFacts, from: Source, rerun_with_m: bool) -> Option<PortChanged> {
    let (active, path) = (e.now.active_mtu?, e.path_mtu?);
    if active >= path {
        return None;
    }
    // A `--cm` peer's probe has no room for its netdev's name.
    let (netdev, dev) = match &e.netdev {
        Some(n) => (n.clone(), n.clone()),
        None => (format!("{}'s netdev", e.name()), "DEV".to_string()),
    };
    let refused = match e.counter("send_err") {
        0 => String::new(),
        n => format!(" (send_err +{n})"),
    };
    let summary = format!(
        "{}: its active MTU {active} is below the QP's path MTU {path}: {netdev}'s MTU was lowered during the run, and the device refuses to send packets larger than the netdev carries{refused}; a connected QP keeps its path MTU, so nothing gets through",
        who(e)
    );
    let mut seen = vec![Seen::new(
        from,
        format!(
            "{}: active MTU {active} now, below the QP's path MTU {path}",
            who(e)
        ),
    )];
    seen.extend(counter_lines(e, from));
    let named = if e.netdev.is_none() {
        format!("; rdmactl ports {} names DEV", e.name())
    } else {
        String::new()
    };
    let mtu_back = format!(
        "give {netdev} its MTU back on the {}'s host (ip link set {dev} mtu 1500{named})",
        e.role
    );
    let fix = if rerun_with_m {
        format!("{mtu_back}, or rerun with -m {active} or less")
    } else {
        format!("{mtu_back}, then rerun: a connected QP cannot change its path MTU")
    };
    Some(PortChanged {
        code: codes::MTU_CUT_MIDRUN,
        summary,
        seen,
        fix,
        here: false,
    })
}

/// One end's source GID slot holds another GID now, or none.
fn gid_gone(e: &StallFacts, from: Source) -> Option<PortChanged> {
    let index = e.gid_index?;
    let now = match &e.now.gid_now {
        GidNow::Changed(now) => format!("it now holds {now}"),
        GidNow::Gone => "the slot is empty now".to_string(),
        GidNow::Same | GidNow::Unknown => return None,
    };
    Some(left_the_table(
        &who(e),
        index,
        e.gid.as_deref(),
        &now,
        e.netdev.as_deref(),
        &e.device,
        from,
    ))
}

/// The address behind a GID as `ip addr` spells it, when the GID carries one.
fn address_of(gid: &str) -> Option<String> {
    let g = Gid::parse(gid).ok()?;
    Some(match g.ipv4() {
        Some(v4) => v4.to_string(),
        None => g.ipv6().to_string(),
    })
}

fn left_the_table(
    who: &str,
    index: u32,
    gid: Option<&str>,
    now: &str,
    netdev: Option<&str>,
    device: &str,
    from: Source,
) -> PortChanged {
    let netdev = netdev.unwrap_or("its netdev");
    // A `--cm` peer's probe carries the slot's fate, not the GID it held.
    let held = gid.map(|g| format!(" ({g})")).unwrap_or_default();
    let summary = format!(
        "GID index {index}{held} of {who} left the GID table during the run ({now}): its address was removed from {netdev}, and a connected QP cannot change its source GID, so its packets are no longer sent"
    );
    let then = gid.map_or(":".to_string(), |g| {
        format!(" held {g} when the QP was connected;")
    });
    let seen = vec![Seen::new(
        from,
        format!("{who}: GID index {index}{then} {now}"),
    )];
    let back = match gid.and_then(address_of) {
        Some(addr) => {
            format!("put {addr} back on {netdev} (ip addr add {addr}/PREFIX dev {netdev})")
        }
        None => format!("put the address back on {netdev}"),
    };
    let gids = if device.is_empty() {
        "rdmactl gids on that host".to_string()
    } else {
        format!("rdmactl gids {device}")
    };
    PortChanged {
        code: codes::GID_REMOVED_MIDRUN,
        summary,
        seen,
        fix: format!("{back}, or rerun with the GID index that holds an address now ({gids})"),
        here: from == Source::Local,
    }
}

/// The QP's GID (from set-up) is no longer at its index of the table read now: the check
/// at the top of a failed completion (rxe reports IBV_WC_LOC_QP_OP_ERR for it), and behind
/// a peer's retry-exceeded.
pub fn gid_left(ctx: &Facts) -> Option<PortChanged> {
    if let Some(stall) = &ctx.stall {
        if let Some(found) = gid_gone(&stall.local, Source::Local) {
            return Some(found);
        }
    }
    let local = &ctx.local;
    let (index, gid) = (local.gid_index?, local.gid?);
    if local.gid_table.is_empty() {
        return None;
    }
    let now = match local.gid_table.iter().find(|e| e.index == index) {
        Some(e) if e.gid == gid => return None,
        Some(e) => format!("it now holds {}", e.gid.ipv6()),
        None => "the slot is empty now".to_string(),
    };
    Some(left_the_table(
        &format!("{} (this end)", local.name()),
        index,
        Some(&gid.ipv6().to_string()),
        &now,
        local.netdev.as_deref().or(local.port_netdev.as_deref()),
        &local.device,
        Source::Local,
    ))
}
