//! The only module with FFI and `unsafe`: libibverbs (and librdmacm) through sideway and
//! rdma-mummy-sys, which dlopen the libraries at run time, so rdmactl starts and explains
//! itself on a host without them.
//!
//! The rest of the crate sees plain Rust values: attribute structs copied out of the verbs
//! structs, `crate::model::gid::Gid`, and `VerbsError`, which names the device, port, GID index and
//! errno and says what to do next.
#![allow(unsafe_code)]
// Parts of this API serve commands merged from other branches (doctor, pingpong).

pub mod cm;
pub mod qp;
mod query;
pub mod sys;
pub mod umad;

pub use query::{
    device_names, library_status, open_device, open_each, DeviceAttrs, EachDevice, OpenDevice,
    PortAttrs, TableGid, VerbsGid,
};

use std::fmt;

use crate::exit;

/// What went wrong in a verbs call, with everything needed to act on it.
#[derive(Debug)]
pub enum VerbsError {
    /// `dlopen("libibverbs.so.1")` failed; `reason` is dlerror()'s text.
    LibraryMissing {
        reason: String,
    },
    /// `ibv_get_device_list` returned NULL.
    DeviceList {
        errno: i32,
    },
    /// The name is not in `ibv_get_device_list`; `available` is what is.
    NoSuchDevice {
        device: String,
        available: Vec<String>,
    },
    /// `ibv_open_device` returned NULL.
    Open {
        device: String,
        errno: i32,
    },
    QueryDevice {
        device: String,
        errno: i32,
    },
    QueryPort {
        device: String,
        port: u8,
        errno: i32,
    },
    QueryGid {
        device: String,
        port: u8,
        index: u32,
        errno: i32,
    },
}

impl VerbsError {
    pub fn exit_code(&self) -> u8 {
        match self {
            VerbsError::LibraryMissing { .. } => exit::NO_RDMA,
            VerbsError::DeviceList { errno } if *errno == libc::ENOSYS => exit::NO_RDMA,
            VerbsError::NoSuchDevice { .. } => exit::NOT_FOUND,
            _ => exit::SYSTEM,
        }
    }

    /// The errno of the failed call, where there was one.
    pub fn errno(&self) -> Option<i32> {
        match self {
            VerbsError::DeviceList { errno }
            | VerbsError::Open { errno, .. }
            | VerbsError::QueryDevice { errno, .. }
            | VerbsError::QueryPort { errno, .. }
            | VerbsError::QueryGid { errno, .. } => Some(*errno),
            _ => None,
        }
    }
}

use crate::model::errno::errno_text;

/// The errno of the calling thread's last failed call; EIO when there is none.
pub(crate) fn last_errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .filter(|e| *e != 0)
        .unwrap_or(libc::EIO)
}

/// Failed verbs calls return either -1 with errno set, or the errno value itself
/// (ibv_modify_qp, ibv_post_send and ibv_query_* do the latter, some providers the
/// negative errno).
pub(crate) fn errno_of(ret: libc::c_int) -> i32 {
    if ret > 0 {
        return ret;
    }
    match std::io::Error::last_os_error().raw_os_error() {
        Some(e) if e != 0 => e,
        _ if ret < -1 => -ret,
        _ => libc::EIO,
    }
}

impl fmt::Display for VerbsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VerbsError::LibraryMissing { reason } => write!(
                f,
                "libibverbs.so.1 cannot be loaded ({reason}). Install it: Debian/Ubuntu \
                 `apt install libibverbs1 ibverbs-providers`, RHEL `dnf install libibverbs`"
            ),
            VerbsError::DeviceList { errno } if *errno == libc::ENOSYS => write!(
                f,
                "ibv_get_device_list failed with {}: the kernel has no RDMA support loaded \
                 (no /sys/class/infiniband). Load your NIC's RDMA driver (mlx5_ib, irdma, \
                 bnxt_re, ...), or for Soft-RoCE: modprobe rdma_rxe; \
                 rdma link add rxe0 type rxe netdev <if>",
                errno_text(*errno)
            ),
            VerbsError::DeviceList { errno } if *errno == libc::EOPNOTSUPP => write!(
                f,
                "ibv_get_device_list failed with {}: libibverbs.so.1 was not loaded or lacks \
                 the symbol. Check `ldconfig -p | grep libibverbs` and reinstall libibverbs1",
                errno_text(*errno)
            ),
            VerbsError::DeviceList { errno } => write!(
                f,
                "ibv_get_device_list failed with {}. Run `rdmactl doctor` to check the kernel \
                 modules, /dev/infiniband and the provider libraries",
                errno_text(*errno)
            ),
            VerbsError::NoSuchDevice { device, available } => {
                if available.is_empty() {
                    write!(
                        f,
                        "no verbs device '{device}': libibverbs lists no devices at all. If \
                         /sys/class/infiniband/{device} exists, its provider library is missing \
                         (Debian/Ubuntu: ibverbs-providers, RHEL: libibverbs); `rdmactl doctor` \
                         checks this"
                    )
                } else {
                    write!(
                        f,
                        "no verbs device '{device}'; libibverbs lists: {}",
                        available.join(", ")
                    )
                }
            }
            VerbsError::Open { device, errno } => {
                write!(
                    f,
                    "cannot open {device}: ibv_open_device failed with {}",
                    errno_text(*errno)
                )?;
                match *errno {
                    libc::EACCES | libc::EPERM => write!(
                        f,
                        ". Its uverbs node in /dev/infiniband is not accessible to this user: \
                         `rdmactl doctor -d {device}` sets the node's mode and owner against \
                         this user's ids"
                    ),
                    libc::ENOENT | libc::ENODEV | libc::ENXIO => write!(
                        f,
                        ". The uverbs character device is missing: is ib_uverbs loaded \
                         (`modprobe ib_uverbs`) and /dev/infiniband populated?"
                    ),
                    _ => write!(f, ". Run `rdmactl doctor -d {device}`"),
                }
            }
            VerbsError::QueryDevice { device, errno } => write!(
                f,
                "ibv_query_device_ex on {device} failed with {}. The provider or kernel driver \
                 rejected the query; check `dmesg` and run `rdmactl doctor -d {device}`",
                errno_text(*errno)
            ),
            VerbsError::QueryPort {
                device,
                port,
                errno,
            } => write!(
                f,
                "ibv_query_port on {device}/{port} failed with {}. Check that the port exists \
                 (`rdmactl ports {device}`) and see `dmesg`",
                errno_text(*errno)
            ),
            VerbsError::QueryGid {
                device,
                port,
                index,
                errno,
            } => write!(
                f,
                "ibv_query_gid on {device}/{port} GID index {index} failed with {}. Compare \
                 with /sys/class/infiniband/{device}/ports/{port}/gids/{index}; \
                 `rdmactl gids {device}/{port} --all` lists the table",
                errno_text(*errno)
            ),
        }
    }
}

impl std::error::Error for VerbsError {}
