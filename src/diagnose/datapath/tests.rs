use super::explain;
use crate::diagnose::gidselect::tests::{entry, mlx5, rxe0};
use crate::model::device::{GidType, LinkLayer, OperState, PhysState, PortState};
use crate::model::diagnostic::{Diagnostic, Seen, Source};
use crate::model::errno::{
    WC_LOC_LEN_ERR, WC_LOC_QP_OP_ERR, WC_RETRY_EXC_ERR, WC_RNR_RETRY_EXC_ERR,
};
use crate::model::facts::{
    DeviceNodeFacts, MemlockFacts, NetdevFacts, NodeStat, ProcessIds, QpFacts,
};
use crate::model::facts::{EndFacts, Facts, RouteFacts};
use crate::model::failure::{Cause, Failure, Segment, Step};
use crate::model::gid::Gid;

pub(super) fn rxe_local(index: Option<u32>) -> EndFacts {
    EndFacts {
        device: "rxe0".into(),
        port: 1,
        link_layer: Some(LinkLayer::Ethernet),
        port_state: Some(PortState::Active),
        phys_state: Some(PhysState::LinkUp),
        lid: Some(0),
        active_mtu: Some(1024),
        gid_index: index,
        gid: None,
        gid_type: None,
        netdev: None,
        port_netdev: None,
        gid_table: rxe0(),
        gid_table_len: Some(1024),
        segment: None,
    }
}

pub(super) fn rxe_peer(gid: &str) -> EndFacts {
    EndFacts {
        device: "rxe1".into(),
        port: 1,
        link_layer: Some(LinkLayer::Ethernet),
        port_state: Some(PortState::Active),
        lid: Some(0),
        active_mtu: Some(1024),
        gid_index: Some(1),
        gid: Some(Gid::parse(gid).unwrap()),
        gid_type: Some(GidType::RoceV2),
        ..EndFacts::default()
    }
}

/// Same-host rxe0 → rxe1 in the VM, accept_local set.
fn vm_route(accept_local: bool) -> RouteFacts {
    RouteFacts {
        peer: Some("192.168.77.2".parse().unwrap()),
        route_netdev: Some("lo".into()),
        peer_is_local: true,
        peer_local_netdev: Some("veth1".into()),
        accept_local: Some(accept_local),
        rp_filter: Some(0),
        ..RouteFacts::default()
    }
}

pub(super) fn rxe_ctx(index: Option<u32>, peer_gid: &str) -> Facts {
    Facts {
        local: rxe_local(index),
        peer: Some(rxe_peer(peer_gid)),
        route: Some(vm_route(true)),
        netdev: Some(NetdevFacts {
            name: "veth0".into(),
            exists: true,
            up: true,
            operstate: Some(OperState::Up),
            mtu: Some(1500),
        }),
        ..Facts::default()
    }
}

pub(super) fn ib_ctx(lid: u16, state: PortState, phys: PhysState) -> Facts {
    Facts {
        local: EndFacts {
            device: "mlx5_0".into(),
            port: 1,
            link_layer: Some(LinkLayer::InfiniBand),
            port_state: Some(state),
            phys_state: Some(phys),
            lid: Some(lid),
            active_mtu: Some(4096),
            gid_index: None,
            gid_table: vec![entry(0, "fe80::248a:703:5d:7f1", Some(GidType::Ib), None)],
            ..EndFacts::default()
        },
        peer: Some(EndFacts {
            link_layer: Some(LinkLayer::InfiniBand),
            lid: Some(6),
            active_mtu: Some(4096),
            ..EndFacts::default()
        }),
        ..Facts::default()
    }
}

fn mlx5_ctx(index: u32, peer_gid: &str, peer_type: GidType) -> Facts {
    Facts {
        local: EndFacts {
            device: "mlx5_0".into(),
            port: 1,
            link_layer: Some(LinkLayer::Ethernet),
            port_state: Some(PortState::Active),
            active_mtu: Some(4096),
            gid_index: Some(index),
            gid_table: mlx5(),
            gid_table_len: Some(255),
            ..EndFacts::default()
        },
        peer: Some(EndFacts {
            link_layer: Some(LinkLayer::Ethernet),
            active_mtu: Some(4096),
            gid_index: Some(3),
            gid: Some(Gid::parse(peer_gid).unwrap()),
            gid_type: Some(peer_type),
            ..EndFacts::default()
        }),
        route: Some(RouteFacts {
            peer: Some(Gid::parse(peer_gid).unwrap().ip()),
            route_netdev: Some("ens1f0".into()),
            neighbour_state: Some("REACHABLE".into()),
            ..RouteFacts::default()
        }),
        ..Facts::default()
    }
}

struct Case {
    name: &'static str,
    step: Step,
    failure: Cause,
    ctx: Facts,
    code: &'static str,
    /// Substrings the rendered explanation must contain.
    says: &'static [&'static str],
    suggested: Option<u32>,
}

fn errno(e: i32) -> Cause {
    Cause::errno(e)
}

/// rxe0's index 1 on a VLAN 10 netdev against a peer's untagged GID, both /24.
fn vlan_ctx() -> Facts {
    let mut ctx = rxe_ctx(Some(1), "::ffff:192.168.77.2");
    ctx.local.segment = Some(Segment {
        vlan: Some(10),
        prefix_len: Some(24),
    });
    if let Some(p) = ctx.peer.as_mut() {
        p.segment = Some(Segment {
            vlan: None,
            prefix_len: Some(24),
        });
    }
    ctx
}

