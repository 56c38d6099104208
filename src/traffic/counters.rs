//! Port counters around a run: read before its traffic and after it, and judged.

use std::path::Path;

use crate::gather::sysfs::SysfsRoot;
use crate::model::counter::TrafficMix;
use crate::model::results::RunCounters;

/// One port's counters, read before a run's traffic and again after it; `with_qos`, on a
/// RoCE port, also its netdev's per-priority pause counts.
pub struct CounterWatch {
    sysfs: std::path::PathBuf,
    device: String,
    port: u32,
    before: Option<(std::time::Instant, crate::model::counter::PortCounters)>,
    qos: Option<(std::time::Instant, crate::model::qos::QosPort)>,
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
            qos: None,
        }
    }

    /// Also watch the netdev's per-priority pauses (a ping-pong between hosts; a loopback
    /// selftest crosses no switch).
    pub fn with_qos(mut self) -> CounterWatch {
        self.qos = crate::gather::qos::run_port(&self.sysfs, &self.device, self.port)
            .map(|p| (std::time::Instant::now(), p));
        self
    }

    /// The run's QoS findings (pauses, ECN) with the traffic class it used, if known.
    pub fn qos_findings(&self, tclass: Option<u8>) -> Vec<crate::model::diagnostic::Diagnostic> {
        let Some((at, before)) = &self.qos else {
            return Vec::new();
        };
        let Some(after) = crate::gather::qos::run_port(&self.sysfs, &self.device, self.port) else {
            return Vec::new();
        };
        crate::diagnose::qos::run_findings(tclass, before, &after, at.elapsed().as_secs_f64())
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

/// Adds a watched run's QoS findings to its counters block.
pub fn add_qos(
    counters: &mut Option<RunCounters>,
    watch: Option<&CounterWatch>,
    tclass: Option<u8>,
) {
    if let (Some(c), Some(w)) = (counters.as_mut(), watch) {
        c.findings.extend(w.qos_findings(tclass));
    }
}

/// The counters block of a run's report (a failed one too): what moved on each end's port,
/// judged by the counter rules knowing what ran (`mix`). None when neither end could read.
pub fn judge(
    local: Option<crate::model::counter::PortDelta>,
    peer: Option<crate::model::counter::PortDelta>,
    mix: TrafficMix,
) -> Option<RunCounters> {
    let findings = match &local {
        Some(l) => crate::diagnose::counters::judge(l, peer.as_ref(), Some(mix)),
        None => Vec::new(),
    };
    block(local, peer, mix, findings)
}

/// A run whose two ends shared one port: that port's counters, judged once (the peer's
/// are the same packets counted again).
pub fn judge_shared(
    local: Option<crate::model::counter::PortDelta>,
    mix: TrafficMix,
) -> Option<RunCounters> {
    let findings = local
        .as_ref()
        .map(|l| crate::diagnose::counters::judge_shared_port(l, Some(mix)))
        .unwrap_or_default();
    let mut run = block(local, None, mix, findings)?;
    run.shared_port = true;
    Some(run)
}

fn block(
    local: Option<crate::model::counter::PortDelta>,
    peer: Option<crate::model::counter::PortDelta>,
    mix: TrafficMix,
    findings: Vec<crate::model::diagnostic::Diagnostic>,
) -> Option<RunCounters> {
    if local.is_none() && peer.is_none() {
        return None;
    }
    let local = local.as_ref().map(crate::model::counter::WireDelta::of);
    let peer = peer.as_ref().map(crate::model::counter::WireDelta::of);
    Some(RunCounters {
        shared_port: false,
        scope: "port",
        resent_per_mille: local
            .as_ref()
            .and_then(|l| crate::diagnose::counters::resent_per_mille(l, peer.as_ref())),
        local,
        peer,
        mix,
        findings,
    })
}

/// A failed run's counters judged again with the peer's, which came with its notice.
pub fn with_peer(run: RunCounters, peer: &crate::model::counter::WireDelta) -> Option<RunCounters> {
    let local = run
        .local
        .as_ref()
        .map(crate::model::counter::WireDelta::to_delta);
    judge(local, Some(peer.to_delta()), run.mix)
}
