//! Doctor findings as lines a person reads top to bottom: verdict, subject, summary, then
//! the evidence and the fix indented beneath.

use owo_colors::OwoColorize;

use crate::doctor::{Finding, Verdict};
use crate::output::Style;

pub fn verdict_label(verdict: Verdict, style: Style) -> String {
    let text = match verdict {
        Verdict::Ok => "ok  ",
        Verdict::Warn => "warn",
        Verdict::Fail => "FAIL",
    };
    if !style.color {
        return text.to_string();
    }
    match verdict {
        Verdict::Ok => text.green().to_string(),
        Verdict::Warn => text.yellow().to_string(),
        Verdict::Fail => text.red().bold().to_string(),
    }
}

pub fn report(findings: &[Finding], style: Style) -> String {
    let subject_width = findings.iter().map(|f| f.subject.len()).max().unwrap_or(0);
    let check_width = findings.iter().map(|f| f.check.len()).max().unwrap_or(0);
    let mut out = String::new();
    for f in findings {
        out.push_str(&format!(
            "{}  {:<check_width$}  {:<subject_width$}  {}\n",
            verdict_label(f.verdict, style),
            f.check,
            f.subject,
            f.summary
        ));
        // Evidence for an ok check is noise at 3 a.m.; show it where something is wrong.
        if f.verdict != Verdict::Ok {
            for line in &f.evidence {
                out.push_str(&format!("        evidence: {line}\n"));
            }
        }
        if let Some(fix) = &f.fix {
            out.push_str(&format!("        fix: {fix}\n"));
        }
    }
    let count = |v| findings.iter().filter(|f| f.verdict == v).count();
    out.push_str(&format!(
        "{} ok, {} warning(s), {} failure(s)\n",
        count(Verdict::Ok),
        count(Verdict::Warn),
        count(Verdict::Fail)
    ));
    out
}
