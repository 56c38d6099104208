//! Before the QP: compare what the two ends sent each other.

use crate::diagnose::gidselect::{self, Family, Want};
use crate::model::codes;
use crate::model::device::LinkLayer;
use crate::model::diagnostic::{Diagnostic, Seen, Severity, Source};
use crate::model::facts::EndFacts;
use crate::model::failure::{Cause, Mismatch};
use crate::model::gid::Gid;

use super::gid::{gid_mismatch, local_gid_words, table_summary};
use super::{generic, Builder, Rule};

/// The two ends' parameters, compared before the QP (the native exchange sends GID type,
/// link layer and MTU; the compat one only the GID).
pub(super) fn compare(b: Builder) -> Diagnostic {
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
            codes::ROCE_VERSION_MISMATCH
        } else {
            codes::GID_FAMILY_MISMATCH
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
            .map(|e| Seen::new(Source::Peer, e.text.clone()))
            .collect();
        return b.done(code, f.message.clone(), evidence, fix, false);
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
                codes::PARAMETERS_DIFFER,
                "the two ends were started with parameters that do not fit together".into(),
                evidence,
                fix,
                false,
            )
        }
        // A setting this end cannot use with this peer (-m above the path's MTU): its own
        // words say what to change.
        Cause::Invalid { what } => b.done(
            codes::PARAMETERS_DIFFER,
            "a setting does not fit this path".into(),
            vec![Seen::new(Source::Failure, what.clone())],
            what.rsplit_once("; ")
                .map(|(_, fix)| fix.to_string())
                .unwrap_or_else(|| "adjust the setting named above".into()),
            false,
        ),
        other => b.done(
            codes::PARAMETERS_DIFFER,
            "the two ends were started with parameters that do not fit together".into(),
            vec![Seen::new(Source::Failure, other.to_string())],
            "compare the flags of both ends".into(),
            false,
        ),
    }
}

