//! What the self-test's semantic steps need beyond the data path's fixed calls: work
//! requests with chosen flags (unsignalled, solicited, inline) and opcodes (fetch-and-add);
//! QPs with their own send and receive CQs, an inline size or an SRQ; solicited-only arming
//! and a bounded wait for a completion event; the P_Key table and a QP's P_Key index; the
//! move to ERR; and borrowed views of a QP, CQ and buffer that scoped threads may use.
//!
//! A child of `qp` so it reaches the raw handles without widening their visibility.

use std::marker::PhantomData;

use super::*;

/// What the device says it can do, for the steps that depend on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceCaps {
    /// `IBV_ATOMIC_NONE` (0), `IBV_ATOMIC_HCA` (1) or `IBV_ATOMIC_GLOB` (2).
    pub atomic_cap: u32,
    pub max_srq: u32,
    pub max_srq_wr: u32,
    pub max_qp_wr: u32,
}

impl DeviceCaps {
    pub fn has_atomics(&self) -> bool {
        self.atomic_cap != sys::ibv_atomic_cap::IBV_ATOMIC_NONE
    }
}

impl Context {
    pub fn caps(&self) -> Result<DeviceCaps, Failure> {
        // SAFETY: the context is open for as long as self lives.
        let attr = unsafe { query::device_attrs(self.raw) }
            .map_err(|errno| Failure::new(Step::QueryDevice, Cause::errno(errno), self.ctx(0)))?;
        Ok(DeviceCaps {
            atomic_cap: attr.atomic_cap,
            max_srq: attr.max_srq.max(0) as u32,
            max_srq_wr: attr.max_srq_wr.max(0) as u32,
            max_qp_wr: attr.max_qp_wr.max(0) as u32,
        })
    }

    /// The port's P_Key table, index by index (`ibv_query_pkey`, host byte order).
    pub fn pkey_table(&self, port: u32) -> Result<Vec<u16>, Failure> {
        let port_u8 = self.port_u8(Step::QueryPort, port)?;
        // SAFETY: the context is open for as long as self lives.
        let attr = unsafe { query::port_attrs(self.raw, port_u8) }
            .map_err(|errno| Failure::new(Step::QueryPort, Cause::errno(errno), self.ctx(port)))?;
        (0..i32::from(attr.pkey_tbl_len))
            .map(|index| {
                let mut pkey: sys::__be16 = 0;
                // SAFETY: open context; pkey is a valid out-parameter.
                match unsafe { sys::ibv_query_pkey(self.raw, port_u8, index, &mut pkey) } {
                    0 => Ok(u16::from_be(pkey)),
                    rc => Err(Failure::new(Step::QueryPort, errno_of(rc), self.ctx(port))),
                }
            })
            .collect()
    }
}

/// The operation of a work request; remote addresses and keys where it has them.
#[derive(Debug, Clone, Copy)]
pub enum Opcode {
    Send,
    CompareSwap {
        remote_addr: u64,
        rkey: u32,
        compare: u64,
        swap: u64,
    },
    FetchAdd {
        remote_addr: u64,
        rkey: u32,
        add: u64,
    },
}

/// The send flags the semantic steps vary.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SendFlags {
    pub signaled: bool,
    pub solicited: bool,
    pub inline: bool,
}

/// One send-queue work request on `len` bytes at `offset` of the local buffer.
#[derive(Debug, Clone, Copy)]
pub struct WorkRequest {
    pub wr_id: u64,
    pub op: Opcode,
    pub flags: SendFlags,
    pub offset: usize,
    pub len: u32,
}

