//! The RDMA connection manager (librdmacm), called through rdma-mummy-sys.
//!
//! sideway's rdmacm wrapper hides the event's private data, `rdma_reject`, the source GID
//! and the event status behind a panic on unknown event types, so this module talks to
//! librdmacm directly. librdmacm is dlopened like libibverbs: when it is missing every call
//! fails with EOPNOTSUPP, and `open_channel` turns that into an error naming the package.
//!
//! Every wait on a CM event polls the channel's fd with a deadline, so no step can hang.
//! The QP is created on the cm_id (`rdma_create_qp`), so librdmacm itself moves it through
//! INIT/RTR/RTS from the kernel's address vector: the kernel, not the user, picks the GID.

use std::ffi::CStr;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::ptr::{self, NonNull};
use std::time::{Duration, Instant};

use rdma_mummy_sys as sys;
use serde::Serialize;

use super::qp::{link_layer_from, Access, Context, Cq, Mr, Pd, Qp, QpCaps, SendOp, Wc};
use super::{last_errno, query};
use crate::model::device::{GidType, LinkLayer};
use crate::model::failure::{show_addr, Cause, EventKind, Failure, Step, QP_PARAMS};
use crate::model::gid::Gid;

/// A CM failure before the id is bound to a device: only the peer is known.
fn cm_err(step: Step, peer: Option<SocketAddr>, cause: Cause) -> Failure {
    Failure::toward(step, cause, peer.map(show_addr))
}

// ---------------------------------------------------------------- event types

/// A CM event type as librdmacm numbers it (`enum rdma_cm_event_type`).
fn event_kind(raw: u32) -> EventKind {
    use sys::rdma_cm_event_type as t;
    match raw {
        t::RDMA_CM_EVENT_ADDR_RESOLVED => EventKind::AddrResolved,
        t::RDMA_CM_EVENT_ADDR_ERROR => EventKind::AddrError,
        t::RDMA_CM_EVENT_ROUTE_RESOLVED => EventKind::RouteResolved,
        t::RDMA_CM_EVENT_ROUTE_ERROR => EventKind::RouteError,
        t::RDMA_CM_EVENT_CONNECT_REQUEST => EventKind::ConnectRequest,
        t::RDMA_CM_EVENT_CONNECT_RESPONSE => EventKind::ConnectResponse,
        t::RDMA_CM_EVENT_CONNECT_ERROR => EventKind::ConnectError,
        t::RDMA_CM_EVENT_UNREACHABLE => EventKind::Unreachable,
        t::RDMA_CM_EVENT_REJECTED => EventKind::Rejected,
        t::RDMA_CM_EVENT_ESTABLISHED => EventKind::Established,
        t::RDMA_CM_EVENT_DISCONNECTED => EventKind::Disconnected,
        t::RDMA_CM_EVENT_DEVICE_REMOVAL => EventKind::DeviceRemoval,
        t::RDMA_CM_EVENT_ADDR_CHANGE => EventKind::AddrChange,
        t::RDMA_CM_EVENT_TIMEWAIT_EXIT => EventKind::TimewaitExit,
        other => EventKind::Other(other),
    }
}

// ---------------------------------------------------------------- the private data layout

/// Where the peer may RDMA READ/WRITE: carried in the CM private data of the connect
/// request (client) and of the accept (server).
///
/// Layout, 24 bytes, all integers big-endian: magic "RDCT" (4), version (1), flags (1),
/// reserved (2), buffer address (8), rkey (4), length (4). IB CM pads private data with
/// zeros (up to 56 bytes in a REQ after the CMA header), so only the prefix is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RemoteBuffer {
    pub addr: u64,
    pub rkey: u32,
    pub len: u32,
}

pub const PRIVATE_DATA_MAGIC: [u8; 4] = *b"RDCT";
pub const PRIVATE_DATA_VERSION: u8 = 1;
pub const PRIVATE_DATA_LEN: usize = 24;

impl RemoteBuffer {
    pub fn encode(&self) -> [u8; PRIVATE_DATA_LEN] {
        let mut out = [0u8; PRIVATE_DATA_LEN];
        out[0..4].copy_from_slice(&PRIVATE_DATA_MAGIC);
        out[4] = PRIVATE_DATA_VERSION;
        out[8..16].copy_from_slice(&self.addr.to_be_bytes());
        out[16..20].copy_from_slice(&self.rkey.to_be_bytes());
        out[20..24].copy_from_slice(&self.len.to_be_bytes());
        out
    }

    pub fn decode(data: &[u8]) -> Result<RemoteBuffer, String> {
        if data.len() < PRIVATE_DATA_LEN {
            return Err(format!(
                "the peer sent {} bytes of CM private data; rdmactl --cm needs {PRIVATE_DATA_LEN}",
                data.len()
            ));
        }
        if data[0..4] != PRIVATE_DATA_MAGIC {
            return Err(format!(
                "the peer's CM private data starts with {:02x?}, not rdmactl's \"RDCT\"",
                &data[0..4]
            ));
        }
        if data[4] != PRIVATE_DATA_VERSION {
            return Err(format!(
                "the peer speaks rdmactl CM private data version {}, this rdmactl speaks {PRIVATE_DATA_VERSION}",
                data[4]
            ));
        }
        let be32 =
            |r: std::ops::Range<usize>| u32::from_be_bytes(data[r].try_into().unwrap_or_default());
        let addr = u64::from_be_bytes(data[8..16].try_into().unwrap_or_default());
        Ok(RemoteBuffer {
            addr,
            rkey: be32(16..20),
            len: be32(20..24),
        })
    }
}

