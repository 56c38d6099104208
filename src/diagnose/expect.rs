//! `doctor --expect`: the host judged against a manifest of what it should have, one
//! finding per expectation (met: ok; unmet: fail, with expected against found and the
//! fix), and `--save-expect`'s manifest made from a host's facts.

use crate::model::codes::{self, Code};
use crate::model::device::{Device, GidType, Port, PortState};
use crate::model::diagnostic::{Diagnostic, Severity, Subject};
use crate::model::doctor::DoctorFacts;
use crate::model::expect::{
    DeviceExpect, Manifest, Memlock, ModulesSeen, PortExpect, KNOWN_MODULES,
};

/// Every expectation of `manifest` judged on `facts`, appended to doctor's `findings`. A port
/// expected ACTIVE that doctor already failed is one root cause: the expectation goes under
/// doctor's port-state failure as evidence, not beside it as a second failure.
pub fn judge(
    facts: &DoctorFacts,
    modules: &ModulesSeen,
    manifest: &Manifest,
    findings: &mut Vec<Diagnostic>,
) {
    let mut out = Vec::new();
    if facts.no_rdma.is_some() {
        // The kernel finding already failed: nothing below could be met.
        return;
    }
    if let Some(want) = manifest.devices {
        out.push(device_count(facts, want));
    }
    for entry in &manifest.device {
        let matched: Vec<&Device> = facts
            .devices
            .iter()
            .filter(|d| name_matches(&entry.name, &d.name))
            .collect();
        if matched.is_empty() {
            out.push(no_device_matches(facts, entry));
            continue;
        }
        for device in matched {
            device_findings(device, entry, findings, &mut out);
        }
    }
    if let Some(want) = manifest.min_memlock {
        out.push(memlock(facts, want));
    }
    for module in &manifest.modules {
        out.push(module_finding(module, modules));
    }
    findings.extend(out);
}

/// A `name` is a device name or a shell pattern (`mlx5_*`, `mlx5_[0-3]`).
fn name_matches(pattern: &str, name: &str) -> bool {
    glob::Pattern::new(pattern).map_or(pattern == name, |p| p.matches(name))
}

fn expect_finding(code: Code, subject: Subject, severity: Severity, message: String) -> Diagnostic {
    Diagnostic::finding(severity, code, message).about(subject)
}

fn device_count(facts: &DoctorFacts, want: usize) -> Diagnostic {
    let names: Vec<&str> = facts.listed.iter().map(|d| d.name.as_str()).collect();
    let evidence = format!(
        "{} lists {}",
        facts.class_dir,
        if names.is_empty() {
            "no device".to_string()
        } else {
            names.join(", ")
        }
    );
    let found = names.len();
    if found == want {
        return expect_finding(
            codes::EXPECT_DEVICE,
            Subject::Host,
            Severity::Ok,
            format!("{found} RDMA device(s), as expected"),
        )
        .evidence(evidence);
    }
    expect_finding(
        codes::EXPECT_DEVICE,
        Subject::Host,
        Severity::Fail,
        format!("{found} RDMA device(s), expected {want}"),
    )
    .evidence(evidence)
    .evidence(format!("expected: devices = {want}"))
    .fix(if found < want {
        "a device is missing: check `dmesg` for the NIC driver (mlx5_core, irdma, ...), `lspci`, and that its RDMA module is loaded; a device that failed its firmware reset is gone until it is reset or the host reboots"
    } else {
        "more devices than the manifest lists: a new NIC, SR-IOV VFs or a Soft-RoCE device (`rdma link show`); update the manifest if the host changed on purpose"
    })
}

fn no_device_matches(facts: &DoctorFacts, entry: &DeviceExpect) -> Diagnostic {
    let names: Vec<&str> = facts.devices.iter().map(|d| d.name.as_str()).collect();
    expect_finding(
        codes::EXPECT_DEVICE,
        Subject::Host,
        Severity::Fail,
        format!("no RDMA device matches `{}`", entry.name),
    )
    .evidence(format!(
        "{} lists {}",
        facts.class_dir,
        if names.is_empty() {
            "no device".to_string()
        } else {
            names.join(", ")
        }
    ))
    .fix("a device is missing or was renamed: check `dmesg` for the NIC driver, `rdma dev show`, and udev's naming rules (mlx5_0 against mlx5_bond_0)")
}

