//! `rdmactl counters`: a snapshot grouped by what the counters indicate, or one interval's
//! deltas and rates; text or JSON. Strings only, no I/O.

use serde::Serialize;

use crate::model::counter::{
    Change, Counter, CounterDelta, CounterSource, Flavor, Group, PortCounters, PortDelta, Unit,
};
use crate::model::device::ReadProblem;
use crate::model::diagnostic::Diagnostic;
use crate::output::{round_to, Style};
use crate::render::diagnostic::{self as findings, Evidence};

const SATURATED: &str = "saturated, reset with perfquery -R";

/// Whether a counter is shown without `--all`: it has a meaning and is not zero.
fn shown(c: &Counter, all: bool) -> bool {
    all || (c.group != Group::Other && c.value > 0)
}

fn value_text(c: &Counter) -> String {
    match c.bytes() {
        Some(b) => format!("{} bytes", b),
        None => c.value.to_string(),
    }
}

/// What a port's directories say before its counters: Soft-RoCE has no `counters/`.
fn dirs_note(has_counters: bool, has_hw: bool) -> Option<&'static str> {
    match (has_counters, has_hw) {
        (true, true) => None,
        (false, true) => Some("no IB PMA counters (no counters/, or N/A (no PMA)): this device has no IB performance-management agent (Soft-RoCE never has one); hw_counters/ only"),
        (true, false) => Some("no hw_counters/ directory: the driver exposes no statistics of its own here; counters/ only"),
        (false, false) => Some("no counters: no IB PMA counters (no counters/, or N/A (no PMA)) and no hw_counters/ for this port"),
    }
}

/// One block per port: a header, then each group with one line per counter (name, value,
/// meaning), then what was left out.
pub fn snapshot_text(ports: &[PortCounters], all: bool) -> String {
    let mut out = String::new();
    for (i, pc) in ports.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&format!("{}/{}\n", pc.device, pc.port));
        if let Some(note) = dirs_note(pc.has_counters_dir, pc.has_hw_counters_dir) {
            out.push_str(&format!("  {note}\n"));
        }
        let rows: Vec<&Counter> = pc.counters.iter().filter(|c| shown(c, all)).collect();
        let name_w = rows.iter().map(|c| c.name.len()).max().unwrap_or(0);
        let value_w = rows.iter().map(|c| value_text(c).len()).max().unwrap_or(0);
        for group in Group::ALL {
            let in_group: Vec<&&Counter> = rows.iter().filter(|c| c.group == group).collect();
            if in_group.is_empty() {
                continue;
            }
            out.push_str(&format!("  {}\n", group.title()));
            for c in in_group {
                let meaning = c.meaning.unwrap_or("(no description)");
                let meaning = if c.is_saturated() {
                    format!("{SATURATED}: {meaning}")
                } else {
                    meaning.to_string()
                };
                out.push_str(&format!(
                    "    {:<name_w$}  {:>value_w$}  {meaning}\n",
                    c.name,
                    value_text(c)
                ));
            }
        }
        if !all {
            let hidden = pc.counters.len() - rows.len();
            if rows.is_empty() && !pc.counters.is_empty() {
                out.push_str("  no non-zero counter that matters for diagnosis\n");
            }
            if hidden > 0 {
                out.push_str(&format!(
                    "  ({hidden} zero or undescribed counter{} not shown; --all shows every counter)\n",
                    if hidden == 1 { "" } else { "s" }
                ));
            }
        }
    }
    out
}

#[derive(Serialize)]
struct PortCountersJson<'a> {
    device: &'a str,
    port: u32,
    driver: Flavor,
    counters_dir: bool,
    hw_counters_dir: bool,
    counters: Vec<CounterJson<'a>>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    read_problems: &'a [ReadProblem],
}

#[derive(Serialize)]
struct CounterJson<'a> {
    name: &'a str,
    source: CounterSource,
    group: Group,
    unit: Unit,
    width: u8,
    saturates: bool,
    saturated: bool,
    value: u64,
    bytes: Option<u64>,
    meaning: Option<&'a str>,
}

impl<'a> From<&'a Counter> for CounterJson<'a> {
    fn from(c: &'a Counter) -> Self {
        CounterJson {
            name: &c.name,
            source: c.source,
            group: c.group,
            unit: c.unit,
            width: c.width,
            saturates: c.saturates,
            saturated: c.is_saturated(),
            value: c.value,
            bytes: c.bytes(),
            meaning: c.meaning,
        }
    }
}

/// `-j`: every counter of every selected port, with its raw value, width and group.
pub fn snapshot_json(ports: &[PortCounters]) -> String {
    let rows: Vec<PortCountersJson> = ports
        .iter()
        .map(|pc| PortCountersJson {
            device: &pc.device,
            port: pc.port,
            driver: pc.flavor,
            counters_dir: pc.has_counters_dir,
            hw_counters_dir: pc.has_hw_counters_dir,
            counters: pc.counters.iter().map(CounterJson::from).collect(),
            read_problems: &pc.problems,
        })
        .collect();
    crate::output::json(&rows)
}

/// Whether an interval's line is shown without `--all`: it moved, or its number is not
/// exact (saturated, reset).
fn moved(d: &CounterDelta, all: bool) -> bool {
    all || d.change.at_least() > 0 || !d.change.is_exact()
}

