//! `rdmactl fabric`: one process per endpoint, placed by srun, mpirun or pdsh. Every rank
//! publishes its endpoint to rank 0 over the control channel; rank 0 reports drift,
//! schedules the pairs in rounds, tells each pair's ends to run a `pingpong` (a child
//! process: the same GID choice, explanation and counters as the command, and a hung test
//! costs one deadline), judges the results, retests the bad pairs once, attributes, and
//! prints the report.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{IsTerminal, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::cli::{FabricArgs, GidIndexArg};
use crate::ctx::Ctx;
use crate::diagnose::fabric::{self as rules, PairInput};
use crate::error::{Error, Result};
use crate::gather::sysfs::SysfsRoot;
use crate::model::device::{Device, PortState};
use crate::model::fabric::{
    Drift, FabricReport, PairRow, PairState, PairVerdict, PerfBaseline, RankRow, RunFacts, Suspect,
    SuspectRow, Thresholds,
};
use crate::model::fabric::{Given, PairEnd, Pattern, Placement, RankInfo};
use crate::output;
use crate::wire::rendezvous::{self as wire, Channel, PairTest, ToLeader, ToRank};

/// The port rank 0 listens on when only its host is known.
pub const DEFAULT_RENDEZVOUS_PORT: u16 = 18514;
const SEND: Duration = Duration::from_secs(10);

pub fn run(ctx: &Ctx, args: &FabricArgs) -> Result<u8> {
    let env = |k: &str| std::env::var(k).ok();
    let given = Given {
        rank: args.rank,
        size: args.size,
        local_rank: args.local_rank,
    };
    let place = crate::model::fabric::placement(&given, &env).map_err(Error::Usage)?;
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
        let (listener, host, port) = match (&args.rendezvous, &args.rendezvous_dir) {
            (Some(r), _) => {
                let (_, port) = split_host_port(r)?;
                let l = wire::listen(port).map_err(|e| {
                    Error::Usage(format!(
                        "rank 0 cannot listen on TCP port {port} (--rendezvous {r}): {e}{}",
                        holder(port)
                    ))
                })?;
                (l, "127.0.0.1".to_string(), port)
            }
            (None, Some(dir)) => {
                let l = wire::listen(0).map_err(|e| {
                    Error::Usage(format!("rank 0 cannot listen on a TCP port: {e}"))
                })?;
                let port = l.local_addr().map(|a| a.port()).unwrap_or(0);
                publish_address(dir, &token, port)?;
                (l, "127.0.0.1".to_string(), port)
            }
            (None, None) => {
                let (_, port) = default_rendezvous(&env)?;
                let l = wire::listen(port).map_err(|e| {
                    Error::Usage(format!(
                        "rank 0 cannot listen on TCP port {port}: {e}{}",
                        holder(port)
                    ))
                })?;
                (l, "127.0.0.1".to_string(), port)
            }
        };
        let cfg = LeaderConfig {
            token: token.clone(),
            size: place.size,
            pattern: args.pattern,
            test: PairTest {
                size: args.size_bytes,
                iters: args.iters,
                step_timeout: args.timeout,
                deadline: args.deadline,
                gid_index: match args.gid_index {
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
        };
        let out = ReportOut {
            ctx: ctx.clone(),
            csv: args.csv.clone(),
            svg: args.svg.clone(),
        };
        let handle = std::thread::spawn(move || lead(listener, cfg, out));
        (Some(handle), (host, port))
    } else {
        let target = match (&args.rendezvous, &args.rendezvous_dir) {
            (Some(r), _) => split_host_port(r)?,
            (None, Some(dir)) => read_address(dir, &token, join_deadline)?,
            (None, None) => default_rendezvous(&env)?,
        };
        (None, target)
    };
    crate::interrupt::catch();
    if let Some(n) = args.simulate_ranks.filter(|n| *n > 1) {
        return simulate_many(ctx, args, &place, &token, n, &connect_to, join_deadline);
    }
    let info = gather_info(ctx, args, &place, pair_port);
    let agent = agent(args, &place, &token, info, &connect_to, join_deadline);
    let Some(handle) = leader else {
        return agent;
    };
    let printed = handle
        .join()
        .map_err(|_| Error::Failed("rank 0's coordinator stopped unexpectedly".into()))?;
    // The agent's own error is secondary: rank 0's report says what happened to the run.
    if let Err(e) = &agent {
        eprintln!("rdmactl: rank 0's own endpoint: {e}");
    }
    printed
}

/// Control-plane scale tests: ranks `place.rank ..` (n of them) as threads of this process.
fn simulate_many(
    ctx: &Ctx,
    args: &FabricArgs,
    place: &Placement,
    token: &str,
    n: u32,
    connect_to: &(String, u16),
    join_deadline: Instant,
) -> Result<u8> {
    let last = place.rank.saturating_add(n).min(place.size);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (place.rank..last)
            .map(|rank| {
                scope.spawn(move || {
                    let me = Placement {
                        rank,
                        ..place.clone()
                    };
                    let info =
                        gather_info(ctx, args, &me, args.port_base.wrapping_add(rank as u16));
                    agent(args, &me, token, info, connect_to, join_deadline)
                })
            })
            .collect();
        let mut code = 0;
        for h in handles {
            match h.join() {
                Ok(Ok(c)) => code = code.max(c),
                Ok(Err(e)) => return Err(e),
                Err(_) => return Err(Error::Failed("a simulated rank panicked".into())),
            }
        }
        Ok(code)
    })
}

fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s.clamp(0.0, 1e6))
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

fn holder(port: u16) -> String {
    match crate::gather::procfs::port_holders(port).first() {
        Some((pid, name)) => format!(" ({name}, pid {pid}, listens there)"),
        None => String::new(),
    }
}

fn split_host_port(s: &str) -> Result<(String, u16)> {
    let bad = || {
        Error::Usage(format!(
            "--rendezvous '{s}': give HOST:PORT (IPv6: [ADDR]:PORT)"
        ))
    };
    let (host, port) = s.rsplit_once(':').ok_or_else(bad)?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let port: u16 = port.parse().map_err(|_| bad())?;
    if host.is_empty() || port == 0 {
        return Err(bad());
    }
    Ok((host.to_string(), port))
}

