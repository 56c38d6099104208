//! Errors that end a command. Each variant carries what the user needs to act on it:
//! the device, port, GID index, path or errno, and what exists instead.

use std::path::PathBuf;

use thiserror::Error;

/// Exit codes, documented in the README and the man page.
pub mod exit {
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
}

#[derive(Debug, Error)]
pub enum Error {
    #[error("no device '{name}'; devices: {}", list_or_none(.available))]
    NoSuchDevice {
        name: String,
        available: Vec<String>,
    },

    #[error("no port {port} on {device}; ports: {}", list_or_none(.available))]
    NoSuchPort {
        device: String,
        port: u32,
        available: Vec<String>,
    },

    #[error("no GID index {index} on {device}/{port}; {hint}")]
    NoSuchGid {
        device: String,
        port: u32,
        index: u32,
        hint: String,
    },

    #[error(
        "no RDMA devices: {} does not exist, so no RDMA driver is loaded. \
         Load your NIC's driver (mlx5_ib, irdma, bnxt_re, ...), or for Soft-RoCE: \
         modprobe rdma_rxe; rdma link add rxe0 type rxe netdev <if>",
        .path.display()
    )]
    NoRdma { path: PathBuf },

    #[error(
        "no RDMA devices: {} is empty, so the RDMA core is loaded but no driver registered a \
         device. Load your NIC's RDMA driver (mlx5_ib, irdma, bnxt_re, ...), or for Soft-RoCE: \
         rdma link add rxe0 type rxe netdev <if>",
        .path.display()
    )]
    NoDevices { path: PathBuf },

    #[error("{0}")]
    Usage(String),

    #[error("cannot read {}: {source}", .path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },

    /// The command already printed its findings; this only sets the exit code.
    #[error("{0}")]
    Failed(String),

    #[error(transparent)]
    Verbs(#[from] crate::verbs::VerbsError),

    /// A connection-manager step failed; the error carries its stage, numbers and fix.
    #[error("{0}")]
    Cm(Box<crate::verbs::cm::CmError>),
}

impl From<crate::verbs::cm::CmError> for Error {
    fn from(err: crate::verbs::cm::CmError) -> Self {
        Error::Cm(Box::new(err))
    }
}

impl Error {
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::NoSuchDevice { .. } | Error::NoSuchPort { .. } | Error::NoSuchGid { .. } => {
                exit::NOT_FOUND
            }
            Error::NoRdma { .. } | Error::NoDevices { .. } => exit::NO_RDMA,
            Error::Usage(_) => exit::USAGE,
            Error::Failed(_) => exit::FAILED,
            Error::Io { .. } => exit::SYSTEM,
            Error::Verbs(e) => e.exit_code(),
            Error::Cm(e) if e.is_missing_stack() => exit::NO_RDMA,
            Error::Cm(_) => exit::FAILED,
        }
    }
}

fn list_or_none(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_string()
    } else {
        items.join(", ")
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
