//! Server side: a bound, listening cm_id that accepts one connection.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::ptr::NonNull;
use std::time::{Duration, Instant};

use rdma_mummy_sys as sys;

use super::channel::{encode_reject, expect_event, Channel, Id};
use super::cm_err;
use super::connect::conn_param;
use super::endpoint::{
    log_step, CmEndpoint, Region, StepLog, FOREIGN_BUFFER_LEN, MAX_BUFFER_LEN, QUEUE_DEPTH,
};
use super::private_data::{probe_text, RemoteBuffer, PRIVATE_DATA_MAGIC};
use super::sockaddr::{from_sockaddr, to_sockaddr};
use crate::gather::verbs::last_errno;
use crate::model::failure::{show_addr, Cause, EventKind, Failure, Step};

/// A connect request the listener holds while it serves another client: a second client,
/// or a probe from the client being served.
pub struct PendingRequest {
    id: Id,
    pub peer: Option<SocketAddr>,
    /// What the request carried: a client's buffer, a probe, or a stock tool's bytes.
    pub private_data: Vec<u8>,
}

impl PendingRequest {
    /// Turns it away, with `text` in rdmactl's reject message.
    pub fn reject(self, text: &str) {
        let msg = encode_reject(text);
        // SAFETY: msg lives across the call; the id is live (destroyed when self drops).
        unsafe { sys::rdma_reject(self.id.ptr(), msg.as_ptr() as *const _, msg.len() as u8) };
    }
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

    /// A connect request that is already waiting, if any; does not wait. The caller
    /// answers it with [`PendingRequest::reject`] (one connection at a time is served).
    pub fn next_request(&self) -> Result<Option<PendingRequest>, Failure> {
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
        Ok(Some(PendingRequest {
            id,
            peer,
            private_data: event.private_data,
        }))
    }

    /// The next connect request before `deadline` (a probe from a client whose earlier run
    /// stalled is rejected), its id now ours, the client's address and its private data.
    fn wait_request(&self, deadline: Instant) -> Result<(Id, SocketAddr, Vec<u8>), Failure> {
        let request = loop {
            let request = expect_event(
                &self.channel,
                EventKind::ConnectRequest,
                "connection request",
                Step::CmAccept,
                None,
                deadline.saturating_duration_since(Instant::now()),
            )?;
            // A probe from a client whose earlier run stalled: nothing runs here now.
            if probe_text(&request.private_data).is_none() {
                break request;
            }
            if let Some(raw) = NonNull::new(request.id) {
                PendingRequest {
                    id: Id { raw },
                    peer: None,
                    private_data: Vec::new(),
                }
                .reject("no run");
            }
        };
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
        Ok((id, peer, request.private_data))
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
        let (id, peer, private_data) = self.wait_request(t + wait)?;
        let (remote, foreign) = client_buffer(&id, peer, &private_data)?;
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

/// The client's buffer as its private data gives it, and whether the client is a stock
/// tool; a malformed or oversized one is rejected on `id`.
fn client_buffer(
    id: &Id,
    peer: SocketAddr,
    private_data: &[u8],
) -> Result<(RemoteBuffer, bool), Failure> {
    // A client without rdmactl's magic is a stock tool (rping, rdma_client): accept it
    // with a buffer of rping's maximum size and let the caller speak its protocol.
    let magic = private_data.get(0..4) == Some(&PRIVATE_DATA_MAGIC[..]);
    let (remote, foreign) = match RemoteBuffer::decode(private_data) {
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
    Ok((remote, foreign))
}
