//! The host's side of doctor: the RDMA core and its devices, the uverbs nodes, libibverbs
//! and its providers, the locked-memory limit.

use super::finding;
use crate::diagnose::device_node;
use crate::error::Error;
use crate::model::codes;
use crate::model::device::Device;
use crate::model::diagnostic::{Diagnostic, Seen, Severity, Subject};
use crate::model::doctor::{
    modules_for, provider_for, NetFunction, NoDeviceHint, NodeAccess, ProviderFiles, RdmaModule,
    RDMA_MODULES,
};

/// The largest whole-page message size that fits `bytes`, as a -s value.
fn largest_size(bytes: u64) -> u64 {
    (bytes / 4096 * 4096).max(8)
}

pub fn human_bytes(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}

/// What the memlock check needs. rdma-core warns at 32 KiB or less; real workloads
/// need far more, so anything under the planned registration is a failure.
pub fn memlock_finding(
    soft_limit: Option<Option<u64>>,
    cap_ipc_lock: Option<bool>,
    euid_root: bool,
    needed: u64,
) -> Diagnostic {
    let subject = Subject::Host;
    let Some(limit) = soft_limit else {
        return finding(
            codes::MEMLOCK,
            subject,
            Severity::Warn,
            "cannot read RLIMIT_MEMLOCK",
        )
        .evidence("no 'Max locked memory' line in /proc/self/limits");
    };
    let shown = limit.map_or("unlimited".to_string(), human_bytes);
    let evidence = format!(
        "RLIMIT_MEMLOCK soft limit {shown}; CAP_IPC_LOCK {}",
        match cap_ipc_lock {
            Some(true) => "held",
            Some(false) => "not held",
            None => "unknown",
        }
    );
    if cap_ipc_lock == Some(true) || euid_root && cap_ipc_lock != Some(false) {
        return finding(
            codes::MEMLOCK,
            subject,
            Severity::Ok,
            "memory registration is not limited (CAP_IPC_LOCK)",
        )
        .evidence(evidence);
    }
    match limit {
        None => finding(codes::MEMLOCK, subject, Severity::Ok, "locked memory is unlimited").evidence(evidence),
        Some(bytes) if bytes < needed => finding(
            codes::MEMLOCK,
            subject,
            Severity::Fail,
            format!("locked-memory limit {shown} is below the {} a test registers: ibv_reg_mr will fail with ENOMEM", human_bytes(needed)),
        )
        .evidence(evidence)
        .fix("raise it: `ulimit -l unlimited`, `memlock unlimited` in /etc/security/limits.conf, LimitMEMLOCK=infinity in the systemd unit, or --ulimit memlock=-1 for containers"),
        Some(bytes) if bytes <= 64 << 20 => finding(
            codes::MEMLOCK,
            subject,
            Severity::Warn,
            format!(
                "locked-memory limit {shown} holds rdmactl's default runs (-s 4096), up to about selftest -s {} and pingpong -s {} (they pin 4× and 2× the message size), but it is small for real workloads (MPI, NCCL, storage)",
                largest_size(bytes / 4),
                largest_size(bytes / 2)
            ),
        )
        .evidence(evidence)
        .fix("raise it: `memlock unlimited` in /etc/security/limits.conf or LimitMEMLOCK=infinity in the systemd unit"),
        Some(_) => finding(codes::MEMLOCK, subject, Severity::Ok, format!("locked-memory limit {shown}")).evidence(evidence),
    }
}

/// Why no RDMA device is registered, from what is loaded and what is plugged in: the one
/// wording of doctor's kernel finding and of the "no RDMA devices" error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoDeviceCause {
    pub message: String,
    pub evidence: Vec<String>,
    pub fix: String,
}

fn function_label(f: &NetFunction) -> String {
    let mut s = format!("{} {:04x}:{:04x}", f.bdf, f.vendor, f.device);
    s.push_str(&format!(
        " {}",
        f.driver.as_deref().unwrap_or("(no driver)")
    ));
    if !f.netdevs.is_empty() {
        s.push_str(&format!(" {}", f.netdevs.join(",")));
    }
    s
}

