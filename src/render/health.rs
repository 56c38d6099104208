//! `doctor --format nagios|nhc|junit`: the report as health-check frameworks read it.
//! Nagios: one status line with perfdata, then the problems as long output. NHC (and the
//! Slurm script): one short drain reason. JUnit: one testcase per finding.

use crate::model::device::PortState;
use crate::model::diagnostic::{Diagnostic, Severity, Subject};
use crate::model::doctor::DoctorFacts;
use crate::render::doctor::DoctorReport;

/// A drain reason stays within this many characters: `sinfo -R` shows 20 columns of it by
/// default and node lists show it on one line, so the subject and the code come first and
/// the rest of the message stays in `rdmactl doctor`'s own report.
pub const REASON_MAX: usize = 60;

/// The NHC reason when doctor could not run at all (the error itself goes to stderr: it
/// names a file and a line, too long for a drain reason).
pub const NOT_RUN: &str = "rdmactl: check failed to run; see rdmactl doctor";

/// The problems (warnings and failures) worst first and, among equals, the most specific
/// first (a port's before a device's before the host's), otherwise in doctor's order: what
/// a status line or a drain reason shows first is what to look at first.
fn worst_first(findings: &[Diagnostic], at_least: Severity) -> Vec<&Diagnostic> {
    let mut problems: Vec<&Diagnostic> =
        findings.iter().filter(|f| f.severity >= at_least).collect();
    let specificity = |f: &Diagnostic| match &f.subject {
        Some(Subject::Port(..) | Subject::GidIndex(..)) => 0,
        Some(Subject::Host) | None => 2,
        Some(_) => 1,
    };
    problems.sort_by_key(|f| (std::cmp::Reverse(f.severity), specificity(f)));
    problems
}

/// `rdmactl: rxe0/1 port-state`, and `(+N more)` when other checks failed too; None when
/// nothing failed. The port comes before the code, so `sinfo -R`'s 20 columns show which
/// port. The same words on every run of the same fault, so the Slurm script can tell its
/// own drain from an admin's and does not re-drain for a changed figure.
pub fn reason(findings: &[Diagnostic]) -> Option<String> {
    let failed = worst_first(findings, Severity::Fail);
    let first = failed.first()?;
    let more = match failed.len() - 1 {
        0 => String::new(),
        n => format!(" (+{n} more)"),
    };
    let label = first.label();
    let mut line = "rdmactl: ".to_string();
    if !label.is_empty() {
        line.push_str(&label);
        line.push(' ');
    }
    line.push_str(first.code.as_str());
    // One line, plain ASCII: a drain reason is passed on a command line and printed in
    // fixed-width lists.
    line.retain(|c| c.is_ascii_graphic() || c == ' ');
    let room = REASON_MAX - more.len();
    if line.len() > room {
        line.truncate(room - 3);
        line.push_str("...");
    }
    Some(line + &more)
}

/// `nhc`: nothing when no check failed (warnings do not drain a node), else the reason.
pub fn nhc(report: &DoctorReport) -> String {
    reason(&report.findings).unwrap_or_default()
}

/// The Nagios state of a report: CRITICAL when a check failed, WARNING when one warned.
pub fn nagios_state(report: &DoctorReport) -> (&'static str, u8) {
    use crate::exit::nagios;
    if report.fail > 0 {
        ("CRITICAL", nagios::CRITICAL)
    } else if report.warn > 0 {
        ("WARNING", nagios::WARNING)
    } else {
        ("OK", nagios::OK)
    }
}

