//! Everything read from /proc, read once and parsed here: the memlock limit and
//! CAP_IPC_LOCK of this process, MemAvailable, the loaded modules, the network namespace,
//! the ARP sysctls of a netdev, and the processes holding a TCP port. The `_in` readers
//! take the root, so `--procfs` reads a captured host's /proc (a sosreport's proc/) as
//! this host's is read.

use std::path::Path;

use serde::Serialize;

/// Where the kernel mounts it; the readers that take a root take this one outside tests.
pub const PROC: &str = "/proc";

fn proc_root() -> &'static Path {
    Path::new(PROC)
}

/// RLIMIT_MEMLOCK and CAP_IPC_LOCK of this process, as /proc/self/{limits,status} say.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LockLimits {
    /// The soft `Max locked memory`: None when the line is missing, Some(None) unlimited.
    pub memlock_soft: Option<Option<u64>>,
    /// Whether CapEff holds CAP_IPC_LOCK; None when the line is missing.
    pub cap_ipc_lock: Option<bool>,
}

/// Read this process's locked-memory limit and CAP_IPC_LOCK.
pub fn lock_limits() -> LockLimits {
    lock_limits_in(proc_root())
}

/// The locked-memory limit and CAP_IPC_LOCK of `self/` under `root`: in a capture, the
/// process that took it.
pub fn lock_limits_in(root: &Path) -> LockLimits {
    let limits = std::fs::read_to_string(root.join("self/limits")).unwrap_or_default();
    let status = std::fs::read_to_string(root.join("self/status")).unwrap_or_default();
    LockLimits {
        memlock_soft: parse_memlock_soft_limit(&limits),
        cap_ipc_lock: parse_has_cap_ipc_lock(&status),
    }
}

/// Whether `self/status` under `root` gives effective UID 0; None when it does not say.
pub fn effective_root_in(root: &Path) -> Option<bool> {
    let status = std::fs::read_to_string(root.join("self/status")).ok()?;
    parse_effective_uid(&status).map(|uid| uid == 0)
}

/// The effective UID, the second field of `Uid:` (real, effective, saved, filesystem).
pub fn parse_effective_uid(status: &str) -> Option<u32> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// This process's effective uid and gid and its supplementary groups, from
/// /proc/self/status: what the kernel checks a file's mode against.
pub fn process_ids() -> Option<(u32, u32, Vec<u32>)> {
    parse_process_ids(&std::fs::read_to_string(proc_root().join("self/status")).ok()?)
}

/// `Uid:`'s and `Gid:`'s second fields (effective) and `Groups:`'s list (empty when the
/// process has none; a kernel always writes the line).
pub fn parse_process_ids(status: &str) -> Option<(u32, u32, Vec<u32>)> {
    let field = |key: &str| -> Option<&str> { status.lines().find_map(|l| l.strip_prefix(key)) };
    let effective =
        |key: &str| -> Option<u32> { field(key)?.split_whitespace().nth(1)?.parse().ok() };
    let groups = field("Groups:")?
        .split_whitespace()
        .map(str::parse)
        .collect::<Result<Vec<u32>, _>>()
        .ok()?;
    Some((effective("Uid:")?, effective("Gid:")?, groups))
}

/// `MemAvailable` of this host, in bytes; None when /proc/meminfo does not say.
pub fn mem_available() -> Option<u64> {
    let meminfo = std::fs::read_to_string(proc_root().join("meminfo")).unwrap_or_default();
    parse_mem_available(&meminfo)
}

/// Whether /proc/modules lists `module`; false when it cannot be read.
pub fn module_loaded(module: &str) -> bool {
    module_loaded_in(proc_root(), module)
}

/// Whether `modules` under `root` lists `module`; false when it cannot be read.
pub fn module_loaded_in(root: &Path, module: &str) -> bool {
    let line_start = format!("{module} ");
    std::fs::read_to_string(root.join("modules"))
        .is_ok_and(|m| m.lines().any(|l| l.starts_with(&line_start)))
}

/// The tables iptables-legacy has loaded in this network namespace
/// (`net/ip_tables_names`, `net/ip6_tables_names`); None when ip_tables (ip6_tables) is not
/// loaded. Asking the kernel for a table by name would load its module: only the listed
/// ones are read.
pub fn legacy_iptables_tables(v6: bool) -> Option<Vec<String>> {
    let file = if v6 {
        "net/ip6_tables_names"
    } else {
        "net/ip_tables_names"
    };
    let text = std::fs::read_to_string(proc_root().join(file)).ok()?;
    Some(
        text.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(String::from)
            .collect(),
    )
}