// ---------------------------------------------------------------- sockaddr conversion

fn to_sockaddr(addr: SocketAddr) -> libc::sockaddr_storage {
    // SAFETY: sockaddr_storage is plain old data; all-zero is a valid value.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    match addr {
        SocketAddr::V4(v4) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: v4.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(v4.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in.
            unsafe { ptr::write(&mut storage as *mut _ as *mut libc::sockaddr_in, sin) };
        }
        SocketAddr::V6(v6) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: v6.port().to_be(),
                sin6_flowinfo: v6.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: v6.ip().octets(),
                },
                sin6_scope_id: v6.scope_id(),
            };
            // SAFETY: as above, for sockaddr_in6.
            unsafe { ptr::write(&mut storage as *mut _ as *mut libc::sockaddr_in6, sin6) };
        }
    }
    storage
}

/// # Safety
/// `sa` must point to a sockaddr of at least the size its family implies.
unsafe fn from_sockaddr(sa: *const libc::sockaddr) -> Option<SocketAddr> {
    match (*sa).sa_family as i32 {
        libc::AF_INET => {
            let sin = &*(sa as *const libc::sockaddr_in);
            let ip = Ipv4Addr::from(sin.sin_addr.s_addr.to_ne_bytes());
            Some(SocketAddr::V4(SocketAddrV4::new(
                ip,
                u16::from_be(sin.sin_port),
            )))
        }
        libc::AF_INET6 => {
            let sin6 = &*(sa as *const libc::sockaddr_in6);
            let ip = Ipv6Addr::from(sin6.sin6_addr.s6_addr);
            // An IPv4 client of a `[::]` listener: show it as `ss` and `ip` do.
            if let Some(v4) = ip.to_ipv4_mapped() {
                let port = u16::from_be(sin6.sin6_port);
                return Some(SocketAddr::V4(SocketAddrV4::new(v4, port)));
            }
            Some(SocketAddr::V6(SocketAddrV6::new(
                ip,
                u16::from_be(sin6.sin6_port),
                sin6.sin6_flowinfo,
                sin6.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

// ---------------------------------------------------------------- event channel and ids

/// Why `rdma_create_event_channel` failed, told apart by its errno: rdma-mummy-sys answers
/// EOPNOTSUPP when it could not dlopen librdmacm, so ask the loader why.
fn channel_error(errno: i32, peer: Option<SocketAddr>) -> Failure {
    let failure = if errno == libc::EOPNOTSUPP {
        Cause::LibraryMissing {
            loader_error: loader_error(),
        }
    } else {
        Cause::NoKernelCm {
            errno,
            device_node_exists: std::path::Path::new("/dev/infiniband/rdma_cm").exists(),
            devices_present: std::fs::read_dir("/sys/class/infiniband")
                .is_ok_and(|mut d| d.next().is_some()),
        }
    };
    cm_err(Step::CmSetup, peer, failure)
}

fn loader_error() -> String {
    // SAFETY: dlopen/dlerror with a valid C string; the handle is closed again at once.
    unsafe {
        let handle = libc::dlopen(
            c"librdmacm.so.1".as_ptr(),
            libc::RTLD_LAZY | libc::RTLD_LOCAL,
        );
        if handle.is_null() {
            let msg = libc::dlerror();
            if msg.is_null() {
                "librdmacm.so.1: cannot be loaded".to_string()
            } else {
                CStr::from_ptr(msg).to_string_lossy().into_owned()
            }
        } else {
            libc::dlclose(handle);
            "librdmacm.so.1 loads, but rdmactl's loader could not resolve its functions".to_string()
        }
    }
}

struct Channel {
    raw: NonNull<sys::rdma_event_channel>,
}

// SAFETY: an event channel is a file descriptor wrapper; librdmacm allows using it from
// any thread, and rdmactl uses each channel from one thread at a time.
unsafe impl Send for Channel {}

impl Drop for Channel {
    fn drop(&mut self) {
        // SAFETY: created by rdma_create_event_channel; every id on it is destroyed first.
        unsafe { sys::rdma_destroy_event_channel(self.raw.as_ptr()) }
    }
}

/// What rdmactl keeps of one CM event; the event itself is acked at once.
struct Event {
    kind: EventKind,
    status: i32,
    id: *mut sys::rdma_cm_id,
    private_data: Vec<u8>,
}

impl Channel {
    fn open(peer: Option<SocketAddr>) -> Result<Channel, Failure> {
        // librdmacm's first channel lists (and opens) every device through libibverbs.
        super::query::preload_providers();
        // SAFETY: plain constructor.
        let raw = unsafe { sys::rdma_create_event_channel() };
        let channel = NonNull::new(raw)
            .map(|raw| Channel { raw })
            .ok_or_else(|| channel_error(last_errno(), peer))?;
        // rdma_get_cm_event reads again by itself when it drops an event (a connect
        // request it could not set up); on a blocking fd that second read would wait
        // past every deadline.
        let fd = channel.fd();
        // SAFETY: fcntl on the channel's own open fd.
        let nonblocking = unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFL);
            flags >= 0 && libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) == 0
        };
        if !nonblocking {
            let errno = last_errno();
            return Err(cm_err(
                Step::CmSetup,
                peer,
                Cause::call("fcntl(O_NONBLOCK) on the CM event channel", errno),
            ));
        }
        Ok(channel)
    }

    fn fd(&self) -> i32 {
        // SAFETY: the channel is alive.
        unsafe { self.raw.as_ref().fd }
    }

    /// The next event, or None when `deadline` passes first.
    fn next_event(&self, deadline: Instant) -> Result<Option<Event>, i32> {
        let mut raw: *mut sys::rdma_cm_event = ptr::null_mut();
        loop {
            if !wait_readable(&[self.fd()], deadline)?.contains(&0) {
                return Ok(None);
            }
            // SAFETY: valid channel; its fd is non-blocking, so this never waits.
            if unsafe { sys::rdma_get_cm_event(self.raw.as_ptr(), &mut raw) } == 0 && !raw.is_null()
            {
                break;
            }
            match last_errno() {
                // An event librdmacm dropped by itself: wait for the next one.
                libc::EAGAIN => continue,
                errno => return Err(errno),
            }
        }
        // SAFETY: raw is a valid event until acked; private data is copied out first.
        unsafe {
            let ev = &*raw;
            let conn = &ev.param.conn;
            let private_data = if conn.private_data.is_null() {
                Vec::new()
            } else {
                std::slice::from_raw_parts(
                    conn.private_data as *const u8,
                    conn.private_data_len as usize,
                )
                .to_vec()
            };
            let event = Event {
                kind: event_kind(ev.event),
                status: ev.status,
                id: ev.id,
                private_data,
            };
            sys::rdma_ack_cm_event(raw);
            Ok(Some(event))
        }
    }

    fn create_id(&self, peer: Option<SocketAddr>) -> Result<Id, Failure> {
        let mut raw: *mut sys::rdma_cm_id = ptr::null_mut();
        // SAFETY: valid channel; RDMA_PS_TCP gives an RC QP's port space.
        let ret = unsafe {
            sys::rdma_create_id(
                self.raw.as_ptr(),
                &mut raw,
                ptr::null_mut(),
                sys::rdma_port_space::RDMA_PS_TCP,
            )
        };
        match NonNull::new(raw) {
            Some(raw) if ret == 0 => Ok(Id { raw }),
            _ => Err(cm_err(
                Step::CmSetup,
                peer,
                Cause::call("rdma_create_id", last_errno()),
            )),
        }
    }
}

/// poll(2) on `fds` until one is readable or the deadline passes; the indices that are.
fn wait_readable(fds: &[i32], deadline: Instant) -> Result<Vec<usize>, i32> {
    let mut pfds: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let ms = left.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: pfds is a valid array of pollfd.
        let n = unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, ms) };
        if n < 0 {
            let errno = last_errno();
            if errno == libc::EINTR {
                continue;
            }
            return Err(errno);
        }
        return Ok(pfds
            .iter()
            .enumerate()
            .filter(|(_, p)| p.revents != 0)
            .map(|(i, _)| i)
            .collect());
    }
}

