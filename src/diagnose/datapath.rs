//! Why a data-path step failed (TCP exchange, verbs setup, QP transitions, completions),
//! as pure rules over the failure (step and cause) and the facts gathered about the run.
//! The work-completion rules serve the connection manager too (`diagnose::cm` defers to
//! them), so a retry-exceeded means the same thing on both paths.
//!
//! Whenever some GID index on the port would work toward the peer, the explanation names
//! it ("use GID index 1 (RoCE v2, ::ffff:192.168.77.1 on veth0)"); the choice comes from
//! `gidselect`, so `-g auto` and the explanations never disagree.

use std::net::IpAddr;

use crate::diagnose::gidselect::{self, describe, is_link_local, type_name, Family, Want};
use crate::model::device::{GidEntry, GidType, LinkLayer};
use crate::model::diagnostic::{Explanation, Finding, Seen, Severity, Source};
use crate::model::errno::{
    errno_name, WC_LOC_LEN_ERR, WC_LOC_PROT_ERR, WC_LOC_QP_OP_ERR, WC_REM_ACCESS_ERR,
    WC_REM_INV_REQ_ERR, WC_RETRY_EXC_ERR, WC_RNR_RETRY_EXC_ERR, WC_WR_FLUSH_ERR,
};
use crate::model::facts::{EndFacts, Facts, RouteFacts};
use crate::model::failure::{Cause, Failure, Mismatch, PinLimit, Step};
use crate::model::gid::Gid;

/// The GID index that would work toward the peer, and its description.
struct Suggestion {
    index: Option<u32>,
    text: Option<String>,
    /// The current index is itself the suggestion.
    current_is_best: bool,
}

fn peer_ip(ctx: &Facts) -> Option<IpAddr> {
    ctx.route.as_ref().and_then(|r| r.peer).or_else(|| {
        let gid = ctx.peer.as_ref()?.gid?;
        (!gid.is_zero()).then(|| gid.ip())
    })
}

fn want_for(ctx: &Facts) -> Want {
    gidselect::want_toward(
        peer_ip(ctx),
        ctx.route.as_ref(),
        ctx.peer.as_ref().and_then(EndFacts::type_now),
    )
}

fn suggest(ctx: &Facts) -> Suggestion {
    let local = &ctx.local;
    let Some(ll) = &local.link_layer else {
        return Suggestion {
            index: None,
            text: None,
            current_is_best: false,
        };
    };
    // A GID on a netdev that is gone or down cannot be the answer, however well it ranks.
    let dead_netdev = ctx
        .netdev
        .as_ref()
        .filter(|n| !n.exists || !n.up)
        .map(|n| n.name.as_str());
    let table: Vec<GidEntry> = local
        .gid_table
        .iter()
        .filter(|e| dead_netdev.is_none() || e.netdev.as_deref() != dead_netdev)
        .cloned()
        .collect();
    let sel = gidselect::select_gid(&table, ll, &want_for(ctx));
    let text = gidselect::suggestion(&table, &sel);
    Suggestion {
        index: sel.chosen,
        current_is_best: sel.chosen.is_some() && sel.chosen == local.gid_index,
        text,
    }
}

struct Builder<'a> {
    ctx: &'a Facts,
    failure: &'a Failure,
    suggestion: Suggestion,
}

impl Builder<'_> {
    /// The fix, with the working GID index appended when the cause is the GID choice or
    /// when naming it helps; `gid_fix` says whether the GID is the thing to change.
    fn done(
        self,
        code: &str,
        summary: String,
        mut evidence: Vec<Seen>,
        fix: String,
        gid_fix: bool,
    ) -> Explanation {
        let s = &self.suggestion;
        let mut fix = fix;
        // Whether the GID fits is evidence only where a GID could have caused the failure:
        // on the wire (RTR, completions, the peer's RTR behind a closed exchange). Under a
        // memlock or MR failure it would be a fact about something else.
        let gid_matters = gid_fix
            || matches!(
                self.failure.step,
                Step::Rtr | Step::Poll | Step::Completion | Step::CmTransfer | Step::Exchange
            );
        match (&s.text, gid_fix) {
            _ if !gid_matters => {}
            (Some(text), true) if !s.current_is_best => fix = format!("{fix}; {text}"),
            (Some(text), _) if s.current_is_best => evidence.push(Seen::new(
                Source::Local,
                format!(
                    "the GID in use fits the peer: {}",
                    text.trim_start_matches("use ")
                ),
            )),
            (Some(text), _) => evidence.push(Seen::new(
                Source::Local,
                format!("the GID index that fits the peer: {text}"),
            )),
            (None, true)
                if self.ctx.local.link_layer.is_some() && !self.ctx.local.gid_table.is_empty() =>
            {
                evidence.push(Seen::new(
                    Source::Local,
                    "no GID on this port fits the peer (family, type, netdev)",
                ))
            }
            _ => {}
        }
        Explanation {
            code: code.to_string(),
            summary,
            evidence,
            fix,
            suggested_gid_index: s.index.filter(|_| gid_matters),
        }
    }
}

/// Milliseconds as the seconds the messages print: "5 s", "0.5 s".
fn seconds(ms: u64) -> f64 {
    ms as f64 / 1000.0
}

/// Explain why a data-path step failed, given what was gathered about the run.
pub fn explain(failure: &Failure, ctx: &Facts) -> Explanation {
    let step = failure.step;
    let b = Builder {
        ctx,
        failure,
        suggestion: suggest(ctx),
    };
    // Said by the user or by the peer: no local rule applies, except that a port of this
    // end that is down explains this end first (the peer only saw its consequence).
    match &failure.cause {
        Cause::Interrupted { signal } => return interrupted(failure, *signal),
        Cause::PeerReported { notice } => {
            if let Some((code, summary, mut evidence, fix)) = port_not_active(ctx) {
                evidence.push(Seen::new(
                    Source::PeerNotice,
                    format!("the {} said: {}", notice.role, notice.message),
                ));
                return Explanation {
                    code: code.to_string(),
                    summary,
                    evidence,
                    fix,
                    suggested_gid_index: None,
                };
            }
            return peer_reported(notice);
        }
        _ => {}
    }
    // A port that is not up explains every later step, whatever the errno.
    if step_needs_active_port(step) {
        if let Some((code, summary, evidence, fix)) = port_not_active(ctx) {
            return b.done(code, summary, evidence, fix, false);
        }
    }
    match (step, &failure.cause) {
        (Step::Open, Cause::Errno { errno: e, .. }) if *e == libc::EACCES || *e == libc::EPERM => {
            device_access(b)
        }
        (Step::Open, Cause::Errno { errno: e, .. })
            if *e == libc::ENODEV || *e == libc::ENXIO || *e == libc::ENOENT =>
        {
            device_gone(b)
        }
        (
            Step::Mr | Step::Cq | Step::QpCreate | Step::Pd | Step::Srq,
            Cause::Errno { errno: e, .. },
        ) if *e == libc::ENOMEM || *e == libc::EAGAIN => memlock(b),
        (
            _,
            Cause::WouldPin {
                limit: PinLimit::Memlock,
                ..
            },
        ) => memlock(b),
        (_, Cause::WouldPin { .. }) => memory_short(b),
        (Step::Mr, Cause::Errno { errno: e, .. }) if *e == libc::EACCES || *e == libc::EPERM => {
            device_access(b)
        }
        (Step::Rtr, Cause::Errno { errno: e, .. }) => rtr_errno(b, *e),
        (Step::Init, Cause::Errno { errno: e, .. }) if *e == libc::EINVAL => {
            pkey_past_table(ctx).unwrap_or_else(|| init_einval(b))
        }
        (Step::QpCreate, Cause::Errno { errno: e, .. }) if *e == libc::EINVAL => qp_caps(b),
        (Step::PostSend, Cause::Errno { errno: e, .. })
            if (*e == libc::EINVAL || *e == libc::ENOMEM) && inline_over(ctx).is_some() =>
        {
            inline_too_large(failure, ctx)
        }
        (Step::PostSend | Step::PostRecv, Cause::Errno { errno: e, .. }) if *e == libc::ENOMEM => {
            queue_full(b)
        }
        (Step::Rts, Cause::Errno { errno: e, .. }) if *e == libc::EINVAL => rts_einval(b),
        (Step::Poll | Step::Completion | Step::CmTransfer, Cause::WcStatus { status, .. }) => {
            completion(b, *status)
        }
        (Step::Poll | Step::Completion, Cause::PeerClosed) => peer_gone(b),
        (Step::Poll | Step::Completion, Cause::Timeout { waited_ms, .. }) => {
            poll_timeout(b, seconds(*waited_ms))
        }
        (Step::QueryGid, Cause::Errno { errno: e, .. }) => gid_slot(b, *e),
        (Step::Listen, Cause::Errno { errno: e, .. }) if *e == libc::EADDRINUSE => {
            port_in_use(failure, ctx)
        }
        (Step::Connect, cause) => oob_connect(b, cause),
        (Step::Exchange, cause) => oob_exchange(b, cause),
        (Step::Verify, _) => data_mismatch(b),
        (Step::Semantics, _) => semantics_broken(failure),
        (Step::Compare, _) => compare(b),
        _ => generic(b),
    }
}

fn interrupted(failure: &Failure, signal: i32) -> Explanation {
    let name = crate::model::failure::signal_name(signal);
    let mut x = Explanation::new(
        "interrupted",
        format!(
            "the run was stopped by {name} ({}), not by a fault",
            if signal == libc::SIGINT {
                "Ctrl-C"
            } else {
                "kill, or a job scheduler ending the job"
            }
        ),
        "rerun it to completion; a smaller -n finishes sooner",
    );
    if let Some(note) = &failure.context.note {
        x.evidence
            .push(Seen::new(Source::Failure, format!("stopped {note}")));
    }
    x
}

/// The peer explained its own failure: its words, marked as the peer's.
fn peer_reported(notice: &crate::model::failure::PeerNotice) -> Explanation {
    let mut x = Explanation::new(
        &notice.code,
        format!("the {} found the cause: {}", notice.role, notice.summary),
        notice.fix.clone(),
    );
    x.evidence.push(Seen::new(
        Source::PeerNotice,
        format!("the {} said: {}", notice.role, notice.message),
    ));
    x.evidence.extend(
        notice
            .evidence
            .iter()
            .map(|e| Seen::new(Source::PeerNotice, format!("{}: {e}", notice.role))),
    );
    x
}

/// The out-of-band connection closed while this end waited for completions: the peer is
/// gone, and said nothing (a peer that fails or is interrupted says why first).
fn peer_gone(b: Builder) -> Explanation {
    // Not via `done`: whether the GID fits says nothing about a closed connection.
    let mut x = Explanation::new(
        "peer-gone",
        "the peer went away mid-run: it closed the out-of-band connection without a word (killed with SIGKILL, crashed, or an older rdmactl)",
        "look at the peer: its process, its output, and dmesg on its host",
    );
    if let Some(note) = &b.failure.context.note {
        x.evidence.push(Seen::new(
            Source::Failure,
            format!("the connection closed {note}"),
        ));
    }
    x
}

fn step_needs_active_port(step: Step) -> bool {
    matches!(
        step,
        Step::QueryPort | Step::Rtr | Step::Rts | Step::PostSend | Step::Poll | Step::Completion
    )
}

