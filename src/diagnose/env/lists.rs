//! The device and interface lists: NCCL_IB_HCA, NCCL_SOCKET_IFNAME (NCCL's `[^][=]name[:port]`)
//! and UCX_NET_DEVICES (UCX's `^`, `all`, `name:port`).

use super::numbers::c_atoi;
use super::{code_of, EnvTarget};
use crate::model::device::{carries_traffic, OperState};
use crate::model::diagnostic::{Diagnostic, Seen, Severity};

/// An NCCL interface list (`NCCL_IB_HCA`, `NCCL_SOCKET_IFNAME`):
/// `[^][=]name[:port][,name[:port]...]`. `^` excludes, `=` asks for exact names instead of
/// prefixes; both apply to the whole list. An empty list matches everything (NCCL's
/// `matchIfList`), so `^` alone excludes everything.
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
                    // NCCL reads the port with atoi: anything else is port 0, which no
                    // port has, so the entry would match nothing.
                    let port = p.parse::<u32>().ok().filter(|p| *p > 0).ok_or_else(|| {
                        format!("'{item}': '{p}' is not a port number (ports count from 1; NCCL reads it as {}, which matches no port)", c_atoi(p))
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
        Ok(HcaFilter {
            exclude,
            exact,
            entries,
        })
    }

    fn names(&self, name: &str, entry: &str) -> bool {
        if self.exact {
            name == entry
        } else {
            name.starts_with(entry)
        }
    }

    /// Whether NCCL would use interface `name` (NCCL_SOCKET_IFNAME: no ports).
    pub fn selects_name(&self, name: &str) -> bool {
        let listed = self.entries.is_empty()
            || self
                .entries
                .iter()
                .any(|(entry, _)| self.names(name, entry));
        listed != self.exclude
    }

    /// Whether NCCL would use `device`/`port` under this filter.
    pub fn selects(&self, device: &str, port: u32) -> bool {
        let listed = self.entries.is_empty()
            || self
                .entries
                .iter()
                .any(|(name, p)| self.names(device, name) && p.map_or(true, |p| p == port));
        listed != self.exclude
    }

    /// The entries that name nothing in `names`.
    fn unknown<'n>(&'n self, names: &[String]) -> Vec<&'n str> {
        self.entries
            .iter()
            .map(|(n, _)| n.as_str())
            .filter(|n| !names.iter().any(|d| self.names(d, n)))
            .collect()
    }
}

