use super::*;
use crate::diagnose::gidselect::select_gid;
use crate::diagnose::gidselect::tests::{entry, rxe0};
use crate::model::device::{GidType, OperState};
use crate::model::diagnostic::Severity;

type Vars = &'static [(&'static str, &'static str)];

/// Runs `validate_env` on rxe0 (toward `peer`, or no peer) with `vars` set.
fn run_on(
    table: &[GidEntry],
    link_layer: LinkLayer,
    peer: Option<&str>,
    vars: &[(&str, &str)],
) -> Vec<Diagnostic> {
    let want = Want {
        peer: peer.map(|p| p.parse().unwrap()),
        route_netdev: peer.map(|_| "veth0".into()),
        peer_on_link: peer.map(|_| true),
        ..Want::default()
    };
    let auto = select_gid(table, &link_layer, &want);
    let devices = vec!["rxe0".to_string(), "rxe1".to_string()];
    let ports = vec![("rxe0".to_string(), 1), ("rxe1".to_string(), 1)];
    let netdevs = vec![
        ("eth0".to_string(), Some(OperState::Up)),
        ("lo".to_string(), Some(OperState::Unknown)),
        ("veth0".to_string(), Some(OperState::Up)),
        ("veth1".to_string(), Some(OperState::Down)),
    ];
    let target = EnvTarget {
        device: "rxe0",
        port: 1,
        link_layer: &link_layer,
        table,
        table_len: 2,
        auto: &auto,
        want: &want,
        devices: &devices,
        ports: &ports,
        netdevs: &netdevs,
    };
    let vars: Vec<(String, String)> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    validate_env(
        |k| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()),
        &target,
    )
}

fn check_cases(
    table: &[GidEntry],
    link_layer: LinkLayer,
    peer: Option<&str>,
    cases: &[(Vars, Severity, &str)],
) {
    for (vars, severity, text) in cases {
        let findings = run_on(table, link_layer.clone(), peer, vars);
        // UCX_NET_DEVICES without UCX_IB_GID_INDEX on RoCE adds UCX's auto choice.
        let unset_auto = usize::from(
            link_layer == LinkLayer::Ethernet
                && vars.iter().any(|(k, _)| *k == "UCX_NET_DEVICES")
                && !vars.iter().any(|(k, _)| *k == "UCX_IB_GID_INDEX"),
        );
        assert_eq!(findings.len(), vars.len() + unset_auto, "{vars:?}");
        // The finding of the last variable given.
        let code = code_of(vars.last().unwrap().0);
        let f = findings.iter().find(|f| f.code == code).unwrap();
        let all = format!(
            "{} {} {}",
            f.message,
            f.evidence.join(" "),
            f.fix.clone().unwrap_or_default()
        );
        assert_eq!(f.severity, *severity, "{vars:?} {peer:?}: {all}");
        assert!(all.contains(text), "{vars:?} {peer:?}: {all}");
    }
}

