//! The TCP-exchange session: a client, a server for one run, or a `--persist` server.

use super::busy::answer_while_busy;
use super::compat::{serve_rc_pingpong, stock_server};
use super::follow::follow_client;
use super::native::native_run;
use super::outcome::finish;
use super::plan::{native_msg, plan, Plan};
use super::report::{new_report, PingpongReport, Show};
use super::side::{choose_for_client, open_side, Setup, Side};
use crate::cli::{Compat, PingpongArgs};
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::gather::failure::{self};
use crate::model::failure::{show_addr, Cause, Failure, Step};
use crate::output;
use crate::render;
use crate::wire::exchange::{self as oob, Conn, Hello, RcDest};

/// A TCP-exchange run (or a `--persist` server's runs): each finished report goes to
/// `show`, which prints it; the result is the exit status.
pub fn run(ctx: &Ctx, args: &PingpongArgs, show: &mut Show) -> Result<u8> {
    let plan = plan(args)?;
    // Everything that can be refused is refused before the device is opened: the peer's
    // name, the device and port, and (server) the TCP port.
    let peer = match args.server.as_deref() {
        Some(host) => {
            let addr = failure::tcp_peer(host, args.tcp_port)?;
            failure::refuse_special_tcp_peer(addr.ip())?;
            Some(addr)
        }
        None => None,
    };
    let device =
        crate::gather::inventory::device_port(&ctx.sysfs, args.on.device.as_deref(), args.on.port)?;
    crate::traffic::failure::refuse_iwarp_without_cm(&ctx.sysfs, &device, "pingpong")?;
    let listener = match peer {
        Some(_) => None,
        None => match oob::listen(args.bind, args.tcp_port) {
            Ok(l) => Some(l),
            Err(f) => return listen_failed(ctx, show, args, &plan, &device, f),
        },
    };
    match (listener, peer) {
        (Some(l), _) if args.persist => serve_persistently(ctx, show, args, &plan, &device, &l),
        (Some(l), _) if args.all_sizes => serve_sweep(ctx, show, args, &plan, &device, &l),
        (Some(l), _) => one_run(ctx, show, args, &plan, &device, Role::Server(&l)),
        (None, Some(addr)) if args.all_sizes => sweep(ctx, show, args, &plan, &device, addr),
        (None, Some(addr)) => one_run(ctx, show, args, &plan, &device, Role::Client(addr)),
        (None, None) => unreachable!("a run without a peer listens"),
    }
}

/// A listen or accept that failed before any client was served: explained and reported
/// as a run that never connected.
fn listen_failed(
    ctx: &Ctx,
    show: &mut Show,
    args: &PingpongArgs,
    plan: &Plan,
    device: &str,
    f: Failure,
) -> Result<u8> {
    let report = new_report(args, plan, device);
    finish(
        ctx,
        show,
        report,
        Some(f),
        None,
        None,
        plan.ops.send,
        None,
        None,
    )
}

/// `--persist`: one run per client, each with its own QP and report, until a signal. A
/// client's failure is explained and the server goes on; a signal ends it (130/143).
pub(super) fn serve_persistently(
    ctx: &Ctx,
    show: &mut Show,
    args: &PingpongArgs,
    plan: &Plan,
    device: &str,
    listener: &std::net::TcpListener,
) -> Result<u8> {
    loop {
        output::note(&render::pingpong::waiting(
            &listening_on(args, listener),
            true,
        ));
        // Between clients a first Ctrl-C ends the server, with no report: nobody was served.
        let conn = match oob::accept_watching(listener, plan.timeout) {
            Ok(Some(conn)) => conn,
            Ok(None) => {
                let signal = crate::interrupt::caught().unwrap_or(libc::SIGINT);
                return Ok(128 + signal as u8);
            }
            Err(f) => return listen_failed(ctx, show, args, plan, device, f),
        };
        let _busy = answer_while_busy(listener, conn.peer);
        match one_run(ctx, show, args, plan, device, Role::Accepted(conn)) {
            Ok(_) | Err(Error::Reported(_)) => {}
            Err(Error::Explained(x)) => output::note(&render::pingpong::client_failed(&x)),
            Err(e) => return Err(e),
        }
        if let Some(signal) = crate::interrupt::caught() {
            return Ok(128 + signal as u8);
        }
    }
}

/// perftest's `-a` sizes: 2 B to 8 MiB, doubling.
pub fn sweep_sizes() -> impl Iterator<Item = u32> {
    (1..=23).map(|exponent| 1u32 << exponent)
}

