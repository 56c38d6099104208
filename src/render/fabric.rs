//! `rdmactl fabric`'s report: the run, the drift, the matrix as a heatmap, the suspects with
//! why/seen/fix, and the verdict; and the same pairs as CSV and as an SVG heatmap.

use std::collections::BTreeMap;

use owo_colors::OwoColorize;

use crate::model::diagnostic::Severity;
use crate::model::fabric::{
    Drift, FabricReport, PairRow, PairState, PairTally, PerfBaseline, RankRow, RunSpread,
    SuspectRow,
};
use crate::output::Style;
use crate::render::diagnostic;

/// Above this many endpoints the matrix shows one character per pair.
const FIGURES_UP_TO: usize = 24;
/// Above this many, a terminal cannot show the matrix: one line per endpoint with a bad
/// pair instead (the SVG and CSV have it all).
const MATRIX_UP_TO: usize = 64;

fn endpoint(r: &RankRow) -> String {
    if r.status == "missing" {
        return format!("rank {} (missing)", r.info.rank);
    }
    let dev = if r.info.device.is_empty() {
        String::new()
    } else {
        format!(" {}/{}", r.info.device, r.info.port)
    };
    format!("{}{dev} (rank {})", r.info.host, r.info.rank)
}

fn paint(text: String, state: Option<PairState>, style: Style) -> String {
    if !style.color {
        return text;
    }
    match state {
        Some(PairState::Ok) => text.green().to_string(),
        Some(PairState::Failed) => text.red().bold().to_string(),
        Some(PairState::NotRun) => text.dimmed().to_string(),
        Some(_) => text.yellow().to_string(),
        None => text,
    }
}

pub fn text(r: &FabricReport, style: Style) -> String {
    let mut out = String::new();
    let run = &r.run;
    let retested = r.tally.retested;
    out.push_str(&format!(
        "fabric: {} of {} ranks joined ({}), pattern {}: {} round(s), {} pair(s){}; {}-byte messages, {} iterations; {:.1} s\n",
        run.joined,
        run.size,
        run.launcher,
        run.pattern,
        run.rounds,
        r.tally.total,
        if retested > 0 {
            format!(", {retested} retested")
        } else {
            String::new()
        },
        run.message_size,
        run.iters,
        run.seconds
    ));
    if run.token == "none" {
        out.push_str("note: no run token (no job id, no --token): any rank with this rendezvous address could join\n");
    }
    out.push_str(&format!("baseline: {}\n", baseline_text(r)));
    if !r.drift.is_empty() {
        out.push_str("\ndrift (endpoints that differ from the rest):\n");
        let by_rank: BTreeMap<u32, &RankRow> = r.ranks.iter().map(|x| (x.info.rank, x)).collect();
        for d in &r.drift {
            let label = diagnostic::severity_label(Severity::Warn, style);
            let groups: Vec<String> = d
                .values
                .iter()
                .map(|v| {
                    let who: Vec<String> = v
                        .ranks
                        .iter()
                        .take(8)
                        .filter_map(|k| by_rank.get(k).map(|x| endpoint(x)))
                        .collect();
                    let more = v.ranks.len().saturating_sub(8);
                    format!(
                        "{} on {}{}",
                        v.value,
                        who.join(", "),
                        if more > 0 {
                            format!(" and {more} more")
                        } else {
                            String::new()
                        }
                    )
                })
                .collect();
            out.push_str(&format!(
                "{label}  {}: {}\n",
                d.attribute,
                groups.join("; ")
            ));
            out.push_str(&format!("        why it matters: {}\n", d.why_it_matters));
        }
    }
    if r.tally.total > 0 {
        out.push('\n');
        out.push_str(&matrix(r, style));
    }
    out.push_str(&retests(r));
    if !r.suspects.is_empty() {
        out.push_str("\nsuspects:\n");
        for s in &r.suspects {
            let who = match (s.rank, s.peer_rank) {
                (Some(a), Some(b)) => format!("{} ↔ {}", rank_label(r, a), rank_label(r, b)),
                (Some(a), None) => rank_label(r, a),
                _ => "the fabric".to_string(),
            };
            let d = s.diagnostic();
            out.push_str(&format!(
                "{}  {}  {who}: {}{}\n",
                diagnostic::severity_label(d.severity, style),
                d.code,
                s.reason,
                certainty(s.runs, s.bad_runs)
            ));
            out.push_str(&diagnostic::body(&d, "      "));
        }
    }
    out.push_str(&format!("\nverdict: {}\n", r.verdict));
    out
}

