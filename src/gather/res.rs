//! What `res` reads: every device's resource dumps over the RDMA netlink (`net::rdma_res`)
//! into a `Snapshot`, and, for each process that owns one or that the user named, its
//! command, state, cgroup and whether it holds a uverbs device open, from /proc. Errors
//! name the device, the dump and the errno, with the next step.

use std::path::Path;

use crate::gather::net::rdma_res::{self, DumpError};
use crate::model::errno::errno_text;
use crate::model::res::{ProcState, ProcessInfo, Snapshot};

/// The devices of this network namespace, by index and name; `only` keeps one by name
/// (an error names the ones that exist).
pub fn devices(only: Option<&str>) -> Result<Vec<(u32, String)>, ResError> {
    let replies = rdma_res::dump(rdma_res::CMD_GET, None)
        .map_err(|e| ResError::dump("the RDMA device dump (rdma dev)", None, e))?;
    let all = rdma_res::devices(&replies);
    match only {
        None => Ok(all),
        Some(name) => {
            let names = all.iter().map(|(_, n)| n.clone()).collect();
            let kept: Vec<_> = all.into_iter().filter(|(_, n)| n == name).collect();
            if kept.is_empty() {
                Err(ResError::NoSuchDevice {
                    name: name.to_string(),
                    available: names,
                })
            } else {
                Ok(kept)
            }
        }
    }
}

/// Every resource of `devices`, one dump per kind and device.
pub fn snapshot(devices: &[(u32, String)]) -> Result<Snapshot, ResError> {
    let mut s = Snapshot {
        devices: devices.iter().map(|(_, n)| n.clone()).collect(),
        ..Default::default()
    };
    for (index, name) in devices {
        let ask = |op: u16, what: &'static str| {
            rdma_res::dump(op, Some(*index)).map_err(|e| ResError::dump(what, Some(name), e))
        };
        let bad = |what: &'static str| {
            let name = name.clone();
            move |detail: String| ResError::Parse {
                what,
                device: name,
                detail,
            }
        };
        s.qps.extend(
            rdma_res::qps(&ask(rdma_res::CMD_RES_QP_GET, "QP dump")?).map_err(bad("QP dump"))?,
        );
        s.cm_ids.extend(
            rdma_res::cm_ids(&ask(rdma_res::CMD_RES_CM_ID_GET, "CM ID dump")?)
                .map_err(bad("CM ID dump"))?,
        );
        s.mrs.extend(
            rdma_res::mrs(&ask(rdma_res::CMD_RES_MR_GET, "MR dump")?).map_err(bad("MR dump"))?,
        );
        s.cqs.extend(
            rdma_res::cqs(&ask(rdma_res::CMD_RES_CQ_GET, "CQ dump")?).map_err(bad("CQ dump"))?,
        );
        s.pds.extend(
            rdma_res::pds(&ask(rdma_res::CMD_RES_PD_GET, "PD dump")?).map_err(bad("PD dump"))?,
        );
    }
    Ok(s)
}

/// Why `res` could not read the resources.
#[derive(Debug, thiserror::Error)]
pub enum ResError {
    #[error("no RDMA device '{name}' in this network namespace; devices: {}", if .available.is_empty() { "none".to_string() } else { .available.join(", ") })]
    NoSuchDevice {
        name: String,
        available: Vec<String>,
    },
    #[error("{what}{}: the kernel answered {}; {}", .device.as_ref().map(|d| format!(" of {d}")).unwrap_or_default(), errno_text(*.errno), errno_fix(*.errno))]
    Kernel {
        what: &'static str,
        device: Option<String>,
        errno: i32,
    },
    #[error(
        "{0}; is this a Linux host with the RDMA core (ib_core) loaded? `rdmactl doctor` says"
    )]
    Socket(String),
    #[error("cannot parse the kernel's reply to the {what} of {device}: {detail}; `rdma res show` shows what the kernel sends")]
    Parse {
        what: &'static str,
        device: String,
        detail: String,
    },
    #[error("no process {0}: /proc/{0} does not exist (it ended, or lives in another PID namespace); `pgrep -a NAME` lists the PIDs to give")]
    NoSuchPid(u32),
    #[error("no process named '{0}' runs here (/proc/*/comm, 15 characters at most); `pgrep -l {0}` or `ps -eo pid,comm` lists the names")]
    NoSuchComm(String),
}

impl ResError {
    fn dump(what: &'static str, device: Option<&str>, e: DumpError) -> ResError {
        match e {
            DumpError::Errno(errno) => ResError::Kernel {
                what,
                device: device.map(str::to_string),
                errno,
            },
            DumpError::Other(text) => ResError::Socket(text),
        }
    }
}

/// The next step after a refused dump. The resource dumps need no capability (only the
/// raw driver dumps and MR keys do); a refusal means an older kernel or a policy.
fn errno_fix(errno: i32) -> &'static str {
    match errno {
        libc::EPERM | libc::EACCES => {
            "a security policy (SELinux, a seccomp filter, a container's netlink rules) refused it: run as root on the host"
        }
        libc::EOPNOTSUPP | libc::EINVAL => {
            "this kernel has no RDMA resource tracking over netlink (before 4.16) or does not know this dump: compare with `rdma res show`"
        }
        libc::ENODEV => "the device went away during the dump: run again",
        _ => "compare with `rdma res show` on this host",
    }
}