/// Posts one work request on a raw QP; the errno on failure. `addr` and `lkey` are the
/// local buffer's.
fn post_raw(qp: *mut sys::ibv_qp, addr: u64, lkey: u32, w: &WorkRequest) -> Result<(), i32> {
    use sys::ibv_send_flags as f;
    use sys::ibv_wr_opcode as o;
    // SAFETY: ibv_send_wr is plain data; zero is a valid starting point.
    let mut wr: sys::ibv_send_wr = unsafe { std::mem::zeroed() };
    match w.op {
        Opcode::Send => wr.opcode = o::IBV_WR_SEND,
        Opcode::CompareSwap {
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
        }
        Opcode::FetchAdd {
            remote_addr,
            rkey,
            add,
        } => {
            wr.opcode = o::IBV_WR_ATOMIC_FETCH_AND_ADD;
            wr.wr.atomic = sys::atomic_t {
                remote_addr,
                compare_add: add,
                swap: 0,
                rkey,
            };
        }
    }
    let mut sge = sys::ibv_sge {
        addr: addr + w.offset as u64,
        length: w.len,
        lkey,
    };
    wr.wr_id = w.wr_id;
    if w.len > 0 {
        wr.sg_list = &mut sge;
        wr.num_sge = 1;
    }
    let mut flags = 0;
    if w.flags.signaled {
        flags |= f::IBV_SEND_SIGNALED.0;
    }
    if w.flags.solicited {
        flags |= f::IBV_SEND_SOLICITED.0;
    }
    if w.flags.inline {
        flags |= f::IBV_SEND_INLINE.0;
    }
    wr.send_flags = flags;
    let mut bad = ptr::null_mut();
    // SAFETY: wr and sge live across the call; the provider copies them (or the inline
    // bytes) before it returns.
    match unsafe { sys::ibv_post_send(qp, &mut wr, &mut bad) } {
        0 => Ok(()),
        rc => Err(super::super::errno_of(rc)),
    }
}

fn post_recv_raw(qp: *mut sys::ibv_qp, addr: u64, lkey: u32, len: u32, wr_id: u64) -> i32 {
    // SAFETY: the caller's QP is live; `post_one_recv` hands over a valid work request.
    post_one_recv(addr, lkey, len, wr_id, |wr, bad| unsafe {
        sys::ibv_post_recv(qp, wr, bad)
    })
}

/// A completion with the fields the semantic steps check beyond [`Wc`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WcDetail {
    pub wc: Wc,
    /// The local QP the completion belongs to (which QP an SRQ receive landed on).
    pub qp_num: u32,
}

impl WcDetail {
    fn from_raw(src: &sys::ibv_wc) -> WcDetail {
        WcDetail {
            wc: Wc {
                wr_id: src.wr_id,
                status: src.status,
                opcode: src.opcode,
                byte_len: src.byte_len,
                vendor_err: src.vendor_err,
            },
            qp_num: src.qp_num,
        }
    }

    pub fn is_flush(&self) -> bool {
        self.wc.status == sys::ibv_wc_status::IBV_WC_WR_FLUSH_ERR
    }
}

fn poll_raw(cq: *mut sys::ibv_cq, out: &mut [WcDetail]) -> Result<usize, i32> {
    // SAFETY: ibv_wc is plain data.
    let mut raw: [sys::ibv_wc; 16] = unsafe { std::mem::zeroed() };
    let want = out.len().min(raw.len()) as i32;
    // SAFETY: raw holds `want` entries; live CQ.
    let n = unsafe { sys::ibv_poll_cq(cq, want, raw.as_mut_ptr()) };
    if n < 0 {
        return Err(-n);
    }
    for (dst, src) in out.iter_mut().zip(&raw[..n as usize]) {
        *dst = WcDetail::from_raw(src);
    }
    Ok(n as usize)
}

impl Cq {
    /// Non-blocking: up to `out.len()` (at most 16) completions, with their QP numbers.
    pub fn poll_detailed(&mut self, out: &mut [WcDetail]) -> Result<usize, Failure> {
        poll_raw(self.raw, out)
            .map_err(|errno| Failure::new(Step::Poll, Cause::errno(errno), self.ctx.ctx(0)))
    }

    /// Ask for an event only on the next completion of a work request with the solicited
    /// flag (and on any receive completion in error).
    pub fn arm_solicited(&self) -> Result<(), Failure> {
        // SAFETY: live CQ.
        match unsafe { sys::ibv_req_notify_cq(self.raw, 1) } {
            0 => Ok(()),
            rc => Err(Failure::new(Step::Poll, errno_of(rc), self.ctx.ctx(0))),
        }
    }