/// How sure a suspect is, from the runs of its pairs (first runs and retests).
fn certainty(runs: u32, bad_runs: u32) -> String {
    match (runs, bad_runs) {
        (0, _) => String::new(),
        (1, _) => "; seen in its one run (not retested)".into(),
        (r, b) if r == b => format!("; consistent: bad in all {r} runs of its pairs"),
        (r, b) => format!("; bad in {b} of {r} runs of its pairs, not in all"),
    }
}

/// Most retested pairs listed with every run's spread.
const RETESTS_LISTED: usize = 20;

/// The pairs that were bad the first time and ran again: what their runs found, the
/// median and range of their figures.
fn retests(r: &FabricReport) -> String {
    let rows: Vec<(&PairRow, &RunSpread)> = r
        .pairs
        .iter()
        .filter_map(|p| p.runs.as_ref().map(|s| (p, s)))
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "\nretested (bad the first time, or a pair the baseline stands on; bad only when bad in every run):\n",
    );
    for (p, s) in rows.iter().take(RETESTS_LISTED) {
        let mut figures = Vec::new();
        if let Some(u) = s.usec_per_iter {
            figures.push(format!(
                "{:.1} µs/iter median ({:.1}–{:.1})",
                u.median, u.min, u.max
            ));
        }
        if let Some(m) = s.mbit_per_sec {
            figures.push(format!(
                "{:.0} Mbit/s median ({:.0}–{:.0})",
                m.median, m.min, m.max
            ));
        }
        let outcome = if p.state.is_bad() {
            format!(
                "{}, bad in {} of {} runs",
                p.state.label(),
                s.bad_runs,
                s.runs
            )
        } else if p.first_state == Some(PairState::Ok) {
            format!(
                "a pair the baseline stands on, run again (bad in {} of {} runs)",
                s.bad_runs, s.runs
            )
        } else {
            format!(
                "cleared: bad in {} of {} runs only (first {})",
                s.bad_runs,
                s.runs,
                p.first_state.map(PairState::label).unwrap_or("bad")
            )
        };
        out.push_str(&format!(
            "  {} ↔ {}: {outcome}; {}\n",
            rank_label(r, p.a),
            rank_label(r, p.b),
            figures.join(", ")
        ));
    }
    if rows.len() > RETESTS_LISTED {
        out.push_str(&format!(
            "  and {} more (every pair's runs are in -j's `pairs[].runs`)\n",
            rows.len() - RETESTS_LISTED
        ));
    }
    out
}

fn rank_label(r: &FabricReport, rank: u32) -> String {
    r.ranks
        .iter()
        .find(|x| x.info.rank == rank)
        .map(endpoint)
        .unwrap_or_else(|| format!("rank {rank}"))
}

fn baseline_text(r: &FabricReport) -> String {
    let b = &r.baseline;
    let figures: Vec<String> = [
        b.usec_per_iter.map(|u| format!("{u:.1} µs/iter")),
        b.mbit_per_sec.map(|m| format!("{m:.0} Mbit/s")),
    ]
    .into_iter()
    .flatten()
    .collect();
    let worst: Vec<String> = [
        b.usec_worst_run.map(|u| format!("{u:.1} µs/iter")),
        b.mbit_worst_run.map(|m| format!("{m:.0} Mbit/s")),
    ]
    .into_iter()
    .flatten()
    .collect();
    let noise = if worst.is_empty() {
        String::new()
    } else {
        format!(
            "; the worst run of its pairs: {} (this host's noise)",
            worst.join(", ")
        )
    };
    if figures.is_empty() {
        b.how.clone()
    } else {
        format!("{} ({}{noise})", figures.join(", "), b.how)
    }
}

fn cell_state<'a>(
    pairs: &BTreeMap<(u32, u32), &'a PairRow>,
    a: u32,
    b: u32,
) -> Option<&'a PairRow> {
    pairs.get(&(a.min(b), a.max(b))).copied()
}

fn glyph(p: &PairRow) -> char {
    state_glyph(p.state)
}

fn state_glyph(s: PairState) -> char {
    match s {
        PairState::Ok => '·',
        PairState::Slow => 'S',
        PairState::LowBandwidth => 'B',
        PairState::Lossy => 'L',
        PairState::Failed => 'X',
        PairState::NotRun => '?',
    }
}

