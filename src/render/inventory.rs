//! `devices`, `ports` and `gids`: tables and JSON.

use serde::Serialize;

use crate::model::device::{
    Device, GidEntry, LinkLayer, Netdev, OperState, PhysState, PkeyEntry, Port, PortState,
};
use crate::model::gid::{Gid, GidKind};
use crate::output::{json, Style};
use crate::render::table::{or_dash, render, Cell, Tone};

pub fn state_tone(state: Option<&PortState>) -> Tone {
    match state {
        Some(PortState::Active) => Tone::Good,
        Some(PortState::Init | PortState::Armed | PortState::ActiveDefer) => Tone::Warn,
        Some(_) => Tone::Bad,
        None => Tone::Plain,
    }
}

pub fn phys_tone(state: Option<&PhysState>) -> Tone {
    match state {
        Some(PhysState::LinkUp) => Tone::Good,
        Some(PhysState::Polling | PhysState::Disabled | PhysState::Sleep) => Tone::Bad,
        Some(_) => Tone::Warn,
        None => Tone::Plain,
    }
}

/// Green where the netdev carries traffic (`model::device::carries_traffic`).
fn operstate_tone(netdev: Option<&Netdev>) -> Tone {
    let Some(n) = netdev else {
        return Tone::Plain;
    };
    match &n.operstate {
        None | Some(OperState::Other(_)) => Tone::Plain,
        Some(_) if n.carries_traffic() => Tone::Good,
        Some(OperState::Dormant | OperState::Testing) => Tone::Warn,
        Some(_) => Tone::Bad,
    }
}

fn worst(tones: impl IntoIterator<Item = Tone>) -> Tone {
    let rank = |t: Tone| match t {
        Tone::Plain => 0,
        Tone::Good => 1,
        Tone::Warn => 2,
        Tone::Bad => 3,
    };
    tones
        .into_iter()
        .max_by_key(|t| rank(*t))
        .unwrap_or(Tone::Plain)
}

fn join_or_dash(items: Vec<String>) -> String {
    if items.is_empty() {
        "-".to_string()
    } else {
        items.join(", ")
    }
}

/// A port as `dev/port`, the way `rdma link` and `ports DEV/PORT` address it.
fn port_name(p: &Port) -> String {
    format!("{}/{}", p.device, p.number)
}

pub fn devices_table(devices: &[Device], style: Style) -> String {
    let rows: Vec<Vec<Cell>> = devices
        .iter()
        .map(|d| {
            let kind = d
                .node_type
                .as_ref()
                .map(|t| format!("{}/{}", t.name(), t.transport()));
            let layers: Vec<String> = d.link_layers().iter().map(|l| l.to_string()).collect();
            let states = if d.ports.len() == 1 {
                or_dash(d.ports[0].state.as_ref())
            } else {
                let each: Vec<String> = d
                    .ports
                    .iter()
                    .map(|p| format!("{}:{}", p.number, or_dash(p.state.as_ref())))
                    .collect();
                join_or_dash(each)
            };
            let tone = worst(d.ports.iter().map(|p| state_tone(p.state.as_ref())));
            let mut netdevs: Vec<String> = Vec::new();
            for nd in d.ports.iter().filter_map(|p| p.netdev.as_ref()) {
                if !netdevs.contains(&nd.name) {
                    netdevs.push(nd.name.clone());
                }
            }
            vec![
                Cell::from(d.name.as_str()),
                Cell::from(or_dash(kind)),
                Cell::from(or_dash(d.node_guid)),
                Cell::from(or_dash(d.fw_ver.as_ref())),
                Cell::from(d.ports.len().to_string()),
                Cell::from(join_or_dash(layers)),
                Cell::new(states, tone),
                Cell::from(join_or_dash(netdevs)),
                Cell::from(or_dash(d.uverbs.as_ref())),
            ]
        })
        .collect();
    render(
        &[
            "DEVICE",
            "TYPE",
            "NODE GUID",
            "FW",
            "PORTS",
            "LINK LAYER",
            "STATE",
            "NETDEV",
            "UVERBS",
        ],
        &rows,
        style,
    )
}