/// The VLAN cause, and only it: not the generic list of guesses, and not at all when a
/// router is on the way or the VLANs agree.
#[test]
fn a_vlan_mismatch_is_said_and_only_where_it_decides() {
    let failure = Failure::new(Step::Poll, wc(WC_RETRY_EXC_ERR), Default::default());
    let exp = explain(&failure, &vlan_ctx());
    let t = text(&exp);
    assert!(!t.contains("it died"), "{t}");
    assert!(!t.contains("switch filtering"), "{t}");
    let mut routed = vlan_ctx();
    if let Some(r) = routed.route.as_mut() {
        r.gateway = Some("192.168.77.254".parse().unwrap());
    }
    assert_ne!(explain(&failure, &routed).code, "vlan-mismatch");
    let mut same = vlan_ctx();
    if let Some(p) = same.peer.as_mut() {
        p.segment = same.local.segment;
    }
    assert_ne!(explain(&failure, &same).code, "vlan-mismatch");
    let mut unknown = vlan_ctx();
    if let Some(p) = unknown.peer.as_mut() {
        p.segment = None;
    }
    assert_ne!(explain(&failure, &unknown).code, "vlan-mismatch");
    // No route read: a router on the way is not ruled out.
    let mut no_route = vlan_ctx();
    no_route.route = None;
    assert_ne!(explain(&failure, &no_route).code, "vlan-mismatch");
}

fn wc(status: u32) -> Cause {
    Cause::WcStatus {
        status,
        vendor_err: 0x81,
        opcode: 0,
        op: None,
    }
}

/// Everything an explanation says, for substring checks.
pub(crate) fn text(x: &Diagnostic) -> String {
    let seen: Vec<&str> = x.evidence.iter().map(|e| e.text.as_str()).collect();
    format!("{}\n{}\n{}", x.message, seen.join("\n"), x.fix_text())
}

