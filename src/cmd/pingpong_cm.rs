//! `pingpong --cm` and `selftest --cm`: the same ping-pong as the TCP exchange, but
//! connected through the RDMA connection manager, so the kernel picks device, port and GID
//! from the route to the peer. `check --peer` asks the kernel the same question
//! (`cmd::check_kernel`).

use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use comfy_table::Table;
use serde::Serialize;

use super::results::{ns_per_tick, op_result, OpResult, OpResults};
use crate::app::Ctx;
use crate::cli::{GidIndexArg, Op as OpArg, PingpongArgs, SelftestArgs};
use crate::error::{exit, Error, Result};
use crate::output;
use crate::sysfs::SysfsRoot;
use crate::verbs::cm::{
    self, CmError, ConnInfo, ConnectOptions, Endpoint, Listener, Op, Region, Resolution, StepDone,
    Wake,
};
use crate::verbs::qp::ticks;

/// How long a server waits for its first client: long enough to walk to the other host,
/// short enough that a forgotten server does not sit there for ever.
const SERVER_WAIT: Duration = Duration::from_secs(600);

/// The TCP exchange's report shape (role, exchange, device, port, gid_index, peer, size,
/// path_mtu, `ops`, a single op's figures repeated at the top level, ok), plus what the CM
/// set up and what the kernel chose.
#[derive(Debug, Serialize)]
struct ClientReport<'a> {
    role: &'static str,
    exchange: &'static str,
    device: &'a str,
    port: u8,
    gid_index: u8,
    peer: String,
    size: u32,
    path_mtu: u32,
    ops: &'a OpResults,
    #[serde(flatten)]
    single: Option<OpResult>,
    ok: bool,
    connection: &'a ConnInfo,
    kernel_choice: &'a Resolution,
}

fn client_report<'a>(
    info: &'a ConnInfo,
    res: &'a Resolution,
    size: u32,
    ops: &'a OpResults,
) -> ClientReport<'a> {
    ClientReport {
        role: "client",
        exchange: "cm",
        device: &info.device,
        port: info.port,
        gid_index: info.sgid_index,
        peer: info.peer.to_string(),
        size,
        path_mtu: info.path_mtu,
        ops,
        single: ops.single(),
        ok: true,
        connection: info,
        kernel_choice: res,
    }
}

#[derive(Debug, Serialize)]
struct ServerReport<'a> {
    role: &'static str,
    exchange: &'static str,
    connection: &'a ConnInfo,
    echoed: u64,
    stock_client: bool,
}

/// The byte every side expects at offset `i` of a test buffer, so data is checked end to end.
fn pattern(i: usize) -> u8 {
    (i % 251) as u8 ^ 0x5a
}

fn fill_pattern(buf: &mut [u8]) {
    for (i, b) in buf.iter_mut().enumerate() {
        *b = pattern(i);
    }
}

fn first_mismatch(buf: &[u8]) -> Option<usize> {
    buf.iter().enumerate().position(|(i, b)| *b != pattern(i))
}

fn timeout_of(secs: f64) -> Result<Duration> {
    if !(secs.is_finite() && secs > 0.0 && secs < 86_400.0) {
        return Err(Error::Usage(format!(
            "--timeout {secs}: give a number of seconds between 0 and 86400"
        )));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// The IPv4 address a RoCE port carries, from its GID table in sysfs (the IPv4-mapped
/// GID); the CM needs an address, not a device name.
pub fn device_ipv4(sysfs: &Path, device: &str, port: u32) -> Result<IpAddr> {
    SysfsRoot::new(sysfs)
        .gid_table(device, port, false)?
        .iter()
        .find_map(|e| e.gid.ipv4().filter(|ip| !ip.is_unspecified()))
        .map(IpAddr::V4)
        .ok_or_else(|| {
            Error::Usage(format!(
                "{device}/{port} has no IPv4 address in its GID table; the CM connects by IP address: \
                 give one with --bind, or put an address on the port's netdev"
            ))
        })
}

fn first_device(sysfs: &Path) -> Result<String> {
    let root = SysfsRoot::new(sysfs);
    root.device_names()?
        .into_iter()
        .next()
        .ok_or_else(|| Error::NoDevices {
            path: root.path().join("class/infiniband"),
        })
}

fn peer_addr(server: &str, port: u16) -> Result<SocketAddr> {
    if let Ok(ip) = server.parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, port));
    }
    (server, port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut it| it.next())
        .ok_or_else(|| Error::Usage(format!("cannot resolve '{server}' to an IP address")))
}