/// How long a sweeping server waits for its client's next size: the client opens its
/// device and connects again as soon as a size is done, a second or two under emulation.
const SWEEP_GAP: std::time::Duration = std::time::Duration::from_secs(30);

/// `-a`, client: one run per size, each on a fresh QP, to a server that serves them one
/// after another; the first failure ends the sweep with its explanation.
fn sweep(
    ctx: &Ctx,
    show: &mut Show,
    args: &PingpongArgs,
    plan: &Plan,
    device: &str,
    addr: std::net::SocketAddr,
) -> Result<u8> {
    for size in sweep_sizes() {
        let plan = Plan {
            size,
            ..plan.clone()
        };
        one_run(ctx, show, args, &plan, device, Role::Client(addr))?;
        if let Some(signal) = crate::interrupt::caught() {
            return Ok(128 + signal as u8);
        }
    }
    Ok(crate::exit::OK)
}

/// `-a`, server: the sweeping client's runs one after another (each taking the client's
/// size), until its last size or a client that does not come back within [`SWEEP_GAP`].
/// No busy answer between runs: the client's next connection waits in the backlog until
/// this end is ready for it, instead of being told the server is busy.
fn serve_sweep(
    ctx: &Ctx,
    show: &mut Show,
    args: &PingpongArgs,
    plan: &Plan,
    device: &str,
    listener: &std::net::TcpListener,
) -> Result<u8> {
    let last = sweep_sizes().last().unwrap_or(0);
    let mut served: Vec<u32> = Vec::new();
    loop {
        if served.is_empty() {
            output::note(&render::pingpong::waiting(
                &listening_on(args, listener),
                false,
            ));
        }
        // The first client may take as long as it likes, as a one-run server's.
        let wait = (!served.is_empty()).then_some(SWEEP_GAP);
        let conn = match oob::accept_within(listener, plan.timeout, wait) {
            Ok(Some(conn)) => conn,
            Ok(None) => {
                if let Some(signal) = crate::interrupt::caught() {
                    return Ok(128 + signal as u8);
                }
                return Err(Error::Failed(render::pingpong::sweep_cut_short(
                    &served, SWEEP_GAP,
                )));
            }
            Err(f) => return listen_failed(ctx, show, args, plan, device, f),
        };
        let mut size = 0;
        let mut record = |report: &PingpongReport| {
            size = report.size;
            show(report)
        };
        one_run(ctx, &mut record, args, plan, device, Role::Accepted(conn))?;
        served.push(size);
        if size >= last {
            return Ok(crate::exit::OK);
        }
        if let Some(signal) = crate::interrupt::caught() {
            return Ok(128 + signal as u8);
        }
    }
}

/// One run toward one peer: open the device, connect, measure, report.
pub(super) fn one_run(
    ctx: &Ctx,
    show: &mut Show,
    args: &PingpongArgs,
    plan: &Plan,
    device: &str,
    role: Role,
) -> Result<u8> {
    let mut report = new_report(args, plan, device);
    // The exchange's address, not the RoCE peer's: a loopback one says nothing about where
    // the GIDs lead, so neither `-g auto` nor the explanation starts from it.
    let peer = match role {
        Role::Client(addr) => Some(addr.ip().to_canonical()).filter(|ip| !ip.is_loopback()),
        Role::Server(_) | Role::Accepted(_) => None,
    };
    let mut side = match open_side(ctx, args, plan, device, peer, &mut report) {
        Ok(side) => side,
        Err(Setup::Error(e)) => return Err(e),
        Err(Setup::Failure(f)) => {
            return finish(
                ctx,
                show,
                report,
                Some(f),
                peer,
                None,
                plan.ops.send,
                None,
                None,
            )
        }
    };
    report.local = Some(side.endpoint());
    let mut conn = None;
    let outcome = drive(ctx, args, plan, &mut side, &mut report, role, &mut conn);
    let gid_table_len = Some(side.port_info.gid_tbl_len);
    let stall = side.stall.found.take();
    finish(
        ctx,
        show,
        report,
        outcome.err(),
        peer,
        gid_table_len,
        plan.ops.send,
        conn,
        stall.as_ref(),
    )
}

/// A client knows its server's address; a server has bound its port before opening the
/// device, so a busy port is found before anything else is done.
pub(super) enum Role<'a> {
    Client(std::net::SocketAddr),
    Server(&'a std::net::TcpListener),
    /// A `--persist` server's next client, already accepted.
    Accepted(Conn),
}

