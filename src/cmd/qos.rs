//! `rdmactl qos`: read each selected RoCE port's QoS chain with `gather::qos`, judge it with
//! `diagnose::qos`, print with `render::qos`; with `--interval`, read the counters twice
//! and judge what moved. Any warn or fail finding is exit 1.

use std::time::{Duration, Instant};

use crate::cli::QosArgs;
use crate::ctx::Ctx;
use crate::diagnose::qos as rules;
use crate::error::Result;
use crate::exit;
use crate::gather::inventory::target;
use crate::gather::sysfs::SysfsRoot;
use crate::interrupt;
use crate::model::diagnostic::{Diagnostic, Severity};
use crate::output::print;
use crate::render::qos::{self as render, IntervalPort, IntervalReport, PausePair, PortView};

pub fn run(ctx: &Ctx, args: &QosArgs) -> Result<u8> {
    let (device, port) = target(&args.select)?;
    // The active MTU (the MTU rule) comes from libibverbs; no GID tables are needed.
    let devices = crate::gather::inventory::inventory_with_verbs(
        ctx,
        device.as_deref(),
        false,
        false,
        || SysfsRoot::new(&ctx.sysfs).select(device.as_deref(), port),
    )?;
    let facts = crate::gather::qos::gather(ctx, &devices, args.tclass, true, &[]);
    let Some(secs) = args.interval else {
        let findings = rules::findings(&facts);
        let code = exit_code(&findings);
        let views = facts
            .ports
            .iter()
            .map(|p| PortView {
                port: p,
                chains: rules::chains(&facts, p),
            })
            .collect();
        let report = render::QosReport::new(views, findings);
        print(&if ctx.json {
            render::json(&report)
        } else {
            render::text(&report, ctx.style)
        })?;
        return Ok(code);
    };
    interrupt::catch();
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(secs);
    interrupt::sleep_until(deadline);
    let seconds = start.elapsed().as_secs_f64();
    let after = crate::gather::qos::ports(ctx, &devices, false, &[]);
    let mut findings = Vec::new();
    let mut ports = Vec::new();
    for (b, a) in facts.ports.iter().zip(&after) {
        findings.extend(rules::interval_findings(&facts, b, a, seconds));
        let view = rules::CounterView::delta(b, a);
        ports.push(IntervalPort {
            device: a.device.clone(),
            port: a.port,
            netdev: a.netdev.clone(),
            pauses: (0..8u8)
                .map(|p| PausePair {
                    priority: p,
                    rx: view.pauses[usize::from(p)].0,
                    tx: view.pauses[usize::from(p)].1,
                })
                .collect(),
            moved: view.values.into_iter().filter(|(_, v)| *v > 0).collect(),
        });
    }
    let code = exit_code(&findings);
    let report = IntervalReport {
        seconds,
        ports,
        findings,
    };
    print(&if ctx.json {
        render::interval_json(&report)
    } else {
        render::interval_text(&report, ctx.style)
    })?;
    Ok(code)
}

fn exit_code(findings: &[Diagnostic]) -> u8 {
    if findings.iter().any(|f| f.severity >= Severity::Warn) {
        exit::FAILED
    } else {
        exit::OK
    }
}
