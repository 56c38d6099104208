//! `doctor --expect FILE`: a manifest of what a host should have (its devices, each port's
//! link layer, state, rate, width, MTUs and IPv4 GID, firmware, memlock, kernel modules),
//! as TOML or JSON. `--save-expect` writes one from a known-good host for the rest. Unknown
//! keys are refused (`deny_unknown_fields`): a misspelt key silently ignored would make a
//! check that never fails. The schema is documented in docs/health-checks.md.

use serde::{Deserialize, Serialize};

/// The whole manifest. Every key is optional: only what is given is judged.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// How many RDMA devices `class/infiniband` lists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub devices: Option<usize>,
    /// The soft RLIMIT_MEMLOCK at least: bytes, or "unlimited".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_memlock: Option<Memlock>,
    /// Kernel modules that must be loaded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub modules: Vec<String>,
    /// `[[device]]` tables, each for the devices its `name` (or pattern) matches.
    #[serde(default, rename = "device", skip_serializing_if = "Vec::is_empty")]
    pub device: Vec<DeviceExpect>,
}

/// `[[device]]`: the devices whose name matches `name` (a name, or a shell pattern such as
/// `mlx5_*`); at least one must.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceExpect {
    pub name: String,
    /// The firmware version, exactly (`fw_ver`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub firmware: Option<String>,
    /// `[[device.port]]` tables.
    #[serde(default, rename = "port", skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<PortExpect>,
}

/// `[[device.port]]`: one port by number, or every port of the device when `port` is left
/// out.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PortExpect {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u32>,
    /// `Ethernet` (RoCE) or `InfiniBand`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_layer: Option<String>,
    /// The port state by its name, normally `ACTIVE`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// The rate in Gb/s at least (`ports/N/rate`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_rate_gbps: Option<f64>,
    /// The link width at least, as the rate shows it: `1X`, `2X`, `4X`, `8X`, `12X`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_width: Option<String>,
    /// The active RDMA MTU in bytes, exactly (256 to 4096).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_mtu: Option<u32>,
    /// The port's netdev MTU, exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub netdev_mtu: Option<u32>,
    /// A RoCE v2 GID with an IPv4-mapped address must be in the table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipv4_gid: Option<bool>,
    /// ... and at this index (what `NCCL_IB_GID_INDEX` or `-x` pin).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipv4_gid_index: Option<u32>,
    /// Not judged at all (an uncabled or unused port): its findings become info.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore: Option<bool>,
}

/// `min_memlock`: a number of bytes, or the string "unlimited".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "MemlockText", into = "MemlockText")]
pub enum Memlock {
    Bytes(u64),
    Unlimited,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
enum MemlockText {
    Bytes(u64),
    Text(String),
}

impl TryFrom<MemlockText> for Memlock {
    type Error = String;
    fn try_from(raw: MemlockText) -> Result<Memlock, String> {
        match raw {
            MemlockText::Bytes(n) => Ok(Memlock::Bytes(n)),
            MemlockText::Text(t) if t == "unlimited" => Ok(Memlock::Unlimited),
            MemlockText::Text(t) => Err(format!(
                "min_memlock \"{t}\": give a number of bytes or \"unlimited\""
            )),
        }
    }
}

impl From<Memlock> for MemlockText {
    fn from(m: Memlock) -> MemlockText {
        match m {
            Memlock::Bytes(n) => MemlockText::Bytes(n),
            Memlock::Unlimited => MemlockText::Text("unlimited".into()),
        }
    }
}

/// Which kernel modules were seen loaded, of those asked about; None when it cannot be
/// told (a captured tree without `module/`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModulesSeen {
    pub loaded: Option<Vec<String>>,
    /// Where they were looked up, as the evidence names it.
    pub source: String,
}

/// The kernel modules `--save-expect` records when loaded: the RDMA core, the user-space
/// access modules and the drivers of the common NICs.
pub const KNOWN_MODULES: &[&str] = &[
    "ib_core",
    "ib_uverbs",
    "rdma_cm",
    "rdma_ucm",
    "ib_umad",
    "ib_ipoib",
    "mlx5_ib",
    "mlx4_ib",
    "irdma",
    "bnxt_re",
    "qedr",
    "efa",
    "rdma_rxe",
    "siw",
    "hfi1",
    "mana_ib",
    "erdma",
];

/// The file's format: by its extension, else by its content (JSON starts with `{`).
pub fn is_json(path_name: &str, text: &str) -> bool {
    if path_name.ends_with(".json") {
        return true;
    }
    if path_name.ends_with(".toml") {
        return false;
    }
    text.trim_start().starts_with('{')
}

/// Reads a manifest; a refusal names the line (and for TOML the key) that failed, in one
/// line.
pub fn parse(path_name: &str, text: &str) -> Result<Manifest, String> {
    if is_json(path_name, text) {
        // serde_json's message already ends "at line L column C".
        serde_json::from_str(text).map_err(|e| e.to_string())
    } else {
        toml::from_str(text).map_err(|e| {
            let what = e.message().trim().replace('\n', "; ");
            match e.span() {
                Some(span) => {
                    let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
                    format!("line {line}: {what}")
                }
                None => what,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FULL: &str = r#"
devices = 2
min_memlock = "unlimited"
modules = ["rdma_rxe", "ib_uverbs"]

[[device]]
name = "rxe*"
firmware = "0.0.0"

[[device.port]]
port = 1
link_layer = "Ethernet"
state = "ACTIVE"
min_rate_gbps = 10
min_width = "1X"
active_mtu = 1024
netdev_mtu = 1500
ipv4_gid = true
ipv4_gid_index = 1
"#;

    #[test]
    fn a_full_toml_manifest_reads_and_round_trips() {
        let m = parse("expect.toml", FULL).unwrap();
        assert_eq!(m.devices, Some(2));
        assert_eq!(m.min_memlock, Some(Memlock::Unlimited));
        assert_eq!(m.device[0].name, "rxe*");
        let p = &m.device[0].ports[0];
        assert_eq!(
            (p.port, p.min_rate_gbps, p.ipv4_gid_index),
            (Some(1), Some(10.0), Some(1))
        );
        let json = serde_json::to_string(&m).unwrap();
        assert_eq!(parse("x.json", &json).unwrap(), m);
        assert_eq!(parse("no-extension", &json).unwrap(), m);
        let toml = toml::to_string(&m).unwrap();
        assert_eq!(parse("x.toml", &toml).unwrap(), m);
    }

    #[test]
    fn an_unknown_key_is_refused_with_its_line() {
        let text = FULL.replace("netdev_mtu = 1500", "netdev_mut = 1500");
        let e = parse("expect.toml", &text).unwrap_err();
        assert!(e.starts_with("line 17: unknown field `netdev_mut`"), "{e}");
        assert!(!e.contains('\n'), "{e}");
        let e = parse(
            "e.json",
            "{\"devices\": 1,\n \"device\": [{\"nam\": \"x\"}]}",
        )
        .unwrap_err();
        assert!(
            e.contains("unknown field `nam`") && e.contains("line 2"),
            "{e}"
        );
        let e = parse("e.toml", "min_memlock = \"lots\"\n").unwrap_err();
        assert!(e.contains("line 1") && e.contains("\"unlimited\""), "{e}");
    }
}