/// A port in JSON: the model plus what is derived from it, flat as `rdma -j` prints it.
#[derive(Serialize)]
pub struct PortJson<'a> {
    #[serde(flatten)]
    pub port: &'a Port,
    #[serde(serialize_with = "crate::output::ser_opt_3dp")]
    pub rate_gbps: Option<f64>,
    pub link_width: Option<&'a str>,
    pub link_speed: Option<&'a str>,
    pub netdev_mtu: Option<u32>,
    pub netdev_operstate: Option<&'a OperState>,
    pub netdev_address: Option<&'a str>,
    /// `ports -v` only: the populated P_Key slots.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pkeys: Option<&'a [PkeyEntry]>,
}

impl<'a> PortJson<'a> {
    pub fn new(port: &'a Port) -> PortJson<'a> {
        let nd = port.netdev.as_ref();
        PortJson {
            port,
            rate_gbps: port.rate.as_ref().and_then(|r| r.gbps),
            link_width: port.rate.as_ref().and_then(|r| r.width.as_deref()),
            link_speed: port.rate.as_ref().and_then(|r| r.speed.as_deref()),
            netdev_mtu: nd.and_then(|n| n.mtu),
            netdev_operstate: nd.and_then(|n| n.operstate.as_ref()),
            netdev_address: nd.and_then(|n| n.address.as_deref()),
            pkeys: None,
        }
    }
}

#[derive(Serialize)]
struct DeviceJson<'a> {
    #[serde(flatten)]
    device: &'a Device,
    transport: Option<&'static str>,
    phys_port_cnt: usize,
    #[serde(rename = "ports")]
    port_list: Vec<PortJson<'a>>,
}

pub fn devices_json(devices: &[Device]) -> String {
    let list: Vec<DeviceJson> = devices
        .iter()
        .map(|d| DeviceJson {
            device: d,
            transport: d.node_type.as_ref().map(|t| t.transport()),
            phys_port_cnt: d.ports.len(),
            port_list: d.ports.iter().map(PortJson::new).collect(),
        })
        .collect();
    json(&list)
}

/// An RDMA MTU, or "unknown" where verbs did not answer: "-" would read as "does not
/// apply", and every port has one.
fn mtu_or_unknown(mtu: Option<u32>) -> String {
    mtu.map_or_else(|| "unknown".to_string(), |m| m.to_string())
}

pub fn ports_table(ports: &[&Port], style: Style) -> String {
    ports_table_with(ports, None, style)
}

/// `ports -v`: the table with each port's P_Key table (`pkeys[i]` is `ports[i]`'s).
pub fn ports_table_verbose(ports: &[&Port], pkeys: &[Vec<PkeyEntry>], style: Style) -> String {
    ports_table_with(ports, Some(pkeys), style)
}

fn ports_table_with(ports: &[&Port], pkeys: Option<&[Vec<PkeyEntry>]>, style: Style) -> String {
    let rows: Vec<Vec<Cell>> = ports
        .iter()
        .enumerate()
        .map(|(i, p)| {
            // LIDs mean nothing on Ethernet (always 0); show them only where a SM assigns them.
            let ib = p.link_layer.as_ref() != Some(&LinkLayer::Ethernet);
            let lid = |v: Option<u32>| if ib { or_dash(v) } else { "-".to_string() };
            let nd = p.netdev.as_ref();
            let operstate = nd.and_then(|n| n.operstate.as_ref());
            let mut row = vec![
                Cell::from(port_name(p)),
                Cell::new(or_dash(p.state.as_ref()), state_tone(p.state.as_ref())),
                Cell::new(
                    or_dash(p.phys_state.as_ref()),
                    phys_tone(p.phys_state.as_ref()),
                ),
                Cell::from(or_dash(p.rate.as_ref().map(|r| &r.text))),
                Cell::from(or_dash(p.link_layer.as_ref())),
                Cell::from(lid(p.lid)),
                Cell::from(lid(p.sm_lid)),
                Cell::from(if ib { or_dash(p.lmc) } else { "-".to_string() }),
                Cell::from(mtu_or_unknown(p.active_mtu)),
                Cell::from(mtu_or_unknown(p.max_mtu)),
                Cell::from(or_dash(nd.map(|n| &n.name))),
                Cell::from(or_dash(nd.and_then(|n| n.mtu))),
                Cell::new(or_dash(operstate), operstate_tone(nd)),
            ];
            if let Some(pkeys) = pkeys {
                row.push(Cell::from(show_pkeys(&pkeys[i])));
            }
            row
        })
        .collect();
    let mut headers = vec![
        "PORT",
        "STATE",
        "PHYS STATE",
        "RATE",
        "LINK LAYER",
        "LID",
        "SM LID",
        "LMC",
        "ACTIVE MTU",
        "MAX MTU",
        "NETDEV",
        "NETDEV MTU",
        "OPERSTATE",
    ];
    if pkeys.is_some() {
        headers.push("PKEYS");
    }
    render(&headers, &rows, style)
}