fn soft_roce(hint: &NoDeviceHint) -> String {
    let netdev = hint.netdev.as_deref().unwrap_or("<if>");
    match &hint.rxe_loaded {
        Some(_) => format!(
            "for Soft-RoCE on {netdev} (rdma_rxe is loaded): `rdma link add rxe0 type rxe netdev {netdev}`"
        ),
        None => format!(
            "for Soft-RoCE on {netdev}: `modprobe rdma_rxe; rdma link add rxe0 type rxe netdev {netdev}`"
        ),
    }
}

/// The verdict, in the order the evidence decides it: a NIC whose RDMA module is not
/// loaded (name that module); a NIC whose module is loaded but registered nothing (its
/// probe failed: dmesg); no RDMA-capable function at all (no RDMA NIC: Soft-RoCE or
/// another host), naming loaded modules that have nothing to drive; and, where the tree
/// has no `bus/pci/devices`, what is unknown.
pub fn no_device_cause(hint: &NoDeviceHint) -> NoDeviceCause {
    let mut evidence = Vec::new();
    let loaded: Vec<&str> = hint
        .rdma_modules
        .iter()
        .flatten()
        .map(String::as_str)
        .collect();
    match &hint.rdma_modules {
        Some(m) if m.is_empty() => evidence.push(format!(
            "no RDMA provider module under {} (of {})",
            hint.module_dir,
            RDMA_MODULES
                .iter()
                .map(|m| m.module)
                .collect::<Vec<_>>()
                .join(", ")
        )),
        Some(m) => evidence.push(format!(
            "RDMA provider modules loaded ({}): {}",
            hint.module_dir,
            m.join(", ")
        )),
        None => evidence.push(format!(
            "{} is not there: which RDMA modules are loaded is unknown",
            hint.module_dir
        )),
    }
    if let Some(seen) = &hint.rxe_loaded {
        evidence.push(format!(
            "rdma_rxe is loaded ({seen}) but no rxe device was added"
        ));
    }
    let Some(functions) = &hint.net_functions else {
        evidence.push(format!(
            "{} is not there: which NICs this host has is unknown",
            hint.pci_dir
        ));
        return NoDeviceCause {
            message: "which NIC should carry RDMA here is unknown (no PCI functions were read)"
                .to_string(),
            evidence,
            fix: format!(
                "find the NIC (`lspci -nn | grep -iE 'ethernet|infiniband'`) and load the RDMA module of its vendor ({}); or {}",
                {
                    // One module per vendor: the first of the table's for it.
                    let mut seen: Vec<u16> = Vec::new();
                    RDMA_MODULES
                        .iter()
                        .filter(|m| m.vendors.first().is_some_and(|v| {
                            let new = !seen.contains(v);
                            seen.push(*v);
                            new
                        }))
                        .take(4)
                        .map(|m| format!("{} for {} {:04x}", m.module, m.vendor_name, m.vendors[0]))
                        .collect::<Vec<_>>()
                        .join(", ")
                },
                soft_roce(hint)
            ),
        };
    };
    evidence.push(if functions.is_empty() {
        format!(
            "no PCI network or InfiniBand function under {}",
            hint.pci_dir
        )
    } else {
        format!(
            "PCI network functions ({}): {}",
            hint.pci_dir,
            functions
                .iter()
                .map(function_label)
                .collect::<Vec<_>>()
                .join("; ")
        )
    });
    // A NIC whose RDMA module is not loaded: the module to load is known.
    let missing: Vec<(&NetFunction, &RdmaModule)> = functions
        .iter()
        .filter_map(|f| {
            let mods = modules_for(f);
            (!mods.iter().any(|m| loaded.contains(&m.module)))
                .then(|| mods.first().map(|m| (f, *m)))
                .flatten()
        })
        .collect();
    if !missing.is_empty() {
        let mut modules: Vec<&str> = missing.iter().map(|(_, m)| m.module).collect();
        modules.dedup();
        return NoDeviceCause {
            message: missing
                .iter()
                .map(|(f, m)| format!(
                    "{} ({} NIC) is here but {} is not loaded",
                    function_label(f),
                    m.vendor_name,
                    m.module
                ))
                .collect::<Vec<_>>()
                .join("; "),
            evidence,
            fix: format!(
                "`modprobe {}`, then `rdmactl devices`; if no device appears, `dmesg | grep -i {}` says why the probe failed",
                modules.join(" "),
                modules[0]
            ),
        };
    }
    // A NIC whose module is loaded and yet registered nothing: its probe failed.
    let driven: Vec<(&NetFunction, &RdmaModule)> = functions
        .iter()
        .filter_map(|f| {
            modules_for(f)
                .into_iter()
                .find(|m| loaded.contains(&m.module))
                .map(|m| (f, m))
        })
        .collect();
    if let Some((f, m)) = driven.first() {
        return NoDeviceCause {
            message: format!(
                "{} is loaded and {} ({} NIC) is here, yet no RDMA device was registered: the driver's probe of it failed or RDMA is disabled on it",
                m.module,
                function_label(f),
                m.vendor_name
            ),
            evidence,
            fix: format!(
                "`dmesg | grep -iE '{}|{}'` for the probe's error (firmware, RoCE disabled, a failed reset); reloading the module (`modprobe -r {} && modprobe {}`) retries the probe",
                m.module,
                f.bdf,
                m.module,
                m.module
            ),
        };
    }
    // No function any hardware RDMA module drives: no RDMA NIC here.
    let idle: Vec<String> = RDMA_MODULES
        .iter()
        .filter(|m| !m.vendors.is_empty() && loaded.contains(&m.module))
        .map(|m| {
            let vendors: Vec<String> = m.vendors.iter().map(|v| format!("{v:04x}")).collect();
            format!(
                "{} is loaded but no PCI function of vendor {} ({}) exists",
                m.module,
                vendors.join("/"),
                m.vendor_name
            )
        })
        .collect();
    let nics = if functions.is_empty() {
        "no PCI network function at all".to_string()
    } else {
        format!(
            "network functions: {}",
            functions
                .iter()
                .map(function_label)
                .collect::<Vec<_>>()
                .join("; ")
        )
    };
    let no_nic = format!("this host has no RDMA NIC ({nics})");
    NoDeviceCause {
        message: if idle.is_empty() {
            no_nic
        } else {
            format!("{}: {no_nic}", idle.join("; "))
        },
        evidence,
        fix: format!("{}; or run on a host with an RDMA NIC", soft_roce(hint)),
    }
}

