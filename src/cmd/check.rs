//! `rdmactl check`: is this GID index usable, and does it route to the peer?
//!
//! gather (sysfs + rtnetlink) → `evaluate` (pure) → render. Each check is one line with
//! ok/warn/FAIL, the evidence it looked at, and the fix; `auto` first prints why it chose
//! its index.

use std::fmt::Write as _;
use std::net::IpAddr;
use std::path::Path;

use serde::Serialize;

use crate::cli::{CheckArgs, GidIndexArg};
use crate::cmd::check_kernel::{self, Checked, KernelChoice};
use crate::ctx::Ctx;
use crate::diagnose::env::{self, EnvTarget};
use crate::diagnose::gidselect::{self, Selection, Verdict};
use crate::error::{Error, Result};
use crate::exit;
use crate::gather::net;
use crate::gather::sysfs::SysfsRoot;
use crate::gather::verbs;
use crate::model::device::{GidEntry, LinkLayer};
use crate::model::diagnostic::{Finding, Severity};
use crate::model::facts::{NetFacts, NetdevFacts, PortFacts};
use crate::output::{self, Style};
use crate::render::findings::{self as render_findings, Evidence};

// ---------------------------------------------------------------------------------------
// Port facts: the shared sysfs model, plus what check needs beyond it.

pub use crate::diagnose::check::{evaluate, populated, want_for};

/// The device to check: the named one, else the first in name order (the only one on most
/// hosts). Errors name the devices that exist.
/// Read the port from sysfs and, on a live host, its active MTU through verbs.
pub fn load_port_facts(ctx: &Ctx, device: &str, port: u32) -> Result<PortFacts> {
    let sysfs = SysfsRoot::new(&ctx.sysfs);
    let model = sysfs.port(device, port)?;
    let gid_table_len = sysfs.gid_table_len(device, port)? as u32;
    let (active_mtu, active_mtu_source) = if ctx.captured {
        (
            None,
            "not read: --sysfs points at a captured tree".to_string(),
        )
    } else {
        match active_mtu_live(device, port) {
            Ok(mtu) => (Some(mtu), "ibv_query_port".to_string()),
            Err(why) => (None, format!("not read: {why}")),
        }
    };
    Ok(PortFacts {
        link_layer: model
            .link_layer
            .clone()
            .unwrap_or_else(|| LinkLayer::Other("unknown".into())),
        sysfs: model,
        gid_table_len,
        active_mtu,
        active_mtu_source,
    })
}

fn active_mtu_live(device: &str, port: u32) -> std::result::Result<u32, String> {
    let port = u8::try_from(port).map_err(|_| format!("port {port} is not a verbs port number"))?;
    let attrs = verbs::open_device(device)
        .and_then(|d| d.query_port(port))
        .map_err(|e| e.to_string())?;
    attrs.active_mtu_bytes().ok_or_else(|| {
        format!(
            "ibv_query_port gave active_mtu {}, not an MTU",
            attrs.active_mtu
        )
    })
}

// ---------------------------------------------------------------------------------------
// Network facts (live, or from the captured tree)

/// The netdev as a captured tree records it (class/net/<if>/{operstate,mtu}).
fn netdev_from_sysfs(sysfs: &Path, name: &str) -> NetdevFacts {
    match SysfsRoot::new(sysfs).netdev(name) {
        Some(n) => NetdevFacts {
            name: n.name,
            exists: true,
            up: matches!(n.operstate.as_deref(), Some("up") | Some("unknown")),
            operstate: n.operstate,
            mtu: n.mtu,
        },
        None => NetdevFacts {
            name: name.to_string(),
            ..NetdevFacts::default()
        },
    }
}

#[cfg(test)]
fn gather_net(ctx: &Ctx, entry: Option<&GidEntry>, peer: Option<IpAddr>) -> NetFacts {
    gather_net_scoped(ctx, entry, peer, None)
}

