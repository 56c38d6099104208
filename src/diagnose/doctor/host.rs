//! The host's side of doctor: the RDMA core and its devices, the uverbs nodes, libibverbs
//! and its providers, the locked-memory limit.

use super::finding;
use crate::diagnose::device_node;
use crate::error::Error;
use crate::model::codes;
use crate::model::device::Device;
use crate::model::diagnostic::{Diagnostic, Seen, Severity, Subject};
use crate::model::doctor::{provider_for, NoDeviceHint, NodeAccess, ProviderFiles};

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

impl NoDeviceHint {
    fn fix(&self) -> String {
        let netdev = self.netdev.as_deref().unwrap_or("<if>");
        match &self.rxe_loaded {
            Some(_) => format!("rdma_rxe is loaded: create a Soft-RoCE device on an up netdev, `rdma link add rxe0 type rxe netdev {netdev}`; or load the NIC's RDMA driver (mlx5_ib, irdma, bnxt_re, ...)"),
            None => format!("load the NIC's RDMA driver (mlx5_ib, irdma, bnxt_re, ...), or for Soft-RoCE: modprobe rdma_rxe; rdma link add rxe0 type rxe netdev {netdev}"),
        }
    }
}

/// `class/infiniband` and what is in it.
pub fn kernel_finding(
    sysfs_dir: &str,
    devices: Result<&[Device], &Error>,
    hint: &NoDeviceHint,
) -> Diagnostic {
    let rxe = |f: Diagnostic| match &hint.rxe_loaded {
        Some(seen) => f.evidence(format!(
            "rdma_rxe is loaded ({seen}) but no rxe device was added"
        )),
        None => f,
    };
    match devices {
        Ok([]) => rxe(finding(
            codes::KERNEL,
            Subject::Host,
            Severity::Fail,
            "the RDMA core is loaded but no device is registered",
        )
        .evidence(format!("{sysfs_dir} is empty")))
        .fix(hint.fix()),
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
        Err(Error::NoRdma { path }) => rxe(finding(
            codes::KERNEL,
            Subject::Host,
            Severity::Fail,
            "no RDMA support in the kernel: no driver is loaded",
        )
        .evidence(format!("{} does not exist", path.display())))
        .fix(hint.fix()),
        Err(other) => finding(
            codes::KERNEL,
            Subject::Host,
            Severity::Fail,
            format!("cannot list RDMA devices: {other}"),
        )
        .evidence(format!("reading {sysfs_dir}")),
    }
}

pub fn uverbs_finding(device: &str, access: &NodeAccess) -> Diagnostic {
    let check = codes::UVERBS;
    let subject = || Subject::Device(device.to_string());
    match access {
        NodeAccess::NoMapping => finding(check.clone(), subject(), Severity::Fail, "no user-space verbs node: the device cannot be used from applications")
            .evidence(format!("no class/infiniband_verbs/uverbsN has ibdev {device}"))
            .fix("load ib_uverbs (modprobe ib_uverbs)"),
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
        // A renamed rxe device: its node_desc still says rxe.
        assert_eq!(provider_for(None, Some("rxe"), "roce7"), Some("rxe"));
        {}
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
