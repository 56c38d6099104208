//! Same fact, same answer: one fact of a sysfs fixture asked through every command that
//! asks it (check, doctor, a failed ping-pong over the TCP exchange, one under `--cm`,
//! and the exporter's series) gives one code, one cause and one fix, and none of the
//! codes that used to contradict it. Tests only: the rules run on what the gatherers read
//! from the fixture trees, the way each command reads them.

#[cfg(test)]
mod tests {
    use std::net::IpAddr;
    use std::path::Path;

    use crate::ctx::Ctx;
    use crate::diagnose::{check, doctor, gidselect, same_host};
    use crate::gather::check::{load_port_facts, netdev_from_sysfs};
    use crate::gather::sysfs::SysfsRoot;
    use crate::model::diagnostic::{Diagnostic, Severity};
    use crate::model::errno::WC_RETRY_EXC_ERR;
    use crate::model::facts::{EndFacts, Facts, NetFacts, QpFacts, RouteFacts};
    use crate::model::failure::{Cause, Failure, FailureContext, Step};

    /// A fixture as it is, or a copy of it under a temporary directory with some files
    /// rewritten (the planted fact), kept alive as long as the context is used.
    struct Tree {
        ctx: Ctx,
        _tmp: Option<tempfile::TempDir>,
    }

    fn fixture(name: &str) -> Tree {
        Tree {
            ctx: Ctx::fixture(name),
            _tmp: None,
        }
    }

