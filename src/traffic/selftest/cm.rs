//! `selftest --cm`: a loopback through the CM on one device (or between two with two
//! `-d`).

use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use crate::cli::{GidIndexArg, SelftestArgs};
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::gather::verbs::cm::{self, CmOp, ConnectOptions, Listener, StepDone};
use crate::model::diagnostic::FailureReport;
use crate::model::failure::{Cause, Failure, Step};
use crate::model::results::StepLine;
use crate::traffic::pingpong::cm::{
    explain_cm, fill_pattern, first_device, pattern, plain_report, port_address, run_op, serve,
    timeout_of, Served,
};
use crate::traffic::selftest::report::SelftestReport;

/// The steps of both sides, in the order they finished.
#[derive(Clone, Default)]
pub(crate) struct Steps(Arc<Mutex<Vec<StepLine>>>);

impl Steps {
    pub(crate) fn push(&self, line: StepLine) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(line);
    }

    pub(crate) fn ok(&self, side: &'static str, step: &str, detail: String, elapsed: Duration) {
        self.push(StepLine {
            side: Some(side),
            step: step.to_string(),
            ok: true,
            elapsed_us: elapsed.as_secs_f64() * 1e6,
            detail,
            failure: None,
        });
    }

    pub(crate) fn failed(
        &self,
        side: &'static str,
        step: &str,
        report: FailureReport,
        elapsed: Duration,
    ) {
        self.push(StepLine {
            side: Some(side),
            step: step.to_string(),
            ok: false,
            elapsed_us: elapsed.as_secs_f64() * 1e6,
            detail: report.message.clone(),
            failure: Some(report),
        });
    }

    pub(crate) fn take(&self) -> Vec<StepLine> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// A CM stage as selftest's step column names it ("resolve address", "accept").
pub(crate) fn step_word(step: Step) -> &'static str {
    step.name().trim_start_matches("CM ")
}

/// How long the client waits for the server's own failure once its connect failed: a
/// server that broke first (a QP it could not create) has the root cause; one still
/// waiting for a request that will never come has nothing to add.
pub(crate) const SERVER_GRACE: Duration = Duration::from_secs(1);

/// `selftest --cm`: a loopback through the CM on one device (or between two with two
/// `-d`): listen, resolve, connect, accept, one SEND/RECV, WRITE and READ, disconnect.
/// The report says which steps failed (`ok`); a run that could not start (no such device,
/// no RDMA stack) is an error instead.
pub fn run(ctx: &Ctx, args: &SelftestArgs) -> Result<SelftestReport> {
    let timeout = timeout_of(args.timeout)?;
    if args.on.gid_index != GidIndexArg::Auto {
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
    let size = args.size.max(1);
    let mut report = SelftestReport {
        mode: "cm",
        device: Some(server_dev.clone()),
        peer_device: Some(client_dev.clone()),
        port: args.on.port,
        server_address: Some(None),
        client_address: Some(None),
        gid_index: None,
        gid_selection: Vec::new(),
        size,
        steps: Vec::new(),
        counters: None,
        signal: None,
        ok: false,
    };
    let steps = Steps::default();
    // The CM binds addresses: each device stands for its port's.
    let server_ip = port_address(&ctx.sysfs, &server_dev, args.on.port, None);
    let client_ip = port_address(
        &ctx.sysfs,
        &client_dev,
        args.on.port,
        server_ip.as_ref().ok().copied(),
    );
    report.server_address = Some(server_ip.as_ref().ok().copied());
    report.client_address = Some(client_ip.as_ref().ok().copied());
    let failure = match (server_ip, client_ip) {
        (Ok(server_ip), Ok(client_ip)) => {
            let plan = Loopback {
                sysfs: &ctx.sysfs,
                server_dev: &server_dev,
                listen_on: SocketAddr::new(server_ip, 0),
                client_ip,
                size,
                timeout,
            };
            run_selftest(&plan, &steps, &mut report)
        }
        (Err(e), _) => Some(no_address(&steps, "server", e)?),
        (_, Err(e)) => Some(no_address(&steps, "client", e)?),
    };
    report.steps = steps.take();
    // A signal caught during the loopback stops it; the report names it.
    report.signal = crate::interrupt::caught();
    report.ok = failure.is_none() && report.steps.iter().all(|s| s.ok) && report.signal.is_none();
    if let Some(e) = failure.as_ref().filter(|e| e.is_missing_stack()) {
        return Err(e.clone().into());
    }
    Ok(report)
}

/// A port without an address is the run's first failed step; other errors (no such
/// device, no RDMA stack) end the run without a report.
pub(crate) fn no_address(steps: &Steps, side: &'static str, err: Error) -> Result<Failure> {
    match err {
        Error::Failure(e) if !e.is_missing_stack() => {
            steps.failed(side, "address", plain_report(&e), Duration::ZERO);
            Ok(*e)
        }
        other => Err(other),
    }
}

/// What `selftest --cm` connects: a listener on the server device's address, a client
/// from the other device's.
pub(crate) struct Loopback<'a> {
    pub(crate) sysfs: &'a Path,
    pub(crate) server_dev: &'a str,
    pub(crate) listen_on: SocketAddr,
    pub(crate) client_ip: IpAddr,
    pub(crate) size: u32,
    pub(crate) timeout: Duration,
}