pub(super) fn check_hca(value: &str, target: &EnvTarget) -> Diagnostic {
    let code = super::code_of("NCCL_IB_HCA");
    let evidence = vec![
        format!("NCCL_IB_HCA={value}"),
        format!("devices: {}", target.devices.join(", ")),
    ];
    let filter = match HcaFilter::parse(value) {
        Ok(f) => f,
        Err(why) => {
            let mut f = Diagnostic::finding(
                Severity::Fail,
                code.clone(),
                format!("NCCL_IB_HCA={value} does not parse: {why}"),
            );
            f.evidence = evidence.into_iter().map(Seen::gathered).collect();
            f.fix = Some(format!(
                "e.g. NCCL_IB_HCA={}:{}",
                target.device, target.port
            ));
            return f;
        }
    };
    if filter.entries.is_empty() && !filter.exclude {
        let mut f = Diagnostic::finding(
            Severity::Info,
            code.clone(),
            format!("NCCL_IB_HCA='{value}' names no device: NCCL uses every device"),
        );
        f.evidence = evidence.into_iter().map(Seen::gathered).collect();
        return f;
    }
    let selected: Vec<&String> = target
        .devices
        .iter()
        .filter(|d| filter.selects(d, target.port))
        .collect();
    let unknown = filter.unknown(target.devices);
    let mut f = if selected.is_empty() {
        let mut f = Diagnostic::finding(
            Severity::Fail,
            code.clone(),
            format!("NCCL_IB_HCA={value} selects no device on this host"),
        );
        f.fix = Some(format!(
            "name an existing device, e.g. NCCL_IB_HCA={}:{}",
            target.device, target.port
        ));
        f
    } else if !filter.selects(target.device, target.port) {
        let mut f = Diagnostic::finding(
            Severity::Warn,
            code.clone(),
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
        Diagnostic::finding(
            Severity::Ok,
            code.clone(),
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
    f.evidence = evidence.into_iter().map(Seen::gathered).collect();
    if filter.exclude {
        f.evidence.push(Seen::gathered(
            "'^': the list names the devices NCCL must not use",
        ));
    }
    if !unknown.is_empty() && f.severity != Severity::Fail {
        f.severity = Severity::Warn;
        f.evidence.push(Seen::gathered(format!(
            "no device matches {}",
            unknown.join(", ")
        )));
        if !filter.exact && !filter.exclude {
            f.evidence.push(Seen::gathered(
                "entries match as prefixes unless the list starts with '='",
            ));
        }
    }
    f
}

pub(super) fn check_socket_ifname(value: &str, target: &EnvTarget) -> Diagnostic {
    const NAME: &str = "NCCL_SOCKET_IFNAME";
    let code = code_of(NAME);
    let names: Vec<String> = target.netdevs.iter().map(|(n, _)| n.clone()).collect();
    let shown = format!("{NAME}={value}");
    let filter = match HcaFilter::parse(value) {
        Ok(f) => f,
        Err(why) => {
            return Diagnostic::finding(
                Severity::Fail,
                code.clone(),
                format!("{shown} does not parse: {why}"),
            )
            .evidence(format!("netdevs: {}", names.join(", ")))
            .fix(format!("e.g. {NAME}=eth0, or {NAME}=^docker,lo"));
        }
    };
    if filter.entries.is_empty() && !filter.exclude {
        return Diagnostic::finding(
            Severity::Info,
            code.clone(),
            format!("{NAME}='{value}' names no interface: NCCL picks one itself"),
        );
    }
    let chosen: Vec<&(String, Option<OperState>)> = target
        .netdevs
        .iter()
        .filter(|(n, _)| filter.selects_name(n))
        .collect();
    let unknown = filter.unknown(&names);
    let mut f = if chosen.is_empty() {
        Diagnostic::finding(
            Severity::Fail,
            code.clone(),
            format!("{shown} matches no netdev here: NCCL finds no interface for its bootstrap and socket traffic, and fails to start"),
        )
        .fix(format!("name one of: {}", names.join(", ")))
    } else if chosen
        .iter()
        .all(|(_, state)| state.as_ref().is_some_and(|s| !carries_traffic(s, None)))
    {
        Diagnostic::finding(
            Severity::Warn,
            code.clone(),
            format!(
                "{shown} matches only interfaces that are down: {}",
                chosen
                    .iter()
                    .map(|(n, _)| n.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
        .fix("bring one up (ip link set IF up), or name one that is up")
    } else {
        Diagnostic::finding(
            Severity::Ok,
            code.clone(),
            format!(
                "{shown} matches {}",
                chosen
                    .iter()
                    .map(|(n, _)| n.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
        .evidence("NCCL uses the first of them that has an address")
    };
    f.evidence
        .insert(0, Seen::gathered(format!("netdevs: {}", names.join(", "))));
    if !unknown.is_empty() && f.severity != Severity::Fail {
        f.severity = f.severity.max(Severity::Warn);
        f = f.evidence(format!("no netdev matches {}", unknown.join(", ")));
    }
    f
}

pub(super) fn check_ucx_net_devices(value: &str, target: &EnvTarget) -> Diagnostic {
    const NAME: &str = "UCX_NET_DEVICES";
    let code = code_of(NAME);
    let shown = format!("{NAME}={value}");
    let here = format!("{}:{}", target.device, target.port);
    let rdma: Vec<String> = target
        .ports
        .iter()
        .map(|(d, p)| format!("{d}:{p}"))
        .collect();
    let known = format!(
        "RDMA ports: {}; netdevs: {}",
        rdma.join(", "),
        target
            .netdevs
            .iter()
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let (negate, list) = match value.strip_prefix('^') {
        Some(rest) => (true, rest),
        None => (false, value),
    };
    let entries: Vec<&str> = list.split(',').filter(|s| !s.is_empty()).collect();
    if !negate && entries == ["all"] {
        return Diagnostic::finding(
            Severity::Ok,
            code.clone(),
            format!("{shown}: UCX may use every device"),
        );
    }
    if entries.contains(&"all") {
        return Diagnostic::finding(
            Severity::Fail,
            code.clone(),
            format!("{shown}: 'all' must stand alone (and without '^'); UCX refuses the value"),
        )
        .fix(format!("{NAME}=all, or a list such as {NAME}={here}"));
    }
    let mut unknown = Vec::new();
    let mut bare = Vec::new();
    let mut ports_named = Vec::new();
    for e in &entries {
        if rdma.iter().any(|r| r == e) {
            ports_named.push(e.to_string());
        } else if target.netdevs.iter().any(|(n, _)| n == e) {
            // A netdev: UCX's TCP transport, not RDMA.
        } else if target.devices.iter().any(|d| d == e) {
            bare.push(e.to_string());
        } else {
            unknown.push(e.to_string());
        }
    }
    let includes_here = ports_named.contains(&here) != negate;
    let mut f = if entries.is_empty() && !negate {
        Diagnostic::finding(
            Severity::Fail,
            code.clone(),
            format!("{NAME} is set but empty: UCX allows no network device"),
        )
        .fix(format!("unset it, or {NAME}={here}"))
    } else if !negate && ports_named.is_empty() && entries.len() == unknown.len() + bare.len() {
        Diagnostic::finding(
            Severity::Fail,
            code.clone(),
            format!("{shown} names no device on this host: UCX warns that each is not available and has no network device left"),
        )
        .fix(format!("name a port as UCX does, DEV:PORT: {NAME}={here}"))
    } else if !includes_here {
        Diagnostic::finding(
            Severity::Warn,
            code.clone(),
            format!("{shown} leaves out {here} (the port checked here)"),
        )
        .fix(format!("add {here} if UCX should use it"))
    } else {
        Diagnostic::finding(
            Severity::Ok,
            code.clone(),
            format!("{shown} lets UCX use {here}"),
        )
    };
    f = f.evidence(known);
    if !bare.is_empty() {
        f.severity = f.severity.max(Severity::Warn);
        f = f.evidence(format!(
            "{}: UCX names an RDMA device by port, DEV:PORT (e.g. {}:1); a bare device name matches nothing",
            bare.join(", "),
            bare[0]
        ));
    }
    if !unknown.is_empty() {
        f.severity = f.severity.max(Severity::Warn);
        f = f.evidence(format!(
            "not on this host: {} (UCX warns and skips it)",
            unknown.join(", ")
        ));
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

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
            ("^=mlx5_1:2", "mlx5_1", 1, Some(true)),
            ("mlx5_0:x", "mlx5_0", 1, None),
            ("mlx5_0:0", "mlx5_0", 1, None),
            ("mlx5_0,^mlx5_1", "mlx5_0", 1, None),
            // NCCL's matchIfList: an empty list matches every device, so `^` alone none.
            ("", "mlx5_0", 1, Some(true)),
            ("^", "mlx5_0", 1, Some(false)),
        ];
        for (text, dev, port, want) in cases {
            let got = HcaFilter::parse(text).ok().map(|f| f.selects(dev, *port));
            assert_eq!(got, *want, "{text} {dev}:{port}");
        }
    }
}
