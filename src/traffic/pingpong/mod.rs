//! `rdmactl pingpong`'s engine: an RC ping-pong between two hosts, over the TCP exchange
//! (here) or the RDMA connection manager (`cm`). The command prints the reports it
//! finishes (`Show`) and returns its exit status.
//!
//! Native mode exchanges a full endpoint description (`wire::exchange`), compares both ends before
//! touching the QP, then runs SEND/RECV ping-pong, RDMA WRITE and RDMA READ; every RDMA
//! phase runs once from each side and the target checks the bytes it got (the seed
//! scenario: the server writes a string into the client's buffer, the client reads the
//! server's). `--compat rc_pingpong` speaks ibv_rc_pingpong's exchange and traffic, so a
//! stock ibv_rc_pingpong can be either end; a server detects that format by itself.
//!
//! Buffer layout (one MR of 2 × size): `[0, size)` is the local scratch (send source, WRITE
//! source, READ destination); `[size, 2 × size)` is the target (receives land here, and it
//! is the only range advertised to the peer).
//!
//! `plan` is what a run will do, `side` the device end it opens, `tcp` the session (client,
//! server, `--persist`), `follow` a server taking its client's parameters, `native` and
//! `compat` the two exchanges' runs, `loops` the measured loops (the windowed one shared
//! with `cm`), `stall` the look a wait takes when its completion does not come, `outcome` the explained end of a run, `report` what it reports.

mod busy;
pub mod cm;
mod compat;
mod follow;
mod loops;
mod native;
mod outcome;
mod plan;
mod report;
mod side;
mod stall;
mod tcp;

pub use report::{PingpongReport, SweepReport};
pub use tcp::run;
