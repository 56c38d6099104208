//! A connected endpoint: the QP on a cm_id, its buffers, posts and completions.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rdma_mummy_sys as sys;
use serde::Serialize;

use super::channel::{expect_event, wait_readable, Channel, Id};
use super::cm_err;
use super::private_data::RemoteBuffer;
use crate::gather::verbs::qp::{Access, Context, Cq, Mr, Pd, Qp, QpCaps, SendOp, Wc};
use crate::gather::verbs::{last_errno, query};
use crate::model::device::GidType;
use crate::model::facts::PortNow;
use crate::model::failure::{Cause, EventKind, Failure, Step, QP_PARAMS};
use crate::model::gid::Gid;

/// A finished step of connection setup, for `selftest --cm`'s one line per step.
#[derive(Debug, Clone)]
pub struct StepDone {
    pub step: &'static str,
    pub detail: String,
    pub elapsed: Duration,
}

pub type StepLog<'a> = &'a mut dyn FnMut(StepDone);

pub(super) fn log_step(
    log: &mut dyn FnMut(StepDone),
    started: &mut Instant,
    step: &'static str,
    detail: String,
) {
    log(StepDone {
        step,
        detail,
        elapsed: started.elapsed(),
    });
    *started = Instant::now();
}

/// What the CM set up, read back from the QP after ESTABLISHED.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConnInfo {
    pub device: String,
    pub port: u8,
    pub local: Option<SocketAddr>,
    pub peer: SocketAddr,
    pub qpn: u32,
    pub remote_qpn: u32,
    /// The GID index the kernel put in the QP's address vector, and what that slot holds.
    pub sgid_index: u8,
    pub sgid: Option<Gid>,
    pub gid_type: Option<GidType>,
    pub path_mtu: u32,
}

/// The three areas of the registered buffer, each `len` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Region {
    /// Source of SENDs and RDMA WRITEs.
    Send = 0,
    /// Target of RECVs.
    Recv = 1,
    /// Advertised to the peer for its READs and WRITEs; target of our READs.
    Rdma = 2,
}

/// A one-sided or two-sided operation on a connected endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmOp {
    Send,
    Write,
    Read,
}

impl CmOp {
    pub fn name(self) -> &'static str {
        match self {
            CmOp::Send => "send",
            CmOp::Write => "write",
            CmOp::Read => "read",
        }
    }
}

/// One successful work completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    pub wr_id: u64,
    pub byte_len: u32,
    pub is_recv: bool,
}

/// What woke a waiting endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    Completion(Completion),
    Disconnected,
}

const RECV_WR_ID: u64 = 1 << 63;

/// Work requests per queue: the TCP exchange's WRITE window (32) fits in the send queue.
pub(super) const QUEUE_DEPTH: u32 = 32;

/// RDMA READs this side has outstanding at the peer, and the peer at this side.
pub(super) const INITIATOR_DEPTH: u8 = 1;

/// rping's largest ping (-S), so a stock client fits in what the server registers.
pub(super) const FOREIGN_BUFFER_LEN: u32 = 65536;

/// The least each area holds, whatever `-s`: room for the short messages both ends send
/// each other besides the measured ones (the end of a run, a caught signal).
pub(super) const MIN_AREA_LEN: u32 = 64;

/// The most a client may ask the server to register (three areas of this each).
pub const MAX_BUFFER_LEN: u32 = 256 << 20;

/// An RC QP connected through the CM, with its registered buffer and the peer's. The
/// verbs objects are qp.rs's, built on the context librdmacm opened for the id.
pub struct CmEndpoint {
    // Field order is drop order: the QP (through the id), MR, CQ, then the id's PD and the
    // id itself, whose context everything above uses.
    qp: Qp,
    mr: Mr,
    cq: Cq,
    pub(super) id: Id,
    pub(super) channel: Channel,
    pub(super) len: usize,
    pub remote: RemoteBuffer,
    pub info: ConnInfo,
    disconnected: bool,
    timeout: Duration,
    /// The client is a stock tool (no rdmactl private data), not rdmactl.
    pub foreign: bool,
    /// One completion per poll: callers take them one by one, also with a window in flight.
    wc: [Wc; 1],
    /// Completions taken since the CM channel was last looked at.
    since_cm_check: u32,
}