/// `class/infiniband` and what is in it.
pub fn kernel_finding(
    sysfs_dir: &str,
    devices: Result<&[Device], &Error>,
    hint: &NoDeviceHint,
) -> Diagnostic {
    let with_cause = |f: Diagnostic, cause: NoDeviceCause| {
        cause
            .evidence
            .into_iter()
            .fold(f, |f, e| f.evidence(e))
            .fix(cause.fix)
    };
    match devices {
        Ok([]) => {
            let cause = no_device_cause(hint);
            with_cause(
                finding(
                    codes::KERNEL,
                    Subject::Host,
                    Severity::Fail,
                    format!(
                        "the RDMA core is loaded but no device is registered: {}",
                        cause.message
                    ),
                )
                .evidence(format!("{sysfs_dir} is empty")),
                cause,
            )
        }
        Ok(devs) => {
            let names: Vec<&str> = devs.iter().map(|d| d.name.as_str()).collect();
            finding(
                codes::KERNEL,
                Subject::Host,
                Severity::Ok,
                format!("{} RDMA device(s): {}", devs.len(), names.join(", ")),
            )
            .evidence(format!("{sysfs_dir} lists {}", names.join(", ")))
        }
        Err(Error::NoRdma { path }) => {
            let cause = no_device_cause(hint);
            with_cause(
                finding(
                    codes::KERNEL,
                    Subject::Host,
                    Severity::Fail,
                    format!(
                        "no RDMA support in the kernel (ib_core is not loaded): {}",
                        cause.message
                    ),
                )
                .evidence(format!("{} does not exist", path.display())),
                cause,
            )
        }
        Err(other) => finding(
            codes::KERNEL,
            Subject::Host,
            Severity::Fail,
            format!("cannot list RDMA devices: {other}"),
        )
        .evidence(format!("reading {sysfs_dir}")),
    }
}

/// The "no RDMA devices" error of every command that lists devices, worded by the same
/// rule as doctor's kernel finding. `core_loaded`: `class/infiniband` exists (empty);
/// else it does not (ib_core is not loaded).
pub fn no_devices_explanation(
    class_dir: &str,
    core_loaded: bool,
    hint: &NoDeviceHint,
) -> Diagnostic {
    let cause = no_device_cause(hint);
    let what = if core_loaded {
        format!("{class_dir} is empty, so no driver registered a device")
    } else {
        format!("{class_dir} does not exist, so the RDMA core (ib_core) is not loaded")
    };
    cause.evidence.into_iter().fold(
        Diagnostic::explanation(
            codes::KERNEL,
            format!("no RDMA devices: {what}: {}", cause.message),
            cause.fix,
        ),
        |d, e| d.evidence(e),
    )
}

