//! `selftest`'s text: one line per step (ok or FAIL, how long, what it found), a failed
//! step's explanation under it, the counters block, and the verdict.

use std::net::IpAddr;

use crate::model::results::{RunCounters, StepLine};
use crate::output::Style;

/// What the text report of a loopback shows, on either exchange.
pub struct SelftestView<'a> {
    pub device: Option<&'a str>,
    pub peer_device: Option<&'a str>,
    pub port: u32,
    /// `--cm`: the server's and the client's addresses.
    pub addresses: Option<(Option<IpAddr>, Option<IpAddr>)>,
    pub gid_index: Option<u32>,
    pub size: u32,
    pub steps: &'a [StepLine],
    pub counters: Option<&'a RunCounters>,
    /// The SIGINT or SIGTERM that stopped the test.
    pub signal: Option<i32>,
    pub ok: bool,
}

/// The text report of a loopback: `--cm`'s (it names the addresses) or the verbs one.
pub fn text(r: &SelftestView, style: Style) -> String {
    if r.addresses.is_some() {
        cm(r)
    } else {
        verbs(r, style)
    }
}

/// The text report of the verbs loopback.
fn verbs(r: &SelftestView, style: Style) -> String {
    let mut out = format!(
        "selftest {} port {} GID index {}, {} B\n",
        [r.device, r.peer_device]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(" <-> "),
        r.port,
        r.gid_index.map_or("?".to_string(), |i| i.to_string()),
        r.size
    );
    out.push_str(&step_lines(r.steps, 16));
    if let Some(c) = r.counters {
        out.push_str(&crate::render::pingpong::counters(c, style));
    }
    out.push_str(&verdict(
        r.ok,
        r.signal,
        r.steps.iter().filter(|s| s.ok).count(),
    ));
    out
}

/// `rxe0`, or `rxe0 <-> rxe1` when the two ends are on two devices.
fn ends(r: &SelftestView) -> String {
    match (r.device, r.peer_device) {
        (Some(a), Some(b)) if a != b => format!("{a} <-> {b}"),
        (a, b) => a.or(b).unwrap_or_default().to_string(),
    }
}

/// The text report of `selftest --cm`.
fn cm(r: &SelftestView) -> String {
    let at = |ip: Option<IpAddr>| ip.map_or("?".to_string(), |ip| ip.to_string());
    let (server_address, client_address) = r.addresses.unwrap_or_default();
    let mut out = format!(
        "selftest --cm {} port {}, {} -> {}, {} B; the kernel picks the GID{}\n",
        ends(r),
        r.port,
        at(client_address),
        at(server_address),
        r.size,
        r.gid_index
            .map(|i| format!(" (index {i})"))
            .unwrap_or_default()
    );
    out.push_str(&step_lines(r.steps, 25));
    out.push_str(&verdict(
        r.ok,
        r.signal,
        r.steps.iter().filter(|s| s.ok).count(),
    ));
    out
}

/// One line per step, on either exchange (`--cm` names the side that ran it), in a column
/// `width` wide, and a failed step's explanation under it. A failed step has no detail of
/// its own: its failure line says what went wrong ("open device failed (rxe0): EACCES").
fn step_lines(steps: &[StepLine], width: usize) -> String {
    let mut out = String::new();
    for s in steps {
        let status = if s.ok { "ok  " } else { "FAIL" };
        let step = match s.side {
            Some(side) => format!("{side} {}", s.step),
            None => s.step.clone(),
        };
        let detail = match &s.failure {
            Some(x) if s.detail.is_empty() => x.message.as_str(),
            _ => s.detail.as_str(),
        };
        out.push_str(&format!(
            "  {status} {:>9.3} ms  {step:<width$} {detail}\n",
            s.elapsed_us / 1000.0
        ));
        if let Some(x) = &s.failure {
            out.push_str(&crate::render::diagnostic::body(&x.explanation, "       "));
        }
    }
    out
}