/// `scope`: the interface of `--peer ADDR%IFNAME`. A link-local peer is on that link, so
/// the route and neighbour are looked up there.
fn gather_net_scoped(
    ctx: &Ctx,
    entry: Option<&GidEntry>,
    peer: Option<IpAddr>,
    scope: Option<&str>,
) -> NetFacts {
    let mut facts = NetFacts {
        netdev_source: "this network namespace (rtnetlink)",
        ..NetFacts::default()
    };
    let netdev_name = entry.and_then(|e| e.netdev.clone());
    if ctx.captured {
        facts.netdev_source = "the captured tree (class/net)";
        facts.netdev = netdev_name
            .as_deref()
            .map(|n| netdev_from_sysfs(&ctx.sysfs, n));
        facts.route_skipped = peer.map(|_| {
            "not checked: --sysfs points at a captured tree, not this host's network".into()
        });
        return facts;
    }
    if let Some(name) = &netdev_name {
        match net::netdev_facts(name) {
            Ok(n) => facts.netdev = Some(n),
            Err(e) => facts.route_skipped = Some(format!("not checked: {e}")),
        }
    }
    if let Some(peer) = peer {
        let scoped =
            scope.filter(|_| gidselect::is_link_local(&crate::model::gid::Gid::from_ip(peer)));
        match net::route_facts(peer, scoped.or(netdev_name.as_deref())) {
            Ok((route, via)) => {
                facts.route = Some(route);
                facts.route_via_gid_netdev = via;
            }
            Err(e) => facts.route_skipped = Some(format!("not checked: {e}")),
        }
    }
    facts
}

// ---------------------------------------------------------------------------------------
// The checks (pure)

// ---------------------------------------------------------------------------------------
// Command

#[derive(Debug, Serialize)]
struct Report {
    device: String,
    port: u32,
    gid_index: Option<u32>,
    requested: String,
    peer: Option<IpAddr>,
    /// The interface of `--peer ADDR%IFNAME`.
    #[serde(skip_serializing_if = "Option::is_none")]
    peer_scope: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    selection: Option<Selection>,
    /// `findings`, as doctor calls its list.
    findings: Vec<Finding>,
    /// With --peer on a live host: what the kernel's CM would pick.
    #[serde(skip_serializing_if = "Option::is_none")]
    kernel_choice: Option<KernelChoice>,
    result: Severity,
}

