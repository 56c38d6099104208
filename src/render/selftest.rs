//! `selftest`'s text: one line per step (ok or FAIL, how long, what it found), a failed
//! step's explanation under it, the counters block, and the verdict.

use std::net::IpAddr;

use crate::model::results::{CmSelftestReport, RunCounters, StepLine};
use crate::output::Style;

/// What the text report of the verbs loopback shows.
pub struct SelftestView<'a> {
    pub device: Option<&'a str>,
    pub peer_device: Option<&'a str>,
    pub port: u32,
    pub gid_index: Option<u32>,
    pub size: u32,
    pub steps: &'a [StepLine],
    pub counters: Option<&'a RunCounters>,
    pub ok: bool,
}

/// The text report of the verbs loopback.
pub fn verbs(r: &SelftestView, style: Style) -> String {
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
    for s in r.steps {
        let status = if s.ok { "ok  " } else { "FAIL" };
        let ms = s.elapsed_us / 1000.0;
        out.push_str(&format!(
            "  {status} {ms:>9.3} ms  {:<16} {}\n",
            s.step, s.detail
        ));
        if let Some(x) = &s.failure {
            out.push_str(&crate::render::diagnostic::body(&x.explanation, "       "));
        }
    }
    if let Some(c) = r.counters {
        out.push_str(&crate::render::pingpong::counters(c, style));
    }
    out.push_str(verdict(r.ok));
    out
}

/// `rxe0`, or `rxe0 <-> rxe1` when the two ends are on two devices.
fn ends(r: &CmSelftestReport) -> String {
    match (&r.device, &r.peer_device) {
        (Some(a), Some(b)) if a != b => format!("{a} <-> {b}"),
        (a, b) => a.as_ref().or(b.as_ref()).cloned().unwrap_or_default(),
    }
}

/// The text report of `selftest --cm`.
pub fn cm(r: &CmSelftestReport) -> String {
    let at = |ip: Option<IpAddr>| ip.map_or("?".to_string(), |ip| ip.to_string());
    let mut out = format!(
        "selftest --cm {} port {}, {} -> {}, {} B; the kernel picks the GID{}\n",
        ends(r),
        r.port,
        at(r.client_address),
        at(r.server_address),
        r.size,
        r.gid_index
            .map(|i| format!(" (index {i})"))
            .unwrap_or_default()
    );
    for s in &r.steps {
        let status = if s.ok { "ok  " } else { "FAIL" };
        let step = format!("{} {}", s.side, s.step);
        out.push_str(&format!(
            "  {status} {:>9.3} ms  {step:<25} {}\n",
            s.elapsed_us / 1000.0,
            s.detail
        ));
        if let Some(f) = &s.failure {
            out.push_str(&crate::render::diagnostic::body(&f.explanation, "       "));
        }
    }
    out.push_str(verdict(r.ok));
    out
}

fn verdict(ok: bool) -> &'static str {
    if ok {
        "all steps passed\n"
    } else {
        "FAILED\n"
    }
}

/// What `-g auto` chose for each device (each choice's own text), as notes on stderr.
pub fn gid_choices(choices: &[String]) -> String {
    choices.iter().map(|c| format!("rdmactl: {c}")).collect()
}
