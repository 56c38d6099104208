//! `rdmactl fabric`: one process per endpoint, placed by srun, mpirun or pdsh. Every rank
//! publishes its endpoint to rank 0 over the control channel; rank 0 reports drift,
//! schedules the pairs in rounds, tells each pair's ends to run a `pingpong` (a child
//! process: the same GID choice, explanation and counters as the command, and a hung test
//! costs one deadline), judges the results, retests the bad pairs once, attributes, and
//! prints the report. The engine is in `traffic::fabric`.

use std::io::IsTerminal;
use std::time::Instant;

use crate::cli::{FabricArgs, GidIndexArg};
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::model::fabric::{FabricReport, Given, Placement, Thresholds};
use crate::output;
use crate::traffic::fabric::leader::{self, LeaderConfig, PrintReport};
use crate::traffic::fabric::{address, agent, rank_info, secs, simulate_ranks};
use crate::wire::rendezvous::PairTest;

pub fn run(ctx: &Ctx, args: &FabricArgs) -> Result<u8> {
    let env = crate::gather::placement::launcher_env;
    let given = Given {
        rank: args.rank,
        size: args.size,
        local_rank: args.local_rank,
    };
    let place = crate::gather::placement::placement(&given, &env).map_err(Error::Usage)?;
    check_numbers(args)?;
    let token = args.token.clone().unwrap_or_else(|| match &place.job_id {
        Some(id) => format!("{}-{id}", place.launcher.name()),
        None => String::new(),
    });
    let pair_port = args
        .port_base
        .checked_add(u16::try_from(place.rank).unwrap_or(u16::MAX))
        .filter(|p| *p != 0)
        .ok_or_else(|| {
            Error::Usage(format!(
                "--port-base {} + rank {} is past TCP port 65535: give a lower --port-base",
                args.port_base, place.rank
            ))
        })?;
    let join_deadline = Instant::now() + secs(args.join_timeout);
    // Rank 0 binds before it opens anything, so the others can start connecting.
    let (leader, connect_to) = if place.rank == 0 {
        let (listener, connect_to) = address::listen(args, &token, &env)?;
        let cfg = leader_config(ctx, args, &place, &token, join_deadline);
        let print = printer(ctx, args);
        let handle = std::thread::spawn(move || leader::lead(listener, cfg, print));
        (Some(handle), connect_to)
    } else {
        let target = address::rank0(args, &token, &env, join_deadline)?;
        (None, target)
    };
    crate::interrupt::catch();
    if let Some(n) = args.simulate_ranks.filter(|n| *n > 1) {
        return simulate_ranks::simulate_many(
            ctx,
            args,
            &place,
            &token,
            n,
            &connect_to,
            join_deadline,
        );
    }
    let info = rank_info::rank_info(ctx, args, &place, pair_port);
    let agent = agent::agent(args, &place, &token, info, &connect_to, join_deadline);
    let Some(handle) = leader else {
        return agent;
    };
    let printed = handle
        .join()
        .map_err(|_| Error::Failed("rank 0's coordinator stopped unexpectedly".into()))?;
    // The agent's own error is secondary: rank 0's report says what happened to the run.
    if let Err(e) = &agent {
        crate::output::note(&format!("rdmactl: rank 0's own endpoint: {e}\n"));
    }
    printed
}

fn leader_config(
    ctx: &Ctx,
    args: &FabricArgs,
    place: &Placement,
    token: &str,
    join_deadline: Instant,
) -> LeaderConfig {
    LeaderConfig {
        token: token.to_string(),
        size: place.size,
        pattern: args.pattern,
        test: PairTest {
            size: args.size_bytes,
            iters: args.iters,
            step_timeout: args.timeout,
            deadline: args.deadline,
            gid_index: match args.on.gid_index {
                GidIndexArg::Auto => "auto".into(),
                GidIndexArg::Index(i) => i.to_string(),
            },
        },
        thresholds: Thresholds {
            latency_factor: args.latency_factor,
            bandwidth_fraction: args.bandwidth_fraction,
            resends_per_mille: args.resend_limit,
            expect_usec: args.expect_usec,
            expect_mbit: args.expect_mbit,
        },
        join_deadline,
        progress: std::io::stderr().is_terminal() && !ctx.json,
        launcher: place.launcher.name(),
        parallel: args.parallel.unwrap_or(u32::MAX),
        csv: args.csv.clone(),
    }
}

fn check_numbers(args: &FabricArgs) -> Result<()> {
    let positive = [
        ("--deadline", args.deadline),
        ("--timeout", args.timeout),
        ("--join-timeout", args.join_timeout),
        ("--latency-factor", args.latency_factor),
        ("--bandwidth-fraction", args.bandwidth_fraction),
    ];
    for (name, v) in positive {
        if !(v.is_finite() && v > 0.0) {
            return Err(Error::Usage(format!(
                "{name} {v}: must be a positive number"
            )));
        }
    }
    if args.iters == 0 || args.size_bytes == 0 {
        return Err(Error::Usage("-n and -s must be at least 1".into()));
    }
    if args.timeout >= args.deadline {
        return Err(Error::Usage(format!(
            "--timeout {} is not below --deadline {}: a step would outlive its pair test",
            args.timeout, args.deadline
        )));
    }
    Ok(())
}

/// Where rank 0's report goes: the SVG file asked for, then stdout (the CSV is written as
/// the pairs are judged); the exit status is the report's.
fn printer(ctx: &Ctx, args: &FabricArgs) -> PrintReport {
    let ctx = ctx.clone();
    let svg = args.svg.clone();
    Box::new(move |report: &FabricReport| {
        if let Some(path) = &svg {
            std::fs::write(path, crate::render::fabric::svg(report)).map_err(|e| Error::Io {
                path: path.clone(),
                source: e,
            })?;
        }
        let text = if ctx.json {
            output::json(report)
        } else {
            crate::render::fabric::text(report, ctx.style)
        };
        output::print(&text)?;
        // A signal's status (128 + it) after the report, as pingpong and selftest exit.
        Ok(match report.run.signal {
            Some(signal) => 128u8.saturating_add(signal.clamp(0, 127) as u8),
            None if report.ok => crate::exit::OK,
            None => crate::exit::FAILED,
        })
    })
}