pub fn run(ctx: &Ctx, args: &CheckArgs) -> Result<u8> {
    let peer = match args.peer.as_deref() {
        Some(host) => {
            let ip = crate::gather::failure::resolve_peer(host, 0)?;
            crate::gather::failure::refuse_special_peer(ip)?;
            Some(ip)
        }
        None => None,
    };
    let device =
        crate::gather::inventory::device_port(&ctx.sysfs, args.device.as_deref(), args.port)?;
    let port = load_port_facts(ctx, &device, args.port)?;
    let scope = args
        .peer
        .as_deref()
        .and_then(|h| crate::gather::failure::split_scope(h).1);

    // The selection needs route facts, which need a netdev: look the route up once without
    // a GID netdev for `auto`, then again from the chosen GID's netdev.
    let first_net = if ctx.captured || peer.is_none() {
        NetFacts::default()
    } else {
        gather_net_scoped(ctx, None, peer, scope)
    };
    let mut want = want_for(peer, &first_net);
    if let Some(scope) = scope.filter(|_| {
        peer.is_some_and(|p| gidselect::is_link_local(&crate::model::gid::Gid::from_ip(p)))
    }) {
        // The scope names the link the kernel sends to a link-local peer through (without
        // one, every link has its own fe80::/64 and the route says nothing).
        want.route_netdev = Some(scope.to_string());
    }
    let auto = gidselect::select_gid(port.gids(), &port.link_layer, &want);
    let (index, selection) = match args.gid_index {
        GidIndexArg::Index(i) => (Some(i), None),
        GidIndexArg::Auto => (auto.chosen, Some(auto.clone())),
    };

    let mut checks = match index {
        Some(i) => {
            let entry = port.gids().iter().find(|e| e.index == i);
            let net = gather_net_scoped(ctx, entry, peer, scope);
            let mut found = evaluate(&port, i, peer, &net, &auto);
            if let (Some(peer), Some(scope), Some(entry)) = (peer, scope, entry) {
                found.push(crate::diagnose::check::scope_finding(
                    entry, peer, scope, &port,
                ));
            }
            found
        }
        None => vec![Finding::new(
            Severity::Fail,
            "gid-choice",
            format!("no GID on {device}/{} fits{}", args.port, peer.map(|p| format!(" the peer {p}")).unwrap_or_default()),
        )
        .evidence(populated(&port))
        .fix("see the reasons above; give the port an address in the peer's family on the netdev that routes to it")],
    };
    let mut kernel_choice = None;
    if let Some(peer) = peer {
        if ctx.captured {
            checks.push(check_kernel::skipped(
                Severity::Info,
                "not asked: --sysfs points at a captured tree, not this host's kernel",
            ));
        } else {
            let checked = Checked {
                device: &device,
                port: args.port,
                index,
                auto: args.gid_index == GidIndexArg::Auto,
                gids: port.gids(),
                port_netdev: port.sysfs.netdev.as_ref().map(|n| n.name.as_str()),
            };
            // `--peer fe80::1%veth0`: the CM gets the interface as the address's scope.
            let scope_ifindex = scope.and_then(|s| net::netdev(s).ok().flatten().map(|d| d.index));
            let (finding, choice) =
                check_kernel::ask(peer, &checked, first_net.route.as_ref(), scope_ifindex);
            checks.push(finding);
            kernel_choice = Some(choice);
        }
    }
    if !ctx.captured {
        // ARP flux among this host's ports can send the peer's packets for this port to
        // another port's MAC: said only when the checked port's netdev is one of them.
        let devices = SysfsRoot::new(&ctx.sysfs).devices().unwrap_or_default();
        let netdevs = crate::gather::inventory::roce_netdevs(&devices);
        let this_port = format!("{device}/{}", args.port);
        checks.extend(
            crate::diagnose::doctor::arp_flux_groups(&netdevs)
                .iter()
                .filter(|(_, members)| members.iter().any(|n| n.port == this_port))
                .map(|(subnet, members)| {
                    crate::diagnose::doctor::arp_flux_finding(subnet, members)
                }),
        );
    }
    if args.env {
        checks.extend(env_findings(ctx, &device, args.port, &port, &auto, &want)?);
    }
    let result = render_findings::worst(&checks);
    let report = Report {
        device,
        port: args.port,
        gid_index: index,
        requested: match args.gid_index {
            GidIndexArg::Auto => "auto".into(),
            GidIndexArg::Index(i) => i.to_string(),
        },
        peer,
        peer_scope: scope.map(String::from),
        selection,
        findings: checks,
        kernel_choice,
        result,
    };
    let text = if ctx.json {
        output::json(&report)
    } else {
        render(&report, ctx.style)
    };
    output::print(&text)?;
    // A GID index that does not exist is exit 3, as with pingpong and selftest -g N: the
    // findings above say which indices do, and stderr repeats it in one line.
    if let (GidIndexArg::Index(i), None) = (
        args.gid_index,
        report
            .gid_index
            .and_then(|i| port.gids().iter().find(|e| e.index == i)),
    ) {
        let fix = report
            .findings
            .iter()
            .find(|f| f.code == "gid-slot")
            .and_then(|f| f.fix.clone())
            .filter(|f| !f.is_empty());
        return Err(
            match SysfsRoot::new(&ctx.sysfs).gid(&report.device, args.port, i) {
                Err(Error::NoSuchGid { hint, .. }) => Error::NoSuchGid {
                    device: report.device,
                    port: args.port,
                    index: i,
                    hint: fix.map_or(hint.clone(), |fix| format!("{hint}; {fix}")),
                },
                Err(other) => other,
                // Populated after all (the table changed between the reads): the findings stand.
                Ok(_) => return Ok(exit::FAILED),
            },
        );
    }
    Ok(if result == Severity::Fail {
        exit::FAILED
    } else {
        exit::OK
    })
}

