//! What `doctor` reads about the container or pod it may run in: the markers runtimes
//! leave (/.dockerenv, /run/.containerenv, cgroup paths, KUBERNETES_SERVICE_HOST), the
//! `/dev/infiniband` nodes of the devices sysfs lists, the RDMA netlink's namespace mode and
//! devices, /proc/meminfo's CmaTotal, /sys's mount options, /etc/nccl.conf, and the NCCL_*
//! and UCX_* variables. Every path hangs off one root, so a planted tree tests the reading.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::gather::verbs;
use crate::model::container::{
    parse_nccl_conf, ContainerFacts, DevNode, Marker, NcclConf, NodeKind, NodeState, RdmaUcm,
};
use crate::model::device::Device;

/// Read the container facts of this host (root `/`), for the devices sysfs lists.
pub fn gather(sysfs: &Path, listed: &[Device]) -> ContainerFacts {
    let env: Vec<(String, String)> = std::env::vars().collect();
    let listed: Vec<(String, Option<String>)> = listed
        .iter()
        .map(|d| (d.name.clone(), d.uverbs.clone()))
        .collect();
    let mut facts = gather_at(Path::new("/"), sysfs, &listed, &env);
    facts.rdma_ns = Some(crate::gather::net::rdma::rdma_namespace());
    facts.netdevs = crate::gather::check::env_host(sysfs)
        .map(|h| h.netdevs)
        .unwrap_or_default();
    facts
}

/// Everything but the netlink answer, under `root` (`/` outside tests); `listed` holds each
/// device sysfs lists with its `uverbsN`.
pub fn gather_at(
    root: &Path,
    sysfs: &Path,
    listed: &[(String, Option<String>)],
    env: &[(String, String)],
) -> ContainerFacts {
    let proc = root.join("proc");
    let cgroup = std::fs::read_to_string(proc.join("self/cgroup")).unwrap_or_default();
    let markers = markers_at(root, &cgroup, env);
    let looked_at = vec![
        format!("{} absent", root.join(".dockerenv").display()),
        format!("{} absent", root.join("run/.containerenv").display()),
        format!(
            "{} paths: {}",
            proc.join("self/cgroup").display(),
            cgroup_paths(&cgroup)
        ),
    ];
    let mut env: Vec<(String, String)> = env
        .iter()
        .filter(|(k, _)| k.starts_with("NCCL_") || k.starts_with("UCX_"))
        .cloned()
        .collect();
    env.sort();
    let nccl_path = root.join("etc/nccl.conf");
    ContainerFacts {
        markers,
        looked_at,
        nodes: dev_nodes(root, sysfs, listed),
        rdma_ucm: rdma_ucm(sysfs),
        rdma_ns: None,
        in_init_netns: in_init_netns(&proc),
        netns_name: netns_name(root, &proc),
        cma_total: std::fs::read_to_string(proc.join("meminfo"))
            .ok()
            .and_then(|m| parse_cma_total(&m)),
        sys_read_only: std::fs::read_to_string(proc.join("self/mountinfo"))
            .ok()
            .and_then(|m| parse_sys_read_only(&m)),
        nccl_conf: std::fs::read_to_string(&nccl_path)
            .ok()
            .map(|text| NcclConf {
                path: nccl_path.display().to_string(),
                settings: parse_nccl_conf(&text),
            }),
        env,
        netdevs: Vec::new(),
    }
}

/// The signs of a container under `root`: doctor's and the device-node rule's evidence.
pub fn markers_at(root: &Path, cgroup: &str, env: &[(String, String)]) -> Vec<Marker> {
    let mut markers = Vec::new();
    if root.join(".dockerenv").exists() {
        markers.push(Marker::DockerEnv);
    }
    if let Ok(text) = std::fs::read_to_string(root.join("run/.containerenv")) {
        markers.push(Marker::ContainerEnv {
            engine: container_engine(&text),
        });
    }
    markers.extend(cgroup_marker(cgroup));
    if env.iter().any(|(k, _)| k == "KUBERNETES_SERVICE_HOST") {
        markers.push(Marker::KubernetesEnv);
    }
    markers
}