fn cases() -> Vec<Case> {
    let mut no_grh = rxe_ctx(None, "::");
    no_grh.peer.as_mut().unwrap().gid_index = None;

    let mut out_of_range = rxe_ctx(Some(2000), "::ffff:192.168.77.2");
    out_of_range.local.gid_table_len = Some(1024);

    let mut gone = rxe_ctx(Some(1), "::ffff:192.168.77.2");
    gone.netdev = Some(NetdevFacts {
        name: "veth0".into(),
        exists: false,
        up: false,
        operstate: None,
        mtu: None,
    });
    let mut down = rxe_ctx(Some(1), "::ffff:192.168.77.2");
    down.netdev = Some(NetdevFacts {
        name: "veth0".into(),
        exists: true,
        up: false,
        operstate: Some(OperState::Down),
        mtu: Some(1500),
    });

    // The netdev went down under traffic; the port's state in sysfs still says ACTIVE.
    let mut down_under_traffic = down.clone();
    down_under_traffic.local.port_netdev = Some("veth0".into());
    down_under_traffic.local.port_state = Some(PortState::Active);

    let mut no_accept_local = rxe_ctx(Some(1), "::ffff:192.168.77.2");
    no_accept_local.route = Some(vm_route(false));

    let mut routed = mlx5_ctx(1, "2001:db8:99::1", GidType::RoceV2);
    routed.route = Some(RouteFacts {
        peer: Some("2001:db8:99::1".parse().unwrap()),
        route_netdev: Some("ens1f0".into()),
        gateway: Some("2001:db8::1".parse().unwrap()),
        ..RouteFacts::default()
    });

    let mut other_dev = mlx5_ctx(3, "::ffff:10.100.0.9", GidType::RoceV2);
    other_dev.route.as_mut().unwrap().route_netdev = Some("ens1f0.100".into());

    let mut neigh_failed = mlx5_ctx(3, "::ffff:10.0.0.6", GidType::RoceV2);
    neigh_failed.route.as_mut().unwrap().neighbour_state = Some("FAILED".into());

    let mut mtu = rxe_ctx(Some(1), "::ffff:192.168.77.2");
    mtu.requested_mtu = Some(4096);
    let mut mtu_wc = mtu.clone();
    mtu_wc.qp = Some(QpFacts {
        path_mtu: Some(4096),
        message_bytes: Some(4096),
        ..QpFacts::default()
    });

    let mut retry_v1 = mlx5_ctx(3, "::ffff:10.0.0.6", GidType::RoceV1);
    retry_v1.qp = Some(QpFacts {
        retry_cnt: Some(6),
        ..QpFacts::default()
    });
    let mut retry_dead = rxe_ctx(Some(1), "::ffff:192.168.77.2");
    retry_dead.qp = Some(QpFacts {
        retry_cnt: Some(6),
        soft_roce: true,
        ..QpFacts::default()
    });
    let mut flux = rxe_ctx(Some(1), "::ffff:192.168.77.2");
    flux.route = Some(RouteFacts {
        arp_flux: Some(crate::model::facts::ArpFluxGroup {
            subnet: "192.168.77.0/24".into(),
            netdevs: ["veth0", "veth1"]
                .map(|n| crate::model::facts::ArpFluxNetdev {
                    netdev: n.into(),
                    arp_ignore: Some(0),
                })
                .to_vec(),
        }),
        ..vm_route(true)
    });
    let mut v6_same_host = rxe_ctx(Some(2), "2001:db8::2");
    v6_same_host.local.gid_table.push(entry(
        2,
        "2001:db8::1",
        Some(GidType::RoceV2),
        Some("veth0"),
    ));
    v6_same_host.route = Some(RouteFacts {
        peer: Some("2001:db8::2".parse().unwrap()),
        accept_local: Some(false),
        ..vm_route(false)
    });
    v6_same_host.qp = Some(QpFacts {
        retry_cnt: Some(6),
        soft_roce: true,
        ..QpFacts::default()
    });
    let mut rnr = rxe_ctx(Some(1), "::ffff:192.168.77.2");
    rnr.qp = Some(QpFacts {
        rnr_retry: Some(0),
        recv_posted_before_rtr: Some(false),
        ..QpFacts::default()
    });
    let mut rxe_forever = rxe_ctx(Some(1), "::ffff:192.168.77.2");
    rxe_forever.qp = Some(QpFacts {
        retry_cnt: Some(7),
        soft_roce: true,
        ..QpFacts::default()
    });

    let mut tiny_memlock = rxe_ctx(Some(1), "::ffff:192.168.77.2");
    tiny_memlock.memlock = Some(MemlockFacts {
        limit_bytes: Some(64 * 1024),
        cap_ipc_lock: false,
        needed_bytes: 8 << 20,
    });
    let mut roomy_memlock = tiny_memlock.clone();
    roomy_memlock.memlock = Some(MemlockFacts {
        limit_bytes: None,
        cap_ipc_lock: false,
        needed_bytes: 8 << 20,
    });

    let mut eacces = rxe_ctx(Some(1), "::ffff:192.168.77.2");
    eacces.device_node = Some(DeviceNodeFacts {
        path: "/dev/infiniband/uverbs0".into(),
        exists: true,
        accessible: false,
        stat: Some(NodeStat {
            mode: 0,
            uid: 0,
            gid: 0,
            owner: Some("root".into()),
            group: Some("root".into()),
        }),
        open_errno: Some(libc::EACCES),
        process: Some(ProcessIds {
            uid: 65534,
            gid: 65534,
            groups: vec![],
            user: Some("nobody".into()),
            group_names: vec![(65534, "nogroup".into())],
        }),
        ..DeviceNodeFacts::default()
    });

    let mut roce_down = rxe_ctx(Some(1), "::ffff:192.168.77.2");
    roce_down.local.port_state = Some(PortState::Down);
    roce_down.local.phys_state = Some(PhysState::Disabled);
    if let Some(n) = roce_down.netdev.as_mut() {
        n.up = false;
        n.operstate = Some(OperState::Down);
    }

    let mut vlan_gone = mlx5_ctx(7, "::ffff:10.0.0.6", GidType::RoceV2);
    vlan_gone.netdev = Some(NetdevFacts {
        name: "ens1f0.100".into(),
        exists: false,
        ..NetdevFacts::default()
    });
    vlan_gone.route = None;
    let mut pkey_past = rxe_ctx(Some(1), "::ffff:192.168.77.2");
    pkey_past.qp = Some(QpFacts {
        pkey_index: Some(1),
        pkey_table_len: Some(1),
        ..QpFacts::default()
    });
    let mut pkey_inside = pkey_past.clone();
    pkey_inside.qp.as_mut().unwrap().pkey_index = Some(0);
    let mut inline_over = rxe_ctx(Some(1), "::ffff:192.168.77.2");
    inline_over.qp = Some(QpFacts {
        inline_bytes: Some(417),
        max_inline_data: Some(416),
        ..QpFacts::default()
    });
    vec![
        Case {
            name: "INIT EINVAL",
            step: Step::Init,
            failure: errno(libc::EINVAL),
            ctx: rxe_ctx(Some(1), "::ffff:192.168.77.2"),
            code: "init-invalid",
            says: &["P_Key"],
            suggested: None,
        },
        Case {
            name: "create QP EINVAL",
            step: Step::QpCreate,
            failure: errno(libc::EINVAL),
            ctx: rxe_ctx(Some(1), "::ffff:192.168.77.2"),
            code: "qp-caps",
            says: &["max_qp_wr"],
            suggested: None,
        },
        Case {
            name: "INIT EINVAL, P_Key index past the table",
            step: Step::Init,
            failure: errno(libc::EINVAL),
            ctx: pkey_past.clone(),
            code: "pkey-index-past-table",
            says: &["P_Key index 1", "1 entries", "pkey_index 1 given at INIT", "rxe0/1 pkey_tbl_len 1"],
            suggested: None,
        },
        Case {
            name: "INIT EINVAL, P_Key index inside the table",
            step: Step::Init,
            failure: errno(libc::EINVAL),
            ctx: pkey_inside,
            code: "init-invalid",
            says: &["P_Key"],
            suggested: None,
        },
        Case {
            name: "post send EINVAL, inline over max_inline_data",
            step: Step::PostSend,
            failure: errno(libc::EINVAL),
            ctx: inline_over.clone(),
            code: "inline-too-large",
            says: &["417 bytes", "max_inline_data 416 granted", "EINVAL", "at most 416 bytes"],
            suggested: None,
        },
        Case {
            name: "post send ENOMEM, inline over max_inline_data",
            step: Step::PostSend,
            failure: errno(libc::ENOMEM),
            ctx: inline_over,
            code: "inline-too-large",
            says: &["ENOMEM"],
            suggested: None,
        },
        Case {
            name: "a verbs rule broken",
            step: Step::Semantics,
            failure: Cause::invalid("a SEND without the solicited flag raised an event on a CQ armed solicited-only"),
            ctx: rxe_ctx(Some(1), "::ffff:192.168.77.2"),
            code: "semantics-broken",
            says: &["solicited-only", "rdma-core"],
            suggested: None,
        },
        Case {
            name: "post send ENOMEM",
            step: Step::PostSend,
            failure: errno(libc::ENOMEM),
            ctx: rxe_ctx(Some(1), "::ffff:192.168.77.2"),
            code: "queue-full",
            says: &["poll completions"],
            suggested: None,
        },
        Case {
            name: "RTR ENODEV, VLAN netdev gone: another netdev's GID works",
            step: Step::Rtr,
            failure: errno(libc::ENODEV),
            ctx: vlan_gone,
            code: "gid-netdev-missing",
            says: &[
                "ens1f0.100",
                "use GID index 3 (RoCE v2, ::ffff:10.0.0.5 on ens1f0)",
            ],
            suggested: Some(3),
        },
        Case {
            name: "RTR EINVAL, link-local against global IPv6",
            step: Step::Rtr,
            failure: errno(libc::EINVAL),
            ctx: mlx5_ctx(1, "2001:db8::6", GidType::RoceV2),
            code: "gid-mismatch",
            says: &[
                "scope mismatch",
                "use GID index 5 (RoCE v2, 2001:db8::5 on ens1f0)",
            ],
            suggested: Some(5),
        },
        Case {
            name: "RTR EINVAL, no GRH on RoCE",
            step: Step::Rtr,
            failure: errno(libc::EINVAL),
            ctx: no_grh,
            code: "roce-no-grh",
            says: &["GRH", "GID index 1 (RoCE v2, ::ffff:192.168.77.1 on veth0)"],
            suggested: Some(1),
        },
        Case {
            name: "RTR EINVAL, -g 0 against -g 1 (mixed families)",
            step: Step::Rtr,
            failure: errno(libc::EINVAL),
            ctx: rxe_ctx(Some(0), "::ffff:192.168.77.2"),
            code: "gid-mismatch",
            says: &["link-local IPv6", "IPv4-mapped", "use GID index 1"],
            suggested: Some(1),
        },
        Case {
            name: "RTR EINVAL, v1 against v2",
            step: Step::Rtr,
            failure: errno(libc::EINVAL),
            ctx: mlx5_ctx(2, "::ffff:10.0.0.6", GidType::RoceV2),
            code: "gid-mismatch",
            says: &[
                "RoCE version mismatch",
                "use GID index 3 (RoCE v2, ::ffff:10.0.0.5 on ens1f0)",
            ],
            suggested: Some(3),
        },
        Case {
            name: "RTR EINVAL, index out of range",
            step: Step::Rtr,
            failure: errno(libc::EINVAL),
            ctx: out_of_range,
            code: "gid-index-out-of-range",
            says: &["2000", "1024 entries", "use GID index 1"],
            suggested: Some(1),
        },
        Case {
            name: "RTR ENODATA, empty slot",
            step: Step::Rtr,
            failure: errno(libc::ENODATA),
            ctx: rxe_ctx(Some(7), "::ffff:192.168.77.2"),
            code: "gid-empty-slot",
            says: &["index 7", "empty", "use GID index 1"],
            suggested: Some(1),
        },
        Case {
            name: "RTR ENODEV, netdev in another netns",
            step: Step::Rtr,
            failure: errno(libc::ENODEV),
            ctx: gone,
            code: "gid-netdev-missing",
            says: &["veth0", "network namespace", "no GID on this port fits"],
            suggested: None,
        },
        Case {
            name: "RTR ENODEV, netdev down",
            step: Step::Rtr,
            failure: errno(libc::ENODEV),
            ctx: down,
            code: "gid-netdev-missing",
            says: &["ip link set veth0 up"],
            suggested: None,
        },
        Case {
            name: "RTR ETIMEDOUT, same-host ARP without accept_local",
            step: Step::Rtr,
            failure: errno(libc::ETIMEDOUT),
            ctx: no_accept_local,
            code: "same-host-arp",
            says: &["accept_local", "veth1", "GID index 1"],
            suggested: Some(1),
        },
        Case {
            name: "RTR ETIMEDOUT, link-local GID toward a routed peer",
            step: Step::Rtr,
            failure: errno(libc::ETIMEDOUT),
            ctx: routed,
            code: "link-local-routed-peer",
            says: &["router", "use GID index 5 (RoCE v2, 2001:db8::5 on ens1f0)"],
            suggested: Some(5),
        },
        Case {
            name: "RTR ETIMEDOUT, GID on a netdev the peer is not routed through",
            step: Step::Rtr,
            failure: errno(libc::ETIMEDOUT),
            ctx: other_dev,
            code: "route-other-netdev",
            says: &["ens1f0.100", "use GID index 7"],
            suggested: Some(7),
        },
        Case {
            name: "RTR ETIMEDOUT, neighbour FAILED",
            step: Step::Rtr,
            failure: errno(libc::ETIMEDOUT),
            ctx: neigh_failed,
            code: "neighbour-unresolved",
            says: &["FAILED", "10.0.0.6", "GID index 3"],
            suggested: Some(3),
        },
        Case {
            name: "InfiniBand LID 0, no SM",
            step: Step::Rtr,
            failure: errno(libc::EINVAL),
            ctx: ib_ctx(0, PortState::Init, PhysState::LinkUp),
            code: "port-state",
            says: &["opensm", "LID 0x0000", "GID index 0"],
            suggested: Some(0),
        },
        Case {
            name: "InfiniBand ACTIVE with LID 0: one port-state rule, not a second code",
            step: Step::Rtr,
            failure: errno(libc::EINVAL),
            ctx: ib_ctx(0, PortState::Active, PhysState::LinkUp),
            code: "port-state",
            says: &["ACTIVE but has no LID", "LID 0x0000", "opensm"],
            suggested: Some(0),
        },
        Case {
            name: "InfiniBand port polling",
            step: Step::QueryPort,
            failure: errno(libc::EINVAL),
            ctx: ib_ctx(0, PortState::Down, PhysState::Polling),
            code: "port-state",
            says: &["cable"],
            suggested: None,
        },
        Case {
            name: "RoCE port down",
            step: Step::Rtr,
            failure: errno(libc::ETIMEDOUT),
            ctx: roce_down,
            code: "port-state",
            says: &["ip link set veth0 up"],
            suggested: None,
        },
        Case {
            name: "LOC_QP_OP_ERR when the netdev went down before the port state did",
            step: Step::Poll,
            failure: wc(WC_LOC_QP_OP_ERR),
            ctx: down_under_traffic,
            code: "netdev",
            says: &["netdev veth0 is down: rxe0/1 cannot send through it", "ip link set veth0 up"],
            suggested: None,
        },
        Case {
            name: "RTR EINVAL, -m above the active MTU",
            step: Step::Rtr,
            failure: errno(libc::EINVAL),
            ctx: mtu,
            code: "mtu-too-large",
            says: &["-m 1024", "GID index 1"],
            suggested: Some(1),
        },
        Case {
            name: "LOC_LEN_ERR with a path MTU mismatch",
            step: Step::Poll,
            failure: wc(WC_LOC_LEN_ERR),
            ctx: mtu_wc,
            code: "mtu-mismatch",
            says: &["IBV_WC_LOC_LEN_ERR", "-m 1024"],
            suggested: Some(1),
        },
        Case {
            name: "RETRY_EXC_ERR with v1 against v2",
            step: Step::Poll,
            failure: wc(WC_RETRY_EXC_ERR),
            ctx: retry_v1,
            code: "retry-exceeded-gid-mismatch",
            says: &[
                "status 12",
                "transport retry counter exceeded",
                "RoCE version",
                "GID index 2",
            ],
            suggested: Some(2),
        },
        Case {
            name: "data that arrived is not what was sent",
            step: Step::Verify,
            failure: Cause::invalid("RDMA READ: byte 17 of 4096 is 0x00, expected 0x4b"),
            ctx: rxe_ctx(Some(1), "::ffff:192.168.77.2"),
            code: "data-mismatch",
            says: &["bytes differ", "byte 17 of 4096", "selftest on each host"],
            suggested: None,
        },
        Case {
            name: "RETRY_EXC_ERR, IPv6 between two rxe devices of one host",
            step: Step::Poll,
            failure: wc(WC_RETRY_EXC_ERR),
            ctx: v6_same_host,
            code: "same-host-ipv6",
            says: &["same-host IPv6", "veth0 to veth1", "rxe0/1 is Soft-RoCE", "IPv4-mapped GIDs"],
            suggested: Some(2),
        },
        Case {
            name: "RETRY_EXC_ERR on a host with ARP flux",
            step: Step::Poll,
            failure: wc(WC_RETRY_EXC_ERR),
            ctx: flux,
            code: "retry-exceeded-arp-flux",
            says: &["ARP flux", "veth0 arp_ignore 0", "arp_ignore=1", "another port's MAC"],
            suggested: Some(1),
        },
        Case {
            name: "RETRY_EXC_ERR, a VLAN GID against an untagged one",
            step: Step::Poll,
            failure: wc(WC_RETRY_EXC_ERR),
            ctx: vlan_ctx(),
            code: "vlan-mismatch",
            says: &[
                "different VLAN (10 here, untagged there)",
                "this end's GID 192.168.77.1/24 on veth0: VLAN 10",
                "the peer's GID 192.168.77.2/24: untagged",
                "share a subnet across two VLANs",
            ],
            suggested: Some(1),
        },
        Case {
            name: "RTR ETIMEDOUT, a VLAN GID against an untagged one",
            step: Step::Rtr,
            failure: Cause::errno(libc::ETIMEDOUT),
            ctx: {
                let mut c = vlan_ctx();
                if let Some(r) = c.route.as_mut() {
                    r.neighbour_state = Some("INCOMPLETE".into());
                }
                c
            },
            code: "vlan-mismatch",
            says: &[
                "the peer's MAC never resolves: different VLAN (10 here, untagged there)",
                "the peer's GID 192.168.77.2/24: untagged",
            ],
            suggested: Some(1),
        },
        Case {
            name: "RETRY_EXC_ERR, peer died",
            step: Step::Poll,
            failure: wc(WC_RETRY_EXC_ERR),
            ctx: retry_dead,
            code: "retry-exceeded",
            says: &["IBV_WC_RETRY_EXC_ERR", "rdma statistic show link", "GID index 1"],
            suggested: Some(1),
        },
        Case {
            name: "RNR_RETRY_EXC_ERR",
            step: Step::Poll,
            failure: wc(WC_RNR_RETRY_EXC_ERR),
            ctx: rnr,
            code: "rnr-retry-exceeded",
            says: &["status 13", "rnr_retry 0", "rnr_retry 7", "GID index 1"],
            suggested: Some(1),
        },
        Case {
            name: "rxe retry_cnt 7 never completes",
            step: Step::Poll,
            failure: Cause::Timeout { waited_ms: 5000, waiting_for: None },
            ctx: rxe_forever,
            code: "rxe-infinite-retry",
            says: &["retry_cnt 6"],
            suggested: Some(1),
        },
        Case {
            name: "ENOMEM at reg_mr with a tiny memlock",
            step: Step::Mr,
            failure: errno(libc::ENOMEM),
            ctx: tiny_memlock,
            code: "memlock-limit",
            says: &[
                "64 KiB",
                "8 MiB",
                "CAP_IPC_LOCK",
                "limits.conf",
            ],
            suggested: None,
        },
        Case {
            name: "ENOMEM with memlock unlimited",
            step: Step::Mr,
            failure: errno(libc::ENOMEM),
            ctx: roomy_memlock,
            code: "out-of-resources",
            says: &["unlimited"],
            suggested: None,
        },
        Case {
            name: "EACCES on the device",
            step: Step::Open,
            failure: errno(libc::EACCES),
            ctx: eacces,
            code: "device-access",
            says: &[
                "/dev/infiniband/uverbs0 is mode 0000 owner root:root",
                "uid 65534 (nobody), gid 65534 (nogroup), groups none",
                "EACCES",
                "chmod 0666 /dev/infiniband/uverbs0",
            ],
            suggested: None,
        },
        Case {
            name: "-g 7 looked up before the QP: an empty slot",
            step: Step::QueryGid,
            failure: errno(libc::ENODATA),
            ctx: Facts {
                peer: None,
                ..rxe_ctx(Some(7), "::ffff:192.168.77.2")
            },
            code: "gid-empty-slot",
            says: &["GID index 7 on rxe0/1 is an empty slot", "use GID index 1"],
            suggested: Some(1),
        },
        Case {
            name: "no listener on the TCP port",
            step: Step::Connect,
            failure: errno(libc::ECONNREFUSED),
            ctx: Facts {
                peer: None,
                ..rxe_ctx(Some(1), "::ffff:192.168.77.2")
            },
            code: "no-listener",
            says: &["nothing listens on 192.168.77.2", "same -p"],
            suggested: None,
        },
        Case {
            name: "garbage instead of a handshake",
            step: Step::Exchange,
            failure: Cause::invalid("the peer sent \"garbage\\n\", which is neither an rdmactl exchange nor ibv_rc_pingpong's"),
            ctx: Facts {
                peer: None,
                ..rxe_ctx(Some(1), "::ffff:192.168.77.2")
            },
            code: "bad-handshake",
            says: &["garbage", "--compat rc_pingpong"],
            suggested: Some(1),
        },
        Case {
            name: "a stock ibv_rc_pingpong server closes without answering",
            step: Step::Exchange,
            failure: Cause::PeerClosed,
            ctx: Facts {
                peer: None,
                ..rxe_ctx(Some(1), "::ffff:192.168.77.2")
            },
            code: "peer-closed",
            says: &["RTR before it answers", "IPv4-mapped RoCE v2 GID"],
            suggested: Some(1),
        },
        Case {
            name: "native compare: this end's IPv4 GID fits, the peer's link-local one does not",
            step: Step::Compare,
            failure: Cause::invalid("GID address families differ"),
            ctx: rxe_ctx(Some(1), "fe80::5054:ff:fe12:3456"),
            code: "gid-family-mismatch",
            says: &["address family mismatch", "on the peer (index 1 (RoCE v2, IPv4"],
            suggested: Some(1),
        },
        Case {
            name: "native compare: a server that insisted on -n against a --duration client",
            step: Step::Compare,
            failure: Cause::Mismatch {
                mismatches: vec![crate::model::failure::Mismatch::Length {
                    local: "-n 100".into(),
                    remote: "--duration 1".into(),
                }],
            },
            ctx: rxe_ctx(Some(1), "::ffff:192.168.77.2"),
            code: "parameters-differ",
            says: &[
                "run lengths differ: -n 100 here, --duration 1 on the peer",
                "give both ends the same -n, --duration and --lat (or none of them on the server)",
            ],
            suggested: None,
        },
        Case {
            name: "native compare: this end is the link-local one",
            step: Step::Compare,
            failure: Cause::invalid("GID address families differ"),
            ctx: rxe_ctx(Some(0), "::ffff:192.168.77.2"),
            code: "gid-family-mismatch",
            says: &["address family mismatch", "use GID index 1 (RoCE v2"],
            suggested: Some(1),
        },
        Case {
            name: "compat RTR with mixed families times out: the families are the cause",
            step: Step::Rtr,
            failure: errno(libc::ETIMEDOUT),
            ctx: {
                let mut c = rxe_ctx(Some(1), "fe80::5054:ff:fe12:3456");
                c.peer.as_mut().unwrap().gid_type = None;
                c
            },
            code: "gid-mismatch",
            says: &["address family mismatch", "link-local"],
            suggested: Some(1),
        },
        Case {
            name: "same host without accept_local on 6.1: RTR passes, the packets are dropped",
            step: Step::Poll,
            failure: wc(WC_RETRY_EXC_ERR),
            ctx: {
                let mut c = rxe_ctx(Some(1), "::ffff:192.168.77.2");
                c.route = Some(vm_route(false));
                c
            },
            code: "same-host-drop",
            says: &[
                "veth1 drops the RoCE packets from veth0",
                "accept_local = 0",
                "sysctl -w net.ipv4.conf.all.accept_local=1",
            ],
            suggested: Some(1),
        },
    ]
}

