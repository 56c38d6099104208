//! A device the kernel is removing while a process holds it (`device-removing`), worded
//! once for every command that meets it: doctor's finding for the device, `check`'s, and
//! the error of `selftest -d`, `pingpong -d` and the inventory's notes. The evidence that
//! decided it comes with it; ib_uverbs and the provider, which the device's absence from
//! libibverbs would otherwise suggest, are named as ruled out.

use crate::model::codes;
use crate::model::device::{DeviceRemoval, NodeHolder};
use crate::model::diagnostic::{Diagnostic, Severity, Subject};

fn holder_short(h: &NodeHolder) -> String {
    format!("pid {} ({})", h.pid, h.comm)
}

/// "held by pid 172 (ibv_rc_pingpong), pid 173 (rdmactl)", or why no holder is named.
fn held_by(r: &DeviceRemoval) -> String {
    if r.holders.is_empty() {
        let mut s = "no process holding a deleted uverbs node was found".to_string();
        if r.scan.unreadable > 0 {
            s.push_str(&format!(
                " among the {} processes this user may look into ({} others could not be read: run as root to see them)",
                r.scan.processes, r.scan.unreadable
            ));
        }
        return s;
    }
    let who: Vec<String> = r.holders.iter().map(holder_short).collect();
    if r.also_removing.is_empty() {
        format!("held by {}", who.join(", "))
    } else {
        format!(
            "{} being removed as well, and the deleted nodes do not say whose they were: {} hold one of them",
            r.also_removing.join(", "),
            who.join(", ")
        )
    }
}

/// The one-line cause: what is pending, on which device, held by whom.
pub fn summary(r: &DeviceRemoval) -> String {
    let tail = if r.holders.is_empty() {
        "the removal finishes when the last process that opened it closes it"
    } else {
        "the removal finishes when they exit"
    };
    format!(
        "rdma link delete / driver unbind pending: {} is being removed; {}; {tail}",
        r.device,
        held_by(r)
    )
}

fn evidence(r: &DeviceRemoval) -> Vec<String> {
    let mut seen = vec![
        format!("{} is still there", r.sysfs_path),
        format!(
            "ib_uverbs is loaded ({} exists), yet no {}/*/ibdev names {}: uverbs deleted its node (not a missing module)",
            r.uverbs_module, r.uverbs_class, r.device
        ),
    ];
    seen.push(match &r.netlink {
        Ok(names) => format!(
            "RDMA netlink's device dump lists {}, not {}: the core unregistered it, and its resource tracking (`rdma res`) no longer answers for it",
            if names.is_empty() { "nothing".to_string() } else { names.join(", ") },
            r.device
        ),
        Err(why) => format!("RDMA netlink not read ({why}): the deleted node held open decided"),
    });
    for h in &r.holders {
        let cmd = if h.cmdline.is_empty() || h.cmdline == h.comm {
            String::new()
        } else {
            format!(", `{}`", h.cmdline)
        };
        seen.push(format!("pid {} ({}{cmd}): {}", h.pid, h.comm, h.link));
    }
    let mut scan = format!(
        "holders from /proc/*/fd links to a deleted /dev/infiniband/uverbs node: {} processes read",
        r.scan.processes
    );
    if r.scan.unreadable > 0 {
        scan.push_str(&format!(
            ", {} not readable by this user",
            r.scan.unreadable
        ));
    }
    if r.scan.timed_out {
        scan.push_str(&format!(
            ", the walk stopped at its {} ms limit (more holders may exist)",
            r.scan.limit_ms
        ));
    }
    seen.push(scan);
    seen
}

fn fix(r: &DeviceRemoval) -> String {
    let stop = if r.holders.is_empty() {
        "find the process that still has it open (`ls -l /proc/*/fd | grep 'uverbs.*deleted'` as root) and stop it, or wait for it to exit".to_string()
    } else {
        let pids: Vec<String> = r.holders.iter().map(|h| h.pid.to_string()).collect();
        format!(
            "stop the processes holding it (`kill {}`), or wait for them to exit",
            pids.join(" ")
        )
    };
    format!(
        "{stop}; the removal then completes. If {} was meant to stay, re-create it afterwards (`rdma link add`, or rebind its driver)",
        r.device
    )
}

/// doctor's and check's finding for the device: one fail, in place of the uverbs check's
/// "load ib_uverbs" and the provider's "not installed".
pub fn finding(r: &DeviceRemoval) -> Diagnostic {
    evidence(r)
        .into_iter()
        .fold(
            Diagnostic::finding(Severity::Fail, codes::DEVICE_REMOVING, summary(r))
                .about(Subject::Device(r.device.clone())),
            |d, e| d.evidence(e),
        )
        .fix(fix(r))
}

