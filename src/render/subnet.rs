//! `subnet`: the report (a summary, then the findings worst first), its JSON, the
//! ibnetdiscover topology format, and ibhosts/ibswitches-style lists. No I/O.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::model::diagnostic::{Diagnostic, Severity};
use crate::model::mad::{MadNodeType, Speed};
use crate::model::topology::{
    guid_text, End, MadStats, Node, SmSeen, Subnet, SubnetPort, Unanswered,
};
use crate::output::Style;
use crate::render::diagnostic::{self as findings, Evidence};

#[derive(Debug, Serialize)]
pub struct LocalJson {
    pub device: String,
    pub port: u32,
    pub guid: String,
    pub lid: u16,
    pub sm_lid: u16,
    pub state: &'static str,
}

#[derive(Debug, Serialize)]
pub struct SummaryJson {
    pub nodes: usize,
    pub switches: usize,
    pub cas: usize,
    pub routers: usize,
    pub links: usize,
    pub elapsed_ms: u64,
    /// `--interval`: seconds between the two counter readings; null without it.
    pub interval_s: Option<f64>,
}

#[derive(Debug, Serialize)]
pub struct EndJson {
    pub guid: String,
    pub port: u8,
    pub node: String,
}

#[derive(Debug, Serialize)]
pub struct LinkJson {
    pub a: EndJson,
    pub b: EndJson,
    pub width: String,
    pub speed: Speed,
    pub state: &'static str,
    /// PMA PmaCounters of each end by name; null when not read (no LID, or not answered).
    pub counters: CountersJson,
}

#[derive(Debug, Serialize)]
pub struct CountersJson {
    pub a: Option<BTreeMap<&'static str, u64>>,
    pub b: Option<BTreeMap<&'static str, u64>>,
}

#[derive(Debug, Serialize)]
pub struct SubnetReport<'a> {
    pub local: LocalJson,
    pub summary: SummaryJson,
    pub nodes: &'a [Node],
    pub links: Vec<LinkJson>,
    pub sm: &'a [SmSeen],
    pub unanswered: &'a [Unanswered],
    pub mads: &'a MadStats,
    #[serde(serialize_with = "crate::model::diagnostic::json::findings")]
    pub findings: &'a [Diagnostic],
    pub ok: usize,
    pub info: usize,
    pub warn: usize,
    pub fail: usize,
}

fn count(s: &Subnet, t: MadNodeType) -> usize {
    s.nodes.iter().filter(|n| n.node_type == t).count()
}

fn counters_map(p: Option<&SubnetPort>) -> Option<BTreeMap<&'static str, u64>> {
    let values = p?.counters.as_ref()?;
    Some(values.iter().map(|(n, v, _)| (*n, *v)).collect())
}

pub fn report<'a>(
    s: &'a Subnet,
    device: &str,
    port: u32,
    findings: &'a [Diagnostic],
) -> SubnetReport<'a> {
    let sev = |v| findings.iter().filter(|f| f.severity == v).count();
    let end_json = |e: End| EndJson {
        guid: guid_text(e.guid),
        port: e.port,
        node: s
            .node(e.guid)
            .map(|n| n.description.clone())
            .unwrap_or_default(),
    };
    let links = s
        .links
        .iter()
        .map(|l| {
            let (pa, pb) = (s.port(l.a), s.port(l.b));
            LinkJson {
                a: end_json(l.a),
                b: end_json(l.b),
                width: pa
                    .map(|p| format!("{}X", p.width))
                    .unwrap_or_else(|| "?".into()),
                speed: pa.map(|p| p.speed).unwrap_or(Speed::Unknown),
                state: pa.map(|p| p.state).unwrap_or("UNKNOWN"),
                counters: CountersJson {
                    a: counters_map(pa),
                    b: counters_map(pb),
                },
            }
        })
        .collect();
    SubnetReport {
        local: LocalJson {
            device: device.to_string(),
            port,
            guid: guid_text(s.local.guid),
            lid: s.local_lid,
            sm_lid: s.local_sm_lid,
            state: s.local_state,
        },
        summary: SummaryJson {
            nodes: s.nodes.len(),
            switches: count(s, MadNodeType::Switch),
            cas: count(s, MadNodeType::Ca),
            routers: count(s, MadNodeType::Router),
            links: s.links.len(),
            elapsed_ms: s.elapsed_ms,
            interval_s: s.interval_s,
        },
        nodes: &s.nodes,
        links,
        sm: &s.sms,
        unanswered: &s.unanswered,
        mads: &s.mads,
        findings,
        ok: sev(Severity::Ok),
        info: sev(Severity::Info),
        warn: sev(Severity::Warn),
        fail: sev(Severity::Fail),
    }
}