/// What /proc says about `pid`, under `proc` (/proc live, a planted tree in tests); `None`
/// when the process does not exist.
pub fn process(proc: &Path, pid: u32) -> Option<ProcessInfo> {
    let dir = proc.join(pid.to_string());
    let stat = std::fs::read_to_string(dir.join("stat")).ok();
    let comm = std::fs::read_to_string(dir.join("comm"))
        .ok()
        .map(|c| c.trim_end_matches('\n').to_string());
    if stat.is_none() && comm.is_none() && !dir.is_dir() {
        return None;
    }
    let cgroup = std::fs::read_to_string(dir.join("cgroup")).ok();
    let (cgroup, container) = cgroup.as_deref().map(parse_cgroup).unwrap_or((None, None));
    Some(ProcessInfo {
        pid,
        comm,
        state: stat.as_deref().and_then(parse_stat_state),
        cgroup,
        container,
        holds_uverbs: holds_uverbs(&dir),
    })
}

/// The state letter of /proc/PID/stat: the field after the command, which is in
/// parentheses and may itself hold spaces and parentheses (so the last `)` ends it).
pub fn parse_stat_state(stat: &str) -> Option<ProcState> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace()
        .next()?
        .chars()
        .next()
        .map(ProcState::from_letter)
}

/// The cgroup v2 path (`0::PATH`), else the first line's path; and a container ID found
/// in it: the 64-hex ID after `docker-`, `libpod-`, `cri-containerd-`, `crio-` or a
/// `docker/` directory, shortened to 12 characters as `docker ps` shows it.
pub fn parse_cgroup(text: &str) -> (Option<String>, Option<String>) {
    let path = text
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .or_else(|| text.lines().next().and_then(|l| l.splitn(3, ':').nth(2)))
        .map(str::to_string);
    let container = path.as_deref().and_then(|p| {
        p.split('/').rev().find_map(|part| {
            let part = part.strip_suffix(".scope").unwrap_or(part);
            let id = ["docker-", "libpod-", "cri-containerd-", "crio-"]
                .iter()
                .find_map(|pre| part.strip_prefix(pre))
                .unwrap_or(part);
            (id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit()))
                .then(|| id[..12].to_string())
        })
    });
    (path, container)
}

/// Whether one of the process's open files is a uverbs device; `None` when its fd
/// directory cannot be read. Bounded: a process with a million files is not walked past
/// 65536 of them.
fn holds_uverbs(dir: &Path) -> Option<bool> {
    let fds = std::fs::read_dir(dir.join("fd")).ok()?;
    Some(fds.take(65_536).flatten().any(|e| {
        std::fs::read_link(e.path())
            .map(|t| t.to_string_lossy().starts_with("/dev/infiniband/uverbs"))
            .unwrap_or(false)
    }))
}

/// The PIDs whose /proc/PID/comm is `name` (the kernel's 15-character command name; a
/// longer `name` matches its first 15 characters).
pub fn pids_named(proc: &Path, name: &str) -> Vec<u32> {
    let want: String = name.chars().take(15).collect();
    let Ok(dir) = std::fs::read_dir(proc) else {
        return Vec::new();
    };
    let mut pids: Vec<u32> = dir
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(proc.join(pid.to_string()).join("comm"))
                .map(|c| c.trim_end_matches('\n') == want)
                .unwrap_or(false)
        })
        .collect();
    pids.sort_unstable();
    pids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_state_after_a_command_with_parentheses() {
        assert_eq!(
            parse_stat_state("4242 (ibv_rc_pingpong) T 1 4242 4242 0 -1"),
            Some(ProcState::Stopped)
        );
        assert_eq!(
            parse_stat_state("7 (a) b) (c) S 1 2"),
            Some(ProcState::Sleeping)
        );
        assert_eq!(parse_stat_state("garbage"), None);
        assert_eq!(parse_stat_state("1 (x)"), None);
    }

    #[test]
    fn cgroup_path_and_container_id() {
        let id = "3f1b2c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f809";
        let (path, c) = parse_cgroup(&format!("0::/system.slice/docker-{id}.scope\n"));
        assert_eq!(path.unwrap(), format!("/system.slice/docker-{id}.scope"));
        assert_eq!(c.as_deref(), Some("3f1b2c4d5e6f"));
        let (_, c) = parse_cgroup(&format!(
            "0::/kubepods.slice/kubepods-burstable.slice/cri-containerd-{id}.scope\n"
        ));
        assert_eq!(c.as_deref(), Some("3f1b2c4d5e6f"));
        let (path, c) = parse_cgroup("0::/user.slice/user-1000.slice/session-3.scope\n");
        assert_eq!(
            path.as_deref(),
            Some("/user.slice/user-1000.slice/session-3.scope")
        );
        assert_eq!(c, None);
        // cgroup v1 only: the first hierarchy's path.
        let (path, _) = parse_cgroup("12:pids:/slurm/uid_1000/job_17\n11:cpu:/\n");
        assert_eq!(path.as_deref(), Some("/slurm/uid_1000/job_17"));
    }

    #[test]
    fn planted_proc_tree() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("77");
        std::fs::create_dir_all(p.join("fd")).unwrap();
        std::fs::write(p.join("stat"), "77 (sleep) S 1 77 77 0").unwrap();
        std::fs::write(p.join("comm"), "sleep\n").unwrap();
        std::fs::write(p.join("cgroup"), "0::/job\n").unwrap();
        std::os::unix::fs::symlink("/dev/infiniband/uverbs0", p.join("fd/3")).unwrap();
        let info = process(dir.path(), 77).unwrap();
        assert_eq!(info.comm.as_deref(), Some("sleep"));
        assert_eq!(info.state, Some(ProcState::Sleeping));
        assert_eq!(info.cgroup.as_deref(), Some("/job"));
        assert_eq!(info.holds_uverbs, Some(true));
        assert!(process(dir.path(), 78).is_none());
        assert_eq!(pids_named(dir.path(), "sleep"), [77]);
        assert!(pids_named(dir.path(), "slee").is_empty());
    }
}