/// Whether the fact a seen line names was gathered in the run: its part of `Facts` is
/// there (or, for the failure's own words, the failure).
pub(crate) fn gathered(facts: &Facts, failure: &Failure, seen: &Seen) -> bool {
    match seen.from {
        Source::Failure => true,
        Source::Local => facts.local.link_layer.is_some() || !facts.local.device.is_empty(),
        Source::Peer => {
            facts.peer.is_some() || facts.stall.as_ref().is_some_and(|s| s.peer.is_some())
        }
        Source::Netdev => facts.netdev.is_some(),
        Source::Route => facts.route.is_some(),
        Source::Memlock => {
            facts.memlock.is_some() || matches!(failure.cause, Cause::WouldPin { .. })
        }
        Source::Qp => {
            facts.qp.is_some()
                || failure.context.qp.is_some()
                || failure.context.path_mtu.is_some()
                || facts.requested_mtu.is_some()
        }
        Source::DeviceNode => facts.device_node.is_some(),
        Source::Host => {
            facts.evidence.contains(&seen.text)
                || facts.firewall.is_some()
                || !facts.port_holders.is_empty()
                || facts.cm_source.is_some()
                || facts.in_initial_netns.is_some()
        }
        Source::PeerNotice => matches!(failure.cause, Cause::PeerReported { .. }),
        // An explanation names the fact each line states; an unattributed line is a bug.
        Source::Gathered => false,
    }
}

