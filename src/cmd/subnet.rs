//! `rdmactl subnet`: pick the local IB port and its umad device, walk the subnet with
//! MADs, judge what was found, print; `--topology`, `--hosts`/`--switches`, `--baseline`
//! and `--reset-counters` around it.

use std::path::Path;
use std::time::Duration;

use crate::cli::SubnetArgs;
use crate::ctx::Ctx;
use crate::diagnose;
use crate::error::{Error, Result};
use crate::exit;
use crate::gather::discover::{self, WalkOptions};
use crate::gather::verbs::umad::{self, UmadPort};
use crate::model::diagnostic::Severity;
use crate::render::subnet as render;

pub fn run(ctx: &Ctx, args: &SubnetArgs) -> Result<u8> {
    if ctx.captured {
        return Err(Error::Usage(
            "--sysfs: subnet does not read a captured tree: it sends MADs from this host's \
             InfiniBand port"
                .into(),
        ));
    }
    // The baseline is read first: a typo in its path should not cost a walk.
    let baseline = args
        .baseline
        .as_deref()
        .map(crate::gather::baseline::read)
        .transpose()?;
    let port = pick_port(ctx, args)?;
    let opts = WalkOptions {
        in_flight: args.in_flight as usize,
        retries: args.retries,
        timeout: Duration::from_millis(args.timeout),
        counters: !args.no_counters,
    };
    let mut dev = umad::Umad::open(port.index).map_err(|e| {
        Error::Failed(format!(
            "{} port {}: {} ({}): {}{}",
            port.device,
            port.port,
            e.step,
            e.path.display(),
            e.source,
            diagnose::subnet::umad_open_fix(e.source.raw_os_error())
        ))
    })?;
    let mut subnet = discover::walk(&mut dev, &opts).map_err(|e| {
        Error::Failed(format!(
            "{} port {} ({}): the walk failed: {e}",
            port.device,
            port.port,
            Path::new("/dev/infiniband")
                .join(format!("umad{}", port.index))
                .display()
        ))
    })?;

    if let Some(secs) = args.interval {
        discover::reread_counters(&mut dev, &opts, &mut subnet, Duration::from_secs_f64(secs))
            .map_err(|e| {
                Error::Failed(format!(
                    "{} port {}: reading the counters again: {e}",
                    port.device, port.port
                ))
            })?;
    }
    if let Some(path) = &args.topology {
        crate::output::write_file(path, "--topology", &render::ibnetdiscover(&subnet))?;
    }
    if args.hosts || args.switches {
        // No line at all when there is no such node, as ibhosts prints none.
        let list = render::node_list(&subnet, args.switches);
        if !list.is_empty() {
            crate::output::print(&list)?;
        }
        return Ok(exit::OK);
    }
    let findings = diagnose::subnet::judge(&subnet, baseline.as_ref());
    if let Some(path) = &args.svg {
        crate::output::write_file(path, "--svg", &render::svg(&subnet, &findings))?;
    }
    let text = if ctx.json {
        crate::output::json(&render::report(&subnet, &port.device, port.port, &findings))
    } else {
        render::text(&subnet, &port.device, port.port, &findings, ctx.style)
    };
    crate::output::print(&text)?;
    if args.reset_counters {
        let failed = discover::clear_counters(&mut dev, &opts, &subnet).map_err(|e| {
            Error::Failed(format!(
                "{} port {}: clearing counters: {e}",
                port.device, port.port
            ))
        })?;
        let names: Vec<String> = failed.into_iter().map(|end| subnet.end_name(end)).collect();
        crate::output::note(&render::unconfirmed_clears(&names));
    }
    let found = findings
        .iter()
        .any(|f| matches!(f.severity, Severity::Warn | Severity::Fail));
    Ok(if found { exit::FAILED } else { exit::OK })
}