/// Rows and columns are the ranks; a cell is the pair's latency as a multiple of the
/// baseline (or in µs without one), X failed, ? not run; blank where not tested.
fn matrix(r: &FabricReport, style: Style) -> String {
    let pairs: BTreeMap<(u32, u32), &PairRow> = r.pairs.iter().map(|p| ((p.a, p.b), p)).collect();
    let ranks: Vec<&RankRow> = r.ranks.iter().collect();
    let n = ranks.len();
    let labels: Vec<String> = ranks
        .iter()
        .map(|x| {
            let dev = if x.info.device.is_empty() {
                String::new()
            } else {
                format!(" {}", x.info.device)
            };
            format!("{:>3} {}{dev}", x.info.rank, x.info.host)
        })
        .collect();
    let lw = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    let mut out = String::new();
    if n > MATRIX_UP_TO {
        return summary_rows(r, &labels, lw, style);
    }
    let figures = n <= FIGURES_UP_TO;
    let have_base = r.baseline.usec_per_iter.is_some();
    if figures {
        out.push_str(if have_base {
            "matrix: latency ÷ baseline (X failed, L lossy, B low bandwidth, ? not run):\n"
        } else {
            "matrix: µs per iteration (X failed, L lossy, ? not run):\n"
        });
        out.push_str(&format!("{:lw$} ", ""));
        for x in &ranks {
            out.push_str(&format!("{:>6}", x.info.rank));
        }
        out.push('\n');
    } else {
        out.push_str("matrix: · good, S slow, B low bandwidth, L lossy, X failed, ? not run:\n");
        out.push_str(&format!("{:lw$} ", ""));
        for x in &ranks {
            out.push_str(&(x.info.rank % 10).to_string());
        }
        out.push('\n');
    }
    for (i, row) in ranks.iter().enumerate() {
        out.push_str(&format!("{:<lw$} ", labels[i]));
        for col in &ranks {
            let (a, b) = (row.info.rank, col.info.rank);
            let cell = if a == b {
                (
                    if figures {
                        "-".to_string()
                    } else {
                        "\\".to_string()
                    },
                    None,
                )
            } else {
                match cell_state(&pairs, a, b) {
                    None => (" ".to_string(), None),
                    Some(p) if !figures => (glyph(p).to_string(), Some(p.state)),
                    Some(p) => {
                        let text = match p.state {
                            PairState::Failed => "X".to_string(),
                            PairState::NotRun => "?".to_string(),
                            PairState::Lossy => "L".to_string(),
                            PairState::LowBandwidth if p.latency_ratio.is_none() => "B".into(),
                            _ => match (p.latency_ratio, p.usec_per_iter) {
                                (Some(x), _) => format!("{x:.1}"),
                                (None, Some(u)) => format!("{u:.0}"),
                                (None, None) => glyph(p).to_string(),
                            },
                        };
                        (text, Some(p.state))
                    }
                }
            };
            let text = if figures {
                format!("{:>6}", cell.0)
            } else {
                cell.0
            };
            out.push_str(&paint(text, cell.1, style));
        }
        out.push('\n');
    }
    out
}

/// Endpoints listed with their bad pairs in a large fabric's summary; the rest are counted.
const SUMMARY_ROWS: usize = 64;

