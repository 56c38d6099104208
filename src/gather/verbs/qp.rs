//! The RC data path: device, PD, MR, CQ and QP, the INIT → RTR → RTS walk, posting and
//! polling. Every failure is a [`Failure`]: the step, the errno or completion status, and
//! the attributes that were in use, so an explainer can reason about it without parsing text.
//!
//! Raw rdma-mummy-sys calls rather than sideway's wrappers: the measuring loop must post and
//! poll without allocation, and each QP transition must report exactly what it passed.

use std::alloc::Layout;
use std::ptr;
use std::rc::Rc;
use std::time::{Duration, Instant};

use rdma_mummy_sys as sys;
use serde::Serialize;

use super::query::{self, OpenDevice};
use super::VerbsError;
use crate::model::failure::{Cause, Failure, FailureContext, QpParams, Step, QP_PARAMS};

use crate::model::device::{GidType, LinkLayer};
use crate::model::facts::PortNow;
use crate::model::gid::Gid;

mod semantics;
pub use semantics::*;

// ---------------------------------------------------------------------------------------
// Numbers

/// MTU in bytes ↔ the verbs enum (IBV_MTU_256 = 1 … IBV_MTU_4096 = 5).
pub fn mtu_to_enum(bytes: u32) -> Option<u32> {
    match bytes {
        256 => Some(1),
        512 => Some(2),
        1024 => Some(3),
        2048 => Some(4),
        4096 => Some(5),
        _ => None,
    }
}

pub fn mtu_from_enum(value: u32) -> u32 {
    match value {
        1..=5 => 128 << value,
        _ => 0,
    }
}

pub(super) fn link_layer_from(value: u8) -> LinkLayer {
    // IBV_LINK_LAYER_UNSPECIFIED (0) is what old InfiniBand drivers report.
    match value {
        0 | 1 => LinkLayer::InfiniBand,
        2 => LinkLayer::Ethernet,
        other => LinkLayer::Other(other.to_string()),
    }
}

// ---------------------------------------------------------------------------------------
// Device

/// What the data path needs from a port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct QpPortAttrs {
    pub state: u32,
    pub lid: u16,
    pub link_layer: LinkLayer,
    pub active_mtu: u32,
    pub max_mtu: u32,
    pub gid_tbl_len: u32,
    /// The largest message the port takes, in bytes (rxe reports 8 MiB and does not
    /// enforce it).
    pub max_msg_sz: u32,
}

impl QpPortAttrs {
    pub fn is_active(&self) -> bool {
        self.state == sys::ibv_port_state::IBV_PORT_ACTIVE
    }
}

/// An open device for the data path. Built on [`OpenDevice`] (the one opener, with the
/// device list and typed errors), or on the context librdmacm opened for a cm_id.
pub struct Context {
    raw: *mut sys::ibv_context,
    name: String,
    /// Keeps the device open; None for a cm_id's context, which librdmacm owns and which
    /// outlives everything built on it (cm.rs drops the id last).
    _device: Option<OpenDevice>,
}

impl Context {
    /// Opens `name`, or the first device when None (as ibv_rc_pingpong does). A missing
    /// device is `Cause::Errno(ENODEV)` with the list of what exists in `Err.1`; a missing
    /// libibverbs is EOPNOTSUPP, as the dlopen stubs answer.
    pub fn open(name: Option<&str>) -> Result<Rc<Context>, (Failure, Vec<String>)> {
        let fail = |errno: i32, device: &str, avail: Vec<String>| {
            let context = FailureContext {
                device: device.to_string(),
                ..Default::default()
            };
            (
                Failure::new(Step::Open, Cause::errno(errno), context),
                avail,
            )
        };
        let opened = match name {
            Some(n) => super::open_device(n),
            // Only the first one: another device this user cannot open must not matter.
            None => super::device_names().and_then(|names| match names.first() {
                Some(first) => super::open_device(first),
                None => Err(VerbsError::NoSuchDevice {
                    device: String::new(),
                    available: Vec::new(),
                }),
            }),
        };
        let device = opened.map_err(|e| {
            let wanted = name.unwrap_or_default();
            match e {
                VerbsError::NoSuchDevice { available, .. } => fail(libc::ENODEV, wanted, available),
                VerbsError::LibraryMissing { .. } => fail(libc::EOPNOTSUPP, wanted, Vec::new()),
                other => {
                    let errno = other.errno().unwrap_or(libc::EIO);
                    fail(errno, wanted, super::device_names().unwrap_or_default())
                }
            }
        })?;
        Ok(Rc::new(Context {
            raw: device.raw(),
            name: device.name().to_string(),
            _device: Some(device),
        }))
    }