fn quiet(_: StepDone) {}

/// `pingpong --cm`: client with SERVER, server without.
pub fn run(ctx: &Ctx, args: &PingpongArgs) -> Result<u8> {
    let timeout = timeout_of(args.timeout)?;
    if args.compat.is_some() {
        return Err(Error::Usage(
            "--compat speaks a TCP exchange; it does not combine with --cm".into(),
        ));
    }
    if args.gid_index.is_some() {
        return Err(Error::Usage(
            "-g does not apply with --cm: the kernel picks the GID from the route (rdmactl check --peer shows its choice)".into(),
        ));
    }
    if args.size == 0 {
        return Err(Error::Usage("--size must be at least 1 byte".into()));
    }
    let src = match (args.bind, &args.device) {
        (Some(ip), _) => Some(ip),
        (None, Some(dev)) => Some(device_ipv4(&ctx.sysfs, dev, args.port)?),
        (None, None) => None,
    };
    match &args.server {
        Some(server) => client(ctx, args, peer_addr(server, args.tcp_port)?, src, timeout),
        None => server(ctx, args, src, timeout),
    }
}

fn client(
    ctx: &Ctx,
    args: &PingpongArgs,
    peer: SocketAddr,
    src: Option<IpAddr>,
    timeout: Duration,
) -> Result<u8> {
    let opts = ConnectOptions {
        src,
        len: args.size,
        timeout,
    };
    let (mut ep, res) = cm::connect(peer, &opts, &mut quiet)?;
    if let Some(dev) = &args.device {
        if dev != &res.device {
            return Err(Error::Usage(format!(
                "the kernel routes {peer} through {}, not {dev}; give --bind with {dev}'s address",
                res.device
            )));
        }
    }
    let ops: &[Op] = match args.op {
        OpArg::Send => &[Op::Send],
        OpArg::Write => &[Op::Write],
        OpArg::Read => &[Op::Read],
        OpArg::All => &[Op::Send, Op::Write, Op::Read],
    };
    // On stderr even with --json, as the server's "listening" line: a long run shows it got
    // this far, and scripts can wait for it before disturbing the connection.
    eprintln!(
        "connected to {peer} on {}/{} (GID index {}); {} x {} iterations of {} bytes",
        ep.info.device,
        ep.info.port,
        ep.info.sgid_index,
        ops.iter().map(|op| op.name()).collect::<Vec<_>>().join("+"),
        args.iters,
        args.size
    );
    let mut results = OpResults::default();
    for op in ops {
        let (name, result) = run_op(&mut ep, *op, args.size, args.iters)?;
        results.insert(name, result);
    }
    let info = ep.info.clone();
    ep.disconnect()?;
    if ctx.json {
        let report = client_report(&info, &res, args.size, &results);
        output::print(&output::json(&report))?;
    } else {
        output::print(&render_client(&info, &res, args.size, &results))?;
    }
    Ok(exit::OK)
}