    /// Sleeps until the armed CQ's channel has an event or `timeout` passes; takes and
    /// acknowledges the event. True when there was one.
    pub fn wait_event(&self, timeout: Duration) -> Result<bool, Failure> {
        let Some(fd) = self.event_fd() else {
            return Err(Failure::new(
                Step::Poll,
                Cause::invalid("this CQ has no completion channel"),
                self.ctx.ctx(0),
            ));
        };
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
        loop {
            // SAFETY: one valid pollfd.
            let rc = unsafe { libc::poll(&mut pfd, 1, ms) };
            if rc < 0 {
                let errno = super::super::last_errno();
                if errno == libc::EINTR {
                    continue;
                }
                return Err(Failure::new(
                    Step::Poll,
                    Cause::call("poll", errno),
                    self.ctx.ctx(0),
                ));
            }
            if rc == 0 {
                return Ok(false);
            }
            self.take_event();
            return Ok(true);
        }
    }
}

/// A shared receive queue: receives posted once, consumed by whichever QP gets a SEND.
pub struct Srq {
    raw: *mut sys::ibv_srq,
    device: String,
    _pd: Rc<Pd>,
}

impl Srq {
    pub fn create(pd: &Rc<Pd>, max_wr: u32) -> Result<Srq, Failure> {
        // SAFETY: zeroed init attr is valid; fields set below.
        let mut init: sys::ibv_srq_init_attr = unsafe { std::mem::zeroed() };
        init.attr.max_wr = max_wr;
        init.attr.max_sge = 1;
        // SAFETY: live PD; init fully set.
        let raw = unsafe { sys::ibv_create_srq(pd.raw, &mut init) };
        if raw.is_null() {
            return Err(Failure::new(
                Step::Srq,
                Cause::errno(super::super::last_errno()),
                pd.ctx.ctx(0),
            ));
        }
        Ok(Srq {
            raw,
            device: pd.ctx.name.clone(),
            _pd: pd.clone(),
        })
    }

    pub fn post_recv(&self, mr: &Mr, offset: usize, len: u32, wr_id: u64) -> Result<(), Failure> {
        // SAFETY: a live SRQ; `post_one_recv` hands over a valid work request.
        let addr = mr.addr() + offset as u64;
        let rc = post_one_recv(addr, mr.lkey(), len, wr_id, |wr, bad| unsafe {
            sys::ibv_post_srq_recv(self.raw, wr, bad)
        });
        match rc {
            0 => Ok(()),
            rc => Err(Failure::new(
                Step::PostRecv,
                errno_of(rc),
                FailureContext {
                    device: self.device.clone(),
                    ..Default::default()
                },
            )),
        }
    }
}

impl Drop for Srq {
    fn drop(&mut self) {
        // SAFETY: the QPs using it are dropped first (their owners drop them before this).
        unsafe { sys::ibv_destroy_srq(self.raw) };
    }
}

/// How to build a QP beyond [`QpCaps`]: separate CQs, an inline size, an SRQ.
pub struct QpConfig<'a> {
    pub send_cq: &'a Cq,
    pub recv_cq: &'a Cq,
    pub srq: Option<&'a Srq>,
    pub max_send_wr: u32,
    pub max_recv_wr: u32,
    pub max_inline_data: u32,
    pub port: u32,
    pub gid_index: Option<u32>,
}

/// The capacities the provider granted (at least what was asked).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Granted {
    pub max_send_wr: u32,
    pub max_recv_wr: u32,
    pub max_inline_data: u32,
}