fn device_findings(
    device: &Device,
    entry: &DeviceExpect,
    findings: &mut [Diagnostic],
    out: &mut Vec<Diagnostic>,
) {
    if let Some(want) = &entry.firmware {
        out.push(firmware(device, want));
    }
    for expect in &entry.ports {
        let ports: Vec<&Port> = match expect.port {
            Some(n) => match device.ports.iter().find(|p| p.number == n) {
                Some(p) => vec![p],
                None => {
                    let have: Vec<String> =
                        device.ports.iter().map(|p| p.number.to_string()).collect();
                    out.push(
                        expect_finding(
                            codes::EXPECT_DEVICE,
                            Subject::Device(device.name.clone()),
                            Severity::Fail,
                            format!("{} has no port {n}", device.name),
                        )
                        .evidence(format!("ports/: {}", have.join(", ")))
                        .fix("check the manifest's port numbers against `rdmactl ports`"),
                    );
                    continue;
                }
            },
            None => device.ports.iter().collect(),
        };
        for port in ports {
            port_findings(port, expect, findings, out);
        }
    }
}

fn firmware(device: &Device, want: &str) -> Diagnostic {
    let subject = Subject::Device(device.name.clone());
    let source = if device.verbs.available {
        "ibv_query_device"
    } else {
        "sysfs fw_ver"
    };
    match device.fw_ver.as_deref().filter(|v| !v.is_empty()) {
        None => expect_finding(
            codes::EXPECT_FIRMWARE,
            subject,
            Severity::Info,
            format!("firmware not judged: {} reports no version", device.name),
        )
        .evidence(format!("{source}: none; expected: firmware = \"{want}\"")),
        Some(v) if v == want => expect_finding(
            codes::EXPECT_FIRMWARE,
            subject,
            Severity::Ok,
            format!("firmware {v}, as expected"),
        )
        .evidence(format!("{source}: {v}")),
        Some(v) => expect_finding(
            codes::EXPECT_FIRMWARE,
            subject,
            Severity::Fail,
            format!("firmware {v}, expected {want}"),
        )
        .evidence(format!("{source}: {v}"))
        .evidence(format!("expected: firmware = \"{want}\""))
        .fix(format!("flash the site's firmware ({want}) with the vendor's tool (mlxfwmanager, mstflint, bnxtnvm) and reset the NIC; or, if {v} is the new standard, update the manifest")),
    }
}

/// Doctor's warnings and failures about `subject` become info, each saying why: the
/// manifest decided this port is not to be judged as a working one.
fn excuse(findings: &mut [Diagnostic], subject: &Subject, why: &str) {
    for f in findings
        .iter_mut()
        .filter(|f| f.subject.as_ref() == Some(subject) && f.severity >= Severity::Warn)
    {
        f.severity = Severity::Info;
        *f = f.clone().evidence(why.to_string());
    }
}