/// The librdmacm/libibverbs call behind a failed data-path step, as the CM explainer
/// names it.
fn call_of(step: Step) -> &'static str {
    match step {
        Step::Pd => "ibv_alloc_pd",
        Step::Cq => "ibv_create_cq",
        Step::Mr => "ibv_reg_mr",
        Step::QpCreate => "rdma_create_qp",
        Step::PostRecv => "ibv_post_recv",
        Step::PostSend => "ibv_post_send",
        Step::Poll => "ibv_poll_cq",
        _ => "verbs call",
    }
}

/// A data-path failure (qp.rs) as the cause of a CM stage's failure, naming the call.
fn cm_cause(f: Failure) -> Cause {
    match f.cause {
        Cause::Errno { errno, .. } => Cause::call(call_of(f.step), errno),
        other => Cause::invalid(format!("{}: {other}", f.step.name())),
    }
}

impl CmEndpoint {
    /// Allocate PD, CQ, buffer and MR on the id's device and create the QP on the id.
    pub(super) fn build(
        id: Id,
        channel: Channel,
        len: u32,
        peer: SocketAddr,
        timeout: Duration,
    ) -> Result<CmEndpoint, Failure> {
        let device = id.device_name().unwrap_or_else(|| "?".into());
        let port = id.port_num();
        let len = len.max(MIN_AREA_LEN) as usize;
        let fail = |f: Failure| {
            let mut e = cm_err(Step::CmCreateQp, Some(peer), cm_cause(f));
            e.context.device = device.clone();
            e
        };
        // SAFETY: the id is bound to a device, so verbs is its open context, which lives
        // as long as the id; the endpoint drops everything built on it before the id.
        let ctx = unsafe { Context::borrowed(id.verbs(), device.clone()) };
        let pd = Pd::alloc(&ctx).map_err(fail)?;
        let cq = Cq::create_notifying(&ctx, QUEUE_DEPTH * 2).map_err(fail)?;
        let access = Access {
            remote_write: true,
            remote_read: true,
            remote_atomic: false,
        };
        let mr = Mr::register(&pd, len * 3, access).map_err(fail)?;
        let caps = QpCaps {
            max_send_wr: QUEUE_DEPTH,
            max_recv_wr: QUEUE_DEPTH,
        };
        // SAFETY: the id is live, bound to pd's device, and outlives the QP (field order).
        let qp = unsafe { Qp::create_on_cm_id(id.ptr(), &pd, &cq, caps, u32::from(port)) }
            .map_err(fail)?;
        let qpn = qp.qpn();
        Ok(CmEndpoint {
            qp,
            mr,
            cq,
            id,
            channel,
            len,
            remote: RemoteBuffer {
                addr: 0,
                rkey: 0,
                len: 0,
            },
            info: ConnInfo {
                device,
                port,
                local: None,
                peer,
                qpn,
                remote_qpn: 0,
                sgid_index: 0,
                sgid: None,
                gid_type: None,
                path_mtu: 0,
            },
            disconnected: false,
            timeout,
            foreign: false,
            wc: [Wc::default()],
            since_cm_check: 0,
        })
    }

    /// Our buffer's area `r`, as the peer sees it.
    pub fn local_buffer(&self, r: Region) -> RemoteBuffer {
        RemoteBuffer {
            addr: self.mr.addr() + self.offset(r) as u64,
            rkey: self.mr.rkey(),
            len: self.len as u32,
        }
    }

    fn offset(&self, r: Region) -> usize {
        r as usize * self.len
    }

    pub fn region(&mut self, r: Region) -> &mut [u8] {
        let start = self.offset(r);
        self.mr.slice_mut(start, self.len)
    }

    /// Copies the first `len` bytes of one area to another: the echo of a SEND, without
    /// a buffer in between.
    pub fn copy_region(&mut self, from: Region, to: Region, len: usize) {
        let len = len.min(self.len);
        let (src, dst) = (self.offset(from), self.offset(to));
        self.mr
            .slice_mut(0, 3 * self.len)
            .copy_within(src..src + len, dst);
    }