fn default_rendezvous(env: &dyn Fn(&str) -> Option<String>) -> Result<(String, u16)> {
    crate::model::fabric::default_rendezvous(env, DEFAULT_RENDEZVOUS_PORT).ok_or_else(|| {
        Error::Usage(
            "no rendezvous: give --rendezvous HOST:PORT (rank 0's host) or --rendezvous-dir DIR, or set MASTER_ADDR (and MASTER_PORT); under Slurm the first host of the job is the default"
                .into(),
        )
    })
}

fn address_file(dir: &Path, token: &str) -> std::path::PathBuf {
    let safe: String = token
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    dir.join(format!("rdmactl-fabric-{safe}.addr"))
}

/// Rank 0's host name and port, written whole (a rename) so no rank reads half a file.
fn publish_address(dir: &Path, token: &str, port: u16) -> Result<()> {
    let file = address_file(dir, token);
    let tmp = file.with_extension("tmp");
    let host = hostname();
    std::fs::write(&tmp, format!("{host} {port}\n"))
        .and_then(|_| std::fs::rename(&tmp, &file))
        .map_err(|e| Error::Io {
            path: file.clone(),
            source: e,
        })
}

fn read_address(dir: &Path, token: &str, deadline: Instant) -> Result<(String, u16)> {
    let file = address_file(dir, token);
    loop {
        if let Ok(text) = std::fs::read_to_string(&file) {
            let mut parts = text.split_whitespace();
            if let (Some(h), Some(p)) = (parts.next(), parts.next().and_then(|p| p.parse().ok())) {
                return Ok((h.to_string(), p));
            }
        }
        if Instant::now() >= deadline || crate::interrupt::caught().is_some() {
            return Err(Error::Failed(format!(
                "rank 0 never wrote {} (--join-timeout): is rank 0 running, with the same --token and --rendezvous-dir?",
                file.display()
            )));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn hostname() -> String {
    crate::gather::procfs::hostname()
        .filter(|h| !h.is_empty() && h != "(none)")
        .unwrap_or_else(|| "localhost".into())
}

// ---------------------------------------------------------------------------------------
// This rank's endpoint

/// The ports this host offers, in order: the `-d` list as given, else every ACTIVE port.
fn candidate_ports(args: &FabricArgs, devices: &[Device]) -> Vec<(String, u32)> {
    if !args.devices.is_empty() {
        return args
            .devices
            .iter()
            .map(|d| (d.device.clone(), d.port.unwrap_or(args.port)))
            .collect();
    }
    let mut ports: Vec<(String, u32)> = devices
        .iter()
        .flat_map(|d| &d.ports)
        .filter(|p| p.state == Some(PortState::Active))
        .map(|p| (p.device.clone(), p.number))
        .collect();
    ports.sort();
    ports
}

fn gather_info(ctx: &Ctx, args: &FabricArgs, place: &Placement, pair_port: u16) -> RankInfo {
    let mut info = RankInfo {
        rank: place.rank,
        local_rank: place.local_rank,
        host: hostname(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        kernel: crate::gather::procfs::kernel_release(),
        memlock: crate::gather::procfs::lock_limits()
            .memlock_soft
            .map(|l| l.map_or("unlimited".to_string(), |b| b.to_string())),
        pair_port,
        ..RankInfo::default()
    };
    if args.simulate {
        info.device = format!("sim{}", place.rank);
        info.port = 1;
        info.tcp_host = "127.0.0.1".into();
        return info;
    }
    let sysfs = SysfsRoot::new(&ctx.sysfs);
    let mut devices = match sysfs.devices() {
        Ok(d) => d,
        Err(e) => {
            info.problem = Some(format!("no RDMA device on {}: {e}", info.host));
            return info;
        }
    };
    let candidates = candidate_ports(args, &devices);
    let Some((device, port)) = candidates.get(place.local_rank as usize).cloned() else {
        info.problem = Some(if candidates.is_empty() {
            format!("{} has no ACTIVE RDMA port", info.host)
        } else {
            format!(
                "local rank {} but {} has {} port(s) to test ({}): start one process per port, or give one -d per process",
                place.local_rank,
                info.host,
                candidates.len(),
                candidates
                    .iter()
                    .map(|(d, p)| format!("{d}/{p}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        });
        return info;
    };
    if let Err(e) = crate::gather::inventory::device_port(&ctx.sysfs, Some(&device), port) {
        info.problem = Some(e.to_string());
        return info;
    }
    info.device = device.clone();
    info.port = port;
    // Host-level, over every port of this host: read before the list narrows to ours.
    info.arp_flux = crate::diagnose::doctor::arp_flux_summary(
        &crate::gather::inventory::roce_netdevs(&devices),
    );
    devices.retain(|d| d.name == device);
    let _ = crate::gather::inventory::add_verbs_facts_and_gids(ctx, &mut devices, true);
    let Some(dev) = devices.first() else {
        return info;
    };
    info.firmware = dev.fw_ver.clone();
    let Some(p) = dev.ports.iter().find(|p| p.number == port) else {
        return info;
    };
    info.link_layer = p.link_layer.as_ref().map(|l| l.to_string());
    info.state = p.state.as_ref().map(|s| s.name().to_string());
    if p.state != Some(PortState::Active) {
        info.problem = Some(format!(
            "{device}/{port} is {}, not ACTIVE",
            p.state.as_ref().map_or("in an unknown state", |s| s.name())
        ));
    }
    info.active_mtu = p.active_mtu;
    info.netdev = p.netdev.as_ref().map(|n| n.name.clone());
    info.netdev_mtu = p.netdev.as_ref().and_then(|n| n.mtu);
    info.rate = p.rate.as_ref().map(|r| r.text.clone());
    info.gids = p.gids.len() as u32;
    let link_layer = p
        .link_layer
        .clone()
        .unwrap_or(crate::model::device::LinkLayer::Ethernet);
    let chosen = match args.gid_index {
        GidIndexArg::Index(i) => Some(i),
        GidIndexArg::Auto => {
            crate::diagnose::gidselect::select_gid(&p.gids, &link_layer, &Default::default()).chosen
        }
    };
    if let Some(entry) = chosen.and_then(|i| p.gids.iter().find(|g| g.index == i)) {
        info.gid_index = Some(entry.index);
        info.gid = Some(entry.gid.to_string());
        info.gid_type = Some(crate::diagnose::gidselect::type_name(
            entry.gid_type.as_ref(),
        ));
    }
    // Partners connect to the GID's own address where it has one (RoCE), so `-g auto` on
    // their side faces this endpoint; else (InfiniBand) this host's name.
    info.tcp_host = info
        .gid
        .as_ref()
        .and_then(|g| g.parse::<crate::model::gid::Gid>().ok())
        .filter(|g| {
            !g.is_zero()
                && !crate::model::gid::is_link_local(g)
                && link_layer == crate::model::device::LinkLayer::Ethernet
        })
        .map(|g| g.ip().to_string())
        .unwrap_or_else(|| info.host.clone());
    info
}

// ---------------------------------------------------------------------------------------
// Every rank: join, then run the pair tests rank 0 asks for

fn agent(
    args: &FabricArgs,
    place: &Placement,
    token: &str,
    info: RankInfo,
    (host, port): &(String, u16),
    join_deadline: Instant,
) -> Result<u8> {
    let mut ch = wire::connect(host, *port, join_deadline).map_err(|e| {
        Error::Failed(format!(
            "rank {}: {e}; is rank 0 running (--rendezvous {host}:{port})?",
            place.rank
        ))
    })?;
    let ours = info.clone();
    ch.send(
        &ToLeader::Join {
            token: token.to_string(),
            size: place.size,
            info: Box::new(info),
        },
        SEND,
    )
    .map_err(|e| Error::Failed(format!("rank {}: {e}", place.rank)))?;
    let lost = |e: String| Error::Failed(format!("rank {}: {e}", place.rank));
    loop {
        // Between tasks a rank may idle for many rounds: no deadline, but rank 0 closing
        // the connection (or dying) ends the wait.
        let msg: Option<ToRank> = ch.recv(None).map_err(|e| lost(e.0))?;
        match msg {
            None => {
                return Err(lost(
                    "rank 0 closed the control connection before the run ended".into(),
                ))
            }
            Some(ToRank::Welcome) => {}
            Some(ToRank::Refused { reason }) => {
                return Err(Error::Usage(format!(
                    "rank {}: rank 0 refused this rank: {reason}",
                    place.rank
                )))
            }
            Some(ToRank::Done { exit }) => return Ok(exit),
            Some(ToRank::Serve { round, a, b, test }) => {
                let end = serve(args, &ours, &test, &mut || {
                    ch.send(&ToLeader::Ready { round, a, b }, SEND).is_ok()
                });
                ch.send(
                    &ToLeader::Result {
                        round,
                        a,
                        b,
                        client: false,
                        end: Box::new(end),
                    },
                    SEND,
                )
                .map_err(|e| lost(e.0))?;
            }
            Some(ToRank::Connect {
                round,
                a,
                b,
                host,
                port,
                test,
            }) => {
                let end = connect(args, &ours, &test, &host, port);
                ch.send(
                    &ToLeader::Result {
                        round,
                        a,
                        b,
                        client: true,
                        end: Box::new(end),
                    },
                    SEND,
                )
                .map_err(|e| lost(e.0))?;
            }
        }
    }
}

/// The pair test: this same binary's `pingpong -j`, so a fabric pair chooses its GID,
/// explains a failure and reads its counters exactly as the command does.
fn pingpong_command(me: &RankInfo, test: &PairTest, port: u16) -> Command {
    let exe = std::env::current_exe().unwrap_or_else(|_| "rdmactl".into());
    let mut c = Command::new(exe);
    c.args(["-j", "--color", "never", "pingpong", "-d"])
        .arg(&me.device)
        .args(["-i", &me.port.to_string(), "-g", &test.gid_index])
        .args(["-p", &port.to_string(), "-s", &test.size.to_string()])
        .args(["-n", &test.iters.to_string()])
        .args(["--timeout", &test.step_timeout.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // pingpong refuses a captured tree, and fabric already refused it.
        .env_remove("RDMACTL_SYSFS");
    c
}

fn serve(
    args: &FabricArgs,
    me: &RankInfo,
    test: &PairTest,
    ready: &mut dyn FnMut() -> bool,
) -> PairEnd {
    let start = Instant::now();
    if args.simulate {
        ready();
        return simulated(me, test);
    }
    let child = match pingpong_command(me, test, me.pair_port).spawn() {
        Ok(c) => c,
        Err(e) => return PairEnd::problem(format!("cannot start pingpong: {e}"), 0.0),
    };
    let mut run = ChildRun::new(child);
    // The partner may connect once the server listens; a server that dies first reports.
    let listen_by = Instant::now() + Duration::from_secs(10);
    loop {
        if crate::gather::procfs::listening(me.pair_port) {
            ready();
            break;
        }
        if run.exited() || Instant::now() >= listen_by {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    run.finish(start, secs(test.deadline), me)
}

fn connect(args: &FabricArgs, me: &RankInfo, test: &PairTest, host: &str, port: u16) -> PairEnd {
    let start = Instant::now();
    if args.simulate {
        return simulated(me, test);
    }
    let mut c = pingpong_command(me, test, port);
    c.arg(host);
    match c.spawn() {
        Ok(child) => ChildRun::new(child).finish(start, secs(test.deadline), me),
        Err(e) => PairEnd::problem(format!("cannot start pingpong: {e}"), 0.0),
    }
}

/// Made-up figures for control-plane tests: a pair "runs" at once.
fn simulated(me: &RankInfo, test: &PairTest) -> PairEnd {
    PairEnd {
        ok: true,
        usec_per_iter: Some(10.0 + f64::from(me.rank % 3)),
        mbit_per_sec: Some(f64::from(test.size) * 8.0 / 10.0),
        ..PairEnd::default()
    }
}

/// A pingpong child and the readers of its output (threads, so a full pipe never blocks it).
struct ChildRun {
    child: Child,
    stdout: Option<std::thread::JoinHandle<Vec<u8>>>,
    stderr: Option<std::thread::JoinHandle<Vec<u8>>>,
}

impl ChildRun {
    fn new(mut child: Child) -> ChildRun {
        let reader = |pipe: Option<Box<dyn Read + Send>>| {
            pipe.map(|mut p| {
                std::thread::spawn(move || {
                    let mut buf = Vec::new();
                    let _ = p.by_ref().take(4 << 20).read_to_end(&mut buf);
                    buf
                })
            })
        };
        let stdout = reader(
            child
                .stdout
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        );
        let stderr = reader(
            child
                .stderr
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        );
        ChildRun {
            child,
            stdout,
            stderr,
        }
    }

    fn exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }

    fn finish(mut self, start: Instant, deadline: Duration, me: &RankInfo) -> PairEnd {
        let mut killed = false;
        loop {
            match self.child.try_wait() {
                Ok(Some(_)) => break,
                Ok(None) if start.elapsed() >= deadline || crate::interrupt::caught().is_some() => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    killed = true;
                    break;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
                Err(_) => break,
            }
        }
        let out = self
            .stdout
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        let err = self
            .stderr
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        let seconds = start.elapsed().as_secs_f64();
        if killed {
            return PairEnd::problem(
                format!(
                    "the pair test on {} did not finish within --deadline {:.0} s and was stopped",
                    me.label(),
                    deadline.as_secs_f64()
                ),
                seconds,
            );
        }
        end_of_report(&out, &err, seconds)
    }
}

/// A pair end from `pingpong -j`'s report: its figures, failure and counters.
pub fn end_of_report(stdout: &[u8], stderr: &[u8], seconds: f64) -> PairEnd {
    let Ok(report) = serde_json::from_slice::<serde_json::Value>(stdout) else {
        let text = String::from_utf8_lossy(stderr);
        let last = text
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("no output");
        return PairEnd::problem(format!("pingpong gave no report: {last}"), seconds);
    };
    let figure = |op: &str, key: &str| {
        report
            .get("ops")
            .and_then(|o| o.get(op))
            .and_then(|o| o.get(key))
            .and_then(|v| v.as_f64())
            .filter(|v| v.is_finite())
    };
    let ops = report
        .get("ops")
        .and_then(|o| o.as_object())
        .map_or(0, |o| o.len()) as u64;
    let iters = report
        .get("ops")
        .and_then(|o| o.as_object())
        .and_then(|o| o.values().next())
        .and_then(|o| o.get("iters"))
        .and_then(|v| v.as_u64())
        .unwrap_or(0);
    let counters = report.get("counters").filter(|c| !c.is_null()).cloned();
    let mut end = PairEnd {
        ok: report.get("ok").and_then(|v| v.as_bool()).unwrap_or(false),
        usec_per_iter: figure("send", "usec_per_iter"),
        mbit_per_sec: figure("write", "mbit_per_sec"),
        path_mtu: report
            .get("path_mtu")
            .and_then(|v| v.as_u64())
            .and_then(|v| u32::try_from(v).ok()),
        failure: report.get("failure").filter(|f| !f.is_null()).cloned(),
        counters,
        problem: None,
        seconds: round3(seconds),
    };
    if let Some(c) = &end.counters {
        let deltas: Vec<crate::model::counter::WireDelta> = ["local", "peer"]
            .iter()
            .filter_map(|k| c.get(k))
            .filter_map(|d| serde_json::from_value(d.clone()).ok())
            .collect();
        let refs: Vec<&crate::model::counter::WireDelta> = deltas.iter().collect();
        let messages = iters * ops.max(1);
        if !refs.is_empty() && messages > 0 {
            let resends = crate::diagnose::counters::resends(&refs);
            // Carried in the counters object, where the JSON reader looks for it.
            if let Some(obj) = end.counters.as_mut().and_then(|c| c.as_object_mut()) {
                obj.insert(
                    "resends_per_mille".into(),
                    serde_json::json!(round3(resends as f64 * 1000.0 / messages as f64)),
                );
            }
        }
    }
    end
}

// ---------------------------------------------------------------------------------------
// Rank 0: the coordinator

struct LeaderConfig {
    token: String,
    size: u32,
    pattern: Pattern,
    test: PairTest,
    thresholds: Thresholds,
    join_deadline: Instant,
    progress: bool,
    launcher: &'static str,
    /// Pairs tested at once within a round.
    parallel: u32,
}

enum Event {
    Joined(u64, Box<RankInfo>, Channel),
    Msg(u64, u32, ToLeader),
    Gone(u64, u32, String),
}

struct Results {
    /// (a, b) → (round, server's end, client's end, why it did not run).
    ends: BTreeMap<(u32, u32), PairSlot>,
}

#[derive(Default, Clone)]
struct PairSlot {
    round: u32,
    server: Option<PairEnd>,
    client: Option<PairEnd>,
    not_run: Option<String>,
}

impl PairSlot {
    fn merged(&self) -> std::result::Result<PairEnd, String> {
        match (&self.client, &self.server) {
            (Some(c), _) => Ok(c.clone()),
            (None, Some(s)) => Ok(s.clone()),
            (None, None) => Err(self
                .not_run
                .clone()
                .unwrap_or_else(|| "no result from either end".into())),
        }
    }

    fn input(&self, a: u32, b: u32) -> PairInput {
        let end = self.merged();
        let resends_per_mille = end
            .as_ref()
            .ok()
            .and_then(|e| e.counters.as_ref()?.get("resends_per_mille")?.as_f64());
        PairInput {
            a,
            b,
            end,
            resends_per_mille,
        }
    }
}

struct Leader {
    cfg: LeaderConfig,
    events: mpsc::Receiver<Event>,
    conns: BTreeMap<u32, (u64, Channel)>,
    infos: BTreeMap<u32, RankInfo>,
    gone: BTreeMap<u32, String>,
    round_now: u32,
    started: Instant,
    pairs_done: usize,
    pairs_total: usize,
}

/// Where rank 0's report goes.
struct ReportOut {
    ctx: Ctx,
    csv: Option<std::path::PathBuf>,
    svg: Option<std::path::PathBuf>,
}

/// Rank 0's coordinator: the run, then the report printed, then the others told to exit
/// (in that order: a launcher that ends the job when a rank exits must not cut the report).
fn lead(listener: std::net::TcpListener, cfg: LeaderConfig, out: ReportOut) -> Result<u8> {
    let (tx, rx) = mpsc::channel();
    let token = cfg.token.clone();
    let size = cfg.size;
    std::thread::spawn(move || accept_loop(listener, tx, token, size));
    let mut leader = Leader {
        cfg,
        events: rx,
        conns: BTreeMap::new(),
        infos: BTreeMap::new(),
        gone: BTreeMap::new(),
        round_now: 0,
        started: Instant::now(),
        pairs_done: 0,
        pairs_total: 0,
    };
    let report = leader.run();
    let printed = finish(&out, &report);
    leader.done(match &printed {
        Ok(code) => *code,
        Err(e) => e.exit_code(),
    });
    printed
}

fn accept_loop(listener: std::net::TcpListener, tx: mpsc::Sender<Event>, token: String, size: u32) {
    let mut next_id = 0u64;
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        next_id += 1;
        let id = next_id;
        let tx = tx.clone();
        let token = token.clone();
        std::thread::spawn(move || {
            let Ok(mut ch) = Channel::new(stream) else {
                return;
            };
            // A stranger gets 10 s to say who it is, then the door closes.
            let join: Option<ToLeader> = ch.recv(Some(Duration::from_secs(10))).ok().flatten();
            let refuse = |ch: &mut Channel, reason: String| {
                let _ = ch.send(&ToRank::Refused { reason }, SEND);
                ch.shutdown();
            };
            let Some(ToLeader::Join {
                token: t,
                size: s,
                info,
            }) = join
            else {
                ch.shutdown();
                return;
            };
            if t != token {
                return refuse(
                    &mut ch,
                    "the run token differs: this rank belongs to another run (--token, or the launcher's job id)".into(),
                );
            }
            if s != size || info.rank >= size {
                return refuse(
                    &mut ch,
                    format!(
                        "rank {} of size {s}, but this run has size {size}",
                        info.rank
                    ),
                );
            }
            let rank = info.rank;
            let Ok(reader) = ch.try_clone() else { return };
            if tx.send(Event::Joined(id, info, ch)).is_err() {
                return;
            }
            let mut reader = reader;
            loop {
                match reader.recv::<ToLeader>(None) {
                    Ok(Some(msg)) => {
                        if tx.send(Event::Msg(id, rank, msg)).is_err() {
                            return;
                        }
                    }
                    Ok(None) => {
                        let _ = tx.send(Event::Gone(id, rank, "closed its connection".into()));
                        return;
                    }
                    Err(e) => {
                        let _ = tx.send(Event::Gone(id, rank, e.0));
                        return;
                    }
                }
            }
        });
    }
}

impl Leader {
    fn run(&mut self) -> FabricReport {
        self.join_phase();
        let infos: Vec<RankInfo> = self.infos.values().cloned().collect();
        let drift = rules::drift(&infos);
        let able: Vec<(u32, u32)> = infos
            .iter()
            .filter(|i| i.problem.is_none())
            .map(|i| (i.rank, i.local_rank))
            .collect();
        let rounds = rules::schedule(&able, self.cfg.pattern, rules::seed_of(&self.cfg.token));
        self.pairs_total = rounds.iter().map(Vec::len).sum();
        let mut results = Results {
            ends: BTreeMap::new(),
        };
        for (k, round) in rounds.iter().enumerate() {
            if crate::interrupt::caught().is_some() {
                for p in round {
                    results.ends.entry(*p).or_default().not_run =
                        Some("the run was interrupted".into());
                }
                continue;
            }
            self.round_now = k as u32 + 1;
            self.progress(rounds.len());
            self.run_round(k as u32 + 1, round, &mut results);
        }
        let t = self.cfg.thresholds.clone();
        let first = judge_all(&results, &t);
        // Retest what was bad, once; a pair that could not run is not retested.
        let bad: Vec<(u32, u32)> = first
            .1
            .iter()
            .filter(|v| v.state.is_bad() && v.state != PairState::NotRun)
            .filter(|v| !self.gone.contains_key(&v.a) && !self.gone.contains_key(&v.b))
            .map(|v| (v.a, v.b))
            .collect();
        let first_states: BTreeMap<(u32, u32), PairState> =
            first.1.iter().map(|v| ((v.a, v.b), v.state)).collect();
        let retest = rules::pack_rounds(&bad);
        let base_round = rounds.len() as u32;
        let mut retested = BTreeSet::new();
        for (k, round) in retest.iter().enumerate() {
            if crate::interrupt::caught().is_some() {
                break;
            }
            let mut again = Results {
                ends: BTreeMap::new(),
            };
            self.round_now = base_round + k as u32 + 1;
            self.run_round(self.round_now, round, &mut again);
            for (pair, slot) in again.ends {
                retested.insert(pair);
                results.ends.insert(pair, slot);
            }
        }
        if self.cfg.progress {
            eprint!("\r\x1b[K");
        }
        let (baseline, verdicts) = judge_all(&results, &t);
        let joined: BTreeSet<u32> = self.infos.keys().copied().collect();
        let suspects = rules::attribute(self.cfg.size, &joined, &self.gone, &infos, &verdicts);
        let ends: BTreeMap<(u32, u32), PairEnd> = results
            .ends
            .iter()
            .filter_map(|(k, s)| s.merged().ok().map(|e| (*k, e)))
            .collect();
        let suspect_rows: Vec<SuspectRow> = suspects
            .iter()
            .map(|s| self.suspect_row(s, &verdicts, &ends, &drift, &baseline))
            .collect();
        let pairs: Vec<PairRow> = verdicts
            .iter()
            .map(|v| {
                let slot = &results.ends[&(v.a, v.b)];
                // One copy of the pair's result, taken apart into the row.
                let PairInput {
                    end,
                    resends_per_mille,
                    ..
                } = slot.input(v.a, v.b);
                let (end, not_run) = match end {
                    Ok(e) => (Some(e), None),
                    Err(why) => (None, Some(why)),
                };
                let retested_now = retested.contains(&(v.a, v.b));
                PairRow {
                    a: v.a,
                    b: v.b,
                    round: slot.round,
                    ok: !v.state.is_bad(),
                    state: v.state,
                    why: v.why.clone(),
                    usec_per_iter: end.as_ref().and_then(|e| e.usec_per_iter),
                    mbit_per_sec: end.as_ref().and_then(|e| e.mbit_per_sec),
                    path_mtu: end.as_ref().and_then(|e| e.path_mtu),
                    latency_ratio: v.latency_ratio.map(round3),
                    bandwidth_ratio: v.bandwidth_ratio.map(round3),
                    resends_per_mille: resends_per_mille.map(round3),
                    retested: retested_now,
                    first_state: retested_now
                        .then(|| first_states.get(&(v.a, v.b)).copied())
                        .flatten(),
                    problem: end.as_ref().and_then(|e| e.problem.clone()).or(not_run),
                    failure: end.as_ref().and_then(|e| e.failure.clone()),
                    counters: end.and_then(|e| e.counters),
                }
            })
            .collect();
        let ranks: Vec<RankRow> = (0..self.cfg.size)
            .map(|r| match self.infos.get(&r) {
                Some(info) => RankRow {
                    info: info.clone(),
                    status: if self.gone.contains_key(&r) {
                        "left"
                    } else {
                        "joined"
                    },
                },
                None => RankRow {
                    info: RankInfo {
                        rank: r,
                        ..RankInfo::default()
                    },
                    status: "missing",
                },
            })
            .collect();
        let ok = suspect_rows.is_empty() && drift.is_empty() && pairs.iter().all(|p| p.ok);
        let verdict = verdict_line(&suspect_rows, &drift, &pairs, &baseline, &ranks);
        FabricReport {
            run: RunFacts {
                launcher: self.cfg.launcher,
                token: if self.cfg.token.is_empty() {
                    "none"
                } else {
                    "checked"
                },
                size: self.cfg.size,
                joined: joined.len() as u32,
                pattern: self.cfg.pattern.name(),
                rounds: rounds.len() as u32,
                retest_rounds: retest.len() as u32,
                message_size: self.cfg.test.size,
                iters: self.cfg.test.iters,
                deadline: self.cfg.test.deadline,
                thresholds: t,
                seconds: (self.started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0,
            },
            ranks,
            drift,
            baseline,
            pairs,
            suspects: suspect_rows,
            verdict,
            ok,
        }
    }

    fn done(&mut self, exit: u8) {
        for (_, ch) in self.conns.values_mut() {
            let _ = ch.send(&ToRank::Done { exit }, Duration::from_secs(2));
        }
    }

    fn join_phase(&mut self) {
        while (self.infos.len() as u32) < self.cfg.size {
            let left = self
                .cfg
                .join_deadline
                .saturating_duration_since(Instant::now());
            if left.is_zero() || crate::interrupt::caught().is_some() {
                break;
            }
            if self.cfg.progress {
                eprint!(
                    "\r\x1b[Kwaiting for ranks: {} of {} joined",
                    self.infos.len(),
                    self.cfg.size
                );
            }
            match self
                .events
                .recv_timeout(left.min(Duration::from_millis(500)))
            {
                Ok(ev) => self.handle(ev, None),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
    }

    /// Book-keeping for any event; `round` collects a pair's messages during a round.
    fn handle(&mut self, ev: Event, round: Option<&mut RoundState>) {
        match ev {
            Event::Joined(id, info, mut ch) => {
                let rank = info.rank;
                if self.infos.contains_key(&rank) {
                    let _ = ch.send(
                        &ToRank::Refused {
                            reason: format!("rank {rank} has already joined this run (two processes were given the same --rank?)"),
                        },
                        SEND,
                    );
                    ch.shutdown();
                    return;
                }
                if self.round_now > 0 {
                    let _ = ch.send(
                        &ToRank::Refused {
                            reason: "joined after the pair tests began (--join-timeout)".into(),
                        },
                        SEND,
                    );
                    ch.shutdown();
                    return;
                }
                if ch.send(&ToRank::Welcome, SEND).is_ok() {
                    self.infos.insert(rank, *info);
                    self.conns.insert(rank, (id, ch));
                }
            }
            Event::Gone(id, rank, why) => {
                if self.conns.get(&rank).map(|c| c.0) != Some(id) {
                    return;
                }
                self.conns.remove(&rank);
                let host = self.infos.get(&rank).map(|i| i.label()).unwrap_or_default();
                let when = if self.round_now == 0 {
                    "before the pair tests".to_string()
                } else {
                    format!("in round {}", self.round_now)
                };
                self.gone.insert(
                    rank,
                    format!("rank {rank} ({host}) left the run {when}: {why}"),
                );
                if let Some(r) = round {
                    r.rank_gone(rank, &self.gone[&rank]);
                }
            }
            Event::Msg(id, rank, msg) => {
                if self.conns.get(&rank).map(|c| c.0) != Some(id) {
                    return;
                }
                let Some(r) = round else { return };
                match msg {
                    ToLeader::Join { .. } => {}
                    ToLeader::Ready { round, a, b } => {
                        if round == r.number && r.pending.contains(&(a, b)) && rank == a {
                            r.ready.push((a, b));
                        }
                    }
                    ToLeader::Result {
                        round,
                        a,
                        b,
                        client,
                        end,
                    } => {
                        // Only the pair's own ends report on it.
                        let from_end = (client && rank == b) || (!client && rank == a);
                        if round == r.number && from_end {
                            if let Some(slot) = r.slots.get_mut(&(a, b)) {
                                if client {
                                    slot.client = Some(*end);
                                } else {
                                    slot.server = Some(*end);
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    fn run_round(&mut self, number: u32, pairs: &[(u32, u32)], results: &mut Results) {
        let mut state = RoundState {
            number,
            pending: pairs.iter().copied().collect(),
            slots: pairs
                .iter()
                .map(|p| {
                    (
                        *p,
                        PairSlot {
                            round: number,
                            ..PairSlot::default()
                        },
                    )
                })
                .collect(),
            ready: Vec::new(),
            connected: BTreeSet::new(),
        };
        let test = self.cfg.test.clone();
        // Both ends' deadlines, the server's listen wait, and the reports' way back.
        let per_pair = secs(test.deadline * 2.0 + 15.0);
        let mut waiting: std::collections::VecDeque<(u32, u32)> = pairs.iter().copied().collect();
        let mut started: BTreeMap<(u32, u32), Instant> = BTreeMap::new();
        let parallel = self.cfg.parallel.max(1) as usize;
        loop {
            // Start pairs up to --parallel (all of the round by default).
            while started.keys().filter(|p| state.pending.contains(p)).count() < parallel {
                let Some((a, b)) = waiting.pop_front() else {
                    break;
                };
                for r in [a, b] {
                    if let Some(why) = self.gone.get(&r) {
                        state.rank_gone(r, why);
                    }
                }
                if !state.pending.contains(&(a, b)) {
                    continue;
                }
                started.insert((a, b), Instant::now());
                let sent = self.conns.get_mut(&a).map(|(_, ch)| {
                    ch.send(
                        &ToRank::Serve {
                            round: number,
                            a,
                            b,
                            test: test.clone(),
                        },
                        SEND,
                    )
                });
                if !matches!(sent, Some(Ok(()))) {
                    let why = format!("rank {a} could not be told to serve");
                    state.fail_pair((a, b), &why);
                }
            }
            if state.pending.is_empty() {
                break;
            }
            for (p, at) in &started {
                if state.pending.contains(p) && at.elapsed() >= per_pair {
                    state.fail_pair(
                        *p,
                        "no result from either end before rank 0's deadline for the pair",
                    );
                }
            }
            match self.events.recv_timeout(Duration::from_millis(200)) {
                Ok(ev) => self.handle(ev, Some(&mut state)),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
            for (a, b) in std::mem::take(&mut state.ready) {
                if !state.connected.insert((a, b)) {
                    continue;
                }
                let (host, port) = match self.infos.get(&a) {
                    Some(i) => (i.tcp_host.clone(), i.pair_port),
                    None => continue,
                };
                let sent = self.conns.get_mut(&b).map(|(_, ch)| {
                    ch.send(
                        &ToRank::Connect {
                            round: number,
                            a,
                            b,
                            host,
                            port,
                            test: test.clone(),
                        },
                        SEND,
                    )
                });
                if !matches!(sent, Some(Ok(()))) {
                    state.client_lost((a, b), &format!("rank {b} could not be told to connect"));
                }
            }
            state.settle();
        }
        self.pairs_done += pairs.len();
        for (p, slot) in state.slots {
            results.ends.insert(p, slot);
        }
    }

    fn progress(&self, rounds: usize) {
        if !self.cfg.progress {
            return;
        }
        let elapsed = self.started.elapsed().as_secs_f64();
        let done = self.pairs_done.max(1) as f64;
        let eta = if self.pairs_done > 0 {
            format!(
                ", ETA {}",
                clock(elapsed / done * (self.pairs_total - self.pairs_done) as f64)
            )
        } else {
            String::new()
        };
        eprint!(
            "\r\x1b[Kround {} of {rounds}, pairs {}/{}, {} elapsed{eta}",
            self.round_now,
            self.pairs_done,
            self.pairs_total,
            clock(elapsed)
        );
    }

    fn suspect_row(
        &self,
        s: &Suspect,
        verdicts: &[PairVerdict],
        ends: &BTreeMap<(u32, u32), PairEnd>,
        drift: &[Drift],
        baseline: &PerfBaseline,
    ) -> SuspectRow {
        let info = |r: Option<u32>| r.and_then(|r| self.infos.get(&r));
        let explanation = rules::explain_suspect(s, &self.infos, verdicts, ends, drift, baseline);
        SuspectRow {
            kind: s.kind,
            code: s.code,
            rank: s.rank,
            host: info(s.rank).map(|i| i.host.clone()),
            device: info(s.rank)
                .map(|i| i.device.clone())
                .filter(|d| !d.is_empty()),
            peer_rank: s.peer_rank,
            peer_host: info(s.peer_rank).map(|i| i.host.clone()),
            peer_device: info(s.peer_rank).map(|i| i.device.clone()),
            reason: s.reason.clone(),
            pairs: s.pairs.clone(),
            explanation,
        }
    }
}

struct RoundState {
    number: u32,
    pending: BTreeSet<(u32, u32)>,
    slots: BTreeMap<(u32, u32), PairSlot>,
    ready: Vec<(u32, u32)>,
    connected: BTreeSet<(u32, u32)>,
}

impl RoundState {
    fn fail_pair(&mut self, p: (u32, u32), why: &str) {
        if let Some(slot) = self.slots.get_mut(&p) {
            slot.not_run.get_or_insert_with(|| why.to_string());
        }
        self.pending.remove(&p);
    }

    /// The client end will not report: what the server says stands alone.
    fn client_lost(&mut self, p: (u32, u32), why: &str) {
        if let Some(slot) = self.slots.get_mut(&p) {
            slot.not_run.get_or_insert_with(|| why.to_string());
            slot.client
                .get_or_insert_with(|| PairEnd::problem(why, 0.0));
        }
    }

    fn rank_gone(&mut self, rank: u32, why: &str) {
        for p in self.pending.clone() {
            if p.0 == rank || p.1 == rank {
                self.fail_pair(p, why);
            }
        }
    }

    /// A pair is done when both ends reported, or the server reported without ever
    /// asking for its client (it failed before listening).
    fn settle(&mut self) {
        let connected = &self.connected;
        let done: Vec<(u32, u32)> = self
            .pending
            .iter()
            .filter(|p| {
                let s = &self.slots[p];
                (s.client.is_some() && s.server.is_some())
                    || (s.server.is_some() && !connected.contains(p))
            })
            .copied()
            .collect();
        for p in done {
            self.pending.remove(&p);
        }
    }
}

fn judge_all(results: &Results, t: &Thresholds) -> (PerfBaseline, Vec<PairVerdict>) {
    let inputs: Vec<PairInput> = results
        .ends
        .iter()
        .map(|((a, b), s)| s.input(*a, *b))
        .collect();
    let base = rules::baseline(&inputs, t);
    let verdicts = inputs
        .iter()
        .map(|p| rules::judge_pair(p, &base, t))
        .collect();
    (base, verdicts)
}

/// JSON figures to 3 decimals, as every other command rounds them.
fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn clock(secs: f64) -> String {
    let s = secs.max(0.0) as u64;
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

fn verdict_line(
    suspects: &[SuspectRow],
    drift: &[Drift],
    pairs: &[PairRow],
    baseline: &PerfBaseline,
    ranks: &[RankRow],
) -> String {
    let bad = pairs
        .iter()
        .filter(|p| !p.ok && p.state != PairState::NotRun)
        .count();
    let not_run = pairs
        .iter()
        .filter(|p| p.state == PairState::NotRun)
        .count();
    let joined = ranks.iter().filter(|r| r.status != "missing").count();
    let base = match (baseline.usec_per_iter, baseline.mbit_per_sec) {
        (Some(u), Some(m)) => format!("baseline {u:.1} µs/iter, {m:.0} Mbit/s"),
        (Some(u), None) => format!("baseline {u:.1} µs/iter"),
        (None, Some(m)) => format!("baseline {m:.0} Mbit/s"),
        (None, None) => "no baseline".into(),
    };
    if suspects.is_empty() && drift.is_empty() && bad == 0 && not_run == 0 {
        return format!(
            "clean: {} pairs of {joined} endpoints good ({base})",
            pairs.len()
        );
    }
    let mut parts = Vec::new();
    if !suspects.is_empty() {
        let named: Vec<String> = suspects
            .iter()
            .take(3)
            .map(|s| {
                let who = match (&s.host, &s.device, s.rank) {
                    (Some(h), Some(d), Some(r)) => format!("{h} {d} (rank {r})"),
                    (Some(h), None, Some(r)) => format!("{h} (rank {r})"),
                    (_, _, Some(r)) => format!("rank {r}"),
                    _ => "the fabric".into(),
                };
                match s.peer_rank {
                    Some(p) => format!(
                        "{who} ↔ {} (rank {p}): {}",
                        s.peer_host.clone().unwrap_or_default(),
                        s.kind_word()
                    ),
                    None => format!("{who}: {}", s.reason),
                }
            })
            .collect();
        let more = suspects.len().saturating_sub(3);
        parts.push(format!(
            "{} suspect(s): {}{}",
            suspects.len(),
            named.join("; "),
            if more > 0 {
                format!("; and {more} more")
            } else {
                String::new()
            }
        ));
    }
    if bad > 0 {
        parts.push(format!("{bad} of {} pairs bad", pairs.len()));
    }
    if not_run > 0 {
        parts.push(format!("{not_run} of {} pairs not run", pairs.len()));
    }
    if !drift.is_empty() {
        parts.push(format!(
            "drift in {}",
            drift
                .iter()
                .map(|d| d.attribute)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    format!("{} ({base})", parts.join("; "))
}

fn finish(out: &ReportOut, report: &FabricReport) -> Result<u8> {
    let ctx = &out.ctx;
    if let Some(path) = &out.csv {
        std::fs::write(path, crate::render::fabric::csv(report)).map_err(|e| Error::Io {
            path: path.clone(),
            source: e,
        })?;
    }
    if let Some(path) = &out.svg {
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
    Ok(if report.ok { 0 } else { 1 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pingpong_report_becomes_a_pair_end() {
        let out = br#"{"ok": true, "ops": {"send": {"iters": 500, "usec_per_iter": 310.5, "mbit_per_sec": 105.0},
            "write": {"iters": 500, "usec_per_iter": 50.0, "mbit_per_sec": 880.25}},
            "counters": {"scope": "port", "local": {"device": "rxe0", "port": 1, "flavor": "rxe", "has_counters_dir": false, "seconds": 1.0,
               "counters": [{"name": "rcvd_seq_err", "source": "hw_counters", "at_least": 30, "exact": true}]},
               "peer": null, "findings": []}, "failure": null}"#;
        let end = end_of_report(out, b"", 1.5);
        assert!(end.ok);
        assert_eq!(end.usec_per_iter, Some(310.5));
        assert_eq!(end.mbit_per_sec, Some(880.25));
        assert!(end.failure.is_none());
        let _ = end.counters.as_ref().unwrap();
        let failed = end_of_report(b"", b"rdmactl: no device 'rxe9'; devices: rxe0\n", 0.1);
        assert!(!failed.ok);
        assert_eq!(
            failed.problem.as_deref(),
            Some("pingpong gave no report: rdmactl: no device 'rxe9'; devices: rxe0")
        );
    }

    #[test]
    fn rendezvous_addresses_parse() {
        assert_eq!(split_host_port("h0:18514").unwrap(), ("h0".into(), 18514));
        assert_eq!(
            split_host_port("[fd00::1]:5").unwrap(),
            ("fd00::1".into(), 5)
        );
        assert!(split_host_port("h0").is_err());
        assert!(split_host_port("h0:0").is_err());
        assert!(split_host_port(":5").is_err());
    }

    #[test]
    fn a_round_settles_when_both_ends_report_or_the_server_failed_alone() {
        let mut r = RoundState {
            number: 1,
            pending: BTreeSet::from([(0, 1), (2, 3), (4, 5)]),
            slots: [(0, 1), (2, 3), (4, 5)]
                .into_iter()
                .map(|p| (p, PairSlot::default()))
                .collect(),
            ready: Vec::new(),
            connected: BTreeSet::from([(0, 1), (2, 3)]),
        };
        r.slots.get_mut(&(0, 1)).unwrap().server = Some(PairEnd::default());
        r.slots.get_mut(&(0, 1)).unwrap().client = Some(PairEnd::default());
        r.slots.get_mut(&(2, 3)).unwrap().server = Some(PairEnd::default());
        r.slots.get_mut(&(4, 5)).unwrap().server = Some(PairEnd::problem("no listen", 0.0));
        r.settle();
        assert_eq!(r.pending, BTreeSet::from([(2, 3)]));
        r.rank_gone(3, "rank 3 left");
        assert!(r.pending.is_empty());
        assert_eq!(r.slots[&(2, 3)].merged().unwrap(), PairEnd::default());
    }
}
