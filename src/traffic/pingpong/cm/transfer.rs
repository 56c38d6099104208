//! The client's measured operations over a CM connection, and the check of the data
//! they moved.

use super::notice::heard;
use super::{first_difference, pattern};
use crate::gather::verbs::cm::{CmEndpoint, CmOp, Completion, Region};
use crate::gather::verbs::qp::ticks;
use crate::model::failure::{Cause, Failure, Step};
use crate::model::results::{OpResult, OpResults};
use crate::traffic::meter::Meter;
use crate::traffic::pingpong::loops::{keep_partial, windowed_loop, SendQueue};

/// `iters` times `op`; SEND (and WRITE and READ with `lat`) one at a time, each sample post
/// to completion (for SEND, to both our completion and the echo: a round trip, as
/// ibv_rc_pingpong counts it); WRITE and READ otherwise with a window in flight, for
/// bandwidth. Then the data is checked: the echo, what a WRITE left in the peer's buffer
/// (read back), or what a READ brought.
///
/// A run a signal stopped (here, or at the server, which said so) leaves what it measured
/// in `partial` under the op's name, so a Ctrl-C still prints the figures.
pub(crate) fn run_op(
    ep: &mut CmEndpoint,
    op: CmOp,
    iters: u32,
    lat: bool,
    peer_image: &mut [u8],
    partial: &mut OpResults,
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
    let window = if op == CmOp::Send || lat {
        1
    } else {
        ep.window(op) as u32
    };
    let waiting_for = awaited(op);
    // TSC ticks per sample, as the TCP exchange measures (no clock read per iteration).
    let mut meter = Meter::start(op.name(), Some(u64::from(iters)), None, None, window);
    let measured = if op == CmOp::Send {
        ping_pong(ep, len, iters, &mut meter, waiting_for)
            .map(|()| meter.finish(u64::from(iters), 2 * len as u64 * u64::from(iters)))
    } else {
        let mut queue = CmQueue {
            ep: &mut *ep,
            op,
            len,
            waiting_for,
        };
        windowed_loop(&mut queue, &mut meter, window, len as u64)
    };
    let mut result = keep_partial(partial, op.name(), &meter, measured)?;
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
            ep.poll("completion of the READ that checks the written data")?;
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
pub(super) fn ping_pong(
    ep: &mut CmEndpoint,
    len: usize,
    iters: u32,
    meter: &mut Meter,
    waiting_for: &'static str,
) -> std::result::Result<(), Failure> {
    let stopped = |meter: &mut Meter, i: u32, f: Failure| {
        meter.stopped_at(u64::from(i), 2 * len as u64 * u64::from(i));
        f
    };
    for i in 0..iters {
        // Asked every iteration (an atomic load): the next completion is always there in
        // time, so the poll's own look between slices would never see a Ctrl-C.
        if let Some(signal) = crate::interrupt::caught() {
            let f = ep.err(Step::CmTransfer, Cause::Interrupted { signal });
            return Err(stopped(meter, i, f));
        }
        let t0 = ticks();
        ep.post(CmOp::Send, len, u64::from(i))?;
        // The echo can complete before our own send completion is polled.
        let (mut sent, mut echoed) = (false, false);
        while !(sent && echoed) {
            let c = ep.poll(waiting_for).map_err(|f| stopped(meter, i, f))?;
            if heard(ep, &c, "server")
                .map_err(|f| stopped(meter, i, f))?
                .is_some()
            {
                continue;
            }
            if c.is_recv {
                echoed = true;
                ep.post_recv()?;
            } else {
                sent = true;
            }
        }
        meter.record(ticks().saturating_sub(t0));
    }
    Ok(())
}

/// A CM endpoint as the windowed loop's queue: `op` of `len` bytes posted again and again,
/// one completion per wait.
struct CmQueue<'a> {
    ep: &'a mut CmEndpoint,
    op: CmOp,
    len: usize,
    waiting_for: &'static str,
}

impl SendQueue for CmQueue<'_> {
    type Completion = Completion;

    fn empty() -> Completion {
        Completion {
            wr_id: 0,
            byte_len: 0,
            is_recv: false,
        }
    }

    fn post(&mut self, wr_id: u64) -> Result<(), Failure> {
        self.ep.post(self.op, self.len, wr_id)
    }

    fn wait(&mut self, into: &mut [Completion]) -> Result<usize, Failure> {
        into[0] = self.ep.poll(self.waiting_for)?;
        Ok(1)
    }

    fn completed(&mut self, c: &Completion) -> Result<Option<u64>, Failure> {
        if heard(self.ep, c, "server")?.is_some() {
            return Ok(None);
        }
        if c.is_recv {
            // Nothing is sent to us meanwhile; keep the receive queue as it was.
            self.ep.post_recv()?;
            return Ok(None);
        }
        Ok(Some(c.wr_id))
    }

    /// The endpoint's failures already say what was waited for.
    fn stopped_after(&self, f: Failure, _: u64, _: u64, _: Option<u64>) -> Failure {
        f
    }
}

/// What a run of `op` waits for, as a timeout says it: "no echo of a SEND within 5.0 s".
fn awaited(op: CmOp) -> &'static str {
    match op {
        CmOp::Send => "echo of a SEND",
        CmOp::Write => "RDMA WRITE completion",
        CmOp::Read => "RDMA READ completion",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::failure::Cause;

    /// The timeout reads as English: "no echo of a SEND", not "no the echo of a SEND".
    #[test]
    fn a_timeout_names_what_it_waited_for() {
        let timeout = |op| Cause::Timeout {
            waited_ms: 5000,
            waiting_for: Some(awaited(op)),
        };
        assert_eq!(
            timeout(CmOp::Send).to_string(),
            "no echo of a SEND within 5.0 s"
        );
        assert_eq!(
            timeout(CmOp::Write).to_string(),
            "no RDMA WRITE completion within 5.0 s"
        );
        for op in [CmOp::Send, CmOp::Write, CmOp::Read] {
            let text = timeout(op).to_string();
            assert!(
                !text.starts_with("no the ")
                    && !text.starts_with("no a ")
                    && !text.starts_with("no an "),
                "{text}"
            );
        }
    }
}
