//! The out-of-band exchange over TCP that tells each end the other's QP number, PSN, GID,
//! MTU and buffer, in two wire formats:
//!
//! - native: `RDMX`, version, flags, a big-endian u16 payload length, then a fixed binary
//!   payload. The length is checked against a cap before anything is read, so a peer can
//!   neither make us allocate nor wait for more than a few bytes.
//! - ibv_rc_pingpong's: `"%04x:%06x:%06x:%s"` (LID:QPN:PSN:32 hex digits of GID) plus its NUL,
//!   52 bytes; the client sends first, the server answers, the client ends with `"done\0"`.
//!
//! A server tells the two apart by the first byte: native starts with `R`, which is never a
//! hex digit. Every read and write has a deadline.
//!
//! Mid-run, an end whose completion does not come sends a stall probe (`RDMP`, length,
//! JSON facts, at most 8 KiB) and a live peer answers with its own (`Conn::probe`).

mod codec;
mod compare;
mod conn;

pub use codec::{Hello, NativeMsg, RcDest, RC_PINGPONG_DONE};
pub use compare::{compare, path_mtu};
pub use conn::{
    accept_one, accept_watching, accept_within, connect_addr, listen, BusyAnswer, Conn, ProbeAnswer,
};
