//! The address the CM binds for a device and port, read from its GID table and netdev.

use std::net::IpAddr;
use std::path::Path;

use crate::error::{Error, Result};
use crate::gather::net;
use crate::gather::sysfs::SysfsRoot;
use crate::model::failure::{Cause, Failure, Step};

/// The address the CM binds for DEV/PORT, as the CM connects by IP, not by device: the
/// IPv4 address in the port's GID table (RoCE), else an address of the port's netdev (the
/// IPoIB interface on InfiniBand, or an IPv6-only RoCE port). A port with none is
/// explained before the CM is even asked (cm-no-address, cm-no-ipoib-address).
pub fn port_address(sysfs: &Path, device: &str, port: u32, peer: Option<IpAddr>) -> Result<IpAddr> {
    let root = SysfsRoot::new(sysfs);
    // The kernel CM refuses a source and a peer of different families (EINVAL), so the
    // peer's family decides; without a peer, IPv4 first (RoCE tables carry it most).
    let want_v6 = peer.map(|p| p.to_canonical().is_ipv6());
    let family_fits = |ip: &IpAddr| want_v6.map_or(true, |v6| ip.is_ipv6() == v6);
    // A link-local address needs a scope the CM is not given here.
    let usable = |ip: &IpAddr| match ip {
        IpAddr::V4(v4) => !v4.is_unspecified(),
        IpAddr::V6(v6) => (v6.segments()[0] & 0xffc0) != 0xfe80 && !v6.is_unspecified(),
    };
    let from_gids: Vec<IpAddr> = root
        .gid_table(device, port, false)?
        .iter()
        .filter(|e| e.gid_type != Some(crate::model::device::GidType::Ib))
        .map(|e| e.gid.ip())
        .filter(usable)
        .collect();
    let facts = root.port(device, port)?;
    let netdev = facts.netdev.map(|n| n.name);
    let from_netdev: Vec<IpAddr> = netdev
        .as_deref()
        .and_then(netdev_addresses)
        .unwrap_or_default()
        .into_iter()
        .filter(usable)
        .collect();
    let all: Vec<IpAddr> = from_gids.into_iter().chain(from_netdev).collect();
    let pick = all
        .iter()
        .filter(|ip| family_fits(ip))
        .find(|ip| want_v6.is_some() || ip.is_ipv4())
        .or_else(|| all.iter().find(|ip| family_fits(ip)));
    if let Some(ip) = pick {
        return Ok(*ip);
    }
    if let (Some(peer), false) = (peer, all.is_empty()) {
        let listed: Vec<String> = all.iter().map(IpAddr::to_string).collect();
        return Err(Error::Usage(format!(
            "{device}/{port} has no {} address for the peer {peer}: {} has only {}; \
             give the peer's {} address, or add one (ip addr add ADDR/PREFIX dev {})",
            if peer.is_ipv6() { "IPv6" } else { "IPv4" },
            netdev.as_deref().unwrap_or("its netdev"),
            listed.join(", "),
            if peer.is_ipv6() { "IPv4" } else { "IPv6" },
            netdev.as_deref().unwrap_or("DEV"),
        )));
    }
    let mut err = Failure::toward_addr(Step::CmSetup, None, Cause::NoAddress { netdev });
    err.context.device = device.to_string();
    err.context.port = port;
    err.context.link_layer = facts.link_layer.clone();
    Err(err.into())
}

/// The addresses of a netdev in this namespace; None when netlink cannot tell.
pub(super) fn netdev_addresses(name: &str) -> Option<Vec<IpAddr>> {
    let dev = net::netdev(name).ok()??;
    let all = net::addresses().ok()?;
    Some(
        all.into_iter()
            .filter(|a| a.ifindex == dev.index)
            .map(|a| a.address)
            .collect(),
    )
}

pub(crate) fn first_device(sysfs: &Path) -> Result<String> {
    let root = SysfsRoot::new(sysfs);
    root.device_names()?
        .into_iter()
        .next()
        .ok_or_else(|| Error::NoDevices {
            path: root.path().join("class/infiniband"),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traffic::pingpong::cm::plain_report;

    #[test]
    fn port_address_from_fixture() {
        let root =
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysfs/rxe-veth-basic");
        assert_eq!(
            port_address(root, "rxe0", 1, None).unwrap(),
            "192.168.77.1".parse::<IpAddr>().unwrap()
        );
        assert_eq!(
            port_address(root, "rxe1", 1, None).unwrap(),
            "192.168.77.2".parse::<IpAddr>().unwrap()
        );
        assert!(matches!(
            port_address(root, "mlx5_9", 1, None),
            Err(Error::NoSuchDevice { .. })
        ));
        assert!(matches!(
            port_address(root, "rxe0", 2, None),
            Err(Error::NoSuchPort { .. })
        ));
    }

    /// An InfiniBand port has no IPv4 GID: its address is on the IPoIB interface, and
    /// without one the CM cannot work, said before the CM is asked.
    #[test]
    fn port_address_on_infiniband_without_ipoib_address() {
        let root = &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysfs/ib-hca");
        // The address comes from this host's interfaces; a host with a real ib0 answers
        // for itself.
        if matches!(net::netdev("ib0"), Ok(Some(_))) {
            eprintln!("skipped: this host has an ib0 of its own");
            return;
        }
        let Err(Error::Failure(e)) = port_address(root, "mlx5_0", 1, None) else {
            panic!("an IB port without IPoIB address must fail");
        };
        assert!(e.is_infiniband());
        let x = plain_report(&e).explanation;
        assert_eq!(x.code, "cm-no-ipoib-address");
        assert!(
            e.to_string().contains("mlx5_0/1): no IP address on ib0"),
            "{}",
            e
        );
        assert!(
            x.fix_text().contains("ip addr add ADDR/PREFIX dev ib0"),
            "{}",
            x.fix_text()
        );
    }
}
