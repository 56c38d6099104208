//! A server that takes from its client what it was not given.

use super::plan::{access_for, Length, Plan};
use super::report::PingpongReport;
use super::side::{open_side, Setup, Side};
use crate::cli::PingpongArgs;
use crate::ctx::Ctx;
use crate::model::failure::{Cause, Failure, Step};
use crate::wire::exchange::NativeMsg;

/// A server takes what it was not given from its client (as iperf3's server does): -n,
/// --duration and --lat, -s, --op and -m, and says so. A new size or set of operations
/// needs a new buffer and QP: this end is rebuilt on the same GID before anything is
/// connected.
pub(super) fn follow_client(
    ctx: &Ctx,
    args: &PingpongArgs,
    plan: &Plan,
    side: &mut Side,
    report: &mut PingpongReport,
    client: &NativeMsg,
) -> std::result::Result<Plan, Failure> {
    let mut p = plan.clone();
    let mut taken = Vec::new();
    if plan.follows {
        p.length = Length::of(client);
        taken.push(client.length());
    }
    // A sweeping server takes each size from its client by design: that is no news.
    let took_size = plan.follows_size && client.size != plan.size;
    if took_size {
        p.size = client.size;
        if !args.all_sizes {
            taken.push(format!("-s {}", client.size));
        }
    }
    if plan.follows_ops && client.ops != plan.ops {
        p.ops = client.ops;
        p.access = access_for(client.ops);
        taken.push(format!(
            "--op {}",
            crate::model::failure::ops_name(client.ops.bits())
        ));
    }
    if plan.follows_mtu && client.mtu != 0 {
        p.mtu = Some(u32::from(client.mtu));
        taken.push(format!("-m {}", client.mtu));
    }
    if p.size != plan.size || p.ops != plan.ops {
        let rebuilt = Plan {
            gid_index: side.gid.as_ref().map(|g| g.0),
            auto: false,
            ..p.clone()
        };
        let device = report.device.clone();
        let gid_selection = report.gid_selection.take();
        *side = open_side(ctx, args, &rebuilt, &device, None, report).map_err(|e| match e {
            Setup::Failure(f) => f,
            Setup::Error(e) => side.fail(
                Step::Compare,
                Cause::Invalid {
                    what: format!("taking the client's -s {} and --op: {e}", client.size),
                },
            ),
        })?;
        report.gid_selection = gid_selection;
        report.local = Some(side.endpoint());
    }
    if took_size || !taken.is_empty() {
        report.run.follows_client = true;
        report.run.iters = p.length.iters;
        report.run.duration_sec = p.length.duration.map(|d| d.as_secs_f64());
        report.run.lat = p.length.lat;
        report.size = p.size;
        report.requested_mtu = p.mtu;
        if !ctx.json && !taken.is_empty() {
            crate::output::note(&crate::render::pingpong::following(&taken));
        }
    }
    Ok(p)
}