/// rxe (kernel 6.1) works only in the initial network namespace. Reading /proc/1/ns/net
/// needs privilege; without it the answer is unknown and the check is skipped.
pub fn in_initial_netns() -> Option<bool> {
    let ours = std::fs::read_link(proc_root().join("self/ns/net")).ok()?;
    let init = std::fs::read_link(proc_root().join("1/ns/net")).ok()?;
    Some(ours == init)
}

/// The kernel's hostname (`/proc/sys/kernel/hostname`), trimmed; None when unreadable.
pub fn hostname() -> Option<String> {
    std::fs::read_to_string(proc_root().join("sys/kernel/hostname"))
        .ok()
        .map(|h| h.trim().to_string())
}

/// The running kernel's release (`uname -r`), trimmed; None when unreadable.
pub fn kernel_release() -> Option<String> {
    std::fs::read_to_string(proc_root().join("sys/kernel/osrelease"))
        .ok()
        .map(|s| s.trim().to_string())
}

/// The kernel command line (`/proc/cmdline`), trimmed; None when unreadable.
pub fn cmdline() -> Option<String> {
    std::fs::read_to_string(proc_root().join("cmdline"))
        .ok()
        .map(|s| s.trim().to_string())
}

/// The processes (pid, name) holding a TCP listener on `port` in this host's /proc.
pub fn port_holders(port: u16) -> Vec<(u32, String)> {
    tcp_port_holders(proc_root(), port)
}

/// Whether any socket of this network namespace listens on TCP `port`.
pub fn listening(port: u16) -> bool {
    tcp_listening(proc_root(), port)
}

/// The ARP sysctls of `netdev` in this host's /proc.
pub fn netdev_arp_sysctls(netdev: &str) -> ArpSysctls {
    arp_sysctls(proc_root(), netdev)
}

/// `MemAvailable` from /proc/meminfo, in bytes; None when the line is missing.
pub fn parse_mem_available(meminfo: &str) -> Option<u64> {
    meminfo.lines().find_map(|l| {
        let rest = l.strip_prefix("MemAvailable:")?;
        let kib: u64 = rest.trim().trim_end_matches("kB").trim().parse().ok()?;
        Some(kib * 1024)
    })
}

/// `Max locked memory` from /proc/self/limits: None means unlimited.
pub fn parse_memlock_soft_limit(limits: &str) -> Option<Option<u64>> {
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max locked memory"))?;
    let soft = line["Max locked memory".len()..]
        .split_whitespace()
        .next()?;
    if soft == "unlimited" {
        Some(None)
    } else {
        soft.parse().ok().map(Some)
    }
}

/// Whether CapEff in /proc/self/status holds CAP_IPC_LOCK (bit 14).
pub fn parse_has_cap_ipc_lock(status: &str) -> Option<bool> {
    const CAP_IPC_LOCK: u32 = 14;
    let hex = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))?
        .trim();
    u64::from_str_radix(hex, 16)
        .ok()
        .map(|caps| caps & (1 << CAP_IPC_LOCK) != 0)
}

/// The ARP knobs that decide whether a same-host peer answers (the same-host-drop rule reads them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArpSysctls {
    pub netdev: String,
    /// all OR dev, as the kernel combines it.
    pub accept_local: Option<bool>,
    /// max(all, dev): 1 (strict) drops the reply.
    pub rp_filter: Option<u32>,
    /// max(all, dev): 0 answers ARP for any local address on any interface (ARP flux).
    pub arp_ignore: Option<u32>,
    /// max(all, dev): 2 announces only the interface's own address as the ARP sender.
    pub arp_announce: Option<u32>,
}

