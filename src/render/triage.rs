//! `rdmactl triage`: the findings of a job log (root line, why, seen, ruled out, unknown,
//! fix, the next commands) as text, and the report with every decoded event as JSON.

use serde::Serialize;

use crate::diagnose::triage::{HostLook, LineRef, Triage, TriageFinding};

use crate::model::diagnostic::{json, Severity};
use crate::model::errno::{errno_name, wc_status_name};
use crate::model::joblog::{FlushGroup, LogDigest, LogEvent, LogFailure, Progress};
use crate::output::Style;
use crate::render::diagnostic::{self as render_diagnostic, Evidence};

/// Events listed in `-j` (the rest are counted in `events_dropped`).
const JSON_EVENTS: usize = 1000;

/// The text report.
pub fn text(t: &Triage, d: &LogDigest, names: &[String], style: Style) -> String {
    let mut out = String::new();
    if t.findings.is_empty() {
        out.push_str("no RDMA error in the log\n");
    }
    for f in &t.findings {
        out.push_str(&finding(f, names));
        out.push_str(&host(&f.host, style));
    }
    out.push_str(&summary(t, d, names));
    out.push_str(&not_here(t));
    out
}

/// The findings this host is no end of, said once: the distinct reasons (a log copied from
/// another cluster gives the same one for every finding).
fn not_here(t: &Triage) -> String {
    let mut why: Vec<&str> = Vec::new();
    let mut count = 0;
    for f in &t.findings {
        if let HostLook::Skipped(w) = &f.host {
            count += 1;
            if !why.contains(&w.as_str()) {
                why.push(w);
            }
        }
    }
    if count == 0 {
        return String::new();
    }
    format!(
        "this host added no evidence to {count} finding(s): {}\n",
        why.join("; ")
    )
}

fn at(names: &[String], r: LineRef) -> String {
    format!(
        "{}:{}",
        names.get(r.file).map_or("log", String::as_str),
        r.line
    )
}

fn finding(f: &TriageFinding, names: &[String]) -> String {
    let d = &f.diagnostic;
    let label = match d.severity {
        Severity::Fail => "FAIL",
        other => other.label(),
    };
    let mut head = format!("{label} {}", d.code);
    let subject = d.label();
    if !subject.is_empty() {
        head.push_str(&format!("  {subject}"));
    }
    head.push_str(&format!("  root {}", at(names, f.root)));
    if !f.reporters.is_empty() {
        head.push_str(&format!(" ({})", f.reporters.join(", ")));
    }
    let mut out = format!("{head}\n  why:  {}\n", d.message);
    for e in &d.evidence {
        out.push_str(&format!("  seen: {e}\n"));
    }
    for r in &f.ruled_out {
        out.push_str(&format!("  ruled out: {r}\n"));
    }
    for u in &f.unknown {
        out.push_str(&format!("  unknown: {u}\n"));
    }
    if let Some(fix) = &d.fix {
        out.push_str(&format!("  fix:  {fix}\n"));
    }
    for n in &f.next {
        out.push_str(&format!("  next: on {}: {}\n", n.on, n.command));
    }
    out
}

/// A long read's progress line: `triage: big.log: 1.2 GiB of 4.0 GiB (30%), 14.2 M lines
/// read, 31 understood`.
pub fn progress(p: &Progress) -> String {
    let gib = |b: u64| b as f64 / f64::from(1u32 << 30);
    let of = match p.size.filter(|s| *s > 0) {
        Some(size) => format!(
            " of {:.1} GiB ({:.0}%)",
            gib(size),
            100.0 * p.bytes.min(size) as f64 / size as f64
        ),
        None => String::new(),
    };
    format!(
        "triage: {}: {:.1} GiB{of}, {:.1} M lines read, {} understood",
        p.name,
        gib(p.bytes),
        p.lines as f64 / 1e6,
        p.understood
    )
}

/// What this host added: `check`'s lines under the end it is, or why it added nothing.
fn host(look: &HostLook, style: Style) -> String {
    match look {
        // Said once for the whole log, under the summary (`not_here`).
        HostLook::NotAsked | HostLook::Skipped(_) => String::new(),
        HostLook::Here(end, found) => {
            let mut what = format!("{}/{}", end.device, end.port);
            if let Some(i) = end.gid_index {
                what.push_str(&format!(" GID index {i}"));
            }
            if let Some(p) = end.peer {
                what.push_str(&format!(" toward {p}"));
            }
            format!(
                "  here: {}; check {what}:\n{}",
                end.why,
                render_diagnostic::lines_at(found, style, Evidence::Problems, "    ")
            )
        }
    }
}

