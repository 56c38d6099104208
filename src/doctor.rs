//! `rdmactl doctor`: pre-flight checks in the order a person debugs an RDMA host.
//! Gathering (sysfs, /dev, /proc, verbs) happens in `cmd::doctor`; this module holds the
//! facts it gathered and the pure rules that turn them into findings.

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Ok,
    Warn,
    Fail,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// Stable identifier of the check, e.g. `memlock`, `port-state`.
    pub check: &'static str,
    /// What was checked: a device, `dev/port`, a netdev, or the host.
    pub subject: String,
    pub verdict: Verdict,
    pub summary: String,
    pub evidence: Vec<String>,
    /// One line saying what to change; None when nothing needs to change.
    pub fix: Option<String>,
}

impl Finding {
    fn new(check: &'static str, subject: impl Into<String>, verdict: Verdict, summary: impl Into<String>) -> Self {
        Finding { check, subject: subject.into(), verdict, summary: summary.into(), evidence: Vec::new(), fix: None }
    }

    fn evidence(mut self, line: impl Into<String>) -> Self {
        self.evidence.push(line.into());
        self
    }

    fn fix(mut self, fix: impl Into<String>) -> Self {
        self.fix = Some(fix.into());
        self
    }
}

/// `Max locked memory` from /proc/self/limits: None means unlimited.
pub fn parse_memlock_soft_limit(limits: &str) -> Option<Option<u64>> {
    let line = limits.lines().find(|l| l.starts_with("Max locked memory"))?;
    let soft = line["Max locked memory".len()..].split_whitespace().next()?;
    if soft == "unlimited" {
        Some(None)
    } else {
        soft.parse().ok().map(Some)
    }
}

/// Whether CapEff in /proc/self/status holds CAP_IPC_LOCK (bit 14).
pub fn parse_has_cap_ipc_lock(status: &str) -> Option<bool> {
    const CAP_IPC_LOCK: u32 = 14;
    let hex = status.lines().find_map(|l| l.strip_prefix("CapEff:"))?.trim();
    u64::from_str_radix(hex, 16).ok().map(|caps| caps & (1 << CAP_IPC_LOCK) != 0)
}

