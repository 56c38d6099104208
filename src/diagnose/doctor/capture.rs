//! doctor on a captured host (`--sysfs`, `--procfs`): what the captured /proc supports (the
//! memlock limit), and one finding naming what no capture can show, so that a check that
//! did not run is said, not passed in silence.

use super::{finding, memlock_finding, PLANNED_REGISTRATION};
use crate::model::codes;
use crate::model::diagnostic::{Diagnostic, Severity, Subject};
use crate::model::doctor::CaptureFacts;

/// The findings a capture adds, after the kernel's: the memlock limit of the process that
/// took it (when the captured /proc has `self/`), then the line of checks not run.
pub fn capture_findings(capture: &CaptureFacts, pci_config_short: bool) -> Vec<Diagnostic> {
    let mut findings = Vec::new();
    let mut skipped: Vec<&str> = vec![
        "/dev/infiniband nodes",
        "libibverbs and its providers",
        "verbs queries (active MTU)",
        "IP addresses and ARP sysctls (same subnet, ARP flux)",
        "network namespace",
    ];
    if pci_config_short {
        skipped.push("PCI config space past 64 bytes (captured without root: link registers, ACS)");
    }
    match (&capture.procfs, capture.memlock_soft) {
        (Some(procfs), Some(limit)) => {
            let mut f = memlock_finding(
                Some(limit),
                capture.cap_ipc_lock,
                capture.root == Some(true),
                PLANNED_REGISTRATION,
            );
            // The limit is the capturing process's (a sosreport runs as root): a job
            // started another way may have another one.
            f.evidence.insert(
                0,
                crate::model::diagnostic::Seen::gathered(format!(
                    "{procfs}/self/limits and self/status: the process that took the capture"
                )),
            );
            findings.push(f);
        }
        (Some(_), None) => skipped.push("memlock limit (no self/limits in the capture)"),
        (None, _) => skipped.push("memlock limit and loaded modules (no --procfs)"),
    }
    let mut f = finding(
        codes::CAPTURE,
        Subject::Host,
        Severity::Info,
        format!("captured host: not checked: {}", skipped.join(", ")),
    )
    .evidence(format!("--sysfs {}", capture.sysfs));
    if let Some(procfs) = &capture.procfs {
        f = f.evidence(format!("--procfs {procfs}"));
    }
    findings.push(f.fix("run `rdmactl doctor` on the host itself for these"));
    findings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_procfs_the_memlock_limit_is_named_as_not_checked() {
        let f = capture_findings(
            &CaptureFacts {
                sysfs: "sos/sys".into(),
                ..CaptureFacts::default()
            },
            false,
        );
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Info);
        assert!(
            f[0].message.contains("/dev/infiniband nodes"),
            "{}",
            f[0].message
        );
        assert!(
            f[0].message
                .ends_with("memlock limit and loaded modules (no --procfs)"),
            "{}",
            f[0].message
        );
    }

    #[test]
    fn a_captured_limit_is_judged_and_left_off_the_list() {
        let f = capture_findings(
            &CaptureFacts {
                sysfs: "sos/sys".into(),
                procfs: Some("sos/proc".into()),
                memlock_soft: Some(Some(64 << 10)),
                cap_ipc_lock: Some(false),
                root: Some(false),
            },
            false,
        );
        assert_eq!(f.len(), 2);
        assert_eq!(f[0].code, codes::MEMLOCK);
        assert_eq!(f[0].severity, Severity::Warn);
        assert!(f[0].evidence[0].text.contains("sos/proc/self/limits"));
        assert!(!f[1].message.contains("memlock"), "{}", f[1].message);
        // Captured with self/ missing: said, not judged.
        let f = capture_findings(
            &CaptureFacts {
                sysfs: "sos/sys".into(),
                procfs: Some("sos/proc".into()),
                ..CaptureFacts::default()
            },
            false,
        );
        assert_eq!(f.len(), 1);
        assert!(f[0].message.contains("no self/limits in the capture"));
    }

    #[test]
    fn a_config_space_cut_at_64_bytes_is_named_as_not_checked() {
        let capture = CaptureFacts {
            sysfs: "sos/sys".into(),
            ..CaptureFacts::default()
        };
        let f = capture_findings(&capture, true);
        let line = &f.last().unwrap().message;
        assert!(line.contains("PCI config space past 64 bytes"), "{line}");
        let f = capture_findings(&capture, false);
        assert!(!f.last().unwrap().message.contains("PCI config"));
    }
}