/// The increase per second in the counter's own unit (4-octet words for the data counters).
fn raw_rate(d: &CounterDelta, seconds: f64) -> f64 {
    if seconds > 0.0 {
        d.change.at_least() as f64 / seconds
    } else {
        0.0
    }
}

/// The increase per second as text shows it: bytes for the data counters.
fn rate(d: &CounterDelta, seconds: f64) -> f64 {
    match d.counter.unit {
        Unit::Words => raw_rate(d, seconds) * 4.0,
        _ => raw_rate(d, seconds),
    }
}

fn delta_text(d: &CounterDelta) -> String {
    let scale = if d.counter.unit == Unit::Words { 4 } else { 1 };
    let n = d.change.at_least().saturating_mul(scale);
    let unit = if scale == 4 { " bytes" } else { "" };
    match d.change {
        Change::Counted { wrapped: false, .. } => format!("+{n}{unit}"),
        Change::Counted { wrapped: true, .. } => format!("+{n}{unit} (wrapped)"),
        Change::Saturated { .. } => format!("+{n}{unit} or more ({SATURATED})"),
        Change::Reset { .. } => format!("+{n}{unit} or more (reset in between)"),
    }
}

/// One interval as text: per port, the counters that moved with their delta and rate per
/// second, then the findings the deltas give (`diagnose::counters::judge`).
pub fn interval_text(
    sample: u64,
    ports: &[(PortDelta, Vec<Diagnostic>)],
    all: bool,
    style: Style,
) -> String {
    let seconds = ports.first().map_or(0.0, |p| p.0.seconds);
    let mut out = format!("sample {sample}, {seconds:.2} s\n");
    for (d, found) in ports {
        out.push_str(&format!("{}\n", d.label()));
        let rows: Vec<&CounterDelta> = d.counters.iter().filter(|c| moved(c, all)).collect();
        if rows.is_empty() {
            out.push_str("  no counter moved\n");
        }
        let name_w = rows.iter().map(|c| c.name().len()).max().unwrap_or(0);
        let delta_w = rows.iter().map(|c| delta_text(c).len()).max().unwrap_or(0);
        for group in Group::ALL {
            let in_group: Vec<&&CounterDelta> =
                rows.iter().filter(|c| c.counter.group == group).collect();
            if in_group.is_empty() {
                continue;
            }
            out.push_str(&format!("  {}\n", group.title()));
            for c in in_group {
                let per = if c.counter.unit == Unit::Words {
                    "bytes/s"
                } else {
                    "/s"
                };
                out.push_str(&format!(
                    "    {:<name_w$}  {:<delta_w$}  {:.1} {per}\n",
                    c.name(),
                    delta_text(c),
                    rate(c, d.seconds)
                ));
            }
        }
        if !found.is_empty() {
            for line in findings::lines(found, style, Evidence::All).lines() {
                out.push_str(&format!("  {line}\n"));
            }
        }
    }
    out
}

#[derive(Serialize)]
struct SampleJson<'a> {
    sample: u64,
    seconds: f64,
    ports: Vec<PortDeltaJson<'a>>,
}

#[derive(Serialize)]
struct PortDeltaJson<'a> {
    device: &'a str,
    port: u32,
    driver: Flavor,
    counters: Vec<DeltaJson<'a>>,
    #[serde(serialize_with = "crate::model::diagnostic::json::findings")]
    findings: &'a [Diagnostic],
}

#[derive(Serialize)]
struct DeltaJson<'a> {
    name: &'a str,
    source: CounterSource,
    group: Group,
    unit: Unit,
    width: u8,
    before: u64,
    value: u64,
    delta: u64,
    exact: bool,
    state: &'static str,
    rate: f64,
}

/// `--interval -j`: one sample as one line of JSON, every counter with its delta.
pub fn interval_json(sample: u64, ports: &[(PortDelta, Vec<Diagnostic>)]) -> String {
    let seconds = ports.first().map_or(0.0, |p| p.0.seconds);
    let value = SampleJson {
        sample,
        seconds: round_to(seconds, 6),
        ports: ports
            .iter()
            .map(|(d, f)| PortDeltaJson {
                device: &d.device,
                port: d.port,
                driver: d.flavor,
                counters: d
                    .counters
                    .iter()
                    .map(|c| DeltaJson {
                        name: c.name(),
                        source: c.counter.source,
                        group: c.counter.group,
                        unit: c.counter.unit,
                        width: c.counter.width,
                        before: c.before,
                        value: c.counter.value,
                        delta: c.change.at_least(),
                        exact: c.change.is_exact(),
                        state: match c.change {
                            Change::Counted { wrapped: false, .. } => "counted",
                            Change::Counted { wrapped: true, .. } => "wrapped",
                            Change::Saturated { .. } => "saturated",
                            Change::Reset { .. } => "reset",
                        },
                        rate: round_to(raw_rate(c, d.seconds), 3),
                    })
                    .collect(),
                findings: f,
            })
            .collect(),
    };
    // One object per line, so a reader can follow the stream line by line.
    serde_json::to_string(&value).expect("plain data serialises")
}

/// Counter files that exist but could not be read, for stderr once (JSON carries them as
/// `read_problems`).
pub fn problem_warnings(ports: &[PortCounters]) -> String {
    ports
        .iter()
        .flat_map(|p| &p.problems)
        .map(|p| format!("rdmactl: warning: {}: {}\n", p.path.display(), p.error))
        .collect()
}
