//! `rdmactl pingpong`: an RC ping-pong between two hosts, over the TCP exchange or, with
//! `--cm`, through the RDMA connection manager. The engines are `traffic::pingpong`; this
//! prints each report they finish, or with `-a` the sweep's table once it ends.

use crate::cli::PingpongArgs;
use crate::ctx::Ctx;
use crate::error::Result;
use crate::output;
use crate::render;
use crate::render::pingpong::{BandwidthUnit, SweepRow};
use crate::traffic::pingpong::{self, cm::CmPingpongReport, PingpongReport, SweepReport};

pub fn run(ctx: &Ctx, args: &PingpongArgs) -> Result<u8> {
    let rate = if args.report_gbits {
        BandwidthUnit::Gbit
    } else {
        BandwidthUnit::Mbit
    };
    if args.cm {
        return pingpong::cm::run(ctx, args, &mut |report| show_cm(ctx, report, rate));
    }
    if args.all_sizes {
        return sweep(ctx, args, rate);
    }
    pingpong::run(ctx, args, &mut |report| show(ctx, report, rate))
}

fn show(ctx: &Ctx, report: &PingpongReport, rate: BandwidthUnit) -> Result<()> {
    let text = if ctx.json {
        output::json(report)
    } else {
        let mut view = report.view();
        view.rate = rate;
        render::pingpong::exchange(&view, ctx.style)
    };
    output::print(&text)
}

/// `-a`: the sizes' reports are kept and printed together when the sweep ends, however it
/// ends (a failure's explanation follows on stderr, once).
fn sweep(ctx: &Ctx, args: &PingpongArgs, rate: BandwidthUnit) -> Result<u8> {
    use std::io::IsTerminal;
    let progress = std::io::stderr().is_terminal() || args.interval.is_some();
    let mut rows: Vec<SweepRow> = Vec::new();
    let mut reports: Vec<serde_json::Value> = Vec::new();
    let mut role = "client";
    let res = pingpong::run(ctx, args, &mut |report| {
        role = report.role();
        rows.push(report.sweep_row());
        if ctx.json {
            reports.push(serde_json::to_value(report).map_err(|e| {
                crate::error::Error::System(format!("cannot encode the report: {e}"))
            })?);
        }
        if progress {
            output::note(&render::pingpong::sweep_progress(
                rows.last().expect("pushed"),
            ));
        }
        Ok(())
    });
    if !rows.is_empty() {
        let text = if ctx.json {
            output::json(&SweepReport {
                role,
                ok: res.is_ok() && rows.iter().all(|r| r.ok),
                sweep: reports,
            })
        } else {
            render::pingpong::sweep(role, &rows, rate)
        };
        output::print(&text)?;
    }
    res
}

/// In text, a run that never connected prints nothing: its failure says it all.
fn show_cm(ctx: &Ctx, report: &CmPingpongReport, rate: BandwidthUnit) -> Result<()> {
    if ctx.json {
        output::print(&output::json(report))
    } else if report.is_connected() {
        let mut view = report.view();
        view.rate = rate;
        output::print(render::pingpong::cm(&view, ctx.style).trim_end())
    } else {
        Ok(())
    }
}