pub fn uverbs_finding(device: &str, access: &NodeAccess) -> Diagnostic {
    let check = codes::UVERBS;
    let subject = || Subject::Device(device.to_string());
    match access {
        NodeAccess::NoMapping => finding(check.clone(), subject(), Severity::Fail, "no user-space verbs node: the device cannot be used from applications")
            .evidence(format!("no class/infiniband_verbs/uverbsN has ibdev {device}"))
            .fix("load ib_uverbs (modprobe ib_uverbs)"),
        NodeAccess::Removing(r) => crate::diagnose::removal::finding(r),
        NodeAccess::Missing { path } => finding(check.clone(), subject(), Severity::Fail, format!("{path} does not exist: libibverbs silently skips the device"))
            .evidence(format!("sysfs maps {device} to {path}, which is not in /dev"))
            .fix("in a container, pass the device in (--device=/dev/infiniband/...); on a host, check udev (rdma-core's 90-rdma-*.rules)"),
        // libibverbs lists a device whose node exists (it only stats it); the open is what
        // fails, so the provider finding's "libibverbs sees" stands beside this one.
        NodeAccess::Denied(node) => {
            let r = device_node::refusal(node, None).unwrap_or_else(|| device_node::Refusal {
                message: format!("{} cannot be opened read-write", node.path),
                evidence: Vec::new(),
                fix: format!("compare `ls -l {}` with `id`", node.path),
            });
            r.evidence.into_iter().fold(
                finding(check.clone(), subject(), Severity::Fail, format!("{}: libibverbs lists {device}, but no program run as this user can open it", r.message)),
                |f, e| f.evidence(e),
            )
            .fix(r.fix)
        }
        NodeAccess::Usable { path } => finding(check.clone(), subject(), Severity::Ok, format!("{path} is readable and writable"))
            .evidence(format!("open({path}, O_RDWR) succeeded")),
    }
}

pub fn library_finding(status: Result<(), String>) -> Diagnostic {
    match status {
        Ok(()) => finding(codes::LIBIBVERBS, Subject::Host, Severity::Ok, "libibverbs.so.1 is loaded").evidence("dlopen(libibverbs.so.1) succeeded"),
        Err(reason) => finding(codes::LIBIBVERBS, Subject::Host, Severity::Fail, "libibverbs.so.1 cannot be loaded: no application can use RDMA")
            .evidence(reason)
            .fix("install it: Debian/Ubuntu `apt install libibverbs1 ibverbs-providers`, RHEL `dnf install libibverbs`"),
    }
}

/// `ibv_get_device_list` itself failed: `libibverbs`'s finding, from this one file.
pub fn device_list_failed(error: &str) -> Diagnostic {
    finding(
        codes::LIBIBVERBS,
        Subject::Host,
        Severity::Fail,
        "ibv_get_device_list failed",
    )
    .evidence(error)
    .fix("see the evidence; `rdmactl doctor` checks above show the kernel side")
}

