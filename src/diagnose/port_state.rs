//! Is this port up, and does its netdev carry traffic? One rule, whoever asks: `check`,
//! `doctor` (and the exporter's doctor series), a failed run over the TCP exchange and one
//! under `--cm`. Before it, four rules answered with three fixes, and the exporter counted
//! operstate `unknown` as down where doctor counted it up; now the same fact gives the same
//! code (`port-state` for the port, `netdev` for the netdev), cause and fix everywhere, and
//! "carries traffic" is `model::device::carries_traffic`'s answer alone.

use crate::model::codes;
use crate::model::device::{carries_traffic, LinkLayer, Netdev, OperState, PhysState, PortState};
use crate::model::diagnostic::{Diagnostic, Seen, Severity, Source};
use crate::model::facts::{EndFacts, NetdevFacts};

/// A netdev as the question needs it, from whichever gatherer read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetdevAsked {
    pub name: String,
    /// False: gone, or in another network namespace.
    pub exists: bool,
    pub operstate: Option<OperState>,
    /// `carries_traffic`'s answer, taken where IFF_UP was read.
    pub carries_traffic: bool,
}

impl NetdevAsked {
    /// doctor's and the exporter's netdev (sysfs `class/net`): a missing operstate reads
    /// as `unknown`, as iproute2 shows it.
    pub fn of_netdev(n: &Netdev) -> NetdevAsked {
        let oper = n.operstate.clone().unwrap_or(OperState::Unknown);
        NetdevAsked {
            name: n.name.clone(),
            exists: true,
            carries_traffic: carries_traffic(&oper, n.admin_up),
            operstate: Some(oper),
        }
    }

    /// check's and a failed run's netdev (rtnetlink, or a captured tree's `class/net`).
    pub fn of_facts(n: &NetdevFacts) -> NetdevAsked {
        NetdevAsked {
            name: n.name.clone(),
            exists: n.exists,
            operstate: n.operstate.clone(),
            carries_traffic: n.up,
        }
    }

    fn oper(&self) -> &str {
        self.operstate.as_ref().map_or("unknown", OperState::name)
    }

    /// What is wrong with it, in the words both rules use.
    fn trouble(&self) -> String {
        match &self.operstate {
            _ if !self.exists => "is not in this network namespace (removed, or moved)".into(),
            Some(o) if o.no_carrier() => "has no carrier (its link partner is down)".into(),
            Some(OperState::Down) => "is down".into(),
            None => "has no link".into(),
            _ if self.carries_traffic => format!("is {} but the port has no link", self.oper()),
            _ => format!("does not carry traffic (operstate {})", self.oper()),
        }
    }

    /// The one fix for this netdev's state: fixed here when it is down, at the other end
    /// of the link when it has no carrier.
    fn fix(&self) -> String {
        let nd = &self.name;
        match &self.operstate {
            _ if !self.exists => {
                format!("run where {nd} lives, or use a GID whose netdev is in this namespace")
            }
            Some(o) if o.no_carrier() => format!(
                "bring up the other end of {nd}'s link: the switch port, or for a veth its peer (`ip link show {nd}` names it)"
            ),
            Some(OperState::Down) => format!("bring the interface up: `ip link set {nd} up`"),
            None => format!("bring the interface up: `ip link set {nd} up`; if it stays down, check the cable and the switch port (`ip link show {nd}`)"),
            _ => format!(
                "check {nd}'s link: the cable and the switch port (`ip link show {nd}`)"
            ),
        }
    }

    fn seen(&self) -> Option<Seen> {
        if self.operstate.is_none() && self.exists {
            return None;
        }
        Some(Seen::new(
            Source::Netdev,
            if self.exists {
                format!("netdev {} operstate {}", self.name, self.oper())
            } else {
                format!("netdev {} is not in this network namespace", self.name)
            },
        ))
    }
}

/// A port as the question needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortAsked {
    /// `rxe0/1`.
    pub name: String,
    pub link_layer: Option<LinkLayer>,
    pub iwarp: bool,
    pub state: Option<PortState>,
    pub phys: Option<PhysState>,
    /// The netdev the port rides on (RoCE, iWARP).
    pub netdev: Option<NetdevAsked>,
    /// Why `state` is None when its file was read and failed: `PATH: ERRNO` (EACCES,
    /// EISDIR, or ENOENT for a file that is gone).
    pub state_unread: Option<String>,
    /// An InfiniBand port's LID: 0 or 0xffff is no address, whatever the state says.
    pub lid: Option<u32>,
}

impl PortAsked {
    pub fn of_port(p: &crate::model::device::Port, iwarp: bool) -> PortAsked {
        PortAsked {
            name: format!("{}/{}", p.device, p.number),
            link_layer: p.link_layer.clone(),
            iwarp,
            state: p.state.clone(),
            phys: p.phys_state.clone(),
            netdev: p.netdev.as_ref().map(NetdevAsked::of_netdev),
            state_unread: p
                .read_problems
                .iter()
                .find(|r| r.path.file_name().is_some_and(|f| f == "state"))
                .map(|r| format!("{}: {}", r.path.display(), errno_words(&r.error))),
            // doctor judges an InfiniBand port's LID under its own code (`lid`), beside
            // this one: the port's state alone here, so a LID 0 is not said twice.
            lid: None,
        }
    }