impl Qp {
    /// An RC QP whose send requests are signalled only when they ask to be (sq_sig_all 0).
    pub fn create_configured(pd: &Rc<Pd>, cfg: &QpConfig) -> Result<(Qp, Granted), Failure> {
        // SAFETY: zeroed init attr is valid; fields set below.
        let mut init: sys::ibv_qp_init_attr = unsafe { std::mem::zeroed() };
        init.send_cq = cfg.send_cq.raw;
        init.recv_cq = cfg.recv_cq.raw;
        init.srq = cfg.srq.map_or(ptr::null_mut(), |s| s.raw);
        init.cap.max_send_wr = cfg.max_send_wr;
        init.cap.max_recv_wr = if cfg.srq.is_some() {
            0
        } else {
            cfg.max_recv_wr
        };
        init.cap.max_send_sge = 1;
        init.cap.max_recv_sge = 1;
        init.cap.max_inline_data = cfg.max_inline_data;
        init.qp_type = sys::ibv_qp_type::IBV_QPT_RC;
        init.sq_sig_all = 0;
        // SAFETY: live PD, CQs and SRQ of one context; init is fully set.
        let raw = unsafe { sys::ibv_create_qp(pd.raw, &mut init) };
        if raw.is_null() {
            let mut c = pd.ctx.ctx(cfg.port);
            c.gid_index = cfg.gid_index;
            return Err(Failure::new(
                Step::QpCreate,
                Cause::errno(super::super::last_errno()),
                c,
            ));
        }
        let granted = Granted {
            max_send_wr: init.cap.max_send_wr,
            max_recv_wr: init.cap.max_recv_wr,
            max_inline_data: init.cap.max_inline_data,
        };
        let qp = Qp {
            raw,
            cm_id: ptr::null_mut(),
            device: pd.ctx.name.clone(),
            port: cfg.port,
            gid_index: cfg.gid_index,
            _pd: pd.clone(),
            max_inline: init.cap.max_inline_data,
            params: std::cell::Cell::new(None),
        };
        Ok((qp, granted))
    }

    /// The largest inline size this QP accepts.
    pub fn max_inline_data(&self) -> u32 {
        self.max_inline
    }

    /// The P_Key index the QP holds now.
    pub fn pkey_index(&self) -> Result<u16, Failure> {
        use sys::ibv_qp_attr_mask as m;
        // SAFETY: zeroed attrs are valid out-parameters.
        let (mut attr, mut init): (sys::ibv_qp_attr, sys::ibv_qp_init_attr) =
            unsafe { (std::mem::zeroed(), std::mem::zeroed()) };
        // SAFETY: live QP and valid out-parameters.
        let rc = unsafe {
            sys::ibv_query_qp(
                self.raw,
                &mut attr,
                m::IBV_QP_PKEY_INDEX.0 as i32,
                &mut init,
            )
        };
        match rc {
            0 => Ok(attr.pkey_index),
            rc => Err(Failure::new(Step::QueryQp, errno_of(rc), self.ctx())),
        }
    }

    /// Moves the QP to ERR: every outstanding work request completes flushed.
    pub fn to_error(&self) -> Result<(), Failure> {
        // SAFETY: zeroed qp_attr is valid; unused fields stay 0.
        let mut attr: sys::ibv_qp_attr = unsafe { std::mem::zeroed() };
        attr.qp_state = sys::ibv_qp_state::IBV_QPS_ERR;
        match self.modify(&mut attr, sys::ibv_qp_attr_mask::IBV_QP_STATE.0) {
            0 => Ok(()),
            rc => Err(Failure::new(Step::ToError, errno_of(rc), self.ctx())),
        }
    }

    /// Posts `w` on `len` bytes at `w.offset` of `mr`. A refusal names the request's size
    /// and whether it was inline, so an explainer can weigh it against the QP's limits.
    pub fn post(&self, mr: &Mr, w: &WorkRequest) -> Result<(), Failure> {
        post_raw(self.raw, mr.addr(), mr.lkey(), w).map_err(|errno| {
            let mut c = self.ctx();
            c.bytes = Some(u64::from(w.len));
            Failure::new(Step::PostSend, Cause::errno(errno), c)
        })
    }

    /// A view of this QP that scoped threads may post on.
    pub fn for_threads(&self) -> ThreadQp<'_> {
        ThreadQp {
            raw: self.raw,
            device: &self.device,
            port: self.port,
            _owner: PhantomData,
        }
    }
}

impl Cq {
    /// A view of this CQ that scoped threads may poll.
    pub fn for_threads(&self) -> ThreadCq<'_> {
        ThreadCq {
            raw: self.raw,
            _owner: PhantomData,
        }
    }
}