    fn copy_tree(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            let target = to.join(e.file_name());
            if e.file_type().unwrap().is_dir() {
                copy_tree(&e.path(), &target);
            } else {
                std::fs::copy(e.path(), &target).unwrap();
            }
        }
    }

    /// `name` with `files` (paths under the root, and their new text) planted.
    fn planted(name: &str, files: &[(&str, &str)]) -> Tree {
        let tmp = tempfile::tempdir().unwrap();
        copy_tree(&Ctx::fixture(name).sysfs, tmp.path());
        for (path, text) in files {
            let p = tmp.path().join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        Tree {
            ctx: Ctx {
                sysfs: tmp.path().to_path_buf(),
                ..Ctx::fixture(name)
            },
            _tmp: Some(tmp),
        }
    }

    /// `check -d DEV -g INDEX [--peer PEER]`, with `net`'s route (what rtnetlink would
    /// answer) and the GID's netdev read from the tree, as check reads a captured one.
    fn check(
        t: &Tree,
        device: &str,
        index: u32,
        peer: Option<IpAddr>,
        mut net: NetFacts,
    ) -> Vec<Diagnostic> {
        let port = load_port_facts(&t.ctx, device, 1).unwrap();
        let auto =
            gidselect::select_gid(port.gids(), &port.link_layer, &check::want_for(peer, &net));
        if net.netdev.is_none() {
            let nd = port
                .gids()
                .iter()
                .find(|e| e.index == index)
                .and_then(|e| e.netdev.clone());
            net.netdev = nd.map(|n| netdev_from_sysfs(&t.ctx.sysfs, &n));
            net.netdev_source = "the captured tree (class/net)";
        }
        check::evaluate(&port, index, peer, &net, &auto)
    }

    /// `doctor` on the tree.
    fn doctor(t: &Tree) -> Vec<Diagnostic> {
        doctor::findings(&crate::gather::doctor::gather(&t.ctx, None).unwrap())
    }

    /// `exporter --textfile`'s exposition of the tree.
    fn exporter(t: &Tree) -> String {
        let facts = crate::gather::exporter::scrape(&t.ctx).unwrap();
        let findings = doctor::findings(&facts.doctor);
        crate::render::exporter::exposition(&facts, &findings, &Default::default())
    }

    /// What a failed run on DEV/1 knows of its end, read from the tree as
    /// `gather::failure::facts` reads it: the port, its netdev, and the GID in use.
    fn run_facts(
        t: &Tree,
        device: &str,
        gid_index: Option<u32>,
        route: Option<RouteFacts>,
    ) -> Facts {
        let p = SysfsRoot::new(&t.ctx.sysfs).port(device, 1).unwrap();
        let entry = gid_index
            .and_then(|i| p.gids.iter().find(|e| e.index == i))
            .cloned();
        let port_netdev = p.netdev.as_ref().map(|n| n.name.clone());
        let netdev = entry
            .as_ref()
            .and_then(|e| e.netdev.clone())
            .or(port_netdev.clone());
        Facts {
            local: EndFacts {
                device: device.into(),
                port: 1,
                link_layer: p.link_layer.clone(),
                port_state: p.state.clone(),
                phys_state: p.phys_state.clone(),
                active_mtu: Some(1024),
                gid_index,
                gid: entry.as_ref().map(|e| e.gid),
                gid_type: entry.as_ref().and_then(|e| e.gid_type.clone()),
                netdev: entry.as_ref().and_then(|e| e.netdev.clone()),
                port_netdev,
                gid_table: p.gids.clone(),
                gid_table_len: Some(1024),
                ..EndFacts::default()
            },
            netdev: netdev.map(|n| netdev_from_sysfs(&t.ctx.sysfs, &n)),
            route,
            qp: Some(QpFacts {
                soft_roce: p.soft_roce,
                ..QpFacts::default()
            }),
            ..Facts::default()
        }
    }

    fn failure(step: Step, cause: Cause, device: &str, gid_index: Option<u32>) -> Failure {
        Failure::new(
            step,
            cause,
            FailureContext {
                device: device.into(),
                port: 1,
                gid_index,
                ..FailureContext::default()
            },
        )
    }

    /// A ping-pong over the TCP exchange whose RTR timed out.
    fn tcp_rtr(t: &Tree, device: &str, gid: u32, route: Option<RouteFacts>) -> Diagnostic {
        let f = failure(Step::Rtr, Cause::errno(libc::ETIMEDOUT), device, Some(gid));
        crate::diagnose::explain(&f, &run_facts(t, device, Some(gid), route))
    }

    /// A `--cm` ping-pong whose address resolution failed: the CM's facts are the port
    /// under the source and the source address's netdev.
    fn cm_resolve(t: &Tree, device: &str) -> Diagnostic {
        let mut f = failure(
            Step::CmResolveAddr,
            Cause::call("rdma_resolve_addr", libc::ENETUNREACH),
            device,
            None,
        );
        f.context.peer_addr = Some("192.168.77.2:18515".into());
        let mut facts = run_facts(t, device, None, None);
        facts.local.gid_table.clear();
        crate::diagnose::explain(&f, &facts)
    }

    fn failing<'a>(found: &'a [Diagnostic], code: &str, port: &str) -> Vec<&'a Diagnostic> {
        found
            .iter()
            .filter(|f| f.severity == Severity::Fail && f.code == code)
            .filter(|f| f.label() == port || f.subject.is_none())
            .collect()
    }

    fn one<'a>(found: &'a [Diagnostic], code: &str, port: &str, asker: &str) -> &'a Diagnostic {
        let fails = failing(found, code, port);
        assert_eq!(
            fails.len(),
            1,
            "{asker}: one {code} failure for {port} in {found:#?}"
        );
        fails[0]
    }

    /// The same code, cause and fix from every asker; none of `never` anywhere.
    fn same_answer(answers: &[(&str, &Diagnostic)], code: &str, cause: &str, fix: &str) {
        for (asker, d) in answers {
            assert_eq!(d.code, code, "{asker}: {d:#?}");
            assert_eq!(d.message, cause, "{asker}: the cause");
            assert_eq!(d.fix_text(), fix, "{asker}: the fix");
        }
    }

    fn none_of(asker: &str, found: &[Diagnostic], never: &[&str]) {
        for f in found {
            assert!(
                !(never.contains(&f.code.as_str()) && f.severity >= Severity::Warn),
                "{asker} contradicts: {f:#?}"
            );
        }
    }

    /// The exporter's series for DEV/1: its state number and whether its netdev carries
    /// traffic.
    fn exported(text: &str, device: &str) -> (String, String) {
        let value = |prefix: &str| {
            text.lines()
                .find(|l| l.starts_with(prefix))
                .unwrap_or_else(|| panic!("no {prefix} in the exposition"))
                .rsplit(' ')
                .next()
                .unwrap()
                .to_string()
        };
        (
            value(&format!(
                "rdmactl_port_state{{device=\"{device}\",port=\"1\"}}"
            )),
            value(&format!(
                "rdmactl_port_netdev_up{{device=\"{device}\",port=\"1\","
            )),
        )
    }

    /// The code that replaced, or contradicted, each of these facts before.
    const PORT_CONTRADICTIONS: &[&str] = &["port-down", "cm-netdev-down"];

    /// Port down: rxe1/1 is DOWN because veth1 is down (`operstate down`, IFF_UP clear).
    #[test]
    fn port_down_is_one_answer_everywhere() {
        let t = fixture("rxe-veth-vlan-ipv6-down");
        let checked = check(&t, "rxe1", 1, None, NetFacts::default());
        let doctored = doctor(&t);
        let tcp = tcp_rtr(&t, "rxe1", 1, None);
        let cm = cm_resolve(&t, "rxe1");
        let c = one(&checked, "port-state", "rxe1/1", "check");
        let d = one(&doctored, "port-state", "rxe1/1", "doctor");
        same_answer(
            &[
                ("check", c),
                ("doctor", d),
                ("pingpong", &tcp),
                ("pingpong --cm", &cm),
            ],
            "port-state",
            "rxe1/1 is DOWN: a RoCE port follows its netdev, and veth1 is down",
            "bring the interface up: `ip link set veth1 up`",
        );
        // One root cause, one failure: the netdev is the port's evidence, not a second one.
        assert!(
            failing(&checked, "netdev", "rxe1/1").is_empty(),
            "{checked:#?}"
        );
        assert!(
            failing(&doctored, "netdev", "rxe1/1").is_empty(),
            "{doctored:#?}"
        );
        none_of("check", &checked, PORT_CONTRADICTIONS);
        none_of("doctor", &doctored, PORT_CONTRADICTIONS);
        let text = exporter(&t);
        assert_eq!(
            exported(&text, "rxe1"),
            ("1".into(), "0".into()),
            "DOWN, netdev down"
        );
        assert!(text.contains(
            "rdmactl_finding{code=\"port-state\",severity=\"fail\",device=\"rxe1\",port=\"1\"} 1"
        ));
    }

    /// Netdev down while the port still says ACTIVE (rxe learns of its link late): veth0's
    /// operstate `down`, IFF_UP clear, planted in rxe-veth-basic.
    #[test]
    fn netdev_down_is_one_answer_everywhere() {
        let t = planted(
            "rxe-veth-basic",
            &[
                ("class/net/veth0/operstate", "down\n"),
                ("class/net/veth0/flags", "0x1002\n"),
            ],
        );
        let checked = check(&t, "rxe0", 1, None, NetFacts::default());
        let doctored = doctor(&t);
        let tcp = tcp_rtr(&t, "rxe0", 1, None);
        let cm = cm_resolve(&t, "rxe0");
        let c = one(&checked, "netdev", "rxe0/1", "check");
        let d = one(&doctored, "netdev", "rxe0/1", "doctor");
        same_answer(
            &[
                ("check", c),
                ("doctor", d),
                ("pingpong", &tcp),
                ("pingpong --cm", &cm),
            ],
            "netdev",
            "netdev veth0 is down: rxe0/1 cannot send through it",
            "bring the interface up: `ip link set veth0 up`",
        );
        none_of("check", &checked, PORT_CONTRADICTIONS);
        none_of("doctor", &doctored, PORT_CONTRADICTIONS);
        assert_eq!(
            exported(&exporter(&t), "rxe0"),
            ("4".into(), "0".into()),
            "ACTIVE, netdev down"
        );
    }

    /// Operstate `unknown` with IFF_UP (a driver without carrier reporting) carries
    /// traffic: nobody may call it down, and the exporter counts it up.
    #[test]
    fn operstate_unknown_with_iff_up_is_up_everywhere() {
        let t = planted(
            "rxe-veth-basic",
            &[
                ("class/net/veth0/operstate", "unknown\n"),
                ("class/net/veth0/flags", "0x1003\n"),
            ],
        );
        let checked = check(&t, "rxe0", 1, None, NetFacts::default());
        let doctored = doctor(&t);
        let tcp = tcp_rtr(&t, "rxe0", 1, None);
        let cm = cm_resolve(&t, "rxe0");
        let down = ["port-state", "netdev", "port-down", "cm-netdev-down"];
        none_of("check", &checked, &down);
        none_of("doctor", &doctored, &down);
        for (asker, x) in [("pingpong", &tcp), ("pingpong --cm", &cm)] {
            assert!(
                !down.contains(&x.code.as_str()),
                "{asker} calls it down: {x:#?}"
            );
            assert!(
                !x.fix_text().contains("ip link set veth0 up"),
                "{asker}: {x:#?}"
            );
        }
        for found in [&checked, &doctored] {
            let ok = found
                .iter()
                .find(|f| f.code == "netdev")
                .expect("a netdev line");
            assert_eq!(ok.severity, Severity::Ok, "{ok:#?}");
            assert!(ok.message.starts_with("netdev veth0 is unknown"), "{ok:#?}");
        }
        assert_eq!(
            exported(&exporter(&t), "rxe0"),
            ("4".into(), "1".into()),
            "ACTIVE, carries traffic"
        );
    }

    /// Same-host IPv6 between two Soft-RoCE devices: rxe0's 2001:db8:77::1 (planted at
    /// index 2 on veth0) toward 2001:db8:77::2, an address of veth1 on this host.
    #[test]
    fn same_host_ipv6_is_one_answer_everywhere() {
        let gids = "class/infiniband/rxe0/ports/1";
        let t = planted(
            "rxe-veth-basic",
            &[
                (
                    &format!("{gids}/gids/2"),
                    "2001:0db8:0077:0000:0000:0000:0000:0001\n",
                ),
                (&format!("{gids}/gid_attrs/ndevs/2"), "veth0\n"),
                (&format!("{gids}/gid_attrs/types/2"), "RoCE v2\n"),
            ],
        );
        let peer: IpAddr = "2001:db8:77::2".parse().unwrap();
        let route = RouteFacts {
            peer: Some(peer),
            route_netdev: Some("lo".into()),
            peer_is_local: true,
            peer_local_netdev: Some("veth1".into()),
            ..RouteFacts::default()
        };
        let net = NetFacts {
            route: Some(route.clone()),
            ..NetFacts::default()
        };
        let checked = check(&t, "rxe0", 2, Some(peer), net);
        let c = one(&checked, "same-host-ipv6", "rxe0/1", "check");
        let f = failure(
            Step::Completion,
            Cause::WcStatus {
                status: WC_RETRY_EXC_ERR,
                vendor_err: 0,
                opcode: 0,
                op: None,
            },
            "rxe0",
            Some(2),
        );
        let tcp =
            crate::diagnose::explain(&f, &run_facts(&t, "rxe0", Some(2), Some(route.clone())));
        let mut f = failure(
            Step::CmConnect,
            Cause::Timeout {
                waited_ms: 5000,
                waiting_for: Some("answer to the connection request"),
            },
            "rxe0",
            None,
        );
        f.context.peer_addr = Some(format!("[{peer}]:18515"));
        let mut facts = run_facts(&t, "rxe0", None, Some(route));
        facts.cm_source = Some("2001:db8:77::1".parse().unwrap());
        let cm = crate::diagnose::explain(&f, &facts);
        same_answer(
            &[("check", c), ("pingpong", &tcp), ("pingpong --cm", &cm)],
            "same-host-ipv6",
            "same-host IPv6: rxe carries no RoCE v2 traffic over IPv6 between two devices of one kernel (veth0 to veth1); IPv4 between them works, and so does IPv6 from a device to itself",
            same_host::IPV6_FIX,
        );
        // An IPv6 neighbour comes from NDP: no IPv4 ARP reasoning beside it.
        none_of("check", &checked, &["same-host-arp"]);
        // doctor and the exporter take no peer, so they do not ask; neither may blame the
        // same-host pair on the sysctls of an IPv4 ARP it never sends.
        let doctored = doctor(&t);
        none_of("doctor", &doctored, &["same-host-ipv6"]);
        assert!(!exporter(&t).contains("code=\"same-host-ipv6\""));
    }

    /// A link-local GID toward a peer behind a router: rxe0's index 0 (fe80::) toward
    /// 10.9.9.9 via 192.168.77.254.
    #[test]
    fn link_local_toward_a_routed_peer_is_one_answer_everywhere() {
        let t = fixture("rxe-veth-basic");
        let peer: IpAddr = "10.9.9.9".parse().unwrap();
        let route = RouteFacts {
            peer: Some(peer),
            route_netdev: Some("veth0".into()),
            gateway: Some("192.168.77.254".parse().unwrap()),
            ..RouteFacts::default()
        };
        let net = NetFacts {
            route: Some(route.clone()),
            ..NetFacts::default()
        };
        let checked = check(&t, "rxe0", 0, Some(peer), net);
        let c = one(&checked, "link-local-routed-peer", "rxe0/1", "check");
        let tcp = tcp_rtr(&t, "rxe0", 0, Some(route));
        same_answer(
            &[("check", c), ("pingpong", &tcp)],
            "link-local-routed-peer",
            "GID index 0 is link-local and 10.9.9.9 is behind a router (192.168.77.254): a link-local GID never crosses one (NVIDIA/nccl#769)",
            "use a GID with a routable address; use GID index 1 (RoCE v2, ::ffff:192.168.77.1 on veth0)",
        );
        // The one failure: not again as the family, nor under check's old code.
        assert_eq!(
            checked
                .iter()
                .filter(|f| f.severity == Severity::Fail)
                .count(),
            1,
            "{checked:#?}"
        );
        none_of("check", &checked, &["link-local"]);
        // --cm picks its GID from the addresses, so it never holds a link-local one toward
        // a routed peer; doctor takes no peer. Neither is asked.
    }

    /// A GID gone from its slot mid-run (the address behind it removed from the netdev):
    /// the same words from a TCP-exchange stall, a `--cm` stall and a failed completion,
    /// whichever end's port it is. check, doctor and the exporter see no run, so no QP.
    #[test]
    fn a_gid_gone_midrun_is_one_answer_on_every_exchange() {
        use crate::diagnose::cm::{explain_stall, CmStall};
        use crate::model::device::PortState;
        use crate::model::facts::{GidNow, PortNow, Stall, StallFacts};
        let end = |role: &str, device: &str, netdev: &str, gid: &str| StallFacts {
            role: role.into(),
            device: device.into(),
            port: 1,
            netdev: Some(netdev.into()),
            now: PortNow {
                port_state: Some(PortState::Active),
                active_mtu: Some(1024),
                gid_now: GidNow::Same,
            },
            path_mtu: Some(1024),
            gid_index: Some(1),
            gid: Some(gid.into()),
            ..StallFacts::default()
        };
        let mut client = end("client", "rxe1", "veth1", "::ffff:192.168.77.2");
        client.now.gid_now = GidNow::Gone;
        let server = end("server", "rxe0", "veth0", "::ffff:192.168.77.1");
        let timeout = Cause::Timeout {
            waited_ms: 5000,
            waiting_for: Some("echo of a SEND"),
        };
        let stalled = |local: &StallFacts, peer: &StallFacts| Facts {
            stall: Some(Stall {
                local: local.clone(),
                peer: Some(peer.clone()),
                ..Stall::default()
            }),
            ..Facts::default()
        };
        let tcp_here = crate::diagnose::explain(
            &failure(Step::Poll, timeout.clone(), "rxe1", Some(1)),
            &stalled(&client, &server),
        );
        let tcp_there = crate::diagnose::explain(
            &failure(Step::Poll, timeout.clone(), "rxe0", Some(1)),
            &stalled(&server, &client),
        );
        let completion = crate::diagnose::explain(
            &failure(
                Step::Completion,
                Cause::WcStatus {
                    status: crate::model::errno::WC_LOC_QP_OP_ERR,
                    vendor_err: 0,
                    opcode: 0,
                    op: None,
                },
                "rxe1",
                Some(1),
            ),
            &stalled(&client, &server),
        );
        let cm_failure = failure(Step::CmTransfer, timeout, "rxe1", None);
        let cm_here = explain_stall(
            &cm_failure,
            &Facts::default(),
            &CmStall {
                here: client.clone(),
                peer: Some(server.clone()),
                peer_answered: Some(true),
            },
        );
        let cm_there = explain_stall(
            &cm_failure,
            &Facts::default(),
            &CmStall {
                here: server,
                peer: Some(client),
                peer_answered: Some(true),
            },
        );
        same_answer(
            &[
                ("pingpong, the end whose GID left", &tcp_here),
                ("pingpong, the other end", &tcp_there),
                ("pingpong, a failed completion", &completion),
                ("pingpong --cm, the end whose GID left", &cm_here),
                ("pingpong --cm, the other end", &cm_there),
            ],
            "gid-removed-midrun",
            "GID index 1 (::ffff:192.168.77.2) of rxe1/1 (the client) left the GID table during the run (the slot is empty now): its address was removed from veth1, and a connected QP cannot change its source GID, so its packets are no longer sent",
            "put 192.168.77.2 back on veth1 (ip addr add 192.168.77.2/PREFIX dev veth1), or rerun with the GID index that holds an address now (rdmactl gids rxe1)",
        );
    }
}