/// The text report: what was found, the SM, the MADs it took, then the findings.
pub fn text(s: &Subnet, device: &str, port: u32, f: &[Diagnostic], style: Style) -> String {
    let mut out = format!(
        "subnet from {device} port {port} (LID {}, SM LID {}, {}): {} nodes ({} switches, {} \
         CAs{}), {} links\n",
        s.local_lid,
        s.local_sm_lid,
        s.local_state,
        s.nodes.len(),
        count(s, MadNodeType::Switch),
        count(s, MadNodeType::Ca),
        match count(s, MadNodeType::Router) {
            0 => String::new(),
            n => format!(", {n} routers"),
        },
        s.links.len()
    );
    out.push_str(&format!(
        "walked in {} ms: {} MADs, up to {} in flight, {} resent, {} unanswered\n\n",
        s.elapsed_ms, s.mads.requests, s.mads.in_flight_max, s.mads.resent, s.mads.unanswered
    ));
    // The summary wraps to the width as the findings do, continued two spaces in.
    let mut out: String = out
        .lines()
        .map(|l| findings::wrapped(l, style.width, 2))
        .collect();
    out.push_str(&findings::lines(f, style, Evidence::Problems));
    out.push_str(&findings::tally(f));
    out.push('\n');
    out
}

/// ibhosts / ibswitches: one line per node, in their exact format, since scripts parse
/// them: ibswitches prints ibnetdiscover's switch header as
/// `Switch\t: 0x<guid> ports N "desc" base port 0 lid L lmc 0` and ibhosts its CA header as
/// `Ca\t: 0x<guid> ports N "desc"` (both are awk over ibnetdiscover in infiniband-diags).
/// ibhosts lists CAs only, no routers. The LMC is 0: the walk does not keep port 0's LMC,
/// and a base port 0 has none.
pub fn node_list(s: &Subnet, switches: bool) -> String {
    let mut out = String::new();
    for n in &s.nodes {
        match (switches, n.node_type) {
            (true, MadNodeType::Switch) => out.push_str(&format!(
                "Switch\t: {} ports {} \"{}\" {} port 0 lid {} lmc 0\n",
                guid_text(n.guid),
                n.num_ports,
                n.description,
                if n.enhanced_port0 { "enhanced" } else { "base" },
                n.lid
            )),
            (false, MadNodeType::Ca) => out.push_str(&format!(
                "Ca\t: {} ports {} \"{}\"\n",
                guid_text(n.guid),
                n.num_ports,
                n.description
            )),
            _ => {}
        }
    }
    out
}

/// "4xEDR", as ibnetdiscover's comments and ibsim's topology parser write it.
fn width_speed(p: Option<&SubnetPort>) -> String {
    match p {
        Some(p) if p.width > 0 => format!("{}x{}", p.width, p.speed.name()),
        _ => String::new(),
    }
}

/// The subnet in ibnetdiscover's topology format: one record per node, switches first
/// then CAs, each listing its connected ports. ibsim loads it back.
pub fn ibnetdiscover(s: &Subnet) -> String {
    let mut out = String::from("#\n# Topology file: generated by rdmactl subnet\n#\n");
    let peer_of = |e: End| -> Option<End> {
        s.links.iter().find_map(|l| {
            if l.a == e {
                Some(l.b)
            } else if l.b == e {
                Some(l.a)
            } else {
                None
            }
        })
    };
    let mut order: Vec<&Node> = s.nodes.iter().filter(|n| n.is_switch()).collect();
    order.extend(s.nodes.iter().filter(|n| !n.is_switch()));
    for n in order {
        out.push_str(&format!(
            "\nvendid=0x{:x}\ndevid=0x{:x}\nsysimgguid=0x{:x}\n",
            n.vendor_id, n.device_id, n.system_image_guid
        ));
        if n.is_switch() {
            out.push_str(&format!(
                "switchguid=0x{:x}({:x})\nSwitch\t{} \"{}\"\t\t# \"{}\" {} port 0 lid {} lmc 0\n",
                n.guid,
                n.port_guids.first().map(|p| p.1).unwrap_or(n.guid),
                n.num_ports,
                n.id(),
                n.description,
                if n.enhanced_port0 { "enhanced" } else { "base" },
                n.lid
            ));
        } else {
            out.push_str(&format!(
                "caguid=0x{:x}\nCa\t{} \"{}\"\t\t# \"{}\"\n",
                n.guid,
                n.num_ports,
                n.id(),
                n.description
            ));
        }
        for p in 1..=n.num_ports {
            let me = End {
                guid: n.guid,
                port: p,
            };
            let Some(peer) = peer_of(me) else { continue };
            let Some(pn) = s.node(peer.guid) else {
                continue;
            };
            let port_guid = |node: &Node, port: u8| -> String {
                if node.is_switch() {
                    String::new()
                } else {
                    node.port_guids
                        .iter()
                        .find(|(q, _)| *q == port)
                        .map(|(_, g)| format!("({g:x})"))
                        .unwrap_or_default()
                }
            };
            let rate = width_speed(n.port(p));
            if n.is_switch() {
                let peer_lid = if pn.is_switch() {
                    pn.lid
                } else {
                    pn.port(peer.port).map(|x| x.lid).unwrap_or(0)
                };
                out.push_str(&format!(
                    "[{p}]\t\"{}\"[{}]{}\t\t# \"{}\" lid {} {rate}\n",
                    pn.id(),
                    peer.port,
                    port_guid(pn, peer.port),
                    pn.description,
                    peer_lid
                ));
            } else {
                let lid = n.port(p).map(|x| x.lid).unwrap_or(0);
                out.push_str(&format!(
                    "[{p}]{}\t\"{}\"[{}]\t\t# lid {lid} lmc 0 \"{}\" lid {} {rate}\n",
                    port_guid(n, p),
                    pn.id(),
                    peer.port,
                    pn.description,
                    pn.lid
                ));
            }
        }
    }
    out
}

