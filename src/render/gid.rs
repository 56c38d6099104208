//! `gid decode` and `gid encode`: tables and JSON.

use std::net::IpAddr;

use serde::Serialize;

use crate::model::gid::{Gid, GidKind};
use crate::output::{json, Style};
use crate::render::inventory::ip_text;
use crate::render::table::{or_dash, render, Cell};

#[derive(Debug, Serialize)]
pub struct Decoded<'a> {
    /// What the user typed.
    pub input: &'a str,
    pub gid: Gid,
    /// ibv_rc_pingpong's 32-hex-digit form.
    pub wire: String,
    /// Null for the zero GID.
    pub ip: Option<String>,
    pub kind: GidKind,
    /// The MAC an EUI-64 interface id encodes (link-local GIDs derived from a MAC).
    pub mac: Option<String>,
}

impl<'a> Decoded<'a> {
    pub fn new(input: &'a str, gid: Gid) -> Decoded<'a> {
        Decoded {
            input,
            gid,
            wire: gid.wire_form(),
            ip: (!gid.is_zero()).then(|| gid.ip().to_string()),
            kind: gid.kind(),
            mac: gid.eui64_mac().map(|m| {
                m.iter()
                    .map(|b| format!("{b:02x}"))
                    .collect::<Vec<_>>()
                    .join(":")
            }),
        }
    }
}

fn kind_text(kind: GidKind) -> &'static str {
    match kind {
        GidKind::Zero => "zero (empty slot)",
        GidKind::Ipv4Mapped => "IPv4-mapped",
        GidKind::LinkLocal => "link-local",
        GidKind::Loopback => "loopback",
        GidKind::Multicast => "multicast",
        GidKind::Global => "global",
    }
}

pub fn decode_table(rows: &[Decoded], style: Style) -> String {
    let cells: Vec<Vec<Cell>> = rows
        .iter()
        .map(|d| {
            let ip = match d.kind {
                // The kind column says link-local already.
                GidKind::LinkLocal | GidKind::Loopback | GidKind::Multicast => {
                    d.gid.ip().to_string()
                }
                _ => ip_text(&d.gid),
            };
            vec![
                Cell::from(d.gid.to_string()),
                Cell::from(ip),
                Cell::from(kind_text(d.kind)),
                Cell::from(or_dash(d.mac.as_ref())),
            ]
        })
        .collect();
    render(&["GID", "IP", "KIND", "MAC (EUI-64)"], &cells, style)
}

pub fn decode_json(rows: &[Decoded]) -> String {
    json(&rows)
}

#[derive(Debug, Serialize)]
pub struct Encoded {
    pub ip: IpAddr,
    /// The GID in sysfs form, as `gids` shows it.
    pub gid: Gid,
    /// ibv_rc_pingpong's 32-hex-digit form.
    pub wire: String,
}

impl Encoded {
    pub fn new(ip: IpAddr) -> Encoded {
        let gid = Gid::from_ip(ip);
        Encoded {
            ip,
            gid,
            wire: gid.wire_form(),
        }
    }
}

pub fn encode_table(rows: &[Encoded], style: Style) -> String {
    let cells: Vec<Vec<Cell>> = rows
        .iter()
        .map(|e| {
            vec![
                Cell::from(e.ip.to_string()),
                Cell::from(e.gid.to_string()),
                Cell::from(e.wire.clone()),
            ]
        })
        .collect();
    render(&["IP", "GID (RoCE v2)", "WIRE"], &cells, style)
}

pub fn encode_json(rows: &[Encoded]) -> String {
    json(&rows)
}