/// Nagios plugin output: `RDMACTL STATE - summary | perfdata`, then one line per problem
/// (the long output Nagios shows under the status).
pub fn nagios(report: &DoctorReport, facts: &DoctorFacts) -> String {
    let (state, _) = nagios_state(report);
    let ports: Vec<_> = facts.devices.iter().flat_map(|d| &d.ports).collect();
    let active = ports
        .iter()
        .filter(|p| p.state == Some(PortState::Active))
        .count();
    // The status line names the worst problem: a CRITICAL never carries a warning's text.
    let problems = worst_first(&report.findings, Severity::Warn);
    let summary = match problems.first() {
        None => format!(
            "{active} of {} port(s) ACTIVE, {} check(s) passed",
            ports.len(),
            report.ok
        ),
        Some(first) => {
            let more = match problems.len() - 1 {
                0 => String::new(),
                n => format!(" (+{n} more)"),
            };
            format!("{}{more}", one_problem(first))
        }
    };
    let perf = format!(
        "ports_active={active};;;0;{total} ports={total};;;0 failures={};;;0 warnings={};;;0 ok={};;;0",
        report.fail,
        report.warn,
        report.ok,
        total = ports.len()
    );
    let mut out = format!("RDMACTL {state} - {} | {perf}\n", nagios_text(&summary));
    for p in &problems {
        out.push_str(&nagios_text(&format!(
            "{} {}",
            p.severity.label(),
            one_problem(p)
        )));
        out.push('\n');
    }
    out
}

/// `UNKNOWN`: the check itself could not run (a manifest that does not parse).
pub fn nagios_unknown(why: &str) -> String {
    format!("RDMACTL UNKNOWN - {}\n", nagios_text(why))
}

fn one_problem(f: &Diagnostic) -> String {
    let label = f.label();
    if label.is_empty() {
        format!("{}: {}", f.code.as_str(), f.message)
    } else {
        format!("{} {label}: {}", f.code.as_str(), f.message)
    }
}

/// `|` starts the perfdata in Nagios output, so it cannot appear in the text; one line.
fn nagios_text(s: &str) -> String {
    s.replace('|', "/").replace('\n', " ")
}

/// Where and when a JUnit report ran: the `<testsuite>`'s `hostname` and `timestamp`
/// (the JUnit schema's attributes), gathered by the command so rendering stays pure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JunitRun {
    /// The host's name; `localhost` when it could not be read.
    pub hostname: Option<String>,
    /// Seconds since the Unix epoch.
    pub unix_secs: u64,
}

impl JunitRun {
    fn suite_attributes(&self) -> String {
        format!(
            "hostname=\"{}\" timestamp=\"{}\"",
            xml(self.hostname.as_deref().unwrap_or("localhost")),
            iso8601_utc(self.unix_secs)
        )
    }
}