#[test]
fn every_rule() {
    for case in cases() {
        let failure = Failure::new(case.step, case.failure.clone(), Default::default());
        let exp = explain(&failure, &case.ctx);
        let text = format!("{failure}\n{}", text(&exp));
        assert_eq!(exp.code, case.code, "{}:\n{text}", case.name);
        for s in case.says {
            assert!(text.contains(s), "{}: missing {s:?} in\n{text}", case.name);
        }
        assert_eq!(
            exp.suggested_gid_index, case.suggested,
            "{}:\n{text}",
            case.name
        );
        // Every seen line states a fact this run gathered.
        for seen in &exp.evidence {
            assert!(
                gathered(&case.ctx, &failure, seen),
                "{}: seen line {:?} claims {:?}, which this run did not gather:\n{text}",
                case.name,
                seen.text,
                seen.from
            );
        }
        // A step the GID cannot cause has no seen line about the GID.
        let gid_free = matches!(
            case.step,
            Step::Open
                | Step::Pd
                | Step::Mr
                | Step::Cq
                | Step::QpCreate
                | Step::Init
                | Step::PostSend
                | Step::PostRecv
                | Step::Verify
                | Step::Listen
                | Step::Connect
        );
        if gid_free {
            assert!(
                !exp.evidence.iter().any(|e| e.contains("GID")),
                "{}: a GID seen line under a step the GID cannot cause:\n{text}",
                case.name
            );
        }
        // Whenever an index would work, the explanation names it.
        if let Some(i) = exp.suggested_gid_index {
            assert!(
                text.contains(&format!("GID index {i}")),
                "{}: does not name index {i}:\n{text}",
                case.name
            );
        }
    }
}