type Rule = (&'static str, String, Vec<Seen>, String);

/// InfiniBand without an SM (LID 0, INIT/POLLING), or any port not ACTIVE.
fn port_not_active(ctx: &Facts) -> Option<Rule> {
    let local = &ctx.local;
    let state = local.port_state.as_deref();
    let mut evidence = Vec::new();
    if let Some(s) = state {
        evidence.push(Seen::new(
            Source::Local,
            format!("{} state {s}", local.name()),
        ));
    }
    if let Some(p) = &local.phys_state {
        evidence.push(Seen::new(
            Source::Local,
            format!("{} phys_state {p}", local.name()),
        ));
    }
    if local.is_infiniband() {
        let lid_bad = matches!(local.lid, Some(0) | Some(0xffff));
        let not_active = state.is_some_and(|s| s != "ACTIVE");
        if lid_bad || not_active {
            if let Some(lid) = local.lid {
                evidence.push(Seen::new(
                    Source::Local,
                    format!("{} LID 0x{lid:04x}", local.name()),
                ));
            }
            let polling = local
                .phys_state
                .as_deref()
                .is_some_and(|p| p.eq_ignore_ascii_case("polling"));
            let fix = if polling {
                "the link is not trained (phys_state Polling): check the cable and the switch port"
                    .to_string()
            } else {
                "start a subnet manager (systemctl start opensm, or enable the switch's SM); an SR-IOV VF needs a virtualization-aware SM".to_string()
            };
            return Some((
                "ib-port-not-active",
                format!(
                    "InfiniBand port {} is not ACTIVE or has no LID: no subnet manager has configured it, so there is no address to connect to",
                    local.name()
                ),
                evidence,
                fix,
            ));
        }
    }
    if let Some(peer) = &ctx.peer {
        if peer.is_infiniband() && peer.lid == Some(0) {
            return Some((
                "ib-peer-lid-zero",
                "the peer sent LID 0: its InfiniBand port has no LID (no subnet manager on its fabric)".into(),
                vec![Seen::new(Source::Peer, format!("peer {} LID 0x0000", peer.name()))],
                "start a subnet manager on the peer's fabric, then rerun".into(),
            ));
        }
    }
    if !local.is_ethernet() {
        return None;
    }
    // The QP can fail before the port's state catches up with its netdev (rxe learns of
    // the link through a notifier), so the port's own netdev being down already counts.
    let netdev_down = ctx
        .netdev
        .as_ref()
        .filter(|n| n.exists && !n.up && local.port_netdev.as_deref() == Some(n.name.as_str()));
    if let Some(n) = netdev_down {
        evidence.push(Seen::new(
            Source::Netdev,
            format!(
                "netdev {} is down (operstate {})",
                n.name,
                n.operstate.as_deref().unwrap_or("unknown")
            ),
        ));
    }
    let port_down = state.is_some_and(|s| s != "ACTIVE");
    if !port_down && netdev_down.is_none() {
        return None;
    }
    let netdev = local.netdev_now().unwrap_or_else(|| "its netdev".into());
    // Administratively down is fixed here; no carrier (lowerlayerdown) is fixed at the
    // other end of the link: the switch port, or for a veth its peer.
    let no_carrier = ctx
        .netdev
        .as_ref()
        .and_then(|n| n.operstate.as_deref())
        .is_some_and(|o| o == "lowerlayerdown" || o == "dormant");
    let what = if no_carrier {
        "has no carrier (its link partner is down)"
    } else {
        "is down or has no carrier"
    };
    let summary = if port_down {
        format!(
            "RoCE port {} is not ACTIVE: its netdev {netdev} {what}",
            local.name()
        )
    } else {
        format!(
            "RoCE port {} cannot send: its netdev {netdev} {what}",
            local.name()
        )
    };
    let fix = if no_carrier {
        format!("bring the other end of {netdev}'s link up: the switch port, or for a veth its peer (ip link show {netdev} names it)")
    } else {
        format!("ip link set {netdev} up, and check the cable (ip link show {netdev})")
    };
    Some(("port-down", summary, evidence, fix))
}

fn local_gid_words(ep: &EndFacts) -> String {
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

/// Two ports of one host: the peer's netdev drops what arrives from a local source address
/// unless accept_local is set (and rp_filter is not strict). Returns the owner of the
/// peer's address, the evidence and the fix, when the sysctls say it drops.
fn same_host_drop(
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
    let drops = route.accept_local == Some(false) || route.rp_filter == Some(1);
    if !drops && route.accept_local.is_some() {
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
    let fix = format!("sysctl -w net.ipv4.conf.all.accept_local=1 net.ipv4.conf.{dev_name}.accept_local=1 net.ipv4.conf.{owner}.accept_local=1, with rp_filter 0 or 2");
    Some((owner, ev, fix))
}

/// IPv6 between two rxe devices of one kernel: measured never to carry a packet (the
/// kernel resolves the local destination without neighbour discovery, and the other
/// device's receive counters do not move), while a device to itself works.
fn same_host_ipv6(
    ctx: &Facts,
    route: &RouteFacts,
    dev_name: &str,
) -> Option<(String, Vec<Seen>, String)> {
    let peer = route.peer.filter(|p| p.is_ipv6())?;
    let owner = route.peer_local_netdev.as_deref()?;
    let soft_roce = ctx.qp.as_ref().is_some_and(|q| q.soft_roce);
    if !route.peer_is_local || !soft_roce || owner == dev_name {
        return None;
    }
    let ev = vec![
        Seen::new(
            Source::Route,
            format!(
                "{peer} is an address of this host (on {owner}); this end's GID is on {dev_name}"
            ),
        ),
        Seen::new(
            Source::Local,
            format!("{} is Soft-RoCE (rxe)", ctx.local.name()),
        ),
    ];
    Some((
        format!("same-host IPv6: rxe carries no RoCE v2 traffic over IPv6 between two devices of one kernel ({dev_name} to {owner}); IPv4 between them works, and so does IPv6 from a device to itself"),
        ev,
        "test IPv6 between two hosts (or VMs), or use the IPv4-mapped GIDs for a same-host test; `rdmactl selftest -d DEV -g N` checks one device's IPv6 GID by itself".into(),
    ))
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

fn table_summary(ep: &EndFacts) -> String {
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
fn gid_mismatch(local: &EndFacts, peer: &EndFacts) -> Option<(String, Vec<Seen>)> {
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

fn gid_family_word(g: &Gid) -> &'static str {
    if g.ipv4().is_some() {
        "IPv4-mapped"
    } else if is_link_local(g) {
        "link-local IPv6"
    } else {
        "IPv6"
    }
}

fn rtr_errno(b: Builder, errno: i32) -> Explanation {
    let ctx = b.ctx;
    let local = &ctx.local;
    let peer = ctx.peer.as_ref();
    // GIDs of different families or RoCE versions fail whatever the errno (EINVAL, or a
    // resolution timeout); a scope mismatch has its own rule, with its route evidence.
    if let Some((summary, mut ev)) = peer
        .and_then(|p| gid_mismatch(local, p))
        .filter(|(s, _)| !s.starts_with("scope"))
    {
        ev.push(Seen::new(Source::Local, table_summary(local)));
        let fix = if b.suggestion.current_is_best {
            format!(
                "run the peer with a GID like this end's ({}); for ibv_rc_pingpong that is -g with the index of its {} GID",
                local_gid_words(local),
                local.gid_now().map_or("", |g| gid_family_word(&g))
            )
        } else {
            "use GIDs of the same RoCE version and address family on both ends".into()
        };
        return b.done("gid-mismatch", summary, ev, fix, true);
    }
    match errno {
        e if e == libc::EINVAL => {
            // RoCE without a GRH.
            let peer_gid_zero = peer
                .and_then(EndFacts::gid_now)
                .is_some_and(|g| g.is_zero());
            if local.is_ethernet() && (local.gid_index.is_none() || peer_gid_zero) {
                let mut ev = vec![Seen::new(
                    Source::Local,
                    format!("{} link layer Ethernet (RoCE)", local.name()),
                )];
                if local.gid_index.is_none() {
                    ev.push(Seen::new(
                        Source::Local,
                        "no GID index was given, so the address vector has no GRH (is_global=0)",
                    ));
                }
                if peer_gid_zero {
                    ev.push(Seen::new(Source::Peer, "the peer sent GID :: (ibv_rc_pingpong without -g sends zero and leaves is_global unset)"));
                }
                return b.done(
                    "roce-no-grh",
                    "RoCE has no LIDs: every packet needs a GRH with a source GID index, and the kernel (rdma_check_ah_attr) rejects an address vector without one".into(),
                    ev,
                    "give a GID index on both sides (-g N, or -g auto)".into(),
                    true,
                );
            }
            // index past the table.
            if let (Some(i), Some(len)) = (local.gid_index, local.gid_table_len) {
                if i >= len {
                    return b.done(
                        "gid-index-out-of-range",
                        format!(
                            "GID index {i} is past the end of {}'s GID table ({len} entries)",
                            local.name()
                        ),
                        vec![
                            Seen::new(Source::Local, format!("gid_tbl_len {len}")),
                            Seen::new(Source::Local, table_summary(local)),
                        ],
                        format!("pick an index below {len}"),
                        true,
                    );
                }
            }
            // Mixed families or types.
            if let Some(peer) = peer {
                if let Some((summary, mut ev)) = gid_mismatch(local, peer) {
                    ev.push(Seen::new(Source::Local, table_summary(local)));
                    return b.done(
                        "gid-mismatch",
                        summary,
                        ev,
                        "use GIDs of the same RoCE version and address family on both ends".into(),
                        true,
                    );
                }
                if peer.is_infiniband() && local.is_infiniband() && peer.lid == Some(0) {
                    return b.done(
                        "ib-peer-lid-zero",
                        "the peer's LID is 0: the destination has no InfiniBand address".into(),
                        vec![Seen::new(
                            Source::Peer,
                            format!("peer {} LID 0", peer.name()),
                        )],
                        "start a subnet manager on the peer's fabric".into(),
                        false,
                    );
                }
                if local.link_layer.is_some()
                    && peer.link_layer.is_some()
                    && local.link_layer != peer.link_layer
                {
                    return b.done(
                        "link-layer-mismatch",
                        "one end is InfiniBand and the other Ethernet: they cannot be connected directly".into(),
                        vec![Seen::new(Source::Local, format!("local {} {:?}", local.name(), local.link_layer.clone().unwrap_or(LinkLayer::Other(String::new())))), Seen::new(Source::Peer, format!("peer {} {:?}", peer.name(), peer.link_layer.clone().unwrap_or(LinkLayer::Other(String::new()))))],
                        "run both ends on the same kind of fabric".into(),
                        false,
                    );
                }
            }
            // Path MTU above the port's.
            if let (Some(path), Some(active)) = (
                ctx.qp
                    .as_ref()
                    .and_then(|q| q.path_mtu)
                    .or(ctx.requested_mtu),
                local.active_mtu,
            ) {
                if path > active {
                    return b.done(
                        "mtu-too-large",
                        format!(
                            "the path MTU {path} exceeds {}'s active MTU {active}",
                            local.name()
                        ),
                        vec![
                            Seen::new(Source::Qp, format!("requested MTU {path}")),
                            Seen::new(Source::Qp, format!("active_mtu {active}")),
                        ],
                        format!(
                            "use -m {} (the smaller active MTU of the two ports), or leave -m out",
                            mtu_min(ctx).unwrap_or(active)
                        ),
                        false,
                    );
                }
            }
            let mut ev = vec![Seen::new(
                Source::Local,
                format!("local {}", local_gid_words(local)),
            )];
            if let Some(p) = peer {
                let lid = p
                    .lid
                    .map_or("unknown".to_string(), |l| format!("0x{l:04x}"));
                ev.push(Seen::new(
                    Source::Peer,
                    format!("peer {}, LID {lid}", local_gid_words(p)),
                ));
            }
            b.done(
                "rtr-invalid",
                "the kernel rejected the RTR attributes (address vector, MTU or QP numbers)".into(),
                ev,
                "compare both ends with rdmactl check, and use the native exchange (it validates both sides before RTR)".into(),
                true,
            )
        }
        e if e == libc::ENODATA => empty_slot(b),
        e if e == libc::ENODEV => {
            let dev = local.netdev_now();
            let mut ev = Vec::new();
            let summary = match (&dev, &ctx.netdev) {
                (Some(d), Some(n)) if !n.exists => {
                    ev.push(Seen::new(Source::Netdev, format!("gid_attrs/ndevs says {d}, but this network namespace has no {d}")));
                    format!("the GID's netdev {d} does not exist here: it was removed, or it lives in another network namespace (a container or pod)")
                }
                (Some(d), Some(n)) if !n.up => {
                    ev.push(Seen::new(Source::Netdev, format!("{d} operstate {}", n.operstate.clone().unwrap_or_else(|| "down".into()))));
                    format!("the GID's netdev {d} is down")
                }
                (Some(d), _) => format!("the kernel found no usable netdev for the GID (gid_attrs/ndevs: {d})"),
                (None, _) => "the GID has no netdev (gid_attrs/ndevs is unreadable), so the kernel cannot build the packet headers".into(),
            };
            ev.push(Seen::new(Source::Local, table_summary(local)));
            let fix = match (&dev, &ctx.netdev) {
                (Some(d), Some(n)) if n.exists && !n.up => format!("ip link set {d} up"),
                _ => "use a GID whose netdev is in this namespace and up (NVIDIA/nccl#718: in a pod only some indices are usable)".into(),
            };
            b.done("gid-netdev-missing", summary, ev, fix, true)
        }
        e if e == libc::ETIMEDOUT
            || e == libc::ENETUNREACH
            || e == libc::EHOSTUNREACH
            || e == libc::EADDRNOTAVAIL =>
        {
            rtr_unreachable(b, e)
        }
        _ => generic(b),
    }
}

/// an empty slot (the kernel says ENODATA).
fn empty_slot(b: Builder) -> Explanation {
    let local = &b.ctx.local;
    let i = local
        .gid_index
        .map(|i| i.to_string())
        .unwrap_or_else(|| "?".into());
    b.done(
        "gid-empty-slot",
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

/// When the GID is looked up before the QP: an empty slot or an index past the table.
fn gid_slot(b: Builder, errno: i32) -> Explanation {
    let local = &b.ctx.local;
    let past_end = match (local.gid_index, local.gid_table_len) {
        (Some(i), Some(len)) => i >= len,
        _ => false,
    };
    if errno == libc::EINVAL && past_end {
        let (i, len) = (
            local.gid_index.unwrap_or(0),
            local.gid_table_len.unwrap_or(0),
        );
        let summary = format!(
            "GID index {i} is past the end of {}'s GID table ({len} entries)",
            local.name()
        );
        let ev = vec![
            Seen::new(Source::Local, format!("gid_tbl_len {len}")),
            Seen::new(Source::Local, table_summary(local)),
        ];
        return b.done(
            "gid-index-out-of-range",
            summary,
            ev,
            format!("pick an index below {len}"),
            true,
        );
    }
    if errno == libc::ENODATA || errno == libc::EINVAL {
        return empty_slot(b);
    }
    generic(b)
}

/// The server's TCP port is taken. Nothing about GIDs or the peer applies: no device was
/// needed to find this out.
fn port_in_use(failure: &Failure, ctx: &Facts) -> Explanation {
    let bind = failure.context.bind_addr.as_deref();
    let port = bind
        .and_then(|a| a.parse::<std::net::SocketAddr>().ok())
        .map(|a| a.port());
    let which = port.map_or("the TCP port".to_string(), |p| format!("TCP port {p}"));
    let holders: Vec<String> = ctx
        .port_holders
        .iter()
        .map(|(pid, name)| format!("{name} (pid {pid})"))
        .collect();
    let who = if holders.is_empty() {
        "another process".to_string()
    } else {
        holders.join(" and ")
    };
    let mut x = Explanation::new(
        "port-in-use",
        format!("{who} already listens on {which}: a server still running, or another tool on that port"),
        format!(
            "stop {}, or give both ends another port with -p{}",
            if holders.is_empty() { "the other server" } else { "it" },
            match (port, holders.is_empty()) {
                (Some(p), true) => format!(" (`ss -ltnp 'sport = :{p}'` names the process)"),
                _ => String::new(),
            }
        ),
    );
    x.evidence.push(Seen::new(
        Source::Failure,
        format!("bind {}: EADDRINUSE", bind.unwrap_or("?")),
    ));
    for (pid, name) in &ctx.port_holders {
        x.evidence.push(Seen::new(
            Source::Host,
            format!(
                "/proc/{pid}/fd holds the listening socket of {} ({name})",
                which
            ),
        ));
    }
    x
}

/// The TCP connection of the out-of-band exchange.
fn oob_connect(b: Builder, cause: &Cause) -> Explanation {
    let peer = peer_ip(b.ctx)
        .map(|p| p.to_string())
        .unwrap_or_else(|| "the server".into());
    let seconds = |ms: &u64| seconds(*ms);
    match cause {
        Cause::Errno { errno: e, .. } if *e == libc::ECONNREFUSED => b.done(
            "no-listener",
            format!("nothing listens on {peer} at that TCP port: the server is not running (yet), already finished, or uses another -p"),
            vec![Seen::new(Source::Failure, format!("{peer} answered the TCP connection with a reset (ECONNREFUSED)"))],
            "start the server first (rdmactl pingpong -d DEV -g N, or ibv_rc_pingpong and --compat rc_pingpong here), and give both ends the same -p".into(),
            false,
        ),
        Cause::Timeout { waited_ms, .. } => {
            let mut ev = vec![Seen::new(Source::Failure, format!(
                "no answer to the TCP connection within {} s",
                seconds(waited_ms)
            ))];
            if let Some(s) = b.ctx.route.as_ref().and_then(|r| r.neighbour_state.clone()) {
                ev.push(Seen::new(Source::Route, format!("neighbour {peer}: {s}")));
            }
            b.done(
                "peer-silent",
                format!("{peer} does not answer: the host is down, the address is wrong, or a firewall drops the port"),
                ev,
                format!("check the address and that the server runs there (ping {peer}; ss -ltn on the server)"),
                false,
            )
        }
        Cause::Errno { errno: e, .. } if *e == libc::ENETUNREACH || *e == libc::EHOSTUNREACH => b.done(
            "no-route",
            format!("this host has no route to {peer}"),
            vec![Seen::new(Source::Failure, format!("connect: {}", errno_name(*e)))],
            format!("check ip route get {peer} and the address"),
            false,
        ),
        _ => generic(b),
    }
}

/// Reading or writing the out-of-band messages.
fn oob_exchange(b: Builder, cause: &Cause) -> Explanation {
    let seconds = |ms: &u64| seconds(*ms);
    match cause {
        Cause::PeerClosed => {
            let local = &b.ctx.local;
            let fix = match local.gid_now().filter(|g| !g.is_zero()) {
                Some(g) => format!(
                    "look at the peer's output. An ibv_rc_pingpong server moves its QP to RTR before it answers, so one whose GID does not fit this end's ({}) stops there: run it with the index of its {} {} GID (`rdmactl gids` there lists them)",
                    local_gid_words(local),
                    gid_family_word(&g),
                    type_name(local.type_now().as_ref())
                ),
                None => "look at the peer's output and rerun it".into(),
            };
            b.done(
                "peer-closed",
                "the peer closed the out-of-band connection: it failed on its side (its output says why), or its process was killed".into(),
                vec![],
                fix,
                true,
            )
        }
        Cause::Timeout { waited_ms, .. } => b.done(
            "peer-stopped",
            format!("the peer sent nothing for {} s: it is stuck or gone, or it is not rdmactl or ibv_rc_pingpong", seconds(waited_ms)),
            vec![],
            "check the peer process; give both ends the same --timeout".into(),
            false,
        ),
        Cause::Invalid { what } => b.done(
            "bad-handshake",
            format!("the peer's handshake is not one rdmactl understands: {what}"),
            vec![],
            "point it at an rdmactl pingpong or ibv_rc_pingpong on this port; against a stock ibv_rc_pingpong server use --compat rc_pingpong".into(),
            false,
        ),
        _ => generic(b),
    }
}

/// Every work request completed, yet the bytes that arrived are not the ones sent: the same
/// code as the connection manager's check.
fn data_mismatch(b: Builder) -> Explanation {
    let seen = format!("{}", b.failure.cause);
    b.done(
        "data-mismatch",
        "every work request completed successfully, yet the bytes differ from what was sent: memory corruption on either host, a buggy provider, or a peer that changed its buffer meanwhile".into(),
        vec![Seen::new(Source::Failure, seen)],
        "rerun; if it repeats, run rdmactl selftest on each host to find the side that corrupts".into(),
        false,
    )
}

/// The two ends' parameters, compared before the QP (the native exchange sends GID type,
/// link layer and MTU; the compat one only the GID).
fn compare(b: Builder) -> Explanation {
    let ctx = b.ctx;
    let local = &ctx.local;
    let Some(peer) = ctx.peer.as_ref() else {
        return generic(b);
    };
    if let Some((summary, mut ev)) = gid_mismatch(local, peer) {
        ev.push(Seen::new(Source::Local, table_summary(local)));
        // When this end's GID already fits the peer's address, the peer is the one to change.
        let fix = if b.suggestion.current_is_best {
            format!(
                "use a GID like this end's on the peer ({}): `rdmactl gids` there lists them, -g auto picks it",
                local_gid_words(local)
            )
        } else {
            "use GIDs of the same RoCE version and address family on both ends".into()
        };
        let code = if summary.starts_with("RoCE version") {
            "roce-version-mismatch"
        } else {
            "gid-family-mismatch"
        };
        return b.done(code, summary, ev, fix, true);
    }
    if let Some(f) = compare_peers(local, peer)
        .into_iter()
        .find(|f| f.severity == Severity::Fail)
    {
        let code = f.code.clone();
        let fix = f.fix.clone().unwrap_or_default();
        let evidence = f
            .evidence
            .iter()
            .map(|e| Seen::new(Source::Peer, e.clone()))
            .collect();
        return b.done(&code, f.message.clone(), evidence, fix, false);
    }
    // The exchange found the difference itself; its mismatches are the evidence, and the
    // fix names only the flags that differ.
    match &b.failure.cause {
        Cause::Mismatch { mismatches } => {
            let evidence = mismatches
                .iter()
                .map(|m| Seen::new(Source::Failure, m.to_string()))
                .collect();
            let mut flags: Vec<&str> = mismatches
                .iter()
                .filter_map(|m| match m {
                    Mismatch::Size { .. } => Some("-s"),
                    Mismatch::Iters { .. } => Some("-n"),
                    Mismatch::Length { .. } => {
                        Some("-n, --duration and --lat (or none of them on the server)")
                    }
                    Mismatch::Ops { .. } => Some("--op"),
                    Mismatch::NoGid { .. } => Some("-g"),
                    _ => None,
                })
                .collect();
            flags.dedup();
            let fix = match flags.as_slice() {
                [] => "start both ends with matching settings (the lines above say which differ)"
                    .to_string(),
                [one] => format!("give both ends the same {one}"),
                [init @ .., last] => {
                    format!("give both ends the same {} and {last}", init.join(", "))
                }
            };
            b.done(
                "parameters-differ",
                "the two ends were started with parameters that do not fit together".into(),
                evidence,
                fix,
                false,
            )
        }
        // A setting this end cannot use with this peer (-m above the path's MTU): its own
        // words say what to change.
        Cause::Invalid { what } => b.done(
            "parameters-differ",
            "a setting does not fit this path".into(),
            vec![Seen::new(Source::Failure, what.clone())],
            what.rsplit_once("; ")
                .map(|(_, fix)| fix.to_string())
                .unwrap_or_else(|| "adjust the setting named above".into()),
            false,
        ),
        other => b.done(
            "parameters-differ",
            "the two ends were started with parameters that do not fit together".into(),
            vec![Seen::new(Source::Failure, other.to_string())],
            "compare the flags of both ends".into(),
            false,
        ),
    }
}

/// the kernel could not resolve the peer's MAC through the source GID's netdev.
fn rtr_unreachable(b: Builder, errno: i32) -> Explanation {
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

    if let (Some(g), Some(false)) = (gid, route.on_link()) {
        if is_link_local(&g) {
            if let Some(gw) = route.gateway {
                ev.push(Seen::new(
                    Source::Route,
                    format!("ip route get {peer_text}: via {gw}"),
                ));
            }
            return b.done(
                "link-local-routed-peer",
                format!("a link-local GID cannot reach {peer_text}, which is behind a router (NVIDIA/nccl#769)"),
                ev,
                "use a GID with a routable address".into(),
                true,
            );
        }
    }
    if route.no_route {
        ev.push(Seen::new(
            Source::Route,
            format!("ip route get {peer_text}: no route"),
        ));
        return b.done(
            "no-route",
            format!("the kernel has no route to {peer_text}"),
            ev,
            format!("add a route to {peer_text} (ip route add ... dev {dev_name})"),
            true,
        );
    }
    if let (Some(rd), Some(d)) = (&route.route_netdev, &dev) {
        if !route.peer_is_local && rd != d {
            ev.push(Seen::new(
                Source::Route,
                format!("ip route get {peer_text}: dev {rd}"),
            ));
            return b.done(
                "route-other-netdev",
                format!("the kernel routes {peer_text} through {rd}, but the GID belongs to {d}; the peer's MAC is resolved through {d}, where it never answers"),
                ev,
                format!("use a GID on {rd}, or fix the routing so {peer_text} is reached through {d}"),
                true,
            );
        }
    }
    if let Some((owner, more, fix)) = same_host_drop(&route, &peer_text, &dev_name) {
        ev.extend(more);
        return b.done(
            "same-host-arp",
            format!("same-host test: {owner} drops the ARP request from {dev_name} because its sender address is local, so the MAC never resolves"),
            ev,
            fix,
            false,
        );
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
                "neighbour-unresolved",
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
        "address-resolution-timeout",
        format!(
            "{}: the kernel could not resolve {peer_text}'s MAC through {dev_name} (rdma_resolve_ip gives up after 1 s)",
            errno_name(errno)
        ),
        ev,
        format!("check ip route get {peer_text} oif {dev_name} and ip neigh; use the GID of the netdev that routes to the peer"),
        true,
    )
}

fn init_einval(b: Builder) -> Explanation {
    let local = &b.ctx.local;
    let ev = vec![Seen::new(Source::Local, format!("port {}", local.port))];
    b.done(
        "init-invalid",
        format!("the kernel rejected the INIT attributes for {}: the port number, the P_Key index or the access flags", local.name()),
        ev,
        "use a port that exists (rdmactl ports), pkey_index 0, and only the access flags the device supports".into(),
        false,
    )
}

/// INIT refused with a P_Key index the port's table does not have.
fn pkey_past_table(ctx: &Facts) -> Option<Explanation> {
    let qp = ctx.qp.as_ref()?;
    let (index, len) = (qp.pkey_index?, qp.pkey_table_len?);
    if index < len {
        return None;
    }
    let mut x = Explanation::new(
        "pkey-index-past-table",
        format!(
            "the P_Key index {index} is past the end of {}'s P_Key table ({len} entries, indices 0 to {}): the kernel refuses it at INIT",
            ctx.local.name(),
            len.saturating_sub(1)
        ),
        "use the index of the P_Key you mean (the default, 0xffff, is usually at 0); `rdmactl ports -v` lists the table",
    );
    x.evidence.push(Seen::new(
        Source::Qp,
        format!("pkey_index {index} given at INIT"),
    ));
    x.evidence.push(Seen::new(
        Source::Local,
        format!("{} pkey_tbl_len {len}", ctx.local.name()),
    ));
    Some(x)
}

/// An inline post larger than the QP's max_inline_data: (bytes, max).
fn inline_over(ctx: &Facts) -> Option<(u32, u32)> {
    let qp = ctx.qp.as_ref()?;
    let (bytes, max) = (qp.inline_bytes?, qp.max_inline_data?);
    (bytes > max).then_some((bytes, max))
}

fn inline_too_large(failure: &Failure, ctx: &Facts) -> Explanation {
    let (bytes, max) = inline_over(ctx).expect("checked by the caller");
    let mut x = Explanation::new(
        "inline-too-large",
        format!(
            "an inline send of {bytes} bytes is more than the QP's max_inline_data ({max}): the provider refuses it at post ({})",
            crate::model::errno::errno_name(failure.cause.errno_value().unwrap_or(0))
        ),
        format!(
            "send at most {max} bytes with IBV_SEND_INLINE and larger ones without it (from a registered buffer), or create the QP with a larger cap.max_inline_data if the device grants it"
        ),
    );
    x.evidence.push(Seen::new(
        Source::Qp,
        format!("max_inline_data {max} granted at QP create"),
    ));
    x.evidence.push(Seen::new(
        Source::Failure,
        format!(
            "{bytes} bytes posted with IBV_SEND_INLINE: {}",
            failure.cause
        ),
    ));
    x
}

/// The stack did what the verbs rules rule out: the earlier steps show the basic path
/// works, so this is the provider or kernel, not the caller.
fn semantics_broken(failure: &Failure) -> Explanation {
    let mut x = Explanation::new(
        "semantics-broken",
        format!(
            "the RDMA stack broke a verbs rule on {}: code that relies on it would fail here through no fault of its own",
            if failure.context.device.is_empty() {
                "this device"
            } else {
                &failure.context.device
            }
        ),
        "update the provider (rdma-core) and the kernel driver; if it persists, report it to their maintainers with this output (rdmactl -j selftest)",
    );
    x.evidence
        .push(Seen::new(Source::Failure, failure.cause.to_string()));
    x
}

fn qp_caps(b: Builder) -> Explanation {
    b.done(
        "qp-caps",
        "the QP's requested capacities exceed the device's limits (max_qp_wr, max_sge, max_inline_data)".into(),
        vec![],
        "lower the queue depth (rx depth), SGEs or inline size to what rdmactl devices -v reports".into(),
        false,
    )
}

fn queue_full(b: Builder) -> Explanation {
    let step = b.failure.step.name();
    b.done(
        "queue-full",
        format!("{step}: the work queue is full (more requests outstanding than max_send_wr/max_recv_wr)"),
        vec![],
        "poll completions before posting more, or create the QP with a deeper queue".into(),
        false,
    )
}

fn rts_einval(b: Builder) -> Explanation {
    let qp = b.ctx.qp.clone().unwrap_or_default();
    let mut ev = Vec::new();
    if let Some(r) = qp.retry_cnt {
        ev.push(Seen::new(Source::Qp, format!("retry_cnt {r}")));
    }
    if let Some(r) = qp.rnr_retry {
        ev.push(Seen::new(Source::Qp, format!("rnr_retry {r}")));
    }
    b.done(
        "rts-invalid",
        "the kernel rejected the RTS attributes (timeout, retry_cnt 0..7, rnr_retry 0..7, max_rd_atomic)".into(),
        ev,
        "use timeout 14, retry_cnt 6, rnr_retry 7, max_rd_atomic within the device's max_qp_rd_atom".into(),
        false,
    )
}

fn completion(b: Builder, status: u32) -> Explanation {
    let ctx = b.ctx;
    let qp = ctx.qp.clone().unwrap_or_default();
    match status {
        WC_RETRY_EXC_ERR => {
            // packets never reach the peer.
            let mut ev = Vec::new();
            if let Some(peer) = &ctx.peer {
                if let Some((summary, mev)) = gid_mismatch(&ctx.local, peer) {
                    return b.done(
                        "retry-exceeded-gid-mismatch",
                        format!("the peer never acknowledged: {summary}"),
                        mev,
                        "use the same RoCE version (v2 across subnets) and family on both ends; rdmactl's native exchange compares GID types before the QP, ibv_rc_pingpong's does not".into(),
                        true,
                    );
                }
            }
            if let Some((path, min)) = mtu_mismatch(ctx) {
                ev.push(Seen::new(Source::Qp, format!("path MTU {path}, smaller active MTU of the two ports {min}")));
                return b.done(
                    "retry-exceeded-mtu",
                    format!("packets of {path} bytes exceed what the path carries ({min}), so they are dropped"),
                    ev,
                    format!("use -m {min} (the smaller active MTU)"),
                    false,
                );
            }
            let route = ctx.route.clone().unwrap_or_default();
            // Linux 6.1 resolves a local peer's MAC without ARP, so RTR passes and the
            // packets themselves are dropped: their source address is local too.
            let peer_text = peer_ip(ctx).map(|p| p.to_string()).unwrap_or_else(|| "the peer".into());
            let dev_name = ctx.local.netdev_now().unwrap_or_else(|| "the GID's netdev".into());
            if let Some((summary, more, fix)) = same_host_ipv6(ctx, &route, &dev_name) {
                return b.done("same-host-ipv6", summary, more, fix, false);
            }
            if let Some((owner, more, fix)) = same_host_drop(&route, &peer_text, &dev_name) {
                return b.done(
                    "same-host-drop",
                    format!("same-host test: {owner} drops the RoCE packets from {dev_name} because their source address is local to this host, so nothing is ever acknowledged"),
                    more,
                    fix,
                    false,
                );
            }
            if let Some(flux) = &route.arp_flux {
                return b.done(
                    "retry-exceeded-arp-flux",
                    format!("no ACK came back, and this host has ARP flux: {dev_name} shares its subnet with other RDMA netdevs that answer ARP for each other's addresses, so {peer_text} may send its packets for this port to another port's MAC, which drops them (its QPs do not know the QPN)"),
                    vec![Seen::new(Source::Route, format!("ARP flux: {flux}"))],
                    format!("{}; then flush the neighbour entries (ip neigh flush all) on both hosts and run again", super::doctor::ARP_FLUX_FIX),
                    false,
                );
            }
            if let (Some(rd), Some(d)) = (&route.route_netdev, ctx.local.netdev_now()) {
                if !route.peer_is_local && *rd != d {
                    ev.push(Seen::new(Source::Route, format!("ip route get {}: dev {rd}; GID netdev {d}", peer_ip(ctx).map(|p| p.to_string()).unwrap_or_default())));
                }
            }
            if let Some(s) = &route.neighbour_state {
                ev.push(Seen::new(Source::Route, format!("neighbour state of the peer: {s}")));
            }
            if let Some(r) = qp.retry_cnt {
                ev.push(Seen::new(Source::Qp, format!("retry_cnt {r}")));
            }
            let counters = format!("`rdma statistic show link {}` before and after a run shows whether packets were retransmitted or dropped", ctx.local.name());
            b.done(
                "retry-exceeded",
                "the peer never acknowledged: it died, its QP is gone, or packets are dropped on the way (wrong GID or route, switch filtering, RoCE v1 across L3)".into(),
                ev,
                format!("check that the peer process is alive; use the same GID type on both ends and RoCE v2 across subnets; {counters}"),
                true,
            )
        }
        WC_RNR_RETRY_EXC_ERR => {
            let mut ev = Vec::new();
            if let Some(r) = qp.rnr_retry {
                ev.push(Seen::new(Source::Qp, format!("rnr_retry {r}{}", if r == 0 { " (no retries at all)" } else { "" })));
            }
            if qp.recv_posted_before_rtr == Some(false) {
                ev.push(Seen::new(Source::Qp, "receives were posted after the QP reached RTR"));
            }
            b.done(
                "rnr-retry-exceeded",
                "a SEND arrived at the peer when it had no receive posted (receiver not ready), more often than rnr_retry allows".into(),
                ev,
                "post receives before moving the QP to RTR and keep them replenished; set rnr_retry 7 (infinite) and min_rnr_timer 12".into(),
                false,
            )
        }
        WC_LOC_LEN_ERR => {
            let mut ev = Vec::new();
            if let Some(m) = qp.message_bytes {
                ev.push(Seen::new(Source::Qp, format!("message size {m}")));
            }
            if let Some((path, min)) = mtu_mismatch(ctx) {
                ev.push(Seen::new(Source::Qp, format!("path MTU {path}, smaller active MTU {min}")));
                return b.done(
                    "mtu-mismatch",
                    format!("path MTU mismatch: {path} set at RTR, but one port runs {min}"),
                    ev,
                    format!("use -m {min}, the smaller active MTU of the two ports"),
                    false,
                );
            }
            b.done(
                "local-length",
                "the received message is larger than the posted receive buffer (or the MTUs of the two ends differ)".into(),
                ev,
                "use the same -s on both ends, and -m no larger than the smaller active MTU".into(),
                false,
            )
        }
        WC_REM_ACCESS_ERR => b.done(
            "remote-access",
            "the peer refused an RDMA READ/WRITE: wrong rkey or address, or its MR lacks the remote access right".into(),
            vec![],
            "use the rkey and address the peer sent; register with IBV_ACCESS_REMOTE_WRITE/READ as the operation needs".into(),
            false,
        ),
        WC_REM_INV_REQ_ERR => b.done(
            "remote-invalid-request",
            "the peer rejected the request: the operation is not enabled on its QP, or the message exceeds its limits".into(),
            vec![],
            "enable the operation's access flags on the peer's QP; check message size against max_msg_sz".into(),
            false,
        ),
        WC_LOC_PROT_ERR => b.done(
            "local-protection",
            "the work request's buffer is outside the registered MR or its lkey is wrong".into(),
            vec![],
            "post only buffers inside the registered MR, with its lkey".into(),
            false,
        ),
        WC_WR_FLUSH_ERR => b.done(
            "flushed",
            "the QP was already in the error state: this completion is a consequence of an earlier failure".into(),
            vec![],
            "look at the first failed completion".into(),
            false,
        ),
        WC_LOC_QP_OP_ERR => b.done(
            "local-qp-operation",
            "the local QP could not execute the request (on rxe: the device is in another network namespace, or the netdev went away)".into(),
            vec![],
            "run in the network namespace that owns the RDMA device; check the netdev".into(),
            true,
        ),
        _ => generic(b),
    }
}

/// nothing completed before the deadline.
fn poll_timeout(b: Builder, seconds: f64) -> Explanation {
    let qp = b.ctx.qp.clone().unwrap_or_default();
    let mut ev = vec![Seen::new(
        Source::Failure,
        format!("no completion within {seconds} s"),
    )];
    if let Some(r) = qp.retry_cnt {
        ev.push(Seen::new(Source::Qp, format!("retry_cnt {r}")));
    }
    if qp.soft_roce && qp.retry_cnt == Some(7) {
        return b.done(
            "rxe-infinite-retry",
            "Soft-RoCE with retry_cnt 7 retries forever, so an unreachable or dead peer never produces an error completion".into(),
            ev,
            "use retry_cnt 6 or less; the peer is probably dead or unreachable".into(),
            true,
        );
    }
    b.done(
        "no-completion",
        "the peer stopped responding: it died, its QP went to error, or the path dropped packets"
            .into(),
        ev,
        "check the peer process and the path (rdmactl check --peer IP on both ends)".into(),
        true,
    )
}

/// Rows 8 (memlock) and resource exhaustion.
fn memlock(b: Builder) -> Explanation {
    let step = b.failure.step;
    let mut memlock = b.ctx.memlock.clone();
    if let (Some(m), Cause::WouldPin { pinned_bytes, .. }) = (&mut memlock, &b.failure.cause) {
        m.needed_bytes = *pinned_bytes;
    }
    match memlock {
        Some(m) if !m.cap_ipc_lock && m.limit_bytes.is_some_and(|l| l < m.needed_bytes) => {
            let limit = m.limit_bytes.unwrap_or(0);
            b.done(
                "memlock-limit",
                format!(
                    "the locked-memory limit ({}) is smaller than what {} needs to pin ({}), and this process lacks CAP_IPC_LOCK",
                    human_bytes(limit),
                    step.name(),
                    human_bytes(m.needed_bytes)
                ),
                vec![Seen::new(Source::Memlock, format!("RLIMIT_MEMLOCK soft limit {limit} bytes (ulimit -l {})", limit / 1024)), Seen::new(Source::Memlock, format!("needed {} bytes", m.needed_bytes)), Seen::new(Source::Memlock, "CAP_IPC_LOCK not held")],
                "raise memlock: '* - memlock unlimited' in /etc/security/limits.conf, LimitMEMLOCK=infinity in the systemd unit, or --ulimit memlock=-1 for the container".into(),
                false,
            )
        }
        Some(m) => {
            let limit = m.limit_bytes.map(human_bytes).unwrap_or_else(|| "unlimited".into());
            b.done(
                "out-of-resources",
                format!("{} ran out of memory although memlock allows it: the device's resources (max_mr, max_cq, max_qp) or the system's memory are exhausted", step.name()),
                vec![Seen::new(Source::Memlock, format!("RLIMIT_MEMLOCK {limit}, CAP_IPC_LOCK {}", if m.cap_ipc_lock { "held" } else { "not held" }))],
                "reduce the sizes (-s, queue depth), or free device resources held by other processes".into(),
                false,
            )
        }
        None => b.done(
            "memlock-limit",
            format!("{} could not pin memory: usually the locked-memory limit (ulimit -l) for a process without CAP_IPC_LOCK", step.name()),
            vec![],
            "check ulimit -l; raise memlock in limits.conf, the systemd unit or the container".into(),
            false,
        ),
    }
}

/// Checked before allocating: more than the host has available would end in the OOM killer.
fn memory_short(b: Builder) -> Explanation {
    let Cause::WouldPin {
        pinned_bytes,
        what,
        limit_bytes,
        ..
    } = &b.failure.cause
    else {
        return generic(b);
    };
    let ratio = (*pinned_bytes / (*limit_bytes).max(1)).max(1) + 1;
    b.done(
        "memory-short",
        format!(
            "the run would pin {} ({what}), more than the {} of memory this host has available: the OOM killer would end it",
            human_bytes(*pinned_bytes),
            human_bytes(*limit_bytes)
        ),
        vec![Seen::new(Source::Memlock, format!("MemAvailable {limit_bytes} bytes (/proc/meminfo)")), Seen::new(Source::Memlock, format!("to pin {pinned_bytes} bytes ({what})"))],
        format!("use a message size at least {ratio} times smaller (-s), or free memory on this host"),
        false,
    )
}

fn device_access(b: Builder) -> Explanation {
    let node = b.ctx.device_node.clone().unwrap_or_default();
    let path = if node.path.is_empty() {
        "/dev/infiniband/uverbsN".to_string()
    } else {
        node.path.clone()
    };
    let mut ev = Vec::new();
    if !node.path.is_empty() {
        ev.push(Seen::new(
            Source::DeviceNode,
            format!(
                "{path}: {}",
                if !node.exists {
                    "missing"
                } else if node.accessible {
                    "accessible"
                } else {
                    "access denied"
                }
            ),
        ));
    }
    b.done(
        "device-access",
        format!("{path} cannot be opened read-write: the kernel creates it 0666, so a container's device cgroup or a udev rule is blocking it"),
        ev,
        format!("pass the device into the container (--device={path}, or the RDMA device plugin), or fix the udev rule"),
        false,
    )
}

fn device_gone(b: Builder) -> Explanation {
    let node = b.ctx.device_node.clone().unwrap_or_default();
    let mut ev = Vec::new();
    if !node.path.is_empty() {
        ev.push(Seen::new(
            Source::DeviceNode,
            format!(
                "{}: {}",
                node.path,
                if node.exists { "present" } else { "missing" }
            ),
        ));
    }
    b.done(
        "device-gone",
        "the device node is missing: the device was removed, its driver unloaded, or /dev/infiniband is not mapped into this container".into(),
        ev,
        "check /sys/class/infiniband and /dev/infiniband; pass the devices into the container".into(),
        false,
    )
}

fn generic(b: Builder) -> Explanation {
    let evidence = vec![Seen::new(
        Source::Local,
        format!("local {}", local_gid_words(&b.ctx.local)),
    )];
    let summary = format!(
        "no rule explains {} at this step ({})",
        b.failure.cause,
        b.failure.step.name()
    );
    b.done(
        "unexplained",
        summary,
        evidence,
        "rerun with rdmactl check --peer IP on both ends to compare".into(),
        true,
    )
}

fn human_bytes(n: u64) -> String {
    if n >= 1 << 30 && n % (1 << 30) == 0 {
        format!("{} GiB", n >> 30)
    } else if n >= 1 << 20 && n % (1 << 20) == 0 {
        format!("{} MiB", n >> 20)
    } else if n >= 1 << 10 && n % (1 << 10) == 0 {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} bytes")
    }
}

fn mtu_min(ctx: &Facts) -> Option<u32> {
    let local = ctx.local.active_mtu?;
    Some(
        ctx.peer
            .as_ref()
            .and_then(|p| p.active_mtu)
            .map_or(local, |p| p.min(local)),
    )
}

/// (path MTU in use, the smaller active MTU) when the path MTU is too large.
fn mtu_mismatch(ctx: &Facts) -> Option<(u32, u32)> {
    let path = ctx
        .qp
        .as_ref()
        .and_then(|q| q.path_mtu)
        .or(ctx.requested_mtu)?;
    let min = mtu_min(ctx)?;
    (path > min).then_some((path, min))
}

// ---------------------------------------------------------------------------------------
// Before the QP: compare what the two ends sent each other

/// Compare the two ends of a native handshake before touching the QP. A finding of
/// severity Fail means RTR would fail or the connection would never carry a packet.
pub fn compare_peers(local: &EndFacts, peer: &EndFacts) -> Vec<Finding> {
    let mut out = Vec::new();
    let name_fix = |what: &str| -> String {
        let want = Want {
            family: peer
                .gid_now()
                .filter(|g| !g.is_zero())
                .map(|g| Family::of_gid(&g)),
            peer: peer.gid_now().filter(|g| !g.is_zero()).map(|g| g.ip()),
            route_netdev: None,
            peer_on_link: None,
            peer_gid_type: peer.type_now(),
            subnet_addresses: Vec::new(),
            route_source: None,
        };
        let ll = local.link_layer.clone().unwrap_or(LinkLayer::Ethernet);
        let sel = gidselect::select_gid(&local.gid_table, &ll, &want);
        match gidselect::suggestion(&local.gid_table, &sel) {
            Some(s) if sel.chosen != local.gid_index => format!("{what}; here: {s}"),
            _ => what.to_string(),
        }
    };

    if let (Some(l), Some(p)) = (&local.link_layer, &peer.link_layer) {
        if l != p {
            out.push(
                Finding::new(
                    Severity::Fail,
                    "link-layer-mismatch",
                    format!("local port is {l:?} and the peer's is {p:?}"),
                )
                .fix("connect ports of the same fabric: InfiniBand to InfiniBand, RoCE to RoCE"),
            );
            return out;
        }
    }
    for (who, ep) in [("local", local), ("peer", peer)] {
        if ep.is_infiniband() && matches!(ep.lid, Some(0) | Some(0xffff)) {
            out.push(
                Finding::new(
                    Severity::Fail,
                    "ib-lid-zero",
                    format!("the {who} InfiniBand port {} has no LID", ep.name()),
                )
                .evidence(format!(
                    "{who} LID 0x{:04x}, state {}",
                    ep.lid.unwrap_or(0),
                    ep.port_state.clone().unwrap_or_else(|| "?".into())
                ))
                .fix("start a subnet manager (opensm) or fix the link"),
            );
        }
    }
    let ethernet = local.is_ethernet() || peer.is_ethernet();
    if ethernet {
        for (who, ep) in [("local", local), ("peer", peer)] {
            if ep.gid_now().is_none_or_zero() {
                out.push(
                    Finding::new(
                        Severity::Fail,
                        "roce-no-grh",
                        format!("the {who} side has no GID: RoCE needs one on both ends"),
                    )
                    .evidence(format!(
                        "{who} GID {}",
                        ep.gid_now()
                            .map(|g| g.to_string())
                            .unwrap_or_else(|| "none".into())
                    ))
                    .fix(name_fix("give a GID index on both sides (-g N or -g auto)")),
                );
            }
        }
        if let Some((summary, ev)) = gid_mismatch(local, peer) {
            let code = if summary.starts_with("RoCE version") {
                "roce-version-mismatch"
            } else {
                "gid-family-mismatch"
            };
            let mut f = Finding::new(Severity::Fail, code, summary).fix(name_fix(
                "use the same RoCE version and address family on both ends",
            ));
            f.evidence = ev.into_iter().map(|e| e.text).collect();
            out.push(f);
        }
    }
    if let (Some(a), Some(b)) = (local.active_mtu, peer.active_mtu) {
        if a != b {
            out.push(
                Finding::new(
                    Severity::Info,
                    "mtu-differs",
                    format!(
                        "active MTUs differ (local {a}, peer {b}): the path MTU will be {}",
                        a.min(b)
                    ),
                )
                .evidence(format!("local active_mtu {a}, peer active_mtu {b}")),
            );
        }
    }
    out
}

trait ZeroGid {
    fn is_none_or_zero(&self) -> bool;
}

impl ZeroGid for Option<Gid> {
    fn is_none_or_zero(&self) -> bool {
        self.map_or(true, |g| g.is_zero())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::diagnose::gidselect::tests::{entry, mlx5, rxe0};
    use crate::model::facts::{DeviceNodeFacts, MemlockFacts, NetdevFacts, QpFacts};

    fn rxe_local(index: Option<u32>) -> EndFacts {
        EndFacts {
            device: "rxe0".into(),
            port: 1,
            link_layer: Some(LinkLayer::Ethernet),
            port_state: Some("ACTIVE".into()),
            phys_state: Some("LinkUp".into()),
            lid: Some(0),
            active_mtu: Some(1024),
            gid_index: index,
            gid: None,
            gid_type: None,
            netdev: None,
            port_netdev: None,
            gid_table: rxe0(),
            gid_table_len: Some(1024),
        }
    }

    fn rxe_peer(gid: &str) -> EndFacts {
        EndFacts {
            device: "rxe1".into(),
            port: 1,
            link_layer: Some(LinkLayer::Ethernet),
            port_state: Some("ACTIVE".into()),
            lid: Some(0),
            active_mtu: Some(1024),
            gid_index: Some(1),
            gid: Some(Gid::parse(gid).unwrap()),
            gid_type: Some(GidType::RoceV2),
            ..EndFacts::default()
        }
    }

    /// Same-host rxe0 → rxe1 in the VM, accept_local set.
    fn vm_route(accept_local: bool) -> RouteFacts {
        RouteFacts {
            peer: Some("192.168.77.2".parse().unwrap()),
            route_netdev: Some("lo".into()),
            peer_is_local: true,
            peer_local_netdev: Some("veth1".into()),
            accept_local: Some(accept_local),
            rp_filter: Some(0),
            ..RouteFacts::default()
        }
    }

    fn rxe_ctx(index: Option<u32>, peer_gid: &str) -> Facts {
        Facts {
            local: rxe_local(index),
            peer: Some(rxe_peer(peer_gid)),
            route: Some(vm_route(true)),
            netdev: Some(NetdevFacts {
                name: "veth0".into(),
                exists: true,
                up: true,
                operstate: Some("up".into()),
                mtu: Some(1500),
            }),
            ..Facts::default()
        }
    }

    fn ib_ctx(lid: u16, state: &str, phys: &str) -> Facts {
        Facts {
            local: EndFacts {
                device: "mlx5_0".into(),
                port: 1,
                link_layer: Some(LinkLayer::InfiniBand),
                port_state: Some(state.into()),
                phys_state: Some(phys.into()),
                lid: Some(lid),
                active_mtu: Some(4096),
                gid_index: None,
                gid_table: vec![entry(0, "fe80::248a:703:5d:7f1", Some(GidType::Ib), None)],
                ..EndFacts::default()
            },
            peer: Some(EndFacts {
                link_layer: Some(LinkLayer::InfiniBand),
                lid: Some(6),
                active_mtu: Some(4096),
                ..EndFacts::default()
            }),
            ..Facts::default()
        }
    }

    fn mlx5_ctx(index: u32, peer_gid: &str, peer_type: GidType) -> Facts {
        Facts {
            local: EndFacts {
                device: "mlx5_0".into(),
                port: 1,
                link_layer: Some(LinkLayer::Ethernet),
                port_state: Some("ACTIVE".into()),
                active_mtu: Some(4096),
                gid_index: Some(index),
                gid_table: mlx5(),
                gid_table_len: Some(255),
                ..EndFacts::default()
            },
            peer: Some(EndFacts {
                link_layer: Some(LinkLayer::Ethernet),
                active_mtu: Some(4096),
                gid_index: Some(3),
                gid: Some(Gid::parse(peer_gid).unwrap()),
                gid_type: Some(peer_type),
                ..EndFacts::default()
            }),
            route: Some(RouteFacts {
                peer: Some(Gid::parse(peer_gid).unwrap().ip()),
                route_netdev: Some("ens1f0".into()),
                neighbour_state: Some("REACHABLE".into()),
                ..RouteFacts::default()
            }),
            ..Facts::default()
        }
    }

    struct Case {
        name: &'static str,
        step: Step,
        failure: Cause,
        ctx: Facts,
        code: &'static str,
        /// Substrings the rendered explanation must contain.
        says: &'static [&'static str],
        suggested: Option<u32>,
    }

    fn errno(e: i32) -> Cause {
        Cause::errno(e)
    }

    fn wc(status: u32) -> Cause {
        Cause::WcStatus {
            status,
            vendor_err: 0x81,
            opcode: 0,
            op: None,
        }
    }

    /// Everything an explanation says, for substring checks.
    pub(crate) fn text(x: &Explanation) -> String {
        let seen: Vec<&str> = x.evidence.iter().map(|e| e.text.as_str()).collect();
        format!("{}\n{}\n{}", x.summary, seen.join("\n"), x.fix)
    }

    fn cases() -> Vec<Case> {
        let mut no_grh = rxe_ctx(None, "::");
        no_grh.peer.as_mut().unwrap().gid_index = None;

        let mut out_of_range = rxe_ctx(Some(2000), "::ffff:192.168.77.2");
        out_of_range.local.gid_table_len = Some(1024);

        let mut gone = rxe_ctx(Some(1), "::ffff:192.168.77.2");
        gone.netdev = Some(NetdevFacts {
            name: "veth0".into(),
            exists: false,
            up: false,
            operstate: None,
            mtu: None,
        });
        let mut down = rxe_ctx(Some(1), "::ffff:192.168.77.2");
        down.netdev = Some(NetdevFacts {
            name: "veth0".into(),
            exists: true,
            up: false,
            operstate: Some("down".into()),
            mtu: Some(1500),
        });

        // The netdev went down under traffic; the port's state in sysfs still says ACTIVE.
        let mut down_under_traffic = down.clone();
        down_under_traffic.local.port_netdev = Some("veth0".into());
        down_under_traffic.local.port_state = Some("ACTIVE".into());

        let mut no_accept_local = rxe_ctx(Some(1), "::ffff:192.168.77.2");
        no_accept_local.route = Some(vm_route(false));

        let mut routed = mlx5_ctx(1, "2001:db8:99::1", GidType::RoceV2);
        routed.route = Some(RouteFacts {
            peer: Some("2001:db8:99::1".parse().unwrap()),
            route_netdev: Some("ens1f0".into()),
            gateway: Some("2001:db8::1".parse().unwrap()),
            ..RouteFacts::default()
        });

        let mut other_dev = mlx5_ctx(3, "::ffff:10.100.0.9", GidType::RoceV2);
        other_dev.route.as_mut().unwrap().route_netdev = Some("ens1f0.100".into());

        let mut neigh_failed = mlx5_ctx(3, "::ffff:10.0.0.6", GidType::RoceV2);
        neigh_failed.route.as_mut().unwrap().neighbour_state = Some("FAILED".into());

        let mut mtu = rxe_ctx(Some(1), "::ffff:192.168.77.2");
        mtu.requested_mtu = Some(4096);
        let mut mtu_wc = mtu.clone();
        mtu_wc.qp = Some(QpFacts {
            path_mtu: Some(4096),
            message_bytes: Some(4096),
            ..QpFacts::default()
        });

        let mut retry_v1 = mlx5_ctx(3, "::ffff:10.0.0.6", GidType::RoceV1);
        retry_v1.qp = Some(QpFacts {
            retry_cnt: Some(6),
            ..QpFacts::default()
        });
        let mut retry_dead = rxe_ctx(Some(1), "::ffff:192.168.77.2");
        retry_dead.qp = Some(QpFacts {
            retry_cnt: Some(6),
            soft_roce: true,
            ..QpFacts::default()
        });
        let mut flux = rxe_ctx(Some(1), "::ffff:192.168.77.2");
        flux.route = Some(RouteFacts {
            arp_flux: Some("veth0, veth1 on 192.168.77.0/24 answer ARP for each other's addresses (veth0 arp_ignore 0, veth1 arp_ignore 0)".into()),
            ..vm_route(true)
        });
        let mut v6_same_host = rxe_ctx(Some(2), "2001:db8::2");
        v6_same_host.local.gid_table.push(entry(
            2,
            "2001:db8::1",
            Some(GidType::RoceV2),
            Some("veth0"),
        ));
        v6_same_host.route = Some(RouteFacts {
            peer: Some("2001:db8::2".parse().unwrap()),
            accept_local: Some(false),
            ..vm_route(false)
        });
        v6_same_host.qp = Some(QpFacts {
            retry_cnt: Some(6),
            soft_roce: true,
            ..QpFacts::default()
        });
        let mut rnr = rxe_ctx(Some(1), "::ffff:192.168.77.2");
        rnr.qp = Some(QpFacts {
            rnr_retry: Some(0),
            recv_posted_before_rtr: Some(false),
            ..QpFacts::default()
        });
        let mut rxe_forever = rxe_ctx(Some(1), "::ffff:192.168.77.2");
        rxe_forever.qp = Some(QpFacts {
            retry_cnt: Some(7),
            soft_roce: true,
            ..QpFacts::default()
        });

        let mut tiny_memlock = rxe_ctx(Some(1), "::ffff:192.168.77.2");
        tiny_memlock.memlock = Some(MemlockFacts {
            limit_bytes: Some(64 * 1024),
            cap_ipc_lock: false,
            needed_bytes: 8 << 20,
        });
        let mut roomy_memlock = tiny_memlock.clone();
        roomy_memlock.memlock = Some(MemlockFacts {
            limit_bytes: None,
            cap_ipc_lock: false,
            needed_bytes: 8 << 20,
        });

        let mut eacces = rxe_ctx(Some(1), "::ffff:192.168.77.2");
        eacces.device_node = Some(DeviceNodeFacts {
            path: "/dev/infiniband/uverbs0".into(),
            exists: true,
            accessible: false,
            ..DeviceNodeFacts::default()
        });

        let mut roce_down = rxe_ctx(Some(1), "::ffff:192.168.77.2");
        roce_down.local.port_state = Some("DOWN".into());
        roce_down.local.phys_state = Some("Disabled".into());

        let mut vlan_gone = mlx5_ctx(7, "::ffff:10.0.0.6", GidType::RoceV2);
        vlan_gone.netdev = Some(NetdevFacts {
            name: "ens1f0.100".into(),
            exists: false,
            ..NetdevFacts::default()
        });
        vlan_gone.route = None;
        let mut pkey_past = rxe_ctx(Some(1), "::ffff:192.168.77.2");
        pkey_past.qp = Some(QpFacts {
            pkey_index: Some(1),
            pkey_table_len: Some(1),
            ..QpFacts::default()
        });
        let mut pkey_inside = pkey_past.clone();
        pkey_inside.qp.as_mut().unwrap().pkey_index = Some(0);
        let mut inline_over = rxe_ctx(Some(1), "::ffff:192.168.77.2");
        inline_over.qp = Some(QpFacts {
            inline_bytes: Some(417),
            max_inline_data: Some(416),
            ..QpFacts::default()
        });
        vec![
            Case {
                name: "INIT EINVAL",
                step: Step::Init,
                failure: errno(libc::EINVAL),
                ctx: rxe_ctx(Some(1), "::ffff:192.168.77.2"),
                code: "init-invalid",
                says: &["P_Key"],
                suggested: None,
            },
            Case {
                name: "create QP EINVAL",
                step: Step::QpCreate,
                failure: errno(libc::EINVAL),
                ctx: rxe_ctx(Some(1), "::ffff:192.168.77.2"),
                code: "qp-caps",
                says: &["max_qp_wr"],
                suggested: None,
            },
            Case {
                name: "INIT EINVAL, P_Key index past the table",
                step: Step::Init,
                failure: errno(libc::EINVAL),
                ctx: pkey_past.clone(),
                code: "pkey-index-past-table",
                says: &["P_Key index 1", "1 entries", "pkey_index 1 given at INIT", "rxe0/1 pkey_tbl_len 1"],
                suggested: None,
            },
            Case {
                name: "INIT EINVAL, P_Key index inside the table",
                step: Step::Init,
                failure: errno(libc::EINVAL),
                ctx: pkey_inside,
                code: "init-invalid",
                says: &["P_Key"],
                suggested: None,
            },
            Case {
                name: "post send EINVAL, inline over max_inline_data",
                step: Step::PostSend,
                failure: errno(libc::EINVAL),
                ctx: inline_over.clone(),
                code: "inline-too-large",
                says: &["417 bytes", "max_inline_data 416 granted", "EINVAL", "at most 416 bytes"],
                suggested: None,
            },
            Case {
                name: "post send ENOMEM, inline over max_inline_data",
                step: Step::PostSend,
                failure: errno(libc::ENOMEM),
                ctx: inline_over,
                code: "inline-too-large",
                says: &["ENOMEM"],
                suggested: None,
            },
            Case {
                name: "a verbs rule broken",
                step: Step::Semantics,
                failure: Cause::invalid("a SEND without the solicited flag raised an event on a CQ armed solicited-only"),
                ctx: rxe_ctx(Some(1), "::ffff:192.168.77.2"),
                code: "semantics-broken",
                says: &["solicited-only", "rdma-core"],
                suggested: None,
            },
            Case {
                name: "post send ENOMEM",
                step: Step::PostSend,
                failure: errno(libc::ENOMEM),
                ctx: rxe_ctx(Some(1), "::ffff:192.168.77.2"),
                code: "queue-full",
                says: &["poll completions"],
                suggested: None,
            },
            Case {
                name: "RTR ENODEV, VLAN netdev gone: another netdev's GID works",
                step: Step::Rtr,
                failure: errno(libc::ENODEV),
                ctx: vlan_gone,
                code: "gid-netdev-missing",
                says: &[
                    "ens1f0.100",
                    "use GID index 3 (RoCE v2, ::ffff:10.0.0.5 on ens1f0)",
                ],
                suggested: Some(3),
            },
            Case {
                name: "RTR EINVAL, link-local against global IPv6",
                step: Step::Rtr,
                failure: errno(libc::EINVAL),
                ctx: mlx5_ctx(1, "2001:db8::6", GidType::RoceV2),
                code: "gid-mismatch",
                says: &[
                    "scope mismatch",
                    "use GID index 5 (RoCE v2, 2001:db8::5 on ens1f0)",
                ],
                suggested: Some(5),
            },
            Case {
                name: "RTR EINVAL, no GRH on RoCE",
                step: Step::Rtr,
                failure: errno(libc::EINVAL),
                ctx: no_grh,
                code: "roce-no-grh",
                says: &["GRH", "GID index 1 (RoCE v2, ::ffff:192.168.77.1 on veth0)"],
                suggested: Some(1),
            },
            Case {
                name: "RTR EINVAL, -g 0 against -g 1 (mixed families)",
                step: Step::Rtr,
                failure: errno(libc::EINVAL),
                ctx: rxe_ctx(Some(0), "::ffff:192.168.77.2"),
                code: "gid-mismatch",
                says: &["link-local IPv6", "IPv4-mapped", "use GID index 1"],
                suggested: Some(1),
            },
            Case {
                name: "RTR EINVAL, v1 against v2",
                step: Step::Rtr,
                failure: errno(libc::EINVAL),
                ctx: mlx5_ctx(2, "::ffff:10.0.0.6", GidType::RoceV2),
                code: "gid-mismatch",
                says: &[
                    "RoCE version mismatch",
                    "use GID index 3 (RoCE v2, ::ffff:10.0.0.5 on ens1f0)",
                ],
                suggested: Some(3),
            },
            Case {
                name: "RTR EINVAL, index out of range",
                step: Step::Rtr,
                failure: errno(libc::EINVAL),
                ctx: out_of_range,
                code: "gid-index-out-of-range",
                says: &["2000", "1024 entries", "use GID index 1"],
                suggested: Some(1),
            },
            Case {
                name: "RTR ENODATA, empty slot",
                step: Step::Rtr,
                failure: errno(libc::ENODATA),
                ctx: rxe_ctx(Some(7), "::ffff:192.168.77.2"),
                code: "gid-empty-slot",
                says: &["index 7", "empty", "use GID index 1"],
                suggested: Some(1),
            },
            Case {
                name: "RTR ENODEV, netdev in another netns",
                step: Step::Rtr,
                failure: errno(libc::ENODEV),
                ctx: gone,
                code: "gid-netdev-missing",
                says: &["veth0", "network namespace", "no GID on this port fits"],
                suggested: None,
            },
            Case {
                name: "RTR ENODEV, netdev down",
                step: Step::Rtr,
                failure: errno(libc::ENODEV),
                ctx: down,
                code: "gid-netdev-missing",
                says: &["ip link set veth0 up"],
                suggested: None,
            },
            Case {
                name: "RTR ETIMEDOUT, same-host ARP without accept_local",
                step: Step::Rtr,
                failure: errno(libc::ETIMEDOUT),
                ctx: no_accept_local,
                code: "same-host-arp",
                says: &["accept_local", "veth1", "GID index 1"],
                suggested: Some(1),
            },
            Case {
                name: "RTR ETIMEDOUT, link-local GID toward a routed peer",
                step: Step::Rtr,
                failure: errno(libc::ETIMEDOUT),
                ctx: routed,
                code: "link-local-routed-peer",
                says: &["router", "use GID index 5 (RoCE v2, 2001:db8::5 on ens1f0)"],
                suggested: Some(5),
            },
            Case {
                name: "RTR ETIMEDOUT, GID on a netdev the peer is not routed through",
                step: Step::Rtr,
                failure: errno(libc::ETIMEDOUT),
                ctx: other_dev,
                code: "route-other-netdev",
                says: &["ens1f0.100", "use GID index 7"],
                suggested: Some(7),
            },
            Case {
                name: "RTR ETIMEDOUT, neighbour FAILED",
                step: Step::Rtr,
                failure: errno(libc::ETIMEDOUT),
                ctx: neigh_failed,
                code: "neighbour-unresolved",
                says: &["FAILED", "10.0.0.6", "GID index 3"],
                suggested: Some(3),
            },
            Case {
                name: "InfiniBand LID 0, no SM",
                step: Step::Rtr,
                failure: errno(libc::EINVAL),
                ctx: ib_ctx(0, "INIT", "LinkUp"),
                code: "ib-port-not-active",
                says: &["opensm", "LID 0x0000", "GID index 0"],
                suggested: Some(0),
            },
            Case {
                name: "InfiniBand port polling",
                step: Step::QueryPort,
                failure: errno(libc::EINVAL),
                ctx: ib_ctx(0, "DOWN", "Polling"),
                code: "ib-port-not-active",
                says: &["cable"],
                suggested: None,
            },
            Case {
                name: "RoCE port down",
                step: Step::Rtr,
                failure: errno(libc::ETIMEDOUT),
                ctx: roce_down,
                code: "port-down",
                says: &["ip link set veth0 up"],
                suggested: Some(1),
            },
            Case {
                name: "LOC_QP_OP_ERR when the netdev went down before the port state did",
                step: Step::Poll,
                failure: wc(WC_LOC_QP_OP_ERR),
                ctx: down_under_traffic,
                code: "port-down",
                says: &["cannot send: its netdev veth0 is down", "ip link set veth0 up"],
                suggested: None,
            },
            Case {
                name: "RTR EINVAL, -m above the active MTU",
                step: Step::Rtr,
                failure: errno(libc::EINVAL),
                ctx: mtu,
                code: "mtu-too-large",
                says: &["-m 1024", "GID index 1"],
                suggested: Some(1),
            },
            Case {
                name: "LOC_LEN_ERR with a path MTU mismatch",
                step: Step::Poll,
                failure: wc(WC_LOC_LEN_ERR),
                ctx: mtu_wc,
                code: "mtu-mismatch",
                says: &["IBV_WC_LOC_LEN_ERR", "-m 1024"],
                suggested: Some(1),
            },
            Case {
                name: "RETRY_EXC_ERR with v1 against v2",
                step: Step::Poll,
                failure: wc(WC_RETRY_EXC_ERR),
                ctx: retry_v1,
                code: "retry-exceeded-gid-mismatch",
                says: &[
                    "status 12",
                    "transport retry counter exceeded",
                    "RoCE version",
                    "GID index 2",
                ],
                suggested: Some(2),
            },
            Case {
                name: "data that arrived is not what was sent",
                step: Step::Verify,
                failure: Cause::invalid("RDMA READ: byte 17 of 4096 is 0x00, expected 0x4b"),
                ctx: rxe_ctx(Some(1), "::ffff:192.168.77.2"),
                code: "data-mismatch",
                says: &["bytes differ", "byte 17 of 4096", "selftest on each host"],
                suggested: None,
            },
            Case {
                name: "RETRY_EXC_ERR, IPv6 between two rxe devices of one host",
                step: Step::Poll,
                failure: wc(WC_RETRY_EXC_ERR),
                ctx: v6_same_host,
                code: "same-host-ipv6",
                says: &["same-host IPv6", "veth0 to veth1", "rxe0/1 is Soft-RoCE", "IPv4-mapped GIDs"],
                suggested: Some(2),
            },
            Case {
                name: "RETRY_EXC_ERR on a host with ARP flux",
                step: Step::Poll,
                failure: wc(WC_RETRY_EXC_ERR),
                ctx: flux,
                code: "retry-exceeded-arp-flux",
                says: &["ARP flux", "veth0 arp_ignore 0", "arp_ignore=1", "another port's MAC"],
                suggested: Some(1),
            },
            Case {
                name: "RETRY_EXC_ERR, peer died",
                step: Step::Poll,
                failure: wc(WC_RETRY_EXC_ERR),
                ctx: retry_dead,
                code: "retry-exceeded",
                says: &["IBV_WC_RETRY_EXC_ERR", "rdma statistic show link", "GID index 1"],
                suggested: Some(1),
            },
            Case {
                name: "RNR_RETRY_EXC_ERR",
                step: Step::Poll,
                failure: wc(WC_RNR_RETRY_EXC_ERR),
                ctx: rnr,
                code: "rnr-retry-exceeded",
                says: &["status 13", "rnr_retry 0", "rnr_retry 7", "GID index 1"],
                suggested: Some(1),
            },
            Case {
                name: "rxe retry_cnt 7 never completes",
                step: Step::Poll,
                failure: Cause::Timeout { waited_ms: 5000, waiting_for: None },
                ctx: rxe_forever,
                code: "rxe-infinite-retry",
                says: &["retry_cnt 6"],
                suggested: Some(1),
            },
            Case {
                name: "ENOMEM at reg_mr with a tiny memlock",
                step: Step::Mr,
                failure: errno(libc::ENOMEM),
                ctx: tiny_memlock,
                code: "memlock-limit",
                says: &[
                    "64 KiB",
                    "8 MiB",
                    "CAP_IPC_LOCK",
                    "limits.conf",
                ],
                suggested: None,
            },
            Case {
                name: "ENOMEM with memlock unlimited",
                step: Step::Mr,
                failure: errno(libc::ENOMEM),
                ctx: roomy_memlock,
                code: "out-of-resources",
                says: &["unlimited"],
                suggested: None,
            },
            Case {
                name: "EACCES on the device",
                step: Step::Open,
                failure: errno(libc::EACCES),
                ctx: eacces,
                code: "device-access",
                says: &["/dev/infiniband/uverbs0", "cgroup"],
                suggested: None,
            },
            Case {
                name: "-g 7 looked up before the QP: an empty slot",
                step: Step::QueryGid,
                failure: errno(libc::ENODATA),
                ctx: Facts {
                    peer: None,
                    ..rxe_ctx(Some(7), "::ffff:192.168.77.2")
                },
                code: "gid-empty-slot",
                says: &["GID index 7 on rxe0/1 is an empty slot", "use GID index 1"],
                suggested: Some(1),
            },
            Case {
                name: "no listener on the TCP port",
                step: Step::Connect,
                failure: errno(libc::ECONNREFUSED),
                ctx: Facts {
                    peer: None,
                    ..rxe_ctx(Some(1), "::ffff:192.168.77.2")
                },
                code: "no-listener",
                says: &["nothing listens on 192.168.77.2", "same -p"],
                suggested: None,
            },
            Case {
                name: "garbage instead of a handshake",
                step: Step::Exchange,
                failure: Cause::invalid("the peer sent \"garbage\\n\", which is neither an rdmactl exchange nor ibv_rc_pingpong's"),
                ctx: Facts {
                    peer: None,
                    ..rxe_ctx(Some(1), "::ffff:192.168.77.2")
                },
                code: "bad-handshake",
                says: &["garbage", "--compat rc_pingpong"],
                suggested: Some(1),
            },
            Case {
                name: "a stock ibv_rc_pingpong server closes without answering",
                step: Step::Exchange,
                failure: Cause::PeerClosed,
                ctx: Facts {
                    peer: None,
                    ..rxe_ctx(Some(1), "::ffff:192.168.77.2")
                },
                code: "peer-closed",
                says: &["RTR before it answers", "IPv4-mapped RoCE v2 GID"],
                suggested: Some(1),
            },
            Case {
                name: "native compare: this end's IPv4 GID fits, the peer's link-local one does not",
                step: Step::Compare,
                failure: Cause::invalid("GID address families differ"),
                ctx: rxe_ctx(Some(1), "fe80::5054:ff:fe12:3456"),
                code: "gid-family-mismatch",
                says: &["address family mismatch", "on the peer (index 1 (RoCE v2, IPv4"],
                suggested: Some(1),
            },
            Case {
                name: "native compare: a server that insisted on -n against a --duration client",
                step: Step::Compare,
                failure: Cause::Mismatch {
                    mismatches: vec![crate::model::failure::Mismatch::Length {
                        local: "-n 100".into(),
                        remote: "--duration 1".into(),
                    }],
                },
                ctx: rxe_ctx(Some(1), "::ffff:192.168.77.2"),
                code: "parameters-differ",
                says: &[
                    "run lengths differ: -n 100 here, --duration 1 on the peer",
                    "give both ends the same -n, --duration and --lat (or none of them on the server)",
                ],
                suggested: None,
            },
            Case {
                name: "native compare: this end is the link-local one",
                step: Step::Compare,
                failure: Cause::invalid("GID address families differ"),
                ctx: rxe_ctx(Some(0), "::ffff:192.168.77.2"),
                code: "gid-family-mismatch",
                says: &["address family mismatch", "use GID index 1 (RoCE v2"],
                suggested: Some(1),
            },
            Case {
                name: "compat RTR with mixed families times out: the families are the cause",
                step: Step::Rtr,
                failure: errno(libc::ETIMEDOUT),
                ctx: {
                    let mut c = rxe_ctx(Some(1), "fe80::5054:ff:fe12:3456");
                    c.peer.as_mut().unwrap().gid_type = None;
                    c
                },
                code: "gid-mismatch",
                says: &["address family mismatch", "link-local"],
                suggested: Some(1),
            },
            Case {
                name: "same host without accept_local on 6.1: RTR passes, the packets are dropped",
                step: Step::Poll,
                failure: wc(WC_RETRY_EXC_ERR),
                ctx: {
                    let mut c = rxe_ctx(Some(1), "::ffff:192.168.77.2");
                    c.route = Some(vm_route(false));
                    c
                },
                code: "same-host-drop",
                says: &[
                    "veth1 drops the RoCE packets from veth0",
                    "accept_local = 0",
                    "sysctl -w net.ipv4.conf.all.accept_local=1",
                ],
                suggested: Some(1),
            },
        ]
    }

    /// Whether the fact a seen line names was gathered in the run: its part of `Facts` is
    /// there (or, for the failure's own words, the failure).
    pub(crate) fn gathered(facts: &Facts, failure: &Failure, seen: &Seen) -> bool {
        match seen.from {
            Source::Failure => true,
            Source::Local => facts.local.link_layer.is_some() || !facts.local.device.is_empty(),
            Source::Peer => facts.peer.is_some(),
            Source::Netdev => facts.netdev.is_some(),
            Source::Route => facts.route.is_some(),
            Source::Memlock => {
                facts.memlock.is_some() || matches!(failure.cause, Cause::WouldPin { .. })
            }
            Source::Qp => {
                facts.qp.is_some()
                    || failure.context.qp.is_some()
                    || failure.context.path_mtu.is_some()
                    || facts.requested_mtu.is_some()
            }
            Source::DeviceNode => facts.device_node.is_some(),
            Source::Host => {
                facts.evidence.contains(&seen.text)
                    || !facts.port_holders.is_empty()
                    || facts.cm_source.is_some()
            }
            Source::PeerNotice => matches!(failure.cause, Cause::PeerReported { .. }),
            // An explanation names the fact each line states; an unattributed line is a bug.
            Source::Gathered => false,
        }
    }

    #[test]
    fn every_rule() {
        for case in cases() {
            let failure = Failure::new(case.step, case.failure.clone(), Default::default());
            let exp = explain(&failure, &case.ctx);
            let text = format!("{failure}\n{}", text(&exp));
            assert_eq!(exp.code, case.code, "{}:\n{text}", case.name);
            for s in case.says {
                assert!(text.contains(s), "{}: missing {s:?} in\n{text}", case.name);
            }
            assert_eq!(
                exp.suggested_gid_index, case.suggested,
                "{}:\n{text}",
                case.name
            );
            // Every seen line states a fact this run gathered.
            for seen in &exp.evidence {
                assert!(
                    gathered(&case.ctx, &failure, seen),
                    "{}: seen line {:?} claims {:?}, which this run did not gather:\n{text}",
                    case.name,
                    seen.text,
                    seen.from
                );
            }
            // A step the GID cannot cause has no seen line about the GID.
            let gid_free = matches!(
                case.step,
                Step::Open
                    | Step::Pd
                    | Step::Mr
                    | Step::Cq
                    | Step::QpCreate
                    | Step::Init
                    | Step::PostSend
                    | Step::PostRecv
                    | Step::Verify
                    | Step::Listen
                    | Step::Connect
            );
            if gid_free {
                assert!(
                    !exp.evidence.iter().any(|e| e.contains("GID")),
                    "{}: a GID seen line under a step the GID cannot cause:\n{text}",
                    case.name
                );
            }
            // Whenever an index would work, the explanation names it.
            if let Some(i) = exp.suggested_gid_index {
                assert!(
                    text.contains(&format!("GID index {i}")),
                    "{}: does not name index {i}:\n{text}",
                    case.name
                );
            }
        }
    }

    /// The peer's cause does not hide this end's own down port: the local port explains
    /// this end first, with the peer's words as evidence.
    #[test]
    fn own_port_down_outranks_the_peers_notice() {
        let notice = crate::model::failure::PeerNotice {
            role: "server".into(),
            message: "work completion failed (rxe0/1): IBV_WC_RETRY_EXC_ERR".into(),
            code: "port-down".into(),
            summary: "RoCE port rxe0/1 is not ACTIVE".into(),
            evidence: vec![],
            fix: "ip link set veth0 up".into(),
        };
        let failure = Failure::new(
            Step::Poll,
            Cause::PeerReported {
                notice: Box::new(notice),
            },
            Default::default(),
        );
        let mut facts = rxe_ctx(Some(1), "::ffff:192.168.77.2");
        facts.local.port_state = Some("DOWN".into());
        facts.local.port_netdev = Some("veth0".into());
        facts.netdev = Some(NetdevFacts {
            name: "veth0".into(),
            exists: true,
            up: false,
            operstate: Some("down".into()),
            mtu: None,
        });
        let x = explain(&failure, &facts);
        assert_eq!(x.code, "port-down");
        assert!(
            x.summary
                .starts_with("RoCE port rxe0/1 is not ACTIVE: its netdev"),
            "{}",
            x.summary
        );
        assert!(
            x.evidence
                .iter()
                .any(|e| e.from == Source::PeerNotice && e.contains("the server said")),
            "{x:?}"
        );
        // No carrier: the fix is at the other end of the link.
        facts.netdev.as_mut().unwrap().operstate = Some("lowerlayerdown".into());
        let x = explain(&failure, &facts);
        assert!(
            x.summary
                .contains("has no carrier (its link partner is down)"),
            "{}",
            x.summary
        );
        assert!(x.fix.contains("for a veth its peer"), "{}", x.fix);
    }

    /// A busy TCP port is about the port, not the GID: no GID claim, and the fix is -p.
    #[test]
    fn listen_port_in_use() {
        let failure = Failure::new(
            Step::Listen,
            Cause::errno(libc::EADDRINUSE),
            crate::model::failure::FailureContext {
                bind_addr: Some("[::]:18515".into()),
                ..Default::default()
            },
        );
        assert_eq!(
            failure.to_string(),
            "listen (TCP) failed (on [::]:18515): EADDRINUSE (98: Address already in use)"
        );
        let mut facts = rxe_ctx(Some(1), "::ffff:192.168.77.2");
        let x = explain(&failure, &facts);
        assert_eq!(x.code, "port-in-use");
        assert!(x.summary.contains("TCP port 18515"), "{x:?}");
        assert!(x.fix.contains("-p"), "{x:?}");
        assert!(x.evidence.iter().all(|e| !e.contains("GID")), "{x:?}");
        assert_eq!(x.suggested_gid_index, None);
        // Named when /proc tells, as `ss -p` does.
        facts.port_holders = vec![(4242, "rdmactl".into())];
        let x = explain(&failure, &facts);
        assert!(
            x.summary
                .starts_with("rdmactl (pid 4242) already listens on TCP port 18515"),
            "{x:?}"
        );
        assert!(
            x.evidence.iter().any(|e| e.contains("/proc/4242/fd")),
            "{x:?}"
        );
    }

    #[test]
    fn wc_names_and_texts() {
        use crate::model::errno::{wc_status_name, wc_status_text};
        assert_eq!(wc_status_name(12), "IBV_WC_RETRY_EXC_ERR");
        assert_eq!(wc_status_text(12), "transport retry counter exceeded");
        assert_eq!(wc_status_name(13), "IBV_WC_RNR_RETRY_EXC_ERR");
        assert_eq!(wc_status_name(5), "IBV_WC_WR_FLUSH_ERR");
        assert_eq!(wc_status_name(99), "IBV_WC_UNKNOWN");
        assert_eq!(
            Cause::errno(libc::ETIMEDOUT).to_string(),
            "ETIMEDOUT (110: Connection timed out)"
        );
    }

    #[test]
    fn compare_peers_table() {
        let ok = compare_peers(&rxe_local(Some(1)), &rxe_peer("::ffff:192.168.77.2"));
        assert!(ok.iter().all(|f| f.severity < Severity::Warn), "{ok:?}");

        let cases: Vec<(&str, EndFacts, EndFacts, &str, &str)> = vec![
            (
                "link-local against IPv4",
                rxe_local(Some(0)),
                rxe_peer("::ffff:192.168.77.2"),
                "gid-family-mismatch",
                "GID index 1",
            ),
            (
                "IPv4 against link-local",
                rxe_local(Some(1)),
                rxe_peer("fe80::ec2c:c7ff:fe05:b79a"),
                "gid-family-mismatch",
                "GID index 0",
            ),
            (
                "v2 against v1",
                EndFacts {
                    gid_index: Some(3),
                    gid_table: mlx5(),
                    ..rxe_local(Some(3))
                },
                EndFacts {
                    gid_type: Some(GidType::RoceV1),
                    ..rxe_peer("::ffff:10.0.0.6")
                },
                "roce-version-mismatch",
                "GID index 2 (RoCE v1",
            ),
            (
                "IB against Ethernet",
                rxe_local(Some(1)),
                EndFacts {
                    link_layer: Some(LinkLayer::InfiniBand),
                    ..rxe_peer("::ffff:192.168.77.2")
                },
                "link-layer-mismatch",
                "same fabric",
            ),
            (
                "IB LID 0",
                ib_ctx(0, "INIT", "LinkUp").local,
                ib_ctx(0, "INIT", "LinkUp").peer.unwrap(),
                "ib-lid-zero",
                "subnet manager",
            ),
            (
                "peer without GID on RoCE",
                rxe_local(Some(1)),
                EndFacts {
                    gid: Some(Gid::ZERO),
                    ..rxe_peer("::")
                },
                "roce-no-grh",
                "-g",
            ),
        ];
        for (name, local, peer, code, says) in cases {
            let findings = compare_peers(&local, &peer);
            let f = findings
                .iter()
                .find(|f| f.code == code)
                .unwrap_or_else(|| panic!("{name}: {findings:#?}"));
            assert_eq!(f.severity, Severity::Fail, "{name}");
            let text = format!(
                "{} {} {}",
                f.message,
                f.evidence.join(" "),
                f.fix.clone().unwrap_or_default()
            );
            assert!(text.contains(says), "{name}: {text}");
        }

        let mut big = rxe_peer("::ffff:192.168.77.2");
        big.active_mtu = Some(4096);
        let f = compare_peers(&rxe_local(Some(1)), &big);
        assert!(
            f.iter()
                .any(|f| f.code == "mtu-differs" && f.message.contains("1024")),
            "{f:?}"
        );
    }
}