struct Id {
    raw: NonNull<sys::rdma_cm_id>,
}

// SAFETY: a cm_id is used from one thread at a time; librdmacm locks internally.
unsafe impl Send for Id {}

impl Drop for Id {
    fn drop(&mut self) {
        // SAFETY: every event of this id was acked in next_event, so this cannot block.
        unsafe { sys::rdma_destroy_id(self.raw.as_ptr()) };
    }
}

impl Id {
    fn ptr(&self) -> *mut sys::rdma_cm_id {
        self.raw.as_ptr()
    }

    fn verbs(&self) -> *mut sys::ibv_context {
        // SAFETY: the id is alive.
        unsafe { (*self.ptr()).verbs }
    }

    fn port_num(&self) -> u8 {
        // SAFETY: the id is alive.
        unsafe { (*self.ptr()).port_num }
    }

    fn device_name(&self) -> Option<String> {
        let verbs = self.verbs();
        if verbs.is_null() {
            return None;
        }
        // SAFETY: verbs is the id's open context; the name is a NUL-terminated string.
        unsafe {
            let name = sys::ibv_get_device_name((*verbs).device);
            (!name.is_null()).then(|| CStr::from_ptr(name).to_string_lossy().into_owned())
        }
    }

    fn local_addr(&self) -> Option<SocketAddr> {
        // SAFETY: route.addr holds a sockaddr_storage, filled by librdmacm after bind/resolve.
        unsafe { from_sockaddr(&(*self.ptr()).route.addr.src_addr_union.src_addr) }
    }

    fn sgid(&self) -> Gid {
        // SAFETY: plain bytes of the id's address; zero before resolution.
        Gid(unsafe { (*self.ptr()).route.addr.addr.ibaddr.sgid.raw })
    }
}

/// Wait for `want` on `channel` for `id`, turning every other outcome into a typed error.
fn expect_event(
    channel: &Channel,
    want: EventKind,
    waiting_for: &'static str,
    step: Step,
    peer: Option<SocketAddr>,
    timeout: Duration,
) -> Result<Event, Failure> {
    let started = Instant::now();
    let deadline = started + timeout;
    loop {
        let event = channel
            .next_event(deadline)
            .map_err(|errno| cm_err(step, peer, Cause::call("rdma_get_cm_event", errno)))?;
        let Some(event) = event else {
            return Err(cm_err(
                step,
                peer,
                Cause::Timeout {
                    waited_ms: (timeout).as_millis() as u64,
                    waiting_for: Some(waiting_for),
                },
            ));
        };
        if event.kind == want {
            return Ok(event);
        }
        // TIMEWAIT_EXIT and ADDR_CHANGE of an earlier connection are not this step's business.
        if matches!(event.kind, EventKind::TimewaitExit) {
            continue;
        }
        let mut err = cm_err(step, peer, Cause::cm_event(event.kind, event.status));
        err.context.elapsed_ms = Some(started.elapsed().as_millis() as u64);
        if event.kind == EventKind::Rejected {
            if let Ok(reason) = decode_reject(&event.private_data) {
                err.cause = Cause::ServerRejected {
                    status: event.status,
                    reject_reason: crate::model::errno::reject_reason_name(event.status),
                    server_reason: reason,
                };
            }
        }
        return Err(err);
    }
}

