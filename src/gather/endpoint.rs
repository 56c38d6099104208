//! What `fabric` reads about this rank's endpoint: the host's name, kernel and limits, the
//! port this rank tests (the n-th of the host's, for local rank n) with its GID table, and
//! the host's RoCE netdevs.

use crate::cli::FabricArgs;
use crate::ctx::Ctx;
use crate::gather::sysfs::SysfsRoot;
use crate::model::device::{Device, Port, PortState};
use crate::model::facts::RoceNetdev;

/// This host's name as the kernel has it; `localhost` when it has none.
pub fn hostname() -> String {
    crate::gather::procfs::hostname()
        .filter(|h| !h.is_empty() && h != "(none)")
        .unwrap_or_else(|| "localhost".into())
}

pub fn kernel_release() -> Option<String> {
    crate::gather::procfs::kernel_release()
}

/// The soft RLIMIT_MEMLOCK: None when unreadable, Some(None) unlimited.
pub fn memlock_soft_limit() -> Option<Option<u64>> {
    crate::gather::procfs::lock_limits().memlock_soft
}

/// The port a rank tests, as far as it could be read.
pub struct TestedPort {
    pub device: String,
    pub port: u32,
    pub firmware: Option<String>,
    /// The port with its GID table; None when the device or port vanished meanwhile.
    pub facts: Option<Port>,
    /// Host-level, over every port of this host: read before the list narrows to ours.
    pub roce_netdevs: Vec<RoceNetdev>,
}

/// The ports this host offers, in order: the `-d` list as given, else every ACTIVE port.
fn candidate_ports(args: &FabricArgs, devices: &[Device]) -> Vec<(String, u32)> {
    if !args.devices.is_empty() {
        return args
            .devices
            .iter()
            .map(|d| (d.device.clone(), d.port.unwrap_or(args.on.port)))
            .collect();
    }
    let mut ports: Vec<(String, u32)> = devices
        .iter()
        .flat_map(|d| &d.ports)
        .filter(|p| p.state == Some(PortState::Active))
        .map(|p| (p.device.clone(), p.number))
        .collect();
    ports.sort();
    ports
}

/// The `local_rank`-th port of this host (`host` names it in the errors), or why there is
/// none to test.
pub fn tested_port(
    ctx: &Ctx,
    args: &FabricArgs,
    local_rank: u32,
    host: &str,
) -> Result<TestedPort, String> {
    let sysfs = SysfsRoot::new(&ctx.sysfs);
    let mut devices = sysfs
        .devices()
        .map_err(|e| format!("no RDMA device on {host}: {e}"))?;
    let candidates = candidate_ports(args, &devices);
    let Some((device, port)) = candidates.get(local_rank as usize).cloned() else {
        return Err(if candidates.is_empty() {
            format!("{host} has no ACTIVE RDMA port")
        } else {
            format!(
                "local rank {local_rank} but {host} has {} port(s) to test ({}): start one process per port, or give one -d per process",
                candidates.len(),
                candidates
                    .iter()
                    .map(|(d, p)| format!("{d}/{p}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        });
    };
    crate::gather::inventory::device_port(&ctx.sysfs, Some(&device), port)
        .map_err(|e| e.to_string())?;
    let roce_netdevs = crate::gather::inventory::roce_netdevs(&devices);
    devices.retain(|d| d.name == device);
    let _ = crate::gather::inventory::add_verbs_facts_and_gids(ctx, &mut devices, true);
    let dev = devices.into_iter().next();
    Ok(TestedPort {
        firmware: dev.as_ref().and_then(|d| d.fw_ver.clone()),
        facts: dev.and_then(|d| d.ports.into_iter().find(|p| p.number == port)),
        device,
        port,
        roce_netdevs,
    })
}