impl Mr {
    /// The buffer cut into `parts` equal, disjoint pieces, one per thread: each piece may
    /// move to its own thread because no two pieces (and no `&Mr` user, borrowed out here)
    /// touch the same bytes.
    pub fn split_for_threads(&mut self, parts: usize) -> Vec<ThreadBuf<'_>> {
        let len = self.size() / parts.max(1);
        (0..parts)
            .map(|i| ThreadBuf {
                // SAFETY: i * len + len <= size: in bounds.
                buf: unsafe { self.buf.add(i * len) },
                len,
                lkey: self.lkey(),
                _owner: PhantomData,
            })
            .collect()
    }
}

// Why the thread views are sound: libibverbs is thread-safe for posting on a QP and polling
// a CQ (the providers lock per queue; ibv_post_send(3) and the rdma-core provider code), the
// `'a` borrow keeps the QP, CQ and MR alive and unmoved until every scoped thread has
// joined, and each ThreadBuf owns a disjoint piece of the buffer. Creating, modifying and
// destroying the objects stays with the owning thread.

/// A QP that threads post on (sends and receives).
pub struct ThreadQp<'a> {
    raw: *mut sys::ibv_qp,
    device: &'a str,
    port: u32,
    _owner: PhantomData<&'a Qp>,
}

// SAFETY: see above.
unsafe impl Send for ThreadQp<'_> {}
// SAFETY: see above; posting from several threads at once is what libibverbs allows.
unsafe impl Sync for ThreadQp<'_> {}

impl ThreadQp<'_> {
    fn fail(&self, step: Step, errno: i32) -> Failure {
        Failure::new(
            step,
            Cause::errno(errno),
            FailureContext {
                device: self.device.to_string(),
                port: self.port,
                ..Default::default()
            },
        )
    }

    pub fn post(&self, buf: &ThreadBuf, w: &WorkRequest) -> Result<(), Failure> {
        assert!(
            w.offset + w.len as usize <= buf.len,
            "post past the buffer piece"
        );
        post_raw(self.raw, buf.buf as u64, buf.lkey, w).map_err(|e| self.fail(Step::PostSend, e))
    }

    pub fn post_recv(
        &self,
        buf: &ThreadBuf,
        offset: usize,
        len: u32,
        wr_id: u64,
    ) -> Result<(), Failure> {
        assert!(
            offset + len as usize <= buf.len,
            "receive past the buffer piece"
        );
        match post_recv_raw(
            self.raw,
            buf.buf as u64 + offset as u64,
            buf.lkey,
            len,
            wr_id,
        ) {
            0 => Ok(()),
            rc => Err(self.fail(Step::PostRecv, super::super::errno_of(rc))),
        }
    }
}

/// A CQ that threads poll.
pub struct ThreadCq<'a> {
    raw: *mut sys::ibv_cq,
    _owner: PhantomData<&'a Cq>,
}

// SAFETY: see above.
unsafe impl Send for ThreadCq<'_> {}
// SAFETY: see above; ibv_poll_cq takes the CQ's lock.
unsafe impl Sync for ThreadCq<'_> {}

impl ThreadCq<'_> {
    /// The errno when ibv_poll_cq fails.
    pub fn poll(&self, out: &mut [WcDetail]) -> Result<usize, i32> {
        poll_raw(self.raw, out)
    }
}

/// One thread's piece of a registered buffer.
pub struct ThreadBuf<'a> {
    buf: *mut u8,
    len: usize,
    lkey: u32,
    _owner: PhantomData<&'a mut Mr>,
}

// SAFETY: see above; a piece is used by one thread at a time (not Sync).
unsafe impl Send for ThreadBuf<'_> {}

impl ThreadBuf<'_> {
    /// Only while no work request targets the range.
    pub fn write(&mut self, offset: usize, data: &[u8]) {
        assert!(
            offset + data.len() <= self.len,
            "write past the buffer piece"
        );
        // SAFETY: in bounds (checked); this piece is ours alone.
        unsafe { ptr::copy_nonoverlapping(data.as_ptr(), self.buf.add(offset), data.len()) };
    }

    /// Volatile: the device writes the piece behind our back.
    pub fn read(&self, offset: usize, len: usize) -> Vec<u8> {
        assert!(offset + len <= self.len, "read past the buffer piece");
        // SAFETY: in bounds (checked).
        (0..len)
            .map(|i| unsafe { ptr::read_volatile(self.buf.add(offset + i)) })
            .collect()
    }
}