/// Read `accept_local` and `rp_filter` for `netdev` under `proc_root` (normally `/proc`).
pub fn arp_sysctls(proc_root: &std::path::Path, netdev: &str) -> ArpSysctls {
    let read = |dev: &str, key: &str| -> Option<u32> {
        std::fs::read_to_string(proc_root.join("sys/net/ipv4/conf").join(dev).join(key))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    let accept_local = match (read("all", "accept_local"), read(netdev, "accept_local")) {
        (None, None) => None,
        (a, d) => Some(a.unwrap_or(0) != 0 || d.unwrap_or(0) != 0),
    };
    let rp_filter = match (read("all", "rp_filter"), read(netdev, "rp_filter")) {
        (None, None) => None,
        (a, d) => Some(a.unwrap_or(0).max(d.unwrap_or(0))),
    };
    let max_of = |key: &str| match (read("all", key), read(netdev, key)) {
        (None, None) => None,
        (a, d) => Some(a.unwrap_or(0).max(d.unwrap_or(0))),
    };
    ArpSysctls {
        netdev: netdev.to_string(),
        accept_local,
        rp_filter,
        arp_ignore: max_of("arp_ignore"),
        arp_announce: max_of("arp_announce"),
    }
}

/// Socket inodes listening on TCP `port`, from /proc/net/tcp or tcp6 text (state 0A is
/// LISTEN; the local address is `HEXADDR:HEXPORT`).
pub fn parse_tcp_listeners(table: &str, port: u16) -> Vec<u64> {
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let local = fields.get(1)?;
            let state = fields.get(3)?;
            let inode = fields.get(9)?;
            let (_, hex_port) = local.rsplit_once(':')?;
            (*state == "0A" && u16::from_str_radix(hex_port, 16).ok()? == port)
                .then(|| inode.parse().ok())
                .flatten()
        })
        .collect()
}

/// Whether any socket of this network namespace listens on TCP `port` (IPv4 or IPv6).
pub fn tcp_listening(proc_root: &Path, port: u16) -> bool {
    ["net/tcp", "net/tcp6"]
        .iter()
        .filter_map(|t| std::fs::read_to_string(proc_root.join(t)).ok())
        .any(|text| !parse_tcp_listeners(&text, port).is_empty())
}

/// The processes (pid, name) that hold a TCP listener on `port`, as `ss -ltnp` names them;
/// empty when /proc does not tell (another user's process without privilege).
pub fn tcp_port_holders(proc_root: &Path, port: u16) -> Vec<(u32, String)> {
    let mut inodes: Vec<u64> = ["net/tcp", "net/tcp6"]
        .iter()
        .filter_map(|t| std::fs::read_to_string(proc_root.join(t)).ok())
        .flat_map(|text| parse_tcp_listeners(&text, port))
        .filter(|i| *i != 0)
        .collect();
    inodes.sort_unstable();
    inodes.dedup();
    if inodes.is_empty() {
        return Vec::new();
    }
    let wanted: Vec<String> = inodes.iter().map(|i| format!("socket:[{i}]")).collect();
    fd_holders(proc_root, |link| wanted.iter().any(|w| w == link), None)
        .holders
        .into_iter()
        .map(|h| (h.pid, h.comm))
        .collect()
}

/// What one walk over /proc/*/fd found: the processes with an fd whose link `matches`,
/// each once (with its first matching link), and how far the walk got.
#[derive(Debug, Default)]
pub struct FdHolders {
    pub holders: Vec<crate::model::device::NodeHolder>,
    pub scan: crate::model::device::HolderScan,
}