    /// How many of `op` may be in flight: the send queue for WRITE, twice the READs the
    /// peer answers at once (the initiator depth) for READ, one SEND (a ping-pong).
    pub fn window(&self, op: CmOp) -> usize {
        match op {
            CmOp::Write => QUEUE_DEPTH as usize,
            CmOp::Read => 2 * usize::from(INITIATOR_DEPTH),
            CmOp::Send => 1,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// The deadline of every step on this endpoint.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Point RDMA READ/WRITE at a buffer the peer announced in a message (rping does).
    pub fn set_remote(&mut self, remote: RemoteBuffer) {
        self.remote = remote;
    }

    pub(super) fn fill_info(&mut self) {
        self.info.local = self.id.local_addr();
        if let Some(path) = self.qp.path() {
            self.info.remote_qpn = path.dest_qpn;
            self.info.sgid_index = path.sgid_index;
            self.info.path_mtu = path.path_mtu;
            let (verbs, port, index) =
                (self.id.verbs(), self.info.port, u32::from(path.sgid_index));
            // SAFETY: the id's context is open for as long as the id lives.
            unsafe {
                self.info.sgid = query::gid(verbs, port, index).ok();
                self.info.gid_type = query::port_attrs(verbs, port)
                    .ok()
                    .and_then(|a| query::gid_type(verbs, port, index, a.link_layer));
            }
        }
    }

    /// This end's port and the QP's GID slot now, from the kernel (not a cached copy).
    pub fn port_now(&self) -> PortNow {
        let sgid = self.info.sgid.map(|g| (u32::from(self.info.sgid_index), g));
        // SAFETY: the id's context is open for as long as the id lives.
        unsafe { query::port_now(self.id.verbs(), self.info.port, sgid) }
    }

    /// A failure of this connection: names its peer and device.
    pub fn err(&self, step: Step, cause: Cause) -> Failure {
        let mut e = cm_err(step, Some(self.info.peer), cause);
        e.context.device = self.info.device.clone();
        // The QP exists and was connected with these attributes (conn_param).
        e.context.qp = Some(QP_PARAMS);
        e
    }

    fn transfer_err(&self, f: Failure) -> Failure {
        self.err(Step::CmTransfer, cm_cause(f))
    }

    pub fn post_recv(&mut self) -> Result<(), Failure> {
        let offset = self.offset(Region::Recv);
        self.qp
            .post_recv(&self.mr, offset, self.len as u32, RECV_WR_ID)
            .map_err(|f| self.transfer_err(f))
    }

    /// Post one signaled `op` of `len` bytes: SEND from the send area, WRITE from the
    /// send area into the peer's buffer, READ from the peer's buffer into our RDMA area.
    pub fn post(&mut self, op: CmOp, len: usize, wr_id: u64) -> Result<(), Failure> {
        let len = len.min(self.len) as u32;
        if op != CmOp::Send && len > self.remote.len {
            return Err(self.err(
                Step::CmTransfer,
                Cause::invalid(format!(
                    "the peer's buffer has {} bytes, {len} asked",
                    self.remote.len
                )),
            ));
        }
        let (remote_addr, rkey) = (self.remote.addr, self.remote.rkey);
        let send_op = match op {
            CmOp::Send => SendOp::Send {
                offset: self.offset(Region::Send),
                len,
            },
            CmOp::Write => SendOp::Write {
                offset: self.offset(Region::Send),
                len,
                remote_addr,
                rkey,
            },
            CmOp::Read => SendOp::Read {
                offset: self.offset(Region::Rdma),
                len,
                remote_addr,
                rkey,
            },
        };
        self.qp
            .post_send(&self.mr, send_op, wr_id)
            .map_err(|f| self.transfer_err(f))
    }

    /// The completion in `self.wc`, checked: an error status is the transfer's failure,
    /// unless a CM event is already waiting. A peer that went away or a device being
    /// removed also fails the work in flight, and the event names the cause; the
    /// completion status only shows the consequence.
    fn completion(&mut self) -> Result<Completion, Failure> {
        let wc = self.wc[0];
        let is_recv = wc.wr_id == RECV_WR_ID;
        if !wc.ok() {
            let wake = self.cm_event_now()?;
            self.no_disconnect(wake)?;
            let op = if is_recv {
                "RECV"
            } else {
                "send queue work request"
            };
            return Err(self.err(
                Step::CmTransfer,
                Cause::WcStatus {
                    status: wc.status,
                    vendor_err: wc.vendor_err,
                    opcode: wc.opcode,
                    op: Some(op),
                },
            ));
        }
        Ok(Completion {
            wr_id: wc.wr_id,
            byte_len: wc.byte_len,
            is_recv,
        })
    }

    fn poll_once(&mut self) -> Result<Option<Completion>, Failure> {
        match self.cq.poll(&mut self.wc) {
            Ok(0) => Ok(None),
            Ok(_) => self.completion().map(Some),
            Err(f) => Err(self.transfer_err(f)),
        }
    }

    /// A completion already in the CQ, if any: no wait and no look at the CM channel. For
    /// the last words of a peer whose disconnect was seen first.
    pub fn try_completion(&mut self) -> Result<Option<Completion>, Failure> {
        self.poll_once()
    }

    /// Busy-poll the CQ for the next completion, for latency measurements: qp.rs's
    /// [`Cq::wait`], which reads no clock while completions keep coming. The CM channel is
    /// looked at every `CM_CHECK` without a completion and every `CM_CHECK_EVERY`
    /// completions, so a peer that went away or a device being removed is named at once
    /// instead of ending in a timeout (or, with rxe, in a `rdma link delete` that blocks
    /// until this process lets go of the device, while traffic still flows).
    pub fn poll(&mut self, waiting_for: &'static str) -> Result<Completion, Failure> {
        const CM_CHECK: Duration = Duration::from_millis(100);
        let wake = self.cm_event_now_and_then()?;
        self.no_disconnect(wake)?;
        let mut waited = Duration::ZERO;
        loop {
            let slice = CM_CHECK.min(self.timeout.saturating_sub(waited));
            match self.cq.wait(&mut self.wc, slice) {
                Ok(_) => return self.completion(),
                Err(Failure {
                    cause: Cause::Timeout { .. },
                    ..
                }) => {}
                Err(f) => return Err(self.transfer_err(f)),
            }
            // Cq::wait returns no sooner than `slice`.
            waited += slice;
            let wake = self.cm_event_now()?;
            self.no_disconnect(wake)?;
            // A caught Ctrl-C ends a wait that sees no completion (the loops ask between
            // completions); caught only once a command asked for it.
            if let Some(signal) = crate::interrupt::caught() {
                return Err(self.err(Step::CmTransfer, Cause::Interrupted { signal }));
            }
            if waited >= self.timeout {
                return Err(self.err(
                    Step::CmTransfer,
                    Cause::Timeout {
                        waited_ms: (self.timeout).as_millis() as u64,
                        waiting_for: Some(waiting_for),
                    },
                ));
            }
        }
    }

    /// Once in `CM_CHECK_EVERY` calls, the pending CM event, if any: a syscall, too dear
    /// for every completion of a latency loop.
    fn cm_event_now_and_then(&mut self) -> Result<Option<Wake>, Failure> {
        const CM_CHECK_EVERY: u32 = 1024;
        self.since_cm_check += 1;
        if self.since_cm_check < CM_CHECK_EVERY {
            return Ok(None);
        }
        self.cm_event_now()
    }

    fn cm_event_now(&mut self) -> Result<Option<Wake>, Failure> {
        self.since_cm_check = 0;
        if !self.cm_event_pending()? {
            return Ok(None);
        }
        self.take_cm_event()
    }

    /// In the middle of a transfer a disconnect is a failure.
    fn no_disconnect(&self, wake: Option<Wake>) -> Result<(), Failure> {
        match wake {
            Some(Wake::Disconnected) => Err(self.err(
                Step::CmTransfer,
                Cause::cm_event(EventKind::Disconnected, 0),
            )),
            _ => Ok(()),
        }
    }

    fn cm_event_pending(&self) -> Result<bool, Failure> {
        wait_readable(&[self.channel.fd()], Instant::now())
            .map(|ready| !ready.is_empty())
            .map_err(|errno| self.err(Step::CmTransfer, Cause::call("poll", errno)))
    }

    /// Wait until a completion or a CM event (the peer disconnecting), at most `limit`.
    /// Busy-polls for a while first, as ibv_rc_pingpong does: waking from the completion
    /// channel costs far more than a round trip (milliseconds under qemu), and would show
    /// up in the peer's latency. The spin is [`Cq::wait`]'s, which reads no clock while
    /// completions keep coming; the CM channel is looked at every `SLICE` without one, and
    /// once in a while when they keep coming. After `SPIN` without work it sleeps on both
    /// fds.
    pub fn wait(&mut self, limit: Duration, waiting_for: &'static str) -> Result<Wake, Failure> {
        const SPIN: Duration = Duration::from_millis(50);
        // The CM channel is looked at between slices, so a disconnect is seen within one.
        const SLICE: Duration = Duration::from_millis(5);
        if let Some(wake) = self.cm_event_now_and_then()? {
            return Ok(wake);
        }
        let mut spun = Duration::ZERO;
        while spun < SPIN.min(limit) {
            let slice = SLICE.min(limit - spun);
            match self.cq.wait(&mut self.wc, slice) {
                Ok(_) => return self.completion().map(Wake::Completion),
                Err(Failure {
                    cause: Cause::Timeout { .. },
                    ..
                }) => {}
                Err(f) => return Err(self.transfer_err(f)),
            }
            // Cq::wait returns no sooner than `slice`.
            spun += slice;
            if let Some(wake) = self.cm_event_now()? {
                return Ok(wake);
            }
        }
        // No clock read before the spin, as this runs per message.
        let deadline = Instant::now() + limit.saturating_sub(spun);
        loop {
            if let Some(c) = self.poll_once()? {
                return Ok(Wake::Completion(c));
            }
            // Re-arm, then poll again to close the race.
            self.cq.arm().map_err(|f| self.transfer_err(f))?;
            if let Some(c) = self.poll_once()? {
                return Ok(Wake::Completion(c));
            }
            let comp_fd = self.cq.event_fd().unwrap_or(-1);
            let ready = wait_readable(&[comp_fd, self.channel.fd()], deadline)
                .map_err(|errno| self.err(Step::CmTransfer, Cause::call("poll", errno)))?;
            if ready.is_empty() {
                return Err(self.err(
                    Step::CmTransfer,
                    Cause::Timeout {
                        waited_ms: (limit).as_millis() as u64,
                        waiting_for: Some(waiting_for),
                    },
                ));
            }
            if ready.contains(&0) {
                // Readable, so this does not block.
                self.cq.take_event();
            }
            if ready.contains(&1) {
                if let Some(wake) = self.take_cm_event()? {
                    return Ok(wake);
                }
            }
        }
    }

    /// Consume one pending CM event: DISCONNECTED ends the wait, anything else but a
    /// TIMEWAIT_EXIT is an error.
    fn take_cm_event(&mut self) -> Result<Option<Wake>, Failure> {
        let event = self
            .channel
            .next_event(Instant::now())
            .map_err(|errno| self.err(Step::CmTransfer, Cause::call("rdma_get_cm_event", errno)))?;
        match event.map(|e| (e.kind, e.status)) {
            Some((EventKind::Disconnected, _)) => {
                self.disconnected = true;
                Ok(Some(Wake::Disconnected))
            }
            Some((EventKind::TimewaitExit, _)) | None => Ok(None),
            Some((event, status)) => {
                Err(self.err(Step::CmTransfer, Cause::cm_event(event, status)))
            }
        }
    }

    /// Disconnect and wait (with the endpoint's timeout) for the CM to confirm.
    pub fn disconnect(mut self) -> Result<(), Failure> {
        // SAFETY: the id is alive; rdma_disconnect also moves the QP to the error state.
        let ret = unsafe { sys::rdma_disconnect(self.id.ptr()) };
        if ret != 0 {
            let errno = last_errno();
            // EINVAL: the peer's DREQ got here first; the connection is already gone.
            if self.disconnected || errno == libc::EINVAL {
                return Ok(());
            }
            return Err(self.err(Step::CmDisconnect, Cause::call("rdma_disconnect", errno)));
        }
        if self.disconnected {
            return Ok(());
        }
        let timeout = self.timeout;
        expect_event(
            &self.channel,
            EventKind::Disconnected,
            "DISCONNECTED event",
            Step::CmDisconnect,
            Some(self.info.peer),
            timeout,
        )
        .map(|_| {
            self.disconnected = true;
        })
        .map_err(|mut e| {
            e.context.device = self.info.device.clone();
            e
        })
    }
}