fn summary(t: &Triage, d: &LogDigest, names: &[String]) -> String {
    let mut s = format!(
        "read {} line(s) of {}: {} RDMA error line(s), {} finding(s); {} line(s) not \
         understood and skipped",
        d.lines,
        names.join(", "),
        t.error_lines,
        t.findings.len(),
        d.skipped
    );
    if !d.versions.is_empty() {
        let v: Vec<String> = d
            .versions
            .iter()
            .map(|v| format!("{} {}", v.library.name(), v.version))
            .collect();
        s.push_str(&format!("; the log names {}", v.join(", ")));
    }
    if d.events_dropped > 0 {
        s.push_str(&format!(
            "; {} error line(s) past the first {} counted only",
            d.events_dropped,
            LogDigest::MAX_EVENTS
        ));
    }
    s.push('\n');
    s
}

// ---------------------------------------------------------------------------------------
// JSON

#[derive(Serialize)]
pub struct TriageJson<'a> {
    pub files: &'a [String],
    pub lines: u64,
    pub understood: u64,
    pub skipped: u64,
    pub error_lines: u64,
    pub events_dropped: u64,
    pub rdma_error: bool,
    pub findings: Vec<FindingJson<'a>>,
    pub events: Vec<EventJson>,
    pub flushes: Vec<FlushJson>,
    pub versions: Vec<VersionJson>,
}

#[derive(Debug, Serialize)]
pub struct VersionJson {
    pub library: &'static str,
    pub version: String,
    pub file: String,
    pub line: u64,
}

#[derive(Debug, Serialize)]
pub struct LineJson {
    pub file: String,
    pub line: u64,
}

#[derive(Debug, Serialize)]
pub struct CascadeJson {
    pub count: u64,
    pub lines: Vec<LineJson>,
}

#[derive(Debug, Serialize)]
pub struct NextJson<'a> {
    pub on: &'a str,
    pub command: &'a str,
}

#[derive(Serialize)]
pub struct FindingJson<'a> {
    pub code: &'a str,
    pub severity: Severity,
    pub subject: Option<String>,
    pub message: &'a str,
    pub evidence: Vec<&'a str>,
    pub fix: Option<&'a str>,
    pub root: LineJson,
    pub lines: Vec<LineJson>,
    pub cascade: CascadeJson,
    pub reporters: &'a [String],
    pub peer: Option<String>,
    pub device: Option<&'a str>,
    pub port: Option<u32>,
    pub gid_index: Option<u32>,
    pub status: Option<u32>,
    pub status_name: Option<&'static str>,
    pub ruled_out: &'a [String],
    pub unknown: &'a [String],
    pub next: Vec<NextJson<'a>>,
    /// This host's evidence: null when not asked (`--no-host`).
    pub host: Option<HostJson<'a>>,
}

/// What this host added to a finding.
#[derive(Serialize)]
pub struct HostJson<'a> {
    /// This host is an end of the failure.
    pub here: bool,
    /// What ties the log to this host, or why it is not an end.
    pub why: &'a str,
    pub device: Option<&'a str>,
    pub port: Option<u32>,
    pub gid_index: Option<u32>,
    pub peer: Option<String>,
    /// `check`'s findings on that port and GID toward the other end.
    pub findings: Vec<json::AsFinding<'a>>,
}

#[derive(Debug, Serialize)]
pub struct EventJson {
    pub file: String,
    pub line: u64,
    pub library: &'static str,
    pub host: Option<String>,
    pub rank: Option<u32>,
    pub time: Option<String>,
    pub pid: Option<u32>,
    pub kind: &'static str,
    pub status: Option<u32>,
    pub status_name: Option<&'static str>,
    pub opcode: Option<u32>,
    pub vendor_err: Option<u32>,
    pub syndrome: Option<u32>,
    pub wr_id: Option<u64>,
    pub errno: Option<i32>,
    pub errno_name: Option<&'static str>,
    pub from_state: Option<String>,
    pub to_state: Option<String>,
    pub device: Option<String>,
    pub port: Option<u32>,
    pub gid_index: Option<u32>,
    pub local_gid: Option<String>,
    pub local_ip: Option<String>,
    pub remote_gid: Option<String>,
    pub remote_ip: Option<String>,
    pub peer: Option<String>,
    pub qpn: Option<u32>,
    pub remote_qpn: Option<u32>,
    pub traffic_class: Option<u32>,
}

#[derive(Debug, Serialize)]
pub struct FlushJson {
    pub file: String,
    pub reporter: Option<String>,
    pub device: Option<String>,
    pub library: &'static str,
    pub count: u64,
    pub first_line: u64,
}

fn line_json(names: &[String], r: LineRef) -> LineJson {
    LineJson {
        file: names.get(r.file).cloned().unwrap_or_default(),
        line: r.line,
    }
}

