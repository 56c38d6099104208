//! `rdmactl counters`: one pass over the selected ports' `counters/` and `hw_counters/`,
//! printed grouped by what they indicate; with `--interval`, re-read and print each
//! interval's wrap-aware deltas and rates, judged by `diagnose::counters::judge`.

use std::time::{Duration, Instant};

use crate::cli::CountersArgs;
use crate::ctx::Ctx;
use crate::diagnose::counters::judge;
use crate::error::Result;
use crate::exit;
use crate::gather::inventory::target;
use crate::gather::sysfs::SysfsRoot;
use crate::interrupt;
use crate::model::counter::{PortDelta, Sampler};
use crate::model::diagnostic::Diagnostic;
use crate::output::print;
use crate::render::counters as render;

pub fn run(ctx: &Ctx, args: &CountersArgs) -> Result<u8> {
    let (device, port) = target(&args.select)?;
    let sysfs = SysfsRoot::new(&ctx.sysfs);
    let first = sysfs.counters(device.as_deref(), port)?;
    crate::output::note(&render::problem_warnings(&first));
    let Some(secs) = args.interval else {
        let text = if ctx.json {
            render::snapshot_json(&first)
        } else {
            render::snapshot_text(&first, args.all)
        };
        print(&text)?;
        return Ok(exit::OK);
    };
    // Ctrl-C ends the sampling after the interval in progress, not in the middle of a line.
    interrupt::catch();
    let mut sampler = Sampler::new(first, Instant::now());
    let interval = Duration::from_secs_f64(secs);
    let start = Instant::now();
    for n in 1.. {
        // Deadlines from the start, so slow reads do not make the intervals drift.
        let deadline = start + interval * u32::try_from(n).unwrap_or(u32::MAX);
        if !interrupt::sleep_until(deadline) {
            return Ok(exit::OK);
        }
        let now = sysfs.counters(device.as_deref(), port)?;
        let deltas = sampler.next(now, Instant::now());
        let judged: Vec<(PortDelta, Vec<Diagnostic>)> = deltas
            .into_iter()
            .map(|d| {
                // The interval's own messages are unknown here: no per-thousand figure.
                let found = judge(&d, None, None);
                (d, found)
            })
            .collect();
        let text = if ctx.json {
            render::interval_json(n, &judged)
        } else {
            render::interval_text(n, &judged, args.all, ctx.style)
        };
        print(&text)?;
        if args.count.is_some_and(|c| n >= c) || interrupt::caught().is_some() {
            break;
        }
    }
    Ok(exit::OK)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::counter::Change;
    use std::fs;
    use std::path::Path;

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    /// The sampler over a tree whose files change between reads: a 32-bit mlx5 counter
    /// wraps, a PMA counter saturates, and the judge sees both.
    #[test]
    fn the_sampler_is_wrap_and_saturation_aware() {
        let t = tempfile::tempdir().unwrap();
        let p = "class/infiniband/mlx5_0/ports/1";
        write(t.path(), &format!("{p}/state"), "4: ACTIVE\n");
        write(t.path(), &format!("{p}/counters/symbol_error"), "65000\n");
        write(
            t.path(),
            &format!("{p}/hw_counters/out_of_sequence"),
            "4294967295\n",
        );
        let sysfs = SysfsRoot::new(t.path());
        let t0 = Instant::now();
        let mut s = Sampler::new(sysfs.counters(None, None).unwrap(), t0);
        write(t.path(), &format!("{p}/counters/symbol_error"), "65535\n");
        write(t.path(), &format!("{p}/hw_counters/out_of_sequence"), "9\n");
        let d = s.next(
            sysfs.counters(None, None).unwrap(),
            t0 + Duration::from_secs(2),
        );
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].seconds, 2.0);
        assert_eq!(
            d[0].get("out_of_sequence").unwrap().change,
            Change::Counted {
                delta: 10,
                wrapped: true
            }
        );
        assert_eq!(
            d[0].get("symbol_error").unwrap().change,
            Change::Saturated { at_least: 535 }
        );
        let codes: Vec<String> = judge(&d[0], None, None)
            .into_iter()
            .map(|f| f.code.to_string())
            .collect();
        assert_eq!(
            codes,
            [
                "counters-retransmission",
                "counters-link-errors",
                "counters-saturated"
            ]
        );
        let text = render::interval_text(
            1,
            &[(d[0].clone(), Vec::new())],
            false,
            crate::output::Style::plain(),
        );
        assert!(text.contains("+10 (wrapped)"), "{text}");
        assert!(
            text.contains("+535 or more (saturated, reset with perfquery -R)"),
            "{text}"
        );
        let json: serde_json::Value =
            serde_json::from_str(&render::interval_json(1, &[(d[0].clone(), Vec::new())])).unwrap();
        assert_eq!(json["ports"][0]["counters"][0]["state"], "saturated");
        assert_eq!(json["ports"][0]["counters"][1]["state"], "wrapped");
        // Stuck at the top on the next read: still saturated, never a negative delta.
        let d = s.next(
            sysfs.counters(None, None).unwrap(),
            t0 + Duration::from_secs(3),
        );
        assert_eq!(
            d[0].get("symbol_error").unwrap().change,
            Change::Saturated { at_least: 0 }
        );
    }
}
