//! The ARP sysctls of a netdev, read from /proc/sys.

use serde::Serialize;

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

// Facts for the explanation rules (check, pingpong, selftest)
