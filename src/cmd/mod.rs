//! One module per subcommand: gather → model → diagnose → render, and the few helpers
//! they share.

use std::path::Path;

use crate::error::{Error, Result};
use crate::model::Device;
use crate::sysfs::SysfsRoot;

pub mod check;
pub mod check_kernel;
pub mod devices;
pub mod devinfo;
pub mod doctor;
pub mod failure;
pub mod gid;
pub mod gids;
pub mod pingpong;
pub mod pingpong_cm;
pub mod ports;
pub mod results;
pub mod selftest;

/// Attributes that exist but could not be read: one stderr line each, so the table stays
/// clean and the reader still learns why a column says "-". JSON carries `read_problems`.
pub fn warn_unreadable(devices: &[Device]) {
    let problems = devices.iter().flat_map(|d| {
        d.read_problems
            .iter()
            .chain(d.ports.iter().flat_map(|p| p.read_problems.iter()))
    });
    for p in problems {
        eprintln!(
            "rdmactl: warning: cannot read {}: {}",
            p.path.display(),
            p.error
        );
    }
}

/// The device and port a command will open, looked up in sysfs before anything is opened,
/// so a wrong `-d` or `-i` is the same one-line error naming what exists (exit 3) in every
/// command. Without `-d`, the first device, as libibverbs' tools take it.
pub fn device_port(sysfs_root: &Path, device: Option<&str>, port: u32) -> Result<String> {
    let sysfs = SysfsRoot::new(sysfs_root);
    let names = sysfs.device_names()?;
    let name = match device {
        Some(name) if names.iter().any(|d| d == name) => name.to_string(),
        Some(name) => {
            return Err(Error::NoSuchDevice {
                name: name.to_string(),
                available: names,
            })
        }
        None => names.into_iter().next().ok_or_else(|| Error::NoDevices {
            path: sysfs.path().join("class/infiniband"),
        })?,
    };
    sysfs.port_numbers(&name).and_then(|ports| {
        if ports.contains(&port) {
            Ok(name)
        } else {
            Err(Error::NoSuchPort {
                device: name.clone(),
                port,
                available: ports.iter().map(u32::to_string).collect(),
            })
        }
    })
}
