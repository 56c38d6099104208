//! `-g auto` for pingpong and selftest: the GID index chosen from a port's table toward a
//! peer, with every other slot's verdict (the rules are `gidselect`'s; the words are
//! `render::gid_choice`'s).

use std::net::IpAddr;

use serde::Serialize;

use crate::diagnose::check::want_for;
use crate::diagnose::gidselect::{self, Selection};
use crate::model::device::{GidEntry, LinkLayer, NodeType};
use crate::model::facts::NetFacts;

/// Why `command` cannot use `device` without `--cm` when it is an iWARP RNIC, or None.
/// An iWARP port connects only through rdma_cm, by its netdev's IP address, and its one
/// GID is the netdev's MAC padded with zeros: no RoCE GID rule (v1/v2, IPv4-mapped
/// ranking, `-g auto`) says anything true about it, and a QP brought up from an
/// out-of-band exchange fails at modify QP with an errno that does not say why.
/// Refused rather than switched to `--cm`: the peer must speak the same protocol (an
/// rdmactl server without `--cm` waits for a TCP exchange, a stock ibv_rc_pingpong has no
/// CM at all), so switching one end alone would only move the failure to the other end;
/// rdma-core users know the explicit flag from perftest's `-R`.
pub fn iwarp_needs_cm(device: &str, node_type: Option<&NodeType>, command: &str) -> Option<String> {
    let t = node_type.filter(|t| t.is_iwarp())?;
    let what = format!(
        "{device} is an iWARP device (node type {}, transport {}): iWARP connects only through rdma_cm, by the IP address of its netdev",
        t.name(),
        t.transport()
    );
    Some(match command {
        "pingpong" => format!("{what}, so pingpong's TCP exchange cannot bring its QP up; use `rdmactl pingpong --cm` on both ends"),
        "selftest" => format!("{what}, so selftest's loopback without the CM cannot bring its QPs up; use `rdmactl selftest --cm`"),
        _ => format!("{what}, and its one GID is the netdev's MAC, not an address, so no GID index is chosen or judged; {command} judges RoCE and InfiniBand GIDs; use `rdmactl pingpong --cm` toward the peer"),
    })
}

/// The outcome of `-g auto`, as printed and as the `gid_selection` JSON object.
#[derive(Debug, Clone, Serialize)]
pub struct GidChoice {
    pub device: String,
    pub port: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peer: Option<IpAddr>,
    #[serde(flatten)]
    pub selection: Selection,
    #[serde(skip)]
    pub table: Vec<GidEntry>,
}

/// Choose the GID index on `device`/`port` toward `peer` (None: perftest's default, IPv4
/// and not link-local), with the route facts `net` toward it.
pub fn choose(
    device: &str,
    port: u32,
    peer: Option<IpAddr>,
    table: Vec<GidEntry>,
    link_layer: &LinkLayer,
    net: &NetFacts,
) -> GidChoice {
    let selection = gidselect::select_gid(&table, link_layer, &want_for(peer, net));
    GidChoice {
        device: device.to_string(),
        port,
        peer,
        selection,
        table,
    }
}

/// `-g auto` for a loopback test, once perftest's default (IPv4, not link-local) found
/// nothing: any valid GID, since both ends are this port's and share its family.
pub fn loopback_fallback(mut choice: GidChoice, link_layer: &LinkLayer) -> GidChoice {
    if choice.selection.chosen.is_some() {
        return choice;
    }
    let want = gidselect::Want {
        family: Some(gidselect::Family::V6),
        ..want_for(None, &NetFacts::default())
    };
    let selection = gidselect::select_gid(&choice.table, link_layer, &want);
    if let Some(i) = selection.chosen {
        choice.selection = selection;
        let (device, port) = (&choice.device, choice.port);
        if let Some(r) = choice.selection.reasons.iter_mut().find(|r| r.index == i) {
            r.why = format!(
                "no IPv4 GID on {device}/{port}, and a loopback test works on any valid GID: {}",
                r.why
            );
        }
    }
    choice
}

#[cfg(test)]
mod tests {
    use super::*;

    /// iWARP is refused up front by every command that would bring a QP up or judge a GID
    /// without the CM, each in its own words; CA devices (RoCE, InfiniBand) pass.
    #[test]
    fn iwarp_is_refused_without_the_cm_in_each_commands_words() {
        let rnic = Some(&NodeType::Rnic);
        let pp = iwarp_needs_cm("siw0", rnic, "pingpong").unwrap();
        assert!(
            pp.starts_with("siw0 is an iWARP device (node type RNIC, transport iWARP): iWARP connects only through rdma_cm"),
            "{pp}"
        );
        assert!(
            pp.ends_with("use `rdmactl pingpong --cm` on both ends"),
            "{pp}"
        );
        let st = iwarp_needs_cm("siw0", rnic, "selftest").unwrap();
        assert!(st.ends_with("use `rdmactl selftest --cm`"), "{st}");
        let ck = iwarp_needs_cm("siw0", rnic, "check").unwrap();
        assert!(
            ck.contains("its one GID is the netdev's MAC, not an address"),
            "{ck}"
        );
        for words in [&pp, &st, &ck] {
            assert!(!words.contains("RoCE v"), "{words}");
        }
        assert_eq!(
            iwarp_needs_cm("rxe0", Some(&NodeType::Ca), "pingpong"),
            None
        );
        assert_eq!(iwarp_needs_cm("rxe0", None, "pingpong"), None);
    }
}
