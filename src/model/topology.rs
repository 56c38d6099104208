//! An InfiniBand subnet as `subnet` found it: nodes with their ports, links with both ends,
//! the subnet managers that answered, and what the walk could not reach. Also the
//! ibnetdiscover topology format read back (`--baseline`), which is the de-facto standard
//! for a fabric's wiring. A leaf: the walk (`discover`) fills it, the rules judge it, the
//! renderer prints it.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::model::device::{PhysState, PortState};
use crate::model::mad::{self, MadNodeType, Speed};

/// GUIDs print as ibnetdiscover prints them: 0x and 16 hex digits.
pub fn guid_text(guid: u64) -> String {
    format!("0x{guid:016x}")
}

/// PMA PmaCounters of one port: (the kernel's counter name, value, width in bits).
pub type CounterValues = Vec<(&'static str, u64, u8)>;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SubnetPort {
    pub port: u8,
    pub lid: u16,
    /// Printed by [`mad::port_state_name`], as the subnet tools name it.
    #[serde(serialize_with = "mad::ser_port_state")]
    pub state: PortState,
    /// Printed by [`mad::phys_state_name`] (TRAINING, not PORT_CONFIGURATION_TRAINING).
    #[serde(serialize_with = "mad::ser_phys_state")]
    pub phys_state: PhysState,
    /// Lanes active (1, 2, 4, 8, 12), 0 when the port is down.
    pub width: u8,
    pub max_width: u8,
    pub speed: Speed,
    /// The best both enabled and supported: what the port may train at.
    pub max_speed: Speed,
    /// What the hardware supports, whatever is enabled: an older HCA when this is low, a
    /// LinkWidthEnabled/LinkSpeedEnabled restriction when `max_*` is below it.
    pub supported_width: u8,
    pub supported_speed: Speed,
    pub mtu_cap: u32,
    /// The MTU the two ends agreed (NeighborMTU).
    pub active_mtu: u32,
    pub vl_cap: u8,
    pub operational_vls: u8,
    pub sm_lid: u16,
    pub is_sm: bool,
    /// PMA PmaCounters, (sysfs name, value, width); None when not read.
    #[serde(skip)]
    pub counters: Option<CounterValues>,
    /// With `--interval`: the first reading, `counters` being the second.
    #[serde(skip)]
    pub counters_before: Option<CounterValues>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Node {
    #[serde(serialize_with = "ser_guid")]
    pub guid: u64,
    #[serde(rename = "type")]
    pub node_type: MadNodeType,
    pub description: String,
    /// A switch's LID is its port 0's; a CA's, its first port's found.
    pub lid: u16,
    pub num_ports: u8,
    #[serde(skip)]
    pub system_image_guid: u64,
    #[serde(skip)]
    pub vendor_id: u32,
    #[serde(skip)]
    pub device_id: u16,
    #[serde(skip)]
    pub enhanced_port0: bool,
    /// Port GUIDs as NodeInfo gave them, by port (a CA's ports each have one).
    #[serde(skip)]
    pub port_guids: Vec<(u8, u64)>,
    /// The directed route the walk first reached it by.
    #[serde(skip)]
    pub route: Vec<u8>,
    pub ports: Vec<SubnetPort>,
}

fn ser_guid<S: serde::Serializer>(g: &u64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&guid_text(*g))
}

impl SubnetPort {
    /// The state as `subnet` prints it ([`mad::port_state_name`]).
    pub fn state_name(&self) -> &str {
        mad::port_state_name(&self.state)
    }
    /// The physical state as `subnet` prints it ([`mad::phys_state_name`]).
    pub fn phys_state_name(&self) -> &str {
        mad::phys_state_name(&self.phys_state)
    }
    /// LinkUp: the cable carries a signal both ways.
    pub fn is_link_up(&self) -> bool {
        self.phys_state == PhysState::LinkUp
    }
}

