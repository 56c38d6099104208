//! The GID in use and the GID table: how they are worded, whether the two ends' GIDs agree,
//! and a GID slot that is empty or cannot be read.

use crate::diagnose::gidselect::{describe, is_link_local, type_name, Family};
use crate::model::codes;
use crate::model::device::GidType;
use crate::model::diagnostic::{Diagnostic, Seen, Source};
use crate::model::facts::{EndFacts, Facts};
use crate::model::failure::Segment;
use crate::model::gid::Gid;

use super::{generic, Builder, Rule};

pub(super) fn local_gid_words(ep: &EndFacts) -> String {
    match (ep.gid_index, ep.gid_now()) {
        (Some(i), Some(g)) => format!(
            "index {i} ({}, {})",
            type_name(ep.type_now().as_ref()),
            gid_words(&g)
        ),
        (Some(i), None) => format!("index {i}"),
        // ibv_rc_pingpong sends its GID but not the index.
        (None, Some(g)) if !g.is_zero() => format!("GID {}", gid_words(&g)),
        (None, _) => "no GID index".into(),
    }
}

fn gid_words(g: &Gid) -> String {
    if g.is_zero() {
        return ":: (zero)".into();
    }
    let family = match g.ipv4() {
        Some(v4) => format!("IPv4 {v4}"),
        None if is_link_local(g) => format!("link-local {}", g.ipv6()),
        None => format!("IPv6 {}", g.ipv6()),
    };
    family
}

pub(super) fn table_summary(ep: &EndFacts) -> String {
    let rows: Vec<String> = ep
        .gid_table
        .iter()
        .filter(|e| !e.gid.is_zero())
        .map(describe)
        .collect();
    if rows.is_empty() {
        format!("{} has no populated GID", ep.name())
    } else {
        format!("{} has {}", ep.name(), rows.join("; "))
    }
}

/// Why two GIDs cannot talk: type, family, link-local. None when they can.
pub(super) fn gid_mismatch(local: &EndFacts, peer: &EndFacts) -> Option<(String, Vec<Seen>)> {
    let (lg, pg) = (local.gid_now()?, peer.gid_now()?);
    if lg.is_zero() || pg.is_zero() {
        return None;
    }
    let evidence = vec![
        Seen::new(Source::Local, format!("local {}", local_gid_words(local))),
        Seen::new(Source::Peer, format!("peer {}", local_gid_words(peer))),
    ];
    let (lt, pt) = (local.type_now(), peer.type_now());
    let v2 = |t: &Option<GidType>| matches!(t, Some(GidType::RoceV2));
    // sysfs spells v1 "IB/RoCE v1", which parses as Ib: on Ethernet that is RoCE v1.
    let v1 = |t: &Option<GidType>| matches!(t, Some(GidType::RoceV1) | Some(GidType::Ib));
    if (v2(&lt) && v1(&pt)) || (v1(&lt) && v2(&pt)) {
        return Some((
            format!(
                "RoCE version mismatch: local {} and peer {}; v1 frames are Ethernet-only and v2 frames are UDP, so neither side understands the other",
                type_name(lt.as_ref()),
                type_name(pt.as_ref())
            ),
            evidence,
        ));
    }
    let (lf, pf) = (Family::of_gid(&lg), Family::of_gid(&pg));
    if lf != pf {
        return Some((
            format!(
                "address family mismatch: the local GID is {} and the peer's is {}; a RoCE v2 packet carries one IP header, so both GIDs must be the same family",
                gid_family_word(&lg),
                gid_family_word(&pg)
            ),
            evidence,
        ));
    }
    if is_link_local(&lg) != is_link_local(&pg) {
        return Some((
            format!(
                "scope mismatch: the local GID is {} and the peer's is {}; a link-local source cannot reach a global destination",
                gid_family_word(&lg),
                gid_family_word(&pg)
            ),
            evidence,
        ));
    }
    None
}

pub(super) fn gid_family_word(g: &Gid) -> &'static str {
    if g.ipv4().is_some() {
        "IPv4-mapped"
    } else if is_link_local(g) {
        "link-local IPv6"
    } else {
        "IPv6"
    }
}

/// an empty slot (the kernel says ENODATA).
pub(super) fn empty_slot(b: Builder) -> Diagnostic {
    let local = &b.ctx.local;
    let i = local
        .gid_index
        .map(|i| i.to_string())
        .unwrap_or_else(|| "?".into());
    b.done(
        codes::GID_EMPTY_SLOT,
        format!(
            "GID index {i} on {} is an empty slot: there is no address behind it",
            local.name()
        ),
        vec![
            Seen::new(
                Source::Local,
                format!("gids/{i} is all zero and gid_attrs/types/{i} is unreadable"),
            ),
            Seen::new(Source::Local, table_summary(local)),
        ],
        "pick a populated index".into(),
        true,
    )
}