/// `iters` times `op`, one at a time; the samples are post to completion (for SEND, to
/// both our completion and the echo: a round trip, as ibv_rc_pingpong counts it).
fn run_op(ep: &mut Endpoint, op: Op, size: u32, iters: u32) -> Result<(&'static str, OpResult)> {
    let len = size as usize;
    fill_pattern(ep.region(Region::Send));
    ep.region(Region::Rdma).fill(0);
    let mut samples_ns: Vec<u64> = vec![0; iters as usize];
    let waiting_for = match op {
        Op::Send => "the echo of a SEND",
        Op::Write => "an RDMA WRITE completion",
        Op::Read => "an RDMA READ completion",
    };
    // TSC ticks per sample, as the TCP exchange measures (no clock read per iteration).
    let start = Instant::now();
    let start_tick = ticks();
    for (i, sample) in samples_ns.iter_mut().enumerate() {
        let t0 = ticks();
        ep.post(op, len, i as u64)?;
        if op == Op::Send {
            // The echo can complete before our own send completion is polled.
            let (mut sent, mut echoed) = (false, false);
            while !(sent && echoed) {
                let c = ep.poll(waiting_for)?;
                if c.is_recv {
                    echoed = true;
                    ep.post_recv()?;
                } else {
                    sent = true;
                }
            }
        } else {
            ep.poll(waiting_for)?;
        }
        *sample = ticks().saturating_sub(t0);
    }
    let elapsed = start.elapsed();
    let scale = ns_per_tick(start_tick, ticks(), elapsed);
    for sample in &mut samples_ns {
        *sample = (*sample as f64 * scale) as u64;
    }
    let name = op.name();
    let (bytes, check) = match op {
        Op::Send => (
            2 * size as u64 * iters as u64,
            first_mismatch(ep.region(Region::Recv)),
        ),
        Op::Write => (size as u64 * iters as u64, None),
        Op::Read => (
            size as u64 * iters as u64,
            first_mismatch(ep.region(Region::Rdma)),
        ),
    };
    if let (Some(at), true) = (check, iters > 0) {
        return Err(Error::Failed(format!(
            "{name}: data arrived corrupted at byte {at} of {size}: the transfer completed but the bytes differ"
        )));
    }
    let mut result = op_result(iters, bytes, elapsed, &mut samples_ns);
    result.verified = match op {
        Op::Send if iters > 0 => Some(format!("every echo matched the {size}-byte pattern")),
        Op::Read if iters > 0 => Some(format!("read the peer's {size}-byte buffer and it matched")),
        _ => None,
    };
    Ok((name, result))
}

fn render_client(info: &ConnInfo, res: &Resolution, size: u32, results: &OpResults) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "connected {} -> {} through the CM: {}/{} QPN {:#08x} <-> {:#08x}, GID index {} ({}{}), path MTU {}",
        info.local.map_or("?".into(), |a| a.to_string()),
        info.peer,
        info.device,
        info.port,
        info.qpn,
        info.remote_qpn,
        info.sgid_index,
        res.sgid,
        res.netdev.as_deref().map(|n| format!(", {n}")).unwrap_or_default(),
        info.path_mtu,
    );
    let mut table = Table::new();
    table.set_header(vec![
        "op",
        "size",
        "iters",
        "bytes",
        "seconds",
        "Mbit/s",
        "usec/iter",
        "min",
        "median",
        "p99",
    ]);
    for (name, r) in results.iter() {
        table.add_row(vec![
            name.to_string(),
            size.to_string(),
            r.iters.to_string(),
            r.bytes.to_string(),
            format!("{:.3}", r.seconds),
            format!("{:.2}", r.mbit_per_sec),
            format!("{:.2}", r.usec_per_iter),
            format!("{:.2}", r.latency_usec.min),
            format!("{:.2}", r.latency_usec.median),
            format!("{:.2}", r.latency_usec.p99),
        ]);
    }
    let _ = write!(out, "{table}\n(latencies in usec; send is a round trip)");
    out
}