/// The explanation of a command that could not open the device (selftest, pingpong).
pub fn explanation(r: &DeviceRemoval) -> Diagnostic {
    evidence(r).into_iter().fold(
        Diagnostic::explanation(codes::DEVICE_REMOVING, summary(r), fix(r))
            .about(Subject::Device(r.device.clone())),
        |d, e| d.evidence(e),
    )
}

/// The inventory's notes (`devices`, `ports`): one line per device being removed, for
/// stderr.
pub fn notes(devices: &[crate::model::device::Device]) -> String {
    devices
        .iter()
        .filter_map(|d| d.removal.as_deref())
        .map(|r| format!("rdmactl: note: {}; fix: {}\n", summary(r), fix(r)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::device::HolderScan;

    fn removal(holders: Vec<NodeHolder>) -> DeviceRemoval {
        DeviceRemoval {
            device: "rxe1".into(),
            sysfs_path: "/sys/class/infiniband/rxe1".into(),
            uverbs_module: "/sys/module/ib_uverbs".into(),
            uverbs_class: "/sys/class/infiniband_verbs".into(),
            netlink: Ok(vec!["rxe0".into()]),
            holders,
            scan: HolderScan {
                processes: 40,
                unreadable: 0,
                timed_out: false,
                limit_ms: 3000,
            },
            also_removing: Vec::new(),
        }
    }

    fn holder(pid: u32, comm: &str) -> NodeHolder {
        NodeHolder {
            pid,
            comm: comm.into(),
            cmdline: format!("{comm} -d rxe1 -g 1"),
            link: format!("/proc/{pid}/fd/3 -> /dev/infiniband/uverbs1 (deleted)"),
        }
    }

    fn text(d: &Diagnostic) -> String {
        let mut s = d.message.clone();
        for e in &d.evidence {
            s.push('\n');
            s.push_str(&e.to_string());
        }
        s.push('\n');
        s.push_str(d.fix_text());
        s
    }

    /// The true cause (the pending removal, the holder's pid and name, the deleted node),
    /// and none of the false ones the device's absence from libibverbs suggested.
    #[test]
    fn a_held_removal_names_the_holder_and_not_ib_uverbs() {
        let d = finding(&removal(vec![
            holder(172, "ibv_rc_pingpong"),
            holder(173, "rdmactl"),
        ]));
        assert_eq!(d.code, codes::DEVICE_REMOVING);
        assert_eq!(d.severity, Severity::Fail);
        let t = text(&d);
        assert!(
            d.message.starts_with(
                "rdma link delete / driver unbind pending: rxe1 is being removed; held by pid 172 (ibv_rc_pingpong), pid 173 (rdmactl); the removal finishes when they exit"
            ),
            "{t}"
        );
        assert!(
            t.contains("/proc/172/fd/3 -> /dev/infiniband/uverbs1 (deleted)"),
            "{t}"
        );
        assert!(t.contains("`ibv_rc_pingpong -d rxe1 -g 1`"), "{t}");
        assert!(t.contains("device dump lists rxe0, not rxe1"), "{t}");
        assert!(d.fix_text().contains("`kill 172 173`"), "{t}");
        for wrong in [
            "modprobe ib_uverbs",
            "load ib_uverbs",
            "no device 'rxe1'",
            "provider",
        ] {
            assert!(!t.contains(wrong), "{wrong:?} in {t}");
        }
    }

    /// No holder visible: say why (unreadable processes), never invent one.
    #[test]
    fn no_holder_found_says_what_was_not_read() {
        let mut r = removal(Vec::new());
        r.scan.unreadable = 12;
        r.scan.timed_out = true;
        let t = text(&finding(&r));
        assert!(
            t.contains("no process holding a deleted uverbs node was found"),
            "{t}"
        );
        assert!(
            t.contains("12 others could not be read: run as root"),
            "{t}"
        );
        assert!(t.contains("stopped at its 3000 ms limit"), "{t}");
        assert!(!t.contains("kill"), "{t}");
    }

    /// Two devices going at once: the holders are named but not attributed.
    #[test]
    fn two_removals_do_not_attribute_the_holders() {
        let mut r = removal(vec![holder(172, "ibv_rc_pingpong")]);
        r.also_removing = vec!["rxe2".into()];
        let s = summary(&r);
        assert!(s.contains("rxe2 being removed as well"), "{s}");
        assert!(!s.contains("held by pid"), "{s}");
    }
}
