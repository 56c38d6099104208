//! `rdmactl selftest`: two RC QPs in one process (on one device, or one on each of two
//! devices), connected to each other, running every verbs step in turn and reporting each:
//! ok or FAIL, how long it took, and for a failure the step value an explainer can read.
//! With `--cm` the loopback goes through the RDMA connection manager. The engines are
//! `traffic::selftest`.

use crate::cli::SelftestArgs;
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::exit;
use crate::output;
use crate::render;
use crate::traffic::selftest;

pub fn run(ctx: &Ctx, args: &SelftestArgs) -> Result<u8> {
    // Caught from the start: a Ctrl-C while the devices are looked up or opened still
    // gets the report of what ran, the signal named, and 128 + the signal.
    crate::interrupt::catch();
    let report = if args.cm {
        selftest::cm::run(ctx, args)?
    } else {
        selftest::run(ctx, args)?
    };
    if !ctx.json {
        let choices: Vec<String> = report.gid_selection.iter().map(|c| c.render()).collect();
        output::note(&render::selftest::gid_choices(&choices));
    }
    let text = if ctx.json {
        output::json(&report)
    } else {
        render::selftest::text(&report.view(), ctx.style)
    };
    output::print(&text)?;
    if let Some(code) = interrupted(report.signal) {
        return Err(Error::Reported(code));
    }
    if report.ok {
        return Ok(exit::OK);
    }
    // The failed step and its explanation are in the report just printed.
    let code = report
        .steps
        .iter()
        .find_map(|s| s.failure.as_ref().map(|f| f.exit_code()))
        .unwrap_or(exit::FAILED);
    Err(Error::Reported(code))
}

/// The exit status of a test a signal stopped: 128 + the signal, as a shell reports a
/// process the signal ended. One caught only after the report was made (while it was
/// printed) is named on stderr, so no exit 130 goes unexplained.
fn interrupted(in_report: Option<i32>) -> Option<u8> {
    let signal = in_report.or_else(|| {
        let late = crate::interrupt::caught()?;
        output::note(&render::selftest::interrupted_late(late));
        Some(late)
    })?;
    Some(128u8.saturating_add(signal as u8))
}