fn server(ctx: &Ctx, args: &PingpongArgs, src: Option<IpAddr>, timeout: Duration) -> Result<u8> {
    let addr = SocketAddr::new(
        src.unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
        args.tcp_port,
    );
    let listener = Listener::bind(addr)?;
    // On stderr even with --json: scripts wait for this line before starting the client.
    {
        eprintln!(
            "listening on {} ({}) for an rdmactl pingpong --cm client",
            listener.local_addr().unwrap_or(addr),
            listener
                .device()
                .unwrap_or_else(|| "every RDMA device".into())
        );
    }
    let mut ep = listener.accept(
        SERVER_WAIT.max(timeout),
        timeout,
        &mut quiet,
        &mut fill_pattern,
    )?;
    let echoed = serve(&mut ep)?;
    let info = ep.info.clone();
    let foreign = ep.foreign;
    ep.disconnect()?;
    if ctx.json {
        let report = ServerReport {
            role: "server",
            exchange: "cm",
            connection: &info,
            echoed,
            stock_client: foreign,
        };
        output::print(&output::json(&report))?;
    } else {
        let what = if foreign {
            "a stock client (rping/rdma_client)"
        } else {
            "an rdmactl client"
        };
        output::print(&format!(
            "served {what} at {} from {} on {}/{} (GID index {}): {echoed} messages answered",
            info.peer,
            info.local.map_or("?".into(), |a| a.to_string()),
            info.device,
            info.port,
            info.sgid_index
        ))?;
    }
    Ok(exit::OK)
}

/// Echo every SEND until the client disconnects. The client's READs and WRITEs need no
/// help from this side, only the buffer advertised in the accept.
///
/// A stock client gets its own protocol: rping sends a 16-byte {addr, rkey, len} (all
/// big-endian); the server READs the "ping", answers with a 16-byte go-ahead, gets the
/// sink's {addr, rkey, len}, WRITEs the ping back and sends another go-ahead.
/// rdma_client sends 16 zero bytes and waits for 16 bytes back, which the echo covers.
fn serve(ep: &mut Endpoint) -> Result<u64> {
    let mut served = 0u64;
    let mut rping_read_next = true;
    loop {
        match ep.wait(SERVER_WAIT, "a SEND or a disconnect from the client")? {
            Wake::Disconnected => return Ok(served),
            Wake::Completion(c) if c.is_recv => {
                let n = c.byte_len as usize;
                let data = ep.region(Region::Recv)[..n].to_vec();
                ep.post_recv()?;
                match rping_info(&data).filter(|_| ep.foreign) {
                    Some(remote) => {
                        let len = (remote.len as usize).min(ep.len());
                        ep.set_remote(remote);
                        if rping_read_next {
                            ep.post(Op::Read, len, WR_READ)?;
                            wait_for(ep, WR_READ)?;
                        } else {
                            // rping writes back the string it read, NUL included.
                            let rdma = ep.region(Region::Rdma)[..len].to_vec();
                            let text_len = rdma.iter().position(|b| *b == 0).map_or(len, |p| p + 1);
                            ep.region(Region::Send)[..text_len].copy_from_slice(&rdma[..text_len]);
                            ep.post(Op::Write, text_len, WR_WRITE)?;
                            wait_for(ep, WR_WRITE)?;
                        }
                        rping_read_next = !rping_read_next;
                        // The client may answer the go-ahead before its send completion
                        // is polled here; the main loop collects it.
                        ep.post(Op::Send, RPING_INFO_LEN, WR_SEND)?;
                    }
                    None => {
                        ep.region(Region::Send)[..n].copy_from_slice(&data);
                        ep.post(Op::Send, n, WR_SEND)?;
                    }
                }
                served += 1;
            }
            Wake::Completion(_) => {}
        }
    }
}

const WR_SEND: u64 = 1;
const WR_READ: u64 = 2;
const WR_WRITE: u64 = 3;
const RPING_INFO_LEN: usize = 16;