    /// A context librdmacm opened for a cm_id. Safety: `raw` is open and stays open for
    /// as long as anything built on the returned context lives.
    pub(super) unsafe fn borrowed(raw: *mut sys::ibv_context, name: String) -> Rc<Context> {
        Rc::new(Context {
            raw,
            name,
            _device: None,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    fn ctx(&self, port: u32) -> FailureContext {
        FailureContext {
            device: self.name.clone(),
            port,
            ..Default::default()
        }
    }

    fn port_u8(&self, step: Step, port: u32) -> Result<u8, Failure> {
        u8::try_from(port)
            .map_err(|_| Failure::new(step, Cause::errno(libc::EINVAL), self.ctx(port)))
    }

    pub fn query_port(&self, port: u32) -> Result<QpPortAttrs, Failure> {
        let port_u8 = self.port_u8(Step::QueryPort, port)?;
        // SAFETY: the context is open for as long as self lives.
        let attr = unsafe { query::port_attrs(self.raw, port_u8) }
            .map_err(|errno| Failure::new(Step::QueryPort, Cause::errno(errno), self.ctx(port)))?;
        Ok(QpPortAttrs {
            state: attr.state,
            lid: attr.lid,
            link_layer: link_layer_from(attr.link_layer),
            active_mtu: mtu_from_enum(attr.active_mtu),
            max_mtu: mtu_from_enum(attr.max_mtu),
            gid_tbl_len: attr.gid_tbl_len.max(0) as u32,
            max_msg_sz: attr.max_msg_sz,
        })
    }

    /// The port now, against the QP's source GID (index, GID): the read a stalled run
    /// makes on either exchange (`query::port_now`).
    pub fn port_now(&self, port: u32, sgid: Option<(u32, Gid)>) -> PortNow {
        let Ok(port_u8) = u8::try_from(port) else {
            return PortNow::default();
        };
        // SAFETY: the context is open for as long as self lives.
        unsafe { query::port_now(self.raw, port_u8, sgid) }
    }

    /// The GID at `index` and its type. An empty slot is ENODATA (as the kernel says).
    pub fn query_gid(&self, port: u32, index: u32) -> Result<(Gid, Option<GidType>), Failure> {
        let fail = |errno| {
            let mut c = self.ctx(port);
            c.gid_index = Some(index);
            Failure::new(Step::QueryGid, Cause::errno(errno), c)
        };
        let port_u8 = self.port_u8(Step::QueryGid, port)?;
        // SAFETY: the context is open for as long as self lives.
        let gid = unsafe { query::gid(self.raw, port_u8, index) }.map_err(fail)?;
        if gid.is_zero() {
            return Err(fail(libc::ENODATA));
        }
        // The type needs the link layer (IB and RoCE v1 share the kernel's name).
        // SAFETY: as above.
        let link_layer = unsafe { query::port_attrs(self.raw, port_u8) }
            .map(|a| a.link_layer)
            .unwrap_or(0);
        // SAFETY: as above.
        let gid_type = unsafe { query::gid_type(self.raw, port_u8, index, link_layer) };
        Ok((gid, gid_type))
    }

    /// (max_qp_rd_atom, max_qp_init_rd_atom): how many RDMA READ/atomic may be in flight.
    pub fn rd_atomic_limits(&self) -> Result<(u32, u32), Failure> {
        // SAFETY: the context is open for as long as self lives.
        let attr = unsafe { query::device_attrs(self.raw) }
            .map_err(|errno| Failure::new(Step::QueryDevice, Cause::errno(errno), self.ctx(0)))?;
        Ok((
            attr.max_qp_rd_atom.max(0) as u32,
            attr.max_qp_init_rd_atom.max(0) as u32,
        ))
    }
}

/// Verbs return either -1 with errno set, or the errno itself (modify_qp does the latter).
fn errno_of(rc: i32) -> Cause {
    Cause::errno(super::errno_of(rc))
}

/// A cheap monotonic tick for per-iteration timestamps: the TSC on x86_64, because
/// clock_gettime can be a syscall and an emulated HPET read (under qemu, for one). Callers
/// convert ticks to time by calibrating against `Instant` over the whole measured loop.
#[inline]
pub fn ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: rdtsc has no preconditions on x86_64.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
        START.get_or_init(Instant::now).elapsed().as_nanos() as u64
    }
}

// ---------------------------------------------------------------------------------------
// PD, MR, CQ

pub struct Pd {
    raw: *mut sys::ibv_pd,
    ctx: Rc<Context>,
}

impl Pd {
    pub fn alloc(ctx: &Rc<Context>) -> Result<Rc<Pd>, Failure> {
        // SAFETY: the context is open.
        let raw = unsafe { sys::ibv_alloc_pd(ctx.raw) };
        if raw.is_null() {
            return Err(Failure::new(
                Step::Pd,
                Cause::errno(super::last_errno()),
                ctx.ctx(0),
            ));
        }
        Ok(Rc::new(Pd {
            raw,
            ctx: ctx.clone(),
        }))
    }
}

impl Drop for Pd {
    fn drop(&mut self) {
        // SAFETY: MRs and QPs hold an Rc to this PD.
        unsafe { sys::ibv_dealloc_pd(self.raw) };
    }
}

/// Remote rights a memory region grants. Local write is always on: receives and READ
/// responses land in the buffer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Access {
    pub remote_write: bool,
    pub remote_read: bool,
    pub remote_atomic: bool,
}

impl Access {
    fn mr_flags(self) -> i32 {
        let mut f = sys::ibv_access_flags::IBV_ACCESS_LOCAL_WRITE.0;
        if self.remote_write {
            f |= sys::ibv_access_flags::IBV_ACCESS_REMOTE_WRITE.0;
        }
        if self.remote_read {
            f |= sys::ibv_access_flags::IBV_ACCESS_REMOTE_READ.0;
        }
        if self.remote_atomic {
            f |= sys::ibv_access_flags::IBV_ACCESS_REMOTE_ATOMIC.0;
        }
        f as i32
    }