/// `2026-11-28T08:51:18`, UTC: the JUnit schema's timestamp is an ISO 8601 date and time
/// without a zone. Days to a civil date by the proleptic Gregorian calendar's 400-year
/// cycle (146097 days), counted from 0000-03-01 so the leap day ends a year.
fn iso8601_utc(unix_secs: u64) -> String {
    let days = (unix_secs / 86_400) as i64;
    let secs = unix_secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

/// JUnit XML: one testsuite, one testcase per finding; a failed finding is a `<failure>`
/// with its message and the evidence and fix as text; a warning passes with a
/// `<system-out>` (JUnit has no warning state, and a CI gate on warnings would fail
/// hosts that work).
pub fn junit(report: &DoctorReport, run: &JunitRun) -> String {
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let tests = report.findings.len();
    out.push_str(&format!(
        "<testsuites name=\"rdmactl\" tests=\"{tests}\" failures=\"{}\" errors=\"0\">\n",
        report.fail
    ));
    out.push_str(&format!(
        "  <testsuite name=\"rdmactl doctor\" tests=\"{tests}\" failures=\"{}\" errors=\"0\" skipped=\"0\" {}>\n",
        report.fail,
        run.suite_attributes()
    ));
    for f in &report.findings {
        let label = f.label();
        let name = if label.is_empty() {
            f.code.to_string()
        } else {
            format!("{} {label}", f.code.as_str())
        };
        out.push_str(&format!(
            "    <testcase classname=\"rdmactl.doctor.{}\" name=\"{}\">",
            xml(f.code.as_str()),
            xml(&name)
        ));
        let mut body = String::new();
        for e in &f.evidence {
            body.push_str(&format!("evidence: {}\n", e.text));
        }
        if let Some(fix) = &f.fix {
            body.push_str(&format!("fix: {fix}\n"));
        }
        match f.severity {
            Severity::Fail => out.push_str(&format!(
                "\n      <failure type=\"{}\" message=\"{}\">{}</failure>\n    ",
                xml(f.code.as_str()),
                xml(&f.message),
                xml(&body)
            )),
            Severity::Warn | Severity::Info => out.push_str(&format!(
                "\n      <system-out>{}: {}\n{}</system-out>\n    ",
                f.severity.label(),
                xml(&f.message),
                xml(&body)
            )),
            Severity::Ok => {}
        }
        out.push_str("</testcase>\n");
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

/// JUnit XML for a check that could not run (a manifest that does not parse): one
/// `<error>` testcase with the reason, so a CI gate reading the XML sees it, not only
/// stderr.
pub fn junit_error(why: &str, run: &JunitRun) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <testsuites name=\"rdmactl\" tests=\"1\" failures=\"0\" errors=\"1\">\n\
         \x20 <testsuite name=\"rdmactl doctor\" tests=\"1\" failures=\"0\" errors=\"1\" skipped=\"0\" {}>\n\
         \x20   <testcase classname=\"rdmactl.doctor\" name=\"doctor\">\n\
         \x20     <error type=\"check-not-run\" message=\"{}\">{}\n</error>\n\
         \x20   </testcase>\n\
         \x20 </testsuite>\n\
         </testsuites>\n",
        run.suite_attributes(),
        xml(&why.replace('\n', " ")),
        xml(why)
    )
}

/// Text as XML character data or an attribute value: the five markup characters escaped,
/// and the control characters XML 1.0 forbids (all below 0x20 but tab, newline and
/// carriage return) dropped, since no escape can carry them.
fn xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::codes;
    use crate::model::diagnostic::Subject;

    fn fail(code: crate::model::codes::Code, subject: Subject, message: &str) -> Diagnostic {
        Diagnostic::finding(Severity::Fail, code, message).about(subject)
    }

    #[test]
    fn the_reason_is_one_short_line_with_the_code_and_subject() {
        let ok = Diagnostic::finding(Severity::Ok, codes::KERNEL, "fine").about(Subject::Host);
        assert_eq!(reason(std::slice::from_ref(&ok)), None);
        let down = fail(
            codes::PORT_STATE,
            Subject::Port("mlx5_2".into(), 1),
            "port is DOWN: a RoCE port follows its netdev,\nso x has no link",
        );
        // The port first: `sinfo -R` shows 20 columns, "rdmactl: mlx5_2/1 po".
        assert_eq!(
            reason(&[ok.clone(), down.clone()]).unwrap(),
            "rdmactl: mlx5_2/1 port-state"
        );
        let mem = fail(codes::EXPECT_MEMLOCK, Subject::Host, "memlock 64 KiB");
        // The port's failure before the host's, whatever doctor's order.
        assert_eq!(
            reason(&[mem.clone(), down, mem]).unwrap(),
            "rdmactl: mlx5_2/1 port-state (+2 more)"
        );
        let long = fail(
            codes::EXPECT_DEVICE,
            Subject::Other("a-very-long-device-name-that-goes-on-and-on/12".into()),
            "m",
        );
        let r = reason(&[long.clone(), long]).unwrap();
        assert!(r.len() <= REASON_MAX && r.ends_with("... (+1 more)"), "{r}");
        assert!(!r.contains('\n'));
    }

    #[test]
    fn junit_escapes_markup_and_drops_what_xml_cannot_hold() {
        assert_eq!(
            xml("a<b & \"c\" 'd'>\u{1}\te"),
            "a&lt;b &amp; &quot;c&quot; &apos;d&apos;&gt;\te"
        );
        let report = DoctorReport::from(vec![
            fail(
                codes::MTU,
                Subject::Port("rxe0".into(), 1),
                "MTU <1500> & \"more\"",
            )
            .evidence("mtu 1500")
            .fix("ip link set eth0 mtu 9000"),
            Diagnostic::finding(Severity::Ok, codes::KERNEL, "ok").about(Subject::Host),
        ]);
        let run = JunitRun {
            hostname: Some("node<1>".into()),
            unix_secs: 1_795_855_878,
        };
        let x = junit(&report, &run);
        assert!(x.contains("tests=\"2\" failures=\"1\""), "{x}");
        assert!(
            x.contains(
                "skipped=\"0\" hostname=\"node&lt;1&gt;\" timestamp=\"2026-11-28T08:51:18\">"
            ),
            "{x}"
        );
        assert!(x.contains("<failure type=\"mtu\" message=\"MTU &lt;1500&gt; &amp; &quot;more&quot;\">evidence: mtu 1500\nfix: ip link set eth0 mtu 9000\n</failure>"), "{x}");
        assert!(
            x.contains(
                "<testcase classname=\"rdmactl.doctor.kernel\" name=\"kernel host\"></testcase>"
            ),
            "{x}"
        );
    }

    #[test]
    fn junit_timestamps_are_utc_civil_dates() {
        assert_eq!(iso8601_utc(0), "1970-01-01T00:00:00");
        // A leap day, and the last second of a century's leap year.
        assert_eq!(iso8601_utc(951_782_400), "2000-02-29T00:00:00");
        assert_eq!(iso8601_utc(978_307_199), "2000-12-31T23:59:59");
        assert_eq!(iso8601_utc(4_107_542_400), "2100-03-01T00:00:00");
    }

    #[test]
    fn a_check_that_could_not_run_is_a_junit_error() {
        let run = JunitRun {
            hostname: None,
            unix_secs: 0,
        };
        let x = junit_error("--expect bad.toml: line 3: unknown key \"speed\"", &run);
        assert!(x.contains("errors=\"1\""), "{x}");
        assert!(
            x.contains("hostname=\"localhost\" timestamp=\"1970-01-01T00:00:00\""),
            "{x}"
        );
        assert!(
            x.contains("<error type=\"check-not-run\" message=\"--expect bad.toml: line 3: unknown key &quot;speed&quot;\">"),
            "{x}"
        );
    }

    /// The status line of a CRITICAL names a failure, never a warning listed before it.
    #[test]
    fn nagios_headlines_the_worst_problem() {
        let warn = Diagnostic::finding(Severity::Warn, codes::MTU, "netdev MTU 1500")
            .about(Subject::Port("rxe0".into(), 1));
        let down = fail(
            codes::PORT_STATE,
            Subject::Port("rxe1".into(), 1),
            "rxe1/1 is DOWN",
        );
        let report = DoctorReport::from(vec![warn, down]);
        let out = nagios(&report, &DoctorFacts::default());
        let lines: Vec<&str> = out.lines().collect();
        assert!(
            lines[0]
                .starts_with("RDMACTL CRITICAL - port-state rxe1/1: rxe1/1 is DOWN (+1 more) |"),
            "{out}"
        );
        assert_eq!(lines[1], "FAIL port-state rxe1/1: rxe1/1 is DOWN", "{out}");
        assert_eq!(lines[2], "warn mtu rxe0/1: netdev MTU 1500", "{out}");
    }

    #[test]
    fn nagios_text_keeps_the_perfdata_separator_its_own() {
        let report = DoctorReport::from(vec![fail(
            codes::NETDEV,
            Subject::Port("rxe0".into(), 1),
            "a | b",
        )]);
        let out = nagios(&report, &DoctorFacts::default());
        let first = out.lines().next().unwrap();
        assert_eq!(first.matches('|').count(), 1, "{out}");
        assert!(first.starts_with("RDMACTL CRITICAL - netdev rxe0/1: a / b | ports_active=0;;;0;0 ports=0;;;0 failures=1;;;0"), "{out}");
        assert_eq!(nagios_state(&report).1, 2);
    }
}
