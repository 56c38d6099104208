//! `doctor --save-expect FILE`: the manifest as TOML (with a header saying what it is) or
//! as JSON, as `--expect` reads it back.

use crate::model::device::PortState;
use crate::model::expect::Manifest;

/// The manifest in the file's format: JSON for `.json`, else TOML.
pub fn manifest(manifest: &Manifest, json: bool) -> String {
    if json {
        return crate::output::json(manifest) + "\n";
    }
    // Plain data of strings, numbers and tables always has a TOML form.
    let body = toml::to_string(manifest).expect("a manifest serialises to TOML");
    format!(
        "# What this host should have, for `rdmactl doctor --expect FILE` (written by\n\
         # --save-expect). Rates and widths are minimums, the rest exact; delete what should\n\
         # not be judged, use a pattern (name = \"mlx5_*\") for hosts whose names differ.\n\
         # The keys: docs/health-checks.md.\n\n{body}"
    )
}

/// The stderr line after `--save-expect`: what was written and what to do with it.
pub fn saved(path: &str, manifest: &Manifest) -> String {
    let ports: usize = manifest.device.iter().map(|d| d.ports.len()).sum();
    let mut out = format!(
        "rdmactl: wrote {path}: {} device(s), {ports} port(s); check the other hosts with `rdmactl doctor --expect {path}`\n",
        manifest.device.len()
    );
    // A manifest is the good host's picture: a port saved in another state than ACTIVE
    // would make every host with that port up fail, so it is said now, not found later.
    for d in &manifest.device {
        for p in &d.ports {
            if let (Some(n), Some(state)) = (p.port, &p.state) {
                if !PortState::from_name(state).is_active() {
                    out.push_str(&format!(
                        "rdmactl: note: {}/{n} is {state}, and the manifest now expects that; edit its `state` if this host is not the good one\n",
                        d.name
                    ));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::expect::{parse, DeviceExpect, Memlock, PortExpect};

    #[test]
    fn a_written_manifest_reads_back() {
        let m = Manifest {
            devices: Some(1),
            min_memlock: Some(Memlock::Bytes(65536)),
            modules: vec!["rdma_rxe".into()],
            device: vec![DeviceExpect {
                name: "rxe0".into(),
                firmware: None,
                ports: vec![PortExpect {
                    port: Some(1),
                    min_rate_gbps: Some(2.5),
                    ..PortExpect::default()
                }],
            }],
        };
        let toml = manifest(&m, false);
        assert!(toml.starts_with("# What this host should have"), "{toml}");
        assert!(
            toml.contains("[[device.port]]\nport = 1\nmin_rate_gbps = 2.5\n"),
            "{toml}"
        );
        assert_eq!(parse("m.toml", &toml).unwrap(), m);
        assert_eq!(parse("m.json", &manifest(&m, true)).unwrap(), m);
    }
}
