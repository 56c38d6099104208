//! Port counters around a run: read before its traffic and after it, and judged.

use std::path::Path;

use crate::gather::sysfs::SysfsRoot;

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

/// The counters part of a pingpong or selftest report: what moved on each end's port
/// over the run, and what the counter rules make of it.
#[derive(Debug, serde::Serialize)]
pub struct RunCounters {
    /// `port`: the counters are per port, so other traffic on the port counts too and the
    /// changes are an upper bound for this run.
    pub scope: &'static str,
    pub local: Option<crate::model::counter::WireDelta>,
    pub peer: Option<crate::model::counter::WireDelta>,
    pub findings: Vec<crate::model::diagnostic::Finding>,
}

impl RunCounters {
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

    /// A short block after the results: what moved on each end, then the findings.
    pub fn render(&self, style: crate::output::Style) -> String {
        let ends = [("this end", &self.local), ("peer", &self.peer)];
        let mut out =
            String::from("counters (per port, so other traffic on the port counts too):\n");
        for (who, d) in ends {
            let Some(d) = d else { continue };
            let moved: Vec<String> = d
                .counters
                .iter()
                .map(|c| {
                    format!(
                        "{} {}{}",
                        c.name,
                        if c.exact { "" } else { ">=" },
                        c.at_least
                    )
                })
                .collect();
            out.push_str(&format!(
                "  {who} {}/{}: {}\n",
                d.device,
                d.port,
                if moved.is_empty() {
                    "no counter moved".to_string()
                } else {
                    moved.join(", ")
                }
            ));
        }
        if !self.findings.is_empty() {
            out.push_str(&crate::render::findings::lines(
                &self.findings,
                style,
                crate::render::findings::Evidence::All,
            ));
        }
        out
    }
}
