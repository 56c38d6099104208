//! Protocols between rdmactl processes: the ping-pong's TCP exchange and fabric's
//! rendezvous. Strictly parsed, with size limits and deadlines.

pub mod cm;
pub mod exchange;
pub mod rendezvous;
