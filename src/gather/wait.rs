//! What `wait` reads on each poll: the devices and their ports' state, physical state and
//! netdev from sysfs (no verbs, no GID tables: a poll every 200 ms stays cheap). No RDMA
//! core or no device yet is an empty list: at boot the driver may still be loading.

use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::gather::sysfs::SysfsRoot;
use crate::model::device::Device;

pub fn devices(ctx: &Ctx) -> Result<Vec<Device>> {
    match SysfsRoot::new(&ctx.sysfs).netdev_only().devices() {
        Ok(d) => Ok(d),
        Err(Error::NoRdma { .. } | Error::NoDevices { .. }) => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}