    /// A failed run's end: the port re-read, its netdev as the run's facts have it when it
    /// is the port's own (the GID's netdev may be a VLAN above it).
    pub fn of_end(local: &EndFacts, netdev: Option<&NetdevFacts>) -> PortAsked {
        let own = local.port_netdev.clone().or_else(|| local.netdev_now());
        let seen = netdev.filter(|n| own.as_deref() == Some(n.name.as_str()));
        PortAsked {
            name: local.name(),
            link_layer: local.link_layer.clone(),
            iwarp: false,
            state: local.port_state.clone(),
            phys: local.phys_state.clone(),
            // Only its name when its state was not read.
            netdev: seen.map(NetdevAsked::of_facts).or_else(|| {
                own.map(|name| NetdevAsked {
                    name,
                    exists: true,
                    operstate: None,
                    carries_traffic: false,
                })
            }),
            state_unread: None,
            lid: local.lid.map(u32::from),
        }
    }

    fn active(&self) -> bool {
        self.state.as_ref().is_some_and(PortState::is_active) && !self.without_lid()
    }

    /// An InfiniBand port with LID 0 or 0xffff: no subnet manager has given it an address.
    fn without_lid(&self) -> bool {
        self.link_layer == Some(LinkLayer::InfiniBand) && matches!(self.lid, Some(0 | 0xffff))
    }

    fn state_name(&self) -> &str {
        self.state.as_ref().map_or("unknown", PortState::name)
    }

    fn seen(&self) -> Seen {
        Seen::new(
            Source::Local,
            format!(
                "{} state {}, phys_state {}",
                self.name,
                self.state_name(),
                self.phys.as_ref().map_or("unknown", PhysState::name)
            ),
        )
    }
}

/// `port-state`: ok when ACTIVE, else why not, with the one fix. A RoCE or iWARP port
/// follows its netdev, so the netdev's state is this failure's evidence and its fix, not a
/// second failure; an InfiniBand port waits for its link and its subnet manager.
pub fn port_state(p: &PortAsked) -> Diagnostic {
    if p.state.is_none() {
        return state_not_read(p);
    }
    if p.active() {
        return Diagnostic::finding(
            Severity::Ok,
            codes::PORT_STATE,
            format!("{} is ACTIVE", p.name),
        )
        .seen(p.seen());
    }
    let state = p.state_name();
    if p.link_layer == Some(LinkLayer::InfiniBand) {
        let why = match p.phys {
            Some(PhysState::LinkUp) => {
                "the link is up but no subnet manager has configured the port"
            }
            Some(PhysState::Polling) => "no physical link: the port is polling for a peer",
            Some(PhysState::Disabled) => "the port is administratively disabled",
            _ => "the port is not usable",
        };
        let fix = if p.phys == Some(PhysState::LinkUp) {
            "start a subnet manager (`systemctl start opensm`) on one node of the fabric, or check the SM's logs; an SR-IOV VF needs a virtualization-aware SM"
        } else {
            "check the cable and the switch port (`ibstat`, `iblinkinfo`)"
        };
        let message = if p.state.as_ref().is_some_and(PortState::is_active) {
            // ACTIVE with no LID: what the SM set, it has not finished (or was reset).
            format!(
                "{} is ACTIVE but has no LID: no subnet manager has given it an address to connect to",
                p.name
            )
        } else {
            format!("{} is {state}: {why}", p.name)
        };
        let mut x = Diagnostic::explanation(codes::PORT_STATE, message, fix).seen(p.seen());
        if let Some(lid) = p.lid {
            x = x.seen(Seen::new(
                Source::Local,
                format!("{} LID 0x{lid:04x}", p.name),
            ));
        }
        return x;
    }
    let kind = if p.iwarp { "an iWARP" } else { "a RoCE" };
    let (trouble, fix) = match &p.netdev {
        Some(n) => (format!("{} {}", n.name, n.trouble()), n.fix()),
        None => (
            "no netdev was found for it".to_string(),
            "for rxe, recreate it on an existing interface: `rdma link add rxe0 type rxe netdev IF`".to_string(),
        ),
    };
    let mut x = Diagnostic::explanation(
        codes::PORT_STATE,
        format!(
            "{} is {state}: {kind} port follows its netdev, and {trouble}",
            p.name
        ),
        fix,
    )
    .seen(p.seen());
    if let Some(seen) = p.netdev.as_ref().and_then(NetdevAsked::seen) {
        x = x.seen(seen);
    }
    x
}

