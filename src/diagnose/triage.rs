//! `triage`'s judgement of a job log alone (no host evidence): the root errors apart from
//! their cascade (the flushed completions that follow a failed QP), reports toward one peer
//! gathered into one finding, each finding with its catalogue code, the log lines that
//! support it, what the log rules out and what it leaves unknown, and the next commands with
//! the job's own device, port, GID index, traffic class and peer. Pure: a `LogDigest` in, a
//! `Triage` out; never a cause the log does not decide.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::IpAddr;

use crate::model::codes::{self, Code};
use crate::model::diagnostic::{Diagnostic, Seen, Severity, Source, Subject};
use crate::model::errno::{self, errno_name, strerror, wc_status_name};
use crate::model::gid::Gid;
use crate::model::joblog::{
    status_words, FlushGroup, LogDigest, LogEvent, LogFailure, RefusedAttr, UNNAMED_STATE,
};

/// A line of the input: which file (its index) and which line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct LineRef {
    pub file: usize,
    pub line: u64,
}

/// A command to run next, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NextStep {
    /// The host (or rank, or `the reporting host`) to run it on.
    pub on: String,
    pub command: String,
}

/// One judged event: a root error (with everything the log ties to it).
#[derive(Debug, Clone, PartialEq)]
pub struct TriageFinding {
    pub diagnostic: Diagnostic,
    pub root: LineRef,
    /// The lines that support it, the root first.
    pub lines: Vec<LineRef>,
    /// Flushed completions that follow from it: how many, and the first few lines.
    pub cascade_count: u64,
    pub cascade: Vec<LineRef>,
    pub reporters: Vec<String>,
    pub peer: Option<IpAddr>,
    pub device: Option<String>,
    pub port: Option<u32>,
    pub gid_index: Option<u32>,
    pub status: Option<u32>,
    pub ruled_out: Vec<String>,
    pub unknown: Vec<String>,
    pub next: Vec<NextStep>,
    /// The GIDs of the root line's QP, as the log names them.
    pub local_gid: Option<Gid>,
    pub remote_gid: Option<Gid>,
    /// What this host adds: whether it is one end of the failure, and `check`'s findings
    /// there.
    pub host: HostLook,
}

/// The host triage runs on, as evidence of one finding.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum HostLook {
    /// `--no-host`, or a finding with nothing to look up (a flush storm alone).
    #[default]
    NotAsked,
    /// Why this host is not an end of the failure (or could not be read).
    Skipped(String),
    /// This host is one end: `check`'s findings on its port and GID toward the other end.
    Here(HereEnd, Vec<Diagnostic>),
}

/// One end of a failure found on this host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HereEnd {
    pub device: String,
    pub port: u32,
    pub gid_index: Option<u32>,
    /// The other end, toward which `check` judges the route.
    pub peer: Option<IpAddr>,
    /// What ties the log to this host, in words.
    pub why: String,
}

/// A GID of this host's tables, for `end_here`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostGid {
    pub device: String,
    pub port: u32,
    pub index: u32,
    pub gid: Gid,
}

/// Is this host one end of `f`? By evidence, in order: the root's local GID is in this
/// host's tables (this host reported it), its remote GID is (this host is the peer), or a
/// reporter's host name is this host's and the device the log names is here. A device name
/// alone decides nothing: `mlx5_0` is on every node of a cluster.
pub fn end_here(
    f: &TriageFinding,
    gids: &[HostGid],
    hostname: &str,
    devices: &[String],
) -> Result<HereEnd, String> {
    let held = |g: &Gid| gids.iter().find(|h| h.gid == *g);
    let ip_of = |g: &Gid| Some(g.ip());
    if let Some(h) = f.local_gid.as_ref().and_then(held) {
        return Ok(HereEnd {
            device: h.device.clone(),
            port: h.port,
            gid_index: Some(h.index),
            peer: f.peer.or_else(|| f.remote_gid.as_ref().and_then(ip_of)),
            why: format!(
                "the root line's local GID {} is {}/{} GID index {} here{}",
                h.gid.ipv6(),
                h.device,
                h.port,
                h.index,
                named_otherwise(&f.device, &h.device)
            ),
        });
    }
    // The far end by its GID, or by the peer address the line names (a RoCE v2 GID is
    // its address: rdmactl's and perftest's lines name the peer's address alone).
    let remote = f.remote_gid.or_else(|| f.peer.map(Gid::from_ip));
    if let Some(h) = remote.as_ref().and_then(held) {
        return Ok(HereEnd {
            device: h.device.clone(),
            port: h.port,
            gid_index: Some(h.index),
            peer: f.local_gid.as_ref().and_then(ip_of),
            why: format!(
                "the root line's peer {} is {}/{} GID index {} here: this host is the peer",
                h.gid.ipv6(),
                h.device,
                h.port,
                h.index
            ),
        });
    }
    let short = |h: &str| h.split('.').next().unwrap_or(h).to_string();
    // A host with no name set reads "(none)" (the kernel's default).
    let hostname = if hostname == "(none)" { "" } else { hostname };
    let this_host = if hostname.is_empty() {
        "this host".to_string()
    } else {
        format!("this host ({})", short(hostname))
    };
    let named_here = f
        .reporters
        .iter()
        .any(|r| !hostname.is_empty() && short(r) == short(hostname));
    match &f.device {
        Some(dev) if named_here && devices.contains(dev) => Ok(HereEnd {
            device: dev.clone(),
            port: f.port.unwrap_or(1),
            gid_index: f.gid_index,
            peer: f.peer,
            why: format!(
                "the log's host {} is this host, and it has {dev}",
                short(hostname)
            ),
        }),
        Some(dev) if named_here => Err(format!(
            "the log's host is this host ({}), but it has no device {dev}",
            short(hostname)
        )),
        _ => Err(format!(
            "none of the root line's GIDs or its peer's address is on {this_host}, and the log \
             names no host of its name: run triage on a node of the job, or pass --no-host"
        )),
    }
}

