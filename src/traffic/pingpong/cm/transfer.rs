//! The client's measured operations over a CM connection, and the check of the data
//! they moved.

use std::time::Instant;

use super::{first_difference, pattern};
use crate::gather::verbs::cm::{CmEndpoint, CmOp, Region};
use crate::gather::verbs::qp::ticks;
use crate::model::failure::{Cause, Failure, Step};
use crate::model::results::{ns_per_tick, op_result, LatencyRecorder, OpResult};

/// `iters` times `op`; SEND (and WRITE and READ with `lat`) one at a time, each sample post
/// to completion (for SEND, to both our completion and the echo: a round trip, as
/// ibv_rc_pingpong counts it); WRITE and READ otherwise with a window in flight, for
/// bandwidth. Then the data is checked: the echo, what a WRITE left in the peer's buffer
/// (read back), or what a READ brought.
pub(crate) fn run_op(
    ep: &mut CmEndpoint,
    op: CmOp,
    iters: u32,
    lat: bool,
    peer_image: &mut [u8],
) -> std::result::Result<OpResult, Failure> {
    let len = peer_image.len();
    // WRITE sends the inverted pattern, so a WRITE that did nothing cannot pass the check.
    let sent: Vec<u8> = (0..len)
        .map(|i| {
            if op == CmOp::Write {
                !pattern(i)
            } else {
                pattern(i)
            }
        })
        .collect();
    ep.region(Region::Send)[..len].copy_from_slice(&sent);
    ep.region(Region::Rdma).fill(0);
    let mut samples = LatencyRecorder::new();
    let window = if op == CmOp::Send || lat {
        1
    } else {
        ep.window(op)
    };
    let waiting_for = match op {
        CmOp::Send => "the echo of a SEND",
        CmOp::Write => "an RDMA WRITE completion",
        CmOp::Read => "an RDMA READ completion",
    };
    // TSC ticks per sample, as the TCP exchange measures (no clock read per iteration).
    let start = Instant::now();
    let start_tick = ticks();
    if op == CmOp::Send {
        ping_pong(ep, len, iters, &mut samples, waiting_for)?;
    } else {
        windowed(ep, op, len, iters, window, &mut samples, waiting_for)?;
    }
    let elapsed = start.elapsed();
    let scale = ns_per_tick(start_tick, ticks(), elapsed);
    let bytes = len as u64 * u64::from(iters) * if op == CmOp::Send { 2 } else { 1 };
    let mut result = op_result(
        u64::from(iters),
        bytes,
        elapsed,
        window as u32,
        samples.latency(scale),
    );
    if iters == 0 {
        return Ok(result);
    }
    let (got, want, verified) = match op {
        CmOp::Send => (
            ep.region(Region::Recv)[..len].to_vec(),
            sent,
            format!("every echo matched the {len}-byte pattern"),
        ),
        CmOp::Write => {
            ep.post(CmOp::Read, len, u64::from(iters))?;
            ep.poll("the READ that checks the written data")?;
            peer_image.copy_from_slice(&sent);
            (
                ep.region(Region::Rdma)[..len].to_vec(),
                sent,
                format!("read the peer's {len}-byte buffer back and it matched"),
            )
        }
        CmOp::Read => (
            ep.region(Region::Rdma)[..len].to_vec(),
            peer_image.to_vec(),
            format!("read the peer's {len}-byte buffer and it matched"),
        ),
    };
    if let Some(offset) = first_difference(&got, &want) {
        let failure = Cause::Corrupted {
            op: op.name(),
            offset,
            len,
        };
        return Err(ep.err(Step::CmTransfer, failure));
    }
    result.verified = Some(verified);
    Ok(result)
}

/// One SEND at a time, each waiting for the peer's echo: a round trip per sample.
pub(crate) fn ping_pong(
    ep: &mut CmEndpoint,
    len: usize,
    iters: u32,
    samples: &mut LatencyRecorder,
    waiting_for: &'static str,
) -> std::result::Result<(), Failure> {
    for i in 0..iters {
        let t0 = ticks();
        ep.post(CmOp::Send, len, u64::from(i))?;
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
        samples.record(ticks().saturating_sub(t0));
    }
    Ok(())
}

/// RDMA WRITEs or READs with up to `window` in flight, as the TCP exchange runs them; each
/// sample is one request, post to completion (latency only when `window` is 1).
pub(crate) fn windowed(
    ep: &mut CmEndpoint,
    op: CmOp,
    len: usize,
    iters: u32,
    window: usize,
    samples: &mut LatencyRecorder,
    waiting_for: &'static str,
) -> std::result::Result<(), Failure> {
    let iters = iters as usize;
    // Completions of one send queue come in order: a ring of post times is enough.
    let mut posted_at = vec![0u64; window];
    let (mut posted, mut done) = (0usize, 0usize);
    while done < iters {
        while posted < iters && posted - done < window {
            posted_at[posted % window] = ticks();
            ep.post(op, len, posted as u64)?;
            posted += 1;
        }
        let c = ep.poll(waiting_for)?;
        let at = ticks();
        if c.is_recv {
            // Nothing is sent to us meanwhile; keep the receive queue as it was.
            ep.post_recv()?;
            continue;
        }
        samples.record(at.saturating_sub(posted_at[c.wr_id as usize % window]));
        done += 1;
    }
    Ok(())
}
