//! Errors that end a command. Each variant carries what the user needs to act on it:
//! the device, port, GID index, path or errno, and what exists instead.

use std::path::PathBuf;

use thiserror::Error;

use crate::exit;

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

    /// `main` words it with the modules loaded and the NICs present (doctor's rule); this
    /// text is what other reports embed.
    #[error(
        "no RDMA devices: {} does not exist, so the RDMA core is not loaded; `rdmactl \
         doctor` names the RDMA modules loaded and the NICs present",
        .path.display()
    )]
    NoRdma { path: PathBuf },

    /// As `NoRdma`, worded in `main`.
    #[error(
        "no RDMA devices: {} is empty, so no driver registered a device; `rdmactl doctor` \
         names the RDMA modules loaded and the NICs present",
        .path.display()
    )]
    NoDevices { path: PathBuf },

    #[error("{0}")]
    Usage(String),

    /// Something else the user named does not exist (a process for `res --pid`); the text
    /// names it and how to find what does.
    #[error("{0}")]
    NotFound(String),

    /// A read of the system failed (a netlink dump refused or unparsable); the text names
    /// the request, the device, the errno and the next step.
    #[error("{0}")]
    System(String),

    #[error("cannot read {}: {source}", .path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },

    /// A file the user named for output (`--topology`, `--svg`) could not be written. The OS
    /// error is a plain field, not the error's source, so it is printed once.
    #[error("cannot write {} ({flag}): {error}; {}", .path.display(), write_fix(.error))]
    Write {
        path: PathBuf,
        flag: &'static str,
        error: std::io::Error,
    },

    /// Reading the system did not finish within its deadline (`gather::deadline`): the
    /// reads still blocked, each a path (empty when the gather was not in a file read).
    #[error(
        "reading the system did not finish within {secs} s: {}; a driver whose sysfs file \
         blocks in the kernel (`timeout 5 cat PATH` shows it, `dmesg` names the driver; \
         reloading the driver or a reboot frees it)",
        overdue_reads(.paths)
    )]
    Overdue { paths: Vec<String>, secs: f64 },

    /// The command already printed its findings; this only sets the exit code.
    #[error("{0}")]
    Failed(String),

    #[error(transparent)]
    Verbs(#[from] crate::gather::verbs::VerbsError),

    /// A verbs, TCP-exchange or CM step failed and nobody has explained it yet; `main`
    /// runs the rules on it before printing, so no failure leaves unexplained.
    #[error("{0}")]
    Failure(Box<crate::model::failure::Failure>),

    /// A failure with its explanation; `main` prints the summary and why/seen/fix once.
    #[error("{}", .0.message)]
    Explained(Box<crate::model::diagnostic::FailureReport>),

    /// The command already printed everything (its `-j` report carries the failure); only
    /// the exit code is left to set.
    #[error("")]
    Reported(u8),
}

impl From<crate::model::failure::Failure> for Error {
    fn from(failure: crate::model::failure::Failure) -> Self {
        Error::Failure(Box::new(failure))
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
            Error::NotFound(_) => exit::NOT_FOUND,
            Error::System(_) => exit::SYSTEM,
            Error::Failed(_) => exit::FAILED,
            Error::Io { .. } | Error::Write { .. } | Error::Overdue { .. } => exit::SYSTEM,
            Error::Verbs(e) => e.exit_code(),
            Error::Failure(f) if f.is_missing_stack() => exit::NO_RDMA,
            Error::Failure(_) => exit::FAILED,
            Error::Explained(r) => r.exit_code(),
            Error::Reported(code) => *code,
        }
    }
}

/// The reads a deadline found still blocked, named.
fn overdue_reads(paths: &[String]) -> String {
    if paths.is_empty() {
        "no file read was in progress (a netlink or libibverbs query was)".to_string()
    } else {
        format!("still reading {}", paths.join(", "))
    }
}

/// The next step after a failed write, by what the OS said.
fn write_fix(error: &std::io::Error) -> &'static str {
    match error.kind() {
        std::io::ErrorKind::NotFound => {
            "create its directory first, or give a path in one that exists"
        }
        std::io::ErrorKind::PermissionDenied => {
            "give a path in a directory you may write to, or run as its owner"
        }
        std::io::ErrorKind::IsADirectory => "give a file name, not a directory",
        std::io::ErrorKind::ReadOnlyFilesystem => "give a path on a writable file system",
        std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded => {
            "free space there, or give a path on another file system"
        }
        _ => "give another path",
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
