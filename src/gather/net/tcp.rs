//! Who listens on a TCP port, read from /proc/net/tcp{,6} and the processes' fds.

use std::path::Path;

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
    let mut holders = Vec::new();
    let Ok(procs) = std::fs::read_dir(proc_root) else {
        return holders;
    };
    for entry in procs.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(entry.path().join("fd")) else {
            continue;
        };
        let holds = fds.flatten().any(|fd| {
            std::fs::read_link(fd.path())
                .ok()
                .and_then(|l| l.to_str().map(|l| wanted.iter().any(|w| w == l)))
                .unwrap_or(false)
        });
        if holds {
            let name = std::fs::read_to_string(entry.path().join("comm"))
                .map(|c| c.trim().to_string())
                .unwrap_or_else(|_| "?".into());
            holders.push((pid, name));
        }
    }
    holders
}

#[cfg(test)]
mod tests {
    use super::*;

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
