//! `rdmactl wait`: poll sysfs (`gather::wait`) until the ports are ACTIVE
//! (`diagnose::wait`), print with `render::wait`; on timeout exit 1 with doctor's reasons.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use crate::cli::WaitArgs;
use crate::ctx::Ctx;
use crate::error::Result;
use crate::exit;
use crate::render::wait::{self as render, WaitReport};

/// Often enough that a boot goes on within a fifth of a second of the link coming up,
/// rarely enough that reading a few sysfs files costs nothing.
const POLL: Duration = Duration::from_millis(200);
/// How often the progress line repeats when nothing changed.
const PROGRESS_EVERY: Duration = Duration::from_secs(10);

pub fn run(ctx: &Ctx, args: &WaitArgs) -> Result<u8> {
    let targets: Vec<(String, Option<u32>)> = args
        .targets
        .iter()
        .map(|t| (t.device.clone(), t.port))
        .collect();
    let start = Instant::now();
    let timeout = Duration::from_secs_f64(args.timeout);
    let progress = std::io::stderr().is_terminal() && !ctx.json;
    let mut last_line = String::new();
    let mut last_shown = start;
    let (devices, watched) = loop {
        let devices = crate::gather::wait::devices(ctx)?;
        let watched = crate::diagnose::wait::watch(&devices, &targets);
        // A device that is there without the port asked for will not grow it: say so now,
        // naming the ports it has, instead of waiting out the timeout.
        if let Some((device, port, ports)) = watched.no_such_port {
            return Err(crate::error::Error::NoSuchPort {
                device,
                port,
                available: ports.iter().map(u32::to_string).collect(),
            });
        }
        let elapsed = start.elapsed();
        if watched.ready() || elapsed >= timeout {
            break (devices, watched);
        }
        // Off a terminal (a boot's journal) one line says what is awaited, so a long
        // wait is not silent.
        if !progress && !ctx.json && last_line.is_empty() {
            last_line = render::started(&watched, args.timeout);
            crate::output::note(&last_line);
        }
        if progress {
            let line = render::progress(&watched, elapsed.as_secs_f64(), args.timeout);
            // Said when what is awaited changes, and every 10 s while it does not.
            let same =
                line.split_once(": ").map(|l| l.1) == last_line.split_once(": ").map(|l| l.1);
            if !same || last_shown.elapsed() >= PROGRESS_EVERY {
                crate::output::note(&line);
                last_shown = Instant::now();
            }
            last_line = line;
        }
        std::thread::sleep(POLL.min(timeout.saturating_sub(elapsed)));
    };
    let findings = crate::diagnose::wait::reasons(&devices, &watched);
    let report = WaitReport::new(
        watched,
        findings,
        start.elapsed().as_secs_f64(),
        args.timeout,
    );
    let text = if ctx.json {
        crate::output::json(&report)
    } else {
        render::text(&report, ctx.style)
    };
    crate::output::print(&text)?;
    Ok(if report.ok { exit::OK } else { exit::FAILED })
}