/// The umad port to walk from: `-d`/`-i` when given, else the first InfiniBand port,
/// preferring an ACTIVE one. RoCE and iWARP ports have no subnet manager to ask.
fn pick_port(ctx: &Ctx, args: &SubnetArgs) -> Result<UmadPort> {
    let all = umad::umad_ports().map_err(|source| Error::Io {
        path: "/sys/class/infiniband_mad".into(),
        source,
    })?;
    let wanted: Vec<&UmadPort> = all
        .iter()
        .filter(|p| args.from.device.as_deref().map_or(true, |d| d == p.device))
        .filter(|p| args.from.port.map_or(true, |n| n == p.port))
        .collect();
    let Some(first) = wanted
        .iter()
        .filter(|p| is_ib(p))
        .find(|p| p.state.as_ref().map_or(true, |s| s.is_active()))
        .or_else(|| wanted.iter().find(|p| is_ib(p)))
    else {
        if let Some(eth) = wanted.first() {
            return Err(Error::Failed(format!(
                "{} port {} is {}: subnet management is an InfiniBand notion; for a RoCE or \
                 iWARP fabric use `rdmactl fabric` across the hosts, or `rdmactl pingpong` \
                 between two",
                eth.device,
                eth.port,
                eth.link_layer.as_deref().unwrap_or("not InfiniBand")
            )));
        }
        let listed: Vec<String> = all
            .iter()
            .map(|p| format!("{}/{}", p.device, p.port))
            .collect();
        return Err(match (&args.from.device, listed.is_empty()) {
            // No umad devices on a host whose RDMA ports are all RoCE or iWARP: ib_umad
            // would change nothing, the notion does not apply.
            (_, true) => Error::Failed(match ethernet_only(&ctx.sysfs) {
                Some(ports) => not_infiniband(&ports),
                None => "no umad devices in /sys/class/infiniband_mad: no InfiniBand port, or \
                         the ib_umad module is not loaded (modprobe ib_umad)"
                    .into(),
            }),
            (Some(d), false) => Error::NoSuchDevice {
                name: format!(
                    "{d}{}",
                    args.from
                        .port
                        .map(|p| format!(" port {p}"))
                        .unwrap_or_default()
                ),
                available: listed,
            },
            (None, false) => Error::Failed(format!(
                "no umad port matches port {}; umad ports: {}",
                args.from.port.unwrap_or(0),
                listed.join(", ")
            )),
        });
    };
    Ok((*first).clone())
}

/// The host's RDMA ports ("rxe0/1 (Ethernet)") when it has some and none is InfiniBand.
fn ethernet_only(sysfs: &Path) -> Option<Vec<String>> {
    let devices = crate::gather::sysfs::SysfsRoot::new(sysfs)
        .link_layer_only()
        .devices()
        .ok()?;
    let ports: Vec<(String, Option<String>)> = devices
        .iter()
        .flat_map(|d| {
            d.ports.iter().map(|p| {
                (
                    format!("{}/{}", d.name, p.number),
                    p.link_layer.as_ref().map(|l| l.to_string()),
                )
            })
        })
        .collect();
    let ib = |l: &Option<String>| {
        l.as_deref()
            .map_or(true, |l| l.eq_ignore_ascii_case("infiniband"))
    };
    if ports.is_empty() || ports.iter().any(|(_, l)| ib(l)) {
        return None;
    }
    Some(
        ports
            .into_iter()
            .map(|(name, l)| format!("{name} ({})", l.unwrap_or_default()))
            .collect(),
    )
}

/// What `subnet` says on a host with RDMA ports and no InfiniBand among them.
fn not_infiniband(ports: &[String]) -> String {
    format!(
        "no InfiniBand port here ({}): subnet management is an InfiniBand notion; for a RoCE \
         or iWARP fabric use `rdmactl fabric` across the hosts, or `rdmactl pingpong` between two",
        ports.join(", ")
    )
}

fn is_ib(p: &UmadPort) -> bool {
    p.link_layer
        .as_deref()
        .map_or(true, |l| l.eq_ignore_ascii_case("infiniband"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/sysfs")
            .join(name)
    }

    /// A RoCE-only host without ib_umad: the notion does not apply, no modprobe advice.
    #[test]
    fn a_roce_only_host_is_told_subnet_management_is_infiniband() {
        let ports = ethernet_only(&fixture("rxe-veth-basic")).expect("RoCE ports only");
        assert!(ports.iter().any(|p| p.starts_with("rxe0/1 (")), "{ports:?}");
        let text = not_infiniband(&ports);
        assert!(
            text.contains("subnet management is an InfiniBand notion"),
            "{text}"
        );
        assert!(!text.contains("modprobe"), "{text}");
        // With an InfiniBand port (or no device at all) ib_umad may be what is missing.
        assert_eq!(ethernet_only(&fixture("ib-hca")), None);
        assert_eq!(ethernet_only(&fixture("no-devices")), None);
    }
}