/// rdmactl's own reject message: magic, version, then UTF-8 text.
fn encode_reject(text: &str) -> Vec<u8> {
    let mut out = PRIVATE_DATA_MAGIC.to_vec();
    out.push(PRIVATE_DATA_VERSION);
    out.extend(text.bytes().take(40));
    out
}

fn decode_reject(data: &[u8]) -> Result<String, ()> {
    if data.len() > 5 && data[0..4] == PRIVATE_DATA_MAGIC {
        let text = String::from_utf8_lossy(&data[5..]);
        return Ok(text.trim_end_matches('\0').to_string());
    }
    Err(())
}

// ---------------------------------------------------------------- the kernel's choice

pub use crate::model::facts::Resolution;

/// Ask the kernel which device, port and source GID it would use toward `peer`, by
/// resolving address and route with the CM without connecting.
pub fn resolve(
    peer: IpAddr,
    src: Option<IpAddr>,
    timeout: Duration,
) -> Result<Resolution, Failure> {
    let channel = Channel::open(Some(SocketAddr::new(peer, 0)))?;
    let id = channel.create_id(Some(SocketAddr::new(peer, 0)))?;
    resolve_on(&channel, &id, SocketAddr::new(peer, 0), src, timeout)
}

/// The kernel's GID choice toward a peer, for `check --peer`. `src` pins the source
/// address (use the address of the device the user named); without it the kernel picks
/// the source from the routing table, which on a host where the peer address is local
/// means the peer's own device.
pub fn kernel_gid_choice(
    peer: IpAddr,
    src: Option<IpAddr>,
    timeout: Duration,
) -> Result<Resolution, Failure> {
    resolve(peer, src, timeout)
}

/// As `kernel_gid_choice`, toward an IPv6 link-local peer on the interface `scope_id`
/// (`fe80::1%veth0`): the CM needs the scope to know which link the peer is on.
pub fn kernel_gid_choice_scoped(
    peer: std::net::Ipv6Addr,
    scope_id: u32,
    timeout: Duration,
) -> Result<Resolution, Failure> {
    let dst = SocketAddr::V6(std::net::SocketAddrV6::new(peer, 0, 0, scope_id));
    let channel = Channel::open(Some(dst))?;
    let id = channel.create_id(Some(dst))?;
    resolve_on(&channel, &id, dst, None, timeout)
}

fn resolve_on(
    channel: &Channel,
    id: &Id,
    peer: SocketAddr,
    src: Option<IpAddr>,
    timeout: Duration,
) -> Result<Resolution, Failure> {
    let some_peer = Some(peer);
    let mut src_storage = src.map(|ip| to_sockaddr(SocketAddr::new(ip, 0)));
    let mut dst_storage = to_sockaddr(peer);
    let ms = timeout.as_millis().clamp(1, i32::MAX as u128) as i32;
    // SAFETY: the sockaddrs live across the call; librdmacm copies them.
    let ret = unsafe {
        sys::rdma_resolve_addr(
            id.ptr(),
            src_storage
                .as_mut()
                .map_or(ptr::null_mut(), |s| s as *mut _ as *mut libc::sockaddr),
            &mut dst_storage as *mut _ as *mut libc::sockaddr,
            ms,
        )
    };
    if ret != 0 {
        let errno = last_errno();
        let stage = if src.is_some() && errno == libc::EADDRNOTAVAIL {
            Step::CmBind
        } else {
            Step::CmResolveAddr
        };
        return Err(cm_err(
            stage,
            some_peer,
            Cause::call("rdma_resolve_addr", errno),
        ));
    }
    // The kernel reports its own timeout as ADDR_ERROR -ETIMEDOUT; our deadline only
    // catches a kernel that never answers.
    let grace = timeout + Duration::from_millis(500);
    expect_event(
        channel,
        EventKind::AddrResolved,
        "address resolution",
        Step::CmResolveAddr,
        some_peer,
        grace,
    )?;
    let annotate = |mut e: Failure| {
        e.context.device = id.device_name().unwrap_or_default();
        e.context.link_layer = port_link_layer(id.verbs(), id.port_num());
        e
    };
    // SAFETY: the id is resolved and alive.
    if unsafe { sys::rdma_resolve_route(id.ptr(), ms) } != 0 {
        return Err(annotate(cm_err(
            Step::CmResolveRoute,
            some_peer,
            Cause::call("rdma_resolve_route", last_errno()),
        )));
    }
    expect_event(
        channel,
        EventKind::RouteResolved,
        "route resolution",
        Step::CmResolveRoute,
        some_peer,
        grace,
    )
    .map_err(annotate)?;
    describe(id, peer.ip())
}

fn port_link_layer(verbs: *mut sys::ibv_context, port: u8) -> Option<LinkLayer> {
    if verbs.is_null() {
        return None;
    }
    // SAFETY: verbs is the id's open context.
    let attr = unsafe { query::port_attrs(verbs, port) }.ok()?;
    Some(link_layer_from(attr.link_layer))
}