/// Escapes text for SVG (XML) content and attributes.
fn xml(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The topology drawn in rows: switches with no CA below them (spines) on top, switches
/// with CAs (leaves) under them, CAs at the bottom. A link named by a warn or fail finding
/// is drawn red and thick, with the finding as its tooltip; a node named by one is red.
pub fn svg(s: &Subnet, findings: &[Diagnostic]) -> String {
    const GAP: f64 = 28.0;
    const ROW: f64 = 160.0;
    let has_ca = |n: &Node| {
        s.links.iter().any(|l| {
            let other = if l.a.guid == n.guid {
                l.b.guid
            } else if l.b.guid == n.guid {
                l.a.guid
            } else {
                return false;
            };
            s.node(other).is_some_and(|o| !o.is_switch())
        })
    };
    let rows: [Vec<&Node>; 3] = [
        s.nodes
            .iter()
            .filter(|n| n.is_switch() && !has_ca(n))
            .collect(),
        s.nodes
            .iter()
            .filter(|n| n.is_switch() && has_ca(n))
            .collect(),
        s.nodes.iter().filter(|n| !n.is_switch()).collect(),
    ];
    let widest = rows.iter().map(Vec::len).max().unwrap_or(1).max(1);
    let width = widest as f64 * GAP + 2.0 * GAP;
    let height = 3.0 * ROW + 120.0;
    let mut at: BTreeMap<u64, (f64, f64)> = BTreeMap::new();
    // Empty rows (no spines in a single-switch subnet) take no space.
    for (r, row) in rows.iter().filter(|row| !row.is_empty()).enumerate() {
        let step = (width - 2.0 * GAP) / row.len().max(1) as f64;
        for (i, n) in row.iter().enumerate() {
            at.insert(
                n.guid,
                (GAP + step * (i as f64 + 0.5), 40.0 + ROW * r as f64),
            );
        }
    }
    let bad = |subject: &str| {
        findings
            .iter()
            .filter(|f| matches!(f.severity, Severity::Warn | Severity::Fail))
            .find(|f| {
                f.subject
                    .as_ref()
                    .and_then(|s| s.finding_keys().2)
                    .as_deref()
                    == Some(subject)
            })
    };
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" \
         font-family=\"sans-serif\" font-size=\"10\">\n<title>{}</title>\n",
        xml(&format!(
            "subnet: {} nodes, {} links",
            s.nodes.len(),
            s.links.len()
        ))
    );
    for l in &s.links {
        let (Some(a), Some(b)) = (at.get(&l.a.guid), at.get(&l.b.guid)) else {
            continue;
        };
        let name = s.link_name(l);
        let (colour, stroke, tip) = match bad(&name) {
            Some(f) => ("#d00000", 3.0, format!("{name}: {}", f.message)),
            None => ("#7a8a99", 1.0, name.clone()),
        };
        out.push_str(&format!(
            "<line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"{colour}\" \
             stroke-width=\"{stroke}\"><title>{}</title></line>\n",
            a.0,
            a.1,
            b.0,
            b.1,
            xml(&tip)
        ));
    }
    for n in &s.nodes {
        let Some((x, y)) = at.get(&n.guid) else {
            continue;
        };
        let label = if n.description.is_empty() {
            guid_text(n.guid)
        } else {
            n.description.clone()
        };
        let quoted = format!("\"{}\"", n.description);
        let fill = if bad(&quoted).is_some() {
            "#d00000"
        } else if n.is_switch() {
            "#2b5d8a"
        } else {
            "#4c9a52"
        };
        let tip = format!("{label} ({}, LID {})", guid_text(n.guid), n.lid);
        if n.is_switch() {
            out.push_str(&format!(
                "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"20\" height=\"12\" fill=\"{fill}\"><title>{}</title></rect>\n",
                x - 10.0,
                y - 6.0,
                xml(&tip)
            ));
            out.push_str(&format!(
                "<text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>\n",
                y - 10.0,
                xml(&label)
            ));
        } else {
            out.push_str(&format!(
                "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"5\" fill=\"{fill}\"><title>{}</title></circle>\n",
                xml(&tip)
            ));
            out.push_str(&format!(
                "<text x=\"{x:.1}\" y=\"{:.1}\" transform=\"rotate(60 {x:.1} {:.1})\">{}</text>\n",
                y + 12.0,
                y + 12.0,
                xml(&label)
            ));
        }
    }
    out.push_str("</svg>\n");
    out
}

/// The stderr note for each end whose PMA did not confirm `--reset-counters`.
pub fn unconfirmed_clears(names: &[String]) -> String {
    names
        .iter()
        .map(|name| format!("rdmactl: {name}: the PMA did not confirm clearing its counters\n"))
        .collect()
}
