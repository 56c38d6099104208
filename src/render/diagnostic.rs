//! Diagnostics as text, in the two layouts a person reads top to bottom:
//! - finding lines (doctor, check, counters, subnet): severity, code, subject, message, then
//!   the evidence and the fix indented beneath;
//! - a why/seen/fix block (a failed pingpong or selftest step, a fabric suspect): why it
//!   happened, what was seen in this run, and the fix.
//!
//! Every command prints its diagnostics through here, so one problem reads the same wherever
//! it shows up. JSON is the other rendering: the shapes of `model::diagnostic::json`.

use owo_colors::OwoColorize;

use crate::model::diagnostic::{Diagnostic, Severity};
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

/// One block per diagnostic; the subject column is left out when none has a subject.
pub fn lines(diagnostics: &[Diagnostic], style: Style, evidence: Evidence) -> String {
    let mut out = String::new();
    block(&mut out, diagnostics, style, evidence, "");
    out
}

/// `lines`, each line at `indent` (a block under another report's line).
pub fn lines_at(
    diagnostics: &[Diagnostic],
    style: Style,
    evidence: Evidence,
    indent: &str,
) -> String {
    let mut out = String::new();
    block(&mut out, diagnostics, style, evidence, indent);
    out
}

/// The finding lines at `indent`; related diagnostics go beneath their cause, indented.
///
/// With a width (COLUMNS, or the terminal's) every line fits it, so one long subject (a
/// 64-character node description in a link's name) cannot widen every line. When the
/// widest subject leaves the message too little room beside it, the message moves to its
/// own line under the finding line (as the evidence does) and the subject gets the rest of
/// the line, wrapping under itself where even that is too narrow: a link's subject names
/// both ends, and a `+` cut as a table cuts a cell would lose the far one. The message,
/// evidence and fix are prose and wrap at words under where they start, so no word is lost.
/// Without a width (a pipe) every line is whole.
fn block(
    out: &mut String,
    diagnostics: &[Diagnostic],
    style: Style,
    evidence: Evidence,
    indent: &str,
) {
    /// The least room a message keeps beside the subject before it moves beneath.
    const MESSAGE_MIN: usize = 30;
    let code_width = diagnostics.iter().map(|d| d.code.len()).max().unwrap_or(0);
    let labels: Vec<String> = diagnostics.iter().map(Diagnostic::label).collect();
    let subject_width = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    // Severity (4) and the gaps before the code and the subject.
    let before_subject = indent.chars().count() + 4 + 2 + code_width + 2;
    let below = format!("{indent}        ");
    let stacked = style
        .width
        .is_some_and(|limit| before_subject + subject_width + 2 + MESSAGE_MIN > limit);
    for (d, label) in diagnostics.iter().zip(&labels) {
        let mut head = format!(
            "{indent}{}  {:<code_width$}",
            severity_label(d.severity, style),
            d.code.as_str()
        );
        if stacked {
            if subject_width > 0 {
                head.push_str(&format!("  {label}"));
            }
            out.push_str(&wrapped(head.trim_end(), style.width, before_subject));
            out.push_str(&wrapped(
                &format!("{below}{}", d.message),
                style.width,
                below.len(),
            ));
        } else {
            if subject_width > 0 {
                head.push_str(&format!("  {label:<subject_width$}"));
            }
            head.push_str("  ");
            let at = before_subject
                + if subject_width > 0 {
                    subject_width + 2
                } else {
                    0
                };
            let message = wrapped(&format!("{}{}", " ".repeat(at), d.message), style.width, at);
            out.push_str(&head);
            out.push_str(message.trim_start());
        }
        let detail = |label: &str, text: &str| {
            let first = format!("{below}{label}: ");
            wrapped(
                &format!("{first}{text}"),
                style.width,
                first.chars().count(),
            )
        };
        if evidence == Evidence::All || d.severity != Severity::Ok {
            for line in &d.evidence {
                out.push_str(&detail("evidence", &line.to_string()));
            }
        }
        if let Some(fix) = d.fix.as_deref().filter(|f| !f.is_empty()) {
            out.push_str(&detail("fix", fix));
        }
        if !d.related.is_empty() {
            block(out, &d.related, style, evidence, &format!("{indent}      "));
        }
    }
}