fn port_findings(
    port: &Port,
    want: &PortExpect,
    findings: &mut [Diagnostic],
    out: &mut Vec<Diagnostic>,
) {
    let subject = Subject::Port(port.device.clone(), port.number);
    let at =
        |code, severity, message: String| expect_finding(code, subject.clone(), severity, message);
    let active = port.state == Some(PortState::Active);
    let state = port.state.as_ref().map_or("unknown", |s| s.name());
    // What the manifest says of a port overrides doctor's defaults for it: a port it
    // ignores, or one it expects in the state it is in though not ACTIVE (an uncabled
    // second port), is no failure, or a health check would drain a healthy node.
    if want.ignore == Some(true) {
        excuse(
            findings,
            &subject,
            "the manifest ignores this port (ignore = true)",
        );
        out.push(
            at(
                codes::EXPECT_PORT_STATE,
                Severity::Info,
                format!("state {state}: not judged, as the manifest says (ignore = true)"),
            )
            .evidence(format!("state {state}")),
        );
        return;
    }
    if let Some(ll) = &want.link_layer {
        let found = port
            .link_layer
            .as_ref()
            .map_or("unknown".to_string(), |l| l.to_string());
        out.push(if found.eq_ignore_ascii_case(ll) {
            at(codes::EXPECT_LINK_LAYER, Severity::Ok, format!("link layer {found}, as expected"))
                .evidence(format!("link_layer {found}"))
        } else {
            at(codes::EXPECT_LINK_LAYER, Severity::Fail, format!("link layer {found}, expected {ll}"))
                .evidence(format!("link_layer {found}"))
                .evidence(format!("expected: link_layer = \"{ll}\""))
                .fix("a VPI port set to the other protocol: `mlxconfig -d <pci> set LINK_TYPE_P1=ETH` (2) or `=IB` (1), then reset the NIC or reboot")
        });
    }
    if let Some(ws) = &want.state {
        let expected = PortState::from_name(ws);
        if port
            .state
            .as_ref()
            .map_or(ws.eq_ignore_ascii_case(state), |s| *s == expected)
        {
            if !active {
                excuse(
                    findings,
                    &subject,
                    &format!("the manifest expects state {ws} (state = \"{ws}\")"),
                );
            }
            out.push(
                at(
                    codes::EXPECT_PORT_STATE,
                    Severity::Ok,
                    format!("state {state}, as expected"),
                )
                .evidence(format!("state {state}")),
            );
        } else if let Some(doctor) = findings.iter_mut().find(|f| {
            f.code == codes::PORT_STATE
                && f.severity == Severity::Fail
                && f.subject.as_ref() == Some(&subject)
        }) {
            let line = format!("the manifest expects state {ws}");
            *doctor = doctor.clone().evidence(line);
        } else {
            out.push(
                at(codes::EXPECT_PORT_STATE, Severity::Fail, format!("state {state}, expected {ws}"))
                    .evidence(format!("state {state}"))
                    .evidence(format!("expected: state = \"{ws}\""))
                    .fix("bring the port to the expected state (`ip link set <netdev> up|down`, `ibportstate`), or update the manifest"),
            );
        }
    }
    // A port that is not ACTIVE has no meaningful rate, width or active MTU: doctor's
    // port-state failure is the one root cause, and these are not judged beside it.
    let not_judged = |what: &str, code| {
        at(
            code,
            Severity::Info,
            format!("{what} not judged: the port is {state}"),
        )
        .evidence(format!("state {state}"))
    };
    if let Some(min) = want.min_rate_gbps {
        out.push(match (&port.rate, active) {
            (_, false) => not_judged("rate", codes::EXPECT_PORT_RATE),
            (Some(rate), true) if rate.gbps.is_some_and(|g| g + 1e-9 >= min) => at(
                codes::EXPECT_PORT_RATE,
                Severity::Ok,
                format!(
                    "rate {}, at least {} Gb/s as expected",
                    rate.text,
                    fmt_gbps(min)
                ),
            )
            .evidence(format!("rate {}", rate.text)),
            (rate, true) => {
                let text = rate.as_ref().map_or("unknown", |r| r.text.as_str());
                at(
                    codes::EXPECT_PORT_RATE,
                    Severity::Fail,
                    format!("rate {text}, expected at least {} Gb/s", fmt_gbps(min)),
                )
                .evidence(format!("rate {text}"))
                .evidence(format!("expected: min_rate_gbps = {}", fmt_gbps(min)))
                .fix(rate_fix(port))
            }
        });
    }
    if let Some(min) = &want.min_width {
        let found = port.rate.as_ref().and_then(|r| r.width.clone());
        out.push(
            match (lanes(min), found.as_deref().and_then(lanes), active) {
                (_, _, false) => not_judged("width", codes::EXPECT_PORT_RATE),
                (Some(w), Some(f), true) if f >= w => at(
                    codes::EXPECT_PORT_RATE,
                    Severity::Ok,
                    format!(
                        "width {}, at least {min} as expected",
                        found.clone().unwrap_or_default()
                    ),
                )
                .evidence(format!(
                    "rate {}",
                    port.rate.as_ref().map_or("", |r| r.text.as_str())
                )),
                _ => {
                    let shown = found.clone().unwrap_or_else(|| "unknown".into());
                    at(
                        codes::EXPECT_PORT_RATE,
                        Severity::Fail,
                        format!("width {shown}, expected at least {min}"),
                    )
                    .evidence(format!(
                        "rate {}",
                        port.rate.as_ref().map_or("unknown", |r| r.text.as_str())
                    ))
                    .evidence(format!("expected: min_width = \"{min}\""))
                    .fix(rate_fix(port))
                }
            },
        );
    }
    if let Some(mtu) = want.active_mtu {
        out.push(match (port.active_mtu, active) {
            (_, false) => not_judged("active MTU", codes::EXPECT_MTU),
            (None, true) => at(codes::EXPECT_MTU, Severity::Info, "active MTU not judged: only ibv_query_port reports it".into())
                .evidence(port.verbs.reason.clone().unwrap_or_else(|| "no verbs".into())),
            (Some(a), true) if a == mtu => at(codes::EXPECT_MTU, Severity::Ok, format!("active MTU {a}, as expected"))
                .evidence(format!("active_mtu {a}")),
            (Some(a), true) => at(codes::EXPECT_MTU, Severity::Fail, format!("active MTU {a}, expected {mtu}"))
                .evidence(format!("active_mtu {a} (ibv_query_port)"))
                .evidence(format!("expected: active_mtu = {mtu}"))
                .fix(match &port.netdev {
                    Some(nd) if port.link_layer == Some(crate::model::device::LinkLayer::Ethernet) => format!("a RoCE port's MTU follows its netdev's ({} now; 9000 gives 4096, 1500 gives 1024): `ip link set {} mtu <mtu>`", nd.mtu.map_or("unknown".into(), |m| m.to_string()), nd.name),
                    _ => "on InfiniBand the subnet manager's partition MTU sets it (opensm's partitions.conf `mtu=5` for 4096)".into(),
                }),
        });
    }
    if let Some(mtu) = want.netdev_mtu {
        out.push(match &port.netdev {
            None => at(codes::EXPECT_MTU, Severity::Fail, format!("no netdev to have MTU {mtu}"))
                .evidence("no gid_attrs/ndevs entry and no device/net interface")
                .evidence(format!("expected: netdev_mtu = {mtu}"))
                .fix("the port has no netdev: check the driver (for rxe: `rdma link add rxe0 type rxe netdev <if>`)"),
            Some(nd) => match nd.mtu {
                Some(m) if m == mtu => at(codes::EXPECT_MTU, Severity::Ok, format!("netdev {} MTU {m}, as expected", nd.name))
                    .evidence(format!("class/net/{}/mtu {m}", nd.name)),
                found => {
                    let shown = found.map_or("unknown".into(), |m| m.to_string());
                    at(codes::EXPECT_MTU, Severity::Fail, format!("netdev {} MTU {shown}, expected {mtu}", nd.name))
                        .evidence(format!("class/net/{}/mtu {shown}", nd.name))
                        .evidence(format!("expected: netdev_mtu = {mtu}"))
                        .fix(format!("`ip link set {} mtu {mtu}`, and set it in the network configuration so it survives a reboot (and the switch ports carry it)", nd.name))
                }
            },
        });
    }
    if want.ipv4_gid == Some(true) || want.ipv4_gid_index.is_some() {
        out.push(ipv4_gid(port, want.ipv4_gid_index, &subject));
    }
}

