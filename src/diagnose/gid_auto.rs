//! `-g auto` for pingpong and selftest: the GID index chosen from a port's table toward a
//! peer, with every other slot's verdict (the rules are `gidselect`'s; the words are
//! `render::gid_choice`'s).

use std::net::IpAddr;

use serde::Serialize;

use crate::diagnose::check::want_for;
use crate::diagnose::gidselect::{self, Selection};
use crate::model::device::{GidEntry, LinkLayer};
use crate::model::facts::NetFacts;

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
