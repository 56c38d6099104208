//! A `/dev/infiniband` node this process could not open, worded once for every command that
//! meets one: doctor's uverbs check, check's kernel choice, pingpong's and selftest's open.
//! The node's mode and owner are set against the ids this process runs as, the way the
//! kernel checks them, so the words say which part refused: the mode (then the fix changes
//! the mode or the user), or something besides the mode (a device cgroup, an ACL, an LSM;
//! a container only when one was seen). Nothing here guesses past the facts.

use crate::model::container::Marker;
use crate::model::errno::{errno_name, errno_text};
use crate::model::facts::{DeviceNodeFacts, NodeStat, ProcessIds};

/// What a rule says about a refused node; each caller puts it under its own code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub message: String,
    pub evidence: Vec<String>,
    pub fix: String,
}

/// Which of the mode's three classes the kernel applies to this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    /// uid 0: the mode does not bind it (CAP_DAC_OVERRIDE).
    Root,
    Owner,
    Group,
    Other,
}

fn class_of(stat: &NodeStat, ids: &ProcessIds) -> Class {
    if ids.uid == 0 {
        Class::Root
    } else if ids.uid == stat.uid {
        Class::Owner
    } else if ids.gid == stat.gid || ids.groups.contains(&stat.gid) {
        Class::Group
    } else {
        Class::Other
    }
}

/// The three permission bits (rwx) of `class`; root gets all of them.
fn bits(mode: u32, class: Class) -> u32 {
    match class {
        Class::Root => 0o7,
        Class::Owner => (mode >> 6) & 0o7,
        Class::Group => (mode >> 3) & 0o7,
        Class::Other => mode & 0o7,
    }
}

fn rwx(b: u32) -> String {
    [(4, 'r'), (2, 'w'), (1, 'x')]
        .iter()
        .map(|&(bit, c)| if b & bit != 0 { c } else { '-' })
        .collect()
}

fn named(id: u32, name: Option<&str>) -> String {
    match name {
        Some(n) => format!("{id} ({n})"),
        None => id.to_string(),
    }
}

fn owner_text(stat: &NodeStat) -> String {
    let name = |n: &Option<String>, id: u32| n.clone().unwrap_or_else(|| id.to_string());
    format!(
        "{}:{}",
        name(&stat.owner, stat.uid),
        name(&stat.group, stat.gid)
    )
}

fn group_name(ids: &ProcessIds, gid: u32) -> Option<&str> {
    ids.group_names
        .iter()
        .find(|(g, _)| *g == gid)
        .map(|(_, n)| n.as_str())
}