/// rping's `struct rping_rdma_info`: be64 buf, be32 rkey, be32 size.
fn rping_info(msg: &[u8]) -> Option<cm::RemoteBuffer> {
    if msg.len() != RPING_INFO_LEN {
        return None;
    }
    let addr = u64::from_be_bytes(msg[0..8].try_into().ok()?);
    let rkey = u32::from_be_bytes(msg[8..12].try_into().ok()?);
    let len = u32::from_be_bytes(msg[12..16].try_into().ok()?);
    (addr != 0 && len != 0).then_some(cm::RemoteBuffer { addr, rkey, len })
}

/// Wait for the completion of our READ or WRITE `wr_id`; rping sends nothing until our
/// go-ahead, so a RECV meanwhile breaks its protocol.
fn wait_for(ep: &mut Endpoint, wr_id: u64) -> Result<()> {
    loop {
        match ep.wait(ep.timeout(), "the completion of our own work request")? {
            Wake::Completion(c) if !c.is_recv && c.wr_id == wr_id => return Ok(()),
            Wake::Completion(c) if !c.is_recv => {}
            Wake::Completion(_) => {
                return Err(Error::Failed(
                    "the client sent a message before our answer completed".into(),
                ))
            }
            Wake::Disconnected => {
                return Err(Error::Failed(
                    "the client disconnected in the middle of an exchange".into(),
                ))
            }
        }
    }
}

// ---------------------------------------------------------------- selftest --cm

#[derive(Debug, Clone, Serialize)]
struct StepLine {
    side: &'static str,
    step: String,
    ok: bool,
    detail: String,
    ms: f64,
}