/// A P_Key table in one cell: `[0] 0xffff [1] 0x8001`, or `-` when none is populated.
pub fn show_pkeys(table: &[PkeyEntry]) -> String {
    if table.is_empty() {
        return "-".into();
    }
    table
        .iter()
        .map(|e| e.to_string())
        .collect::<Vec<_>>()
        .join(" ")
}

pub fn ports_json(ports: &[&Port]) -> String {
    json(&ports.iter().map(|p| PortJson::new(p)).collect::<Vec<_>>())
}

/// `ports -v -j`: each port with its `pkeys`.
pub fn ports_json_verbose(ports: &[&Port], pkeys: &[Vec<PkeyEntry>]) -> String {
    json(
        &ports
            .iter()
            .zip(pkeys)
            .map(|(p, k)| PortJson {
                pkeys: Some(k),
                ..PortJson::new(p)
            })
            .collect::<Vec<_>>(),
    )
}

/// One GID table entry with the port it belongs to, as `gids` lists them.
#[derive(Debug, Serialize)]
pub struct GidRow<'a> {
    pub device: &'a str,
    pub port: u32,
    #[serde(flatten)]
    pub entry: &'a GidEntry,
    /// The decoded address; null for an empty slot, on InfiniBand and on iWARP.
    pub ip: Option<String>,
    pub kind: GidKind,
}

impl<'a> GidRow<'a> {
    /// `iwarp`: the port's device is an RNIC.
    pub fn new(port: &'a Port, entry: &'a GidEntry, iwarp: bool) -> GidRow<'a> {
        // An InfiniBand GID is the subnet prefix and the port GUID, an iWARP one the
        // netdev's MAC padded with zeros: each has the shape of an IPv6 address but is
        // none, so it gets no IP (the addresses are the netdev's).
        let ib = port.link_layer == Some(LinkLayer::InfiniBand);
        GidRow {
            device: &port.device,
            port: port.number,
            entry,
            ip: (!entry.gid.is_zero() && !ib && !iwarp).then(|| entry.gid.ip().to_string()),
            kind: entry.gid.kind(),
        }
    }
}

/// The address a GID holds, for people: IPv4 when mapped, IPv6 with its kind marked.
pub fn ip_text(gid: &Gid) -> String {
    match gid.kind() {
        GidKind::Zero => "-".to_string(),
        GidKind::Ipv4Mapped | GidKind::Global => gid.ip().to_string(),
        GidKind::LinkLocal => format!("{} (link-local)", gid.ip()),
        GidKind::Loopback => format!("{} (loopback)", gid.ip()),
        GidKind::Multicast => format!("{} (multicast)", gid.ip()),
    }
}