impl Node {
    pub fn port(&self, num: u8) -> Option<&SubnetPort> {
        self.ports.iter().find(|p| p.port == num)
    }
    pub fn is_switch(&self) -> bool {
        self.node_type == MadNodeType::Switch
    }
    /// ibnetdiscover's node id: `S-<guid>` or `H-<guid>`.
    pub fn id(&self) -> String {
        format!(
            "{}-{:016x}",
            if self.is_switch() { "S" } else { "H" },
            self.guid
        )
    }
}

/// One end of a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct End {
    pub guid: u64,
    pub port: u8,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Link {
    pub a: End,
    pub b: End,
}

impl Link {
    /// The same link whichever end was found first.
    pub fn new(x: End, y: End) -> Link {
        if x <= y {
            Link { a: x, b: y }
        } else {
            Link { a: y, b: x }
        }
    }
}

/// What a subnet manager said of itself (SMInfo).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SmSeen {
    #[serde(serialize_with = "ser_guid")]
    pub guid: u64,
    pub lid: u16,
    pub priority: u8,
    pub state: &'static str,
    pub act_count: u32,
}

/// A node or attribute the walk asked for and never got.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unanswered {
    /// `DR path 0,1,3` or `LID 6`.
    pub route: String,
    /// `NodeInfo`, `SmpPortInfo port 3`, `PmaCounters port 17`.
    pub what: String,
    /// The port the request went out of, for a node never reached: `S-… port 3`.
    pub via: Option<String>,
    /// The same port, for naming it.
    #[serde(skip)]
    pub from: Option<End>,
    /// The MAD status of an answer that refused the request; None when none came.
    #[serde(skip)]
    pub status: Option<u16>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct MadStats {
    /// Requests, resends not counted.
    pub requests: u64,
    pub resent: u64,
    /// Requests that got no answer after every retry.
    pub unanswered: u64,
    /// Answers with a nonzero MAD status.
    pub errors: u64,
    /// Requests that needed at least one resend (`resent` counts every resend).
    pub retried: u64,
    pub in_flight_max: usize,
}

/// The MADs of one node: how many requests were for it and how many of them had to be
/// resent (a request to a node also crosses every switch on its route).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeMads {
    pub guid: u64,
    pub requests: u64,
    pub retried: u64,
}

/// The subnet as one walk found it.
#[derive(Debug, Clone, PartialEq)]
pub struct Subnet {
    /// The port the walk started from.
    pub local: End,
    pub local_lid: u16,
    pub local_sm_lid: u16,
    /// The local port's state; None when the walk did not read it.
    pub local_state: Option<PortState>,
    pub nodes: Vec<Node>,
    pub links: Vec<Link>,
    pub sms: Vec<SmSeen>,
    pub unanswered: Vec<Unanswered>,
    pub mads: MadStats,
    /// Per node, the requests for it that had to be resent: where MADs are lost.
    pub mads_by_node: Vec<NodeMads>,
    /// Link ends whose PMA counters were not asked for: LID-routed requests cannot reach a
    /// port that is not ACTIVE or has no LID, so none was sent.
    pub counters_skipped: Vec<End>,
    pub elapsed_ms: u64,
    /// Seconds between the two counter readings of `--interval`.
    pub interval_s: Option<f64>,
}

impl Subnet {
    pub fn node(&self, guid: u64) -> Option<&Node> {
        self.nodes.iter().find(|n| n.guid == guid)
    }
    pub fn port(&self, end: End) -> Option<&SubnetPort> {
        self.node(end.guid)?.port(end.port)
    }
    /// "switch leaf3 port 17" / "node042 HCA-1 port 1": what a person reads on a label.
    pub fn end_name(&self, end: End) -> String {
        match self.node(end.guid) {
            Some(n) if n.is_switch() => format!("switch {} port {}", label(n), end.port),
            Some(n) => format!("{} port {}", label(n), end.port),
            None => format!("{} port {}", guid_text(end.guid), end.port),
        }
    }
    /// Both ends: "switch leaf3 port 17 ↔ node042 HCA-1 port 1".
    pub fn link_name(&self, link: &Link) -> String {
        format!("{} ↔ {}", self.end_name(link.a), self.end_name(link.b))
    }
}