/// The large-fabric matrix: the endpoints with a bad pair, and how their pairs went,
/// from the tally (a large run's report does not hold every pair).
fn summary_rows(r: &FabricReport, labels: &[String], lw: usize, style: Style) -> String {
    let with_bad: Vec<(usize, &crate::model::fabric::RankTally)> = r
        .ranks
        .iter()
        .enumerate()
        .filter_map(|(i, row)| {
            let t = r.tally.per_rank.get(&row.info.rank)?;
            (!t.not_ok.is_empty()).then_some((i, t))
        })
        .collect();
    let mut out = format!(
        "matrix: {} endpoints, {} pairs{}\n",
        r.ranks.len(),
        r.tally.total,
        if with_bad.is_empty() {
            ": all good (--svg draws it, --csv lists it)"
        } else {
            "; endpoints with a bad pair (S slow, B low bandwidth, L lossy, X failed, ? not run):"
        }
    );
    // Worst first: the most bad pairs.
    let mut shown = with_bad.clone();
    shown.sort_by_key(|(i, t)| (std::cmp::Reverse(t.not_ok.values().sum::<u32>()), *i));
    shown.truncate(SUMMARY_ROWS);
    shown.sort_by_key(|(i, _)| *i);
    for (i, t) in &shown {
        let (i, tested) = (*i, t.pairs);
        let bad: u32 = t.not_ok.values().sum();
        let detail: Vec<String> = t
            .not_ok
            .iter()
            .map(|(s, k)| format!("{} {k}", state_glyph(*s)))
            .collect();
        out.push_str(&format!(
            "{:<lw$}  {}\n",
            labels[i],
            paint(
                format!("{bad} of {tested} pairs bad ({})", detail.join(", ")),
                Some(PairState::Slow),
                style
            )
        ));
    }
    if with_bad.len() > shown.len() {
        out.push_str(&format!(
            "and {} more endpoints with a bad pair (--csv lists every pair)\n",
            with_bad.len() - shown.len()
        ));
    }
    out
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The CSV's first line: one line per pair follows (`csv_line`), for spreadsheets and
/// scripts.
pub const CSV_HEADER: &str = "a,host_a,device_a,b,host_b,device_b,round,state,usec_per_iter,mbit_per_sec,latency_ratio,bandwidth_ratio,resends_per_mille,retested,failure_code,why\n";

/// One pair as a CSV line; `names` are host and device of `a`, then of `b`.
pub fn csv_line(p: &PairRow, names: [&str; 4]) -> String {
    let num = |v: Option<f64>| v.map(|v| format!("{v:.3}")).unwrap_or_default();
    let code = p
        .failure
        .as_ref()
        .and_then(|f| f.explanation.as_ref()?.code.as_deref())
        .unwrap_or("");
    let fields = [
        p.a.to_string(),
        names[0].to_string(),
        names[1].to_string(),
        p.b.to_string(),
        names[2].to_string(),
        names[3].to_string(),
        p.round.to_string(),
        p.state.label().to_string(),
        num(p.usec_per_iter),
        num(p.mbit_per_sec),
        num(p.latency_ratio),
        num(p.bandwidth_ratio),
        num(p.resends_per_mille),
        p.retested.to_string(),
        code.to_string(),
        p.why.join("; "),
    ];
    let mut out = fields
        .iter()
        .map(|f| csv_field(f))
        .collect::<Vec<_>>()
        .join(",");
    out.push('\n');
    out
}

fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn colour(p: Option<&PairRow>) -> &'static str {
    state_colour(p.map(|p| p.state))
}

fn state_colour(s: Option<PairState>) -> &'static str {
    match s {
        None => "#ffffff",
        Some(PairState::Ok) => "#4caf50",
        Some(PairState::LowBandwidth) => "#ffeb3b",
        Some(PairState::Slow) => "#ff9800",
        Some(PairState::Lossy) => "#ff5722",
        Some(PairState::Failed) => "#d32f2f",
        Some(PairState::NotRun) => "#9e9e9e",
    }
}

/// Above this many endpoints the SVG draws blocks of endpoints, not pairs.
const SVG_CELLS: usize = 256;

/// The matrix as an SVG heatmap; each cell's tooltip says the pair and its figures. Above
/// `SVG_CELLS` endpoints (or when the report does not hold every pair) a cell is a block of
/// endpoints, coloured by the worst pair in it, and the title says so.
pub fn svg(r: &FabricReport) -> String {
    if r.ranks.len() > SVG_CELLS || !r.tally.listed_all {
        return svg_blocks(r);
    }
    let pairs: BTreeMap<(u32, u32), &PairRow> = r.pairs.iter().map(|p| ((p.a, p.b), p)).collect();
    let n = r.ranks.len().max(1);
    let cell = (1200 / n).clamp(2, 24);
    let labelled = cell >= 10;
    let margin = if labelled { 180 } else { 20 };
    let size = margin + n * cell + 20;
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{size}\" height=\"{}\" font-family=\"monospace\" font-size=\"{}\">\n",
        size + 40,
        cell.min(12)
    );
    out.push_str(&format!(
        "<title>{}</title>\n<text x=\"4\" y=\"{}\">{}</text>\n",
        xml(&r.verdict),
        size + 24,
        xml(&r.verdict)
    ));
    for (i, row) in r.ranks.iter().enumerate() {
        let y = margin + i * cell;
        if labelled {
            out.push_str(&format!(
                "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n",
                margin - 4,
                y + cell - 2,
                xml(&endpoint(row))
            ));
            out.push_str(&format!(
                "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                margin + i * cell + cell / 2,
                margin - 4,
                row.info.rank
            ));
        }
        for (j, col) in r.ranks.iter().enumerate() {
            let x = margin + j * cell;
            let (a, b) = (row.info.rank, col.info.rank);
            let p = if a == b {
                None
            } else {
                cell_state(&pairs, a, b)
            };
            let fill = if a == b { "#e0e0e0" } else { colour(p) };
            let tip = match p {
                Some(p) => format!(
                    "{} ↔ {}: {}{}",
                    endpoint(row),
                    endpoint(col),
                    p.state.label(),
                    if p.why.is_empty() {
                        p.usec_per_iter
                            .map(|u| format!(", {u:.1} µs/iter"))
                            .unwrap_or_default()
                    } else {
                        format!(": {}", p.why.join("; "))
                    }
                ),
                None => String::new(),
            };
            out.push_str(&format!(
                "<rect x=\"{x}\" y=\"{y}\" width=\"{cell}\" height=\"{cell}\" fill=\"{fill}\" stroke=\"#ffffff\"><title>{}</title></rect>\n",
                xml(&tip)
            ));
        }
    }
    out.push_str("</svg>\n");
    out
}