/// The last line: a signal is named (never "all steps passed", never a bare "FAILED"), with
/// how far the test got.
fn verdict(ok: bool, signal: Option<i32>, passed: usize) -> String {
    let name = signal.map(crate::model::failure::signal_name);
    match name {
        Some(name) => format!(
            "interrupted by {name} ({}) after {passed} step{} passed; the steps above are all that ran\n",
            if name == "SIGINT" {
                "Ctrl-C"
            } else {
                "kill, or a job scheduler"
            },
            if passed == 1 { "" } else { "s" }
        ),
        None if ok => "all steps passed\n".to_string(),
        None => "FAILED\n".to_string(),
    }
}

/// A signal caught after the report was made: the test ran to its end, then was stopped.
pub fn interrupted_late(signal: i32) -> String {
    format!(
        "rdmactl: interrupted by {} after the report above was made\n",
        crate::model::failure::signal_name(signal)
    )
}

/// What `-g auto` chose for each device (each choice's own text), as notes on stderr.
pub fn gid_choices(choices: &[String]) -> String {
    choices.iter().map(|c| format!("rdmactl: {c}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(step: &'static str, ok: bool) -> StepLine {
        StepLine {
            side: None,
            step: step.into(),
            ok,
            elapsed_us: 10.0,
            detail: String::new(),
            failure: None,
        }
    }

    fn view(steps: &[StepLine], signal: Option<i32>, ok: bool) -> String {
        text(
            &SelftestView {
                device: Some("rxe0"),
                peer_device: Some("rxe0"),
                port: 1,
                addresses: None,
                gid_index: Some(1),
                size: 4096,
                steps,
                counters: None,
                signal,
                ok,
            },
            Style::plain(),
        )
    }

    /// Ctrl-C: the steps that ran, and the signal named; never "all steps passed", never
    /// a bare "FAILED".
    #[test]
    fn an_interrupted_test_names_the_signal() {
        let steps = [step("open", true), step("pd", true)];
        let text = view(&steps, Some(libc::SIGINT), false);
        assert!(text.contains("  ok "), "{text}");
        assert!(
            text.ends_with("interrupted by SIGINT (Ctrl-C) after 2 steps passed; the steps above are all that ran\n"),
            "{text}"
        );
        assert!(!text.contains("all steps passed") && !text.contains("FAILED"));
        let text = view(&steps[..1], Some(libc::SIGTERM), false);
        assert!(
            text.ends_with("interrupted by SIGTERM (kill, or a job scheduler) after 1 step passed; the steps above are all that ran\n"),
            "{text}"
        );
        let text = view(&[], Some(libc::SIGINT), false);
        assert!(text.contains("after 0 steps passed"), "{text}");
    }

    /// A failed step's line says what failed, not nothing.
    #[test]
    fn a_failed_step_shows_its_failure_line() {
        use crate::model::codes;
        use crate::model::diagnostic::{Diagnostic, FailureReport};
        use crate::model::failure::{Cause, Failure, FailureContext, Step};
        let f = Failure::new(
            Step::Open,
            Cause::errno(libc::EACCES),
            FailureContext {
                device: "rxe0".into(),
                ..FailureContext::default()
            },
        );
        let mut open = step("open", false);
        open.failure = Some(FailureReport::new(
            &f,
            Diagnostic::explanation(codes::DEVICE_ACCESS, "why", "fix"),
        ));
        let text = view(&[open], None, false);
        let line = text.lines().nth(1).unwrap();
        assert!(line.ends_with(&f.to_string()), "{text}");
        assert!(line.contains("EACCES"), "{text}");
    }

    #[test]
    fn without_a_signal_the_verdict_is_the_steps() {
        assert!(view(&[step("open", true)], None, true).ends_with("\nall steps passed\n"));
        assert!(view(&[step("open", false)], None, false).ends_with("\nFAILED\n"));
    }
}
