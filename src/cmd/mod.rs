//! One module per subcommand: gather → model → diagnose → render, and the few helpers
//! they share.

use crate::model::Device;

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
