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
pub struct LocalJson<'a> {
    pub device: String,
    pub port: u32,
    pub guid: String,
    pub lid: u16,
    pub sm_lid: u16,
    pub state: &'a str,
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
pub struct LinkJson<'a> {
    pub a: EndJson,
    pub b: EndJson,
    pub width: String,
    pub speed: Speed,
    pub state: &'a str,
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
    pub local: LocalJson<'a>,
    pub summary: SummaryJson,
    pub nodes: &'a [Node],
    pub links: Vec<LinkJson<'a>>,
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

/// The local port's state as `subnet` prints it; UNKNOWN when the walk did not read it.
fn local_state(s: &Subnet) -> &str {
    s.local_state
        .as_ref()
        .map_or("UNKNOWN", crate::model::mad::port_state_name)
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
                state: pa.map_or("UNKNOWN", SubnetPort::state_name),
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
            state: local_state(s),
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
        local_state(s),
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

/// Escapes text for SVG (XML) content and attributes; a newline (between a tooltip's
/// findings) as a character reference, so each element stays on one line of the file.
fn xml(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\n', "&#10;")
}

/// The drawing's widest extent, in pixels: about a 4K screen's width (3,840) less a
/// browser's margins and scroll bar, so a whole row is seen at 100% zoom with its 10 px
/// labels legible. A large fabric grows downwards instead, which scrolls naturally; before
/// this bound, 1,512 nodes on one row made a 42,056 px wide strip nobody could read.
pub const SVG_MAX_WIDTH: f64 = 3200.0;
const MARGIN: f64 = 20.0;
/// Room above the drawing for its title and legend.
const LEGEND: f64 = 40.0;
/// Horizontal distance between switches in an upper tier's row.
const SWITCH_PITCH: f64 = 64.0;
const TIER_ROW: f64 = 70.0;
/// Between the upper tiers and the leaf cells: room for the links to fan out.
const FAN: f64 = 90.0;
/// A leaf cell: its switch on top, its hosts below in rows of at most `HOSTS_PER_ROW`.
const HOST_PITCH: f64 = 22.0;
const HOSTS_PER_ROW: usize = 12;
const HOST_ROW: f64 = 84.0;
const CELL_TOP: f64 = 44.0;
const CELL_PAD: f64 = 24.0;
const CELL_MIN: f64 = 70.0;
const BAND_GAP: f64 = 30.0;
/// Between parallel links of the same two nodes, at their middle.
const PARALLEL_GAP: f64 = 12.0;

/// Link and node colours by the worst finding about them: fail, warn, info, none.
pub const FAIL_COLOUR: &str = "#d00000";
pub const WARN_COLOUR: &str = "#e08a00";
pub const INFO_COLOUR: &str = "#2a7fd4";
const LINK_COLOUR: &str = "#7a8a99";

fn colour(severity: Option<Severity>) -> Option<(&'static str, f64)> {
    match severity? {
        Severity::Fail => Some((FAIL_COLOUR, 3.0)),
        Severity::Warn => Some((WARN_COLOUR, 2.5)),
        Severity::Info => Some((INFO_COLOUR, 2.0)),
        Severity::Ok => None,
    }
}

/// Where each node is drawn, its tier, and the drawing's size.
#[derive(Debug)]
pub struct Layout {
    pub at: BTreeMap<u64, (f64, f64)>,
    pub tier: BTreeMap<u64, usize>,
    pub width: f64,
    pub height: f64,
}

/// Hop distance from the hosts: CAs are tier 0, the switches they hang off (leaves) 1, the
/// switches above those 2 (spines), and so on; switches no host reaches go above all.
fn tiers(s: &Subnet) -> BTreeMap<u64, usize> {
    let mut neighbours: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for l in &s.links {
        neighbours.entry(l.a.guid).or_default().push(l.b.guid);
        neighbours.entry(l.b.guid).or_default().push(l.a.guid);
    }
    let mut tier: BTreeMap<u64, usize> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::new();
    for n in s.nodes.iter().filter(|n| !n.is_switch()) {
        tier.insert(n.guid, 0);
        queue.push_back(n.guid);
    }
    while let Some(g) = queue.pop_front() {
        let next = tier[&g] + 1;
        for peer in neighbours.get(&g).into_iter().flatten() {
            if !tier.contains_key(peer) {
                tier.insert(*peer, next);
                queue.push_back(*peer);
            }
        }
    }
    let top = tier.values().max().copied().unwrap_or(0).max(1) + 1;
    for n in &s.nodes {
        tier.entry(n.guid).or_insert(top);
    }
    tier
}

/// The drawing's layout, tiers by hop distance from the hosts:
/// - switches two or more hops from any host (spines and above) in rows at the top, the
///   farthest tier highest, each row wrapped at `SVG_MAX_WIDTH`;
/// - below, one cell per leaf switch (a switch with hosts), its hosts grouped under it in
///   rows of `HOSTS_PER_ROW`; cells fill bands left to right and wrap at `SVG_MAX_WIDTH`.
///   Hosts with no switch (cabled back to back) share a cell with no switch.
///
/// Every order is by description then GUID, so two walks of one fabric draw the same.
pub fn layout(s: &Subnet) -> Layout {
    let tier = tiers(s);
    let usable = SVG_MAX_WIDTH - 2.0 * MARGIN;
    let order = cells(s, &tier);
    let per_row = ((usable / SWITCH_PITCH).floor() as usize).max(1);
    let rows = upper_rows(s, &tier, per_row);
    let mut widest = rows
        .iter()
        .map(|r| r.len() as f64 * SWITCH_PITCH)
        .fold(0.0, f64::max);

    // Cells into bands.
    let cell_width =
        |hosts: usize| (hosts.clamp(1, HOSTS_PER_ROW) as f64 * HOST_PITCH + CELL_PAD).max(CELL_MIN);
    let cell_height = |hosts: usize| CELL_TOP + hosts.div_ceil(HOSTS_PER_ROW) as f64 * HOST_ROW;
    let mut bands: Vec<Vec<usize>> = vec![Vec::new()];
    let mut band_width = 0.0;
    for (i, (_, hosts)) in order.iter().enumerate() {
        let w = cell_width(hosts.len());
        if band_width + w > usable && !bands.last().unwrap().is_empty() {
            bands.push(Vec::new());
            band_width = 0.0;
        }
        bands.last_mut().unwrap().push(i);
        band_width += w;
        widest = widest.max(band_width);
    }
    let width = (widest + 2.0 * MARGIN).max(200.0);

    let mut at = BTreeMap::new();
    let mut y = LEGEND + MARGIN;
    for row in &rows {
        let x0 = (width - row.len() as f64 * SWITCH_PITCH) / 2.0;
        for (i, n) in row.iter().enumerate() {
            at.insert(n.guid, (x0 + SWITCH_PITCH * (i as f64 + 0.5), y + 14.0));
        }
        y += TIER_ROW;
    }
    if !rows.is_empty() {
        y += FAN;
    }
    for band in bands.iter().filter(|b| !b.is_empty()) {
        let total: f64 = band.iter().map(|i| cell_width(order[*i].1.len())).sum();
        let mut x = (width - total) / 2.0;
        let mut tallest: f64 = 0.0;
        for i in band {
            let (leaf, hosts) = &order[*i];
            let mut hosts = hosts.clone();
            hosts.sort_by(by_name);
            let w = cell_width(hosts.len());
            if let Some(leaf) = leaf {
                at.insert(leaf.guid, (x + w / 2.0, y + 14.0));
            }
            let cols = hosts.len().clamp(1, HOSTS_PER_ROW);
            let left = x + (w - cols as f64 * HOST_PITCH) / 2.0;
            for (k, h) in hosts.iter().enumerate() {
                at.insert(
                    h.guid,
                    (
                        left + HOST_PITCH * ((k % cols) as f64 + 0.5),
                        y + CELL_TOP + HOST_ROW * (k / cols) as f64,
                    ),
                );
            }
            tallest = tallest.max(cell_height(hosts.len()));
            x += w;
        }
        y += tallest + BAND_GAP;
    }
    Layout {
        at,
        tier,
        width,
        height: y + MARGIN,
    }
}

/// Description then GUID: every order of the drawing, so two walks of one fabric draw the
/// same.
fn by_name(a: &&Node, b: &&Node) -> std::cmp::Ordering {
    (&a.description, a.guid).cmp(&(&b.description, b.guid))
}

/// One cell per leaf switch with the hosts cabled first to it, then the hosts with no
/// switch.
fn cells<'a>(s: &'a Subnet, tier: &BTreeMap<u64, usize>) -> Vec<(Option<&'a Node>, Vec<&'a Node>)> {
    // Each host's cell: the first switch it is cabled to.
    let mut cells: BTreeMap<Option<u64>, Vec<&Node>> = BTreeMap::new();
    for n in s.nodes.iter().filter(|n| !n.is_switch()) {
        let leaf = s.links.iter().find_map(|l| {
            let peer = if l.a.guid == n.guid {
                l.b.guid
            } else if l.b.guid == n.guid {
                l.a.guid
            } else {
                return None;
            };
            s.node(peer).filter(|p| p.is_switch()).map(|p| p.guid)
        });
        cells.entry(leaf).or_default().push(n);
    }
    let mut leaves: Vec<&Node> = s
        .nodes
        .iter()
        .filter(|n| n.is_switch() && tier[&n.guid] == 1)
        .collect();
    leaves.sort_by(by_name);
    let mut order: Vec<(Option<&Node>, Vec<&Node>)> = leaves
        .iter()
        .map(|l| (Some(*l), cells.remove(&Some(l.guid)).unwrap_or_default()))
        .collect();
    if let Some(loose) = cells.remove(&None) {
        order.push((None, loose));
    }
    // A host whose first switch is not a leaf cannot be (tier 1 is "next to a host").
    order
}