/// The `-j` report.
pub fn json<'a>(t: &'a Triage, d: &LogDigest, names: &'a [String]) -> TriageJson<'a> {
    TriageJson {
        files: names,
        lines: d.lines,
        understood: d.understood,
        skipped: d.skipped,
        error_lines: t.error_lines,
        events_dropped: d.events_dropped + d.events.len().saturating_sub(JSON_EVENTS) as u64,
        rdma_error: t.failed(),
        findings: t.findings.iter().map(|f| finding_json(f, names)).collect(),
        events: d
            .events
            .iter()
            .take(JSON_EVENTS)
            .map(|e| event_json(e, names))
            .collect(),
        flushes: d.flushes.iter().map(|f| flush_json(f, names)).collect(),
        versions: d
            .versions
            .iter()
            .map(|v| VersionJson {
                library: v.library.name(),
                version: v.version.clone(),
                file: names.get(v.file).cloned().unwrap_or_default(),
                line: v.line,
            })
            .collect(),
    }
}

fn finding_json<'a>(f: &'a TriageFinding, names: &[String]) -> FindingJson<'a> {
    let d = &f.diagnostic;
    FindingJson {
        code: &d.code,
        severity: d.severity,
        subject: d.subject.as_ref().map(|s| s.label()),
        message: &d.message,
        evidence: d.evidence.iter().map(|s| s.text.as_str()).collect(),
        fix: d.fix.as_deref(),
        root: line_json(names, f.root),
        lines: f.lines.iter().map(|r| line_json(names, *r)).collect(),
        cascade: CascadeJson {
            count: f.cascade_count,
            lines: f.cascade.iter().map(|r| line_json(names, *r)).collect(),
        },
        reporters: &f.reporters,
        peer: f.peer.map(|p| p.to_string()),
        device: f.device.as_deref(),
        port: f.port,
        gid_index: f.gid_index,
        status: f.status,
        status_name: f.status.map(wc_status_name),
        ruled_out: &f.ruled_out,
        unknown: &f.unknown,
        next: f
            .next
            .iter()
            .map(|n| NextJson {
                on: &n.on,
                command: &n.command,
            })
            .collect(),
        host: match &f.host {
            HostLook::NotAsked => None,
            HostLook::Skipped(why) => Some(HostJson {
                here: false,
                why,
                device: None,
                port: None,
                gid_index: None,
                peer: None,
                findings: Vec::new(),
            }),
            HostLook::Here(end, found) => Some(HostJson {
                here: true,
                why: &end.why,
                device: Some(&end.device),
                port: Some(end.port),
                gid_index: end.gid_index,
                peer: end.peer.map(|p| p.to_string()),
                findings: found.iter().map(json::AsFinding).collect(),
            }),
        },
    }
}

fn event_json(e: &LogEvent, names: &[String]) -> EventJson {
    let (kind, status, opcode, vendor_err, syndrome, wr_id, errno, from, to) = match &e.failure {
        LogFailure::Completion {
            status,
            opcode,
            vendor_err,
            syndrome,
            wr_id,
        } => (
            "completion",
            Some(*status),
            *opcode,
            *vendor_err,
            *syndrome,
            *wr_id,
            None,
            None,
            None,
        ),
        LogFailure::Transition { errno, from, to } => (
            "transition",
            None,
            None,
            None,
            None,
            None,
            *errno,
            from.clone(),
            Some(to.clone()),
        ),
        LogFailure::GidFamily => ("gid_family", None, None, None, None, None, None, None, None),
    };
    EventJson {
        file: names.get(e.file).cloned().unwrap_or_default(),
        line: e.line,
        library: e.library.name(),
        host: e.origin.host.clone(),
        rank: e.origin.rank,
        time: e.origin.time.clone(),
        pid: e.origin.pid,
        kind,
        status,
        status_name: status.map(wc_status_name),
        opcode,
        vendor_err,
        syndrome,
        wr_id,
        errno,
        errno_name: errno.map(errno_name),
        from_state: from,
        to_state: to,
        device: e.device.clone(),
        port: e.port,
        gid_index: e.gid_index,
        local_gid: e.local_gid.map(|g| g.ipv6().to_string()),
        local_ip: e
            .local_gid
            .filter(|g| !g.is_zero())
            .map(|g| g.ip().to_canonical().to_string()),
        remote_gid: e.remote_gid.map(|g| g.ipv6().to_string()),
        remote_ip: e
            .remote_gid
            .filter(|g| !g.is_zero())
            .map(|g| g.ip().to_canonical().to_string()),
        peer: e.peer_ip().map(|p| p.to_string()),
        qpn: e.qpn,
        remote_qpn: e.remote_qpn,
        traffic_class: e.traffic_class,
    }
}

fn flush_json(f: &FlushGroup, names: &[String]) -> FlushJson {
    FlushJson {
        file: names.get(f.file).cloned().unwrap_or_default(),
        reporter: f.reporter.clone(),
        device: f.device.clone(),
        library: f.library.name(),
        count: f.count,
        first_line: f.first_line,
    }
}