/// The GID index is past the end of the port's table: the one rule, at the GID lookup and
/// at RTR.
pub(super) fn past_the_table(local: &EndFacts) -> Option<Rule> {
    let (i, len) = (local.gid_index?, local.gid_table_len?);
    if i < len {
        return None;
    }
    Some((
        codes::GID_INDEX_OUT_OF_RANGE,
        format!(
            "GID index {i} is past the end of {}'s GID table ({len} entries)",
            local.name()
        ),
        vec![
            Seen::new(Source::Local, format!("gid_tbl_len {len}")),
            Seen::new(Source::Local, table_summary(local)),
        ],
        format!("pick an index below {len}"),
    ))
}

/// When the GID is looked up before the QP: an empty slot or an index past the table.
pub(super) fn gid_slot(b: Builder, errno: i32) -> Diagnostic {
    let local = &b.ctx.local;
    if errno == libc::EINVAL {
        if let Some((code, summary, ev, fix)) = past_the_table(local) {
            return b.done(code, summary, ev, fix, true);
        }
    }
    if errno == libc::ENODATA || errno == libc::EINVAL {
        return empty_slot(b);
    }
    generic(b)
}

/// What to change when the two GIDs are a VLAN apart.
const VLAN_FIX: &str = "use GIDs whose netdevs are on the same VLAN at both ends (`rdmactl gids` shows each GID's netdev), or route between the two VLANs";

/// The two GIDs' segments, when both ends sent them: in different VLANs with no router on
/// the way to the peer, frames tagged for one VLAN never reach the other, whatever the GIDs
/// say. The summary names both VLANs ("10 here, untagged there"), the evidence each end's
/// address and prefix and whether the other's address is in that subnet. `consequence`:
/// what the run saw of it (the MAC never resolved at RTR, or no ACK came).
pub(super) fn vlan_mismatch(ctx: &Facts, consequence: &str) -> Option<Rule> {
    let peer = ctx.peer.as_ref()?;
    let (ls, ps) = (ctx.local.segment?, peer.segment?);
    let (lg, pg) = (ctx.local.gid_now()?, peer.gid_now()?);
    if ls.vlan == ps.vlan || lg.is_zero() || pg.is_zero() {
        return None;
    }
    // Across a router each end may sit in its own VLAN: only a route read in this run,
    // with no gateway on it, rules the router out.
    if !ctx
        .route
        .as_ref()
        .is_some_and(|r| !r.no_route && r.gateway.is_none())
    {
        return None;
    }
    let (lip, pip) = (lg.ip(), pg.ip());
    let subnet = |ip: std::net::IpAddr, seg: Segment| {
        seg.prefix_len
            .map(|len| format!("{ip}/{len}"))
            .unwrap_or_else(|| ip.to_string())
    };
    let here = ctx
        .local
        .netdev_now()
        .map(|d| format!(" on {d}"))
        .unwrap_or_default();
    let mut evidence = vec![
        Seen::new(
            Source::Local,
            format!(
                "this end's GID {}{here}: {}",
                subnet(lip, ls),
                ls.vlan_text()
            ),
        ),
        Seen::new(
            Source::Peer,
            format!(
                "the peer's GID {}: {} (from its exchange)",
                subnet(pip, ps),
                ps.vlan_text()
            ),
        ),
    ];
    let holds = |ip: std::net::IpAddr, seg: Segment, other: std::net::IpAddr| {
        seg.prefix_len
            .map(|len| crate::model::gid::prefix_holds(ip, len, other))
    };
    match (holds(lip, ls, pip), holds(pip, ps, lip)) {
        (Some(false), Some(false)) => evidence.push(Seen::new(
            Source::Local,
            format!("{pip} is not in this end's subnet, nor {lip} in the peer's: only a router joins them"),
        )),
        (Some(true), _) | (_, Some(true)) => evidence.push(Seen::new(
            Source::Local,
            "the addresses share a subnet across two VLANs: neighbour resolution crosses no VLAN".to_string(),
        )),
        _ => {}
    }
    Some((
        codes::VLAN_MISMATCH,
        format!(
            "{consequence}: different VLAN ({} here, {} there): frames tagged for one VLAN never reach a port on the other, and no router on the way joins them",
            ls.vlan.map_or_else(|| "untagged".to_string(), |v| v.to_string()),
            ps.vlan.map_or_else(|| "untagged".to_string(), |v| v.to_string()),
        ),
        evidence,
        VLAN_FIX.into(),
    ))
}