/// `selftest --cm`: a loopback through the CM on one device (or between two with two
/// `-d`): listen, resolve, connect, accept, one SEND/RECV, WRITE and READ, disconnect.
pub fn selftest_cm(ctx: &Ctx, args: &SelftestArgs) -> Result<u8> {
    let timeout = timeout_of(args.timeout)?;
    if args.gid_index != GidIndexArg::Auto {
        return Err(Error::Usage(
            "-g does not apply with --cm: the kernel picks the GID from the route".into(),
        ));
    }
    let server_dev = match args.devices.first() {
        Some(d) => d.clone(),
        None => first_device(&ctx.sysfs)?,
    };
    let client_dev = args
        .devices
        .get(1)
        .cloned()
        .unwrap_or_else(|| server_dev.clone());
    let server_ip = device_ipv4(&ctx.sysfs, &server_dev, args.port)?;
    let client_ip = device_ipv4(&ctx.sysfs, &client_dev, args.port)?;
    let lines: Arc<Mutex<Vec<StepLine>>> = Arc::new(Mutex::new(Vec::new()));
    let json = ctx.json;
    let record = {
        let lines = Arc::clone(&lines);
        move |side: &'static str, step: &str, ok: bool, detail: String, ms: f64| {
            let line = StepLine {
                side,
                step: step.to_string(),
                ok,
                detail,
                ms,
            };
            if !json {
                let mark = if ok { "ok  " } else { "FAIL" };
                println!(
                    "{mark} {side:<6} {:<20} {:>8.2} ms  {}",
                    line.step, line.ms, line.detail
                );
            }
            lines.lock().unwrap_or_else(|e| e.into_inner()).push(line);
        }
    };
    let mut failures: Vec<CmError> = Vec::new();
    let t = Instant::now();
    let listener = Listener::bind(SocketAddr::new(server_ip, 0));
    let listener = match listener {
        Ok(l) => l,
        Err(e) => {
            record(
                "server",
                "listen",
                false,
                e.summary(),
                t.elapsed().as_secs_f64() * 1e3,
            );
            return finish(ctx, &lines, &[e]);
        }
    };
    let listen_addr = listener
        .local_addr()
        .unwrap_or(SocketAddr::new(server_ip, 0));
    record(
        "server",
        "listen",
        true,
        format!(
            "{listen_addr} on {}",
            listener.device().unwrap_or_else(|| server_dev.clone())
        ),
        t.elapsed().as_secs_f64() * 1e3,
    );
    let server_record = record.clone();
    let server = std::thread::spawn(move || -> std::result::Result<u64, CmError> {
        let mut log = |s: StepDone| {
            server_record(
                "server",
                s.step,
                true,
                s.detail,
                s.elapsed.as_secs_f64() * 1e3,
            )
        };
        let mut ep = listener.accept(timeout, timeout, &mut log, &mut fill_pattern)?;
        let echoed = serve(&mut ep).map_err(|e| match e {
            Error::Cm(cm) => *cm,
            other => cm_protocol(other.to_string()),
        })?;
        ep.disconnect()?;
        Ok(echoed)
    });

    let mut client_log = |s: StepDone| {
        record(
            "client",
            s.step,
            true,
            s.detail,
            s.elapsed.as_secs_f64() * 1e3,
        )
    };
    let opts = ConnectOptions {
        src: Some(client_ip),
        len: args.size.max(1),
        timeout,
    };
    match cm::connect(listen_addr, &opts, &mut client_log) {
        Ok((mut ep, _res)) => {
            for (op, name) in [
                (Op::Send, "send/recv"),
                (Op::Write, "rdma write"),
                (Op::Read, "rdma read"),
            ] {
                let t = Instant::now();
                match run_op(&mut ep, op, args.size.max(1), 1) {
                    Ok((_, r)) => record(
                        "client",
                        name,
                        true,
                        match r.verified {
                            Some(_) => format!("{} bytes, data verified", args.size.max(1)),
                            None => format!("{} bytes", args.size.max(1)),
                        },
                        t.elapsed().as_secs_f64() * 1e3,
                    ),
                    Err(e) => {
                        record(
                            "client",
                            name,
                            false,
                            e.to_string(),
                            t.elapsed().as_secs_f64() * 1e3,
                        );
                        failures.push(match e {
                            Error::Cm(cm) => *cm,
                            other => cm_protocol(other.to_string()),
                        });
                        break;
                    }
                }
            }
            let t = Instant::now();
            match ep.disconnect() {
                Ok(()) => record(
                    "client",
                    "disconnect",
                    true,
                    "DISCONNECTED".into(),
                    t.elapsed().as_secs_f64() * 1e3,
                ),
                Err(e) => {
                    record(
                        "client",
                        "disconnect",
                        false,
                        e.summary(),
                        t.elapsed().as_secs_f64() * 1e3,
                    );
                    failures.push(e);
                }
            }
        }
        Err(e) => {
            record("client", e.stage.as_str(), false, e.summary(), 0.0);
            failures.push(e);
        }
    }
    match server.join() {
        Ok(Ok(echoed)) => record(
            "server",
            "disconnect",
            true,
            format!("{echoed} SENDs echoed"),
            0.0,
        ),
        Ok(Err(e)) => {
            record("server", e.stage.as_str(), false, e.summary(), 0.0);
            failures.push(e);
        }
        Err(_) => failures.push(cm_protocol("the server thread panicked".into())),
    }
    finish(ctx, &lines, &failures)
}

fn cm_protocol(text: String) -> CmError {
    CmError {
        stage: cm::Stage::Transfer,
        peer: None,
        device: None,
        infiniband: false,
        failure: cm::Failure::Protocol(text),
        elapsed: None,
    }
}