pub fn gids_table(rows: &[GidRow], show_ip: bool, style: Style) -> String {
    let mut headers = vec!["DEVICE", "PORT", "INDEX", "GID", "TYPE", "NETDEV"];
    if show_ip {
        headers.push("IP");
    }
    let cells: Vec<Vec<Cell>> = rows
        .iter()
        .map(|r| {
            let mut row = vec![
                Cell::from(r.device),
                Cell::from(r.port.to_string()),
                Cell::from(r.entry.index.to_string()),
                Cell::from(r.entry.gid.to_string()),
                Cell::from(or_dash(r.entry.gid_type.as_ref())),
                Cell::from(or_dash(r.entry.netdev.as_ref())),
            ];
            if show_ip {
                row.push(Cell::from(match &r.ip {
                    Some(_) => ip_text(&r.entry.gid),
                    None => "-".to_string(),
                }));
            }
            row
        })
        .collect();
    render(&headers, &cells, style)
}

pub fn gids_json(rows: &[GidRow]) -> String {
    json(&rows)
}

/// Attributes that exist but could not be read: one stderr line each, so the table stays
/// clean and the reader still learns why a column says "-". JSON carries `read_problems`.
pub fn unreadable_warnings(devices: &[Device]) -> String {
    let mut out = String::new();
    let problems = devices.iter().flat_map(|d| {
        d.read_problems
            .iter()
            .chain(d.ports.iter().flat_map(|p| p.read_problems.iter()))
    });
    for p in problems {
        out.push_str(&format!(
            "rdmactl: warning: cannot read {}: {}\n",
            p.path.display(),
            p.error
        ));
    }
    out
}

/// The stderr note for a table whose ACTIVE MTU and MAX MTU say "unknown": one line per
/// distinct reason, naming the ports, so a host without libibverbs gets one line.
pub fn unknown_mtu_notes(devices: &[Device]) -> String {
    let mut out = String::new();
    let mut by_reason: Vec<(String, Vec<String>)> = Vec::new();
    for p in devices.iter().flat_map(|d| d.ports.iter()) {
        if p.active_mtu.is_some() && p.max_mtu.is_some() {
            continue;
        }
        let reason = p
            .verbs
            .reason
            .clone()
            .unwrap_or_else(|| "the port query gave no valid MTU".into());
        let port = format!("{}/{}", p.device, p.number);
        match by_reason.iter_mut().find(|(r, _)| *r == reason) {
            Some((_, ports)) => ports.push(port),
            None => by_reason.push((reason, vec![port])),
        }
    }
    for (reason, ports) in by_reason {
        out.push_str(&format!(
            "rdmactl: note: {}: ACTIVE MTU and MAX MTU unknown (only ibv_query_port reports \
             them): {}\n",
            ports.join(", "),
            reason.trim_end_matches('.')
        ));
    }
    out
}
/// The stderr note for netdevs outside this network namespace: said once, instead of bare
/// dashes under NETDEV MTU and OPERSTATE; nothing when there are none.
pub fn hidden_netdevs_note(hidden: &[String]) -> String {
    let subject = match hidden {
        [] => return String::new(),
        [one] => format!("{one} is"),
        many => format!("{} are", many.join(", ")),
    };
    format!(
        "rdmactl: note: {subject} not in this network namespace (this process runs outside the \
         one the RDMA devices' netdevs live in): NETDEV MTU and OPERSTATE are unknown here\n"
    )
}

/// The stderr note for a `gids` table with no rows; nothing when there are rows.
pub fn no_gids_note(rows: &[GidRow]) -> String {
    if rows.is_empty() {
        "rdmactl: no populated GID entries on the selected ports (--all lists empty slots)\n"
            .to_string()
    } else {
        String::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_netdevs_are_named_in_one_note() {
        assert_eq!(hidden_netdevs_note(&[]), "");
        assert_eq!(
            hidden_netdevs_note(&["eth1".into()]),
            "rdmactl: note: eth1 is not in this network namespace (this process runs outside \
             the one the RDMA devices' netdevs live in): NETDEV MTU and OPERSTATE are unknown \
             here\n"
        );
        assert!(hidden_netdevs_note(&["a".into(), "b".into()])
            .starts_with("rdmactl: note: a, b are not in this network namespace"));
    }
}
