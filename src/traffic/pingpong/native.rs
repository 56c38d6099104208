//! The native exchange's run: SEND ping-pong, then each side's RDMA WRITE and READ turns,
//! each checked by the target.

use std::time::Duration;

use super::loops::{keep_partial, pingpong_loop, windowed_loop, QpQueue};
use super::plan::{Length, Plan, WINDOW};
use super::report::PingpongReport;
use super::side::Side;
use crate::ctx::Ctx;
use crate::gather::verbs::qp::{RtrParams, SendOp};
use crate::model::failure::{Cause, Endpoint, Failure, Step};
use crate::model::results::OpResults;
use crate::traffic::meter::Meter;
use crate::wire::exchange::{self as oob, Conn, NativeMsg};

#[allow(clippy::too_many_arguments)]
pub(super) fn native_run(
    ctx: &Ctx,
    plan: &Plan,
    side: &mut Side,
    report: &mut PingpongReport,
    conn: &mut Conn,
    mine: NativeMsg,
    remote: NativeMsg,
    is_client: bool,
) -> std::result::Result<(), Failure> {
    let sysfs = &ctx.sysfs;
    report.remote = Some(remote.endpoint.clone());
    let length = Length::of(&mine);
    let mismatches = oob::compare(&mine, &remote);
    if !mismatches.is_empty() {
        return Err(side.fail(Step::Compare, Cause::Mismatch { mismatches }));
    }
    let mtu = oob::path_mtu(
        side.port_info.active_mtu,
        remote.endpoint.active_mtu,
        plan.mtu,
    )
    .map_err(|what| side.fail(Step::Compare, Cause::Invalid { what }))?;
    report.path_mtu = Some(mtu);
    let r = &remote.endpoint;
    let grh = side.gid.as_ref().map(|(idx, _, _)| (r.gid, *idx));
    let rtr = RtrParams {
        path_mtu: mtu,
        dest_qpn: r.qpn,
        dest_psn: r.psn,
        dest_lid: r.lid,
        grh,
        max_dest_rd_atomic: side.max_rd_atomic,
    };
    side.qp.to_rtr_qos(&rtr, plan.qos)?;
    side.qp.to_rts(side.psn, side.max_rd_atomic)?;
    // Counters are read before the sync that starts the traffic: a sysfs read takes tens
    // of milliseconds under emulation, and an end still reading when the first SEND lands
    // would add that to the other end's measured time.
    side.stall.counters = Some(
        crate::traffic::counters::CounterWatch::start(sysfs, side.ctx.name(), side.port).with_qos(),
    );
    side.stall.path_mtu = Some(mtu);
    side.stall.iterations = length.iters.map(u64::from);
    let traffic = traffic(plan, side, report, conn, r, length, is_client);
    // A failed run keeps this end's counters too (they go to the peer with the notice):
    // what moved before the failure is often what explains it.
    let mix = traffic_mix(plan, report);
    let local = side
        .stall
        .counters
        .as_ref()
        .and_then(crate::traffic::counters::CounterWatch::stop);
    if let Err(f) = traffic {
        report.counters = crate::traffic::counters::judge(local, None, mix);
        return Err(f);
    }
    // Both ends send their counters, then read the other's: no end waits on the other.
    conn.send_counters(
        local
            .as_ref()
            .map(crate::model::counter::WireDelta::of)
            .as_ref(),
    )?;
    let peer = conn.read_counters().map(|w| w.to_delta());
    // Both ends on one port (`-g 1` with no -d on both ends of a same-host run): the
    // peer's GID is in this port's own table, and its counters are this port's again.
    let shared = side.shares_port_with(&report.remote);
    report.counters = if shared {
        crate::traffic::counters::judge_shared(local, mix)
    } else {
        crate::traffic::counters::judge(local, peer, mix)
    };
    crate::traffic::counters::add_qos(
        &mut report.counters,
        side.stall.counters.as_ref(),
        Some(plan.qos.traffic_class),
    );
    Ok(())
}

/// What ran, for the counter rules: SENDs in both directions (each end measured its own
/// round trips), and whether READs ran.
fn traffic_mix(plan: &Plan, report: &PingpongReport) -> crate::model::counter::TrafficMix {
    crate::model::counter::TrafficMix {
        sends: report
            .ops
            .iter()
            .find(|(n, _)| *n == "send")
            .map_or(0, |(_, r)| 2 * r.iters),
        reads: plan.ops.read,
        rnr_on_purpose: false,
    }
}