/// `text` (its own leading spaces included) as lines of at most `width` characters, the
/// lines after the first indented by `hang`; whole on one line without a width, or where
/// the width leaves the hang no room. Ends with a newline.
pub fn wrapped(text: &str, width: Option<usize>, hang: usize) -> String {
    let Some(width) = width.filter(|w| *w >= hang + 20) else {
        return format!("{text}\n");
    };
    let hang = " ".repeat(hang);
    // Never at a hyphen: a flag (`--reset-counters`) or a code split there could not be
    // copied back whole.
    let options = textwrap::Options::new(width)
        .subsequent_indent(&hang)
        .word_splitter(textwrap::WordSplitter::NoHyphenation);
    let mut out = String::new();
    for line in textwrap::wrap(text, options) {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// `5 ok, 1 warning(s), 0 failure(s)` (informational findings counted only when present).
pub fn tally(diagnostics: &[Diagnostic]) -> String {
    let count = |s| diagnostics.iter().filter(|d| d.severity == s).count();
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

/// The worst severity among the diagnostics (ok when there are none).
pub fn worst(diagnostics: &[Diagnostic]) -> Severity {
    diagnostics
        .iter()
        .map(|d| d.severity)
        .max()
        .unwrap_or(Severity::Ok)
}

/// `why:`, `seen:` and `fix:` lines, indented by `indent`; each related diagnostic follows
/// as its own block, introduced by `and:` and its code.
/// A diagnostic with no fix has no `fix:` line.
pub fn body(d: &Diagnostic, indent: &str) -> String {
    let mut out = format!("{indent}  why:  {}\n", d.message);
    for e in &d.evidence {
        out.push_str(&format!("{indent}  seen: {e}\n"));
    }
    if let Some(fix) = &d.fix {
        out.push_str(&format!("{indent}  fix:  {fix}\n"));
    }
    for r in &d.related {
        out.push_str(&format!("{indent}  and:  {}\n", r.code));
        out.push_str(&body(r, &format!("{indent}    ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::diagnostic::{Diagnostic, FailureReport, Seen, Source, Subject};
    use crate::model::failure::{Cause, Failure, FailureContext, Step};

    #[test]
    fn columns_evidence_and_tally() {
        let findings = vec![
            Diagnostic::finding(Severity::Ok, "port-state".into(), "port is ACTIVE")
                .about(Subject::Port("rxe0".into(), 1))
                .evidence("state ACTIVE"),
            Diagnostic::finding(Severity::Fail, "memlock".into(), "limit 16 KiB")
                .about(Subject::Host)
                .evidence("RLIMIT_MEMLOCK 16 KiB")
                .fix("ulimit -l unlimited"),
            Diagnostic::finding(Severity::Info, "neighbour".into(), "no entry yet"),
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

    #[test]
    fn related_diagnostics_sit_under_their_cause() {
        let mut cause = Diagnostic::new(Severity::Fail, "port-state".into(), "port is DOWN")
            .about(Subject::Port("rxe0".into(), 1))
            .fix("ip link set eth0 up");
        cause.related.push(
            Diagnostic::new(Severity::Warn, "neighbour".into(), "no entry")
                .seen(Seen::new(Source::Route, "neighbour FAILED")),
        );
        assert_eq!(
            lines(&[cause.clone()], Style::plain(), Evidence::Problems),
            "FAIL  port-state  rxe0/1  port is DOWN\n        fix: ip link set eth0 up\n\
             \x20     warn  neighbour  no entry\n              evidence: neighbour FAILED\n"
        );
        assert_eq!(
            body(&cause, ""),
            "  why:  port is DOWN\n  fix:  ip link set eth0 up\n  and:  neighbour\n\
             \x20     why:  no entry\n      seen: neighbour FAILED\n"
        );
    }

    #[test]
    fn one_block_with_aligned_labels() {
        let failure = Failure::new(
            Step::Rtr,
            Cause::errno(libc::ETIMEDOUT),
            FailureContext {
                device: "rxe0".into(),
                port: 1,
                gid_index: Some(1),
                ..FailureContext::default()
            },
        );
        let mut x =
            Diagnostic::explanation("no-neighbour".into(), "no ARP reply", "check the peer");
        x.evidence
            .push(Seen::new(Source::Route, "neighbour FAILED"));
        let r = FailureReport::new(&failure, x);
        assert_eq!(
            r.message,
            "modify QP to RTR failed (rxe0/1, GID index 1): ETIMEDOUT (110: Connection timed out)"
        );
        assert_eq!(
            body(&r.explanation, ""),
            "  why:  no ARP reply\n  seen: neighbour FAILED\n  fix:  check the peer\n"
        );
    }
}
