//! ibv_rc_pingpong's exchange: a stock client or server at the other end.

use super::loops::{keep_partial, pingpong_loop};
use super::plan::{counted_meter, Plan};
use super::report::PingpongReport;
use super::side::Side;
use crate::cli::{Op, PingpongArgs};
use crate::ctx::Ctx;
use crate::gather::verbs::qp::{PathQos, RtrParams};
use crate::model::device::LinkLayer;
use crate::model::failure::{Cause, Endpoint, Failure, Step};
use crate::wire::exchange::{self as oob, Conn, RcDest};

/// The server answered in ibv_rc_pingpong's format: a stock server, which has already
/// moved its QP to RTR. It does SEND only, with its own -s and -n.
pub(super) fn stock_server(
    ctx: &Ctx,
    args: &PingpongArgs,
    plan: &Plan,
    side: &mut Side,
    report: &mut PingpongReport,
    conn: &mut Conn,
    dest: RcDest,
) -> std::result::Result<(), Failure> {
    report.remote = Some(rc_endpoint(&dest));
    refuse_for_stock(args, plan, side, "server")?;
    if args.compat.is_none() {
        let Some(iters) = plan.length.iters.filter(|_| !plan.length.lat) else {
            return Err(side.fail(
                Step::Compare,
                Cause::Invalid {
                    what: "the server is a stock ibv_rc_pingpong, which runs -n SEND iterations; drop --duration and --lat".into(),
                },
            ));
        };
        if !ctx.json {
            crate::output::note(&crate::render::pingpong::stock_server(plan.size, iters));
        }
    }
    conn.write_all(oob::RC_PINGPONG_DONE)?;
    let mtu = compat_mtu(plan, side)?;
    report.path_mtu = Some(mtu);
    connect_rc(side, &dest, mtu, plan.qos)?;
    watch_stall(ctx, plan, side, mtu);
    let mut meter = counted_meter("send", plan, 1);
    let r = pingpong_loop(side, true, &mut meter, false, plan, None);
    // A stock peer sends no counters: this end's alone, on a failed run too.
    let r = keep_partial(&mut report.ops, "send", &meter, r).inspect_err(|_| {
        let sends = report.ops.iter().map(|(_, r)| 2 * r.iters).sum();
        report.counters = crate::traffic::counters::judge(side_delta(side), None, send_mix(sends));
    })?;
    let sends = 2 * r.iters;
    report.ops.insert("send", r);
    report.counters = crate::traffic::counters::judge(side_delta(side), None, send_mix(sends));
    Ok(())
}

/// A stock ibv_rc_pingpong peer (`peer`: its role) does SEND/RECV only, and its exchange
/// carries no operation, buffer address or rkey. When this end was given an --op with
/// WRITE or READ in it (`write`, `read`, `all`), the run is refused here, at the handshake,
/// rather than run as SEND: whoever typed `--op write` wants WRITE figures, and a SEND
/// figure printed in their place (or under a note) is a figure of something else, which
/// is how perftest behaves too (ib_write_bw never reports a SEND). Without --op (or with
/// --op send, or --compat) the stock peer's SEND ping-pong runs, as it always did. The
/// caller then closes the TCP connection without a word: a stock tool cannot read
/// rdmactl's notice, and the close is what makes it exit instead of waiting forever.
pub(super) fn refuse_for_stock(
    args: &PingpongArgs,
    plan: &Plan,
    side: &Side,
    peer: &'static str,
) -> std::result::Result<(), Failure> {
    match refused_ops(args, plan) {
        Some(ops) => Err(side.fail(Step::Compare, Cause::StockPeerSendOnly { ops, peer })),
        None => Ok(()),
    }
}

/// The operations (`Ops::bits`) asked for that a stock peer cannot do, if any.
fn refused_ops(args: &PingpongArgs, plan: &Plan) -> Option<u8> {
    let asked = args.compat.is_none() && args.op.is_some_and(|op| op != Op::Send);
    (asked && (plan.ops.write || plan.ops.read)).then(|| plan.ops.bits())
}

/// This end's counter changes since the stall watch started them.
fn side_delta(side: &Side) -> Option<crate::model::counter::PortDelta> {
    side.stall
        .counters
        .as_ref()
        .and_then(crate::traffic::counters::CounterWatch::stop)
}

/// ibv_rc_pingpong's exchange runs SENDs only.
fn send_mix(sends: u64) -> crate::model::counter::TrafficMix {
    crate::model::counter::TrafficMix {
        sends,
        reads: false,
        rnr_on_purpose: false,
    }
}

/// A stock peer's exchange carries neither -n nor -s: what a stall look needs to say so.
fn watch_stall(ctx: &Ctx, plan: &Plan, side: &mut Side, mtu: u32) {
    side.stall.counters = Some(crate::traffic::counters::CounterWatch::start(
        &ctx.sysfs,
        side.ctx.name(),
        side.port,
    ));
    side.stall.path_mtu = Some(mtu);
    // As `counted_meter` counts: ibv_rc_pingpong's default when -n is not given.
    side.stall.iterations = Some(u64::from(plan.length.iters.unwrap_or(1000)));
    side.stall.peer_knows_iterations = false;
}