/// Compare the two ends of a native handshake before touching the QP. A finding of
/// severity Fail means RTR would fail or the connection would never carry a packet.
pub fn compare_peers(local: &EndFacts, peer: &EndFacts) -> Vec<Diagnostic> {
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

    let as_finding = |(code, summary, seen, fix): Rule, fix_here: bool| {
        let fix = if fix_here { name_fix(&fix) } else { fix };
        let mut f = Diagnostic::finding(Severity::Fail, code, summary).fix(fix);
        f.evidence = seen.into_iter().map(|e| Seen::gathered(e.text)).collect();
        f
    };
    if let Some(rule) = link_layers_differ(local, peer) {
        out.push(as_finding(rule, false));
        return out;
    }
    for (who, ep) in [("local", local), ("peer", peer)] {
        if ep.is_infiniband() && matches!(ep.lid, Some(0) | Some(0xffff)) {
            out.push(
                Diagnostic::finding(
                    Severity::Fail,
                    codes::IB_LID_ZERO,
                    format!("the {who} InfiniBand port {} has no LID", ep.name()),
                )
                .evidence(format!(
                    "{who} LID 0x{:04x}, state {}",
                    ep.lid.unwrap_or(0),
                    ep.port_state.as_ref().map_or("?", |s| s.name())
                ))
                .fix("start a subnet manager (opensm) or fix the link"),
            );
        }
    }
    let ethernet = local.is_ethernet() || peer.is_ethernet();
    if ethernet {
        if let Some(rule) = without_grh(local, Some(peer)) {
            out.push(as_finding(rule, true));
        }
        if let Some((summary, ev)) = gid_mismatch(local, peer) {
            let code = if summary.starts_with("RoCE version") {
                codes::ROCE_VERSION_MISMATCH
            } else {
                codes::GID_FAMILY_MISMATCH
            };
            let mut f = Diagnostic::finding(Severity::Fail, code, summary).fix(name_fix(
                "use the same RoCE version and address family on both ends",
            ));
            f.evidence = ev.into_iter().map(|e| Seen::gathered(e.text)).collect();
            out.push(f);
        }
    }
    if let (Some(a), Some(b)) = (local.active_mtu, peer.active_mtu) {
        if a != b {
            out.push(
                Diagnostic::finding(
                    Severity::Info,
                    codes::MTU_DIFFERS,
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

/// One end InfiniBand, the other Ethernet: the one rule, before the QP (the native
/// exchange's compare) and at RTR.
pub(super) fn link_layers_differ(local: &EndFacts, peer: &EndFacts) -> Option<Rule> {
    let (l, p) = (local.link_layer.as_ref()?, peer.link_layer.as_ref()?);
    if l == p {
        return None;
    }
    Some((
        codes::LINK_LAYER_MISMATCH,
        format!("this end's port is {l} and the peer's {p}: ports of different link layers cannot be connected directly"),
        vec![
            Seen::new(Source::Local, format!("local {} {l}", local.name())),
            Seen::new(Source::Peer, format!("peer {} {p}", peer.name())),
        ],
        "connect ports of the same fabric: InfiniBand to InfiniBand, RoCE to RoCE".into(),
    ))
}

/// RoCE without a GRH on one end or both: no GID index here, or a zero GID from the peer
/// (a stock ibv_rc_pingpong without -g). The one rule, before the QP and at RTR.
pub(super) fn without_grh(local: &EndFacts, peer: Option<&EndFacts>) -> Option<Rule> {
    if !(local.is_ethernet() || peer.is_some_and(EndFacts::is_ethernet)) {
        return None;
    }
    // An index whose GID could not be read is another rule's (past the table, empty slot).
    let here = local.gid_index.is_none() || local.gid_now().is_some_and(|g| g.is_zero());
    let there = peer.is_some_and(|p| p.gid_now().is_none_or_zero());
    let sides = match (here, there) {
        (false, false) => return None,
        (true, false) => "this end has no GID",
        (false, true) => "the peer has no GID",
        (true, true) => "neither end has a GID",
    };
    let mut seen = vec![Seen::new(
        Source::Local,
        format!("{} link layer Ethernet (RoCE)", local.name()),
    )];
    if here {
        seen.push(Seen::new(
            Source::Local,
            "no GID index was given, so the address vector has no GRH (is_global=0)",
        ));
    }
    if there {
        seen.push(Seen::new(
            Source::Peer,
            "the peer sent GID :: (ibv_rc_pingpong without -g sends zero and leaves is_global unset)",
        ));
    }
    Some((
        codes::ROCE_NO_GRH,
        format!("{sides}: RoCE has no LIDs, so every packet needs a GRH with a source GID on both ends, and the kernel (rdma_check_ah_attr) rejects an address vector without one"),
        seen,
        "give a GID index on both sides (-g N, or -g auto)".into(),
    ))
}

trait ZeroGid {
    fn is_none_or_zero(&self) -> bool;
}

impl ZeroGid for Option<Gid> {
    fn is_none_or_zero(&self) -> bool {
        self.map_or(true, |g| g.is_zero())
    }
}

/// The peer is a stock ibv_rc_pingpong and this end was asked for WRITE or READ: its
/// exchange carries no operation, buffer address or rkey, and it does SEND only. The run
/// was refused at the handshake (see `compat.rs` for why not a fall back to SEND), and the
/// connection closed, which is what makes the stock tool exit.
pub(super) fn stock_send_only(ops: u8, peer: &str) -> Diagnostic {
    let op = crate::model::failure::ops_name(ops);
    let summary = format!(
        "the {peer} is a stock ibv_rc_pingpong, which only does SEND; --op {op} needs an rdmactl {peer}"
    );
    let (left, fix) = if peer == "client" {
        (
            "this end closed the connection before answering, which makes the stock client exit (it prints \"Couldn't read/write remote address\")",
            format!(
                "start the client as `rdmactl pingpong --op {op} SERVER`, or measure SEND against ibv_rc_pingpong: start this server with --op send or without --op"
            ),
        )
    } else {
        (
            "this end closed the connection before sending \"done\", which makes the stock server exit (it prints \"Couldn't send/recv local address\")",
            format!(
                "start the server as `rdmactl pingpong` (without --op it takes the client's --op {op}), or measure SEND against ibv_rc_pingpong: --op send or no --op"
            ),
        )
    };
    let evidence = vec![
        Seen::new(
            Source::Peer,
            format!(
                "the {peer} answered in ibv_rc_pingpong's exchange (LID:QPN:PSN:GID), which carries no operation, buffer address or rkey"
            ),
        ),
        Seen::new(Source::Local, format!("--op {op} asked here")),
        Seen::new(Source::Failure, left),
    ];
    Diagnostic {
        evidence,
        ..Diagnostic::explanation(codes::STOCK_PEER_SEND_ONLY, summary, fix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::datapath::tests::{ib_ctx, rxe_local, rxe_peer};
    use crate::diagnose::gidselect::tests::mlx5;
    use crate::model::device::{GidType, PhysState, PortState};

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
                ib_ctx(0, PortState::Init, PhysState::LinkUp).local,
                ib_ctx(0, PortState::Init, PhysState::LinkUp).peer.unwrap(),
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

    /// Issue 36: a stock ibv_rc_pingpong peer and --op write: the peer's role and the op
    /// in one line, the close that ends the stock tool, and a fix that fits the role.
    #[test]
    fn a_stock_peer_asked_for_write_is_named_with_its_role() {
        use crate::diagnose::datapath::explain;
        use crate::diagnose::datapath::tests::rxe_ctx;
        use crate::model::failure::{Failure, Step};
        let facts = rxe_ctx(Some(1), "::ffff:192.168.77.2");
        let failure = |ops, peer| {
            Failure::new(
                Step::Compare,
                Cause::StockPeerSendOnly { ops, peer },
                Default::default(),
            )
        };
        let x = explain(&failure(2, "client"), &facts);
        assert_eq!(x.code, "stock-peer-send-only");
        assert_eq!(
            x.message,
            "the client is a stock ibv_rc_pingpong, which only does SEND; --op write needs an rdmactl client"
        );
        assert!(
            x.evidence
                .iter()
                .any(|e| e.contains("--op write asked here")),
            "{x:?}"
        );
        assert!(
            x.evidence
                .iter()
                .any(|e| e.contains("makes the stock client exit")),
            "{x:?}"
        );
        assert!(
            x.fix_text().contains("rdmactl pingpong --op write SERVER"),
            "{x:?}"
        );
        assert_eq!(x.suggested_gid_index, None);
        let x = explain(&failure(7, "server"), &facts);
        assert!(
            x.message
                .starts_with("the server is a stock ibv_rc_pingpong")
                && x.message.ends_with("--op all needs an rdmactl server"),
            "{x:?}"
        );
        assert!(
            x.evidence
                .iter()
                .any(|e| e.contains("before sending \"done\"")),
            "{x:?}"
        );
        // Never a guess about the GID or a timeout: nothing was connected.
        assert!(x.evidence.iter().all(|e| !e.contains("GID index")), "{x:?}");
    }
}