fn label(n: &Node) -> String {
    if n.description.is_empty() {
        guid_text(n.guid)
    } else {
        format!("\"{}\"", n.description)
    }
}

/// A topology read back from ibnetdiscover's format or a previous `subnet -j`: nodes by
/// GUID and links by their two ends, enough to compare.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TopologyBaseline {
    /// guid → (is switch, description, lid)
    pub nodes: BTreeMap<u64, (bool, String, u16)>,
    pub links: Vec<Link>,
}

/// Why a topology file was refused: the line (1-based) and its text, and what was wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopologyParseError {
    pub line: usize,
    pub text: String,
    pub why: String,
}

impl std::fmt::Display for TopologyParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "line {}: {}: {}",
            self.line,
            self.why,
            shorten(&self.text)
        )
    }
}

/// A line quoted in an error: whole up to 60 characters (an ibnetdiscover port line fits),
/// else its start and `…`; a binary file's line could be any length.
pub fn shorten(text: &str) -> String {
    const MAX: usize = 60;
    let text = text.trim_end();
    if text.chars().count() <= MAX {
        format!("{text:?}")
    } else {
        let kept: String = text.chars().take(MAX - 1).collect();
        format!("{:?}", format!("{kept}…"))
    }
}

/// The `key=0x...` lines ibnetdiscover writes above each node header.
const ID_KEYS: [&str; 6] = [
    "vendid=",
    "devid=",
    "sysimgguid=",
    "switchguid=",
    "caguid=",
    "rtguid=",
];

/// Parses ibnetdiscover output (and ibsim's topology files that use its GUID ids, whose CA
/// headers say `Hca`). Node headers are `Switch N "S-<guid>" # "desc" ... lid L`,
/// `Ca N "H-<guid>" # "desc"`, `Rt N "R-<guid>" ...`; port lines `[p] "X-<guid>"[q] ... #
/// lid L`; comments, blank lines, the `vendid=`/`devid=`/`sysimgguid=`/`switchguid=`/
/// `caguid=`/`rtguid=` lines and `ibwarn:` lines (stderr captured with it) are skipped.
/// Any other line refuses the whole file, naming it: a file that is not a topology (prose,
/// another tool's output) would otherwise read as an empty subnet, every node "added". A
/// file with no node at all is refused too.
pub fn parse_ibnetdiscover(text: &str) -> Result<TopologyBaseline, TopologyParseError> {
    let mut out = TopologyBaseline::default();
    let mut current: Option<u64> = None;
    for (no, raw) in text.lines().enumerate() {
        let line = raw.trim();
        let refuse = |why: String| TopologyParseError {
            line: no + 1,
            text: raw.to_string(),
            why,
        };
        let header = ["Switch", "Ca", "Hca", "Rt"].into_iter().find(|h| {
            line.strip_prefix(h)
                .is_some_and(|r| r.starts_with([' ', '\t']))
        });
        if let Some(kind) = header {
            let id = quoted(line, 0)
                .ok_or_else(|| refuse("a node header without a quoted node id".into()))?;
            let guid = id_guid(&id).ok_or_else(|| {
                refuse(format!(
                    "node id {id:?} is not S-<guid>, H-<guid> or R-<guid>"
                ))
            })?;
            let comment = line.split_once('#').map(|c| c.1).unwrap_or("");
            let desc = quoted(comment, 0).unwrap_or_default();
            let lid = comment
                .split_whitespace()
                .skip_while(|w| *w != "lid")
                .nth(1)
                .and_then(|l| l.parse().ok())
                .unwrap_or(0);
            out.nodes.insert(guid, (kind == "Switch", desc, lid));
            current = Some(guid);
        } else if line.starts_with('[') {
            let Some(me) = current else {
                return Err(refuse(
                    "a port line before any Switch, Ca or Rt header".into(),
                ));
            };
            let port =
                bracket_num(line).ok_or_else(|| refuse("a port line without [port]".into()))?;
            let id = quoted(line, 0)
                .ok_or_else(|| refuse("a port line without its peer's quoted id".into()))?;
            let peer =
                id_guid(&id).ok_or_else(|| refuse(format!("peer id {id:?} is not a GUID id")))?;
            let after = &line[line.find(&id).map(|i| i + id.len() + 1).unwrap_or(0)..];
            let peer_port = bracket_num(after)
                .ok_or_else(|| refuse("a port line without the peer's [port]".into()))?;
            let link = Link::new(
                End { guid: me, port },
                End {
                    guid: peer,
                    port: peer_port,
                },
            );
            if !out.links.contains(&link) {
                out.links.push(link);
            }
            // A CA's header has no LID; its port lines start their comment with their own
            // (`# lid 4 lmc 0 "peer" lid 3 4xSDR`), and a CA's LID is its first port's.
            if let Some((false, _, lid @ 0)) = out.nodes.get_mut(&me) {
                let mut words = line.split_once('#').map_or("", |c| c.1).split_whitespace();
                if words.next() == Some("lid") {
                    *lid = words.next().and_then(|l| l.parse().ok()).unwrap_or(0);
                }
            }
        } else if line.is_empty() {
            current = None;
        } else if !(line.starts_with('#')
            || line.starts_with("ibwarn:")
            || ID_KEYS.iter().any(|k| line.starts_with(k)))
        {
            return Err(refuse(
                "neither ibnetdiscover's topology nor ibsim's (expected a Switch/Ca/Rt header, \
                 a [port] line, a key=value line or a # comment)"
                    .into(),
            ));
        }
    }
    if out.nodes.is_empty() {
        return Err(TopologyParseError {
            line: text.lines().count(),
            text: text.lines().last().unwrap_or("").to_string(),
            why: "no Switch, Ca or Rt header in the whole file (the last line follows)".into(),
        });
    }
    out.links.sort();
    Ok(out)
}

