//! The environment variables that decide which device, port and GID an NCCL or UCX job
//! uses, checked the way the libraries read them, against this host's port (`check
//! --env`).

use crate::diagnose::gidselect::{describe, is_link_local, suggestion, Selection, Verdict};
use crate::finding::{Finding, Severity};
use crate::model::{GidEntry, LinkLayer};

/// An `NCCL_IB_HCA` filter: `[^][=]name[:port][,name[:port]...]`. `^` excludes, `=` asks for
/// exact names instead of prefixes; both apply to the whole list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HcaFilter {
    pub exclude: bool,
    pub exact: bool,
    pub entries: Vec<(String, Option<u32>)>,
}

impl HcaFilter {
    pub fn parse(text: &str) -> Result<HcaFilter, String> {
        let mut rest = text.trim();
        let exclude = rest.starts_with('^');
        if exclude {
            rest = &rest[1..];
        }
        let exact = rest.starts_with('=');
        if exact {
            rest = &rest[1..];
        }
        let mut entries = Vec::new();
        for item in rest.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (name, port) = match item.split_once(':') {
                Some((n, p)) => {
                    let port = p.parse::<u32>().ok().filter(|p| *p > 0).ok_or_else(|| {
                        format!("'{item}': '{p}' is not a port number (ports count from 1)")
                    })?;
                    (n, Some(port))
                }
                None => (item, None),
            };
            if name.is_empty() || name.contains(['^', '=']) {
                return Err(format!(
                    "'{item}' is not a device name; '^' and '=' go once at the start of the whole list (e.g. ^=mlx5_1,mlx5_4)"
                ));
            }
            entries.push((name.to_string(), port));
        }
        if entries.is_empty() {
            return Err("the list names no device".into());
        }
        Ok(HcaFilter {
            exclude,
            exact,
            entries,
        })
    }

    /// Whether NCCL would use `device`/`port` under this filter.
    pub fn selects(&self, device: &str, port: u32) -> bool {
        let listed = self.entries.iter().any(|(name, p)| {
            let name_ok = if self.exact {
                device == name
            } else {
                device.starts_with(name.as_str())
            };
            name_ok && p.map_or(true, |p| p == port)
        });
        listed != self.exclude
    }
}

/// What `--env` checks against: this host's port, its GID table, and the automatic choice.
pub struct EnvTarget<'a> {
    pub device: &'a str,
    pub port: u32,
    pub link_layer: &'a LinkLayer,
    pub table: &'a [GidEntry],
    pub auto: &'a Selection,
    /// Every RDMA device on the host, for NCCL_IB_HCA.
    pub devices: &'a [String],
}

/// Check NCCL_IB_GID_INDEX, UCX_IB_GID_INDEX and NCCL_IB_HCA. `lookup` reads a variable
/// (std::env::var in production, a table in tests). Unset variables give no finding.
pub fn validate_env(lookup: impl Fn(&str) -> Option<String>, target: &EnvTarget) -> Vec<Finding> {
    let mut findings = Vec::new();
    if let Some(v) = lookup("NCCL_IB_GID_INDEX") {
        findings.push(check_index_var(
            "NCCL_IB_GID_INDEX",
            &v,
            v.trim() == "-1",
            target,
        ));
    }
    if let Some(v) = lookup("UCX_IB_GID_INDEX") {
        findings.push(check_index_var(
            "UCX_IB_GID_INDEX",
            &v,
            v.trim().eq_ignore_ascii_case("auto"),
            target,
        ));
    }
    if let Some(v) = lookup("NCCL_IB_HCA") {
        findings.push(check_hca(&v, target));
    }
    findings
}