    fn qp_flags(self) -> u32 {
        (self.mr_flags() as u32) & !sys::ibv_access_flags::IBV_ACCESS_LOCAL_WRITE.0
    }
}

/// A page-aligned buffer and its registration.
pub struct Mr {
    raw: *mut sys::ibv_mr,
    buf: *mut u8,
    layout: Layout,
    _pd: Rc<Pd>,
}

impl Mr {
    pub fn register(pd: &Rc<Pd>, len: usize, access: Access) -> Result<Mr, Failure> {
        let fail = |cause| {
            let mut c = pd.ctx.ctx(0);
            c.bytes = Some(len as u64);
            Failure::new(Step::Mr, cause, c)
        };
        let layout = Layout::from_size_align(len.max(64), 4096)
            .map_err(|_| fail(Cause::errno(libc::EINVAL)))?;
        // SAFETY: non-zero size layout.
        let buf = unsafe { std::alloc::alloc_zeroed(layout) };
        if buf.is_null() {
            return Err(fail(Cause::errno(libc::ENOMEM)));
        }
        // SAFETY: buf is valid for layout.size() bytes and outlives the registration.
        let raw = unsafe { sys::ibv_reg_mr(pd.raw, buf.cast(), layout.size(), access.mr_flags()) };
        if raw.is_null() {
            let cause = Cause::errno(super::last_errno());
            // SAFETY: allocated above with this layout.
            unsafe { std::alloc::dealloc(buf, layout) };
            return Err(fail(cause));
        }
        Ok(Mr {
            raw,
            buf,
            layout,
            _pd: pd.clone(),
        })
    }

    /// Registered bytes (the requested length rounded up to at least 64).
    pub fn size(&self) -> usize {
        self.layout.size()
    }

    pub fn addr(&self) -> u64 {
        self.buf as u64
    }

    pub fn lkey(&self) -> u32 {
        // SAFETY: registered MR.
        unsafe { (*self.raw).lkey }
    }

    pub fn rkey(&self) -> u32 {
        // SAFETY: registered MR.
        unsafe { (*self.raw).rkey }
    }

    /// Copies bytes into the buffer. Only call while no work request targets this range.
    pub fn write(&self, offset: usize, data: &[u8]) {
        assert!(offset + data.len() <= self.size(), "write past the MR");
        // SAFETY: in bounds (checked); the device does not touch the range right now.
        unsafe { ptr::copy_nonoverlapping(data.as_ptr(), self.buf.add(offset), data.len()) };
    }

    /// Copies bytes out; volatile because the device writes the buffer behind our back.
    pub fn read(&self, offset: usize, len: usize) -> Vec<u8> {
        assert!(offset + len <= self.size(), "read past the MR");
        // SAFETY: in bounds (checked).
        (0..len)
            .map(|i| unsafe { ptr::read_volatile(self.buf.add(offset + i)) })
            .collect()
    }

    /// One byte, read as `read` does (the device may have just written it); no allocation,
    /// so a loop can look at each message.
    #[inline]
    pub fn byte(&self, offset: usize) -> u8 {
        assert!(offset < self.size(), "read past the MR");
        // SAFETY: in bounds (checked).
        unsafe { ptr::read_volatile(self.buf.add(offset)) }
    }

    /// The bytes at `offset..offset + len`, to fill or check in place. Only while no work
    /// request targets the range (the device writes it behind our back).
    pub fn slice_mut(&mut self, offset: usize, len: usize) -> &mut [u8] {
        assert!(offset + len <= self.size(), "slice past the MR");
        // SAFETY: in bounds (checked); `&mut self` keeps other Rust borrows away.
        unsafe { std::slice::from_raw_parts_mut(self.buf.add(offset), len) }
    }

    pub fn fill(&self, offset: usize, len: usize, byte: u8) {
        assert!(offset + len <= self.size(), "fill past the MR");
        // SAFETY: in bounds (checked).
        unsafe { ptr::write_bytes(self.buf.add(offset), byte, len) };
    }
}

impl Drop for Mr {
    fn drop(&mut self) {
        // SAFETY: deregister before freeing the memory it pins.
        unsafe {
            sys::ibv_dereg_mr(self.raw);
            std::alloc::dealloc(self.buf, self.layout);
        }
    }
}

/// One completion, copied out of the CQ.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Wc {
    pub wr_id: u64,
    pub status: u32,
    pub opcode: u32,
    pub byte_len: u32,
    pub vendor_err: u32,
}

impl Wc {
    pub fn ok(&self) -> bool {
        self.status == sys::ibv_wc_status::IBV_WC_SUCCESS
    }

    pub fn cause(&self) -> Cause {
        Cause::WcStatus {
            status: self.status,
            vendor_err: self.vendor_err,
            opcode: self.opcode,
            op: None,
        }
    }
}

pub struct Cq {
    raw: *mut sys::ibv_cq,
    ctx: Rc<Context>,
    scratch: [sys::ibv_wc; 16],
    /// The completion channel of a CQ that can be slept on; null for a busy-polled one.
    channel: *mut sys::ibv_comp_channel,
}