fn describe(id: &Id, peer: IpAddr) -> Result<Resolution, Failure> {
    let verbs = id.verbs();
    let port = id.port_num();
    let device = id.device_name().ok_or_else(|| {
        cm_err(
            Step::CmResolveAddr,
            Some(SocketAddr::new(peer, 0)),
            Cause::invalid("the CM resolved the address but bound no RDMA device"),
        )
    })?;
    let link_layer = port_link_layer(verbs, port).unwrap_or(LinkLayer::Other("unknown".into()));
    let sgid = id.sgid();
    let slots = find_gid(verbs, port, &sgid);
    let (roce_mode, roce_mode_set) = match link_layer {
        LinkLayer::InfiniBand => (None, false),
        _ => match default_roce_mode(&device, port) {
            Some(mode) => (Some(mode), true),
            None => (Some(GidType::RoceV2), false),
        },
    };
    let (gid_index, gid_type, netdev, other_indices) =
        pick_cm_slot(&slots, &link_layer, roce_mode.as_ref());
    Ok(Resolution {
        peer,
        source: id.local_addr().map(|a| a.ip()),
        device,
        port,
        link_layer,
        sgid,
        gid_index,
        gid_type,
        netdev,
        other_indices,
        default_roce_mode: roce_mode,
        default_roce_mode_set: roce_mode_set,
    })
}

/// The RoCE GID type an administrator set for the CM on DEV/PORT, if any: configfs holds
/// it only once someone made the device's directory there.
fn default_roce_mode(device: &str, port: u8) -> Option<GidType> {
    let path = format!("/sys/kernel/config/rdma_cm/{device}/ports/{port}/default_roce_mode");
    match std::fs::read_to_string(path).ok()?.trim() {
        "RoCE v2" => Some(GidType::RoceV2),
        "IB/RoCE v1" => Some(GidType::RoceV1),
        _ => None,
    }
}

/// One GID table slot holding the GID we look for.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Slot {
    index: u32,
    gid_type: GidType,
    netdev: Option<String>,
}

/// Every slot of `port` holding `gid`, read one index at a time: sideway's table query
/// can panic, and ibv_query_gid_ex answers ENODATA for empty slots, which we skip.
fn find_gid(verbs: *mut sys::ibv_context, port: u8, gid: &Gid) -> Vec<Slot> {
    let mut out = Vec::new();
    if verbs.is_null() || gid.is_zero() {
        return out;
    }
    // SAFETY: verbs is open for the id's lifetime.
    let Ok(attr) = (unsafe { query::port_attrs(verbs, port) }) else {
        return out;
    };
    for index in 0..attr.gid_tbl_len.max(0) as u32 {
        // ibv_query_gid_ex, not query::gid: the entry also names the slot's netdev.
        let mut entry: sys::ibv_gid_entry = unsafe { std::mem::zeroed() };
        if unsafe { sys::ibv_query_gid_ex(verbs, port as u32, index, &mut entry, 0) } != 0 {
            continue;
        }
        // SAFETY: raw view of the union.
        if unsafe { entry.gid.raw } != gid.0 {
            continue;
        }
        let gid_type = match entry.gid_type {
            sys::IBV_GID_TYPE_IB => GidType::Ib,
            sys::IBV_GID_TYPE_ROCE_V1 => GidType::RoceV1,
            sys::IBV_GID_TYPE_ROCE_V2 => GidType::RoceV2,
            n => GidType::Other(n.to_string()),
        };
        out.push(Slot {
            index,
            gid_type,
            netdev: ifname(entry.ndev_ifindex),
        });
    }
    out
}

fn ifname(ifindex: u32) -> Option<String> {
    if ifindex == 0 {
        return None;
    }
    let mut buf = [0 as libc::c_char; libc::IF_NAMESIZE];
    // SAFETY: buf has IF_NAMESIZE bytes as if_indextoname requires.
    let p = unsafe { libc::if_indextoname(ifindex, buf.as_mut_ptr()) };
    if p.is_null() {
        return None;
    }
    // SAFETY: if_indextoname wrote a NUL-terminated name into buf.
    Some(
        unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_string_lossy()
            .into_owned(),
    )
}

/// The slot the CM uses: on RoCE the port's default RoCE mode, which the kernel sets to
/// RoCE v2 wherever the port supports it (cma_add_one; changeable only through configfs
/// rdma_cm/<dev>/ports/<n>/default_roce_mode); on InfiniBand the IB slot.
fn pick_cm_slot(
    slots: &[Slot],
    link_layer: &LinkLayer,
    roce_mode: Option<&GidType>,
) -> (Option<u32>, Option<GidType>, Option<String>, Vec<u32>) {
    let order: Vec<&GidType> = match link_layer {
        LinkLayer::InfiniBand => vec![&GidType::Ib],
        _ => roce_mode
            .into_iter()
            .chain([&GidType::RoceV2, &GidType::RoceV1, &GidType::Ib])
            .collect(),
    };
    let chosen = order
        .iter()
        .find_map(|t| slots.iter().find(|s| &s.gid_type == *t))
        .or(slots.first());
    match chosen {
        Some(c) => (
            Some(c.index),
            Some(c.gid_type.clone()),
            c.netdev.clone(),
            slots
                .iter()
                .filter(|s| s.index != c.index)
                .map(|s| s.index)
                .collect(),
        ),
        None => (None, None, None, Vec::new()),
    }
}

