//! Exit codes, documented in the README and the man page. A leaf: every layer may use it.

/// Everything asked for was done and nothing failed.
pub const OK: u8 = 0;
/// A check, test or ping-pong ran and found a failure.
pub const FAILED: u8 = 1;
/// Bad command line or malformed input (clap uses 2 as well).
pub const USAGE: u8 = 2;
/// The named device, port or GID index does not exist.
pub const NOT_FOUND: u8 = 3;
/// No RDMA stack: no kernel support, no libibverbs, or no devices.
pub const NO_RDMA: u8 = 4;
/// An operating-system or verbs call failed unexpectedly.
pub const SYSTEM: u8 = 5;

/// `doctor --format nagios`: the Nagios plugin guidelines' four states, which Icinga,
/// Naemon and Sensu read the same way.
pub mod nagios {
    pub const OK: u8 = 0;
    pub const WARNING: u8 = 1;
    pub const CRITICAL: u8 = 2;
    pub const UNKNOWN: u8 = 3;
}
