//! The live queries compared with iproute2 on this host.

use super::query::neighbour;
use super::*;

/// `ip -j route get DST [oif DEV]` as (dev, gateway, prefsrc, type), or None without `ip`.
fn ip_route_get(dst: &str, oif: Option<&str>) -> Option<serde_json::Value> {
    let mut cmd = std::process::Command::new("ip");
    cmd.args(["-j", "route", "get", dst]);
    if let Some(dev) = oif {
        cmd.args(["oif", dev]);
    }
    let out = cmd.output().ok()?;
    if !out.status.success() {
        return None;
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    v.get(0).cloned()
}

fn compare(dst: &str, oif: Option<&str>) {
    let want = ip_route_get(dst, oif)
        .unwrap_or_else(|| panic!("`ip -j route get {dst}` failed: it must work here"));
    let route = route_get(dst.parse().unwrap(), oif).expect("route_get");
    let s = |k: &str| want.get(k).and_then(|v| v.as_str()).map(str::to_string);
    assert_eq!(route.oif, s("dev"), "dev for {dst}: {want}");
    assert_eq!(
        route.gateway.map(|g| g.to_string()),
        s("gateway"),
        "gateway for {dst}: {want}"
    );
    assert_eq!(
        route.prefsrc.map(|g| g.to_string()),
        s("prefsrc"),
        "prefsrc for {dst}: {want}"
    );
    assert_eq!(
        route.kind,
        s("type").unwrap_or_else(|| "unicast".into()),
        "type for {dst}: {want}"
    );
}

/// Another address on the subnet of each IPv4 address of an up, non-loopback netdev:
/// a unicast route through that netdev on any host with an address, internet or not.
fn on_link_destinations() -> Vec<(String, String)> {
    let links = ip_json(&["-j", "addr"]).expect("`ip -j addr` must work here");
    let mut out = Vec::new();
    for link in &links {
        let name = link["ifname"].as_str().unwrap_or_default();
        if name == "lo" || link["operstate"].as_str() != Some("UP") {
            continue;
        }
        for a in link["addr_info"].as_array().into_iter().flatten() {
            let (Some(ip), Some(len)) = (a["local"].as_str(), a["prefixlen"].as_u64()) else {
                continue;
            };
            if let (Ok(std::net::IpAddr::V4(v4)), true) = (ip.parse(), len <= 30) {
                let other = std::net::Ipv4Addr::from(u32::from(v4) ^ 1);
                out.push((other.to_string(), name.to_string()));
            }
        }
    }
    out
}

// Live comparisons with iproute2 need a host with up interfaces, addresses and
// neighbours; the VM suite runs them (tests/vm/cases/03-net-live.sh), where they
// must pass, not skip.
#[test]
#[ignore = "needs a live host with addressed netdevs and `ip`; run by the VM suite"]
fn route_get_matches_ip_route_get() {
    let mut compared = 0;
    for dst in ["127.0.0.1", "::1"] {
        compare(dst, None);
        compared += 1;
    }
    let on_link = on_link_destinations();
    assert!(!on_link.is_empty(), "no addressed netdev to route through");
    for (dst, dev) in &on_link {
        compare(dst, None);
        compare(dst, Some(dev));
        compared += 2;
    }
    println!("compared {compared} lookups with `ip -j route get`");
}

fn ip_json(args: &[&str]) -> Option<Vec<serde_json::Value>> {
    let out = std::process::Command::new("ip").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    serde_json::from_slice(&out.stdout).ok()
}

#[test]
#[ignore = "needs `ip`; run by the VM suite"]
fn links_and_addresses_match_ip() {
    let links = ip_json(&["-j", "addr"]).expect("`ip -j addr` must work here");
    let devs = netdevs().expect("link dump");
    let addrs = addresses().expect("address dump");
    for link in &links {
        let name = link["ifname"].as_str().unwrap();
        let dev = devs
            .iter()
            .find(|d| d.name == name)
            .unwrap_or_else(|| panic!("{name} missing: {devs:?}"));
        assert_eq!(
            u64::from(dev.index),
            link["ifindex"].as_u64().unwrap(),
            "{name}"
        );
        assert_eq!(dev.mtu.map(u64::from), link["mtu"].as_u64(), "{name}");
        assert_eq!(
            dev.operstate,
            OperState::parse(link["operstate"].as_str().unwrap()),
            "{name}"
        );
        for a in link["addr_info"].as_array().unwrap() {
            let ip: IpAddr = a["local"].as_str().unwrap().parse().unwrap();
            let found = addrs
                .iter()
                .find(|x| x.ifindex == dev.index && x.address == ip);
            let found = found.unwrap_or_else(|| panic!("{ip} on {name} missing: {addrs:?}"));
            assert_eq!(
                u64::from(found.prefix_len),
                a["prefixlen"].as_u64().unwrap(),
                "{ip}"
            );
        }
    }
    assert_eq!(devs.len(), links.len());
}

#[test]
#[ignore = "needs neighbour entries; run by the VM suite, which adds them"]
fn neighbours_match_ip_neigh() {
    let entries = ip_json(&["-j", "neigh"]).expect("`ip -j neigh` must work here");
    assert!(
        !entries.is_empty(),
        "the neighbour table is empty: nothing to compare"
    );
    let devs = netdevs().expect("link dump");
    for e in &entries {
        let ip: IpAddr = e["dst"].as_str().unwrap().parse().unwrap();
        let dev = devs
            .iter()
            .find(|d| Some(d.name.as_str()) == e["dev"].as_str())
            .unwrap();
        // States move on their own (REACHABLE → STALE); presence and MAC are stable.
        let n = neighbour(ip, dev.index).expect("neighbour dump");
        let n = n.unwrap_or_else(|| panic!("no neighbour {ip} on {}", dev.name));
        assert_eq!(n.lladdr.as_deref(), e["lladdr"].as_str(), "{ip}");
    }
    println!(
        "compared {} neighbour entries with `ip -j neigh`",
        entries.len()
    );
}

#[test]
fn loopback_exists_and_has_its_address() {
    let lo = netdev("lo")
        .expect("link dump")
        .expect("lo exists in every netns");
    assert!(lo.admin_up);
    let addrs = addresses().expect("address dump");
    assert!(addrs
        .iter()
        .any(|a| a.ifindex == lo.index && a.address == IpAddr::from([127, 0, 0, 1])));
    assert!(netdev("no-such-netdev0").unwrap().is_none());
    assert!(matches!(
        route_get("8.8.8.8".parse().unwrap(), Some("no-such-netdev0")),
        Err(NetError::NoSuchNetdev(_))
    ));
}