/// A large fabric's heatmap: `SVG_CELLS` blocks a side at most, each the worst state of
/// the listed (bad) pairs in it, green where its endpoints were tested and all listed pairs
/// are good.
fn svg_blocks(r: &FabricReport) -> String {
    let n = r.ranks.len().max(1);
    let per = n.div_ceil(SVG_CELLS);
    let side = n.div_ceil(per);
    let mut worst: BTreeMap<(usize, usize), PairState> = BTreeMap::new();
    for p in &r.pairs {
        let (i, j) = (p.a as usize / per, p.b as usize / per);
        for key in [(i, j), (j, i)] {
            let w = worst.entry(key).or_insert(p.state);
            *w = (*w).max(p.state);
        }
    }
    let tested = |block: usize| {
        (block * per..((block + 1) * per).min(n))
            .any(|k| r.tally.per_rank.contains_key(&(k as u32)))
    };
    let cell = (1200 / side).clamp(2, 24);
    let margin = 20;
    let size = margin + side * cell + 20;
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{size}\" height=\"{}\" font-family=\"monospace\" font-size=\"12\">\n",
        size + 60
    );
    let note = format!(
        "{} endpoints in blocks of {per}: a cell is the worst pair between two blocks ({} pairs; --csv lists each)",
        n, r.tally.total
    );
    out.push_str(&format!(
        "<title>{}</title>\n<text x=\"4\" y=\"{}\">{}</text>\n<text x=\"4\" y=\"{}\">{}</text>\n",
        xml(&r.verdict),
        size + 24,
        xml(&r.verdict),
        size + 44,
        xml(&note)
    ));
    let ok = colour(None);
    for i in 0..side {
        for j in 0..side {
            let fill = match worst.get(&(i, j)) {
                Some(s) if *s != PairState::Ok => state_colour(Some(*s)),
                _ if tested(i) && tested(j) && (i != j || per > 1) => {
                    state_colour(Some(PairState::Ok))
                }
                _ => ok,
            };
            let (lo_a, lo_b) = (i * per, j * per);
            let tip = format!(
                "ranks {lo_a}-{} × {lo_b}-{}",
                ((i + 1) * per).min(n) - 1,
                ((j + 1) * per).min(n) - 1
            );
            out.push_str(&format!(
                "<rect x=\"{}\" y=\"{}\" width=\"{cell}\" height=\"{cell}\" fill=\"{fill}\"><title>{tip}</title></rect>\n",
                margin + j * cell,
                margin + i * cell
            ));
        }
    }
    out.push_str("</svg>\n");
    out
}