#[test]
fn gid_index_variables_toward_a_peer() {
    let peer = Some("192.168.77.2");
    check_cases(
        &rxe0(),
        LinkLayer::Ethernet,
        peer,
        &[
            (
                &[("NCCL_IB_GID_INDEX", "0")],
                Severity::Fail,
                "set NCCL_IB_GID_INDEX=1",
            ),
            (&[("NCCL_IB_GID_INDEX", "1")], Severity::Ok, "GID index 1"),
            // strtoll(s, NULL, 0): hex is a number to NCCL.
            (&[("NCCL_IB_GID_INDEX", "0x1")], Severity::Ok, "'0x1' is 1"),
            (
                &[("NCCL_IB_GID_INDEX", "-1")],
                Severity::Ok,
                "NCCL 2.21+ selects GID index 1",
            ),
            (
                &[("NCCL_IB_GID_INDEX", "7")],
                Severity::Fail,
                "names GID index 7, which rxe0/1 does not have",
            ),
            // No digits is 0 to NCCL, and index 0 does not fit the peer.
            (
                &[("NCCL_IB_GID_INDEX", "three")],
                Severity::Fail,
                "'three' has no digits, which is 0",
            ),
            // Trailing text is ignored, but said.
            (
                &[("NCCL_IB_GID_INDEX", "1abc")],
                Severity::Warn,
                "'abc' after it is ignored",
            ),
            (
                &[("NCCL_IB_GID_INDEX", "01")],
                Severity::Warn,
                "a leading 0 is octal",
            ),
            (&[("NCCL_IB_GID_INDEX", "")], Severity::Info, "empty"),
            (
                &[("UCX_IB_GID_INDEX", "auto")],
                Severity::Ok,
                "UCX under auto will use GID index 1 (RoCE v2, ::ffff:192.168.77.1 on veth0), as rdmactl would",
            ),
            (
                &[("UCX_IB_GID_INDEX", "0")],
                Severity::Fail,
                "UCX_IB_GID_INDEX=1",
            ),
            (
                &[("UCX_IB_GID_INDEX", "x")],
                Severity::Fail,
                "UCX refuses it",
            ),
            (&[("UCX_IB_GID_INDEX", "0x1")], Severity::Fail, "'0x1' is 0"),
        ],
    );
}

/// Without a peer, a link-local or IPv6 index may be right: a warning, not a failure.
#[test]
fn gid_index_variables_without_a_peer() {
    check_cases(
        &rxe0(),
        LinkLayer::Ethernet,
        None,
        &[
            (
                &[("NCCL_IB_GID_INDEX", "0")],
                Severity::Warn,
                "works only within one L2 segment",
            ),
            (&[("NCCL_IB_GID_INDEX", "1")], Severity::Ok, "GID index 1"),
            (
                &[("UCX_IB_GID_INDEX", "0")],
                Severity::Warn,
                "works only within one L2 segment",
            ),
        ],
    );
    // An IPv6 port with NCCL_IB_ADDR_FAMILY=AF_INET6: the global IPv6 GID is fine.
    let v6 = vec![
        entry(0, "fe80::1", Some(GidType::RoceV2), Some("eth0")),
        entry(1, "2001:db8::1", Some(GidType::RoceV2), Some("eth0")),
    ];
    check_cases(
        &v6,
        LinkLayer::Ethernet,
        None,
        &[
            (
                &[
                    ("NCCL_IB_ADDR_FAMILY", "AF_INET6"),
                    ("NCCL_IB_GID_INDEX", "1"),
                ],
                Severity::Ok,
                "selects GID index 1",
            ),
            (&[("NCCL_IB_GID_INDEX", "1")], Severity::Warn, "IPv6"),
        ],
    );
}

/// On InfiniBand a GID index only matters for routed traffic: no failure for it.
#[test]
fn gid_index_variables_on_infiniband() {
    let ib = vec![entry(0, "fe80::2:c903:a:1", Some(GidType::Ib), None)];
    check_cases(
        &ib,
        LinkLayer::InfiniBand,
        None,
        &[
            (
                &[("NCCL_IB_GID_INDEX", "0")],
                Severity::Ok,
                "addressed by LID",
            ),
            (
                &[("NCCL_IB_GID_INDEX", "3")],
                Severity::Warn,
                "only for routed (global) traffic",
            ),
            (&[("NCCL_IB_GID_INDEX", "-1")], Severity::Ok, "choose"),
            (
                &[("UCX_IB_GID_INDEX", "0")],
                Severity::Ok,
                "addressed by LID",
            ),
            (
                &[("NCCL_IB_ROCE_VERSION_NUM", "1")],
                Severity::Info,
                "only to choose a RoCE GID",
            ),
        ],
    );
}