/// `--env`: the NCCL and UCX variables against this port, the host's RDMA ports and its
/// netdevs (from the same sysfs root, so a captured tree is judged as its host).
fn env_findings(
    ctx: &Ctx,
    device: &str,
    port_no: u32,
    port: &PortFacts,
    auto: &Selection,
    want: &gidselect::Want,
) -> Result<Vec<Finding>> {
    let sysfs = SysfsRoot::new(&ctx.sysfs);
    let devices = sysfs.device_names()?;
    let mut ports = Vec::new();
    for d in &devices {
        for p in sysfs.port_numbers(d)? {
            ports.push((d.clone(), p));
        }
    }
    let netdevs: Vec<(String, Option<String>)> = sysfs
        .netdev_names()
        .into_iter()
        .map(|n| {
            let state = sysfs.netdev(&n).and_then(|d| d.operstate);
            (n, state)
        })
        .collect();
    let target = EnvTarget {
        device,
        port: port_no,
        link_layer: &port.link_layer,
        table: port.gids(),
        table_len: port.gid_table_len,
        auto,
        want,
        devices: &devices,
        ports: &ports,
        netdevs: &netdevs,
    };
    let found = env::validate_env(|k| std::env::var(k).ok(), &target);
    if found.is_empty() {
        return Ok(vec![Finding::new(
            Severity::Info,
            "env",
            format!("none of {} is set", env::VARIABLES.join(", ")),
        )]);
    }
    Ok(found)
}