/// The switches two or more hops from any host, by tier (the farthest first), each tier's
/// row wrapped at `per_row`.
fn upper_rows<'a>(
    s: &'a Subnet,
    tier: &BTreeMap<u64, usize>,
    per_row: usize,
) -> Vec<Vec<&'a Node>> {
    let mut upper: BTreeMap<usize, Vec<&Node>> = BTreeMap::new();
    for n in s
        .nodes
        .iter()
        .filter(|n| n.is_switch() && tier[&n.guid] >= 2)
    {
        upper.entry(tier[&n.guid]).or_default().push(n);
    }
    let mut rows: Vec<Vec<&Node>> = Vec::new();
    for (_, mut nodes) in upper.into_iter().rev() {
        nodes.sort_by(by_name);
        for chunk in nodes.chunks(per_row) {
            rows.push(chunk.to_vec());
        }
    }
    rows
}

/// A link's path: a quadratic curve whose bend says what it is. Between tiers it is
/// straight; between two nodes of one tier (a ring, a torus, a switch-to-switch loop) it
/// bows out so the loop shows instead of lying on the row; the `k`th of `n` parallel links
/// of the same two nodes is offset from the others so each is seen, and a loopback cable
/// (a node to itself) is a loop above the node.
fn link_path(a: (f64, f64), b: (f64, f64), same_tier: bool, k: usize, n: usize) -> String {
    let offset = (k as f64 - (n as f64 - 1.0) / 2.0) * PARALLEL_GAP;
    let (dx, dy) = (b.0 - a.0, b.1 - a.1);
    let len = (dx * dx + dy * dy).sqrt();
    if len < 1.0 {
        let r = 18.0 + k as f64 * PARALLEL_GAP;
        return format!(
            "M {:.1} {:.1} C {:.1} {:.1} {:.1} {:.1} {:.1} {:.1}",
            a.0,
            a.1,
            a.0 - r,
            a.1 - 2.0 * r,
            a.0 + r,
            a.1 - 2.0 * r,
            a.0,
            a.1
        );
    }
    let bulge = if same_tier {
        (0.2 * len).max(24.0)
    } else {
        0.0
    };
    let (nx, ny) = (-dy / len, dx / len);
    let c = (
        (a.0 + b.0) / 2.0 + nx * (bulge + offset),
        (a.1 + b.1) / 2.0 + ny * (bulge + offset),
    );
    format!(
        "M {:.1} {:.1} Q {:.1} {:.1} {:.1} {:.1}",
        a.0, a.1, c.0, c.1, b.0, b.1
    )
}