/// This process's container markers (root `/`, its own cgroup and environment).
pub fn markers() -> Vec<Marker> {
    let cgroup = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let kube: Vec<(String, String)> = std::env::var("KUBERNETES_SERVICE_HOST")
        .map(|v| vec![("KUBERNETES_SERVICE_HOST".to_string(), v)])
        .unwrap_or_default();
    markers_at(Path::new("/"), &cgroup, &kube)
}

/// `engine="podman-4.3.1"` in /run/.containerenv (Podman writes it; CRI-O leaves it empty).
fn container_engine(text: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let v = l.strip_prefix("engine=")?.trim().trim_matches('"');
        (!v.is_empty()).then(|| v.to_string())
    })
}

/// The first cgroup line whose path names a runtime. With a cgroup namespace (the default
/// under cgroup v2) a container sees `0::/` and this says nothing.
pub fn cgroup_marker(cgroup: &str) -> Option<Marker> {
    const RUNTIMES: &[(&str, &str)] = &[
        ("kubepods", "kubernetes"),
        ("docker", "docker"),
        ("libpod", "podman"),
        ("crio", "cri-o"),
        ("containerd", "containerd"),
        ("lxc", "lxc"),
    ];
    cgroup.lines().find_map(|line| {
        let path = line.splitn(3, ':').nth(2)?;
        RUNTIMES
            .iter()
            .find(|(needle, _)| path.contains(needle))
            .map(|(_, runtime)| Marker::Cgroup {
                runtime,
                path: path.to_string(),
            })
    })
}

fn cgroup_paths(cgroup: &str) -> String {
    let mut paths: Vec<&str> = cgroup
        .lines()
        .filter_map(|l| l.splitn(3, ':').nth(2))
        .collect();
    paths.dedup();
    if paths.is_empty() {
        "unreadable".into()
    } else {
        paths.join(", ")
    }
}

/// `CmaTotal` in bytes.
pub fn parse_cma_total(meminfo: &str) -> Option<u64> {
    meminfo.lines().find_map(|l| {
        let kib: u64 = l
            .strip_prefix("CmaTotal:")?
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()?;
        Some(kib * 1024)
    })
}

/// Whether the last mount on `/sys` in /proc/self/mountinfo is read-only (the mount's own
/// options, field 6, or the superblock's after the ` - ` separator).
pub fn parse_sys_read_only(mountinfo: &str) -> Option<bool> {
    mountinfo.lines().rev().find_map(|l| {
        let fields: Vec<&str> = l.split_whitespace().collect();
        (fields.get(4) == Some(&"/sys")).then(|| {
            let mount_ro = fields
                .get(5)
                .is_some_and(|o| o.split(',').any(|o| o == "ro"));
            let super_ro = l
                .split(" - ")
                .nth(1)
                .and_then(|rest| rest.split_whitespace().nth(2))
                .is_some_and(|o| o.split(',').any(|o| o == "ro"));
            mount_ro || super_ro
        })
    })
}

fn in_init_netns(proc: &Path) -> Option<bool> {
    let ours = std::fs::read_link(proc.join("self/ns/net")).ok()?;
    let init = std::fs::read_link(proc.join("1/ns/net")).ok()?;
    Some(ours == init)
}

/// The `ip netns` name of this network namespace: the /run/netns file with its inode.
fn netns_name(root: &Path, proc: &Path) -> Option<String> {
    let ours = std::fs::metadata(proc.join("self/ns/net")).ok()?;
    std::fs::read_dir(root.join("run/netns"))
        .ok()?
        .flatten()
        .find(|e| {
            e.path()
                .metadata()
                .is_ok_and(|m| m.ino() == ours.ino() && m.dev() == ours.dev())
        })
        .map(|e| e.file_name().to_string_lossy().into_owned())
}