#[test]
fn nccl_choice_variables() {
    check_cases(
        &rxe0(),
        LinkLayer::Ethernet,
        None,
        &[
            (
                &[("NCCL_IB_ROCE_VERSION_NUM", "2")],
                Severity::Ok,
                "NCCL 2.21+ selects GID index 1",
            ),
            (
                &[("NCCL_IB_ROCE_VERSION_NUM", "1")],
                Severity::Warn,
                "has no IPv4 GID of RoCE v1",
            ),
            (
                &[("NCCL_IB_ROCE_VERSION_NUM", "3")],
                Severity::Warn,
                "which no GID has",
            ),
            (
                &[("NCCL_IB_ADDR_FAMILY", "AF_INET6")],
                Severity::Warn,
                "has no IPv6 GID that is not link-local",
            ),
            (
                &[("NCCL_IB_ADDR_FAMILY", "ipv6")],
                Severity::Warn,
                "ignores it without a word and uses AF_INET",
            ),
            (
                &[("NCCL_IB_ADDR_RANGE", "192.168.77.0/24")],
                Severity::Ok,
                "indices that fit: 1",
            ),
            (
                &[("NCCL_IB_ADDR_RANGE", "10.0.0.0/8")],
                Severity::Warn,
                "has no IPv4 GID in 10.0.0.0/8",
            ),
            (
                &[("NCCL_IB_ADDR_RANGE", "10.0.0.0")],
                Severity::Warn,
                "no '/'",
            ),
            (
                &[
                    ("NCCL_IB_GID_INDEX", "1"),
                    ("NCCL_IB_ADDR_RANGE", "10.0.0.0/8"),
                ],
                Severity::Info,
                "NCCL_IB_GID_INDEX=1 names the GID",
            ),
        ],
    );
}

#[test]
fn device_and_interface_lists() {
    check_cases(
        &rxe0(),
        LinkLayer::Ethernet,
        None,
        &[
            (&[("NCCL_IB_HCA", "rxe")], Severity::Ok, "rxe0, rxe1"),
            (&[("NCCL_IB_HCA", "rxe0:1")], Severity::Ok, "selects rxe0"),
            (
                &[("NCCL_IB_HCA", "=rxe1")],
                Severity::Warn,
                "leaves out rxe0/1",
            ),
            (
                &[("NCCL_IB_HCA", "^rxe0")],
                Severity::Warn,
                "leaves out rxe0/1",
            ),
            (
                &[("NCCL_IB_HCA", "^=rxe1")],
                Severity::Ok,
                "selects rxe0 (port 1)",
            ),
            (
                &[("NCCL_IB_HCA", "^=rxe")],
                Severity::Warn,
                "no device matches rxe",
            ),
            (&[("NCCL_IB_HCA", "^")], Severity::Fail, "selects no device"),
            (
                &[("NCCL_IB_HCA", "mlx5")],
                Severity::Fail,
                "selects no device",
            ),
            (
                &[("NCCL_IB_HCA", "rxe0,mlx5_0")],
                Severity::Warn,
                "no device matches mlx5_0",
            ),
            (
                &[("NCCL_IB_HCA", "rxe0:x")],
                Severity::Fail,
                "not a port number",
            ),
            (
                &[("NCCL_SOCKET_IFNAME", "eth")],
                Severity::Ok,
                "matches eth0",
            ),
            (
                &[("NCCL_SOCKET_IFNAME", "^lo,veth")],
                Severity::Ok,
                "matches eth0",
            ),
            (
                &[("NCCL_SOCKET_IFNAME", "=veth1")],
                Severity::Warn,
                "only interfaces that are down",
            ),
            (
                &[("NCCL_SOCKET_IFNAME", "ib0")],
                Severity::Fail,
                "matches no netdev",
            ),
            (
                &[("UCX_NET_DEVICES", "rxe0:1")],
                Severity::Ok,
                "lets UCX use rxe0:1",
            ),
            (&[("UCX_NET_DEVICES", "all")], Severity::Ok, "every device"),
            (
                &[("UCX_NET_DEVICES", "mlx5_0:1")],
                Severity::Fail,
                "names no device on this host",
            ),
            (
                &[("UCX_NET_DEVICES", "rxe0:1,mlx5_0:1")],
                Severity::Warn,
                "not on this host: mlx5_0:1",
            ),
            (
                &[("UCX_NET_DEVICES", "rxe0")],
                Severity::Fail,
                "DEV:PORT (e.g. rxe0:1)",
            ),
            (
                &[("UCX_NET_DEVICES", "rxe1:1,eth0")],
                Severity::Warn,
                "leaves out rxe0:1",
            ),
            (
                &[("UCX_NET_DEVICES", "^rxe0:1")],
                Severity::Warn,
                "leaves out rxe0:1",
            ),
            (
                &[("UCX_NET_DEVICES", "")],
                Severity::Fail,
                "allows no network device",
            ),
        ],
    );
    assert!(run_on(&rxe0(), LinkLayer::Ethernet, None, &[]).is_empty());
}

