//! Client side: resolve, connect and wait for the accept.

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use rdma_mummy_sys as sys;

use super::channel::{expect_event, Channel};
use super::endpoint::{log_step, CmEndpoint, Region, StepLog, INITIATOR_DEPTH, QUEUE_DEPTH};
use super::private_data::{encode_probe, RemoteBuffer, PRIVATE_DATA_MAGIC};
use super::resolve::{resolve_on, Resolution};
use crate::gather::verbs::last_errno;
use crate::model::failure::{Cause, EventKind, Failure, Step, QP_PARAMS};

pub(super) fn conn_param(private_data: &[u8]) -> sys::rdma_conn_param {
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
    connect_with(peer, opts, log, None)
}

/// Asks an rdmactl server, in a connect request of its own, what it sees of the run this
/// client has with it, saying `text` (what this client sees); the server's answer comes
/// back in its reject. CM messages are small and need no working QP, so this works where
/// the run's own packets are lost. None: the server did not answer within `opts.timeout`.
pub fn probe(
    peer: SocketAddr,
    opts: &ConnectOptions,
    text: &str,
) -> Result<Option<String>, Failure> {
    let ask = encode_probe(text);
    match connect_with(peer, opts, &mut |_| {}, Some(&ask)) {
        Err(Failure {
            cause: Cause::ServerRejected { server_reason, .. },
            ..
        }) => Ok(Some(server_reason)),
        Err(Failure {
            cause: Cause::Timeout { .. },
            ..
        }) => Ok(None),
        Err(e) => Err(e),
        // An rdmactl that does not know probes took it for a client: leave at once.
        Ok((ep, _)) => {
            let _ = ep.disconnect();
            Ok(None)
        }
    }
}

fn connect_with(
    peer: SocketAddr,
    opts: &ConnectOptions,
    log: StepLog,
    probe: Option<&[u8]>,
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
    let mut param = conn_param(probe.unwrap_or(&ours));
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