/// A port whose state could not be read is not known to be down: its file and errno are
/// the cause, and no link, cable or netdev advice follows from a read that failed (the
/// netdev's own state stays as evidence).
fn state_not_read(p: &PortAsked) -> Diagnostic {
    let (why, file) = match &p.state_unread {
        Some(why) => (
            format!("its state file could not be read: {why}"),
            why.rsplit_once(": ")
                .map_or(why.as_str(), |w| w.0)
                .to_string(),
        ),
        None => (
            "its state was not read".to_string(),
            format!(
                "/sys/class/infiniband/{}/state",
                p.name.replace('/', "/ports/")
            ),
        ),
    };
    let mut x = Diagnostic::explanation(
        codes::PORT_STATE,
        format!("{}'s state is not known: {why}", p.name),
        format!(
            "rdmactl judges no port it cannot read: see why the read fails (`ls -l {file}`; EACCES: run the check as a user, or in a container with a /sys, that can read it; ENOENT: the port or its device went away, `rdmactl devices`), or ask the kernel over netlink: `rdma link show {}`",
            p.name
        ),
    )
    .seen(p.seen());
    if let Some(seen) = p.netdev.as_ref().and_then(NetdevAsked::seen) {
        x = x.seen(seen);
    }
    x
}

/// `Permission denied (os error 13)`, as std words an io::Error, in the words people
/// search for: `EACCES (13, Permission denied)`.
fn errno_words(error: &str) -> String {
    let number = error
        .strip_suffix(')')
        .and_then(|e| e.rsplit_once("(os error "))
        .and_then(|(_, n)| n.parse::<i32>().ok());
    match number {
        Some(n) => crate::model::errno::errno_text(n),
        None => error.to_string(),
    }
}

/// The port's state when it is not ACTIVE: the failure a run explains first.
pub fn port_down(p: &PortAsked) -> Option<Diagnostic> {
    (!p.active() && p.state.is_some()).then(|| port_state(p))
}

/// `netdev`, failing: the netdev of `port` does not carry traffic (down, no carrier, or
/// gone from this namespace) while the port may still say ACTIVE (rxe learns of its link
/// through a notifier, so a QP can fail first). None when it carries traffic: `up`, or
/// `unknown` with IFF_UP, is never called down.
pub fn netdev_down(n: &NetdevAsked, port: &str) -> Option<Diagnostic> {
    if n.exists && n.carries_traffic {
        return None;
    }
    Some(
        Diagnostic::explanation(
            codes::NETDEV,
            format!(
                "netdev {} {}: {port} cannot send through it",
                n.name,
                n.trouble()
            ),
            n.fix(),
        )
        .with_seen(n.seen()),
    )
}

/// `netdev`, passing or informational: the netdev carries traffic (`what` says what else
/// was seen, e.g. its addresses), or it was not checked.
pub fn netdev_ok(n: &NetdevAsked, what: &str) -> Diagnostic {
    Diagnostic::finding(
        Severity::Ok,
        codes::NETDEV,
        format!("netdev {} is {}{what}", n.name, n.oper()),
    )
    .with_seen(n.seen())
}

/// `netdev`, a warning: it carries traffic but has no IP address, so no RoCE v2 GID.
pub fn netdev_without_address(n: &NetdevAsked) -> Diagnostic {
    let nd = &n.name;
    Diagnostic::finding(
        Severity::Warn,
        codes::NETDEV,
        format!(
            "netdev {nd} is {} but has no IP address: RoCE v2 GIDs come from its addresses",
            n.oper()
        ),
    )
    .with_seen(n.seen())
    .evidence(format!("ip addr show dev {nd}: no address"))
    .fix(format!("ip addr add <addr>/<len> dev {nd}"))
}

/// `netdev` about a netdev whose state is not the matter: not checked, or a RoCE port
/// without one, or one without an address. `severity` and `fix` as the caller judges.
pub fn netdev_note(
    severity: Severity,
    message: impl Into<String>,
    fix: Option<String>,
) -> Diagnostic {
    let d = Diagnostic::finding(severity, codes::NETDEV, message);
    match fix {
        Some(f) => d.fix(f),
        None => d,
    }
}

/// A failed run's port: this end's port not ACTIVE first, then its own netdev down. The
/// data path's builder takes its code, summary, evidence and fix (and adds the GID
/// suggestion); the connection manager's rules return it as it is.
/// A netdev gone from the namespace is left to the rule of the errno it gives (ENODEV).
pub fn run_port(local: &EndFacts, netdev: Option<&NetdevFacts>) -> Option<Diagnostic> {
    let p = PortAsked::of_end(local, netdev);
    port_down(&p).or_else(|| {
        let n = netdev.filter(|n| n.exists && local.port_netdev.as_deref() == Some(&n.name))?;
        netdev_down(&NetdevAsked::of_facts(n), &p.name)
    })
}

/// A seen line when there is one.
trait WithSeen {
    fn with_seen(self, seen: Option<Seen>) -> Self;
}

impl WithSeen for Diagnostic {
    fn with_seen(self, seen: Option<Seen>) -> Self {
        match seen {
            Some(s) => self.seen(s),
            None => self,
        }
    }
}
