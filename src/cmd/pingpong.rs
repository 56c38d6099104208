//! `rdmactl pingpong`: an RC ping-pong between two hosts, over the TCP exchange or, with
//! `--cm`, through the RDMA connection manager. The engines are `traffic::pingpong`; this
//! prints each report they finish.

use crate::cli::PingpongArgs;
use crate::ctx::Ctx;
use crate::error::Result;
use crate::output;
use crate::render;
use crate::traffic::pingpong::{self, cm::CmPingpongReport, PingpongReport};

pub fn run(ctx: &Ctx, args: &PingpongArgs) -> Result<u8> {
    if args.cm {
        return pingpong::cm::run(ctx, args, &mut |report| show_cm(ctx, report));
    }
    pingpong::run(ctx, args, &mut |report| show(ctx, report))
}

fn show(ctx: &Ctx, report: &PingpongReport) -> Result<()> {
    let text = if ctx.json {
        output::json(report)
    } else {
        render::pingpong::exchange(&report.view(), ctx.style)
    };
    output::print(&text)
}

/// In text, a run that never connected prints nothing: its failure says it all.
fn show_cm(ctx: &Ctx, report: &CmPingpongReport) -> Result<()> {
    if ctx.json {
        output::print(&output::json(report))
    } else if report.is_connected() {
        output::print(render::pingpong::cm(&report.view(), ctx.style).trim_end())
    } else {
        Ok(())
    }
}