/// The peer's cause does not hide this end's own down port: the local port explains
/// this end first, with the peer's words as evidence.
#[test]
fn own_port_down_outranks_the_peers_notice() {
    let notice = crate::model::failure::PeerNotice {
        role: "server".into(),
        message: "work completion failed (rxe0/1): IBV_WC_RETRY_EXC_ERR".into(),
        code: "port-state".into(),
        summary: "rxe0/1 is DOWN: a RoCE port follows its netdev, and veth0 is down".into(),
        evidence: vec![],
        fix: "ip link set veth0 up".into(),
        counters: None,
    };
    let failure = Failure::new(
        Step::Poll,
        Cause::PeerReported {
            notice: Box::new(notice),
        },
        Default::default(),
    );
    let mut facts = rxe_ctx(Some(1), "::ffff:192.168.77.2");
    facts.local.port_state = Some(PortState::Down);
    facts.local.port_netdev = Some("veth0".into());
    facts.netdev = Some(NetdevFacts {
        name: "veth0".into(),
        exists: true,
        up: false,
        operstate: Some(OperState::Down),
        mtu: None,
    });
    let x = explain(&failure, &facts);
    assert_eq!(x.code, "port-state");
    assert!(
        x.message
            .starts_with("rxe0/1 is DOWN: a RoCE port follows its netdev, and veth0 is down"),
        "{}",
        x.message
    );
    assert!(
        x.evidence
            .iter()
            .any(|e| e.from == Source::PeerNotice && e.contains("the server said")),
        "{x:?}"
    );
    // No carrier: the fix is at the other end of the link.
    facts.netdev.as_mut().unwrap().operstate = Some(OperState::LowerLayerDown);
    let x = explain(&failure, &facts);
    assert!(
        x.message
            .contains("has no carrier (its link partner is down)"),
        "{}",
        x.message
    );
    assert!(
        x.fix_text().contains("for a veth its peer"),
        "{}",
        x.fix_text()
    );
}