fn finish(ctx: &Ctx, lines: &Arc<Mutex<Vec<StepLine>>>, failures: &[CmError]) -> Result<u8> {
    let lines = lines.lock().unwrap_or_else(|e| e.into_inner()).clone();
    if ctx.json {
        #[derive(Serialize)]
        struct Report {
            mode: &'static str,
            ok: bool,
            steps: Vec<StepLine>,
            errors: Vec<String>,
        }
        let report = Report {
            mode: "cm",
            ok: failures.is_empty(),
            steps: lines,
            errors: failures.iter().map(|f| f.to_string()).collect(),
        };
        output::print(&output::json(&report))?;
    }
    match failures.first() {
        None => Ok(exit::OK),
        Some(first) if first.is_missing_stack() => Err(first.clone().into()),
        Some(first) => {
            if !ctx.json {
                eprintln!("{first}");
            }
            Err(Error::Failed(format!(
                "selftest --cm failed at {}",
                first.stage
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `pingpong --cm -j` has the TCP exchange's keys, so one script reads both.
    #[test]
    fn client_report_has_the_tcp_shape() {
        let mut ops = OpResults::default();
        ops.insert(
            "send",
            op_result(10, 81_920, Duration::from_millis(5), &mut [1000; 10]),
        );
        let info = ConnInfo {
            device: "rxe1".into(),
            port: 1,
            local: Some("192.168.77.2:40000".parse().unwrap()),
            peer: "192.168.77.1:18515".parse().unwrap(),
            qpn: 0x11,
            remote_qpn: 0x12,
            sgid_index: 1,
            path_mtu: 1024,
        };
        let res = Resolution {
            peer: "192.168.77.1".parse().unwrap(),
            source: Some("192.168.77.2".parse().unwrap()),
            device: "rxe1".into(),
            port: 1,
            link_layer: crate::model::LinkLayer::Ethernet,
            sgid: crate::gid::Gid::parse("::ffff:192.168.77.2").unwrap(),
            gid_index: Some(1),
            gid_type: Some(crate::model::GidType::RoceV2),
            netdev: Some("veth1".into()),
            other_indices: vec![],
        };
        let report = client_report(&info, &res, 4096, &ops);
        let json = serde_json::to_value(&report).unwrap();
        for key in [
            "role",
            "exchange",
            "device",
            "port",
            "gid_index",
            "peer",
            "size",
            "path_mtu",
            "ops",
            "ok",
            "iters",
            "bytes",
            "seconds",
            "mbit_per_sec",
            "usec_per_iter",
            "latency_usec",
        ] {
            assert!(json.get(key).is_some(), "{key} missing in {json}");
        }
        assert_eq!(json["ops"]["send"]["iters"], 10);
        assert_eq!(json["ops"]["send"]["latency_usec"]["median"], 1.0);
        assert!(json["ops"].get("write").is_none());
    }

    #[test]
    fn rping_info_messages() {
        let mut msg = [0u8; 16];
        msg[0..8].copy_from_slice(&0x5555_0000_1000u64.to_be_bytes());
        msg[8..12].copy_from_slice(&0x1234u32.to_be_bytes());
        msg[12..16].copy_from_slice(&64u32.to_be_bytes());
        assert_eq!(
            rping_info(&msg),
            Some(cm::RemoteBuffer {
                addr: 0x5555_0000_1000,
                rkey: 0x1234,
                len: 64
            })
        );
        // rdma_client's 16 zero bytes are a plain message to echo, not an rping advert.
        assert_eq!(rping_info(&[0u8; 16]), None);
        assert_eq!(rping_info(&msg[..12]), None);
    }

    #[test]
    fn pattern_checks() {
        let mut buf = vec![0u8; 600];
        fill_pattern(&mut buf);
        assert_eq!(first_mismatch(&buf), None);
        buf[300] ^= 1;
        assert_eq!(first_mismatch(&buf), Some(300));
    }

    #[test]
    fn device_ipv4_from_fixture() {
        let root = Path::new("/work/shared/fixtures/sysfs/rxe-veth-basic");
        if !root.exists() {
            eprintln!("skipped: fixture {} not present", root.display());
            return;
        }
        assert_eq!(
            device_ipv4(root, "rxe0", 1).unwrap(),
            "192.168.77.1".parse::<IpAddr>().unwrap()
        );
        assert_eq!(
            device_ipv4(root, "rxe1", 1).unwrap(),
            "192.168.77.2".parse::<IpAddr>().unwrap()
        );
        assert!(matches!(
            device_ipv4(root, "mlx5_9", 1),
            Err(Error::NoSuchDevice { .. })
        ));
    }
}