/// A label drawn on the picture, cut to `max` characters (the tooltip has it whole).
fn short_label(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        let kept: String = text.chars().take(max - 1).collect();
        format!("{kept}…")
    }
}

/// The topology as SVG, laid out by `layout`. Each link is its own `<path>`, coloured by
/// the worst finding whose subject is that link's name (`Subnet::link_name`), whatever
/// the finding's code: fail red, warn orange, info blue, none grey; its `<title>` names
/// both ends and every finding about it. A node named by a finding is coloured the same.
pub fn svg(s: &Subnet, findings: &[Diagnostic]) -> String {
    let lay = layout(s);
    let about = |subject: &str| -> Vec<&Diagnostic> {
        findings
            .iter()
            .filter(|f| f.severity != Severity::Ok)
            .filter(|f| {
                f.subject
                    .as_ref()
                    .and_then(|s| s.finding_keys().2)
                    .as_deref()
                    == Some(subject)
            })
            .collect()
    };
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0}\" height=\"{:.0}\" \
         font-family=\"sans-serif\" font-size=\"10\">\n<title>{}</title>\n",
        lay.width,
        lay.height,
        xml(&format!(
            "subnet: {} nodes, {} links",
            s.nodes.len(),
            s.links.len()
        ))
    );
    out.push_str(&format!(
        "<text x=\"{MARGIN}\" y=\"{:.0}\" font-size=\"12\">{} nodes, {} links; links: \
         <tspan fill=\"{FAIL_COLOUR}\">fail</tspan> <tspan fill=\"{WARN_COLOUR}\">warn</tspan> \
         <tspan fill=\"{INFO_COLOUR}\">info</tspan> <tspan fill=\"{LINK_COLOUR}\">no finding</tspan>; \
         hover for names and findings</text>\n",
        MARGIN + 8.0,
        s.nodes.len(),
        s.links.len()
    ));
    draw_links(&mut out, s, &lay, &about);
    draw_nodes(&mut out, s, &lay, &about);
    out.push_str("</svg>\n");
    out
}