pub(super) fn rc_endpoint(d: &RcDest) -> Endpoint {
    Endpoint {
        lid: d.lid,
        qpn: d.qpn,
        psn: d.psn,
        gid: d.gid,
        gid_index: None,
        gid_type: None,
        link_layer: LinkLayer::Other("unknown".into()),
        active_mtu: 0,
        rkey: 0,
        addr: 0,
        len: 0,
        segment: None,
    }
}

/// ibv_rc_pingpong uses 1024 unless -m is given; stay within this port's active MTU.
pub(super) fn compat_mtu(plan: &Plan, side: &Side) -> std::result::Result<u32, Failure> {
    let active = side.port_info.active_mtu;
    let want = plan.mtu.unwrap_or(1024.min(active.max(256)));
    oob::path_mtu(active, 0, Some(want))
        .map_err(|what| side.fail(Step::Compare, Cause::Invalid { what }))
}

/// RTR and RTS toward an ibv_rc_pingpong peer. It sets a GRH only when the peer's GID has
/// a non-zero interface id; on RoCE that means a peer without -g cannot work, so say so.
pub(super) fn connect_rc(
    side: &Side,
    dest: &RcDest,
    mtu: u32,
    qos: PathQos,
) -> std::result::Result<(), Failure> {
    let interface_id_zero = dest.gid.0[8..] == [0; 8];
    let grh = match &side.gid {
        Some((idx, _, _)) if !interface_id_zero => Some((dest.gid, *idx)),
        _ => None,
    };
    if side.port_info.link_layer == LinkLayer::Ethernet && grh.is_none() {
        return Err(side.fail(
            Step::Compare,
            Cause::Invalid {
                what: format!(
                    "the peer sent GID {}: it runs without -g, but RoCE needs a GRH; run it with -g N",
                    dest.gid
                ),
            },
        ));
    }
    let rtr = RtrParams {
        path_mtu: mtu,
        dest_qpn: dest.qpn,
        dest_psn: dest.psn,
        dest_lid: dest.lid,
        grh,
        max_dest_rd_atomic: 1,
    };
    side.qp.to_rtr_qos(&rtr, qos)?;
    side.qp.to_rts(side.psn, 1)
}

pub(super) fn serve_rc_pingpong(
    ctx: &Ctx,
    args: &PingpongArgs,
    plan: &Plan,
    side: &mut Side,
    report: &mut PingpongReport,
    conn: &mut Conn,
    dest: RcDest,
) -> std::result::Result<(), Failure> {
    report.remote = Some(rc_endpoint(&dest));
    // Before RTR and before this end's answer: the stock client is still reading it, and
    // the close that follows the refusal makes it exit at once.
    refuse_for_stock(args, plan, side, "client")?;
    let mtu = compat_mtu(plan, side)?;
    report.path_mtu = Some(mtu);
    // ibv_rc_pingpong's server connects its QP before answering: the client sends right after.
    connect_rc(side, &dest, mtu, plan.qos)?;
    let local = side.endpoint();
    conn.send_rc(&RcDest {
        lid: local.lid,
        qpn: local.qpn,
        psn: local.psn,
        gid: local.gid,
    })?;
    conn.read_done()?;
    watch_stall(ctx, plan, side, mtu);
    let mut meter = counted_meter("send", plan, 1);
    let r = pingpong_loop(side, false, &mut meter, false, plan, None);
    let r = keep_partial(&mut report.ops, "send", &meter, r)?;
    report.ops.insert("send", r);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::refused_ops;

    fn refused(argv: &[&str]) -> Option<u8> {
        use clap::Parser;
        let mut all = vec!["rdmactl", "pingpong", "-g", "1"];
        all.extend_from_slice(argv);
        let crate::cli::Command::Pingpong(args) = crate::cli::Cli::parse_from(all).command else {
            panic!("not pingpong");
        };
        let plan = super::super::plan::plan(&args).unwrap();
        refused_ops(&args, &plan)
    }

    /// Issue 36: what a stock peer cannot do is refused, on either end; no --op, --op send
    /// and --compat run its SEND ping-pong as before.
    #[test]
    fn only_an_op_with_write_or_read_is_refused() {
        assert_eq!(refused(&["--op", "write"]), Some(2));
        assert_eq!(refused(&["--op", "read", "10.0.0.1"]), Some(4));
        assert_eq!(refused(&["--op", "all"]), Some(7));
        assert_eq!(refused(&[]), None);
        assert_eq!(refused(&["10.0.0.1"]), None);
        assert_eq!(refused(&["--op", "send"]), None);
        assert_eq!(refused(&["--compat", "rc_pingpong"]), None);
    }
}