fn check_index_var(name: &str, value: &str, is_auto: bool, target: &EnvTarget) -> Finding {
    let code = format!("env-{}", name.to_lowercase().replace('_', "-"));
    let evidence = vec![format!("{name}={value}")];
    let auto_text = suggestion(target.table, target.auto);
    if is_auto {
        let mut f = Finding::new(
            Severity::Ok,
            &code,
            format!("{name}={value} lets the library choose"),
        );
        f.evidence = evidence;
        if let Some(s) = &auto_text {
            f.evidence.push(format!("rdmactl's own choice: {s}"));
        }
        return f;
    }
    let accepted = if name.starts_with("UCX") {
        "a GID index or 'auto'"
    } else {
        "a GID index, or -1 for automatic selection"
    };
    let Ok(index) = value.trim().parse::<u32>() else {
        let mut f = Finding::new(
            Severity::Fail,
            &code,
            format!("{name}='{value}' is not {accepted}"),
        );
        f.evidence = evidence;
        f.fix = Some(match &auto_text {
            Some(s) => format!(
                "unset it or set {name}={}: {s}",
                target.auto.chosen.unwrap_or(0)
            ),
            None => format!("unset it or give {accepted}"),
        });
        return f;
    };
    let entry = target
        .table
        .iter()
        .find(|e| e.index == index && !e.gid.is_zero());
    let fix_to_auto = |what: &str| match (&auto_text, target.auto.chosen) {
        (Some(s), Some(i)) => format!("set {name}={i}: {s}{what}"),
        _ => "no GID on this port qualifies; check the port's addresses (rdmactl gids)".into(),
    };
    match entry {
        None => {
            let mut f = Finding::new(
                Severity::Fail,
                &code,
                format!(
                    "{name}={index}, but {}/{} has no GID at index {index}",
                    target.device, target.port
                ),
            );
            f.evidence = evidence;
            f.evidence.push(format!(
                "populated indices: {}",
                target
                    .table
                    .iter()
                    .filter(|e| !e.gid.is_zero())
                    .map(|e| e.index.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            f.fix = Some(fix_to_auto(""));
            f
        }
        Some(entry) if target.auto.chosen == Some(index) => {
            let mut f = Finding::new(
                Severity::Ok,
                &code,
                format!("{name}={index} is {}", describe(entry)),
            );
            f.evidence = evidence;
            if let Some(r) = target.auto.reason(index) {
                f.evidence.push(r.why.clone());
            }
            f
        }
        Some(entry) => {
            let reason = target.auto.reason(index);
            let rejected = reason.is_some_and(|r| r.verdict == Verdict::Rejected);
            let mut f = Finding::new(
                if rejected {
                    Severity::Fail
                } else {
                    Severity::Warn
                },
                &code,
                format!("{name}={index} selects {}", describe(entry)),
            );
            f.evidence = evidence;
            if let Some(r) = reason {
                f.evidence.push(format!("index {index}: {}", r.why));
            }
            if *target.link_layer == LinkLayer::Ethernet && is_link_local(&entry.gid) {
                f.evidence.push("a link-local GID reaches only peers on the same L2 segment, and only other link-local GIDs".into());
            }
            f.fix = Some(fix_to_auto(""));
            f
        }
    }
}

fn check_hca(value: &str, target: &EnvTarget) -> Finding {
    let code = "env-nccl-ib-hca";
    let evidence = vec![
        format!("NCCL_IB_HCA={value}"),
        format!("devices: {}", target.devices.join(", ")),
    ];
    let filter = match HcaFilter::parse(value) {
        Ok(f) => f,
        Err(why) => {
            let mut f = Finding::new(
                Severity::Fail,
                code,
                format!("NCCL_IB_HCA={value} does not parse: {why}"),
            );
            f.evidence = evidence;
            f.fix = Some(format!(
                "e.g. NCCL_IB_HCA={}:{}",
                target.device, target.port
            ));
            return f;
        }
    };
    let selected: Vec<&String> = target
        .devices
        .iter()
        .filter(|d| filter.selects(d, target.port))
        .collect();
    let unknown: Vec<&str> = filter
        .entries
        .iter()
        .map(|(n, _)| n.as_str())
        .filter(|n| {
            !target.devices.iter().any(|d| {
                if filter.exact {
                    d == n
                } else {
                    d.starts_with(n)
                }
            })
        })
        .collect();
    let mut f = if selected.is_empty() {
        let mut f = Finding::new(
            Severity::Fail,
            code,
            format!("NCCL_IB_HCA={value} selects no device on this host"),
        );
        f.fix = Some(format!(
            "name an existing device, e.g. NCCL_IB_HCA={}:{}",
            target.device, target.port
        ));
        f
    } else if !filter.selects(target.device, target.port) {
        let mut f = Finding::new(
            Severity::Warn,
            code,
            format!(
                "NCCL_IB_HCA={value} leaves out {}/{} (the port checked here)",
                target.device, target.port
            ),
        );
        f.fix = Some(format!(
            "add {}:{} if NCCL should use it",
            target.device, target.port
        ));
        f
    } else {
        Finding::new(
            Severity::Ok,
            code,
            format!(
                "NCCL_IB_HCA={value} selects {} (port {})",
                selected
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                target.port
            ),
        )
    };
    f.evidence = evidence;
    if !unknown.is_empty() && f.severity != Severity::Fail {
        f.severity = Severity::Warn;
        f.evidence
            .push(format!("no device matches {}", unknown.join(", ")));
        if !filter.exact && !filter.exclude {
            f.evidence
                .push("entries match as prefixes unless the list starts with '='".into());
        }
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::gidselect::select_gid;
    use crate::diagnose::gidselect::tests::rxe0;
    use crate::diagnose::gidselect::Want;

    #[test]
    fn hca_filter_syntax() {
        let cases: &[(&str, &str, u32, Option<bool>)] = &[
            ("mlx5", "mlx5_0", 1, Some(true)),
            ("mlx5", "mlx5_10", 2, Some(true)),
            ("=mlx5_1", "mlx5_10", 1, Some(false)),
            ("=mlx5_1", "mlx5_1", 1, Some(true)),
            ("mlx5_0:1,mlx5_1:1", "mlx5_1", 2, Some(false)),
            ("mlx5_0:1,mlx5_1:1", "mlx5_1", 1, Some(true)),
            ("^mlx5_1", "mlx5_1", 1, Some(false)),
            ("^mlx5_1", "mlx5_0", 1, Some(true)),
            ("^=mlx5_1", "mlx5_10", 1, Some(true)),
            ("mlx5_0:x", "mlx5_0", 1, None),
            ("mlx5_0:0", "mlx5_0", 1, None),
            ("mlx5_0,^mlx5_1", "mlx5_0", 1, None),
            ("", "mlx5_0", 1, None),
        ];
        for (text, dev, port, want) in cases {
            let got = HcaFilter::parse(text).ok().map(|f| f.selects(dev, *port));
            assert_eq!(got, *want, "{text} {dev}:{port}");
        }
    }

    #[test]
    fn env_validation() {
        let table = rxe0();
        let want = Want {
            peer: Some("192.168.77.2".parse().unwrap()),
            route_netdev: Some("veth0".into()),
            peer_on_link: Some(true),
            ..Want::default()
        };
        let auto = select_gid(&table, &LinkLayer::Ethernet, &want);
        let devices = vec!["rxe0".to_string(), "rxe1".to_string()];
        let target = EnvTarget {
            device: "rxe0",
            port: 1,
            link_layer: &LinkLayer::Ethernet,
            table: &table,
            auto: &auto,
            devices: &devices,
        };
        let run = |vars: &[(&str, &str)]| {
            let vars: Vec<(String, String)> = vars
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            validate_env(
                |k| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()),
                &target,
            )
        };
        type Vars = &'static [(&'static str, &'static str)];
        let cases: &[(Vars, Severity, &str)] = &[
            (
                &[("NCCL_IB_GID_INDEX", "0")],
                Severity::Fail,
                "set NCCL_IB_GID_INDEX=1",
            ),
            (&[("NCCL_IB_GID_INDEX", "1")], Severity::Ok, "GID index 1"),
            (&[("NCCL_IB_GID_INDEX", "-1")], Severity::Ok, "choose"),
            (
                &[("NCCL_IB_GID_INDEX", "7")],
                Severity::Fail,
                "no GID at index 7",
            ),
            (
                &[("NCCL_IB_GID_INDEX", "three")],
                Severity::Fail,
                "not a GID index",
            ),
            (&[("UCX_IB_GID_INDEX", "auto")], Severity::Ok, "choose"),
            (
                &[("UCX_IB_GID_INDEX", "0")],
                Severity::Fail,
                "UCX_IB_GID_INDEX=1",
            ),
            (&[("NCCL_IB_HCA", "rxe")], Severity::Ok, "rxe0, rxe1"),
            (
                &[("NCCL_IB_HCA", "=rxe1")],
                Severity::Warn,
                "leaves out rxe0/1",
            ),
            (
                &[("NCCL_IB_HCA", "mlx5")],
                Severity::Fail,
                "selects no device",
            ),
            (
                &[("NCCL_IB_HCA", "rxe0,mlx5_0")],
                Severity::Warn,
                "no device matches mlx5_0",
            ),
            (
                &[("NCCL_IB_HCA", "rxe0:x")],
                Severity::Fail,
                "not a port number",
            ),
        ];
        for (vars, severity, text) in cases {
            let findings = run(vars);
            assert_eq!(findings.len(), 1, "{vars:?}");
            let f = &findings[0];
            let all = format!(
                "{} {} {}",
                f.message,
                f.evidence.join(" "),
                f.fix.clone().unwrap_or_default()
            );
            assert_eq!(f.severity, *severity, "{vars:?}: {all}");
            assert!(all.contains(text), "{vars:?}: {all}");
        }
        assert!(run(&[]).is_empty());
    }
}