/// A link's or node's `<title>`: its name, then each finding about it.
fn tooltip(mut tip: String, found: &[&Diagnostic]) -> String {
    for f in found {
        tip.push_str(&format!(
            "\n{} {}: {}",
            f.severity.label(),
            f.code.as_str(),
            f.message
        ));
    }
    tip
}

/// Each link as a `<path>` coloured by the worst finding `about` its name.
fn draw_links<'f>(
    out: &mut String,
    s: &Subnet,
    lay: &Layout,
    about: &dyn Fn(&str) -> Vec<&'f Diagnostic>,
) {
    // Parallel links: the same two nodes, each link its index among them.
    let pair = |a: u64, b: u64| (a.min(b), a.max(b));
    let mut parallel: BTreeMap<(u64, u64), usize> = BTreeMap::new();
    for l in &s.links {
        *parallel.entry(pair(l.a.guid, l.b.guid)).or_default() += 1;
    }
    let mut seen: BTreeMap<(u64, u64), usize> = BTreeMap::new();
    for l in &s.links {
        let (Some(a), Some(b)) = (lay.at.get(&l.a.guid), lay.at.get(&l.b.guid)) else {
            continue;
        };
        let key = pair(l.a.guid, l.b.guid);
        let k = seen.entry(key).or_default();
        let same_tier = lay.tier.get(&l.a.guid) == lay.tier.get(&l.b.guid);
        // Drawn from the smaller GUID so parallel offsets all count from one side.
        let (from, to) = if l.a.guid <= l.b.guid { (a, b) } else { (b, a) };
        let d = link_path(*from, *to, same_tier, *k, parallel[&key]);
        *k += 1;
        let name = s.link_name(l);
        let found = about(&name);
        let worst = found.iter().map(|f| f.severity).max();
        let (stroke, width) = colour(worst).unwrap_or((LINK_COLOUR, 1.0));
        let tip = tooltip(name.clone(), &found);
        out.push_str(&format!(
            "<path d=\"{d}\" fill=\"none\" stroke=\"{stroke}\" stroke-width=\"{width}\"><title>{}</title></path>\n",
            xml(&tip)
        ));
    }
}