/// The libibverbs provider that serves a device, from the kernel driver bound to its
/// parent (PCI) device, or, for software devices without one, from the device name.
/// The provider name is what `/etc/libibverbs.d/<name>.driver` and
/// `lib<name>-rdmav*.so` use.
pub fn provider_for(kernel_driver: Option<&str>, device: &str) -> Option<&'static str> {
    const BY_DRIVER: &[(&str, &str)] = &[
        ("mlx5_core", "mlx5"),
        ("mlx4_core", "mlx4"),
        ("ib_mthca", "mthca"),
        ("irdma", "irdma"),
        ("i40e", "irdma"),
        ("ice", "irdma"),
        ("bnxt_en", "bnxt_re"),
        ("bnxt_re", "bnxt_re"),
        ("qede", "qedr"),
        ("qedr", "qedr"),
        ("hfi1", "hfi1verbs"),
        ("ib_qib", "ipathverbs"),
        ("efa", "efa"),
        ("cxgb4", "cxgb4"),
        ("hns3", "hns"),
        ("hns_roce_hw_v2", "hns"),
        ("vmw_pvrdma", "vmw_pvrdma"),
        ("ocrdma", "ocrdma"),
        ("be2net", "ocrdma"),
        ("mana", "mana"),
        ("erdma", "erdma"),
    ];
    const BY_NAME_PREFIX: &[(&str, &str)] = &[
        ("rxe", "rxe"),
        ("siw", "siw"),
        ("mlx5_", "mlx5"),
        ("mlx4_", "mlx4"),
        ("mthca", "mthca"),
        ("irdma", "irdma"),
        ("bnxt_re", "bnxt_re"),
        ("qedr", "qedr"),
        ("hfi1_", "hfi1verbs"),
        ("qib", "ipathverbs"),
        ("efa_", "efa"),
        ("cxgb4_", "cxgb4"),
        ("hns_", "hns"),
        ("vmw_pvrdma", "vmw_pvrdma"),
        ("ocrdma", "ocrdma"),
        ("mana_", "mana"),
        ("erdma_", "erdma"),
    ];
    kernel_driver
        .and_then(|d| BY_DRIVER.iter().find(|(k, _)| *k == d))
        .or_else(|| BY_NAME_PREFIX.iter().find(|(p, _)| device.starts_with(p)))
        .map(|(_, provider)| *provider)
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
pub fn memlock_finding(soft_limit: Option<Option<u64>>, cap_ipc_lock: Option<bool>, euid_root: bool, needed: u64) -> Finding {
    let subject = "host";
    let Some(limit) = soft_limit else {
        return Finding::new("memlock", subject, Verdict::Warn, "cannot read RLIMIT_MEMLOCK")
            .evidence("no 'Max locked memory' line in /proc/self/limits");
    };
    let shown = limit.map_or("unlimited".to_string(), human_bytes);
    let evidence = format!("RLIMIT_MEMLOCK soft limit {shown}; CAP_IPC_LOCK {}", match cap_ipc_lock {
        Some(true) => "held",
        Some(false) => "not held",
        None => "unknown",
    });
    if cap_ipc_lock == Some(true) || euid_root && cap_ipc_lock != Some(false) {
        return Finding::new("memlock", subject, Verdict::Ok, "memory registration is not limited (CAP_IPC_LOCK)")
            .evidence(evidence);
    }
    match limit {
        None => Finding::new("memlock", subject, Verdict::Ok, "locked memory is unlimited").evidence(evidence),
        Some(bytes) if bytes < needed => Finding::new(
            "memlock",
            subject,
            Verdict::Fail,
            format!("locked-memory limit {shown} is below the {} a test registers: ibv_reg_mr will fail with ENOMEM", human_bytes(needed)),
        )
        .evidence(evidence)
        .fix("raise it: `ulimit -l unlimited`, `memlock unlimited` in /etc/security/limits.conf, LimitMEMLOCK=infinity in the systemd unit, or --ulimit memlock=-1 for containers"),
        Some(bytes) if bytes <= 64 << 20 => Finding::new(
            "memlock",
            subject,
            Verdict::Warn,
            format!("locked-memory limit {shown} is enough for rdmactl but small for real workloads (MPI, NCCL, storage)"),
        )
        .evidence(evidence)
        .fix("raise it: `memlock unlimited` in /etc/security/limits.conf or LimitMEMLOCK=infinity in the systemd unit"),
        Some(_) => Finding::new("memlock", subject, Verdict::Ok, format!("locked-memory limit {shown}")).evidence(evidence),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: &str = "Limit                     Soft Limit           Hard Limit           Units     \n\
Max cpu time              unlimited            unlimited            seconds   \n\
Max locked memory         16384                16384                bytes     \n";

    #[test]
    fn memlock_limit_forms() {
        assert_eq!(parse_memlock_soft_limit(LIMITS), Some(Some(16384)));
        let unlimited = LIMITS.replace("16384                16384", "unlimited            unlimited");
        assert_eq!(parse_memlock_soft_limit(&unlimited), Some(None));
        assert_eq!(parse_memlock_soft_limit("Max cpu time unlimited"), None);
        assert_eq!(parse_memlock_soft_limit("Max locked memory  lots"), None);
    }

    #[test]
    fn cap_ipc_lock_bit() {
        assert_eq!(parse_has_cap_ipc_lock("CapEff:\t000001fffeffffff\n"), Some(true));
        assert_eq!(parse_has_cap_ipc_lock("CapEff:\t0000000000000000\n"), Some(false));
        assert_eq!(parse_has_cap_ipc_lock("CapEff:\t0000000000004000\n"), Some(true));
        assert_eq!(parse_has_cap_ipc_lock("CapPrm:\t0000000000004000\n"), None);
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
            assert_eq!(provider_for(driver, dev), want, "{driver:?} {dev}");
        }
    }

    #[test]
    fn memlock_verdicts() {
        let need = 64 << 10;
        let v = |limit, cap, root| memlock_finding(limit, cap, root, need).verdict;
        assert_eq!(v(Some(Some(16 << 10)), Some(false), false), Verdict::Fail);
        assert_eq!(v(Some(Some(16 << 10)), Some(true), false), Verdict::Ok);
        assert_eq!(v(Some(Some(8 << 20)), Some(false), false), Verdict::Warn);
        assert_eq!(v(Some(None), Some(false), false), Verdict::Ok);
        assert_eq!(v(None, None, false), Verdict::Warn);
        let fail = memlock_finding(Some(Some(16 << 10)), Some(false), false, need);
        assert!(fail.summary.contains("16 KiB") && fail.summary.contains("ENOMEM"), "{}", fail.summary);
        assert!(fail.fix.unwrap().contains("limits.conf"));
    }
}