/// The uverbs and umad nodes of every listed device, then rdma_cm (one for all devices).
fn dev_nodes(root: &Path, sysfs: &Path, listed: &[(String, Option<String>)]) -> Vec<DevNode> {
    if listed.is_empty() {
        return Vec::new();
    }
    let umads = umad_map(sysfs);
    let node = |name: &str, device: Option<&str>, kind| {
        let path = root.join("dev/infiniband").join(name);
        let state = if !path.exists() {
            NodeState::Missing
        } else {
            match verbs::sys::access_read_write(&path) {
                Ok(()) => NodeState::Usable,
                Err(errno) => NodeState::Denied(errno),
            }
        };
        DevNode {
            path: Path::new("/dev/infiniband")
                .join(name)
                .display()
                .to_string(),
            device: device.map(String::from),
            kind,
            state,
        }
    };
    let mut nodes = Vec::new();
    for (name, uverbs) in listed {
        if let Some(uverbs) = uverbs {
            nodes.push(node(uverbs, Some(name), NodeKind::Uverbs));
        }
        for (umad, _) in umads.iter().filter(|(_, dev)| dev == name) {
            nodes.push(node(umad, Some(name), NodeKind::Umad));
        }
    }
    nodes.push(node("rdma_cm", None, NodeKind::RdmaCm));
    nodes
}

/// `class/misc/rdma_cm`: rdma_ucm registers it when it loads (ucma.c's misc device), and
/// udev makes /dev/infiniband/rdma_cm from it. None when `class/misc` itself is absent.
fn rdma_ucm(sysfs: &Path) -> Option<RdmaUcm> {
    let misc = sysfs.join("class/misc");
    if !misc.is_dir() {
        return None;
    }
    let path = misc.join("rdma_cm");
    Some(RdmaUcm {
        loaded: path.exists(),
        dev: std::fs::read_to_string(path.join("dev"))
            .ok()
            .map(|d| d.trim().to_string()),
        path: path.display().to_string(),
    })
}