/// The processes holding an fd whose link text `matches` (`socket:[123]`,
/// `/dev/infiniband/uverbs1 (deleted)`), as `ls -l /proc/*/fd` shows them. With a
/// `deadline`, the walk stops there (a host with many processes and fds must not hold a
/// command up) and says so.
pub fn fd_holders(
    proc_root: &Path,
    matches: impl Fn(&str) -> bool,
    deadline: Option<std::time::Duration>,
) -> FdHolders {
    let started = std::time::Instant::now();
    let mut out = FdHolders::default();
    out.scan.limit_ms = deadline.map_or(0, |d| d.as_millis() as u64);
    let Ok(procs) = std::fs::read_dir(proc_root) else {
        return out;
    };
    for entry in procs.flatten() {
        if deadline.is_some_and(|d| started.elapsed() > d) {
            out.scan.timed_out = true;
            break;
        }
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(entry.path().join("fd")) else {
            out.scan.unreadable += 1;
            continue;
        };
        out.scan.processes += 1;
        let found = fds.flatten().find_map(|fd| {
            let link = std::fs::read_link(fd.path()).ok()?;
            let link = link.to_str()?;
            matches(link).then(|| format!("{} -> {link}", fd.path().display()))
        });
        if let Some(link) = found {
            let comm = std::fs::read_to_string(entry.path().join("comm"))
                .map(|c| c.trim().to_string())
                .unwrap_or_else(|_| "?".into());
            let cmdline = std::fs::read(entry.path().join("cmdline"))
                .map(|b| {
                    String::from_utf8_lossy(&b)
                        .trim_end_matches('\0')
                        .replace('\0', " ")
                })
                .unwrap_or_default();
            out.holders.push(crate::model::device::NodeHolder {
                pid,
                comm,
                cmdline,
                link,
            });
        }
    }
    out.holders.sort_by_key(|h| h.pid);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: &str =
        "Limit                     Soft Limit           Hard Limit           Units     \n\
Max cpu time              unlimited            unlimited            seconds   \n\
Max locked memory         16384                16384                bytes     \n";

    #[test]
    fn memlock_limit_forms() {
        assert_eq!(parse_memlock_soft_limit(LIMITS), Some(Some(16384)));
        let unlimited = LIMITS.replace(
            "16384                16384",
            "unlimited            unlimited",
        );
        assert_eq!(parse_memlock_soft_limit(&unlimited), Some(None));
        assert_eq!(parse_memlock_soft_limit("Max cpu time unlimited"), None);
        assert_eq!(parse_memlock_soft_limit("Max locked memory  lots"), None);
    }

    #[test]
    fn effective_uid_is_the_second_field() {
        assert_eq!(
            parse_effective_uid("Name:\tx\nUid:\t1000\t0\t0\t0\n"),
            Some(0)
        );
        assert_eq!(
            parse_effective_uid("Uid:\t0\t1000\t1000\t1000\n"),
            Some(1000)
        );
        assert_eq!(parse_effective_uid("Gid:\t0\t0\t0\t0\n"), None);
    }

    #[test]
    fn process_ids_are_the_effective_ones_and_the_groups() {
        let status =
            "Name:\tx\nUid:\t0\t1000\t1000\t1000\nGid:\t0\t100\t100\t100\nGroups:\t27 100 \n";
        assert_eq!(parse_process_ids(status), Some((1000, 100, vec![27, 100])));
        let none = "Uid:\t1000\t1000\t1000\t1000\nGid:\t1000\t1000\t1000\t1000\nGroups:\t\n";
        assert_eq!(parse_process_ids(none), Some((1000, 1000, vec![])));
        assert_eq!(parse_process_ids("Uid:\t0\t0\t0\t0\n"), None);
    }

    #[test]
    fn cap_ipc_lock_bit() {
        assert_eq!(
            parse_has_cap_ipc_lock("CapEff:\t000001fffeffffff\n"),
            Some(true)
        );
        assert_eq!(
            parse_has_cap_ipc_lock("CapEff:\t0000000000000000\n"),
            Some(false)
        );
        assert_eq!(
            parse_has_cap_ipc_lock("CapEff:\t0000000000004000\n"),
            Some(true)
        );
        assert_eq!(parse_has_cap_ipc_lock("CapPrm:\t0000000000004000\n"), None);
    }

    /// /proc/net/tcp6 as the kernel writes it: one LISTEN on 18515 (0x4853), one
    /// established connection from that port, and a LISTEN on another port.
    #[test]
    fn tcp_listeners_from_proc_net() {
        let table = "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:4853 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 41234 1 0000000000000000 100 0 0 10 0
   1: 0000000000000000FFFF00000100A8C0:4853 0000000000000000FFFF00000200A8C0:B94E 01 00000000:00000000 00:00000000 00000000     0        0 41240 1 0000000000000000 20 4 30 10 -1
   2: 00000000000000000000000000000000:0016 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 999 1 0000000000000000 100 0 0 10 0
";
        assert_eq!(parse_tcp_listeners(table, 18515), vec![41234]);
        assert_eq!(parse_tcp_listeners(table, 22), vec![999]);
        assert!(parse_tcp_listeners(table, 80).is_empty());
        assert!(parse_tcp_listeners("garbage", 80).is_empty());
    }

    /// This test's own listener is found in this host's /proc, with this process's name.
    #[test]
    fn tcp_port_holder_is_this_process() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let holders = tcp_port_holders(Path::new("/proc"), port);
        assert!(
            holders.iter().any(|(pid, _)| *pid == std::process::id()),
            "{holders:?}"
        );
    }
}