/// " (the log names DEV)" when the log's device name is not the one holding the GID here.
fn named_otherwise(logged: &Option<String>, here: &str) -> String {
    match logged {
        Some(d) if d != here => format!(" (the log names {d})"),
        _ => String::new(),
    }
}

/// The whole judgement of a log.
#[derive(Debug, Clone, PartialEq)]
pub struct Triage {
    pub findings: Vec<TriageFinding>,
    /// Error lines read (flushes included).
    pub error_lines: u64,
}

impl Triage {
    /// An RDMA error was found.
    pub fn failed(&self) -> bool {
        self.findings
            .iter()
            .any(|f| f.diagnostic.severity == Severity::Fail)
    }
}

/// Judge a digest. `names` are the inputs' names, for the seen lines.
pub fn judge(digest: &LogDigest, names: &[String]) -> Triage {
    let name = |file: usize| names.get(file).map_or("log", String::as_str).to_string();
    let mut index = Index::new(&digest.events);
    index.zero_local_gid = digest
        .zero_local_gid
        .map(|(file, line)| LineRef { file, line });
    // Roots grouped by what failed and toward whom (in the order of their first line).
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut by_key: HashMap<GroupKey, usize> = HashMap::new();
    for (i, e) in digest.events.iter().enumerate() {
        let at = *by_key.entry(group_key(e)).or_insert_with(|| {
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[at].push(i);
    }
    // Both ends of one QP pair are one event: union the groups of mates.
    let mut group_of = vec![0usize; digest.events.len()];
    for (g, members) in groups.iter().enumerate() {
        for &i in members {
            group_of[i] = g;
        }
    }
    let mut parent: Vec<usize> = (0..groups.len()).collect();
    fn find(parent: &mut [usize], mut g: usize) -> usize {
        while parent[g] != g {
            parent[g] = parent[parent[g]];
            g = parent[g];
        }
        g
    }
    for (i, e) in digest.events.iter().enumerate() {
        if let Some(m) = index.mate_of(e) {
            let (a, b) = (
                find(&mut parent, group_of[i]),
                find(&mut parent, group_of[m]),
            );
            if a != b {
                parent[a.max(b)] = a.min(b);
            }
        }
    }
    let mut merged: Vec<Vec<&LogEvent>> = vec![Vec::new(); groups.len()];
    for (g, members) in groups.iter().enumerate() {
        let to = find(&mut parent, g);
        merged[to].extend(members.iter().map(|&i| &digest.events[i]));
    }
    merged.retain(|g| !g.is_empty());
    let mut findings: Vec<TriageFinding> = merged
        .iter()
        .map(|g| finding_of(g, &index, &name))
        .collect();
    // Flushes: the cascade of a root of the same input and reporter (and device, when both
    // say it).
    let mut roots_of: HashMap<(usize, Option<String>), Vec<RootAt>> = HashMap::new();
    for (t, g) in merged.iter().enumerate() {
        for e in g {
            roots_of
                .entry((e.file, e.origin.reporter()))
                .or_default()
                .push((e.device.as_deref(), t));
        }
    }
    for f in &digest.flushes {
        let owner = roots_of
            .get(&(f.file, f.reporter.clone()))
            .and_then(|roots| {
                roots.iter().find(|(dev, _)| match (dev, &f.device) {
                    (Some(a), Some(b)) => a == b,
                    _ => true,
                })
            })
            .map(|(_, t)| *t);
        match owner {
            Some(t) => {
                let t = &mut findings[t];
                t.cascade_count += f.count;
                t.cascade.extend(f.lines.iter().map(|l| LineRef {
                    file: f.file,
                    line: *l,
                }));
            }
            None => findings.push(flush_only(f, &name)),
        }
    }
    for t in &mut findings {
        t.cascade.sort();
        t.cascade.truncate(8);
        if t.cascade_count > 0 && t.diagnostic.code != codes::FLUSHED {
            t.diagnostic.evidence.push(Seen::new(
                Source::Failure,
                format!(
                    "{} flushed completion(s) (IBV_WC_WR_FLUSH_ERR, 5) follow from it, first at \
                     {}: one event, not {}",
                    t.cascade_count,
                    place(&name, t.cascade[0]),
                    t.cascade_count + 1
                ),
            ));
        }
    }
    findings.extend(common_peers(&findings, &digest.events, &name));
    findings.sort_by_key(|t| (t.diagnostic.code == codes::LOG_COMMON_PEER, t.root));
    let flushed: u64 = digest.flushes.iter().map(|f| f.count).sum();
    Triage {
        findings,
        error_lines: digest.events.len() as u64 + digest.events_dropped + flushed,
    }
}

/// Lookups over all events, so that judging stays linear in the events kept.
struct Index<'a> {
    all: &'a [LogEvent],
    /// The first event whose local GID holds the address.
    by_local: HashMap<IpAddr, usize>,
    /// (QPN, remote QPN, status) to the first such event.
    by_qpn: HashMap<(u32, u32, u32), usize>,
    /// (local address, peer address, status) to the first such event.
    by_ends: HashMap<(IpAddr, IpAddr, u32), usize>,
    /// Where an end printed its own GID as `::` (a verbs example's address line).
    zero_local_gid: Option<LineRef>,
}

impl<'a> Index<'a> {
    fn new(all: &'a [LogEvent]) -> Index<'a> {
        let mut index = Index {
            all,
            by_local: HashMap::new(),
            by_qpn: HashMap::new(),
            by_ends: HashMap::new(),
            zero_local_gid: None,
        };
        for (i, e) in all.iter().enumerate() {
            if let Some(l) = local_ip(e) {
                index.by_local.entry(l).or_insert(i);
            }
            let Some(status) = e.status() else {
                continue;
            };
            if let (Some(q), Some(r)) = (e.qpn, e.remote_qpn) {
                index.by_qpn.entry((q, r, status)).or_insert(i);
            }
            if let (Some(l), Some(p)) = (local_ip(e), e.peer_ip()) {
                index.by_ends.entry((l, p, status)).or_insert(i);
            }
        }
        index
    }

    /// The other end of `e`'s QP pair, where the log holds its report of the same status.
    fn mate_of(&self, e: &LogEvent) -> Option<usize> {
        let status = e.status()?;
        let by_qpn = match (e.qpn, e.remote_qpn) {
            (Some(q), Some(r)) => self.by_qpn.get(&(r, q, status)).copied(),
            _ => None,
        };
        let by_ends = match (local_ip(e), e.peer_ip()) {
            (Some(l), Some(p)) => self.by_ends.get(&(p, l, status)).copied(),
            _ => None,
        };
        by_qpn
            .or(by_ends)
            .filter(|m| !std::ptr::eq(&self.all[*m], e))
    }
}

fn local_ip(e: &LogEvent) -> Option<IpAddr> {
    e.local_gid
        .filter(|g| !g.is_zero())
        .map(|g| g.ip().to_canonical())
}

/// A root's device and the index of its finding, by (input, reporter).
type RootAt<'a> = (Option<&'a str>, usize);

type GroupKey = (
    Code,
    Option<u32>,
    Option<String>,
    Option<IpAddr>,
    Option<String>,
);

fn place(name: &dyn Fn(usize) -> String, at: LineRef) -> String {
    format!("{}:{}", name(at.file), at.line)
}

/// What makes two roots one finding: the same failure toward the same peer.
fn group_key(
    e: &LogEvent,
) -> (
    Code,
    Option<u32>,
    Option<String>,
    Option<IpAddr>,
    Option<String>,
) {
    match &e.failure {
        LogFailure::Completion { status, .. } => {
            (code_of(e), Some(*status), None, e.peer_ip(), None)
        }
        LogFailure::Transition { to, errno, .. } => (
            codes::LOG_QP_TRANSITION,
            errno.map(|e| e as u32),
            Some(to.clone()),
            e.peer_ip(),
            e.device.clone(),
        ),
        LogFailure::GidFamily => (codes::LOG_GID_FAMILY, None, None, None, e.device.clone()),
    }
}

fn code_of(e: &LogEvent) -> Code {
    match e.failure {
        LogFailure::Completion { status, .. } => crate::diagnose::datapath::status_code(status),
        LogFailure::Transition { .. } => codes::LOG_QP_TRANSITION,
        LogFailure::GidFamily => codes::LOG_GID_FAMILY,
    }
}

/// The seen line of one event: where, who, and what it says.
fn seen_of(e: &LogEvent, name: &dyn Fn(usize) -> String) -> Seen {
    let mut parts = vec![format!("{}:{}:", name(e.file), e.line)];
    if let Some(r) = e.origin.reporter() {
        parts.push(r);
    }
    parts.push(e.library.name().to_string());
    match &e.failure {
        LogFailure::Completion {
            status,
            opcode,
            vendor_err,
            syndrome,
            ..
        } => {
            parts.push(status_words(*status));
            if let Some(o) = opcode {
                parts.push(format!("opcode {o}"));
            }
            if let Some(v) = vendor_err {
                parts.push(format!("vendor err 0x{v:x}"));
            }
            if let Some(s) = syndrome {
                parts.push(format!("syndrome 0x{s:x}"));
            }
        }
        LogFailure::Transition { errno, from, to } => {
            if to == UNNAMED_STATE {
                parts.push("modify QP (the line names no state)".to_string());
            } else {
                let from = from.as_deref().unwrap_or("?");
                parts.push(format!("modify QP {from} -> {to}"));
            }
            match errno {
                Some(n) => parts.push(format!("{} ({n}, {})", errno_name(*n), strerror(*n))),
                None => parts.push("(no errno in the line)".into()),
            }
        }
        LogFailure::GidFamily => {
            parts.push("the two ends' GIDs are of different families".to_string())
        }
    }
    if let Some(d) = &e.device {
        parts.push(match e.port {
            Some(p) => format!("on {d}:{p}"),
            None => format!("on {d}"),
        });
    }
    if let Some(i) = e.gid_index {
        parts.push(format!("GID index {i}"));
    }
    if let Some(g) = e.local_gid {
        parts.push(format!(
            "local GID {} ({})",
            g.ipv6(),
            g.ip().to_canonical()
        ));
    }
    if let Some(q) = e.qpn {
        parts.push(format!("QPN 0x{q:x}"));
    }
    if let Some(p) = e.peer_ip() {
        parts.push(format!("peer {p}"));
    }
    let mut s = Seen::new(Source::Failure, parts.join(" "));
    s.value = None;
    s
}

/// The first known value among the events.
fn first<T: Clone>(events: &[&LogEvent], f: impl Fn(&LogEvent) -> Option<T>) -> Option<T> {
    events.iter().find_map(|e| f(e))
}

fn finding_of(group: &[&LogEvent], index: &Index, name: &dyn Fn(usize) -> String) -> TriageFinding {
    let root = group[0];
    let code = code_of(root);
    let peer = root.peer_ip();
    let device = first(group, |e| e.device.clone());
    let port = first(group, |e| e.port);
    let gid_index = first(group, |e| e.gid_index);
    let tclass = first(group, |e| e.traffic_class);
    let reporters: Vec<String> = group
        .iter()
        .filter_map(|e| e.origin.reporter())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let words = Words::of(root, group, index);
    let mut d = Diagnostic::explanation(code.clone(), words.why, words.fix);
    d.subject = Some(match (&device, port, gid_index) {
        (Some(dev), Some(p), Some(i)) => Subject::GidIndex(dev.clone(), p, i),
        (Some(dev), Some(p), None) => Subject::Port(dev.clone(), p),
        (Some(dev), None, _) => Subject::Device(dev.clone()),
        _ => match peer {
            Some(p) => Subject::Peer(p.to_string()),
            None => Subject::Other(root.library.name().to_string()),
        },
    });
    for e in group.iter().take(8) {
        d.evidence.push(seen_of(e, name));
    }
    if group.len() > 8 {
        d.evidence.push(Seen::new(
            Source::Failure,
            format!("and {} more line(s) like these", group.len() - 8),
        ));
    }
    if let Some(v) = first(group, |e| match e.failure {
        LogFailure::Completion { vendor_err, .. } => vendor_err.filter(|v| *v != 0),
        _ => None,
    }) {
        d.evidence.push(Seen::new(
            Source::Failure,
            format!(
                "vendor err 0x{v:x}: the HCA vendor's detail of the error; its meaning is not \
                 documented publicly, so it decides nothing here"
            ),
        ));
    }
    // The next commands of each reporter (at most four), with its own device and index; the
    // ping-pong pair once, from the first.
    let mut next: Vec<NextStep> = Vec::new();
    let mut done: Vec<String> = Vec::new();
    for e in group {
        let who = e
            .origin
            .reporter()
            .unwrap_or_else(|| "the reporting host".to_string());
        if done.contains(&who) || done.len() >= 4 {
            continue;
        }
        let steps = if done.is_empty() {
            next_steps(
                &who,
                e.device.as_deref().or(device.as_deref()),
                e.port.or(port),
                e.gid_index.or(gid_index),
                e.traffic_class.or(tclass),
                peer,
                e,
                index,
                &code,
            )
        } else {
            let mut own = next_steps(
                &who,
                e.device.as_deref(),
                e.port,
                e.gid_index,
                e.traffic_class,
                e.peer_ip().or(peer),
                e,
                index,
                &code,
            );
            own.truncate(1);
            own
        };
        next.extend(steps);
        done.push(who);
    }
    TriageFinding {
        diagnostic: d,
        root: LineRef {
            file: root.file,
            line: root.line,
        },
        lines: group
            .iter()
            .map(|e| LineRef {
                file: e.file,
                line: e.line,
            })
            .collect(),
        cascade_count: 0,
        cascade: Vec::new(),
        reporters,
        peer,
        device,
        port,
        gid_index,
        status: root.status(),
        ruled_out: words.ruled_out,
        unknown: words.unknown,
        local_gid: root.local_gid,
        remote_gid: root.remote_gid,
        host: HostLook::NotAsked,
        next,
    }
}

/// The wording of one finding: why, what the log rules out, what it leaves open, the fix.
struct Words {
    why: String,
    ruled_out: Vec<String>,
    unknown: Vec<String>,
    fix: String,
}

impl Words {
    fn of(root: &LogEvent, group: &[&LogEvent], index: &Index) -> Words {
        match &root.failure {
            LogFailure::Completion { status, .. } => completion_words(*status, root, group, index),
            LogFailure::Transition { errno, to, .. } => {
                transition_words(*errno, to, group, index.zero_local_gid)
            }
            LogFailure::GidFamily => gid_family_words(root),
        }
    }
}

const FIX_PATH: &str = "run the next commands: `check` toward the peer on the reporting host, \
                        then a ping-pong between the two hosts with the job's GID index";

fn completion_words(status: u32, root: &LogEvent, group: &[&LogEvent], index: &Index) -> Words {
    let peer = root
        .peer_ip()
        .map_or("the peer".to_string(), |p| format!("the peer {p}"));
    let name = status_words(status);
    let no_local = "a local buffer, key or QP fault (each has its own status)".to_string();
    let no_path = format!("the network path: {peer} received the request and answered");
    match status {
        errno::WC_RETRY_EXC_ERR => {
            let mut ruled_out = vec![
                "the QP setup: the QP reached RTS and sent".to_string(),
                no_local,
            ];
            let mut unknown = vec![
                "which hop dropped the packets, or whether none did".to_string(),
                "whether both ends use the same GID type, subnet and MTU".to_string(),
            ];
            let pair = both_ends(group, index);
            let why = match &pair {
                Some((a, b)) => {
                    ruled_out.push(format!(
                        "a dead peer: both ends logged this failure ({a} and {b}), so both \
                         processes were alive"
                    ));
                    format!(
                        "{name}: both ends of one QP pair ({a} and {b}) went unacknowledged: \
                         the path between them lost the packets, or the two ends' MTU or GID \
                         do not fit; the log does not decide which"
                    )
                }
                None => {
                    unknown.insert(0, format!("whether {peer}'s process was alive"));
                    format!(
                        "{name}: {peer}'s HCA did not acknowledge: the peer is down, the path \
                         between them lost the packets, or the two ends' MTU or GID do not \
                         fit; the log does not decide which"
                    )
                }
            };
            Words {
                why,
                ruled_out,
                unknown,
                fix: FIX_PATH.to_string(),
            }
        }
        errno::WC_RNR_RETRY_EXC_ERR => Words {
            why: format!(
                "{name}: {peer} had no receive posted when a SEND arrived, more often than \
                 rnr_retry allows: its process posts receives too slowly, or stopped"
            ),
            ruled_out: vec![format!(
                "packet loss: {peer}'s HCA answered (with receiver-not-ready NAKs)"
            )],
            unknown: vec![format!("whether {peer}'s process was stuck or only slow")],
            fix: "look at the peer process (stack, CPU, a pause); the library's receive queue \
                  depth and rnr_retry (7 retries forever)"
                .into(),
        },
        errno::WC_REM_ACCESS_ERR | errno::WC_REM_INV_REQ_ERR | errno::WC_REM_OP_ERR => Words {
            why: match status {
                errno::WC_REM_ACCESS_ERR => format!(
                    "{name}: {peer} refused an RDMA READ or WRITE: a wrong rkey or address, or \
                     memory registered without remote access"
                ),
                errno::WC_REM_INV_REQ_ERR => format!(
                    "{name}: {peer} rejected the request: the operation is not enabled on its \
                     QP, or the message exceeds its limits"
                ),
                _ => format!("{name}: {peer}'s QP could not complete the request"),
            },
            ruled_out: vec![no_path],
            unknown: vec!["which buffer or key: the log line does not carry them".to_string()],
            fix: "a library or application bug or a mismatch of versions between the ends: \
                  report it with both ends' logs"
                .into(),
        },
        errno::WC_LOC_PROT_ERR | errno::WC_LOC_LEN_ERR | errno::WC_LOC_QP_OP_ERR => Words {
            why: format!(
                "{name}: this end could not execute the work request (its own buffer, length \
                 or QP)"
            ),
            ruled_out: vec![format!("{peer} and the path: the error is local")],
            unknown: vec!["which buffer: the log line does not carry it".into()],
            fix: "a local buffer or registration problem of the library; with \
                  IBV_WC_LOC_LEN_ERR, both ends' message sizes and MTU"
                .into(),
        },
        _ => Words {
            why: format!("{name}: a status rdmactl has no rule for in a log"),
            ruled_out: Vec::new(),
            unknown: vec!["the cause: look the status up in the HCA vendor's notes".into()],
            fix: FIX_PATH.to_string(),
        },
    }
}

/// perftest's handshake found the two ends' GIDs of different families.
fn gid_family_words(root: &LogEvent) -> Words {
    let index = root
        .gid_index
        .map_or("its GID index".to_string(), |i| format!("GID index {i}"));
    Words {
        why: format!(
            "the two ends' GIDs are of different address families: one is IPv4-mapped \
             (::ffff:a.b.c.d, RoCE v2 over IPv4), the other is not (IPv6, link-local, or the \
             empty GID :: of an unused index), so \
             {} refused to connect; a RoCE v2 packet carries one IP header, so both ends need \
             GIDs of one family (this end used {index})",
            root.library.name()
        ),
        ruled_out: vec![
            "the network path and the peer's process: the refusal comes from the exchange \
             of addresses, before any RDMA packet"
                .into(),
        ],
        unknown: vec![
            "which end's GID is the odd one, and whether it is an empty slot (::): perftest \
             prints neither GID before refusing"
                .into(),
        ],
        fix: "give both ends GID indices of one family (perftest's `-x`): `rdmactl gids` on \
              each host lists each index's family; `rdmactl check -d DEV -g IDX --peer PEER` \
              says whether an index reaches the peer and names one that does"
            .into(),
    }
}

/// Two reports whose ends face each other (each one's QPN is the other's remote QPN, or
/// each one's peer is the other's local address), in this group or the whole log.
fn both_ends(group: &[&LogEvent], index: &Index) -> Option<(String, String)> {
    let who = |e: &LogEvent| {
        e.origin
            .reporter()
            .unwrap_or_else(|| format!("line {}", e.line))
    };
    group
        .iter()
        .find_map(|a| index.mate_of(a).map(|m| (who(a), who(&index.all[m]))))
}

fn transition_words(
    errno: Option<i32>,
    to: &str,
    group: &[&LogEvent],
    zero_local_gid: Option<LineRef>,
) -> Words {
    let named_zero = group
        .iter()
        .any(|e| e.local_gid.is_some_and(|g| g.is_zero()));
    let empty_slot = named_zero || (to == "RTR" && zero_local_gid.is_some());
    let index = group
        .iter()
        .find_map(|e| e.gid_index)
        .map_or("the GID index".to_string(), |i| format!("GID index {i}"));
    let err = errno.map_or("no errno in the line".to_string(), |n| {
        format!("{} ({n}, {})", errno_name(n), strerror(n))
    });
    let fix_gid = "`rdmactl gids` on that host lists the indices; `rdmactl check ... --peer \
                   PEER` says whether an index routes to the peer and names one that does";
    let rtr = to == "RTR";
    let step = if to == UNNAMED_STATE {
        "modify QP (to a state the line does not name)".to_string()
    } else {
        format!("modify QP to {to}")
    };
    // The driver named the attribute it refused: that decides it.
    if let Some(detail) = group.iter().find_map(|e| e.detail) {
        let (why, fix) = match detail {
            RefusedAttr::SgidIndexOutOfRange => (
                format!(
                    "{step} failed with {err}: the driver says {index} is beyond the port's \
                     GID table (invalid sgid index)"
                ),
                format!("set the job's GID index to one in the table; {fix_gid}"),
            ),
            RefusedAttr::NotRoceV2(n) => (
                format!(
                    "{step} failed with {err}: the driver says {index} names a GID of network \
                     type {n} ({}), not RoCE v2; Soft-RoCE (rdma_rxe) speaks RoCE v2 only",
                    match n {
                        0 => "InfiniBand",
                        1 => "RoCE v1",
                        _ => "not a RoCE v2 type",
                    }
                ),
                "use a RoCE v2 GID index: `rdmactl gids` on that host shows each index's \
                 type, and `-g auto` picks a RoCE v2 one"
                    .to_string(),
            ),
        };
        return Words {
            why,
            ruled_out: vec![
                "the network path and the peer: the QP was refused before it sent".to_string(),
            ],
            unknown: Vec::new(),
            fix,
        };
    }
    if rtr && (empty_slot || errno == Some(libc::ENODATA)) {
        return Words {
            why: format!(
                "modify QP to RTR failed with {err}: {index} is an empty slot of the port's GID \
                 table{}",
                match (named_zero, zero_local_gid) {
                    (true, _) => " (the log shows the local GID as ::)".to_string(),
                    (false, Some(at)) => format!(
                        " at one end: line {} shows an end's own GID as ::, which it sends its \
                         peer",
                        at.line
                    ),
                    (false, None) => String::new(),
                }
            ),
            ruled_out: vec![if named_zero {
                "the peer and the network: the QP never left this host".into()
            } else {
                "the network path: the transition is set up before any packet is sent".into()
            }],
            unknown: vec![
                "whether the index was ever valid on this host (GID tables change when a \
                 netdev's address does)"
                    .into(),
            ],
            fix: format!("set the job's GID index to one that holds a GID; {fix_gid}"),
        };
    }
    let (why, ruled_out, unknown) = match errno {
        Some(libc::EINVAL) if rtr => (
            format!(
                "modify QP to RTR failed with {err}: the device refused an attribute: {index} \
                 empty or out of range, a path MTU above the port's, or a bad destination"
            ),
            vec!["the peer's state: RTR is set up locally".to_string()],
            vec!["which attribute: the log does not decide it".to_string()],
        ),
        Some(libc::ETIMEDOUT) if rtr => (
            format!(
                "modify QP to RTR failed with {err}: on RoCE the kernel found no MAC for the \
                 remote GID (no ARP answer for the peer over the GID's netdev)"
            ),
            vec!["the GID index itself: it holds a GID (an empty one fails at once)".into()],
            vec![
                "whether the peer is down, on another subnet or VLAN, or its ARP answers are \
                 filtered"
                    .into(),
            ],
        ),
        Some(libc::ENETUNREACH) | Some(libc::EHOSTUNREACH) => (
            format!(
                "{step} failed with {err}: no route from the GID's netdev toward \
                 the peer"
            ),
            vec!["the peer's state: the QP never sent".into()],
            vec!["whether another GID index (another netdev or subnet) routes there".into()],
        ),
        _ => (
            format!("{step} failed with {err}"),
            Vec::new(),
            vec!["the cause: the errno alone does not decide it".into()],
        ),
    };
    Words {
        why,
        ruled_out,
        unknown,
        fix: format!("check the job's device, port and GID index; {fix_gid}"),
    }
}

/// The next commands, with the job's own parameters.
#[allow(clippy::too_many_arguments)]
fn next_steps(
    here: &str,
    device: Option<&str>,
    port: Option<u32>,
    gid_index: Option<u32>,
    tclass: Option<u32>,
    peer: Option<IpAddr>,
    root: &LogEvent,
    index: &Index,
    code: &Code,
) -> Vec<NextStep> {
    let mut check = String::from("rdmactl check");
    if let Some(d) = device {
        check.push_str(&format!(" -d {d}"));
    }
    if let Some(p) = port {
        check.push_str(&format!(" -i {p}"));
    }
    if let Some(i) = gid_index {
        check.push_str(&format!(" -g {i}"));
    }
    if let Some(p) = peer {
        check.push_str(&format!(" --peer {p}"));
    }
    let mut steps = vec![NextStep {
        on: here.to_string(),
        command: check,
    }];
    if *code == codes::LOG_QP_TRANSITION || *code == codes::LOG_GID_FAMILY {
        steps.push(NextStep {
            on: here.to_string(),
            command: format!(
                "rdmactl gids{}",
                device.map(|d| format!(" -d {d}")).unwrap_or_default()
            ),
        });
    }
    let Some(peer) = peer else {
        return steps;
    };
    // The peer's own device and GID index, where one of its lines names its address or is
    // the other end of this QP.
    let theirs = index
        .by_local
        .get(&peer)
        .or(index.mate_of(root).as_ref())
        .map(|i| &index.all[*i]);
    // Traffic class 0 is the default: no flag for it.
    let tc = tclass
        .filter(|t| *t != 0)
        .map(|t| format!(" --tclass {t}"))
        .unwrap_or_default();
    let server = match theirs {
        Some(e) => format!(
            "rdmactl pingpong{}{}{}{tc}",
            e.device
                .as_ref()
                .map(|d| format!(" -d {d}"))
                .unwrap_or_default(),
            e.port.map(|p| format!(" -i {p}")).unwrap_or_default(),
            e.gid_index
                .map_or(" -g auto".to_string(), |i| format!(" -g {i}")),
        ),
        None => format!("rdmactl pingpong -g auto{tc}"),
    };
    steps.push(NextStep {
        on: match theirs.and_then(|e| e.origin.reporter()) {
            Some(who) => format!("{who} ({peer})"),
            None => peer.to_string(),
        },
        command: server,
    });
    steps.push(NextStep {
        on: here.to_string(),
        command: format!(
            "rdmactl pingpong{}{}{}{tc} {peer}",
            device.map(|d| format!(" -d {d}")).unwrap_or_default(),
            port.map(|p| format!(" -i {p}")).unwrap_or_default(),
            gid_index.map_or(" -g auto".to_string(), |i| format!(" -g {i}")),
        ),
    });
    steps
}

/// Flushes with no other error of their reporter in the log.
fn flush_only(f: &FlushGroup, name: &dyn Fn(usize) -> String) -> TriageFinding {
    let who = f.reporter.clone().unwrap_or_else(|| "this log".to_string());
    let dev = f
        .device
        .as_ref()
        .map(|d| format!(" on {d}"))
        .unwrap_or_default();
    let mut d = Diagnostic::explanation(
        // IBV_WC_WR_FLUSH_ERR's code, from the one status table.
        crate::diagnose::datapath::status_code(crate::model::errno::WC_WR_FLUSH_ERR),
        format!(
            "{} flushed completion(s) ({}) from {who}{dev}, and no error before them in this \
             log: the QP was already in the error state; what put it there is not in this log",
            f.count,
            wc_status_name(errno::WC_WR_FLUSH_ERR)
        ),
        "triage the other ranks' logs and the kernel log of the same time with this one",
    );
    d.subject = Some(match &f.device {
        Some(dv) => Subject::Device(dv.clone()),
        None => Subject::Other(f.library.name().to_string()),
    });
    let lines: Vec<LineRef> = f
        .lines
        .iter()
        .map(|l| LineRef {
            file: f.file,
            line: *l,
        })
        .collect();
    d.evidence.push(Seen::new(
        Source::Failure,
        format!(
            "{} flushed completion(s), first at {}",
            f.count,
            place(name, lines[0])
        ),
    ));
    TriageFinding {
        diagnostic: d,
        root: lines[0],
        lines: lines.clone(),
        cascade_count: f.count,
        cascade: lines,
        reporters: f.reporter.iter().cloned().collect(),
        peer: None,
        device: f.device.clone(),
        port: None,
        gid_index: None,
        status: Some(errno::WC_WR_FLUSH_ERR),
        ruled_out: Vec::new(),
        unknown: vec!["the error that put the QP in the error state".into()],
        next: Vec::new(),
        local_gid: None,
        remote_gid: None,
        host: HostLook::NotAsked,
    }
}

/// Two or more reporters toward one peer: that peer first.
fn common_peers(
    findings: &[TriageFinding],
    events: &[LogEvent],
    name: &dyn Fn(usize) -> String,
) -> Vec<TriageFinding> {
    // The first line of each reporter toward each peer, in one pass.
    let mut toward: BTreeMap<IpAddr, Vec<(String, &LogEvent)>> = BTreeMap::new();
    for e in events {
        let (Some(peer), Some(who)) = (e.peer_ip(), e.origin.reporter()) else {
            continue;
        };
        let firsts = toward.entry(peer).or_default();
        if !firsts.iter().any(|(w, _)| *w == who) {
            firsts.push((who, e));
        }
    }
    let mut out = Vec::new();
    for (peer, firsts) in toward {
        if firsts.len() < 2 {
            continue;
        }
        let list: Vec<String> = firsts.iter().map(|(w, _)| w.clone()).collect();
        let mut d = Diagnostic::finding(
            Severity::Warn,
            codes::LOG_COMMON_PEER,
            format!(
                "{} reporters ({}) failed toward one peer, {peer}: look at {peer} (its host, \
                 port and link) before each reporter",
                list.len(),
                list.join(", ")
            ),
        )
        .about(Subject::Peer(peer.to_string()))
        .fix(format!(
            "on {peer}: `rdmactl doctor`, and `rdmactl check --peer` toward one of the \
             reporters"
        ));
        let lines: Vec<LineRef> = firsts
            .iter()
            .map(|(_, e)| LineRef {
                file: e.file,
                line: e.line,
            })
            .collect();
        for ((who, e), at) in firsts.iter().zip(&lines) {
            let code = findings
                .iter()
                .find(|f| f.lines.contains(at))
                .map_or_else(|| code_of(e), |f| f.diagnostic.code.clone());
            d.evidence.push(Seen::new(
                Source::Failure,
                format!("{}: {who} ({code})", place(name, *at)),
            ));
        }
        out.push(TriageFinding {
            diagnostic: d,
            root: lines
                .iter()
                .copied()
                .min()
                .unwrap_or(LineRef { file: 0, line: 0 }),
            lines,
            cascade_count: 0,
            cascade: Vec::new(),
            reporters: list,
            peer: Some(peer),
            device: None,
            port: None,
            gid_index: None,
            status: None,
            ruled_out: Vec::new(),
            unknown: Vec::new(),
            next: vec![NextStep {
                on: peer.to_string(),
                command: "rdmactl doctor".into(),
            }],
            local_gid: None,
            // The peer every reporter names: its RoCE v2 GID, so that a host holding it
            // looks at itself as that peer.
            remote_gid: Some(Gid::from_ip(peer)),
            host: HostLook::NotAsked,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::joblog::{LogDigest, LogParser};

    fn digest(lines: &[&str]) -> LogDigest {
        let mut p = LogParser::default();
        let mut d = LogDigest::default();
        for (i, l) in lines.iter().enumerate() {
            let (kind, done) = p.feed(i as u64 + 1, l);
            d.count(&kind);
            if let Some(e) = done {
                d.add(e);
            }
        }
        if let Some(e) = p.finish() {
            d.add(e);
        }
        d
    }

    fn judged(lines: &[&str]) -> Triage {
        judge(&digest(lines), &["job.log".to_string()])
    }

    // Lines built from NCCL's format strings (src/transport/net_ib.cc v2.19, its WARN
    // header in src/debug.cc), with our own values.
    const RETRY: &str = "node1:11:12 [0] NCCL WARN NET/IB : Got completion from peer \
                         10.0.3.7<41322> with status=12 opcode=0 len=0 vendor err 129 (Recv) \
                         localGid ::ffff:10.0.3.6 remoteGids::ffff:10.0.3.7";
    const FLUSH: &str = "node1:11:12 [0] NCCL WARN NET/IB : Got completion from peer \
                         10.0.3.7<41322> with status=5 opcode=0 len=0 vendor err 244 (Recv) \
                         localGid ::ffff:10.0.3.6 remoteGids::ffff:10.0.3.7";

    /// The end a host is: by GID first, by host name and device only together; a device
    /// name alone (every node has an mlx5_0) never makes this host an end.
    #[test]
    fn this_host_is_an_end_by_gid_or_by_name_and_device() {
        let t = judged(&[RETRY]);
        let f = &t.findings[0];
        let gid = |ip: &str| Gid::from_ip(ip.parse().unwrap());
        let held = |ip: &str, index| HostGid {
            device: "mlx5_1".into(),
            port: 1,
            index,
            gid: gid(ip),
        };
        let here = end_here(f, &[held("10.0.3.6", 3)], "other", &[]).unwrap();
        assert_eq!((here.device.as_str(), here.gid_index), ("mlx5_1", Some(3)));
        assert_eq!(here.peer, Some("10.0.3.7".parse().unwrap()));
        let peer = end_here(f, &[held("10.0.3.7", 5)], "other", &[]).unwrap();
        assert!(peer.why.contains("this host is the peer"), "{}", peer.why);
        assert_eq!(peer.peer, Some("10.0.3.6".parse().unwrap()));
        // NCCL's line names its host (node1); without a device name it is not enough.
        let no_device = end_here(f, &[], "node1.cluster", &["mlx5_0".into()]);
        assert!(no_device.is_err(), "{no_device:?}");
        let mut named = f.clone();
        named.device = Some("mlx5_0".into());
        let by_name = end_here(&named, &[], "node1.cluster", &["mlx5_0".into()]).unwrap();
        assert!(
            by_name.why.contains("the log's host node1 is this host"),
            "{}",
            by_name.why
        );
        let elsewhere = end_here(&named, &[], "node7", &["mlx5_0".into()]).unwrap_err();
        assert!(
            elsewhere.contains(
                "none of the root line's GIDs or its peer's address is on this host (node7)"
            ),
            "{elsewhere}"
        );
        // The peer's address alone (rdmactl's and perftest's lines) ties the far end here.
        let mut by_address = named.clone();
        by_address.remote_gid = None;
        let far = end_here(&by_address, &[held("10.0.3.7", 1)], "(none)", &[]).unwrap();
        assert!(
            far.why.contains(
                "peer ::ffff:10.0.3.7 is mlx5_1/1 GID index 1 here: this host is the peer"
            ),
            "{}",
            far.why
        );
    }

    #[test]
    fn a_flush_storm_after_retry_exceeded_is_one_event() {
        let t = judged(&["start", RETRY, FLUSH, FLUSH, FLUSH, "end"]);
        assert_eq!(t.findings.len(), 1, "{:#?}", t.findings);
        let f = &t.findings[0];
        assert_eq!(f.diagnostic.code, codes::RETRY_EXCEEDED);
        assert_eq!(f.root.line, 2);
        assert_eq!(f.cascade_count, 3);
        assert_eq!(f.peer, Some("10.0.3.7".parse().unwrap()));
        assert!(
            f.diagnostic.message.contains("not decide"),
            "{}",
            f.diagnostic.message
        );
        assert!(f.unknown.iter().any(|u| u.contains("alive")));
        assert!(t.failed());
        assert_eq!(t.error_lines, 4);
    }

    #[test]
    fn flushes_alone_say_the_root_is_elsewhere() {
        let t = judged(&[FLUSH, FLUSH]);
        assert_eq!(t.findings.len(), 1);
        assert_eq!(t.findings[0].diagnostic.code, codes::FLUSHED);
        assert!(t.findings[0].diagnostic.message.contains("not in this log"));
    }

    #[test]
    fn many_reporters_toward_one_peer_point_at_it() {
        let other = RETRY
            .replace("node1:11", "node2:21")
            .replace("10.0.3.6", "10.0.3.8");
        let t = judged(&[RETRY, &other]);
        let common = t
            .findings
            .iter()
            .find(|f| f.diagnostic.code == codes::LOG_COMMON_PEER)
            .expect("common peer");
        assert_eq!(common.reporters, ["node1", "node2"]);
        assert!(common.diagnostic.message.contains("10.0.3.7"));
        // One retry-exceeded finding for both reports.
        let retry: Vec<_> = t
            .findings
            .iter()
            .filter(|f| f.diagnostic.code == codes::RETRY_EXCEEDED)
            .collect();
        assert_eq!(retry.len(), 1);
        assert_eq!(retry[0].lines.len(), 2);
    }

    #[test]
    fn both_ends_reporting_rules_out_a_dead_peer() {
        let back = "node2:21:22 [0] NCCL WARN NET/IB : Got completion from peer \
                    10.0.3.6<5000> with status=12 opcode=0 len=0 vendor err 129 (Send) \
                    localGid ::ffff:10.0.3.7 remoteGids::ffff:10.0.3.6";
        let t = judged(&[RETRY, back]);
        let f = t
            .findings
            .iter()
            .find(|f| f.diagnostic.code == codes::RETRY_EXCEEDED)
            .unwrap();
        assert!(
            f.ruled_out.iter().any(|r| r.contains("dead peer")),
            "{:?}",
            f.ruled_out
        );
        assert!(!f.unknown.iter().any(|u| u.contains("alive")));
    }

    #[test]
    fn an_empty_gid_slot_is_decided_and_the_next_commands_carry_the_index() {
        // src/misc/ibvwrap.cc 2.21+.
        let t = judged(&[
            "node4:1:2 [0] NCCL WARN Call to ibv_modify_qp failed with 22 \
                          Invalid argument, on dev mlx5_2:1, curr state INIT, next state \
                          RTR, local GID index 3, local GID ::, remote GID ::ffff:10.0.3.7",
        ]);
        let f = &t.findings[0];
        assert_eq!(f.diagnostic.code, codes::LOG_QP_TRANSITION);
        assert!(f
            .diagnostic
            .message
            .contains("GID index 3 is an empty slot"));
        assert_eq!(
            f.next[0].command,
            "rdmactl check -d mlx5_2 -i 1 -g 3 --peer 10.0.3.7"
        );
        assert_eq!(f.next[0].on, "node4");
        assert!(f
            .next
            .iter()
            .any(|n| n.command == "rdmactl pingpong -d mlx5_2 -i 1 -g 3 10.0.3.7"));
    }

    #[test]
    fn thousands_of_reporters_and_peers_stay_linear() {
        // 10 000 roots from 2 000 hosts toward 2 500 peers, each with a flush: judged at
        // once (every lookup is indexed), not in a time quadratic in the events.
        let lines: Vec<String> = (0..10_000u32)
            .flat_map(|i| {
                let line = RETRY
                    .replace("node1:11", &format!("host{}:{}", i % 2000, i))
                    .replace("10.0.3.7", &format!("10.{}.{}.7", i % 2500 / 250, i % 250));
                let flush = line.replace("status=12", "status=5");
                [line, flush]
            })
            .collect();
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let started = std::time::Instant::now();
        let t = judged(&refs);
        assert!(started.elapsed().as_secs() < 60, "{:?}", started.elapsed());
        assert!(t.failed());
        let retry = t
            .findings
            .iter()
            .filter(|f| f.diagnostic.code == codes::RETRY_EXCEEDED)
            .count();
        assert_eq!(retry, 2500, "one per peer");
    }

    #[test]
    fn no_error_no_finding() {
        let t = judged(&["hello", "NCCL INFO ok"]);
        assert!(t.findings.is_empty());
        assert!(!t.failed());
    }
}