impl Cq {
    /// A CQ that is only ever busy-polled (no completion channel).
    pub fn create(ctx: &Rc<Context>, entries: u32) -> Result<Cq, Failure> {
        Cq::create_on(ctx, entries, ptr::null_mut())
    }

    /// A CQ with its own completion channel, so a waiter can sleep on [`Cq::event_fd`]
    /// after [`Cq::arm`] instead of spinning (the CM server waits minutes for a client).
    pub fn create_notifying(ctx: &Rc<Context>, entries: u32) -> Result<Cq, Failure> {
        // SAFETY: the context is open.
        let channel = unsafe { sys::ibv_create_comp_channel(ctx.raw) };
        if channel.is_null() {
            return Err(Failure::new(
                Step::Cq,
                Cause::errno(super::last_errno()),
                ctx.ctx(0),
            ));
        }
        Cq::create_on(ctx, entries, channel).inspect_err(|_| {
            // SAFETY: no CQ uses the channel; it was created above.
            unsafe { sys::ibv_destroy_comp_channel(channel) };
        })
    }

    fn create_on(
        ctx: &Rc<Context>,
        entries: u32,
        channel: *mut sys::ibv_comp_channel,
    ) -> Result<Cq, Failure> {
        // SAFETY: the context is open; the channel is null or belongs to this context.
        let raw =
            unsafe { sys::ibv_create_cq(ctx.raw, entries as i32, ptr::null_mut(), channel, 0) };
        if raw.is_null() {
            return Err(Failure::new(
                Step::Cq,
                Cause::errno(super::last_errno()),
                ctx.ctx(0),
            ));
        }
        // SAFETY: ibv_wc is plain data.
        Ok(Cq {
            raw,
            ctx: ctx.clone(),
            scratch: unsafe { std::mem::zeroed() },
            channel,
        })
    }

    /// The completion channel's fd, readable once an armed CQ got a completion.
    pub fn event_fd(&self) -> Option<i32> {
        // SAFETY: a non-null channel lives as long as self.
        (!self.channel.is_null()).then(|| unsafe { (*self.channel).fd })
    }

    /// Ask for one event on the next completion; poll again afterwards to close the race.
    pub fn arm(&self) -> Result<(), Failure> {
        // SAFETY: live CQ.
        match unsafe { sys::ibv_req_notify_cq(self.raw, 0) } {
            0 => Ok(()),
            rc => Err(Failure::new(Step::Poll, errno_of(rc), self.ctx.ctx(0))),
        }
    }

    /// Take and acknowledge the pending event. Call only when `event_fd` is readable
    /// (ibv_get_cq_event blocks otherwise).
    pub fn take_event(&self) {
        if self.channel.is_null() {
            return;
        }
        let mut cq = ptr::null_mut();
        let mut cq_context = ptr::null_mut();
        // SAFETY: live channel; an event we get is acked at once, before the CQ can go.
        unsafe {
            if sys::ibv_get_cq_event(self.channel, &mut cq, &mut cq_context) == 0 {
                sys::ibv_ack_cq_events(cq, 1);
            }
        }
    }

    /// Non-blocking: copies up to `out.len()` (at most 16) completions into `out`.
    #[inline]
    pub fn poll(&mut self, out: &mut [Wc]) -> Result<usize, Failure> {
        let want = out.len().min(self.scratch.len()) as i32;
        // SAFETY: scratch holds `want` entries.
        let n = unsafe { sys::ibv_poll_cq(self.raw, want, self.scratch.as_mut_ptr()) };
        if n < 0 {
            return Err(Failure::new(Step::Poll, Cause::errno(-n), self.ctx.ctx(0)));
        }
        for (dst, src) in out.iter_mut().zip(&self.scratch[..n as usize]) {
            *dst = Wc {
                wr_id: src.wr_id,
                status: src.status,
                opcode: src.opcode,
                byte_len: src.byte_len,
                vendor_err: src.vendor_err,
            };
        }
        Ok(n as usize)
    }

    /// Busy-polls until at least one completion, or `timeout` without one. The clock is
    /// read once every 4096 empty polls (a few ms of spinning), so a round trip costs at
    /// most a clock read or two: under qemu `clock_gettime` is an emulated HPET read, and
    /// a completion that lands during one is seen only after it. Timeouts are seconds,
    /// so the deadline is still kept to within milliseconds.
    #[inline]
    pub fn wait(&mut self, out: &mut [Wc], timeout: Duration) -> Result<usize, Failure> {
        self.wait_watching(out, timeout, &mut || None)
    }

    /// `wait`, asking `watch` at each clock read (every few ms while idle) whether to stop:
    /// a caught signal, or a peer that went away, ends the wait at once instead of at the
    /// deadline.
    #[inline]
    pub fn wait_watching(
        &mut self,
        out: &mut [Wc],
        timeout: Duration,
        watch: &mut dyn FnMut() -> Option<Failure>,
    ) -> Result<usize, Failure> {
        let mut spins = 0u32;
        let mut since: Option<Instant> = None;
        loop {
            let n = self.poll(out)?;
            if n > 0 {
                return Ok(n);
            }
            spins = spins.wrapping_add(1);
            if spins % 4096 == 0 {
                if let Some(stop) = watch() {
                    return Err(stop);
                }
                let now = Instant::now();
                let started = *since.get_or_insert(now);
                let waited = now.duration_since(started);
                if waited >= timeout {
                    let waited_ms = waited.as_millis() as u64;
                    return Err(Failure::new(
                        Step::Poll,
                        Cause::Timeout {
                            waited_ms,
                            waiting_for: None,
                        },
                        self.ctx.ctx(0),
                    ));
                }
                if spins % 65536 == 0 {
                    // Give a co-located peer (same core under emulation) a chance to run.
                    std::thread::yield_now();
                }
            }
        }
    }
}

