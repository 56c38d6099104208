//! A device sysfs still lists while the kernel removes it (`rdma link delete`, a driver
//! unbind): the evidence that says so (sysfs, ib_uverbs, the RDMA netlink device dump) and
//! the processes that hold it (their fd links to the deleted uverbs node), each read with a
//! bound so that no command waits on a kernel that is busy removing.

use std::path::Path;

use crate::gather::procfs;
use crate::gather::sysfs::SysfsRoot;
use crate::model::device::DeviceRemoval;

/// How long the RDMA netlink dump may take before the kernel is called silent.
const NETLINK_LIMIT: std::time::Duration = std::time::Duration::from_secs(2);
/// How long the walk over /proc/*/fd may take: a host with thousands of processes stops
/// there and says so.
const SCAN_LIMIT: std::time::Duration = std::time::Duration::from_secs(3);

/// Whether `device`, which sysfs lists and no uverbs entry names, is being removed, and who
/// holds it. The evidence: `class/infiniband/DEV` is there, ib_uverbs is loaded
/// (`module/ib_uverbs`) yet no `class/infiniband_verbs/*/ibdev` names the device (uverbs
/// deleted its node), and the RDMA netlink device dump leaves it out (the core cleared its
/// registration before waiting for the users). The holders are the processes with an fd on
/// a deleted uverbs node (`/dev/infiniband/uverbsN (deleted)`); netlink's resource tracking
/// answers only for registered devices, so it cannot name them. None when the evidence
/// says otherwise (ib_uverbs not loaded, the device still mapped or still registered, a
/// captured tree): the callers' own words stand.
pub fn pending(sysfs: &Path, device: &str) -> Option<DeviceRemoval> {
    pending_with(sysfs, Path::new(procfs::PROC), device, || {
        crate::gather::net::rdma::device_names_within(NETLINK_LIMIT)
    })
}

/// `pending` with its /proc and its netlink answer given, for tests.
fn pending_with(
    sysfs: &Path,
    proc_root: &Path,
    device: &str,
    netlink: impl FnOnce() -> Result<Vec<String>, String>,
) -> Option<DeviceRemoval> {
    if device.is_empty() || device.contains('/') {
        return None;
    }
    let root = SysfsRoot::new(sysfs);
    let dev_dir = sysfs.join("class/infiniband").join(device);
    // ib_uverbs is loaded: its module directory, or (built in) the class it creates.
    let uverbs_module = [
        sysfs.join("module/ib_uverbs"),
        sysfs.join("class/infiniband_verbs/abi_version"),
    ]
    .into_iter()
    .find(|p| p.exists())?;
    let mapped = root.uverbs_map();
    if !dev_dir.is_dir() || mapped.contains_key(device) {
        return None;
    }
    let netlink = netlink();
    let listed = root.device_names().unwrap_or_default();
    // Every listed device that uverbs no longer maps and netlink no longer lists is on its
    // way out; a deleted node cannot say which of them it was.
    let unregistered = |d: &String| match &netlink {
        Ok(names) => !names.contains(d),
        Err(_) => true,
    };
    if !unregistered(&device.to_string()) {
        return None;
    }
    let also_removing: Vec<String> = listed
        .iter()
        .filter(|d| *d != device && !mapped.contains_key(*d) && unregistered(d))
        .cloned()
        .collect();
    let found = procfs::fd_holders(
        proc_root,
        |link| link.starts_with("/dev/infiniband/uverbs") && link.ends_with(" (deleted)"),
        Some(SCAN_LIMIT),
    );
    // Without netlink's word, a deleted node held open is what shows the removal.
    if netlink.is_err() && found.holders.is_empty() {
        return None;
    }
    Some(DeviceRemoval {
        device: device.to_string(),
        sysfs_path: dev_dir.display().to_string(),
        uverbs_module: uverbs_module.display().to_string(),
        uverbs_class: sysfs.join("class/infiniband_verbs").display().to_string(),
        netlink,
        holders: found.holders,
        scan: found.scan,
        also_removing,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// rxe1 as the VM showed it while `rdma link delete rxe1` waited: sysfs lists it,
    /// uverbs maps only rxe0, netlink lists only rxe0, and a process holds the deleted node.
    fn removing_tree() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let sys = dir.path().join("sys");
        let proc_root = dir.path().join("proc");
        for d in ["rxe0", "rxe1"] {
            std::fs::create_dir_all(sys.join("class/infiniband").join(d)).unwrap();
        }
        std::fs::create_dir_all(sys.join("class/infiniband_verbs/uverbs0")).unwrap();
        std::fs::write(sys.join("class/infiniband_verbs/uverbs0/ibdev"), "rxe0\n").unwrap();
        std::fs::create_dir_all(sys.join("module/ib_uverbs")).unwrap();
        for (pid, comm, target) in [
            (172, "ibv_rc_pingpong", "/dev/infiniband/uverbs1 (deleted)"),
            (180, "bash", "/dev/infiniband/uverbs0"),
        ] {
            let p = proc_root.join(pid.to_string());
            std::fs::create_dir_all(p.join("fd")).unwrap();
            std::fs::write(p.join("comm"), format!("{comm}\n")).unwrap();
            std::fs::write(p.join("cmdline"), format!("{comm}\0-d\0rxe1\0")).unwrap();
            std::os::unix::fs::symlink(target, p.join("fd/3")).unwrap();
        }
        (dir, sys, proc_root)
    }

    #[test]
    fn a_device_uverbs_and_netlink_dropped_is_being_removed_and_its_holder_named() {
        let (_dir, sys, proc_root) = removing_tree();
        let r = pending_with(&sys, &proc_root, "rxe1", || Ok(vec!["rxe0".into()])).unwrap();
        assert_eq!(r.device, "rxe1");
        assert_eq!(r.holders.len(), 1, "{r:?}");
        assert_eq!(r.holders[0].pid, 172);
        assert_eq!(r.holders[0].comm, "ibv_rc_pingpong");
        assert_eq!(r.holders[0].cmdline, "ibv_rc_pingpong -d rxe1");
        assert!(r.holders[0]
            .link
            .ends_with("fd/3 -> /dev/infiniband/uverbs1 (deleted)"));
        assert_eq!(r.scan.processes, 2);
        assert!(r.also_removing.is_empty());
        // rxe0 is mapped: not being removed.
        assert!(pending_with(&sys, &proc_root, "rxe0", || Ok(vec!["rxe0".into()])).is_none());
        // Still registered (netlink lists it): something else keeps its node away.
        assert!(pending_with(&sys, &proc_root, "rxe1", || Ok(vec![
            "rxe0".into(),
            "rxe1".into()
        ]))
        .is_none());
        // Netlink silent: the deleted node held open decides.
        let silent = pending_with(&sys, &proc_root, "rxe1", || Err("no answer".into())).unwrap();
        assert_eq!(silent.holders[0].pid, 172);
    }

    #[test]
    fn without_ib_uverbs_a_missing_node_is_not_a_removal() {
        let (_dir, sys, proc_root) = removing_tree();
        std::fs::remove_dir(sys.join("module/ib_uverbs")).unwrap();
        assert!(pending_with(&sys, &proc_root, "rxe1", || Ok(vec!["rxe0".into()])).is_none());
    }
}