// ---------------------------------------------------------------- connected endpoints

/// A finished step of connection setup, for `selftest --cm`'s one line per step.
#[derive(Debug, Clone)]
pub struct StepDone {
    pub step: &'static str,
    pub detail: String,
    pub elapsed: Duration,
}

pub type StepLog<'a> = &'a mut dyn FnMut(StepDone);

fn log_step(
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
const QUEUE_DEPTH: u32 = 32;
/// RDMA READs this side has outstanding at the peer, and the peer at this side.
const INITIATOR_DEPTH: u8 = 1;
/// rping's largest ping (-S), so a stock client fits in what the server registers.
const FOREIGN_BUFFER_LEN: u32 = 65536;
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
    id: Id,
    channel: Channel,
    len: usize,
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
    fn build(
        id: Id,
        channel: Channel,
        len: u32,
        peer: SocketAddr,
        timeout: Duration,
    ) -> Result<CmEndpoint, Failure> {
        let device = id.device_name().unwrap_or_else(|| "?".into());
        let port = id.port_num();
        let len = len.max(1) as usize;
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

    fn fill_info(&mut self) {
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

fn conn_param(private_data: &[u8]) -> sys::rdma_conn_param {
    sys::rdma_conn_param {
        private_data: private_data.as_ptr() as *const _,
        private_data_len: private_data.len().min(u8::MAX as usize) as u8,
        responder_resources: INITIATOR_DEPTH,
        initiator_depth: INITIATOR_DEPTH,
        flow_control: 0,
        retry_count: QP_PARAMS.retry_cnt,
        rnr_retry_count: QP_PARAMS.rnr_retry,
        srq: 0,
        qp_num: 0,
    }
}

/// How a client connects.
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    /// Source address; pins the device on a host with several.
    pub src: Option<IpAddr>,
    /// Bytes per buffer area; the server sizes its buffer from this.
    pub len: u32,
    /// Deadline of every step.
    pub timeout: Duration,
}

/// Client side: resolve address and route, create the QP on the cm_id, connect with our
/// buffer in the private data, and wait for ESTABLISHED (which carries the server's).
pub fn connect(
    peer: SocketAddr,
    opts: &ConnectOptions,
    log: StepLog,
) -> Result<(CmEndpoint, Resolution), Failure> {
    let mut t = Instant::now();
    let channel = Channel::open(Some(peer))?;
    let id = channel.create_id(Some(peer))?;
    let res = resolve_on(&channel, &id, peer, opts.src, opts.timeout)?;
    log_step(
        log,
        &mut t,
        "resolve addr+route",
        format!(
            "{} -> {}/{} GID index {} ({}, {}) from {}",
            peer.ip(),
            res.device,
            res.port,
            res.gid_index.map_or("?".to_string(), |i| i.to_string()),
            res.sgid,
            res.netdev.as_deref().unwrap_or("-"),
            res.source.map_or("?".to_string(), |s| s.to_string()),
        ),
    );
    let mut ep = CmEndpoint::build(id, channel, opts.len, peer, opts.timeout)?;
    log_step(
        log,
        &mut t,
        "create qp",
        format!(
            "QPN {:#08x} on {}/{}",
            ep.info.qpn, ep.info.device, ep.info.port
        ),
    );
    for _ in 0..QUEUE_DEPTH / 2 {
        ep.post_recv()?;
    }
    let ours = ep.local_buffer(Region::Rdma).encode();
    let mut param = conn_param(&ours);
    // SAFETY: param and its private data live across the call.
    if unsafe { sys::rdma_connect(ep.id.ptr(), &mut param) } != 0 {
        return Err(ep.err(Step::CmConnect, Cause::call("rdma_connect", last_errno())));
    }
    let established = expect_event(
        &ep.channel,
        EventKind::Established,
        "answer to the connection request",
        Step::CmConnect,
        Some(peer),
        opts.timeout,
    )
    .map_err(|mut e| {
        e.context.device = ep.info.device.clone();
        e.context.link_layer = Some(res.link_layer.clone());
        e
    })?;
    ep.remote = RemoteBuffer::decode(&established.private_data).map_err(|text| {
        // Without the magic it is another program, not another rdmactl version.
        let failure = if established.private_data.starts_with(&PRIVATE_DATA_MAGIC) {
            Cause::invalid(text)
        } else {
            Cause::foreign_server(text)
        };
        ep.err(Step::CmConnect, failure)
    })?;
    ep.fill_info();
    log_step(
        log,
        &mut t,
        "established",
        format!(
            "QPN {:#08x} <-> {:#08x}, sgid_index {}, path MTU {}, peer buffer {} bytes rkey {:#x}",
            ep.info.qpn,
            ep.info.remote_qpn,
            ep.info.sgid_index,
            ep.info.path_mtu,
            ep.remote.len,
            ep.remote.rkey
        ),
    );
    Ok((ep, res))
}

/// Server side: a bound, listening cm_id.
pub struct Listener {
    id: Id,
    channel: Channel,
}

impl Listener {
    /// Bind `addr` (an unspecified IP listens on every RDMA device) and listen.
    pub fn bind(addr: SocketAddr) -> Result<Listener, Failure> {
        let channel = Channel::open(None)?;
        let id = channel.create_id(None)?;
        let mut storage = to_sockaddr(addr);
        // SAFETY: storage lives across the call.
        if unsafe { sys::rdma_bind_addr(id.ptr(), &mut storage as *mut _ as *mut libc::sockaddr) }
            != 0
        {
            let mut e = cm_err(
                Step::CmBind,
                None,
                Cause::call("rdma_bind_addr", last_errno()),
            );
            e.context.peer_addr = Some(show_addr(addr));
            return Err(e);
        }
        // SAFETY: the id is bound.
        if unsafe { sys::rdma_listen(id.ptr(), 8) } != 0 {
            let mut e = cm_err(
                Step::CmListen,
                None,
                Cause::call("rdma_listen", last_errno()),
            );
            e.context.peer_addr = Some(show_addr(addr));
            return Err(e);
        }
        Ok(Listener { id, channel })
    }

    /// The bound address, with the port the kernel picked when 0 was asked.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.id.local_addr()
    }

    /// The device the listener is bound to; None when it listens on every device.
    pub fn device(&self) -> Option<String> {
        self.id.device_name()
    }

    /// Rejects a connect request that is already waiting, if any, saying `reason` in the
    /// reject; returns who was turned away. Does not wait.
    pub fn turn_away(&self, reason: &str) -> Result<Option<SocketAddr>, Failure> {
        let event = self.channel.next_event(Instant::now()).map_err(|errno| {
            cm_err(
                Step::CmListen,
                None,
                Cause::call("rdma_get_cm_event", errno),
            )
        })?;
        let Some(event) = event.filter(|e| e.kind == EventKind::ConnectRequest) else {
            return Ok(None);
        };
        let Some(raw) = NonNull::new(event.id) else {
            return Ok(None);
        };
        // The request's id is ours now; dropping it after the reject destroys it.
        let id = Id { raw };
        // SAFETY: route.addr of the request's id holds the client's address.
        let peer = unsafe { from_sockaddr(&(*id.ptr()).route.addr.dst_addr_union.dst_addr) };
        let msg = encode_reject(reason);
        // SAFETY: msg lives across the call; the id is live.
        unsafe { sys::rdma_reject(id.ptr(), msg.as_ptr() as *const _, msg.len() as u8) };
        Ok(peer)
    }

    /// Wait up to `wait` for a connect request, then accept it on an endpoint of its own
    /// (own event channel) and wait `timeout` for ESTABLISHED.
    /// `prepare` fills the area the peer may READ before the accept makes it reachable.
    pub fn accept(
        &self,
        wait: Duration,
        timeout: Duration,
        log: StepLog,
        prepare: &mut dyn FnMut(&mut [u8]),
    ) -> Result<CmEndpoint, Failure> {
        let mut t = Instant::now();
        let request = expect_event(
            &self.channel,
            EventKind::ConnectRequest,
            "connection request",
            Step::CmAccept,
            None,
            wait,
        )?;
        // SAFETY: the request carries a new id that we now own.
        let id = Id {
            raw: NonNull::new(request.id).ok_or_else(|| {
                cm_err(
                    Step::CmAccept,
                    None,
                    Cause::invalid("connect request without a cm_id"),
                )
            })?,
        };
        // SAFETY: route.addr of the new id holds the client's address.
        let peer = unsafe { from_sockaddr(&(*id.ptr()).route.addr.dst_addr_union.dst_addr) }
            .unwrap_or_else(|| SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0));
        // A client without rdmactl's magic is a stock tool (rping, rdma_client): accept it
        // with a buffer of rping's maximum size and let the caller speak its protocol.
        let magic = request.private_data.get(0..4) == Some(&PRIVATE_DATA_MAGIC[..]);
        let (remote, foreign) = match RemoteBuffer::decode(&request.private_data) {
            Ok(r) => (r, false),
            Err(_) if !magic => (
                RemoteBuffer {
                    addr: 0,
                    rkey: 0,
                    len: FOREIGN_BUFFER_LEN,
                },
                true,
            ),
            Err(text) => {
                let msg = encode_reject("private data is not rdmactl --cm v1");
                // SAFETY: msg lives across the call.
                unsafe { sys::rdma_reject(id.ptr(), msg.as_ptr() as *const _, msg.len() as u8) };
                return Err(cm_err(Step::CmAccept, Some(peer), Cause::invalid(text)));
            }
        };
        if remote.len > MAX_BUFFER_LEN {
            let msg = encode_reject("buffer larger than 256 MiB");
            // SAFETY: msg lives across the call.
            unsafe { sys::rdma_reject(id.ptr(), msg.as_ptr() as *const _, msg.len() as u8) };
            return Err(cm_err(
                Step::CmAccept,
                Some(peer),
                Cause::invalid(format!(
                    "the client asked for a {}-byte buffer; the limit is {MAX_BUFFER_LEN}",
                    remote.len
                )),
            ));
        }
        let detail = if foreign {
            format!("from {peer}, no rdmactl private data: a stock client (rping or rdma_client)")
        } else {
            format!("from {peer}, peer buffer {} bytes", remote.len)
        };
        log_step(log, &mut t, "connect request", detail);
        let channel = Channel::open(Some(peer))?;
        // SAFETY: both are valid; the request event was acked.
        if unsafe { sys::rdma_migrate_id(id.ptr(), channel.raw.as_ptr()) } != 0 {
            return Err(cm_err(
                Step::CmAccept,
                Some(peer),
                Cause::call("rdma_migrate_id", last_errno()),
            ));
        }
        let mut ep = CmEndpoint::build(id, channel, remote.len, peer, timeout)?;
        ep.remote = if foreign {
            RemoteBuffer {
                addr: 0,
                rkey: 0,
                len: 0,
            }
        } else {
            remote
        };
        ep.foreign = foreign;
        log_step(
            log,
            &mut t,
            "create qp",
            format!(
                "QPN {:#08x} on {}/{}",
                ep.info.qpn, ep.info.device, ep.info.port
            ),
        );
        for _ in 0..QUEUE_DEPTH / 2 {
            ep.post_recv()?;
        }
        prepare(ep.region(Region::Rdma));
        let ours = ep.local_buffer(Region::Rdma).encode();
        let mut param = conn_param(&ours);
        // SAFETY: param and its private data live across the call.
        if unsafe { sys::rdma_accept(ep.id.ptr(), &mut param) } != 0 {
            return Err(ep.err(Step::CmAccept, Cause::call("rdma_accept", last_errno())));
        }
        log_step(
            log,
            &mut t,
            "accept",
            format!("sent our buffer ({} bytes)", ep.len),
        );
        expect_event(
            &ep.channel,
            EventKind::Established,
            "ESTABLISHED after accept",
            Step::CmAccept,
            Some(peer),
            timeout,
        )
        .map_err(|mut e| {
            e.context.device = ep.info.device.clone();
            e
        })?;
        ep.fill_info();
        log_step(
            log,
            &mut t,
            "established",
            format!(
                "QPN {:#08x} <-> {:#08x}, sgid_index {}, path MTU {}",
                ep.info.qpn, ep.info.remote_qpn, ep.info.sgid_index, ep.info.path_mtu
            ),
        );
        Ok(ep)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_data_round_trip_and_rejects() {
        let b = RemoteBuffer {
            addr: 0x0102_0304_0506_0708,
            rkey: 0xdead_beef,
            len: 4096,
        };
        let wire = b.encode();
        assert_eq!(&wire[0..5], b"RDCT\x01");
        assert_eq!(&wire[8..16], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(RemoteBuffer::decode(&wire), Ok(b));
        // IB CM pads private data with zeros: a longer buffer still decodes.
        let mut padded = wire.to_vec();
        padded.resize(56, 0);
        assert_eq!(RemoteBuffer::decode(&padded), Ok(b));
        let cases: &[(&[u8], &str)] = &[
            (&[], "0 bytes"),
            (&wire[..10], "10 bytes"),
            (&[0u8; 24], "not rdmactl"),
        ];
        for (data, want) in cases {
            let got = RemoteBuffer::decode(data).unwrap_err();
            assert!(got.contains(want), "{got}");
        }
        let mut v2 = wire;
        v2[4] = 2;
        assert!(RemoteBuffer::decode(&v2).unwrap_err().contains("version 2"));
    }

    #[test]
    fn reject_message_round_trip() {
        let msg = encode_reject("private data is not rdmactl --cm v1");
        assert!(msg.len() <= 56);
        assert_eq!(
            decode_reject(&msg).unwrap(),
            "private data is not rdmactl --cm v1"
        );
        assert!(decode_reject(b"hello").is_err());
    }

    #[test]
    fn sockaddr_round_trip() {
        for text in [
            "192.168.77.1:18515",
            "0.0.0.0:0",
            "[fe80::1]:7471",
            "[2001:db8::2]:1",
        ] {
            let addr: SocketAddr = text.parse().unwrap();
            let storage = to_sockaddr(addr);
            // SAFETY: storage holds the sockaddr just written.
            let back = unsafe { from_sockaddr(&storage as *const _ as *const libc::sockaddr) };
            assert_eq!(back, Some(addr), "{text}");
        }
    }

    #[test]
    fn event_kinds_from_raw() {
        use sys::rdma_cm_event_type as t;
        assert_eq!(event_kind(t::RDMA_CM_EVENT_REJECTED), EventKind::Rejected);
        assert_eq!(
            event_kind(t::RDMA_CM_EVENT_ADDR_ERROR).name(),
            "RDMA_CM_EVENT_ADDR_ERROR"
        );
        // An event type newer than this binding must not panic.
        assert_eq!(event_kind(99), EventKind::Other(99));
        assert_eq!(EventKind::Other(99).name(), "RDMA CM event 99");
    }

    fn slot(index: u32, gid_type: GidType) -> Slot {
        Slot {
            index,
            gid_type,
            netdev: Some("eth0".into()),
        }
    }

    #[test]
    fn cm_slot_choice() {
        // mlx5 on RoCE lists each address twice: v1 then v2; the CM uses v2.
        let both = [slot(2, GidType::RoceV1), slot(3, GidType::RoceV2)];
        assert_eq!(pick_cm_slot(&both, &LinkLayer::Ethernet, None).0, Some(3));
        assert_eq!(pick_cm_slot(&both, &LinkLayer::Ethernet, None).3, vec![2]);
        // An administrator's default_roce_mode "IB/RoCE v1" makes the CM use the v1 slot.
        let v1 = Some(&GidType::RoceV1);
        assert_eq!(pick_cm_slot(&both, &LinkLayer::Ethernet, v1).0, Some(2));
        let v1_only = [slot(0, GidType::RoceV1)];
        assert_eq!(
            pick_cm_slot(&v1_only, &LinkLayer::Ethernet, None).0,
            Some(0)
        );
        let ib = [slot(0, GidType::Ib)];
        assert_eq!(
            pick_cm_slot(&ib, &LinkLayer::InfiniBand, None).1,
            Some(GidType::Ib)
        );
        assert_eq!(
            pick_cm_slot(&[], &LinkLayer::Ethernet, None),
            (None, None, None, vec![])
        );
    }
}