/// An IPv4-mapped RoCE v2 GID in the table, and at the index the manifest names.
fn ipv4_gid(port: &Port, index: Option<u32>, subject: &Subject) -> Diagnostic {
    let v4: Vec<_> = port
        .gids
        .iter()
        .filter(|g| g.gid_type == Some(GidType::RoceV2) && g.gid.ipv4().is_some())
        .collect();
    let listed = |v: &[&crate::model::device::GidEntry]| {
        v.iter()
            .map(|g| format!("gids/{} = {}", g.index, g.gid))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let nd = port
        .netdev
        .as_ref()
        .map_or("<netdev>".to_string(), |n| n.name.clone());
    let f = |severity, message: String| {
        Diagnostic::finding(severity, codes::EXPECT_IPV4_GID, message).about(subject.clone())
    };
    match (v4.first(), index) {
        (None, _) => f(Severity::Fail, "no IPv4 RoCE v2 GID".into())
            .evidence(format!("{} populated GID(s), none RoCE v2 with an IPv4-mapped address", port.gids.len()))
            .evidence(match index {
                Some(i) => format!("expected: ipv4_gid_index = {i}"),
                None => "expected: ipv4_gid = true".into(),
            })
            .fix(format!("give {nd} its IPv4 address (`ip addr add <addr>/<len> dev {nd}`, and in the network configuration); the kernel adds the GID when the address appears")),
        (Some(_), Some(i)) => match v4.iter().find(|g| g.index == i) {
            Some(g) => f(Severity::Ok, format!("IPv4 RoCE v2 GID at index {i}, as expected"))
                .evidence(format!("gids/{} = {}", g.index, g.gid)),
            None => f(Severity::Fail, format!("IPv4 RoCE v2 GID at index {}, expected at {i}", v4[0].index))
                .evidence(listed(&v4))
                .evidence(format!("expected: ipv4_gid_index = {i}"))
                .fix(format!("jobs that pin GID index {i} (NCCL_IB_GID_INDEX, `-x {i}`) get another GID here: use index {} on this host, or give {nd}'s addresses in the order of the good hosts (an extra address or VLAN moves the IPv4 GID)", v4[0].index)),
        },
        (Some(g), None) => f(Severity::Ok, format!("IPv4 RoCE v2 GID at index {}", g.index))
            .evidence(listed(&v4)),
    }
}

fn rate_fix(port: &Port) -> String {
    let nd = port.netdev.as_ref().map(|n| n.name.as_str());
    format!(
        "the link trained below its speed or width: reseat or replace the cable or transceiver and check the switch port{}; `mlxlink -d <pci>` shows the lanes' errors",
        nd.map_or(" (`ibportstate`, `iblinkinfo`)".to_string(), |n| format!(" (`ethtool {n}` shows the negotiated speed)"))
    )
}

/// "4X" → 4.
fn lanes(width: &str) -> Option<u32> {
    width.trim().trim_end_matches(['X', 'x']).parse().ok()
}

fn fmt_gbps(g: f64) -> String {
    if g.fract() == 0.0 {
        format!("{g:.0}")
    } else {
        format!("{g}")
    }
}

fn memlock(facts: &DoctorFacts, want: Memlock) -> Diagnostic {
    let f = |severity, message: String| {
        Diagnostic::finding(severity, codes::EXPECT_MEMLOCK, message).about(Subject::Host)
    };
    let wanted = match want {
        Memlock::Unlimited => "unlimited".to_string(),
        Memlock::Bytes(n) => format!("{n} bytes"),
    };
    let Some(host) = &facts.host else {
        return f(
            Severity::Info,
            "memlock not judged: a captured tree has no process limits".into(),
        );
    };
    let Some(soft) = host.memlock_soft else {
        return f(
            Severity::Info,
            "memlock not judged: /proc/self/limits is unreadable".into(),
        );
    };
    let found = soft.map_or("unlimited".to_string(), |n| format!("{n} bytes"));
    let met = match (soft, want) {
        (None, _) => true,
        (Some(_), Memlock::Unlimited) => false,
        (Some(have), Memlock::Bytes(need)) => have >= need,
    };
    if met {
        f(
            Severity::Ok,
            format!("memlock {found}, at least {wanted} as expected"),
        )
        .evidence(format!("/proc/self/limits Max locked memory {found}"))
    } else {
        f(Severity::Fail, format!("memlock {found}, expected at least {wanted}"))
            .evidence(format!("/proc/self/limits Max locked memory {found}"))
            .evidence(format!("expected: min_memlock = {}", match want { Memlock::Unlimited => "\"unlimited\"".into(), Memlock::Bytes(n) => n.to_string() }))
            .fix("raise it for every login and daemon: `* - memlock unlimited` in /etc/security/limits.d/rdma.conf, and `LimitMEMLOCK=infinity` in slurmd's (or the service's) systemd unit; jobs inherit slurmd's limit unless PropagateResourceLimits says otherwise")
    }
}

fn module_finding(module: &str, seen: &ModulesSeen) -> Diagnostic {
    let f = |severity, message: String| {
        Diagnostic::finding(severity, codes::EXPECT_MODULE, message).about(Subject::Host)
    };
    match &seen.loaded {
        None => f(Severity::Info, format!("module {module} not judged: no module list"))
            .evidence(seen.source.clone()),
        Some(loaded) if loaded.iter().any(|m| m == module) => {
            f(Severity::Ok, format!("module {module} is loaded"))
                .evidence(format!("{module} in {}", seen.source))
        }
        Some(_) => f(Severity::Fail, format!("module {module} is not loaded"))
            .evidence(format!("not in {}", seen.source))
            .evidence(format!("expected: modules = [\"{module}\", ...]"))
            .fix(format!("`modprobe {module}` (dmesg says why if it fails), and list it in /etc/modules-load.d/rdma.conf so it loads at boot")),
    }
}

/// The manifest `--save-expect` writes: this host as it is, for hosts that should match it.
/// Rates and widths become minimums; every other value is exact.
pub fn manifest_of(facts: &DoctorFacts, modules: &ModulesSeen) -> Manifest {
    let device = facts
        .devices
        .iter()
        .map(|d| DeviceExpect {
            name: d.name.clone(),
            firmware: d.fw_ver.clone().filter(|v| !v.is_empty()),
            ports: d.ports.iter().map(port_expect).collect(),
        })
        .collect();
    Manifest {
        devices: Some(facts.listed.len()),
        min_memlock: facts
            .host
            .as_ref()
            .and_then(|h| h.memlock_soft)
            .map(|soft| soft.map_or(Memlock::Unlimited, Memlock::Bytes)),
        modules: modules.loaded.clone().unwrap_or_default(),
        device,
    }
}

fn port_expect(port: &Port) -> PortExpect {
    let v4 = port
        .gids
        .iter()
        .find(|g| g.gid_type == Some(GidType::RoceV2) && g.gid.ipv4().is_some());
    PortExpect {
        port: Some(port.number),
        link_layer: port.link_layer.as_ref().map(|l| l.to_string()),
        state: port.state.as_ref().map(|s| s.name().to_string()),
        min_rate_gbps: port.rate.as_ref().and_then(|r| r.gbps),
        min_width: port.rate.as_ref().and_then(|r| r.width.clone()),
        active_mtu: port.active_mtu,
        netdev_mtu: port.netdev.as_ref().and_then(|n| n.mtu),
        ipv4_gid: v4.map(|_| true),
        ipv4_gid_index: v4.map(|g| g.index),
        ignore: None,
    }
}

/// The modules `--save-expect` asks about.
pub fn known_modules() -> Vec<String> {
    KNOWN_MODULES.iter().map(|m| m.to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::expect::parse;

    fn captured(name: &str) -> DoctorFacts {
        crate::gather::doctor::gather(&crate::ctx::Ctx::fixture(name), None).unwrap()
    }

    fn judged(tree: &str, manifest: &str) -> Vec<Diagnostic> {
        let facts = captured(tree);
        let mut findings = crate::diagnose::doctor::findings(&facts);
        let modules = ModulesSeen {
            loaded: Some(vec!["rdma_rxe".into()]),
            source: "module/".into(),
        };
        judge(
            &facts,
            &modules,
            &parse("m.toml", manifest).unwrap(),
            &mut findings,
        );
        findings
    }

    fn by_code<'a>(found: &'a [Diagnostic], code: &str) -> Vec<&'a Diagnostic> {
        found.iter().filter(|f| f.code == code).collect()
    }

    #[test]
    fn a_saved_manifest_passes_on_its_own_host() {
        let facts = captured("rxe-veth-basic");
        let modules = ModulesSeen {
            loaded: Some(vec!["rdma_rxe".into()]),
            source: "module/".into(),
        };
        let m = manifest_of(&facts, &modules);
        assert_eq!(m.devices, Some(2));
        assert_eq!(m.device[0].ports[0].ipv4_gid_index, Some(1));
        assert_eq!(m.device[0].ports[0].min_rate_gbps, Some(10.0));
        let mut found = crate::diagnose::doctor::findings(&facts);
        judge(&facts, &modules, &m, &mut found);
        let expect: Vec<_> = found
            .iter()
            .filter(|f| f.code.starts_with("expect-"))
            .collect();
        assert!(expect.len() >= 10, "{expect:#?}");
        assert!(
            expect.iter().all(|f| f.severity == Severity::Ok),
            "{expect:#?}"
        );
    }

    #[test]
    fn unmet_expectations_say_expected_and_found() {
        let found = judged(
            "rxe-veth-basic",
            "devices = 3\nmodules = [\"mlx5_ib\"]\n[[device]]\nname = \"rxe*\"\n[[device.port]]\nmin_rate_gbps = 100\nmin_width = \"4X\"\nnetdev_mtu = 9000\nipv4_gid_index = 2\n[[device]]\nname = \"mlx5_*\"\n",
        );
        let count = by_code(&found, "expect-device");
        assert_eq!(count[0].message, "2 RDMA device(s), expected 3");
        assert_eq!(count[1].message, "no RDMA device matches `mlx5_*`");
        let rate = by_code(&found, "expect-port-rate");
        assert_eq!(rate.len(), 4, "two ports, rate and width each: {rate:#?}");
        assert_eq!(
            rate[0].message,
            "rate 10 Gb/sec (1X FDR10), expected at least 100 Gb/s"
        );
        assert_eq!(rate[0].label(), "rxe0/1");
        assert_eq!(rate[1].message, "width 1X, expected at least 4X");
        assert!(rate.iter().all(|f| f.severity == Severity::Fail));
        let mtu = by_code(&found, "expect-mtu");
        assert_eq!(mtu[0].message, "netdev veth0 MTU 1500, expected 9000");
        assert!(mtu[0].fix_text().contains("ip link set veth0 mtu 9000"));
        let gid = by_code(&found, "expect-ipv4-gid");
        assert_eq!(gid[0].message, "IPv4 RoCE v2 GID at index 1, expected at 2");
        assert!(gid[0].fix_text().contains("use index 1 on this host"));
        let module = by_code(&found, "expect-module");
        assert_eq!(module[0].message, "module mlx5_ib is not loaded");
    }

    #[test]
    fn a_down_port_is_one_failure_with_the_expectation_as_evidence() {
        let found = judged(
            "port-down",
            "[[device]]\nname = \"mlx5_0\"\nfirmware = \"22.36.1010\"\n[[device.port]]\nport = 1\nstate = \"ACTIVE\"\nmin_rate_gbps = 100\n",
        );
        let state = by_code(&found, "port-state");
        assert_eq!(state[0].severity, Severity::Fail);
        assert!(
            state[0]
                .evidence
                .iter()
                .any(|e| e.text == "the manifest expects state ACTIVE"),
            "{state:#?}"
        );
        assert!(by_code(&found, "expect-port-state").is_empty());
        let rate = by_code(&found, "expect-port-rate");
        assert_eq!(
            (rate[0].severity, rate[0].message.as_str()),
            (Severity::Info, "rate not judged: the port is DOWN")
        );
        let fw = by_code(&found, "expect-firmware");
        assert_eq!(fw[0].severity, Severity::Fail, "{fw:#?}");
        assert!(fw[0].message.ends_with("expected 22.36.1010"), "{fw:#?}");
    }

    /// Issue 39, item 1: an uncabled port the manifest records as DOWN is no failure (no
    /// "ok, as expected" beside a FAIL, no drain); one it ignores is not judged; one it
    /// expects ACTIVE still fails.
    #[test]
    fn a_port_the_manifest_expects_down_or_ignores_is_no_failure() {
        let fails = |found: &[Diagnostic]| {
            found
                .iter()
                .filter(|f| f.severity >= Severity::Warn)
                .map(|f| f.code.to_string())
                .collect::<Vec<_>>()
        };
        let down = judged(
            "port-down",
            "[[device]]\nname = \"mlx5_0\"\n[[device.port]]\nport = 1\nstate = \"DOWN\"\n",
        );
        assert_eq!(fails(&down), Vec::<String>::new(), "{down:#?}");
        let state = by_code(&down, "port-state");
        assert_eq!(state[0].severity, Severity::Info);
        assert!(
            state[0]
                .evidence
                .iter()
                .any(|e| e.text == "the manifest expects state DOWN (state = \"DOWN\")"),
            "{state:#?}"
        );
        assert_eq!(
            by_code(&down, "expect-port-state")[0].message,
            "state DOWN, as expected"
        );
        let ignored = judged(
            "port-down",
            "[[device]]\nname = \"mlx5_0\"\n[[device.port]]\nport = 1\nignore = true\nstate = \"ACTIVE\"\n",
        );
        assert_eq!(fails(&ignored), Vec::<String>::new(), "{ignored:#?}");
        assert!(by_code(&ignored, "expect-port-state")[0]
            .message
            .contains("not judged, as the manifest says (ignore = true)"));
        let wanted_up = judged(
            "port-down",
            "[[device]]\nname = \"mlx5_0\"\n[[device.port]]\nport = 1\nstate = \"ACTIVE\"\n",
        );
        assert!(
            fails(&wanted_up).contains(&"port-state".to_string()),
            "{wanted_up:#?}"
        );
    }

    #[test]
    fn link_layer_and_host_limits_on_a_captured_tree() {
        let found = judged(
            "ib-hca",
            "min_memlock = \"unlimited\"\nmodules = [\"rdma_rxe\"]\n[[device]]\nname = \"mlx5_0\"\n[[device.port]]\nport = 1\nlink_layer = \"Ethernet\"\nmin_width = \"4X\"\n[[device]]\nname = \"mlx5_1\"\n[[device.port]]\nport = 2\n",
        );
        let ll = by_code(&found, "expect-link-layer");
        assert_eq!(ll[0].message, "link layer InfiniBand, expected Ethernet");
        assert!(ll[0].fix_text().contains("LINK_TYPE_P1"));
        assert_eq!(
            by_code(&found, "expect-port-rate")[0].severity,
            Severity::Ok
        );
        assert_eq!(
            by_code(&found, "expect-memlock")[0].severity,
            Severity::Info
        );
        assert_eq!(by_code(&found, "expect-module")[0].severity, Severity::Ok);
        assert_eq!(
            by_code(&found, "expect-device")[0].message,
            "mlx5_1 has no port 2"
        );
    }

    #[test]
    fn names_are_patterns() {
        assert!(name_matches("mlx5_*", "mlx5_2"));
        assert!(name_matches("mlx5_[0-3]", "mlx5_3"));
        assert!(!name_matches("mlx5_[0-3]", "mlx5_4"));
        assert!(name_matches("rxe0", "rxe0"));
        assert!(!name_matches("rxe0", "rxe01"));
    }
}