/// The measured part of the run, between the sync that starts it and the one that ends it.
#[allow(clippy::too_many_arguments)]
fn traffic(
    plan: &Plan,
    side: &mut Side,
    report: &mut PingpongReport,
    conn: &mut Conn,
    r: &Endpoint,
    length: Length,
    is_client: bool,
) -> std::result::Result<(), Failure> {
    conn.sync(1)?;

    let passive = length.passive_wait(plan.timeout, plan.size);
    let limit = length.iters.map(u64::from);
    if plan.ops.send {
        // The client keeps the clock of a --duration run and marks its last message.
        let deadline = length.duration.filter(|_| is_client);
        let mut meter = Meter::start("send", limit, deadline, plan.progress, 1);
        let marked_end = limit.is_none();
        let res = pingpong_loop(side, is_client, &mut meter, marked_end, plan, Some(conn));
        let res = keep_partial(&mut report.ops, "send", &meter, res)?;
        report.ops.insert("send", res);
        conn.sync(2)?;
    }
    for (op, name, tag) in [
        (plan.ops.write, "write", 10u8),
        (plan.ops.read, "read", 20u8),
    ] {
        if !op {
            continue;
        }
        // The client goes first, then the server; each end measures its own turn.
        for initiator_is_client in [true, false] {
            let me_first = initiator_is_client == is_client;
            let t = tag + if initiator_is_client { 0 } else { 5 };
            if me_first {
                rdma_initiator(side, conn, name, r, plan, length, t, &mut report.ops)?;
            } else {
                rdma_target(side, conn, name, r.qpn, t, passive)?;
            }
        }
    }
    conn.sync_for(99, passive)?;
    Ok(())
}

/// The bytes one end puts in its buffer, so the other can check exactly what arrived.
pub(super) fn pattern(op: &str, qpn: u32, len: usize) -> Vec<u8> {
    let unit = format!("rdmactl {op} from QPN 0x{qpn:06x}; ");
    unit.bytes().cycle().take(len).collect()
}

/// This end's turn of `name` (WRITE or READ), its figures into `ops` (those measured
/// before a signal too).
#[allow(clippy::too_many_arguments)]
pub(super) fn rdma_initiator(
    side: &mut Side,
    conn: &mut Conn,
    name: &'static str,
    remote: &Endpoint,
    plan: &Plan,
    length: Length,
    tag: u8,
    ops: &mut OpResults,
) -> std::result::Result<(), Failure> {
    let size = side.size as usize;
    let is_write = name == "write";
    if is_write {
        side.mr.write(0, &pattern("write", side.qp.qpn(), size));
    } else {
        side.mr.fill(0, size, 0);
    }
    conn.sync(tag)?;
    let op = if is_write {
        SendOp::Write {
            offset: 0,
            len: side.size,
            remote_addr: remote.addr,
            rkey: remote.rkey,
        }
    } else {
        SendOp::Read {
            offset: 0,
            len: side.size,
            remote_addr: remote.addr,
            rkey: remote.rkey,
        }
    };
    let window = if length.lat {
        1
    } else if is_write {
        WINDOW
    } else {
        WINDOW.min(u32::from(side.max_rd_atomic).max(1) * 2)
    };
    let mut meter = Meter::start(
        name,
        length.iters.map(u64::from),
        length.duration,
        plan.progress,
        window,
    );
    let bytes_each = u64::from(side.size);
    side.stall.begin();
    let mut queue = QpQueue {
        side: &mut *side,
        op,
        plan,
        conn: Some(&mut *conn),
    };
    let res = windowed_loop(&mut queue, &mut meter, window, bytes_each);
    let mut res = keep_partial(ops, name, &meter, res)?;
    if !is_write {
        let want = pattern("read", remote.qpn, size);
        if side.mr.read(0, size) != want {
            return Err(side.fail(
                Step::Verify,
                Cause::Invalid {
                    what: format!(
                        "RDMA READ returned data that is not the peer's buffer ({size} bytes)"
                    ),
                },
            ));
        }
        res.verified = Some(format!("read the peer's {size}-byte buffer and it matched"));
    } else {
        res.verified = Some("the peer checks what was written".into());
    }
    conn.sync(tag + 1)?;
    ops.insert(name, res);
    Ok(())
}

pub(super) fn rdma_target(
    side: &mut Side,
    conn: &mut Conn,
    name: &str,
    peer_qpn: u32,
    tag: u8,
    passive: Duration,
) -> std::result::Result<(), Failure> {
    let size = side.size as usize;
    let target = side.target();
    if name == "write" {
        side.mr.fill(target, size, 0);
    } else {
        side.mr.write(target, &pattern("read", side.qp.qpn(), size));
    }
    conn.sync(tag)?;
    conn.sync_for(tag + 1, passive)?;
    if name == "write" && side.mr.read(target, size) != pattern("write", peer_qpn, size) {
        return Err(side.fail(
            Step::Verify,
            Cause::Invalid {
                what: format!(
                    "the peer's RDMA WRITE did not leave its {size}-byte string in this buffer"
                ),
            },
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_differ_per_end_and_fill_exactly() {
        let a = pattern("write", 0x11, 100);
        assert_eq!(a.len(), 100);
        assert!(a.starts_with(b"rdmactl write from QPN 0x000011; rdmactl"));
        assert_ne!(a, pattern("write", 0x12, 100));
    }
}
