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
mod channel;
mod connect;
mod endpoint;
mod listen;
mod private_data;
mod resolve;
mod sockaddr;

use std::net::SocketAddr;

use crate::model::failure::{show_addr, Cause, Failure, Step};

pub use connect::{connect, probe, ConnectOptions};
pub use endpoint::{
    CmEndpoint, CmOp, Completion, ConnInfo, Region, StepDone, Wake, MAX_BUFFER_LEN,
};
pub use listen::Listener;
pub use private_data::{probe_text, RemoteBuffer};
pub use resolve::{kernel_gid_choice, kernel_gid_choice_scoped, Resolution};

/// A CM failure before the id is bound to a device: only the peer is known.
fn cm_err(step: Step, peer: Option<SocketAddr>, cause: Cause) -> Failure {
    Failure::toward(step, cause, peer.map(show_addr))
}
