//! Two ports of one host on one IPv4 subnet: the receiving netdev drops an ARP request
//! whose sender address is one of its own host's unless `accept_local` is set, and strict
//! reverse-path filtering (`rp_filter` 1) drops it too. One wording of the consequence and
//! one command that changes what is wrong, for `check`, `doctor`, a failed run and `--cm`.

/// What the sysctls were read as: `accept_local` (all OR the netdev's) and `rp_filter` (the
/// max of all and the netdev's, as the kernel applies it). None: not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SameHostSysctls {
    pub accept_local: Option<bool>,
    pub rp_filter: Option<u32>,
}

impl SameHostSysctls {
    /// The sysctls drop a same-host ARP request.
    pub fn drops(&self) -> bool {
        self.accept_local == Some(false) || self.rp_filter == Some(1)
    }
}

/// What a dropped same-host ARP request does to a run: the kernel resolves the peer's MAC
/// at RTR, so RTR times out; when a neighbour entry is already cached RTR passes and the
/// packets the peer never answers end in retry-exceeded (measured on rxe).
pub const CONSEQUENCE: &str = "RTR fails with ETIMEDOUT when the kernel must ARP for the peer; with a neighbour entry already cached RTR passes and the run ends in retry-exceeded";

/// The command that changes what the sysctls show on `netdevs` (the ports' netdevs, each
/// named once): `accept_local=1` where it is off or unread, `rp_filter=2` (loose) where the
/// strict mode is in force. The kernel applies the max of `all` and a netdev's rp_filter,
/// so 2 on each netdev is loose whatever `all` holds; it leaves every other netdev as it is.
pub fn fix(netdevs: &[&str], seen: SameHostSysctls) -> String {
    let mut names: Vec<&str> = Vec::new();
    for n in netdevs {
        if !names.contains(n) {
            names.push(n);
        }
    }
    let mut settings = Vec::new();
    if seen.accept_local != Some(true) {
        settings.push("net.ipv4.conf.all.accept_local=1".to_string());
        settings.extend(
            names
                .iter()
                .map(|n| format!("net.ipv4.conf.{n}.accept_local=1")),
        );
    }
    if seen.rp_filter == Some(1) {
        settings.extend(
            names
                .iter()
                .map(|n| format!("net.ipv4.conf.{n}.rp_filter=2")),
        );
    }
    if settings.is_empty() {
        // Nothing read drops it; the caller words why it asks (an unread sysctl).
        return format!(
            "check accept_local and rp_filter on {} (sysctl net.ipv4.conf.{{all,{}}}.accept_local)",
            names.join(" and "),
            names.first().copied().unwrap_or("DEV")
        );
    }
    format!("sysctl -w {}", settings.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The command changes only what is wrong: rp_filter 1 with accept_local already on
    /// sets rp_filter, not accept_local again.
    #[test]
    fn the_fix_changes_what_the_sysctls_show() {
        let rp = fix(
            &["veth0", "veth1"],
            SameHostSysctls {
                accept_local: Some(true),
                rp_filter: Some(1),
            },
        );
        assert_eq!(
            rp,
            "sysctl -w net.ipv4.conf.veth0.rp_filter=2 net.ipv4.conf.veth1.rp_filter=2"
        );
        assert!(!rp.contains("accept_local"), "{rp}");

        let al = fix(
            &["veth0", "veth1", "veth0"],
            SameHostSysctls {
                accept_local: Some(false),
                rp_filter: Some(0),
            },
        );
        assert_eq!(al, "sysctl -w net.ipv4.conf.all.accept_local=1 net.ipv4.conf.veth0.accept_local=1 net.ipv4.conf.veth1.accept_local=1");
        assert!(!al.contains("rp_filter"), "{al}");

        let both = fix(
            &["veth1"],
            SameHostSysctls {
                accept_local: Some(false),
                rp_filter: Some(1),
            },
        );
        assert!(both.contains("accept_local=1") && both.contains("veth1.rp_filter=2"));
        assert!(SameHostSysctls {
            accept_local: Some(true),
            rp_filter: Some(1)
        }
        .drops());
        assert!(!SameHostSysctls {
            accept_local: Some(true),
            rp_filter: Some(2)
        }
        .drops());
    }
}
