//! A `/dev/infiniband` node as this process finds it: stat(2)'s mode and owner, this
//! process's own read-write open of it, and who this process is (ids from /proc, names from
//! /etc/passwd and /etc/group), so the rules can say what refused an open instead of
//! guessing. No unsafe: stat through `MetadataExt`, the open through `std::fs`.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::gather::procfs;
use crate::gather::sysfs::SysfsRoot;
use crate::model::facts::{DeviceNodeFacts, NodeStat, ProcessIds};

/// The uverbs node sysfs maps `device` to, as this process finds it; None when sysfs maps
/// no node to it.
pub fn uverbs_node(sysfs: &Path, device: &str) -> Option<DeviceNodeFacts> {
    let node = SysfsRoot::new(sysfs).uverbs_map().remove(device)?;
    Some(node_facts(&Path::new("/dev/infiniband").join(node)))
}

/// The nodes librdmacm opens to answer for `device`: rdma_cm, then the device's uverbs node.
pub fn cm_nodes(sysfs: &Path, device: &str) -> Vec<DeviceNodeFacts> {
    std::iter::once(node_facts(Path::new("/dev/infiniband/rdma_cm")))
        .chain(uverbs_node(sysfs, device))
        .collect()
}

/// The nodes librdmacm opens for a CM id bound to `source`: rdma_cm, then the uverbs node of
/// each device with a GID of that address (none when there is no source: the kernel picks
/// the device, and which one is not known here).
pub fn cm_nodes_for_source(sysfs: &Path, source: Option<std::net::IpAddr>) -> Vec<DeviceNodeFacts> {
    let root = SysfsRoot::new(sysfs);
    let gid = source.map(crate::model::gid::Gid::from_ip);
    let devices: Vec<String> = root
        .device_names()
        .unwrap_or_default()
        .into_iter()
        .filter(|d| {
            gid.is_some_and(|gid| {
                root.port_numbers(d)
                    .unwrap_or_default()
                    .into_iter()
                    .filter_map(|p| root.port(d, p).ok())
                    .any(|port| port.gids.iter().any(|e| e.gid == gid))
            })
        })
        .collect();
    std::iter::once(node_facts(Path::new("/dev/infiniband/rdma_cm")))
        .chain(devices.iter().filter_map(|d| uverbs_node(sysfs, d)))
        .collect()
}

/// One node: whether it exists, its stat, this process's open of it, who this process is,
/// and the container markers around it.
pub fn node_facts(path: &Path) -> DeviceNodeFacts {
    let meta = std::fs::metadata(path).ok();
    let who = this_process();
    let (passwd, group) = (&who.passwd, &who.group);
    let stat = meta.as_ref().map(|m| NodeStat {
        mode: m.mode() & 0o7777,
        uid: m.uid(),
        gid: m.gid(),
        owner: name_of(passwd, m.uid()),
        group: name_of(group, m.gid()),
    });
    // The open itself, not access(2): access checks the real ids and skips the device
    // cgroup, which refuses only at open. Opening a uverbs or rdma_cm node and closing it
    // allocates nothing that outlives the close.
    let open_errno = meta.as_ref().and_then(|_| {
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .err()
            .map(|e| e.raw_os_error().unwrap_or(libc::EIO))
    });
    DeviceNodeFacts {
        path: path.display().to_string(),
        exists: meta.is_some(),
        accessible: meta.is_some() && open_errno.is_none(),
        driver: None,
        provider: None,
        stat,
        open_errno,
        process: who.ids.clone(),
        container: who.container.clone(),
    }
}

/// Who this process is and where it runs: the same for every node it looks at, so read
/// once per process (doctor and each exporter scrape look at one node per device).
struct ThisProcess {
    passwd: String,
    group: String,
    ids: Option<ProcessIds>,
    container: Vec<crate::model::container::Marker>,
}

fn this_process() -> &'static ThisProcess {
    static WHO: std::sync::OnceLock<ThisProcess> = std::sync::OnceLock::new();
    WHO.get_or_init(|| {
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        let (passwd, group) = (read("/etc/passwd"), read("/etc/group"));
        let ids = process_ids(&passwd, &group);
        ThisProcess {
            passwd,
            group,
            ids,
            container: crate::gather::container::markers(),
        }
    })
}

fn process_ids(passwd: &str, group: &str) -> Option<ProcessIds> {
    let (uid, gid, groups) = procfs::process_ids()?;
    let mut group_names: Vec<(u32, String)> = std::iter::once(gid)
        .chain(groups.iter().copied())
        .filter_map(|g| name_of(group, g).map(|n| (g, n)))
        .collect();
    group_names.dedup();
    Some(ProcessIds {
        uid,
        gid,
        groups,
        user: name_of(passwd, uid),
        group_names,
    })
}

/// The name /etc/passwd or /etc/group gives `id` (`name:x:id:...`); None when no line has it
/// (NSS sources such as LDAP are not asked: the number is shown instead).
pub fn name_of(file: &str, id: u32) -> Option<String> {
    file.lines().find_map(|line| {
        let mut f = line.split(':');
        let name = f.next()?;
        let id_field = f.nth(1)?;
        (id_field.parse::<u32>().ok()? == id && !name.is_empty()).then(|| name.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_from_passwd_and_group_lines() {
        let passwd = "root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
        assert_eq!(name_of(passwd, 0).as_deref(), Some("root"));
        assert_eq!(name_of(passwd, 65534).as_deref(), Some("nobody"));
        assert_eq!(name_of(passwd, 1000), None);
        let group = "root:x:0:\nrdma:x:111:alice\n";
        assert_eq!(name_of(group, 111).as_deref(), Some("rdma"));
    }

    /// This process's ids and a node everyone may open (/dev/null), read live.
    #[test]
    fn reads_a_node_and_this_process() {
        let node = node_facts(Path::new("/dev/null"));
        assert!(node.exists && node.accessible, "{node:?}");
        let stat = node.stat.expect("stat of /dev/null");
        assert_eq!(stat.mode, 0o666);
        assert_eq!(stat.uid, 0);
        assert!(node.process.is_some());
        let missing = node_facts(Path::new("/dev/infiniband/nosuch-node"));
        assert!(!missing.exists && missing.stat.is_none() && missing.open_errno.is_none());
    }
}
