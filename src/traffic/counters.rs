//! Port counters around a run: read before its traffic and after it, and judged.

use std::path::Path;

use crate::gather::sysfs::SysfsRoot;
use crate::model::results::RunCounters;

/// One port's counters, read before a run's traffic and again after it.
pub struct CounterWatch {
    sysfs: std::path::PathBuf,
    device: String,
    port: u32,
    before: Option<(std::time::Instant, crate::model::counter::PortCounters)>,
}

impl CounterWatch {
    /// Never fails the run: a port whose counters cannot be read has no delta.
    pub fn start(sysfs: &Path, device: &str, port: u32) -> CounterWatch {
        let before = SysfsRoot::new(sysfs)
            .port_counters(device, port)
            .ok()
            .map(|c| (std::time::Instant::now(), c));
        CounterWatch {
            sysfs: sysfs.to_path_buf(),
            device: device.to_string(),
            port,
            before,
        }
    }

    pub fn stop(&self) -> Option<crate::model::counter::PortDelta> {
        let (at, before) = self.before.as_ref()?;
        let after = SysfsRoot::new(&self.sysfs)
            .port_counters(&self.device, self.port)
            .ok()?;
        Some(crate::model::counter::port_delta(
            before,
            &after,
            at.elapsed().as_secs_f64(),
        ))
    }
}

/// The counters block of a run's report: what moved on each end's port, judged by the
/// counter rules against the `messages` the run sent. None when neither end could read.
pub fn judge(
    local: Option<crate::model::counter::PortDelta>,
    peer: Option<crate::model::counter::PortDelta>,
    messages: u64,
) -> Option<RunCounters> {
    let findings = match &local {
        Some(l) => crate::diagnose::counters::judge(l, peer.as_ref(), messages),
        None => Vec::new(),
    };
    if local.is_none() && peer.is_none() {
        return None;
    }
    Some(RunCounters {
        scope: "port",
        local: local.as_ref().map(crate::model::counter::WireDelta::of),
        peer: peer.as_ref().map(crate::model::counter::WireDelta::of),
        findings,
    })
}