/// Each node: a switch a square, a host a dot, coloured by the worst finding `about` it.
fn draw_nodes<'f>(
    out: &mut String,
    s: &Subnet,
    lay: &Layout,
    about: &dyn Fn(&str) -> Vec<&'f Diagnostic>,
) {
    for n in &s.nodes {
        let Some((x, y)) = lay.at.get(&n.guid) else {
            continue;
        };
        let label = if n.description.is_empty() {
            guid_text(n.guid)
        } else {
            n.description.clone()
        };
        let found = about(&format!("\"{}\"", n.description));
        let fill = colour(found.iter().map(|f| f.severity).max())
            .map(|c| c.0)
            .unwrap_or(if n.is_switch() { "#2b5d8a" } else { "#4c9a52" });
        let tip = tooltip(
            format!("{label} ({}, LID {})", guid_text(n.guid), n.lid),
            &found,
        );
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
                xml(&short_label(&label, 11))
            ));
        } else {
            out.push_str(&format!(
                "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"5\" fill=\"{fill}\"><title>{}</title></circle>\n",
                xml(&tip)
            ));
            // Down the page, so a row of hosts 22 px apart keeps its labels apart.
            out.push_str(&format!(
                "<text x=\"{x:.1}\" y=\"{:.1}\" font-size=\"8\" transform=\"rotate(90 {x:.1} {:.1})\">{}</text>\n",
                y + 9.0,
                y + 9.0,
                xml(&short_label(&label, 15))
            ));
        }
    }
}