/// A sysfs device that `ibv_get_device_list` does not return has no usable provider.
pub fn provider_finding(
    device: &Device,
    verbs_devices: &[String],
    provider_files: &ProviderFiles,
) -> Diagnostic {
    let provider = provider_for(
        device.driver.as_deref(),
        device.node_desc.as_deref(),
        &device.name,
    );
    let name = provider.unwrap_or("?");
    let mut evidence = vec![format!(
        "kernel driver {}; provider {name}",
        device
            .driver
            .as_deref()
            .unwrap_or("(none, software device)")
    )];
    if let Some(lib) = &provider_files.library {
        evidence.push(format!("provider library {lib}"));
    }
    if let Some(driver_file) = &provider_files.driver_file {
        evidence.push(format!("{driver_file} present"));
    }
    if verbs_devices.iter().any(|d| d == &device.name) {
        return Diagnostic {
            evidence: evidence.into_iter().map(Seen::gathered).collect(),
            ..finding(
                codes::PROVIDER,
                Subject::Device(device.name.clone()),
                Severity::Ok,
                format!("libibverbs sees {} (provider {name})", device.name),
            )
        };
    }
    evidence.insert(
        0,
        format!(
            "in sysfs but not in ibv_get_device_list ({})",
            if verbs_devices.is_empty() {
                "empty".to_string()
            } else {
                verbs_devices.join(", ")
            }
        ),
    );
    let missing = match (&provider_files.library, &provider_files.driver_file) {
        (None, _) => format!("lib{name}-rdmav*.so is not installed"),
        (Some(_), None) => format!("/etc/libibverbs.d/{name}.driver is missing"),
        (Some(_), Some(_)) => "the provider is installed but did not claim the device".to_string(),
    };
    Diagnostic {
        evidence: evidence.into_iter().map(Seen::gathered).collect(),
        ..finding(
            codes::PROVIDER,
            Subject::Device(device.name.clone()),
            Severity::Fail,
            format!("libibverbs has no provider for {}: {missing}", device.name),
        )
        .fix("install the provider package: Debian/Ubuntu `apt install ibverbs-providers`, RHEL `dnf install libibverbs`; an rdma-core much older than the kernel driver may not know the device")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With no device, the fix says what is left to do: with rdma_rxe loaded only the
    /// `rdma link add`, on a netdev that is up.
    #[test]
    fn no_device_fix_follows_what_is_loaded() {
        let none: &[Device] = &[];
        let plain = kernel_finding("/sys/class/infiniband", Ok(none), &NoDeviceHint::default());
        assert!(plain
            .fix
            .as_deref()
            .unwrap()
            .contains("modprobe rdma_rxe; rdma link add rxe0 type rxe netdev <if>"));
        let hint = NoDeviceHint {
            rxe_loaded: Some("/proc/modules lists rdma_rxe".into()),
            netdev: Some("eth0".into()),
            ..NoDeviceHint::default()
        };
        let f = kernel_finding("/sys/class/infiniband", Ok(none), &hint);
        let fix = f.fix.as_deref().unwrap();
        assert!(!fix.contains("modprobe"), "{fix}");
        assert!(
            fix.contains("`rdma link add rxe0 type rxe netdev eth0`"),
            "{fix}"
        );
        assert!(f
            .evidence
            .iter()
            .any(|e| e.contains("rdma_rxe is loaded (/proc/modules lists rdma_rxe)")));
    }

    fn function(
        bdf: &str,
        class: u32,
        vendor: u16,
        device: u16,
        driver: &str,
        net: &[&str],
    ) -> NetFunction {
        NetFunction {
            bdf: bdf.into(),
            class,
            vendor,
            device,
            driver: Some(driver.into()),
            netdevs: net.iter().map(|n| n.to_string()).collect(),
        }
    }

    /// The H100 host (Firecracker, kernel 6.18): ib_core, mlx5_core and mlx5_ib loaded, no
    /// Mellanox function, one virtio-net. The true cause is "no RDMA NIC", never "load
    /// mlx5_ib".
    fn h100() -> NoDeviceHint {
        NoDeviceHint {
            rxe_loaded: None,
            netdev: Some("eth0".into()),
            rdma_modules: Some(vec!["mlx5_ib".into()]),
            net_functions: Some(vec![function(
                "0000:00:03.0",
                0x020000,
                0x1af4,
                0x1041,
                "virtio-pci",
                &["eth0"],
            )]),
            module_dir: "/sys/module".into(),
            pci_dir: "/sys/bus/pci/devices".into(),
        }
    }

    #[test]
    fn a_loaded_mlx5_ib_without_a_mellanox_function_is_no_rdma_nic() {
        let none: &[Device] = &[];
        let f = kernel_finding("/sys/class/infiniband", Ok(none), &h100());
        let text = format!("{} {:?} {}", f.message, f.evidence, f.fix_text());
        assert!(
            f.message.contains("mlx5_ib is loaded but no PCI function of vendor 15b3 (Mellanox/NVIDIA) exists: this host has no RDMA NIC (network functions: 0000:00:03.0 1af4:1041 virtio-pci eth0)"),
            "{text}"
        );
        assert!(
            text.contains("RDMA provider modules loaded (/sys/module): mlx5_ib"),
            "{text}"
        );
        assert!(f.fix_text().contains("for Soft-RoCE on eth0: `modprobe rdma_rxe; rdma link add rxe0 type rxe netdev eth0`"), "{text}");
        for wrong in [
            "load the NIC's RDMA driver",
            "modprobe mlx5_ib",
            "(mlx5_ib, irdma",
        ] {
            assert!(!text.contains(wrong), "{wrong:?} in {text}");
        }
        let e = no_devices_explanation("/sys/class/infiniband", true, &h100());
        assert!(e.message.starts_with("no RDMA devices: /sys/class/infiniband is empty, so no driver registered a device: mlx5_ib is loaded but no PCI function of vendor 15b3"), "{}", e.message);
    }

    /// A NIC whose RDMA module is not loaded: that module, and only it, is named.
    #[test]
    fn a_nic_without_its_rdma_module_names_that_module() {
        let mut hint = h100();
        hint.rdma_modules = Some(Vec::new());
        hint.net_functions = Some(vec![function(
            "0000:3b:00.0",
            0x020000,
            0x15b3,
            0x1017,
            "mlx5_core",
            &["ens1f0"],
        )]);
        let c = no_device_cause(&hint);
        assert!(c.message.contains("0000:3b:00.0 15b3:1017 mlx5_core ens1f0 (Mellanox/NVIDIA NIC) is here but mlx5_ib is not loaded"), "{c:?}");
        assert!(c.fix.starts_with("`modprobe mlx5_ib`"), "{c:?}");
        assert!(
            !c.fix.contains("irdma") && !c.fix.contains("bnxt_re"),
            "{c:?}"
        );
        // Loaded, yet nothing registered: the probe, not the module.
        hint.rdma_modules = Some(vec!["mlx5_ib".into()]);
        let c = no_device_cause(&hint);
        assert!(
            c.message.contains("mlx5_ib is loaded and 0000:3b:00.0"),
            "{c:?}"
        );
        assert!(!c.fix.contains("`modprobe mlx5_ib`"), "{c:?}");
        // An Intel function on igb is no irdma NIC.
        hint.rdma_modules = Some(Vec::new());
        hint.net_functions = Some(vec![function(
            "0000:00:19.0",
            0x020000,
            0x8086,
            0x15b8,
            "e1000e",
            &["eno1"],
        )]);
        let c = no_device_cause(&hint);
        assert!(c.message.contains("this host has no RDMA NIC"), "{c:?}");
        assert!(!c.fix.contains("irdma"), "{c:?}");
    }

    #[test]
    fn providers() {
        let cases = [
            (Some("mlx5_core"), "mlx5_0", Some("mlx5")),
            (None, "rxe0", Some("rxe")),
            (None, "siw_eth0", Some("siw")),
            (Some("bnxt_en"), "bnxt_re0", Some("bnxt_re")),
            (Some("hfi1"), "hfi1_0", Some("hfi1verbs")),
            (None, "mystery0", None),
        ];
        for (driver, dev, want) in cases {
            assert_eq!(provider_for(driver, None, dev), want, "{driver:?} {dev}");
        }
        // A renamed rxe device: its node_desc still says rxe (`is_soft_roce`'s rule), and
        // so does a renamed siw device's.
        assert_eq!(provider_for(None, Some("rxe"), "roce7"), Some("rxe"));
        assert_eq!(provider_for(None, Some("siw\n"), "iw7"), Some("siw"));
        // A device bound to a driver is hardware, whatever its name says.
        assert_eq!(provider_for(Some("newnic"), Some("rxe"), "rxe0"), None);
    }

    #[test]
    fn memlock_verdicts() {
        let need = 64 << 10;
        let v = |limit, cap, root| memlock_finding(limit, cap, root, need).severity;
        assert_eq!(v(Some(Some(16 << 10)), Some(false), false), Severity::Fail);
        assert_eq!(v(Some(Some(16 << 10)), Some(true), false), Severity::Ok);
        assert_eq!(v(Some(Some(8 << 20)), Some(false), false), Severity::Warn);
        assert_eq!(v(Some(None), Some(false), false), Severity::Ok);
        assert_eq!(v(None, None, false), Severity::Warn);
        let fail = memlock_finding(Some(Some(16 << 10)), Some(false), false, need);
        assert!(
            fail.message.contains("16 KiB") && fail.message.contains("ENOMEM"),
            "{}",
            fail.message
        );
        assert!(fail.fix.unwrap().contains("limits.conf"));
    }
}