#[test]
fn wc_names_and_texts() {
    use crate::model::errno::{wc_status_name, wc_status_text};
    assert_eq!(wc_status_name(12), "IBV_WC_RETRY_EXC_ERR");
    assert_eq!(wc_status_text(12), "transport retry counter exceeded");
    assert_eq!(wc_status_name(13), "IBV_WC_RNR_RETRY_EXC_ERR");
    assert_eq!(wc_status_name(5), "IBV_WC_WR_FLUSH_ERR");
    assert_eq!(wc_status_name(99), "IBV_WC_UNKNOWN");
    assert_eq!(
        Cause::errno(libc::ETIMEDOUT).to_string(),
        "ETIMEDOUT (110: Connection timed out)"
    );
}

/// rxe1's packets to rxe0 of this host, and a rule on rxe0's netdev (veth1 here: the
/// route's peer netdev) that drops them, or one that accepts them.
fn firewall_facts(
    verdict: crate::model::netfilter::Action,
) -> crate::model::netfilter::FirewallFacts {
    use crate::model::netfilter::*;
    let rule = NfRule {
        position: 1,
        handle: Some(2),
        exprs: vec![
            Expr::Load {
                dreg: 1,
                field: Field::Payload {
                    base: Base::Transport,
                    offset: 2,
                    len: 2,
                },
            },
            Expr::Cmp {
                sreg: 1,
                op: CmpOp::Eq,
                data: 4791u16.to_be_bytes().to_vec(),
            },
            Expr::RuleCounter(RuleCounter {
                packets: 28,
                bytes: 29904,
            }),
            Expr::Verdict(verdict),
        ],
    };
    let path = |dev: &str, peer_netdev: bool, arriving: bool| RocePath {
        port: "rxe0/1".into(),
        netdev: Iface {
            index: 3,
            name: dev.into(),
        },
        arriving,
        local: if peer_netdev {
            "192.168.77.2"
        } else {
            "192.168.77.1"
        }
        .parse()
        .unwrap(),
        remote: Some(
            if peer_netdev {
                "192.168.77.1"
            } else {
                "192.168.77.2"
            }
            .parse()
            .unwrap(),
        ),
        peer_netdev,
    };
    FirewallFacts {
        firewall: Firewall {
            chains: vec![NfChain {
                backend: Backend::Nftables,
                family: NfFamily::Ip,
                table: "filter".into(),
                name: "INPUT".into(),
                base: Some(BaseHook {
                    hook: Hook::Input,
                    priority: 0,
                }),
                policy: Some(Action::Accept),
                policy_counter: None,
                rules: vec![rule],
            }],
            read: vec!["nftables (netlink)".into()],
            unread: vec![],
        },
        paths: vec![
            path("veth0", false, true),
            path("veth0", false, false),
            path("veth1", true, true),
        ],
        host: Some("vm".into()),
    }
}

