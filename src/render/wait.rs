//! `rdmactl wait`: the ports it waited for, and on a timeout why each is not ACTIVE.

use serde::Serialize;

use crate::diagnose::wait::{PortWaited, Watched};
use crate::model::diagnostic::Diagnostic;
use crate::output::Style;
use crate::render::diagnostic::{self as render, Evidence};

#[derive(Debug, Serialize)]
pub struct WaitReport {
    pub ok: bool,
    #[serde(serialize_with = "crate::model::rounding::ser_3dp")]
    pub waited_s: f64,
    pub timeout_s: f64,
    pub ports: Vec<PortWaited>,
    pub missing: Vec<String>,
    #[serde(serialize_with = "crate::model::diagnostic::json::findings")]
    pub findings: Vec<Diagnostic>,
}

impl WaitReport {
    pub fn new(watched: Watched, findings: Vec<Diagnostic>, waited_s: f64, timeout_s: f64) -> Self {
        WaitReport {
            ok: watched.ready(),
            waited_s,
            timeout_s,
            ports: watched.ports,
            missing: watched.missing,
            findings,
        }
    }
}

/// `2 port(s) ACTIVE after 1.4 s: rxe0/1, rxe1/1`, or why not with doctor's lines.
pub fn text(report: &WaitReport, style: Style) -> String {
    let names = |active: bool| {
        report
            .ports
            .iter()
            .filter(|p| p.active == active)
            .map(|p| format!("{}/{}", p.device, p.port))
            .collect::<Vec<_>>()
    };
    if report.ok {
        return format!(
            "{} port(s) ACTIVE after {:.1} s: {}\n",
            report.ports.len(),
            report.waited_s,
            names(true).join(", ")
        );
    }
    let waiting = names(false).len() + report.missing.len();
    format!(
        "gave up after {:.1} s: {waiting} of {} port(s) not ACTIVE\n{}",
        report.waited_s,
        report.ports.len() + report.missing.len(),
        render::lines(&report.findings, style, Evidence::Problems)
    )
}

/// The progress line (stderr, on a terminal): what is still awaited.
pub fn progress(watched: &Watched, elapsed: f64, timeout: f64) -> String {
    format!(
        "wait: {:.0}/{timeout:.0} s: {}\n",
        elapsed,
        awaited(watched).join(", ")
    )
}

/// The one line a wait off a terminal starts with (a boot's journal shows it at once).
pub fn started(watched: &Watched, timeout: f64) -> String {
    format!(
        "rdmactl: waiting up to {timeout} s for {}\n",
        awaited(watched).join(", ")
    )
}

/// What is not there or not ACTIVE yet: `mlx5_0 (absent)`, `rxe1/1 DOWN (DISABLED)`.
fn awaited(watched: &Watched) -> Vec<String> {
    let mut waiting: Vec<String> = watched
        .missing
        .iter()
        .map(|m| format!("{m} (absent)"))
        .collect();
    waiting.extend(
        watched
            .ports
            .iter()
            .filter(|p| !p.active)
            .map(PortWaited::label),
    );
    waiting
}