/// Runs the steps; the first failure, if any.
pub(crate) fn run_selftest(
    plan: &Loopback,
    steps: &Steps,
    report: &mut SelftestReport,
) -> Option<Failure> {
    let Loopback {
        sysfs,
        server_dev,
        listen_on,
        client_ip,
        size,
        timeout,
    } = *plan;
    let t = Instant::now();
    let listener = match Listener::bind(listen_on) {
        Ok(l) => l,
        Err(e) => {
            steps.failed("server", "listen", plain_report(&e), t.elapsed());
            return Some(e);
        }
    };
    let listen_addr = listener.local_addr().unwrap_or(listen_on);
    let device = listener.device().unwrap_or_else(|| server_dev.to_string());
    steps.ok(
        "server",
        "listen",
        format!("{listen_addr} on {device}"),
        t.elapsed(),
    );

    let (done_tx, done_rx) = mpsc::channel();
    let server_steps = steps.clone();
    // Detached: when the client cannot connect, the server may still be waiting for a
    // request, and the process ends without it.
    std::thread::spawn(move || {
        let mut log = |s: StepDone| server_steps.ok("server", s.step, s.detail, s.elapsed);
        let outcome = listener
            .accept(timeout, timeout, &mut log, &mut fill_pattern)
            .and_then(|mut ep| {
                let t = Instant::now();
                let mut served = Served {
                    own_client: true,
                    ..Served::default()
                };
                serve(&mut ep, &listener, &mut served)?;
                ep.disconnect()?;
                let detail = format!("DISCONNECTED; {} SENDs echoed", served.echoed);
                server_steps.ok("server", "disconnect", detail, t.elapsed());
                Ok(())
            });
        if let Err(e) = &outcome {
            server_steps.failed("server", step_word(e.step), plain_report(e), Duration::ZERO);
        }
        let _ = done_tx.send(outcome);
    });

    let mut client_log = |s: StepDone| steps.ok("client", s.step, s.detail, s.elapsed);
    let opts = ConnectOptions {
        src: Some(client_ip),
        len: size,
        timeout,
    };
    let (mut ep, _) = match cm::connect(listen_addr, &opts, &mut client_log) {
        Ok(connected) => connected,
        Err(e) => {
            let elapsed = Duration::from_millis(e.context.elapsed_ms.unwrap_or_default());
            let step = step_word(e.step);
            steps.failed(
                "client",
                step,
                explain_cm(e.clone(), Some(client_ip), sysfs),
                elapsed,
            );
            return match done_rx.recv_timeout(SERVER_GRACE) {
                Ok(Err(server_err)) if server_err.step != Step::CmAccept => Some(server_err),
                _ => Some(e),
            };
        }
    };
    report.gid_index = Some(u32::from(ep.info.sgid_index));
    let mut peer_image: Vec<u8> = (0..size as usize).map(pattern).collect();
    let mut first_failure = None;
    for (op, name) in [
        (CmOp::Send, "send/recv"),
        (CmOp::Write, "rdma write"),
        (CmOp::Read, "rdma read"),
    ] {
        let t = Instant::now();
        // A signal caught during the connection or the step before is named here, in the
        // step it stopped, not only in the verdict after the last one.
        if let Some(signal) = crate::interrupt::caught() {
            let e = ep.err(Step::CmTransfer, Cause::Interrupted { signal });
            steps.failed("client", name, plain_report(&e), Duration::ZERO);
            first_failure = Some(e);
            break;
        }
        match run_op(
            &mut ep,
            op,
            1,
            false,
            &mut peer_image,
            &mut Default::default(),
        ) {
            Ok(r) => {
                let verified = r.verified.unwrap_or_default();
                steps.ok("client", name, verified, t.elapsed());
            }
            Err(e) => {
                steps.failed("client", name, plain_report(&e), t.elapsed());
                first_failure = Some(e);
                break;
            }
        }
    }
    let t = Instant::now();
    match ep.disconnect() {
        Ok(()) => steps.ok("client", "disconnect", "DISCONNECTED".into(), t.elapsed()),
        Err(e) => {
            steps.failed("client", "disconnect", plain_report(&e), t.elapsed());
            first_failure.get_or_insert(e);
        }
    }
    // The server ends once it sees our disconnect, within its own timeout.
    match done_rx.recv_timeout(timeout + SERVER_GRACE) {
        Ok(Err(e)) => first_failure.or(Some(e)),
        Ok(Ok(())) => first_failure,
        Err(_) => {
            let e = Failure::toward_addr(
                Step::CmDisconnect,
                Some(listen_addr),
                Cause::Timeout {
                    waited_ms: (timeout + SERVER_GRACE).as_millis() as u64,
                    waiting_for: Some("disconnect seen by the server"),
                },
            );
            steps.failed("server", "disconnect", plain_report(&e), timeout);
            first_failure.or(Some(e))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selftest_text_explains_the_failed_step() {
        let err = Failure::toward_addr(
            Step::CmResolveAddr,
            "192.168.77.1:40000".parse().ok(),
            Cause::call("rdma_resolve_addr", libc::ENETUNREACH),
        );
        let report = SelftestReport {
            mode: "cm",
            device: Some("rxe0".into()),
            peer_device: Some("rxe0".into()),
            port: 1,
            server_address: Some("192.168.77.1".parse().ok()),
            client_address: Some("192.168.77.1".parse().ok()),
            gid_index: None,
            gid_selection: Vec::new(),
            size: 4096,
            counters: None,
            signal: None,
            steps: vec![
                StepLine {
                    side: Some("server"),
                    step: "listen".into(),
                    ok: true,
                    elapsed_us: 1500.0,
                    detail: "192.168.77.1:40000 on rxe0".into(),
                    failure: None,
                },
                StepLine {
                    side: Some("client"),
                    step: "resolve address".into(),
                    ok: false,
                    elapsed_us: 0.0,
                    detail: err.to_string(),
                    failure: Some(plain_report(&err)),
                },
            ],
            ok: false,
        };
        let text = crate::render::selftest::text(&report.view(), crate::output::Style::plain());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "selftest --cm rxe0 port 1, 192.168.77.1 -> 192.168.77.1, 4096 B; the kernel picks the GID"
        );
        assert!(
            lines[1].starts_with("  ok       1.500 ms  server listen"),
            "{text}"
        );
        assert!(
            lines[2].starts_with("  FAIL     0.000 ms  client resolve address"),
            "{text}"
        );
        assert!(
            lines[3].contains("why:  there is no route to 192.168.77.1"),
            "{text}"
        );
        assert!(
            lines[4].contains("fix:  check `ip route get 192.168.77.1`"),
            "{text}"
        );
        assert_eq!(lines.last(), Some(&"FAILED"));
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(
            json["steps"][1]["failure"]["explanation"]["code"],
            "cm-no-route"
        );
        assert_eq!(json["steps"][1]["failure"]["errno_name"], "ENETUNREACH");
        let shape = crate::json_schema::mismatches("selftest_cm", &json);
        assert!(shape.is_empty(), "{shape:#?}");
    }
}