/// The address a server listens on, as its waiting line names it.
fn listening_on(args: &PingpongArgs, listener: &std::net::TcpListener) -> String {
    listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| args.tcp_port.to_string())
}

pub(super) fn drive(
    ctx: &Ctx,
    args: &PingpongArgs,
    plan: &Plan,
    side: &mut Side,
    report: &mut PingpongReport,
    role: Role,
    conn_slot: &mut Option<Conn>,
) -> std::result::Result<(), Failure> {
    let is_client = matches!(role, Role::Client(_));
    // Other clients are answered that this server is busy until this run ends.
    let mut _busy = None;
    let conn = conn_slot.insert(match role {
        Role::Client(addr) => oob::connect_addr(addr, plan.timeout)?,
        Role::Server(listener) => {
            output::note(&render::pingpong::waiting(
                &listening_on(args, listener),
                false,
            ));
            // One client per run: the listener closes when the run ends.
            let conn = oob::accept_one(listener, plan.timeout)?;
            _busy = answer_while_busy(listener, conn.peer);
            conn
        }
        Role::Accepted(conn) => conn,
    });
    report.peer = Some(show_addr(conn.peer));
    // From here on a first Ctrl-C stops the run with what it measured, and tells the peer.
    crate::interrupt::catch();
    let local = side.endpoint();
    let me = RcDest {
        lid: local.lid,
        qpn: local.qpn,
        psn: local.psn,
        gid: local.gid,
    };
    if is_client {
        if args.compat == Some(Compat::RcPingpong) {
            conn.send_rc(&me)?;
        } else {
            conn.send_offer(&me)?;
        }
        // A stock server connects its QP before it answers: a close here is its RTR failing.
        let reply = conn.read_hello().map_err(|mut f| {
            if f.cause == Cause::PeerClosed {
                f.context.note = Some(
                    "the server closed the connection without answering (a stock ibv_rc_pingpong does when its RTR fails, an rdmactl server busy with another client does to an ibv_rc_pingpong-format client)".into(),
                );
            }
            f
        })?;
        return match reply {
            // The server's first message says it speaks native; its last one, sent once it
            // has our parameters (and taken those it was not given), is what it will run.
            Hello::Native(_) if args.compat.is_none() => {
                let mine = native_msg(plan, &local);
                conn.send_native(&mine)?;
                let remote = conn.read_native()?;
                native_run(ctx, plan, side, report, conn, mine, remote, true)
            }
            Hello::RcPingpong(dest) => {
                report.exchange = "rc_pingpong";
                stock_server(ctx, args, plan, side, report, conn, dest)?;
                *conn_slot = None;
                Ok(())
            }
            _ => Err(side.fail(
                Step::Exchange,
                Cause::Invalid {
                    what: "the server answered with a message a server never sends".into(),
                },
            )),
        };
    }
    let hello = conn.read_hello()?;
    if side.gid.is_none() && plan.auto {
        // The client's GID says where it is better than the TCP source address, which on
        // one host is the server's own.
        let gid = match &hello {
            Hello::RcPingpong(d) | Hello::RdmactlOffer(d) => d.gid,
            Hello::Native(m) => m.endpoint.gid,
        };
        let client = if gid.is_zero() {
            conn.peer.ip().to_canonical()
        } else {
            gid.ip()
        };
        choose_for_client(ctx, side, report, client)?;
    }
    match hello {
        Hello::RcPingpong(dest) => {
            report.exchange = "rc_pingpong";
            serve_rc_pingpong(ctx, args, plan, side, report, conn, dest)
        }
        // An rdmactl client: take up its offer, learn its parameters, take those this
        // server was not given, and tell it what this end will run.
        Hello::RdmactlOffer(_) => {
            conn.send_native(&native_msg(plan, &side.endpoint()))?;
            let remote = conn.read_native()?;
            let plan = follow_client(ctx, args, plan, side, report, &remote)?;
            let mine = native_msg(&plan, &side.endpoint());
            conn.send_native(&mine)?;
            native_run(ctx, &plan, side, report, conn, mine, remote, false)
        }
        Hello::Native(remote) => {
            let plan = follow_client(ctx, args, plan, side, report, &remote)?;
            let mine = native_msg(&plan, &side.endpoint());
            conn.send_native(&mine)?;
            native_run(ctx, &plan, side, report, conn, mine, remote, false)
        }
    }
}