/// The n-th double-quoted string of a line.
fn quoted(line: &str, n: usize) -> Option<String> {
    line.split('"').nth(2 * n + 1).map(str::to_string)
}

/// `[17]...` → 17.
fn bracket_num(s: &str) -> Option<u8> {
    let s = s.trim_start();
    let rest = s.strip_prefix('[')?;
    rest[..rest.find(']')?].parse().ok()
}

/// `S-ec0d9a0300ec8240` → the GUID.
fn id_guid(id: &str) -> Option<u64> {
    let hex = id
        .strip_prefix("S-")
        .or_else(|| id.strip_prefix("H-"))
        .or_else(|| id.strip_prefix("R-"))?;
    u64::from_str_radix(hex, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"
vendid=0x0
switchguid=0x200001(200001)
Switch	8 "S-0000000000200001"		# "Switch2" base port 0 lid 3 lmc 0
[1]	"H-0000000000100003"[1](100004) 		# "Hca2" lid 4 4xSDR
[3]	"S-0000000000200000"[3]		# "Switch1" lid 1 4xSDR

caguid=0x100003
Ca	2 "H-0000000000100003"		# "Hca2"
[1](100004) 	"S-0000000000200001"[1]		# lid 4 lmc 0 "Switch2" lid 3 4xSDR

Switch	8 "S-0000000000200000"		# "Switch1" base port 0 lid 1 lmc 0
[3]	"S-0000000000200001"[3]		# "Switch2" lid 3 4xSDR
"#;

    #[test]
    fn ibnetdiscover_output_reads_back_as_nodes_and_deduplicated_links() {
        let b = parse_ibnetdiscover(SAMPLE).unwrap();
        assert_eq!(b.nodes.len(), 3);
        assert_eq!(b.nodes[&0x200001], (true, "Switch2".to_string(), 3));
        // A CA's LID is on its port line, as ibnetdiscover writes it.
        assert_eq!(b.nodes[&0x100003], (false, "Hca2".to_string(), 4));
        assert_eq!(b.links.len(), 2, "each link is listed from both ends once");
        assert!(b.links.contains(&Link::new(
            End {
                guid: 0x100003,
                port: 1
            },
            End {
                guid: 0x200001,
                port: 1
            }
        )));
    }

    #[test]
    fn a_node_id_that_is_not_a_guid_is_an_error_with_its_line() {
        let err = parse_ibnetdiscover("Switch 8 \"Switch1\"\n[1] \"Hca1\"[1]\n").unwrap_err();
        assert_eq!((err.line, err.text.as_str()), (1, "Switch 8 \"Switch1\""));
        assert!(
            err.to_string().starts_with("line 1: node id \"Switch1\""),
            "{err}"
        );
    }

    /// Real ibnetdiscover output, its key=value lines, comments and all; and an ibsim
    /// topology file with GUID ids, whose CAs are `Hca`.
    #[test]
    fn ibnetdiscover_and_ibsim_files_with_guid_ids_are_read() {
        let real = format!(
            "#\n# Topology file: generated on Mon Jan  1 00:00:00 2024\n#\n# Initiated from node \
             0000000000200000 port 0000000000200000\n\nvendid=0x2c9\ndevid=0xb924\n\
             sysimgguid=0x200000\n{SAMPLE}"
        );
        assert_eq!(
            parse_ibnetdiscover(&real).unwrap(),
            parse_ibnetdiscover(SAMPLE).unwrap()
        );
        let ibsim = "Switch\t8 \"S-0000000000200000\"\t# \"sw\" enhanced port 0 lid 0 lmc 0\n\
                     [1]\t\"H-0000000000100000\"[1]\n\n\
                     Hca\t1 \"H-0000000000100000\"\n[1]\t\"S-0000000000200000\"[1]\n";
        let b = parse_ibnetdiscover(ibsim).unwrap();
        assert!(!b.nodes[&0x100000].0, "an Hca is not a switch");
        assert_eq!(b.links.len(), 1);
    }

    /// What is not a topology is refused with its line, never read as an empty subnet.
    #[test]
    fn prose_garbage_and_empty_text_are_refused_with_the_line() {
        let prose = "Dear admin,\nhere is the fabric as of Monday.\n";
        let err = parse_ibnetdiscover(prose).unwrap_err();
        assert_eq!(err.line, 1);
        assert!(err.to_string().contains("\"Dear admin,\""), "{err}");
        // A good record, then a line of something else.
        let err = parse_ibnetdiscover(&format!("{SAMPLE}\nrandom words here\n")).unwrap_err();
        assert_eq!(err.line, SAMPLE.lines().count() + 2, "{err}");
        // A port line with no header above it, as the JSON of `ports -j` starts.
        let err = parse_ibnetdiscover("[\n  {\"device\": \"rxe0\"}\n]\n").unwrap_err();
        assert_eq!(err.line, 1);
        assert!(err.why.contains("before any Switch"), "{err}");
        // Only comments: no node at all.
        let err = parse_ibnetdiscover("# nothing\n#\n").unwrap_err();
        assert!(err.why.contains("no Switch, Ca or Rt header"), "{err}");
        // A long line is quoted shortened.
        let long = "x".repeat(500);
        let err = parse_ibnetdiscover(&long).unwrap_err();
        assert!(err.to_string().chars().count() < 200, "{err}");
        assert!(err.to_string().ends_with("…\""), "{err}");
    }

    #[test]
    fn a_link_is_the_same_whichever_end_comes_first() {
        let x = End { guid: 2, port: 1 };
        let y = End { guid: 1, port: 9 };
        assert_eq!(Link::new(x, y), Link::new(y, x));
        assert_eq!(Link::new(x, y).a, y);
    }
}
