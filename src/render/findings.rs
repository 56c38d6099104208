//! Findings as lines a person reads top to bottom: severity, code, subject, message, then
//! the evidence and the fix indented beneath. doctor, check, pingpong and selftest all print
//! their findings through here, so one problem reads the same wherever it shows up.

use owo_colors::OwoColorize;

use crate::model::diagnostic::{Finding, Severity};
use crate::output::Style;

/// Which findings show their evidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Evidence {
    /// Only findings that are not ok: a host-wide survey where an ok line's evidence is
    /// noise at 3 a.m. (doctor).
    Problems,
    /// Every finding: a question about one GID, where the evidence is the answer (check).
    All,
}

/// `ok  `, `info`, `warn`, `FAIL`: four columns, coloured when the style allows.
pub fn severity_label(severity: Severity, style: Style) -> String {
    let text = format!("{:<4}", severity.label());
    if !style.color {
        return text;
    }
    match severity {
        Severity::Ok => text.green().to_string(),
        Severity::Info => text.blue().to_string(),
        Severity::Warn => text.yellow().to_string(),
        Severity::Fail => text.red().bold().to_string(),
    }
}

/// One block per finding; the subject column is left out when no finding has a subject.
pub fn lines(findings: &[Finding], style: Style, evidence: Evidence) -> String {
    let code_width = findings.iter().map(|f| f.code.len()).max().unwrap_or(0);
    let labels: Vec<String> = findings.iter().map(Finding::label).collect();
    let subject_width = labels.iter().map(String::len).max().unwrap_or(0);
    let mut out = String::new();
    for (f, label) in findings.iter().zip(&labels) {
        out.push_str(&severity_label(f.severity, style));
        out.push_str(&format!("  {:<code_width$}", f.code));
        if subject_width > 0 {
            out.push_str(&format!("  {label:<subject_width$}"));
        }
        out.push_str(&format!("  {}\n", f.message));
        if evidence == Evidence::All || f.severity != Severity::Ok {
            for line in &f.evidence {
                out.push_str(&format!("        evidence: {line}\n"));
            }
        }
        if let Some(fix) = f.fix.as_deref().filter(|f| !f.is_empty()) {
            out.push_str(&format!("        fix: {fix}\n"));
        }
    }
    out
}

/// `5 ok, 1 warning(s), 0 failure(s)` (informational findings counted only when present).
pub fn tally(findings: &[Finding]) -> String {
    let count = |s| findings.iter().filter(|f| f.severity == s).count();
    let info = match count(Severity::Info) {
        0 => String::new(),
        n => format!("{n} info, "),
    };
    format!(
        "{} ok, {info}{} warning(s), {} failure(s)",
        count(Severity::Ok),
        count(Severity::Warn),
        count(Severity::Fail)
    )
}

/// The worst severity among the findings (ok when there are none).
pub fn worst(findings: &[Finding]) -> Severity {
    findings
        .iter()
        .map(|f| f.severity)
        .max()
        .unwrap_or(Severity::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::diagnostic::Subject;

    #[test]
    fn columns_evidence_and_tally() {
        let findings = vec![
            Finding::new(Severity::Ok, "port-state", "port is ACTIVE")
                .about(Subject::Port("rxe0".into(), 1))
                .evidence("state ACTIVE"),
            Finding::new(Severity::Fail, "memlock", "limit 16 KiB")
                .about(Subject::Host)
                .evidence("RLIMIT_MEMLOCK 16 KiB")
                .fix("ulimit -l unlimited"),
            Finding::new(Severity::Info, "neighbour", "no entry yet"),
        ];
        let plain = Style::plain();
        let text = lines(&findings, plain, Evidence::Problems);
        assert_eq!(
            text,
            "ok    port-state  rxe0/1  port is ACTIVE\n\
             FAIL  memlock     host    limit 16 KiB\n        evidence: RLIMIT_MEMLOCK 16 KiB\n        fix: ulimit -l unlimited\n\
             info  neighbour           no entry yet\n"
        );
        let all = lines(&findings[..1], plain, Evidence::All);
        assert_eq!(
            all,
            "ok    port-state  rxe0/1  port is ACTIVE\n        evidence: state ACTIVE\n"
        );
        let no_subject = lines(&findings[2..], plain, Evidence::All);
        assert_eq!(no_subject, "info  neighbour  no entry yet\n");
        assert_eq!(tally(&findings), "1 ok, 1 info, 0 warning(s), 1 failure(s)");
        assert_eq!(tally(&findings[..2]), "1 ok, 0 warning(s), 1 failure(s)");
        assert_eq!(worst(&findings), Severity::Fail);
        assert_eq!(worst(&[]), Severity::Ok);
    }
}