/// `uid 1000 (alice), gid 1000 (alice), groups 27 (sudo), 1000 (alice)`.
fn who(ids: &ProcessIds) -> String {
    let groups = if ids.groups.is_empty() {
        "none".to_string()
    } else {
        ids.groups
            .iter()
            .map(|g| named(*g, group_name(ids, *g)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!(
        "uid {}, gid {}, groups {groups}",
        named(ids.uid, ids.user.as_deref()),
        named(ids.gid, group_name(ids, ids.gid))
    )
}

/// How a container marker reads as evidence.
pub fn describe_marker(marker: &Marker) -> String {
    match marker {
        Marker::DockerEnv => "/.dockerenv exists (Docker)".into(),
        Marker::ContainerEnv { engine: Some(e) } => {
            format!("/run/.containerenv exists (engine {e})")
        }
        Marker::ContainerEnv { engine: None } => {
            "/run/.containerenv exists (Podman or CRI-O)".into()
        }
        Marker::Cgroup { runtime, path } => format!("cgroup path {path} ({runtime})"),
        Marker::KubernetesEnv => "KUBERNETES_SERVICE_HOST is set (a Kubernetes pod)".into(),
    }
}

/// The refusal of `node`, when this process's open of it failed (`open_errno`), or, when the
/// node was not opened here, when the caller's own open failed with `errno`. None when the
/// node does not exist (a missing node is another finding) or opened.
pub fn refusal(node: &DeviceNodeFacts, errno: Option<i32>) -> Option<Refusal> {
    if !node.exists {
        return None;
    }
    let errno = node.open_errno.or(errno)?;
    let path = &node.path;
    let mut evidence = Vec::new();
    if let Some(stat) = &node.stat {
        evidence.push(format!(
            "stat {path}: mode {:04o}, owner {}, group {}",
            stat.mode,
            named(stat.uid, stat.owner.as_deref()),
            named(stat.gid, stat.group.as_deref())
        ));
    }
    if let Some(ids) = &node.process {
        evidence.push(format!("/proc/self/status: {}", who(ids)));
    }
    evidence.push(format!(
        "open({path}, O_RDWR) failed with {}",
        errno_text(errno)
    ));
    // A container matters only where the mode does not explain the refusal.
    let containers = node.container.iter().map(describe_marker);
    let name = errno_name(errno);
    let (Some(stat), Some(ids)) = (&node.stat, &node.process) else {
        evidence.extend(containers);
        let unknown = match (&node.stat, &node.process) {
            (None, _) => "its mode and owner could not be read",
            _ => "this process's ids could not be read",
        };
        return Some(Refusal {
            message: format!("{path} cannot be opened read-write: open fails with {name}; {unknown}, so what refused it is not known"),
            evidence,
            fix: format!("compare `ls -l {path}` with `id` for the user that runs the job"),
        });
    };
    let class = class_of(stat, ids);
    let granted = bits(stat.mode, class);
    let node_text = format!(
        "{path} is mode {:04o} owner {}",
        stat.mode,
        owner_text(stat)
    );
    let user = ids.user.clone().unwrap_or_else(|| ids.uid.to_string());
    let applies = match class {
        Class::Root => "root, which the mode does not bind".to_string(),
        Class::Owner => format!("its owner, whose bits are {}", rwx(granted)),
        Class::Group => format!("in its group, whose bits are {}", rwx(granted)),
        Class::Other => format!(
            "neither its owner nor in its group, so the others' bits apply: {}",
            rwx(granted)
        ),
    };
    if granted & 0o6 != 0o6 {
        let group_rw = (stat.mode >> 3) & 0o6 == 0o6;
        let group = stat.group.clone().unwrap_or_else(|| stat.gid.to_string());
        let mut fix = if class == Class::Other && group_rw && stat.gid != 0 {
            format!("add {user} to group {group} (`usermod -aG {group} {user}`, then log in again), or ")
        } else {
            String::new()
        };
        fix.push_str(&format!(
            "`chmod 0666 {path}` (the kernel creates uverbs and rdma_cm nodes 0666), or run as a user the mode allows; a chmod lasts until the node is created again (driver reload, reboot): rdma-core's udev rules set no mode on these nodes, so if a local rule set this one (`grep -rl -e uverbs -e rdma_cm /etc/udev/rules.d`), change it there"
        ));
        return Some(Refusal {
            message: format!(
                "{node_text}; this process runs as {} and is {applies}: open read-write fails with {name}",
                who(ids)
            ),
            evidence,
            fix,
        });
    }
    // The mode lets this process in, so the refusal came from elsewhere: say what can refuse
    // a permitted open, the container's device cgroup first when a container was seen.
    evidence.extend(containers);
    let (others, fix) = if node.container.is_empty() {
        (
            "a device cgroup (a systemd unit's DevicePolicy=/DeviceAllow=), a POSIX ACL or an LSM (SELinux, AppArmor); no container marker was seen".to_string(),
            format!("look at `getfacl {path}`, the unit's device policy (`systemctl show -p DevicePolicy -p DeviceAllow UNIT`) and the LSM's denials (`dmesg | grep -i -e avc -e apparmor`)"),
        )
    } else {
        (
            "this container's device cgroup (a container was seen: the evidence says which), or an LSM (SELinux, AppArmor)".to_string(),
            format!("pass the node into the container: `--device={path}` with docker or podman, or the RDMA device plugin's resource in Kubernetes"),
        )
    };
    Some(Refusal {
        message: format!(
            "{node_text}; this process runs as {} and is {applies}, so the mode allows read-write, yet open fails with {name}: something besides the mode refused it: {others}",
            who(ids)
        ),
        evidence,
        fix,
    })
}

/// The first node of `nodes` this process could not open: what librdmacm and libibverbs
/// open on the way to an answer (rdma_cm, then each device's uverbs node).
pub fn first_refusal(nodes: &[DeviceNodeFacts]) -> Option<Refusal> {
    nodes.iter().find_map(|n| refusal(n, None))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(
        mode: u32,
        owner: (u32, &str),
        group: (u32, &str),
        errno: Option<i32>,
    ) -> DeviceNodeFacts {
        DeviceNodeFacts {
            path: "/dev/infiniband/uverbs0".into(),
            exists: true,
            accessible: errno.is_none(),
            stat: Some(NodeStat {
                mode,
                uid: owner.0,
                gid: group.0,
                owner: Some(owner.1.into()),
                group: Some(group.1.into()),
            }),
            open_errno: errno,
            process: Some(ProcessIds {
                uid: 1000,
                gid: 1000,
                groups: vec![1000],
                user: Some("alice".into()),
                group_names: vec![(1000, "alice".into())],
            }),
            ..DeviceNodeFacts::default()
        }
    }

    fn all(r: &Refusal) -> String {
        format!("{} | {} | {}", r.message, r.evidence.join(" | "), r.fix)
    }

    /// `chmod 000` as a non-root user: the mode, the owner, the user, EACCES, and a fix that
    /// changes the mode; no route, no cgroup, no container.
    #[test]
    fn mode_0000_names_the_mode_owner_user_and_eacces() {
        // Inside a container too: the mode explains the refusal, so the container is not
        // mentioned.
        let mut n = node(0, (0, "root"), (0, "root"), Some(libc::EACCES));
        n.container = vec![Marker::DockerEnv];
        let r = refusal(&n, None).unwrap();
        let text = all(&r);
        for want in [
            "/dev/infiniband/uverbs0 is mode 0000 owner root:root",
            "this process runs as uid 1000 (alice), gid 1000 (alice), groups 1000 (alice)",
            "others' bits apply: ---",
            "open read-write fails with EACCES",
            "open(/dev/infiniband/uverbs0, O_RDWR) failed with EACCES",
        ] {
            assert!(text.contains(want), "missing {want:?} in {text}");
        }
        assert!(
            r.fix.starts_with("`chmod 0666 /dev/infiniband/uverbs0`"),
            "{}",
            r.fix
        );
        for never in ["route", "cgroup", "container", "Docker", "usermod"] {
            assert!(!text.contains(never), "{never:?} in {text}");
        }
    }

    /// A node its group may open: the fix adds the user to that group first.
    #[test]
    fn group_mode_fix_adds_the_user_to_the_group() {
        let r = refusal(
            &node(0o660, (0, "root"), (111, "rdma"), Some(libc::EACCES)),
            None,
        )
        .unwrap();
        assert!(
            r.message.contains("mode 0660 owner root:rdma"),
            "{}",
            r.message
        );
        assert!(
            r.fix
                .starts_with("add alice to group rdma (`usermod -aG rdma alice`"),
            "{}",
            r.fix
        );
        assert!(!all(&r).contains("cgroup"));
    }

    /// The mode allows the open and it still failed (EPERM, a device cgroup's answer): only
    /// then are the cgroup, an ACL and an LSM named, and a container only when one was seen.
    #[test]
    fn mode_allows_yet_refused_names_what_else_refuses() {
        let host = node(0o666, (0, "root"), (0, "root"), Some(libc::EPERM));
        let r = refusal(&host, None).unwrap();
        assert!(
            r.message
                .contains("the mode allows read-write, yet open fails with EPERM"),
            "{}",
            r.message
        );
        assert!(
            r.message.contains("device cgroup")
                && r.message.contains("no container marker was seen")
        );
        assert!(!r.fix.contains("--device"), "{}", r.fix);
        let mut ctr = host.clone();
        ctr.container = vec![Marker::DockerEnv];
        let r = refusal(&ctr, None).unwrap();
        assert!(
            r.message.contains("this container's device cgroup"),
            "{}",
            r.message
        );
        assert!(r
            .evidence
            .iter()
            .any(|e| e == "/.dockerenv exists (Docker)"));
        assert!(
            r.fix.contains("--device=/dev/infiniband/uverbs0"),
            "{}",
            r.fix
        );
    }

    /// check's kernel choice with the CM failing (EPERM, as librdmacm passes on a node it
    /// could not open) and rxe0's node refusing this process: the node is the finding, and
    /// nothing blames the route.
    #[test]
    fn check_names_the_node_not_the_route() {
        use crate::diagnose::kernel_choice::{judge, Checked};
        use crate::model::diagnostic::Severity;
        use crate::model::failure::{Cause, Failure, Step};
        let checked = Checked {
            device: "rxe0",
            port: 1,
            index: Some(1),
            auto: false,
            gids: &[],
            port_netdev: Some("veth0"),
        };
        let cm = DeviceNodeFacts {
            path: "/dev/infiniband/rdma_cm".into(),
            exists: true,
            accessible: true,
            ..DeviceNodeFacts::default()
        };
        let uverbs = node(0, (0, "root"), (0, "root"), Some(libc::EACCES));
        let peer = "192.168.77.2".parse().unwrap();
        let failed = || {
            Err(Failure::toward(
                Step::CmResolveAddr,
                Cause::call("rdma_resolve_addr", libc::EPERM),
                Some("192.168.77.2:0".into()),
            ))
        };
        let (f, choice) = judge(peer, &checked, None, None, &[cm, uverbs], |_, _| failed());
        assert_eq!(f.severity, Severity::Fail);
        assert!(choice.kernel.is_none());
        let text = format!(
            "{} | {} | {}",
            f.message,
            f.evidence.join(" | "),
            f.fix.clone().unwrap_or_default()
        );
        for want in [
            "/dev/infiniband/uverbs0 is mode 0000 owner root:root",
            "uid 1000 (alice)",
            "EACCES",
            "chmod 0666 /dev/infiniband/uverbs0",
        ] {
            assert!(text.contains(want), "missing {want:?} in {text}");
        }
        for never in ["route", "cannot resolve", "cgroup"] {
            assert!(!text.contains(never), "{never:?} in {text}");
        }
        // With every node open to this process the CM's own failure is judged as before.
        let (f, _) = judge(peer, &checked, None, None, &[], |_, _| failed());
        assert!(f.message.contains("cannot resolve a path"), "{}", f.message);
    }

    /// pingpong --cm: address resolution ends in ADDR_ERROR with EPERM because librdmacm
    /// could not open the source's uverbs node; the node is explained, not the route.
    #[test]
    fn a_cm_failure_names_the_refused_node_not_the_route() {
        use crate::model::facts::Facts;
        use crate::model::failure::{Cause, EventKind, Failure, Step};
        let failure = Failure::toward(
            Step::CmResolveAddr,
            Cause::cm_event(EventKind::AddrError, -libc::EPERM),
            Some("192.168.77.2:18515".into()),
        );
        let facts = Facts {
            device_node: Some(node(0, (0, "root"), (0, "root"), Some(libc::EACCES))),
            evidence: vec!["ip route get 192.168.77.2: local (an address of this host)".into()],
            ..Facts::default()
        };
        let x = crate::diagnose::explain(&failure, &facts);
        assert_eq!(x.code.as_str(), "device-access");
        assert!(
            x.message
                .contains("/dev/infiniband/uverbs0 is mode 0000 owner root:root"),
            "{}",
            x.message
        );
        let words = format!("{} {}", x.message, x.fix.clone().unwrap_or_default());
        assert!(
            !words.contains("route") && !words.contains("cgroup"),
            "{words}"
        );
        // Without a refused node the CM rules judge it as before.
        let plain = crate::diagnose::explain(&failure, &Facts::default());
        assert_ne!(plain.code.as_str(), "device-access");
    }

    /// Nothing to say about a node that opened or does not exist; unknown ids say unknown.
    #[test]
    fn no_refusal_without_a_failed_open() {
        assert!(refusal(&node(0o666, (0, "root"), (0, "root"), None), None).is_none());
        let missing = DeviceNodeFacts {
            exists: false,
            ..node(0, (0, "root"), (0, "root"), Some(libc::ENOENT))
        };
        assert!(refusal(&missing, None).is_none());
        let mut blind = node(0, (0, "root"), (0, "root"), Some(libc::EACCES));
        blind.process = None;
        let r = refusal(&blind, None).unwrap();
        assert!(
            r.message.contains("what refused it is not known"),
            "{}",
            r.message
        );
        assert!(!all(&r).contains("cgroup"));
        // The caller's errno counts when this process did not try the open itself.
        let mut theirs = node(0, (0, "root"), (0, "root"), None);
        theirs.accessible = false;
        assert!(refusal(&theirs, Some(libc::EACCES))
            .unwrap()
            .message
            .contains("EACCES"));
    }
}