/// The stderr note for each end whose PMA did not confirm `--reset-counters`.
pub fn unconfirmed_clears(names: &[String]) -> String {
    names
        .iter()
        .map(|name| format!("rdmactl: {name}: the PMA did not confirm clearing its counters\n"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::diagnostic::Subject;
    use crate::model::topology::{End, Link};
    use std::collections::BTreeSet;

    fn node(guid: u64, t: MadNodeType, desc: &str) -> Node {
        Node {
            guid,
            node_type: t,
            description: desc.into(),
            lid: guid as u16,
            num_ports: 36,
            system_image_guid: guid,
            vendor_id: 0,
            device_id: 0,
            enhanced_port0: false,
            port_guids: vec![],
            route: vec![],
            ports: vec![],
        }
    }

    fn link(a: u64, pa: u8, b: u64, pb: u8) -> Link {
        Link::new(End { guid: a, port: pa }, End { guid: b, port: pb })
    }

    fn subnet(nodes: Vec<Node>, links: Vec<Link>) -> Subnet {
        Subnet {
            local: End {
                guid: nodes[0].guid,
                port: 1,
            },
            local_lid: 1,
            local_sm_lid: 1,
            local_state: Some(crate::model::device::PortState::Active),
            nodes,
            links,
            sms: vec![],
            unanswered: vec![],
            mads: MadStats::default(),
            mads_by_node: vec![],
            counters_skipped: vec![],
            elapsed_ms: 1,
            interval_s: None,
        }
    }

    /// A two-level fat tree: every leaf to every spine, `hosts` hosts a leaf; leaf 0 has a
    /// second cable to spine 0 (`extra`).
    fn fat_tree(spines: u64, leaves: u64, hosts: u64, extra: bool) -> Subnet {
        let (spine, leaf, host) = (
            |s| 0x5000 + s,
            |l| 0x6000 + l,
            |l, h| 0x10_0000 + l * 64 + h,
        );
        let mut nodes = Vec::new();
        let mut links = Vec::new();
        for s in 0..spines {
            nodes.push(node(spine(s), MadNodeType::Switch, &format!("spine{s}")));
        }
        for l in 0..leaves {
            nodes.push(node(leaf(l), MadNodeType::Switch, &format!("leaf{l}")));
            for s in 0..spines {
                links.push(link(
                    leaf(l),
                    (hosts + s + 1) as u8,
                    spine(s),
                    (l + 1) as u8,
                ));
            }
            for h in 0..hosts {
                nodes.push(node(
                    host(l, h),
                    MadNodeType::Ca,
                    &format!("node{l:02}{h:02} HCA-1"),
                ));
                links.push(link(host(l, h), 1, leaf(l), (h + 1) as u8));
            }
        }
        if extra {
            links.push(link(
                leaf(0),
                (hosts + spines + 1) as u8,
                spine(0),
                (leaves + 1) as u8,
            ));
        }
        subnet(nodes, links)
    }

    fn paths(svg: &str) -> Vec<&str> {
        svg.lines().filter(|l| l.starts_with("<path ")).collect()
    }

    fn d(line: &str) -> &str {
        line.split("d=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
    }

    /// 1,512 nodes (24 spines, 48 leaves of 30 hosts): one row made it 42,056 × 600 px.
    #[test]
    fn a_1512_node_fabric_is_drawn_within_the_bound_every_link_its_own_path() {
        let s = fat_tree(24, 48, 30, true);
        assert_eq!(s.nodes.len(), 1512);
        let lay = layout(&s);
        assert!(lay.width <= SVG_MAX_WIDTH, "width {}", lay.width);
        assert!(lay.height <= SVG_MAX_WIDTH, "height {}", lay.height);
        assert_eq!(lay.at.len(), s.nodes.len(), "every node placed");
        let spots: BTreeSet<(i64, i64)> = lay
            .at
            .values()
            .map(|(x, y)| (*x as i64, *y as i64))
            .collect();
        assert_eq!(spots.len(), s.nodes.len(), "no two nodes on one spot");
        // Tiers: hosts below their leaf, leaves below the spines.
        let y = |g: u64| lay.at[&g].1;
        assert!(y(0x5000) < y(0x6000) && y(0x6000) < y(0x10_0000));
        assert_eq!(
            (lay.tier[&0x10_0000], lay.tier[&0x6000], lay.tier[&0x5000]),
            (0, 1, 2)
        );

        let svg = svg(&s, &[]);
        assert!(svg.contains(&format!(
            "width=\"{:.0}\" height=\"{:.0}\"",
            lay.width, lay.height
        )));
        let drawn = paths(&svg);
        assert_eq!(drawn.len(), s.links.len(), "parallel links included");
        let distinct: BTreeSet<&str> = drawn.iter().map(|l| d(l)).collect();
        assert_eq!(
            distinct.len(),
            drawn.len(),
            "no two links drawn on one path"
        );
        assert_eq!(svg.matches("<rect ").count(), 72);
        assert_eq!(svg.matches("<circle ").count(), 1440);
    }

    /// Switches in a 3×3 torus, two hosts each: the ring links lie within one tier, so they
    /// bow out instead of lying on each other along the row.
    #[test]
    fn a_torus_draws_its_loops_as_arcs() {
        let sw = |r: u64, c: u64| 0x7000 + r * 3 + c;
        let mut nodes = Vec::new();
        let mut links = Vec::new();
        for r in 0..3 {
            for c in 0..3 {
                nodes.push(node(sw(r, c), MadNodeType::Switch, &format!("t{r}{c}")));
                links.push(link(sw(r, c), 1, sw(r, (c + 1) % 3), 2));
                links.push(link(sw(r, c), 3, sw((r + 1) % 3, c), 4));
                for h in 0..2 {
                    let g = 0x20_0000 + sw(r, c) * 4 + h;
                    nodes.push(node(g, MadNodeType::Ca, &format!("h{r}{c}{h}")));
                    links.push(link(g, 1, sw(r, c), 10 + h as u8));
                }
            }
        }
        let s = subnet(nodes, links);
        let svg = svg(&s, &[]);
        let drawn = paths(&svg);
        assert_eq!(drawn.len(), s.links.len());
        let distinct: BTreeSet<&str> = drawn.iter().map(|l| d(l)).collect();
        assert_eq!(distinct.len(), drawn.len());
        // A switch-to-switch path's control point is off the straight line; a host's is on it.
        let bend = |path: &str| {
            let v: Vec<f64> = path
                .split_whitespace()
                .filter_map(|w| w.parse().ok())
                .collect();
            let (ax, ay, cx, cy, bx, by) = (v[0], v[1], v[2], v[3], v[4], v[5]);
            ((bx - ax) * (cy - ay) - (by - ay) * (cx - ax)).abs()
                / ((bx - ax).hypot(by - ay)).max(1.0)
        };
        for line in &drawn {
            let title = line.split("<title>").nth(1).unwrap();
            let switches = title.matches("switch ").count();
            if switches == 2 {
                assert!(bend(d(line)) > 10.0, "{line}");
            } else {
                assert!(bend(d(line)) < 0.5, "{line}");
            }
        }
    }

    /// A link is coloured by its worst finding, whatever the code, and its tooltip names both
    /// ends and each finding; parallel links each keep their own.
    #[test]
    fn links_take_the_colour_of_their_worst_finding() {
        let s = fat_tree(2, 2, 2, true);
        let about = |l: &Link, sev, code: &'static str, msg: &str| {
            let mut f = Diagnostic::finding(sev, code.into(), msg);
            f.subject = Some(Subject::Other(s.link_name(l)));
            f
        };
        // The two parallel leaf0 ↔ spine0 links.
        let para: Vec<&Link> = s
            .links
            .iter()
            .filter(|l| l.a.guid == 0x5000 && l.b.guid == 0x6000)
            .collect();
        assert_eq!(para.len(), 2);
        let host = s.links.iter().find(|l| l.a.guid == 0x6001).unwrap();
        let findings = vec![
            about(para[0], Severity::Fail, "subnet-link-errors", "errors"),
            about(
                para[1],
                Severity::Info,
                "subnet-link-slower-parallel",
                "slower",
            ),
            about(host, Severity::Warn, "subnet-xmit-wait", "congested"),
            about(host, Severity::Info, "subnet-link-not-active", "armed"),
        ];
        let svg = svg(&s, &findings);
        let line_of = |l: &Link| {
            let name = xml(&s.link_name(l));
            paths(&svg)
                .into_iter()
                .find(|p| p.contains(&format!("<title>{name}")))
                .unwrap()
                .to_string()
        };
        assert!(line_of(para[0]).contains(FAIL_COLOUR));
        assert!(
            line_of(para[0]).contains("FAIL subnet-link-errors: errors"),
            "{}",
            line_of(para[0])
        );
        assert!(line_of(para[1]).contains(INFO_COLOUR));
        let h = line_of(host);
        assert!(h.contains(WARN_COLOUR), "the worst of warn and info: {h}");
        assert!(
            h.contains("subnet-xmit-wait: congested") && h.contains("armed"),
            "{h}"
        );
        let plain = paths(&svg)
            .iter()
            .filter(|p| p.contains(LINK_COLOUR))
            .count();
        assert_eq!(plain, s.links.len() - 3);
    }

    /// The text report fits COLUMNS even with a 64-character node description in a subject.
    #[test]
    fn the_text_fits_the_width() {
        let mut s = fat_tree(1, 1, 1, false);
        s.nodes[2].description =
            "node042 mlx5_0 HCA-1 rack 17 row 4 building B east datacenter".into();
        let l = l_of(&s);
        let mut f = Diagnostic::finding(
            Severity::Warn,
            "subnet-link-errors".into(),
            "1 error counter(s) over threshold on this link",
        )
        .evidence("switch \"leaf0\" port 1: symbol_error = 77: minor link errors (bad symbols)");
        f.subject = Some(Subject::Other(s.link_name(l)));
        let ok = Diagnostic::finding(Severity::Ok, "subnet-sm".into(), "master SM")
            .about(Subject::Other("sm".into()));
        let findings = [f, ok];
        for width in [60, 80, 100] {
            let style = Style {
                color: false,
                width: Some(width),
            };
            let text = text(&s, "mlx5_0", 1, &findings, style);
            for line in text.lines() {
                assert!(line.chars().count() <= width, "{width}: {line:?}\n{text}");
            }
            // Nothing is lost: every word of the subject and the message is there.
            let words: Vec<&str> = text.split_whitespace().collect();
            for w in s.link_name(l).split_whitespace() {
                assert!(words.contains(&w), "{w}\n{text}");
            }
        }
        // Without a width, whole lines as before.
        let whole = text(&s, "mlx5_0", 1, &findings, Style::plain());
        assert!(
            whole.lines().any(|l| l.contains(&s.link_name(l_of(&s)))),
            "{whole}"
        );
    }

    fn l_of(s: &Subnet) -> &Link {
        s.links.iter().find(|l| l.b.guid == 0x10_0000).unwrap()
    }
}
