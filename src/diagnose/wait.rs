//! `rdmactl wait`: are the ports a boot waits for ACTIVE yet, and when the time is up, why
//! not: doctor's own port-state rule explains a port (the state, the physical state, the
//! netdev without a link, the fix), so `wait` and `doctor` never disagree.

use serde::Serialize;

use crate::model::codes;
use crate::model::device::{Device, PortState};
use crate::model::diagnostic::{Diagnostic, Severity, Subject};
use crate::model::doctor::HostNet;

/// One port waited for, as last read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PortWaited {
    pub device: String,
    pub port: u32,
    pub state: Option<String>,
    pub physical_state: Option<String>,
    pub active: bool,
}

impl PortWaited {
    /// `rxe0/1 DOWN (DISABLED)`, for the progress line.
    pub fn label(&self) -> String {
        format!(
            "{}/{} {} ({})",
            self.device,
            self.port,
            self.state.as_deref().unwrap_or("unknown"),
            self.physical_state.as_deref().unwrap_or("unknown")
        )
    }
}

/// One read of sysfs judged against what was asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Watched {
    pub ports: Vec<PortWaited>,
    /// Targets that do not exist (yet): `mlx5_0`, `mlx5_0/2`, or `any device` when none
    /// was named and none is there.
    pub missing: Vec<String>,
    /// What `class/infiniband` lists, for the missing ones' evidence.
    pub listed: Vec<String>,
    /// A port asked for on a device that is there without it (device, port, the ports it
    /// has): a device's ports come with it, so waiting cannot help.
    pub no_such_port: Option<(String, u32, Vec<u32>)>,
}

impl Watched {
    /// Every port asked for exists and is ACTIVE (and there is at least one).
    pub fn ready(&self) -> bool {
        self.missing.is_empty()
            && self.no_such_port.is_none()
            && !self.ports.is_empty()
            && self.ports.iter().all(|p| p.active)
    }
}

/// The ports `targets` name (`(device, None)` is every port of the device; none at all is
/// every port of every device) in `devices`, as read now.
pub fn watch(devices: &[Device], targets: &[(String, Option<u32>)]) -> Watched {
    let mut w = Watched {
        listed: devices.iter().map(|d| d.name.clone()).collect(),
        ..Watched::default()
    };
    let waited = |p: &crate::model::device::Port| PortWaited {
        device: p.device.clone(),
        port: p.number,
        state: p.state.as_ref().map(|s| s.name().to_string()),
        physical_state: p.phys_state.as_ref().map(|s| s.name().to_string()),
        active: p.state == Some(PortState::Active),
    };
    if targets.is_empty() {
        w.ports = devices.iter().flat_map(|d| &d.ports).map(waited).collect();
        if devices.is_empty() {
            w.missing.push("any device".into());
        }
        return w;
    }
    for (name, port) in targets {
        let Some(device) = devices.iter().find(|d| &d.name == name) else {
            w.missing.push(match port {
                Some(p) => format!("{name}/{p}"),
                None => name.clone(),
            });
            continue;
        };
        let before = w.ports.len();
        w.ports.extend(
            device
                .ports
                .iter()
                .filter(|p| port.map_or(true, |n| p.number == n))
                .map(waited),
        );
        if w.ports.len() == before {
            match port {
                Some(p) if !device.ports.is_empty() => {
                    w.no_such_port.get_or_insert((
                        name.clone(),
                        *p,
                        device.ports.iter().map(|p| p.number).collect(),
                    ));
                }
                _ => w.missing.push(format!("{name}/{}", port.unwrap_or(1))),
            }
        }
    }
    w
}

/// Why each port asked for is not ready: doctor's port-state failure for a port that is
/// there, `wait-device-missing` for one that is not.
pub fn reasons(devices: &[Device], watched: &Watched) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for name in &watched.missing {
        let subject = match name.split_once('/') {
            _ if name == "any device" => Subject::Host,
            Some((device, port)) => match port.parse() {
                Ok(port) => Subject::Port(device.to_string(), port),
                Err(_) => Subject::Other(name.clone()),
            },
            None => Subject::Device(name.clone()),
        };
        out.push(
            Diagnostic::finding(
                Severity::Fail,
                codes::WAIT_DEVICE_MISSING,
                if name == "any device" {
                    "no RDMA device appeared".to_string()
                } else {
                    format!("{name} did not appear")
                },
            )
            .about(subject)
            .evidence(if watched.listed.is_empty() {
                "class/infiniband lists no device".to_string()
            } else {
                format!("class/infiniband lists {}", watched.listed.join(", "))
            })
            .fix("check `dmesg` for the NIC's driver and that its RDMA module is loaded (`rdmactl doctor`); if it is only slow at boot, raise --timeout"),
        );
    }
    let net = HostNet::default();
    for waited in watched.ports.iter().filter(|p| !p.active) {
        let Some(port) = devices
            .iter()
            .flat_map(|d| &d.ports)
            .find(|p| p.device == waited.device && p.number == waited.port)
        else {
            continue;
        };
        let findings = crate::diagnose::doctor::port_findings(port, None, &net);
        if let Some(state) = findings
            .into_iter()
            .find(|f| f.code == codes::PORT_STATE && f.severity == Severity::Fail)
        {
            out.push(state);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn devices(tree: &str) -> Vec<Device> {
        crate::gather::sysfs::SysfsRoot::new(
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/sysfs")
                .join(tree),
        )
        .netdev_only()
        .devices()
        .unwrap()
    }

    #[test]
    fn active_ports_are_ready() {
        let d = devices("rxe-veth-basic");
        let w = watch(&d, &[]);
        assert!(w.ready(), "{w:?}");
        assert_eq!(w.ports.len(), 2);
        assert!(watch(&d, &[("rxe1".into(), Some(1))]).ready());
        assert!(reasons(&d, &w).is_empty());
    }

    #[test]
    fn a_down_port_says_why_with_doctors_words() {
        let d = devices("rxe-veth-vlan-ipv6-down");
        let w = watch(&d, &[]);
        assert!(!w.ready());
        let why = reasons(&d, &w);
        let down: Vec<_> = why.iter().filter(|f| f.label() == "rxe1/1").collect();
        assert_eq!(down.len(), 1, "{why:#?}");
        assert_eq!(
            down[0].message,
            "rxe1/1 is DOWN: a RoCE port follows its netdev, and veth1 is down"
        );
        assert!(down[0]
            .evidence
            .iter()
            .any(|e| e.text == "netdev veth1 operstate down"));
        assert_eq!(
            down[0].fix_text(),
            "bring the interface up: `ip link set veth1 up`"
        );
    }

    #[test]
    fn a_missing_device_or_port_is_named() {
        let d = devices("rxe-veth-basic");
        let w = watch(&d, &[("mlx5_0".into(), None), ("rxe0".into(), Some(2))]);
        // A device may still appear (a boot); a port its present device lacks never will.
        assert_eq!(w.missing, ["mlx5_0"]);
        assert_eq!(w.no_such_port, Some(("rxe0".into(), 2, vec![1])));
        assert!(!w.ready());
        let why = reasons(&d, &w);
        assert_eq!(why[0].message, "mlx5_0 did not appear");
        assert_eq!(why[0].evidence[0].text, "class/infiniband lists rxe0, rxe1");
        let none = watch(&[], &[]);
        assert_eq!(reasons(&[], &none)[0].message, "no RDMA device appeared");
    }
}