/// `umadN` → its device, from `class/infiniband_mad/umadN/ibdev`, in node order.
fn umad_map(sysfs: &Path) -> Vec<(String, String)> {
    let dir = sysfs.join("class/infiniband_mad");
    let mut map: Vec<(String, String)> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let ibdev = crate::gather::sysfs::read_text(&e.path().join("ibdev")).ok()?;
            name.starts_with("umad")
                .then(|| (name, ibdev.trim().to_string()))
        })
        .collect();
    map.sort_by_key(|(n, _)| n[4..].parse::<u32>().unwrap_or(u32::MAX));
    map
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_from_cgroup_lines() {
        let k8s = "0::/kubepods.slice/kubepods-besteffort.slice/cri-containerd-ab12.scope\n";
        assert!(matches!(
            cgroup_marker(k8s),
            Some(Marker::Cgroup {
                runtime: "kubernetes",
                ..
            })
        ));
        let docker = "12:memory:/docker/3f1e\n0::/docker/3f1e\n";
        assert!(matches!(
            cgroup_marker(docker),
            Some(Marker::Cgroup { runtime: "docker", ref path }) if path == "/docker/3f1e"
        ));
        // A cgroup namespace hides the path: no marker, and no guess.
        assert_eq!(cgroup_marker("0::/\n"), None);
        assert_eq!(
            cgroup_marker("0::/user.slice/user-0.slice/session-1.scope\n"),
            None
        );
    }

    #[test]
    fn meminfo_and_mountinfo() {
        assert_eq!(
            parse_cma_total("MemTotal: 1 kB\nCmaTotal:        0 kB\n"),
            Some(0)
        );
        assert_eq!(parse_cma_total("CmaTotal:   16384 kB\n"), Some(16 << 20));
        assert_eq!(parse_cma_total("MemTotal: 1 kB\n"), None);
        // Docker's /sys: a fresh sysfs mounted ro.
        let docker = "600 580 0:60 / /sys ro,nosuid,nodev,noexec,relatime - sysfs sysfs ro\n";
        assert_eq!(parse_sys_read_only(docker), Some(true));
        let host = "22 28 0:21 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw\n\
                    30 22 0:26 / /sys/kernel/security rw - securityfs securityfs rw\n";
        assert_eq!(parse_sys_read_only(host), Some(false));
        // A read-only remount stacked over the rw one wins.
        let stacked = format!("{host}40 22 0:21 / /sys ro,relatime - sysfs sysfs rw\n");
        assert_eq!(parse_sys_read_only(&stacked), Some(true));
        assert_eq!(
            parse_sys_read_only("1 0 0:1 / / rw - ext4 /dev/sda rw\n"),
            None
        );
    }

    /// A container as a runtime leaves it: /.dockerenv, a tmpfs /dev/infiniband with one of
    /// the two uverbs nodes (plain files stand in for the character devices), a read-only
    /// /sys, an image's /etc/nccl.conf.
    #[test]
    fn a_planted_container_tree() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        let write = |p: &str, text: &str| {
            let p = r.join(p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        write(".dockerenv", "");
        write("dev/infiniband/uverbs0", "");
        write("proc/self/cgroup", "0::/\n");
        write("proc/meminfo", "CmaTotal:        0 kB\n");
        write(
            "proc/self/mountinfo",
            "600 580 0:60 / /sys ro,nosuid - sysfs sysfs ro\n",
        );
        write("etc/nccl.conf", "NCCL_IB_HCA=mlx5_3\n");
        write("sys/class/infiniband_mad/umad1/ibdev", "rxe1\n");
        let listed = [
            ("rxe0".to_string(), Some("uverbs0".to_string())),
            ("rxe1".to_string(), Some("uverbs1".to_string())),
        ];
        let env = [
            ("UCX_TLS".to_string(), "rc".to_string()),
            ("PATH".to_string(), "/bin".to_string()),
            ("NCCL_DEBUG".to_string(), "INFO".to_string()),
        ];
        let facts = gather_at(r, &r.join("sys"), &listed, &env);
        assert_eq!(facts.markers, [Marker::DockerEnv]);
        let states: Vec<(&str, NodeState)> = facts
            .nodes
            .iter()
            .map(|n| (n.path.as_str(), n.state))
            .collect();
        assert_eq!(
            states,
            [
                ("/dev/infiniband/uverbs0", NodeState::Usable),
                ("/dev/infiniband/uverbs1", NodeState::Missing),
                ("/dev/infiniband/umad1", NodeState::Missing),
                ("/dev/infiniband/rdma_cm", NodeState::Missing),
            ]
        );
        assert_eq!(facts.cma_total, Some(0));
        assert_eq!(facts.sys_read_only, Some(true));
        let conf = facts.nccl_conf.unwrap();
        assert_eq!(conf.settings, [("NCCL_IB_HCA".into(), "mlx5_3".into())]);
        assert_eq!(
            facts.env,
            [
                ("NCCL_DEBUG".to_string(), "INFO".to_string()),
                ("UCX_TLS".to_string(), "rc".to_string())
            ]
        );
        // No class/misc in the tree: whether rdma_ucm is loaded is unknown.
        assert_eq!(facts.rdma_ucm, None);
        write("sys/class/misc/fuse/dev", "10:229\n");
        let ucm = gather_at(r, &r.join("sys"), &listed, &env)
            .rdma_ucm
            .unwrap();
        assert!(
            !ucm.loaded && ucm.path.ends_with("sys/class/misc/rdma_cm"),
            "{ucm:?}"
        );
        write("sys/class/misc/rdma_cm/dev", "10:58\n");
        let ucm = gather_at(r, &r.join("sys"), &listed, &env)
            .rdma_ucm
            .unwrap();
        assert!(ucm.loaded && ucm.dev.as_deref() == Some("10:58"), "{ucm:?}");
        // No device listed: no node is asked for.
        assert!(gather_at(r, &r.join("sys"), &[], &env).nodes.is_empty());
    }
}