fn render(report: &Report, style: Style) -> String {
    let mut s = String::new();
    let target = format!("{}/{}", report.device, report.port);
    let peer = report
        .peer
        .map(|p| match &report.peer_scope {
            Some(scope) => format!(" toward {p}%{scope}"),
            None => format!(" toward {p}"),
        })
        .unwrap_or_default();
    let index = report
        .gid_index
        .map_or(report.requested.clone(), |i| i.to_string());
    let _ = writeln!(s, "check {target} GID index {index}{peer}");
    if let Some(sel) = &report.selection {
        let _ = writeln!(
            s,
            "auto: {}",
            sel.chosen
                .map(|i| format!("chose index {i}"))
                .unwrap_or_else(|| "no index qualifies".into())
        );
        for r in &sel.reasons {
            let verdict = match r.verdict {
                Verdict::Chosen => "chosen",
                Verdict::Usable => "usable",
                Verdict::Rejected => "rejected",
            };
            let _ = writeln!(s, "  index {:<3} {verdict:<8} {}", r.index, r.why);
        }
    }
    s.push_str(&render_findings::lines(
        &report.findings,
        style,
        Evidence::All,
    ));
    s.push_str(&render_findings::tally(&report.findings));
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::gidselect::describe;
    use crate::error::Error;
    use crate::model::device::GidType;
    use crate::model::facts::RouteFacts;
    use crate::model::gid::Gid;
    use std::path::PathBuf;

    fn fixture(name: &str) -> Ctx {
        Ctx {
            json: false,
            style: Style::plain(),
            sysfs: PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/sysfs")
                .join(name),
            captured: true,
        }
    }

    #[test]
    fn loads_the_rxe_fixture() {
        let ctx = fixture("rxe-veth-basic");
        assert_eq!(
            crate::gather::inventory::device_port(&ctx.sysfs, None, 1).unwrap(),
            "rxe0"
        );
        let p = load_port_facts(&ctx, "rxe0", 1).unwrap();
        assert_eq!(p.link_layer, LinkLayer::Ethernet);
        assert_eq!(p.sysfs.state, Some(crate::model::device::PortState::Active));
        assert_eq!(p.gid_table_len, 1024);
        assert_eq!(p.gids().len(), 2);
        assert_eq!(p.active_mtu, None);
        assert!(p.active_mtu_source.contains("captured"), "{p:?}");
        assert_eq!(
            describe(&p.gids()[1]),
            "GID index 1 (RoCE v2, ::ffff:192.168.77.1 on veth0)"
        );
        assert!(matches!(
            load_port_facts(&ctx, "rxe0", 2),
            Err(Error::NoSuchPort { .. })
        ));
        assert!(matches!(
            crate::gather::inventory::device_port(&ctx.sysfs, Some("mlx5_0"), 1),
            Err(Error::NoSuchDevice { .. })
        ));
        // One lookup for every command: the device's own ports are named.
        let Err(e) = crate::gather::inventory::device_port(&ctx.sysfs, Some("rxe1"), 9) else {
            panic!("port 9 must not exist");
        };
        assert_eq!(e.to_string(), "no port 9 on rxe1; ports: 1");
    }

    fn run_checks(
        fixture_name: &str,
        device: &str,
        index: u32,
        peer: Option<&str>,
        net: NetFacts,
    ) -> Vec<Finding> {
        let ctx = fixture(fixture_name);
        let port = load_port_facts(&ctx, device, 1).unwrap();
        let peer: Option<IpAddr> = peer.map(|p| p.parse().unwrap());
        let auto = gidselect::select_gid(port.gids(), &port.link_layer, &want_for(peer, &net));
        let mut net = net;
        if net.netdev.is_none() {
            let entry = port.gids().iter().find(|e| e.index == index);
            net.netdev = entry
                .and_then(|e| e.netdev.as_deref())
                .map(|n| netdev_from_sysfs(&ctx.sysfs, n));
            net.netdev_source = "the captured tree (class/net)";
        }
        evaluate(&port, index, peer, &net, &auto)
    }

    fn find<'a>(findings: &'a [Finding], code: &str) -> &'a Finding {
        findings
            .iter()
            .find(|f| f.code == code)
            .unwrap_or_else(|| panic!("no {code} in {findings:#?}"))
    }

    fn text(f: &Finding) -> String {
        format!(
            "{} | {} | {}",
            f.message,
            f.evidence.join(" | "),
            f.fix.clone().unwrap_or_default()
        )
    }

    /// The VM's same-host facts toward 192.168.77.2, as `gather_net` finds them.
    fn vm_net(accept_local: bool) -> NetFacts {
        NetFacts {
            route: Some(RouteFacts {
                peer: Some("192.168.77.2".parse().unwrap()),
                route_netdev: Some("lo".into()),
                peer_is_local: true,
                peer_local_netdev: Some("veth1".into()),
                accept_local: Some(accept_local),
                rp_filter: Some(0),
                ..RouteFacts::default()
            }),
            ..NetFacts::default()
        }
    }

    #[test]
    fn check_table() {
        struct Case {
            name: &'static str,
            fixture: &'static str,
            device: &'static str,
            index: u32,
            peer: Option<&'static str>,
            net: NetFacts,
            code: &'static str,
            severity: Severity,
            says: &'static [&'static str],
        }
        let routed_elsewhere = NetFacts {
            route: Some(RouteFacts {
                peer: Some("10.9.9.9".parse().unwrap()),
                route_netdev: Some("eth0".into()),
                gateway: Some("192.0.2.1".parse().unwrap()),
                ..RouteFacts::default()
            }),
            ..NetFacts::default()
        };
        let cases = vec![
            Case {
                name: "index 1 toward the same-host peer",
                fixture: "rxe-veth-basic",
                device: "rxe0",
                index: 1,
                peer: Some("192.168.77.2"),
                net: vm_net(true),
                code: "arp-same-host",
                severity: Severity::Ok,
                says: &["veth1"],
            },
            Case {
                name: "without accept_local",
                fixture: "rxe-veth-basic",
                device: "rxe0",
                index: 1,
                peer: Some("192.168.77.2"),
                net: vm_net(false),
                code: "arp-same-host",
                severity: Severity::Fail,
                says: &["accept_local=1", "ETIMEDOUT"],
            },
            Case {
                name: "index 0 (link-local) toward an IPv4 peer",
                fixture: "rxe-veth-basic",
                device: "rxe0",
                index: 0,
                peer: Some("192.168.77.2"),
                net: vm_net(true),
                code: "gid-family",
                severity: Severity::Fail,
                says: &[
                    "link-local IPv6",
                    "use GID index 1 (RoCE v2, ::ffff:192.168.77.1 on veth0)",
                ],
            },
            Case {
                name: "empty slot 7",
                fixture: "rxe-veth-basic",
                device: "rxe0",
                index: 7,
                peer: None,
                net: NetFacts::default(),
                code: "gid-slot",
                severity: Severity::Fail,
                says: &[
                    "empty slot",
                    "ENODATA",
                    "populated indices: 0, 1",
                    "use GID index 1",
                ],
            },
            Case {
                name: "index past the table",
                fixture: "rxe-veth-basic",
                device: "rxe0",
                index: 5000,
                peer: None,
                net: NetFacts::default(),
                code: "gid-slot",
                severity: Severity::Fail,
                says: &["1024 entries", "use GID index 1"],
            },
            Case {
                name: "routed through another netdev",
                fixture: "rxe-veth-basic",
                device: "rxe0",
                index: 1,
                peer: Some("10.9.9.9"),
                net: routed_elsewhere,
                code: "route",
                severity: Severity::Fail,
                says: &["through eth0", "veth0", "time out"],
            },
            Case {
                name: "MTU of veth0",
                fixture: "rxe-veth-basic",
                device: "rxe0",
                index: 1,
                peer: None,
                net: NetFacts::default(),
                code: "mtu",
                severity: Severity::Ok,
                says: &["RoCE MTU 1024 over netdev veth0 MTU 1500", "captured tree"],
            },
            Case {
                name: "port down (veth1 down)",
                fixture: "rxe-veth-vlan-ipv6-down",
                device: "rxe1",
                index: 1,
                peer: None,
                net: NetFacts::default(),
                code: "port-state",
                severity: Severity::Fail,
                says: &["DOWN", "veth1"],
            },
            Case {
                name: "netdev down (captured)",
                fixture: "rxe-veth-vlan-ipv6-down",
                device: "rxe1",
                index: 1,
                peer: None,
                net: NetFacts::default(),
                code: "netdev",
                severity: Severity::Fail,
                says: &["veth1 is not up", "ip link set veth1 up"],
            },
            Case {
                name: "VLAN GID is RoCE v2",
                fixture: "rxe-veth-vlan-ipv6-down",
                device: "rxe0",
                index: 2,
                peer: None,
                net: NetFacts::default(),
                code: "gid-type",
                severity: Severity::Ok,
                says: &["RoCE v2"],
            },
        ];
        for c in cases {
            let findings = run_checks(c.fixture, c.device, c.index, c.peer, c.net);
            let f = find(&findings, c.code);
            assert_eq!(f.severity, c.severity, "{}: {}", c.name, text(f));
            for s in c.says {
                assert!(
                    text(f).contains(s),
                    "{}: missing {s:?} in {}",
                    c.name,
                    text(f)
                );
            }
        }
    }

    #[test]
    fn index_1_toward_the_vm_peer_passes_every_check() {
        let findings = run_checks(
            "rxe-veth-basic",
            "rxe0",
            1,
            Some("192.168.77.2"),
            vm_net(true),
        );
        for f in &findings {
            assert!(f.severity <= Severity::Info, "{}", text(f));
        }
    }

    /// The live path on this host: a GID on the netdev that carries the default route is
    /// routed correctly toward 8.8.8.8, and one on `lo` is not.
    #[test]
    fn live_route_checks_on_this_host() {
        let route = net::route_get("8.8.8.8".parse().unwrap(), None)
            .expect("this test needs a host with a default route (none to 8.8.8.8 here)");
        let dev = route.oif.clone().expect(
            "this test needs a default route through a netdev (the route to 8.8.8.8 has none)",
        );
        let ctx = Ctx {
            captured: false,
            ..fixture("rxe-veth-basic")
        };
        let peer: IpAddr = "8.8.8.8".parse().unwrap();
        let mut sysfs = load_port_facts(&fixture("rxe-veth-basic"), "rxe0", 1)
            .unwrap()
            .sysfs;
        sysfs.device = "fake0".into();
        sysfs.gids = vec![
            GidEntry {
                index: 0,
                gid: Gid::parse("::ffff:127.0.0.1").unwrap(),
                gid_type: Some(GidType::RoceV2),
                netdev: Some("lo".into()),
            },
            GidEntry {
                index: 1,
                gid: Gid::from_ip(route.prefsrc.unwrap_or(IpAddr::from([192, 0, 2, 2]))),
                gid_type: Some(GidType::RoceV2),
                netdev: Some(dev.clone()),
            },
        ];
        let port = PortFacts {
            sysfs,
            link_layer: LinkLayer::Ethernet,
            gid_table_len: 16,
            active_mtu: None,
            active_mtu_source: "not read: a made-up port".into(),
        };
        let gids = port.gids().to_vec();
        let first = gather_net(&ctx, None, Some(peer));
        let auto =
            gidselect::select_gid(port.gids(), &port.link_layer, &want_for(Some(peer), &first));
        assert_eq!(auto.chosen, Some(1), "{auto:#?}");
        assert!(
            auto.reason(0)
                .unwrap()
                .why
                .contains(&format!("through {dev}")),
            "{auto:#?}"
        );
        let good = evaluate(
            &port,
            1,
            Some(peer),
            &gather_net(&ctx, Some(&gids[1]), Some(peer)),
            &auto,
        );
        assert_eq!(find(&good, "route").severity, Severity::Ok, "{good:#?}");
        assert_eq!(find(&good, "netdev").severity, Severity::Ok, "{good:#?}");
        let bad = evaluate(
            &port,
            0,
            Some(peer),
            &gather_net(&ctx, Some(&gids[0]), Some(peer)),
            &auto,
        );
        let f = find(&bad, "route");
        assert_eq!(f.severity, Severity::Fail, "{bad:#?}");
        assert!(text(f).contains("use GID index 1"), "{}", text(f));
    }

    /// Without an interface the kernel answers a link-local lookup with the first link's
    /// fe80::/64 route (veth1 here); that must not reject the fe80 GID on veth0.
    #[test]
    fn link_local_peer_ignores_the_interfaceless_route() {
        let ctx = fixture("rxe-veth-basic");
        let port = load_port_facts(&ctx, "rxe0", 1).unwrap();
        let peer: IpAddr = "fe80::ec2c:c7ff:fe05:b79a".parse().unwrap();
        let net = NetFacts {
            route: Some(RouteFacts {
                peer: Some(peer),
                route_netdev: Some("veth1".into()),
                ..RouteFacts::default()
            }),
            ..NetFacts::default()
        };
        let auto =
            gidselect::select_gid(port.gids(), &port.link_layer, &want_for(Some(peer), &net));
        assert_eq!(auto.chosen, Some(0), "{auto:#?}");
    }

    #[test]
    fn render_lists_reasons_and_checks() {
        let ctx = fixture("rxe-veth-basic");
        let port = load_port_facts(&ctx, "rxe0", 1).unwrap();
        let peer: IpAddr = "192.168.77.2".parse().unwrap();
        let net = vm_net(true);
        let auto =
            gidselect::select_gid(port.gids(), &port.link_layer, &want_for(Some(peer), &net));
        let checks = evaluate(&port, 1, Some(peer), &net, &auto);
        let report = Report {
            device: "rxe0".into(),
            port: 1,
            gid_index: auto.chosen,
            requested: "auto".into(),
            peer: Some(peer),
            peer_scope: None,
            selection: Some(auto),
            findings: checks,
            kernel_choice: None,
            result: Severity::Ok,
        };
        let out = render(&report, Style::plain());
        assert!(out.contains("auto: chose index 1"), "{out}");
        assert!(out.contains("index 0   rejected"), "{out}");
        assert!(out.contains("\nok    gid-slot "), "{out}");
        assert!(out.contains("        evidence: gids/1 = "), "{out}");
        assert!(
            out.ends_with("6 ok, 2 info, 0 warning(s), 0 failure(s)"),
            "{out}"
        );
        let json: serde_json::Value = serde_json::from_str(&output::json(&report)).unwrap();
        assert_eq!(json["selection"]["chosen"], 1);
        assert_eq!(json["findings"][0]["severity"], "ok");
    }
}