impl Cq {
    /// `wait_watching`, but asleep on the completion channel between completions (as
    /// ibv_rc_pingpong -e) instead of spinning; needs a CQ from [`Cq::create_notifying`].
    /// Wakes at least every 100 ms to ask `watch`.
    pub fn wait_sleeping(
        &mut self,
        out: &mut [Wc],
        timeout: Duration,
        watch: &mut dyn FnMut() -> Option<Failure>,
    ) -> Result<usize, Failure> {
        let Some(fd) = self.event_fd() else {
            return self.wait_watching(out, timeout, watch);
        };
        let started = Instant::now();
        loop {
            let n = self.poll(out)?;
            if n > 0 {
                return Ok(n);
            }
            self.arm()?;
            // A completion that came between the poll and the arm raised no event.
            let n = self.poll(out)?;
            if n > 0 {
                return Ok(n);
            }
            let mut pfd = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            let ready = unsafe { libc::poll(&mut pfd, 1, 100) };
            if ready < 0 && super::last_errno() != libc::EINTR {
                return Err(Failure::new(
                    Step::Poll,
                    Cause::call("poll", super::last_errno()),
                    self.ctx.ctx(0),
                ));
            }
            if ready > 0 {
                // Readable, so this does not block.
                self.take_event();
            }
            if let Some(stop) = watch() {
                return Err(stop);
            }
            let waited = started.elapsed();
            if ready <= 0 && waited >= timeout {
                return Err(Failure::new(
                    Step::Poll,
                    Cause::Timeout {
                        waited_ms: waited.as_millis() as u64,
                        waiting_for: None,
                    },
                    self.ctx.ctx(0),
                ));
            }
        }
    }
}

