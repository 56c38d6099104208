//! The port a pair server listens on: this rank's pair port (`--port-base` + rank) unless
//! another process holds it (most often another fabric run on this host, with the same
//! default `--port-base`), then the next of this rank's own (+ size each time, so the ranks
//! of one run never take each other's), then one the kernel picks. A port counts as this
//! run's only once the pair test's own child listens there: the partner is never sent to
//! a stranger's server.

use crate::gather::procfs;

/// Who holds a TCP listener: a process /proc names, or one it does not show (another
/// user's, without privilege).
pub type Holder = Option<(u32, String)>;

/// The ports to try, in order.
pub struct PortCandidates {
    ports: std::vec::IntoIter<u16>,
    ephemeral: bool,
}

/// Ports of this rank's own after the first, before the kernel picks one.
const OWN_PORTS: u32 = 8;

impl PortCandidates {
    pub fn new(first: u16, size: u32) -> PortCandidates {
        let step = size.max(1);
        let ports: Vec<u16> = (0..=OWN_PORTS)
            .filter_map(|k| u16::try_from(u32::from(first) + k * step).ok())
            .filter(|p| *p != 0)
            .collect();
        PortCandidates {
            ports: ports.into_iter(),
            ephemeral: true,
        }
    }
}

impl Iterator for PortCandidates {
    type Item = u16;

    fn next(&mut self) -> Option<u16> {
        if let Some(p) = self.ports.next() {
            return Some(p);
        }
        if std::mem::take(&mut self.ephemeral) {
            // The kernel's choice, released for the child to bind: free a moment ago.
            return crate::wire::rendezvous::listen(0)
                .ok()
                .and_then(|l| l.local_addr().ok())
                .map(|a| a.port());
        }
        None
    }
}

/// Who holds `port` when a listener cannot bind it; None when it is free.
pub fn port_taken(port: u16) -> Option<Holder> {
    match crate::wire::rendezvous::listen(port) {
        Ok(_) => None,
        Err(_) => Some(holder(port)),
    }
}

fn holder(port: u16) -> Holder {
    procfs::port_holders(port).into_iter().next()
}

#[derive(Debug, PartialEq, Eq)]
pub enum PortListener {
    None,
    /// The pair test's child (`pid`) listens.
    Ours,
    Other(Holder),
}

/// Who listens on `port` now, against the child `pid`.
pub fn listener_of(port: u16, pid: u32) -> PortListener {
    // The cheap read first: the walk over every process's descriptors only once a
    // listener exists.
    if !procfs::listening(port) {
        return PortListener::None;
    }
    let holders = procfs::port_holders(port);
    if holders.iter().any(|(p, _)| *p == pid) {
        PortListener::Ours
    } else {
        PortListener::Other(holders.into_iter().next())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ranks_own_ports_come_first_then_the_kernels() {
        let ports: Vec<u16> = PortCandidates::new(19001, 4)
            .take(OWN_PORTS as usize + 1)
            .collect();
        assert_eq!(ports[..3], [19001, 19005, 19009]);
        assert_eq!(ports.len(), OWN_PORTS as usize + 1);
        // Near the top of the range only the ports that exist, then the kernel's.
        let top: Vec<u16> = PortCandidates::new(65534, 4).collect();
        assert_eq!(top[0], 65534);
        assert_eq!(top.len(), 2, "{top:?}");
    }

    #[test]
    fn a_held_port_is_taken_and_this_process_is_named() {
        let l = crate::wire::rendezvous::listen(0).unwrap();
        let port = l.local_addr().unwrap().port();
        let held = port_taken(port).expect("the port is held");
        if let Some((pid, _)) = held {
            assert_eq!(pid, std::process::id());
        }
        assert!(matches!(
            listener_of(port, std::process::id()),
            PortListener::Ours
        ));
        assert!(matches!(
            listener_of(port, u32::MAX),
            PortListener::Other(_)
        ));
        drop(l);
        assert_eq!(port_taken(port), None);
    }
}
