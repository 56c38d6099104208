//! The event channel and the cm_ids on it: every wait on a CM event polls the channel's fd
//! with a deadline, so no step can hang; a reject carries rdmactl's reason as text.

use std::ffi::CStr;
use std::net::SocketAddr;
use std::ptr::{self, NonNull};
use std::time::{Duration, Instant};

use rdma_mummy_sys as sys;

use super::cm_err;
use super::private_data::{PRIVATE_DATA_MAGIC, PRIVATE_DATA_VERSION};
use super::sockaddr::from_sockaddr;
use crate::gather::verbs::{last_errno, query};
use crate::model::failure::{Cause, EventKind, Failure, Step};
use crate::model::gid::Gid;

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

pub(super) struct Channel {
    pub(super) raw: NonNull<sys::rdma_event_channel>,
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
pub(super) struct Event {
    pub(super) kind: EventKind,
    pub(super) status: i32,
    pub(super) id: *mut sys::rdma_cm_id,
    pub(super) private_data: Vec<u8>,
}

impl Channel {
    pub(super) fn open(peer: Option<SocketAddr>) -> Result<Channel, Failure> {
        // librdmacm's first channel lists (and opens) every device through libibverbs.
        query::preload_providers();
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

    pub(super) fn fd(&self) -> i32 {
        // SAFETY: the channel is alive.
        unsafe { self.raw.as_ref().fd }
    }

    /// The next event, or None when `deadline` passes first.
    pub(super) fn next_event(&self, deadline: Instant) -> Result<Option<Event>, i32> {
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

    pub(super) fn create_id(&self, peer: Option<SocketAddr>) -> Result<Id, Failure> {
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
pub(super) fn wait_readable(fds: &[i32], deadline: Instant) -> Result<Vec<usize>, i32> {
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

pub(super) struct Id {
    pub(super) raw: NonNull<sys::rdma_cm_id>,
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
    pub(super) fn ptr(&self) -> *mut sys::rdma_cm_id {
        self.raw.as_ptr()
    }

    pub(super) fn verbs(&self) -> *mut sys::ibv_context {
        // SAFETY: the id is alive.
        unsafe { (*self.ptr()).verbs }
    }

    pub(super) fn port_num(&self) -> u8 {
        // SAFETY: the id is alive.
        unsafe { (*self.ptr()).port_num }
    }

    pub(super) fn device_name(&self) -> Option<String> {
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

    pub(super) fn local_addr(&self) -> Option<SocketAddr> {
        // SAFETY: route.addr holds a sockaddr_storage, filled by librdmacm after bind/resolve.
        unsafe { from_sockaddr(&(*self.ptr()).route.addr.src_addr_union.src_addr) }
    }

    pub(super) fn sgid(&self) -> Gid {
        // SAFETY: plain bytes of the id's address; zero before resolution.
        Gid(unsafe { (*self.ptr()).route.addr.addr.ibaddr.sgid.raw })
    }
}

/// Wait for `want` on `channel` for `id`, turning every other outcome into a typed error.
pub(super) fn expect_event(
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
pub(super) fn encode_reject(text: &str) -> Vec<u8> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