impl Drop for Cq {
    fn drop(&mut self) {
        // SAFETY: the QPs using this CQ are gone (their owners drop them first); every
        // channel event was acked in take_event, so destroying the channel cannot block.
        unsafe {
            sys::ibv_destroy_cq(self.raw);
            if !self.channel.is_null() {
                sys::ibv_destroy_comp_channel(self.channel);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// QP

/// What RTR needs about the remote end.
#[derive(Debug, Clone)]
pub struct RtrParams {
    pub path_mtu: u32,
    pub dest_qpn: u32,
    pub dest_psn: u32,
    pub dest_lid: u16,
    /// Some: send a GRH (RoCE always needs one) from `sgid_index` to this GID.
    pub grh: Option<(Gid, u32)>,
    pub max_dest_rd_atomic: u8,
}

/// The path's QoS fields: 0 and 0 unless asked for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PathQos {
    /// Service level (4 bits).
    pub sl: u8,
    /// The GRH's traffic class; on RoCE v2 the IP header's DSCP and ECN.
    pub traffic_class: u8,
}

/// One send-queue operation. Offsets are into the local MR.
#[derive(Debug, Clone, Copy)]
pub enum SendOp {
    Send {
        offset: usize,
        len: u32,
    },
    Write {
        offset: usize,
        len: u32,
        remote_addr: u64,
        rkey: u32,
    },
    Read {
        offset: usize,
        len: u32,
        remote_addr: u64,
        rkey: u32,
    },
    /// The old remote value lands in 8 bytes at `offset`.
    CompareSwap {
        offset: usize,
        remote_addr: u64,
        rkey: u32,
        compare: u64,
        swap: u64,
    },
}

pub struct Qp {
    raw: *mut sys::ibv_qp,
    /// The cm_id the QP was created on (rdma_create_qp), which must destroy it; null
    /// for one from ibv_create_qp.
    cm_id: *mut sys::rdma_cm_id,
    device: String,
    port: u32,
    gid_index: Option<u32>,
    _pd: Rc<Pd>,
    max_inline: u32,
    /// The retry attributes, once set (RTS here, or librdmacm's connect from the same
    /// numbers): a failure carries them, so its explanation quotes what was used.
    params: std::cell::Cell<Option<QpParams>>,
}

pub struct QpCaps {
    pub max_send_wr: u32,
    pub max_recv_wr: u32,
}

impl QpCaps {
    fn init_attr(&self, cq: &Cq) -> sys::ibv_qp_init_attr {
        // SAFETY: zeroed init attr is valid; fields set below.
        let mut init: sys::ibv_qp_init_attr = unsafe { std::mem::zeroed() };
        init.send_cq = cq.raw;
        init.recv_cq = cq.raw;
        init.cap.max_send_wr = self.max_send_wr;
        init.cap.max_recv_wr = self.max_recv_wr;
        init.cap.max_send_sge = 1;
        init.cap.max_recv_sge = 1;
        init.qp_type = sys::ibv_qp_type::IBV_QPT_RC;
        init
    }
}

/// What a connected QP's address vector says, read back (the CM set it, not us).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QpPath {
    pub dest_qpn: u32,
    pub sgid_index: u8,
    pub path_mtu: u32,
}

impl Qp {
    /// An RC QP on one CQ for sends and receives.
    pub fn create_rc(
        pd: &Rc<Pd>,
        cq: &Cq,
        caps: QpCaps,
        port: u32,
        gid_index: Option<u32>,
    ) -> Result<Qp, Failure> {
        let mut init = caps.init_attr(cq);
        // SAFETY: live PD and CQ of one context; init is fully set.
        let raw = unsafe { sys::ibv_create_qp(pd.raw, &mut init) };
        if raw.is_null() {
            let mut c = pd.ctx.ctx(port);
            c.gid_index = gid_index;
            return Err(Failure::new(
                Step::QpCreate,
                Cause::errno(super::last_errno()),
                c,
            ));
        }
        Ok(Qp {
            raw,
            cm_id: ptr::null_mut(),
            device: pd.ctx.name.clone(),
            port,
            gid_index,
            _pd: pd.clone(),
            max_inline: init.cap.max_inline_data,
            params: std::cell::Cell::new(None),
        })
    }

    /// An RC QP created on a cm_id (rdma_create_qp), so librdmacm moves it through
    /// INIT/RTR/RTS. Safety: `id` is a live cm_id bound to `pd`'s device, and outlives
    /// the returned QP.
    pub(super) unsafe fn create_on_cm_id(
        id: *mut sys::rdma_cm_id,
        pd: &Rc<Pd>,
        cq: &Cq,
        caps: QpCaps,
        port: u32,
    ) -> Result<Qp, Failure> {
        let mut init = caps.init_attr(cq);
        // SAFETY: the caller's promise about id; live PD and CQ; init is fully set.
        if unsafe { sys::rdma_create_qp(id, pd.raw, &mut init) } != 0 {
            return Err(Failure::new(
                Step::QpCreate,
                Cause::errno(super::last_errno()),
                pd.ctx.ctx(port),
            ));
        }
        Ok(Qp {
            // SAFETY: rdma_create_qp succeeded, so id->qp is the new QP.
            raw: unsafe { (*id).qp },
            cm_id: id,
            device: pd.ctx.name.clone(),
            port,
            gid_index: None,
            _pd: pd.clone(),
            max_inline: init.cap.max_inline_data,
            // The CM connects with QP_PARAMS' retry counts (verbs::cm's conn_param).
            params: std::cell::Cell::new(Some(QP_PARAMS)),
        })
    }

    /// Destination QPN, source GID index and path MTU, as the QP holds them now.
    pub fn path(&self) -> Option<QpPath> {
        use sys::ibv_qp_attr_mask as m;
        // SAFETY: zeroed attrs are valid out-parameters; live QP.
        let (mut attr, mut init): (sys::ibv_qp_attr, sys::ibv_qp_init_attr) =
            unsafe { (std::mem::zeroed(), std::mem::zeroed()) };
        let mask = m::IBV_QP_AV.0 | m::IBV_QP_PATH_MTU.0 | m::IBV_QP_DEST_QPN.0;
        // SAFETY: live QP and valid out-parameters.
        if unsafe { sys::ibv_query_qp(self.raw, &mut attr, mask as i32, &mut init) } != 0 {
            return None;
        }
        Some(QpPath {
            dest_qpn: attr.dest_qp_num,
            sgid_index: attr.ah_attr.grh.sgid_index,
            path_mtu: mtu_from_enum(attr.path_mtu),
        })
    }

    pub fn qpn(&self) -> u32 {
        // SAFETY: live QP.
        unsafe { (*self.raw).qp_num }
    }

    fn ctx(&self) -> FailureContext {
        FailureContext {
            device: self.device.clone(),
            port: self.port,
            gid_index: self.gid_index,
            qp: self.params.get(),
            ..Default::default()
        }
    }

    fn modify(&self, attr: &mut sys::ibv_qp_attr, mask: u32) -> i32 {
        // SAFETY: live QP; attr fully initialised by the caller.
        unsafe { sys::ibv_modify_qp(self.raw, attr, mask as i32) }
    }

    pub fn to_init(&self, access: Access) -> Result<(), Failure> {
        self.to_init_pkey(access, 0)
    }

    /// INIT with the P_Key at `pkey_index` of the port's table.
    pub fn to_init_pkey(&self, access: Access, pkey_index: u16) -> Result<(), Failure> {
        use sys::ibv_qp_attr_mask as m;
        // SAFETY: zeroed qp_attr is valid; unused fields stay 0.
        let mut attr: sys::ibv_qp_attr = unsafe { std::mem::zeroed() };
        attr.qp_state = sys::ibv_qp_state::IBV_QPS_INIT;
        attr.pkey_index = pkey_index;
        attr.port_num = self.port as u8;
        attr.qp_access_flags = access.qp_flags();
        let mask = m::IBV_QP_STATE.0
            | m::IBV_QP_PKEY_INDEX.0
            | m::IBV_QP_PORT.0
            | m::IBV_QP_ACCESS_FLAGS.0;
        match self.modify(&mut attr, mask) {
            0 => Ok(()),
            rc => Err(Failure::new(Step::Init, errno_of(rc), self.ctx())),
        }
    }

    /// RTR with a GRH whenever a GID is given, hop limit 1, as ibv_rc_pingpong does.
    pub fn to_rtr(&self, p: &RtrParams) -> Result<(), Failure> {
        self.to_rtr_qos(p, PathQos::default())
    }

    /// RTR with a service level and a GRH traffic class (lossless RoCE classes).
    pub fn to_rtr_qos(&self, p: &RtrParams, qos: PathQos) -> Result<(), Failure> {
        use sys::ibv_qp_attr_mask as m;
        let mut ctx = self.ctx();
        ctx.dest_qpn = Some(p.dest_qpn);
        ctx.dest_psn = Some(p.dest_psn);
        ctx.dest_lid = Some(p.dest_lid);
        ctx.path_mtu = Some(p.path_mtu);
        ctx.dgid = p.grh.map(|(g, _)| g);
        ctx.gid_index = p.grh.map(|(_, i)| i).or(self.gid_index);
        let Some(mtu) = mtu_to_enum(p.path_mtu) else {
            return Err(Failure::new(Step::Rtr, Cause::errno(libc::EINVAL), ctx));
        };
        // SAFETY: zeroed qp_attr is valid; unused fields stay 0.
        let mut attr: sys::ibv_qp_attr = unsafe { std::mem::zeroed() };
        attr.qp_state = sys::ibv_qp_state::IBV_QPS_RTR;
        attr.path_mtu = mtu;
        attr.dest_qp_num = p.dest_qpn;
        attr.rq_psn = p.dest_psn;
        attr.max_dest_rd_atomic = p.max_dest_rd_atomic;
        attr.min_rnr_timer = QP_PARAMS.min_rnr_timer;
        attr.ah_attr.dlid = p.dest_lid;
        attr.ah_attr.sl = qos.sl;
        attr.ah_attr.src_path_bits = 0;
        attr.ah_attr.port_num = self.port as u8;
        if let Some((dgid, sgid_index)) = p.grh {
            attr.ah_attr.is_global = 1;
            attr.ah_attr.grh.dgid = sys::ibv_gid { raw: dgid.0 };
            attr.ah_attr.grh.sgid_index = sgid_index as u8;
            attr.ah_attr.grh.hop_limit = 1;
            attr.ah_attr.grh.traffic_class = qos.traffic_class;
        }
        let mask = m::IBV_QP_STATE.0
            | m::IBV_QP_AV.0
            | m::IBV_QP_PATH_MTU.0
            | m::IBV_QP_DEST_QPN.0
            | m::IBV_QP_RQ_PSN.0
            | m::IBV_QP_MAX_DEST_RD_ATOMIC.0
            | m::IBV_QP_MIN_RNR_TIMER.0;
        match self.modify(&mut attr, mask) {
            0 => Ok(()),
            rc => Err(Failure::new(Step::Rtr, errno_of(rc), ctx)),
        }
    }

    /// RTS with `QP_PARAMS`: retry_cnt 6, as with 7 rxe retries forever and a dead peer
    /// would never be reported; rnr_retry 7 (infinite) because receives are always posted
    /// ahead; the CQ deadline still bounds the wait.
    pub fn to_rts(&self, sq_psn: u32, max_rd_atomic: u8) -> Result<(), Failure> {
        use sys::ibv_qp_attr_mask as m;
        // SAFETY: zeroed qp_attr is valid; unused fields stay 0.
        let mut attr: sys::ibv_qp_attr = unsafe { std::mem::zeroed() };
        attr.qp_state = sys::ibv_qp_state::IBV_QPS_RTS;
        attr.timeout = QP_PARAMS.timeout;
        attr.retry_cnt = QP_PARAMS.retry_cnt;
        attr.rnr_retry = QP_PARAMS.rnr_retry;
        attr.sq_psn = sq_psn;
        attr.max_rd_atomic = max_rd_atomic;
        let mask = m::IBV_QP_STATE.0
            | m::IBV_QP_TIMEOUT.0
            | m::IBV_QP_RETRY_CNT.0
            | m::IBV_QP_RNR_RETRY.0
            | m::IBV_QP_SQ_PSN.0
            | m::IBV_QP_MAX_QP_RD_ATOMIC.0;
        match self.modify(&mut attr, mask) {
            0 => {
                self.params.set(Some(QP_PARAMS));
                Ok(())
            }
            rc => Err(Failure::new(Step::Rts, errno_of(rc), self.ctx())),
        }
    }

    /// One receive of `len` bytes at `offset` of `mr`.
    #[inline]
    pub fn post_recv(&self, mr: &Mr, offset: usize, len: u32, wr_id: u64) -> Result<(), Failure> {
        // SAFETY: a live QP; `post_one_recv` hands over a valid work request.
        let addr = mr.addr() + offset as u64;
        let rc = post_one_recv(addr, mr.lkey(), len, wr_id, |wr, bad| unsafe {
            sys::ibv_post_recv(self.raw, wr, bad)
        });
        if rc != 0 {
            return Err(Failure::new(Step::PostRecv, errno_of(rc), self.ctx()));
        }
        Ok(())
    }

    /// Posts one signalled work request. `len` 0 posts no SGE (a zero-byte SEND).
    #[inline]
    pub fn post_send(&self, mr: &Mr, op: SendOp, wr_id: u64) -> Result<(), Failure> {
        use sys::ibv_wr_opcode as o;
        // SAFETY: ibv_send_wr is plain data; zero is a valid starting point.
        let mut wr: sys::ibv_send_wr = unsafe { std::mem::zeroed() };
        let (offset, len) = match op {
            SendOp::Send { offset, len } => {
                wr.opcode = o::IBV_WR_SEND;
                (offset, len)
            }
            SendOp::Write {
                offset,
                len,
                remote_addr,
                rkey,
            } => {
                wr.opcode = o::IBV_WR_RDMA_WRITE;
                wr.wr.rdma = sys::rdma_t { remote_addr, rkey };
                (offset, len)
            }
            SendOp::Read {
                offset,
                len,
                remote_addr,
                rkey,
            } => {
                wr.opcode = o::IBV_WR_RDMA_READ;
                wr.wr.rdma = sys::rdma_t { remote_addr, rkey };
                (offset, len)
            }
            SendOp::CompareSwap {
                offset,
                remote_addr,
                rkey,
                compare,
                swap,
            } => {
                wr.opcode = o::IBV_WR_ATOMIC_CMP_AND_SWP;
                wr.wr.atomic = sys::atomic_t {
                    remote_addr,
                    compare_add: compare,
                    swap,
                    rkey,
                };
                (offset, 8)
            }
        };
        let mut sge = sys::ibv_sge {
            addr: mr.addr() + offset as u64,
            length: len,
            lkey: mr.lkey(),
        };
        wr.wr_id = wr_id;
        wr.next = ptr::null_mut();
        if len > 0 {
            wr.sg_list = &mut sge;
            wr.num_sge = 1;
        }
        let mut flags = sys::ibv_send_flags::IBV_SEND_SIGNALED.0;
        if matches!(op, SendOp::Send { .. } | SendOp::Write { .. })
            && len > 0
            && len <= self.max_inline
        {
            flags |= sys::ibv_send_flags::IBV_SEND_INLINE.0;
        }
        wr.send_flags = flags;
        let mut bad = ptr::null_mut();
        // SAFETY: wr and sge live across the call; the provider copies them.
        let rc = unsafe { sys::ibv_post_send(self.raw, &mut wr, &mut bad) };
        if rc != 0 {
            return Err(Failure::new(Step::PostSend, errno_of(rc), self.ctx()));
        }
        Ok(())
    }

    /// Context for a failure seen on this QP's completions.
    pub fn failure(&self, step: Step, cause: Cause) -> Failure {
        Failure::new(step, cause, self.ctx())
    }
}

impl Drop for Qp {
    fn drop(&mut self) {
        // SAFETY: live QP, destroyed once; a cm_id's QP through the id, which outlives it.
        unsafe {
            if self.cm_id.is_null() {
                sys::ibv_destroy_qp(self.raw);
            } else {
                sys::rdma_destroy_qp(self.cm_id);
            }
        }
    }
}

/// One receive work request of `len` bytes at `addr` (in the region of `lkey`), handed to
/// `post` (`ibv_post_recv` on a QP or `ibv_post_srq_recv` on a shared receive queue) while
/// the request and its SGE live; returns what `post` returns.
#[inline]
fn post_one_recv(
    addr: u64,
    lkey: u32,
    len: u32,
    wr_id: u64,
    post: impl FnOnce(&mut sys::ibv_recv_wr, &mut *mut sys::ibv_recv_wr) -> libc::c_int,
) -> libc::c_int {
    let mut sge = sys::ibv_sge {
        addr,
        length: len,
        lkey,
    };
    let mut wr = sys::ibv_recv_wr {
        wr_id,
        next: ptr::null_mut(),
        sg_list: &mut sge,
        num_sge: 1,
    };
    let mut bad = ptr::null_mut();
    // The provider copies the request; neither outlives this call.
    post(&mut wr, &mut bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mtu_round_trips() {
        for bytes in [256, 512, 1024, 2048, 4096] {
            assert_eq!(mtu_from_enum(mtu_to_enum(bytes).unwrap()), bytes);
        }
        assert_eq!(mtu_to_enum(1500), None);
        assert_eq!(mtu_from_enum(0), 0);
        assert_eq!(mtu_from_enum(6), 0);
    }

    #[test]
    fn failure_text_names_step_attributes_and_errno() {
        let f = Failure::new(
            Step::Rtr,
            Cause::errno(libc::ETIMEDOUT),
            FailureContext {
                device: "rxe0".into(),
                port: 1,
                gid_index: Some(1),
                dest_qpn: Some(0x11),
                dest_psn: Some(0xabc),
                path_mtu: Some(1024),
                ..Default::default()
            },
        );
        let text = f.to_string();
        for want in [
            "modify QP to RTR failed",
            "rxe0/1",
            "GID index 1",
            "0x000011",
            "path MTU 1024",
            "ETIMEDOUT (110",
        ] {
            assert!(text.contains(want), "{want:?} not in {text:?}");
        }
        let wc = Failure::new(
            Step::Completion,
            Cause::WcStatus {
                status: 12,
                vendor_err: 0x81,
                opcode: 0,
                op: None,
            },
            FailureContext::default(),
        );
        assert!(wc.to_string().contains(
            "IBV_WC_RETRY_EXC_ERR (status 12: transport retry counter exceeded, vendor err 0x81)"
        ));
    }
}