/// A firewall that drops the run's RoCE v2 is the cause at both ends: the end whose QP
/// gave up, and the end the peer's notice reached; a peer's other cause stays its own.
#[test]
fn a_firewall_drop_is_the_cause_on_both_ends() {
    use crate::model::netfilter::Action;
    let mut facts = rxe_ctx(Some(1), "::ffff:192.168.77.2");
    facts.qp = Some(QpFacts {
        soft_roce: true,
        retry_cnt: Some(6),
        ..QpFacts::default()
    });
    facts.firewall = Some(firewall_facts(Action::Drop));
    let false_causes = [
        "switch filtering",
        "RoCE v1",
        "peer process is alive",
        "died",
    ];
    let retry = Failure::new(Step::Completion, wc(WC_RETRY_EXC_ERR), Default::default());
    let x = explain(&retry, &facts);
    let words = text(&x);
    assert_eq!(x.code, "firewall", "{words}");
    assert!(words.contains("the firewall of host vm drops the RoCE v2 packets (UDP 4791) arriving on veth0 from 192.168.77.2, so none is acknowledged: rule 1 of chain INPUT in table ip filter (nftables, handle 2)"), "{words}");
    assert!(
        words.contains("its counter: 28 packets, 29904 bytes"),
        "{words}"
    );
    for f in false_causes {
        assert!(!words.contains(f), "{f:?} in {words}");
    }
    let notice = |code: &'static str| crate::model::failure::PeerNotice {
        role: "client".into(),
        message: "work completion failed (rxe1/1): IBV_WC_RETRY_EXC_ERR".into(),
        code: code.into(),
        summary: "the peer never acknowledged".into(),
        evidence: vec![],
        fix: "check that the peer process is alive".into(),
        counters: None,
    };
    let reported = |code: &'static str| {
        Failure::new(
            Step::Poll,
            Cause::PeerReported {
                notice: Box::new(notice(code)),
            },
            Default::default(),
        )
    };
    let x = explain(&reported("retry-exceeded"), &facts);
    let words = text(&x);
    assert_eq!(x.code, "firewall", "{words}");
    assert!(
        words.contains("the client said: work completion failed"),
        "{words}"
    );
    for f in false_causes {
        assert!(!words.contains(f), "{f:?} in {words}");
    }
    // The peer's own cause (its memory could not be pinned) is not this host's firewall.
    let x = explain(&reported("memlock"), &facts);
    assert_eq!(x.code, "memlock");
    // A firewall read that passes everything is ruled out by name; the list of places
    // packets are dropped names a host firewall on Soft-RoCE.
    facts.firewall = Some(firewall_facts(Action::Accept));
    let x = explain(&retry, &facts);
    let words = text(&x);
    assert_eq!(x.code, "retry-exceeded", "{words}");
    assert!(
        words.contains("a host firewall dropping UDP 4791"),
        "{words}"
    );
    assert!(
        words.contains("this host's firewall passes RoCE v2 arriving on veth0 from 192.168.77.2"),
        "{words}"
    );
}
