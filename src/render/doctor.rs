//! `doctor`'s report: every finding with the tally, as text and as JSON.

use serde::Serialize;

use crate::model::diagnostic::{Diagnostic, Severity};
use crate::output::Style;
use crate::render::diagnostic::{self as render, Evidence};

#[derive(Debug, Serialize)]
pub struct DoctorReport {
    #[serde(serialize_with = "crate::model::diagnostic::json::findings")]
    pub findings: Vec<Diagnostic>,
    pub ok: usize,
    pub info: usize,
    pub warn: usize,
    pub fail: usize,
}

impl From<Vec<Diagnostic>> for DoctorReport {
    fn from(findings: Vec<Diagnostic>) -> DoctorReport {
        let count = |v| findings.iter().filter(|f| f.severity == v).count();
        DoctorReport {
            ok: count(Severity::Ok),
            info: count(Severity::Info),
            warn: count(Severity::Warn),
            fail: count(Severity::Fail),
            findings,
        }
    }
}

/// The findings, evidence only where something is wrong, then the tally.
pub fn text(report: &DoctorReport, style: Style) -> String {
    format!(
        "{}{}",
        render::lines(&report.findings, style, Evidence::Problems),
        render::tally(&report.findings)
    )
}