/// The one-line verdict the text output ends with and `-j` carries as `verdict`.
/// The one-line verdict; `signal` is (the signal, the rank that caught it) when one
/// stopped the run.
pub fn verdict_line(
    suspects: &[SuspectRow],
    drift: &[Drift],
    tally: &PairTally,
    baseline: &PerfBaseline,
    ranks: &[RankRow],
    signal: Option<(i32, u32)>,
) -> String {
    let (bad, not_run, total) = (tally.bad, tally.not_run, tally.total);
    let joined = ranks.iter().filter(|r| r.status != "missing").count();
    let base = match (baseline.usec_per_iter, baseline.mbit_per_sec) {
        (Some(u), Some(m)) => format!("baseline {u:.1} µs/iter, {m:.0} Mbit/s"),
        (Some(u), None) => format!("baseline {u:.1} µs/iter"),
        (None, Some(m)) => format!("baseline {m:.0} Mbit/s"),
        (None, None) => "no baseline".into(),
    };
    if suspects.is_empty() && drift.is_empty() && bad == 0 && not_run == 0 && signal.is_none() {
        return format!("clean: {total} pairs of {joined} endpoints good ({base})");
    }
    let mut parts = Vec::new();
    if let Some(line) = signal.map(interrupted_text) {
        let ran = total - not_run;
        parts.push(format!("{line} after {ran} of {total} pairs"));
    }
    if !suspects.is_empty() {
        let named: Vec<String> = suspects
            .iter()
            .take(3)
            .map(|s| {
                let who = match (&s.host, &s.device, s.rank) {
                    (Some(h), Some(d), Some(r)) => format!("{h} {d} (rank {r})"),
                    (Some(h), None, Some(r)) => format!("{h} (rank {r})"),
                    (_, _, Some(r)) => format!("rank {r}"),
                    _ => "the fabric".into(),
                };
                match s.peer_rank {
                    Some(p) => {
                        let peer = match (&s.peer_host, &s.peer_device) {
                            (Some(h), Some(d)) if !d.is_empty() => format!("{h} {d}"),
                            (Some(h), _) => h.clone(),
                            _ => String::new(),
                        };
                        format!("{who} ↔ {peer} (rank {p}): {}", s.kind_word())
                    }
                    None => format!("{who}: {}", s.reason),
                }
            })
            .collect();
        let more = suspects.len().saturating_sub(3);
        parts.push(format!(
            "{} suspect(s): {}{}",
            suspects.len(),
            named.join("; "),
            if more > 0 {
                format!("; and {more} more")
            } else {
                String::new()
            }
        ));
    }
    if bad > 0 {
        parts.push(format!("{bad} of {total} pairs bad"));
    }
    if not_run > 0 {
        parts.push(format!("{not_run} of {total} pairs not run"));
    }
    if !drift.is_empty() {
        parts.push(format!(
            "drift in {}",
            drift
                .iter()
                .map(|d| d.attribute)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    format!("{} ({base})", parts.join("; "))
}

/// What stopped a run: `interrupted by SIGINT on rank 0`.
pub fn interrupted_text((signal, rank): (i32, u32)) -> String {
    format!(
        "interrupted by {} on rank {rank}",
        crate::model::failure::signal_name(signal)
    )
}

/// A pair server that moved off its pair port, on stderr: which port was held, by whom.
pub fn port_moved_line(
    me: &crate::model::fabric::RankInfo,
    taken: &[(u16, Option<(u32, String)>)],
    port: u16,
) -> String {
    format!(
        "rdmactl: rank {} ({}): {}; this pair test listens on TCP port {port} instead\n",
        me.rank,
        me.label(),
        held_text(taken)
    )
}

/// Why a pair server found no port at all.
pub fn no_free_port(
    me: &crate::model::fabric::RankInfo,
    taken: &[(u16, Option<(u32, String)>)],
) -> String {
    format!(
        "no free TCP port for the pair server on {}: {}; give another --port-base",
        me.label(),
        held_text(taken)
    )
}

fn held_text(taken: &[(u16, Option<(u32, String)>)]) -> String {
    taken
        .iter()
        .map(|(port, holder)| match holder {
            Some((pid, name)) if name == "rdmactl" => format!(
                "TCP port {port} is held by rdmactl (pid {pid}): another fabric run on this host"
            ),
            Some((pid, name)) => format!("TCP port {port} is held by {name} (pid {pid})"),
            None => {
                format!("TCP port {port} is held by a process /proc does not show (another user's)")
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Back to the start of the terminal line and clear it: progress lines overwrite each other.
pub const CLEAR_LINE: &str = "\r\x1b[K";

/// Rank 0's progress while ranks join.
pub fn joining_line(joined: usize, size: u32) -> String {
    format!("{CLEAR_LINE}waiting for ranks: {joined} of {size} joined")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fabric::{
        PerfBaseline, RankInfo, RunFacts, Spread, SuspectExplanation, SuspectKind, SuspectRow,
        Thresholds,
    };

    fn report() -> FabricReport {
        let ranks = (0..3)
            .map(|r| RankRow {
                info: RankInfo {
                    rank: r,
                    host: format!("h{r}"),
                    device: format!("rxe{r}"),
                    port: 1,
                    ..RankInfo::default()
                },
                status: "joined",
            })
            .collect();
        let pair = |a, b, state, ratio: f64| PairRow {
            a,
            b,
            round: 1,
            ok: state == PairState::Ok,
            state,
            why: if state == PairState::Ok {
                vec![]
            } else {
                vec!["3.0× the baseline, \"odd\"".into()]
            },
            usec_per_iter: Some(100.0 * ratio),
            mbit_per_sec: Some(900.0),
            path_mtu: Some(1024),
            latency_ratio: Some(ratio),
            bandwidth_ratio: Some(1.0),
            resends_per_mille: None,
            retested: state != PairState::Ok,
            first_state: None,
            runs: (state != PairState::Ok).then_some(RunSpread {
                runs: 3,
                bad_runs: 3,
                usec_per_iter: Spread::of(&[100.0 * ratio, 90.0 * ratio, 110.0 * ratio]),
                mbit_per_sec: Spread::of(&[900.0, 850.0, 910.0]),
            }),
            failure: None,
            counters: None,
            problem: None,
        };
        FabricReport {
            run: RunFacts {
                launcher: "Open MPI",
                token: "checked",
                size: 3,
                joined: 3,
                pattern: "all".into(),
                rounds: 3,
                retest_rounds: 1,
                message_size: 4096,
                iters: 500,
                deadline: 30.0,
                thresholds: Thresholds::default(),
                seconds: 4.2,
                signal: None,
                signal_rank: None,
                pairs_total: 3,
                pairs_listed: "all",
            },
            ranks,
            drift: vec![],
            baseline: PerfBaseline {
                usec_per_iter: Some(100.0),
                mbit_per_sec: Some(900.0),
                how: "the median over 3 endpoints".into(),
                usec_worst_run: None,
                mbit_worst_run: None,
            },
            pairs: vec![
                pair(0, 1, PairState::Ok, 1.0),
                pair(0, 2, PairState::Slow, 3.0),
                pair(1, 2, PairState::Slow, 3.1),
            ],
            suspects: vec![SuspectRow {
                kind: SuspectKind::Endpoint,
                code: "fabric-endpoint-slow".into(),
                rank: Some(2),
                host: Some("h2".into()),
                device: Some("rxe2".into()),
                peer_rank: None,
                peer_host: None,
                peer_device: None,
                reason: "slow with 2 of 2 partners".into(),
                pairs: vec![(0, 2), (1, 2)],
                runs: 6,
                bad_runs: 6,
                explanation: SuspectExplanation {
                    summary: "slow with 2 of 2 partners: up to 3.1× the baseline".into(),
                    evidence: vec!["h0 ↔ h2: slow".into()],
                    fix: "look at h2".into(),
                },
            }],
            verdict: "1 suspect(s): h2 rxe2 (rank 2): slow with 2 of 2 partners".into(),
            ok: false,
            tally: PairTally::default(),
        }
        .tallied()
    }

    impl FabricReport {
        fn tallied(mut self) -> FabricReport {
            self.tally = PairTally::of_rows(&self.pairs);
            self
        }
    }

    #[test]
    fn text_has_the_matrix_suspect_and_verdict() {
        let t = text(
            &report(),
            Style {
                color: false,
                width: None,
            },
        );
        assert!(
            t.contains("baseline: 100.0 µs/iter, 900 Mbit/s (the median over 3 endpoints)"),
            "{t}"
        );
        assert!(t.contains("  0 h0 rxe0      -   1.0   3.0\n"), "{t}");
        assert!(t.contains("  2 h2 rxe2    3.0   3.1     -\n"), "{t}");
        assert!(
            t.contains(
                "FAIL  fabric-endpoint-slow  h2 rxe2/1 (rank 2): slow with 2 of 2 partners; consistent: bad in all 6 runs of its pairs\n"
            ),
            "{t}"
        );
        assert!(
            t.contains("        why:  slow with 2 of 2 partners: up to 3.1× the baseline\n"),
            "{t}"
        );
        assert!(t.contains("        seen: h0 ↔ h2: slow\n"), "{t}");
        assert!(
            t.ends_with("verdict: 1 suspect(s): h2 rxe2 (rank 2): slow with 2 of 2 partners\n"),
            "{t}"
        );
        let coloured = text(
            &report(),
            Style {
                color: true,
                width: None,
            },
        );
        assert!(coloured.contains("\u{1b}["));
    }

    /// Issue 26 case 13: the verdict names both ends of a pair with their devices.
    #[test]
    fn the_verdict_names_both_ends_devices_and_an_interruption() {
        let mut r = report();
        r.suspects[0].kind = SuspectKind::Pair;
        r.suspects[0].rank = Some(0);
        r.suspects[0].host = Some("fabvm".into());
        r.suspects[0].device = Some("fab0".into());
        r.suspects[0].peer_rank = Some(1);
        r.suspects[0].peer_host = Some("fabvm".into());
        r.suspects[0].peer_device = Some("fab1".into());
        let v = verdict_line(&r.suspects, &[], &r.tally, &r.baseline, &r.ranks, None);
        assert!(
            v.starts_with("1 suspect(s): fabvm fab0 (rank 0) ↔ fabvm fab1 (rank 1): one of the two, or the link"),
            "{v}"
        );
        let mut pairs = r.pairs;
        pairs[2].state = PairState::NotRun;
        pairs[2].ok = false;
        let tally = PairTally::of_rows(&pairs);
        let v = verdict_line(&[], &[], &tally, &r.baseline, &r.ranks, Some((2, 0)));
        assert!(
            v.starts_with("interrupted by SIGINT on rank 0 after 2 of 3 pairs; 1 of 3 pairs bad; 1 of 3 pairs not run"),
            "{v}"
        );
        let tally = PairTally::of_rows(&pairs[..1]);
        let v = verdict_line(&[], &[], &tally, &r.baseline, &r.ranks, Some((15, 3)));
        assert!(
            v.starts_with("interrupted by SIGTERM on rank 3 after 1 of 1 pairs"),
            "{v}"
        );
        assert!(!v.starts_with("clean"), "{v}");
    }

    #[test]
    fn a_moved_pair_port_names_who_holds_it() {
        let me = RankInfo {
            rank: 1,
            host: "fabvm".into(),
            device: "fab1".into(),
            port: 1,
            ..RankInfo::default()
        };
        let line = port_moved_line(&me, &[(19001, Some((4242, "rdmactl".into())))], 19005);
        assert_eq!(
            line,
            "rdmactl: rank 1 (fabvm fab1/1): TCP port 19001 is held by rdmactl (pid 4242): another fabric run on this host; this pair test listens on TCP port 19005 instead\n"
        );
        assert!(no_free_port(&me, &[(19001, None)]).contains("another user's"));
    }

    /// A large run's report holds only its bad pairs: the text summarises endpoints from
    /// the tally (the worst 64, then a count), the SVG draws blocks, and both say so.
    #[test]
    fn a_large_fabric_is_summarised_and_drawn_in_blocks() {
        let mut r = report();
        r.ranks = (0..1000)
            .map(|k| RankRow {
                info: RankInfo {
                    rank: k,
                    host: format!("h{k}"),
                    ..RankInfo::default()
                },
                status: "joined",
            })
            .collect();
        let mut tally = PairTally::default();
        for a in 0..1000u32 {
            for b in (a + 1)..1000 {
                let bad = b >= 900 && a < 100;
                tally.add(
                    a,
                    b,
                    if bad { PairState::Slow } else { PairState::Ok },
                    false,
                );
            }
        }
        r.tally = tally;
        r.pairs = vec![];
        let t = text(
            &r,
            Style {
                color: false,
                width: None,
            },
        );
        assert!(
            t.contains("matrix: 1000 endpoints, 499500 pairs; endpoints with a bad pair"),
            "{t}"
        );
        assert!(
            t.lines()
                .any(|l| l.starts_with(" 10 h10 ") && l.ends_with("  100 of 999 pairs bad (S 100)")),
            "{t}"
        );
        // Ties go to the lower rank: ranks 900 on are counted, not listed.
        assert!(!t.contains("h950"), "{t}");
        assert!(
            t.contains("and 136 more endpoints with a bad pair (--csv lists every pair)\n"),
            "{t}"
        );
        assert!(t.lines().count() < 100, "{t}");
        r.pairs = report().pairs;
        let s = svg(&r);
        assert!(s.contains("1000 endpoints in blocks of 4"), "{s}");
        assert_eq!(s.matches("<rect").count(), 250 * 250);
        // The block of ranks 0-3 holds the slow pairs listed.
        assert!(
            s.contains("fill=\"#ff9800\"><title>ranks 0-3 × 0-3</title>"),
            "{s}"
        );
    }

    #[test]
    fn json_has_the_documented_shape() {
        let json = serde_json::to_value(report()).unwrap();
        let shape = crate::json_schema::mismatches("fabric", &json);
        assert!(shape.is_empty(), "{shape:#?}\n{json}");
    }

    #[test]
    fn csv_quotes_and_svg_escapes() {
        let r = report();
        let c: String = std::iter::once(CSV_HEADER.to_string())
            .chain(r.pairs.iter().map(|p| {
                let (ha, hb) = (format!("h{}", p.a), format!("h{}", p.b));
                let (da, db) = (format!("rxe{}", p.a), format!("rxe{}", p.b));
                csv_line(p, [&ha, &da, &hb, &db])
            }))
            .collect();
        let lines: Vec<&str> = c.lines().collect();
        assert_eq!(lines.len(), 4);
        assert!(
            lines[2].starts_with("0,h0,rxe0,2,h2,rxe2,1,slow,300.000,900.000,3.000,1.000,,true,,"),
            "{}",
            lines[2]
        );
        assert!(
            lines[2].ends_with(",\"3.0× the baseline, \"\"odd\"\"\""),
            "{}",
            lines[2]
        );
        let s = svg(&report());
        assert!(s.starts_with("<svg"));
        assert_eq!(s.matches("<rect").count(), 9);
        assert!(s.contains("fill=\"#ff9800\""));
        assert!(s.contains("&quot;odd&quot;"));
    }
}