/// The VM's case: rxe0 holds 192.168.77.1 (index 1) and 10.93.0.1 (index 2) on veth0, the
/// peer is 10.93.0.2. UCX under auto takes index 1 whatever the peer, so auto is judged as
/// an explicit index 1 is: a warning that it is not on the peer's subnet.
#[test]
fn ucx_auto_is_judged_as_the_index_ucx_will_use() {
    let mut table = rxe0();
    table.push(entry(
        2,
        "::ffff:10.93.0.1",
        Some(GidType::RoceV2),
        Some("veth0"),
    ));
    let want = Want {
        peer: Some("10.93.0.2".parse().unwrap()),
        route_netdev: Some("veth0".into()),
        peer_on_link: Some(true),
        subnet_addresses: vec!["10.93.0.1".parse().unwrap()],
        ..Want::default()
    };
    let link_layer = LinkLayer::Ethernet;
    let auto = select_gid(&table, &link_layer, &want);
    assert_eq!(auto.chosen, Some(2));
    let devices = vec!["rxe0".to_string()];
    let ports = vec![("rxe0".to_string(), 1)];
    let target = EnvTarget {
        device: "rxe0",
        port: 1,
        link_layer: &link_layer,
        table: &table,
        table_len: 3,
        auto: &auto,
        want: &want,
        devices: &devices,
        ports: &ports,
        netdevs: &[],
    };
    let judge = |value: &str| {
        let findings = validate_env(
            |k| (k == "UCX_IB_GID_INDEX").then(|| value.to_string()),
            &target,
        );
        assert_eq!(findings.len(), 1);
        findings.into_iter().next().unwrap()
    };
    let explicit = judge("1");
    let auto = judge("auto");
    assert_eq!(explicit.severity, Severity::Warn, "{explicit:?}");
    assert_eq!(auto.severity, explicit.severity, "{auto:?}");
    assert_eq!(
        auto.message,
        "UCX under auto will use GID index 1 (RoCE v2, ::ffff:192.168.77.1 on veth0), which is not on the peer's subnet"
    );
    assert_eq!(auto.fix, explicit.fix);
    assert_eq!(
        auto.fix.as_deref(),
        Some("set UCX_IB_GID_INDEX=2: use GID index 2 (RoCE v2, ::ffff:10.93.0.1 on veth0)")
    );
    // Unset is UCX's default, auto: judged the same in a UCX job (UCX_NET_DEVICES set).
    let unset = validate_env(
        |k| (k == "UCX_NET_DEVICES").then(|| "rxe0:1".to_string()),
        &target,
    );
    assert_eq!(unset.len(), 2, "{unset:?}");
    assert_eq!(unset[1].message, auto.message);
    assert_eq!(unset[1].severity, Severity::Warn);
    assert_eq!(unset[1].evidence[0].text, "UCX_IB_GID_INDEX unset (auto)");
    // Without any UCX variable nothing is said of UCX.
    assert!(validate_env(|_| None, &target).is_empty());
    let seen: Vec<&str> = auto.evidence.iter().map(|s| s.text.as_str()).collect();
    assert!(
        seen.iter().any(|s| s.contains("uct_ib_device_select_gid")),
        "{seen:?}"
    );
    assert!(
        seen.iter().any(|s| s.contains("not on the peer's subnet")),
        "{seen:?}"
    );
}
