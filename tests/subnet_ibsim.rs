//! `rdmactl subnet` on simulated InfiniBand subnets: ibsim (ibsim-utils) simulates the
//! fabric, the real opensm runs on it, and libumad2sim.so (LD_PRELOAD) carries rdmactl's and
//! the reference tools' MADs to it. Each test starts its own ibsim on its own abstract
//! socket name (IBSIM_SOCKNAME) in a temp dir, and `Sim`'s Drop kills ibsim and opensm even
//! when an assertion fails. The packages are part of the test setup (scripts/setup installs
//! them), so every test is ignored by a plain `cargo test` and scripts/test runs them with
//! `--include-ignored`: without the packages each test fails and names what is missing,
//! never passes unrun.

mod schema;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

const UMAD2SIM: &str = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so";
const EXAMPLES: &str = "/usr/share/doc/ibsim-utils/net-examples";

/// Why the simulator cannot run here, or None.
fn missing() -> Option<String> {
    let on_path = |tool: &str| {
        std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
            .unwrap_or(false)
            || ["/usr/sbin", "/sbin"]
                .iter()
                .any(|d| Path::new(d).join(tool).is_file())
    };
    let absent: Vec<&str> = ["ibsim", "opensm", "ibnetdiscover", "perfquery"]
        .into_iter()
        .filter(|t| !on_path(t))
        .collect();
    if !absent.is_empty() {
        return Some(format!(
            "{} not installed (packages ibsim-utils, opensm, infiniband-diags)",
            absent.join(", ")
        ));
    }
    if !Path::new(UMAD2SIM).is_file() {
        return Some(format!("{UMAD2SIM} missing (ibsim-utils)"));
    }
    None
}

/// Fails the test, loudly, where the simulator cannot run: a test that passes without
/// running would hide a CI that lost its packages.
fn require_sim() {
    if let Some(why) = missing() {
        panic!("{why}: run scripts/setup");
    }
}

fn tool(name: &str) -> PathBuf {
    for d in ["/usr/sbin", "/usr/bin", "/sbin", "/bin"] {
        let p = Path::new(d).join(name);
        if p.is_file() {
            return p;
        }
    }
    PathBuf::from(name)
}

/// ibsim and opensm run under timeout(1): if this test process is killed outright (no Drop
/// runs), they still end within 15 minutes instead of spinning on a closed console.
const BOUNDED: [&str; 3] = ["-k", "5", "900"];

/// SIGTERM to timeout(1), which passes it on to the simulator or opensm and exits with it;
/// SIGKILL only if that did not end it.
fn stop(child: &mut Child) {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(5) {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

static SIMS: AtomicUsize = AtomicUsize::new(0);

/// One running simulator (and perhaps opensm); both die with it.
struct Sim {
    dir: tempfile::TempDir,
    sock: String,
    ibsim: Child,
    console: ChildStdin,
    opensm: Option<Child>,
}

fn wait_for(path: &Path, text: &str, limit: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if std::fs::read_to_string(path).is_ok_and(|s| s.contains(text)) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

impl Sim {
    fn start(topology: &str) -> Sim {
        let dir = tempfile::tempdir().unwrap();
        let sock = format!(
            "rdmactl-test-{}-{}",
            std::process::id(),
            SIMS.fetch_add(1, Ordering::SeqCst)
        );
        let net = dir.path().join("net");
        std::fs::write(&net, topology).unwrap();
        let log = std::fs::File::create(dir.path().join("ibsim.log")).unwrap();
        let mut ibsim = Command::new("timeout")
            .args(BOUNDED)
            .arg(tool("ibsim"))
            .arg("-s")
            .arg(&net)
            .env("IBSIM_SOCKNAME", &sock)
            .current_dir(dir.path())
            .stdin(Stdio::piped())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start ibsim");
        let console = ibsim.stdin.take().unwrap();
        let sim = Sim {
            dir,
            sock,
            ibsim,
            console,
            opensm: None,
        };
        assert!(
            wait_for(
                &sim.dir.path().join("ibsim.log"),
                "Network simulator ready",
                Duration::from_secs(30)
            ),
            "ibsim did not come up: {}",
            sim.log("ibsim.log")
        );
        sim
    }

    fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(name)).unwrap_or_default()
    }

    fn command(&self, program: &Path) -> Command {
        self.command_with(Command::new(program))
    }

    fn command_with(&self, mut c: Command) -> Command {
        c.env("LD_PRELOAD", UMAD2SIM)
            .env("IBSIM_SOCKNAME", &self.sock)
            .env_remove("SIM_HOST")
            .current_dir(self.dir.path());
        c
    }

    /// Starts opensm on the simulated fabric and waits until it says SUBNET UP.
    fn start_sm(&mut self) {
        let tmp = self.dir.path().join("osm");
        std::fs::create_dir_all(&tmp).unwrap();
        let log = self.dir.path().join("osm.log");
        let child = self
            .command_with({
                let mut c = Command::new("timeout");
                c.args(BOUNDED).arg(tool("opensm"));
                c
            })
            // -d2 flushes the log after each line, so SUBNET UP can be waited for.
            .args(["-d2", "-f"])
            .arg(&log)
            .env("OSM_TMP_DIR", &tmp)
            .env("OSM_CACHE_DIR", &tmp)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start opensm");
        self.opensm = Some(child);
        assert!(
            wait_for(&log, "SUBNET UP", Duration::from_secs(120)),
            "opensm did not bring the subnet up: {}",
            self.log("osm.log")
        );
    }

    /// One console command; ibsim answers on its log, so wait for the log to grow.
    fn console(&mut self, line: &str) {
        let before = self.log("ibsim.log").len();
        writeln!(self.console, "{line}").unwrap();
        self.console.flush().unwrap();
        let start = Instant::now();
        while self.log("ibsim.log").len() == before && start.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(100));
    }

    fn run(&self, program: &Path, args: &[&str]) -> Output {
        self.command(program).args(args).output().unwrap()
    }

    /// `rdmactl subnet -j ARGS`: the JSON and the exit code.
    fn subnet(&self, args: &[&str]) -> (Value, i32) {
        let mut all = vec!["subnet", "-j"];
        all.extend_from_slice(args);
        let out = self.run(Path::new(env!("CARGO_BIN_EXE_rdmactl")), &all);
        let json: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "rdmactl {all:?}: not JSON ({e}); stderr: {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
        (json, out.status.code().unwrap_or(-1))
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        if let Some(sm) = &mut self.opensm {
            stop(sm);
        }
        stop(&mut self.ibsim);
    }
}

fn example(name: &str) -> String {
    std::fs::read_to_string(Path::new(EXAMPLES).join(name)).unwrap()
}

/// (guid, port) ↔ (guid, port), the smaller end first, with "4xSDR".
type LinkKey = ((u64, u8), (u64, u8));

fn key(a: (u64, u8), b: (u64, u8)) -> LinkKey {
    if a <= b {
        (a, b)
    } else {
        (b, a)
    }
}

fn hex(s: &str) -> u64 {
    u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap()
}

/// LIDs by (switch GUID, 0) and (CA GUID, port): a CA's ports each have their own.
type Lids = BTreeMap<(u64, u8), u16>;

/// ibnetdiscover's output read independently of rdmactl's parser: every link with its
/// width and speed as written ("4xSDR"), and the LIDs.
fn ibnetdiscover_facts(text: &str) -> (BTreeMap<LinkKey, String>, Lids) {
    let mut links = BTreeMap::new();
    let mut lids = BTreeMap::new();
    let mut current = None;
    let mut is_ca = false;
    for line in text.lines() {
        let id_guid = |q: &str| hex(&q[2..]);
        if line.starts_with("Switch") || line.starts_with("Ca") {
            let id = line.split('"').nth(1).unwrap();
            let g = id_guid(id);
            current = Some(g);
            is_ca = line.starts_with("Ca");
            if !is_ca {
                let lid = line.split("lid ").nth(1).unwrap().split_whitespace().next();
                lids.insert((g, 0), lid.unwrap().parse().unwrap());
            }
        } else if line.starts_with('[') {
            let me = current.unwrap();
            let port: u8 = line[1..line.find(']').unwrap()].parse().unwrap();
            let peer_id = line.split('"').nth(1).unwrap();
            let after = &line[line.find(peer_id).unwrap() + peer_id.len() + 2..];
            let peer_port: u8 = after[..after.find(']').unwrap()].parse().unwrap();
            let rate = line.split_whitespace().last().unwrap().to_string();
            links.insert(key((me, port), (id_guid(peer_id), peer_port)), rate);
            if is_ca {
                // A CA's port line: "# lid 4 lmc 0 ...": that port's LID.
                let l = line.split("# lid ").nth(1).unwrap();
                lids.insert(
                    (me, port),
                    l.split_whitespace().next().unwrap().parse().unwrap(),
                );
            }
        }
    }
    (links, lids)
}

fn rdmactl_facts(j: &Value) -> (BTreeMap<LinkKey, String>, Lids) {
    let mut links = BTreeMap::new();
    for l in j["links"].as_array().unwrap() {
        let end = |e: &Value| {
            (
                hex(e["guid"].as_str().unwrap()),
                e["port"].as_u64().unwrap() as u8,
            )
        };
        let width = l["width"].as_str().unwrap().trim_end_matches('X');
        links.insert(
            key(end(&l["a"]), end(&l["b"])),
            format!("{width}x{}", l["speed"].as_str().unwrap()),
        );
    }
    let mut lids = BTreeMap::new();
    for n in j["nodes"].as_array().unwrap() {
        let guid = hex(n["guid"].as_str().unwrap());
        if n["type"] == "switch" {
            lids.insert((guid, 0), n["lid"].as_u64().unwrap() as u16);
            continue;
        }
        for p in n["ports"].as_array().unwrap() {
            let port = p["port"].as_u64().unwrap() as u8;
            // ibnetdiscover lists a CA's connected ports only.
            if links
                .keys()
                .any(|(a, b)| *a == (guid, port) || *b == (guid, port))
            {
                lids.insert((guid, port), p["lid"].as_u64().unwrap() as u16);
            }
        }
    }
    (links, lids)
}

fn findings<'a>(j: &'a Value, code: &str) -> Vec<&'a Value> {
    j["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == code)
        .collect()
}

fn codes(j: &Value) -> Vec<String> {
    j["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap().to_string())
        .collect()
}

/// `perfquery LID PORT`'s "Name:....value" lines.
fn perfquery(sim: &Sim, lid: u64, port: u8) -> BTreeMap<String, u64> {
    perfquery_args(sim, &[&lid.to_string(), &port.to_string()])
}

fn perfquery_args(sim: &Sim, args: &[&str]) -> BTreeMap<String, u64> {
    let out = sim.run(&tool("perfquery"), args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (name, value) = l.split_once(':')?;
            Some((
                name.to_string(),
                value.trim_start_matches('.').trim().parse().ok()?,
            ))
        })
        .collect()
}

/// perfquery's names for the counters rdmactl reports by their kernel names.
const PERFQUERY_NAMES: &[(&str, &str)] = &[
    ("symbol_error", "SymbolErrorCounter"),
    ("link_error_recovery", "LinkErrorRecoveryCounter"),
    ("link_downed", "LinkDownedCounter"),
    ("port_rcv_errors", "PortRcvErrors"),
    (
        "port_rcv_remote_physical_errors",
        "PortRcvRemotePhysicalErrors",
    ),
    ("port_rcv_switch_relay_errors", "PortRcvSwitchRelayErrors"),
    ("port_xmit_discards", "PortXmitDiscards"),
    ("port_xmit_constraint_errors", "PortXmitConstraintErrors"),
    ("port_rcv_constraint_errors", "PortRcvConstraintErrors"),
    ("local_link_integrity_errors", "LocalLinkIntegrityErrors"),
    (
        "excessive_buffer_overrun_errors",
        "ExcessiveBufferOverrunErrors",
    ),
    ("VL15_dropped", "VL15Dropped"),
    ("port_xmit_wait", "PortXmitWait"),
];

#[test]
#[ignore = "needs ibsim-utils, opensm, infiniband-diags (ibsim, opensm, ibnetdiscover, perfquery); scripts/test runs it"]
fn the_walk_matches_ibnetdiscover_and_the_counters_match_perfquery() {
    require_sim();
    let mut sim = Sim::start(&example("net.2sw2path4hca"));
    sim.start_sm();
    let reference = sim.run(&tool("ibnetdiscover"), &[]);
    assert!(reference.status.success());
    let reference = String::from_utf8_lossy(&reference.stdout).into_owned();
    sim.console("PerformanceSet \"Switch1\"[3] PortCounters.SymbolErrorCounter=77");
    sim.console("PerformanceSet \"Switch1\"[3] PortCounters.LinkDownedCounter=3");
    let (j, code) = sim.subnet(&[]);

    let errors = schema::mismatches("subnet", &j);
    assert!(errors.is_empty(), "{errors:#?}");
    let (want_links, want_lids) = ibnetdiscover_facts(&reference);
    let (got_links, got_lids) = rdmactl_facts(&j);
    assert_eq!(got_links.len(), 6);
    assert_eq!(got_links, want_links, "links, widths and speeds");
    assert_eq!(got_lids, want_lids, "node LIDs");
    assert_eq!(j["summary"]["switches"], 2);
    assert_eq!(j["summary"]["cas"], 4);
    assert_eq!(j["sm"][0]["state"], "master");

    // The planted counters, found and explained, naming both ends of the link.
    assert_eq!(code, 1, "a finding is exit 1");
    let e = findings(&j, "subnet-link-errors");
    assert_eq!(e.len(), 1, "{:#?}", j["findings"]);
    let subject = e[0]["subject"].as_str().unwrap();
    assert!(
        subject.contains("switch \"Switch1\" port 3")
            && subject.contains("switch \"Switch2\" port 3"),
        "{subject}"
    );
    let evidence = e[0]["evidence"].to_string();
    assert!(evidence.contains("symbol_error = 77"), "{evidence}");
    assert!(evidence.contains("link_downed = 3"), "{evidence}");
    assert!(e[0]["fix"].as_str().unwrap().contains("cable"));

    // Every counter of every switch port of a link equals perfquery's.
    for l in j["links"].as_array().unwrap() {
        for side in ["a", "b"] {
            let guid = hex(l[side]["guid"].as_str().unwrap());
            let port = l[side]["port"].as_u64().unwrap() as u8;
            let node = j["nodes"]
                .as_array()
                .unwrap()
                .iter()
                .find(|n| hex(n["guid"].as_str().unwrap()) == guid)
                .unwrap();
            if node["type"] != "switch" {
                continue;
            }
            let lid = node["lid"].as_u64().unwrap();
            let theirs = perfquery(&sim, lid, port);
            // ibsim's PMA has PortCountersExtended: the 64-bit data counters come from
            // it (only it has the unicast ones), and perfquery -x, read later, has at least
            // as much traffic counted.
            let extended = perfquery_args(&sim, &["-x", &lid.to_string(), &port.to_string()]);
            for (ours, name) in [
                ("port_xmit_data", "PortXmitData"),
                ("port_rcv_packets", "PortRcvPkts"),
                ("unicast_xmit_packets", "PortUnicastXmitPkts"),
            ] {
                let mine = l["counters"][side][ours].as_u64().unwrap();
                assert!(
                    mine <= extended[name],
                    "{ours}: {mine} > {}",
                    extended[name]
                );
            }
            for (ours, name) in PERFQUERY_NAMES {
                assert_eq!(
                    l["counters"][side][ours].as_u64(),
                    theirs.get(*name).copied(),
                    "{ours} of {guid:#x} port {port}"
                );
            }
        }
    }

    // Only Gets unless asked: perfquery still saw 77 above. --reset-counters clears them
    // after the report.
    let out = sim.run(
        Path::new(env!("CARGO_BIN_EXE_rdmactl")),
        &["subnet", "--reset-counters"],
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "the report still shows the errors"
    );
    let switch1_lid = j["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["description"] == "Switch1")
        .unwrap()["lid"]
        .as_u64()
        .unwrap();
    let after = perfquery(&sim, switch1_lid, 3);
    assert_eq!(after["SymbolErrorCounter"], 0);
    assert_eq!(after["LinkDownedCounter"], 0);
    let (j_after, code_after) = sim.subnet(&[]);
    assert!(findings(&j_after, "subnet-link-errors").is_empty());
    assert_eq!(code_after, 0);

    // --topology writes ibnetdiscover's format; ibsim loads it back into the same subnet.
    let topo = sim.dir.path().join("topology.out");
    let out = sim.run(
        Path::new(env!("CARGO_BIN_EXE_rdmactl")),
        &[
            "subnet",
            "--topology",
            topo.to_str().unwrap(),
            "--no-counters",
        ],
    );
    assert!(out.status.code().is_some());
    let written = std::fs::read_to_string(&topo).unwrap();
    let (again_links, _) = ibnetdiscover_facts(&written);
    assert_eq!(
        again_links, want_links,
        "--topology reads back as the same links"
    );
    let mut reloaded = Sim::start(&written);
    reloaded.start_sm();
    let (j2, _) = reloaded.subnet(&["--no-counters"]);
    let (links2, _) = rdmactl_facts(&j2);
    assert_eq!(
        links2, got_links,
        "ibsim loaded --topology's output as the same subnet"
    );
}

#[test]
#[ignore = "needs ibsim-utils, opensm, infiniband-diags (ibsim, opensm, ibnetdiscover, perfquery); scripts/test runs it"]
fn every_example_topology_of_ibsim_is_walked_as_ibnetdiscover_sees_it() {
    require_sim();
    for name in ["net", "net.1", "net.2sw2path", "net.2sw2path4hca2port"] {
        let mut sim = Sim::start(&example(name));
        sim.start_sm();
        let reference = sim.run(&tool("ibnetdiscover"), &[]);
        let (want_links, want_lids) =
            ibnetdiscover_facts(&String::from_utf8_lossy(&reference.stdout));
        let (j, _) = sim.subnet(&[]);
        let (got_links, got_lids) = rdmactl_facts(&j);
        assert_eq!(got_links, want_links, "{name}");
        assert_eq!(got_lids, want_lids, "{name}");
        assert_eq!(j["mads"]["unanswered"], 0, "{name}");
        // --hosts and --switches list the GUIDs ibhosts and ibswitches list.
        for (flag, reference) in [("--hosts", "ibhosts"), ("--switches", "ibswitches")] {
            let guids = |out: Output| -> BTreeSet<String> {
                String::from_utf8_lossy(&out.stdout)
                    .lines()
                    .filter_map(|l| l.split_whitespace().nth(2).map(str::to_string))
                    .collect()
            };
            let ours = guids(sim.run(Path::new(env!("CARGO_BIN_EXE_rdmactl")), &["subnet", flag]));
            let theirs = guids(sim.run(&tool(reference), &[]));
            assert!(!ours.is_empty(), "{name} {flag}");
            assert_eq!(ours, theirs, "{name} {flag}");
        }
    }
}

#[test]
#[ignore = "needs ibsim-utils, opensm, infiniband-diags (ibsim, opensm, ibnetdiscover, perfquery); scripts/test runs it"]
fn with_an_interval_the_counters_that_grew_are_judged_not_their_totals() {
    require_sim();
    let mut sim = Sim::start(&example("net.1"));
    sim.start_sm();
    // 5 symbol errors are below the threshold for a total, but they appear mid-interval.
    let child = sim
        .command(Path::new(env!("CARGO_BIN_EXE_rdmactl")))
        .args(["subnet", "-j", "--interval", "4"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    sim.console("PerformanceSet \"Switch1\"[1] PortCounters.SymbolErrorCounter=5");
    let out = child.wait_with_output().unwrap();
    let j: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["summary"]["interval_s"], 4.0);
    let e = findings(&j, "subnet-link-errors");
    assert_eq!(e.len(), 1, "{:#?}", j["findings"]);
    let evidence = e[0]["evidence"].to_string();
    assert!(
        evidence.contains("switch \\\"Switch1\\\" port 1: symbol_error +5 in 4.0 s (1.2/s), now 5"),
        "{evidence}"
    );
    assert_eq!(out.status.code(), Some(1));
}

#[test]
#[ignore = "needs ibsim-utils, opensm, infiniband-diags (ibsim, opensm, ibnetdiscover, perfquery); scripts/test runs it"]
fn a_moved_cable_and_a_changed_lid_since_the_baseline_are_named() {
    require_sim();
    let mut sim = Sim::start(&example("net.2sw2path4hca"));
    sim.start_sm();
    let (before, _) = sim.subnet(&["--no-counters"]);
    let baseline = sim.dir.path().join("baseline.json");
    std::fs::write(&baseline, before.to_string()).unwrap();
    // Hca1's cable from Switch1 port 1 to the free port 4; Hca2 given LID 40.
    sim.console("Unlink \"Hca1\"");
    sim.console("Link \"Hca1\"[1] \"Switch1\"[4]");
    sim.console("Baselid \"Hca2\"[1] 40");
    let (j, code) = sim.subnet(&["--no-counters", "--baseline", baseline.to_str().unwrap()]);
    assert_eq!(code, 1);
    let moved = findings(&j, "subnet-link-moved");
    assert_eq!(moved.len(), 1, "{:#?}", j["findings"]);
    let evidence = moved[0]["evidence"].to_string();
    assert!(
        evidence.contains("then: \\\"Hca1\\\" port 1 ↔ switch \\\"Switch1\\\" port 1"),
        "{evidence}"
    );
    assert!(
        evidence.contains("now: \\\"Hca1\\\" port 1 ↔ switch \\\"Switch1\\\" port 4"),
        "{evidence}"
    );
    let lid = findings(&j, "subnet-lid-changed");
    assert_eq!(lid.len(), 1, "{:#?}", j["findings"]);
    assert_eq!(lid[0]["subject"], "\"Hca2\"");
    assert!(lid[0]["message"].as_str().unwrap().ends_with(", 40 now"));
    assert!(findings(&j, "subnet-node-missing").is_empty());
    assert!(findings(&j, "subnet-link-down").is_empty());
}

#[test]
#[ignore = "needs ibsim-utils, opensm, infiniband-diags (ibsim, opensm, ibnetdiscover, perfquery); scripts/test runs it"]
fn without_a_subnet_manager_the_walk_says_so_and_how_to_fix_it() {
    require_sim();
    let sim = Sim::start(&example("net.2sw2path4hca"));
    let (j, code) = sim.subnet(&[]);
    assert_eq!(code, 1);
    assert_eq!(j["summary"]["nodes"], 6, "the walk needs no SM");
    let f = findings(&j, "subnet-no-sm");
    assert_eq!(f.len(), 1, "{:#?}", j["findings"]);
    assert_eq!(f[0]["severity"], "fail");
    assert_eq!(codes(&j)[0], "subnet-no-sm", "worst first");
    let evidence = f[0]["evidence"].to_string();
    assert!(evidence.contains("SM LID is 0"), "{evidence}");
    assert!(f[0]["fix"].as_str().unwrap().contains("opensm"));
    assert_eq!(j["local"]["sm_lid"], 0);
}

#[test]
#[ignore = "needs ibsim-utils, opensm, infiniband-diags (ibsim, opensm, ibnetdiscover, perfquery); scripts/test runs it"]
fn dropped_mads_are_resent_and_the_walk_finds_every_link_every_time() {
    require_sim();
    let mut sim = Sim::start(&example("net.1"));
    sim.start_sm();
    sim.console("Error \"Switch1\" 30");
    let mut resent = 0;
    for run in 0..5 {
        // The defaults: resends back off from the measured answer time, so the run stays
        // quick; a 20 ms --timeout gave live nodes up on a loaded 2-core machine (the walk
        // gives up a node silent for one --timeout).
        let (j, _) = sim.subnet(&[]);
        assert_eq!(j["summary"]["nodes"], 3, "run {run}");
        assert_eq!(
            j["summary"]["links"], 2,
            "run {run}: {:#?}",
            j["unanswered"]
        );
        assert_eq!(j["mads"]["unanswered"], 0, "run {run}");
        resent += j["mads"]["resent"].as_u64().unwrap();
        if j["mads"]["resent"].as_u64().unwrap() > 0 {
            let f = findings(&j, "subnet-mads-resent");
            assert_eq!(f.len(), 1);
        }
    }
    assert!(resent > 0, "30% drops must have cost some resends");
}

#[test]
#[ignore = "needs ibsim-utils, opensm, infiniband-diags (ibsim, opensm, ibnetdiscover, perfquery); scripts/test runs it"]
fn a_node_that_never_answers_is_reported_and_the_walk_goes_on() {
    require_sim();
    let mut sim = Sim::start(&example("net.2sw2path4hca"));
    sim.start_sm();
    sim.console("Error \"Hca4\" 100");
    // The default --timeout: a 30 ms one let a loaded machine's slow answers be resent too.
    let (j, code) = sim.subnet(&["--retries", "2", "--no-counters"]);
    assert_eq!(code, 1);
    assert_eq!(j["summary"]["nodes"], 5, "every other node is found");
    assert_eq!(j["summary"]["switches"], 2);
    let f = findings(&j, "subnet-node-unanswered");
    assert_eq!(f.len(), 1, "{:#?}", j["findings"]);
    let evidence = f[0]["evidence"].to_string();
    // Hca4 hangs off Switch2 (GUID 0x200001) port 2.
    assert!(
        evidence.contains("(out of switch \\\"Switch2\\\" port 2)"),
        "{evidence}"
    );
    assert_eq!(j["unanswered"][0]["via"], "0x0000000000200001 port 2");
    assert_eq!(j["unanswered"][0]["what"], "NodeInfo");
    assert_eq!(j["mads"]["resent"], 2);
    assert_eq!(j["mads"]["unanswered"], 1);
}

/// A two-level fat tree: `spines` spine switches, `leaves` leaf switches each with one link
/// to every spine and `hosts` hosts, every link 4X EDR except where `speed`/`width` say.
fn fat_tree(
    spines: usize,
    leaves: usize,
    hosts: usize,
    link: impl Fn(&str, &str) -> Option<&'static str>,
) -> String {
    let ports = 36;
    let spine = |s: usize| format!("S-{:016x}", 0x5000 + s);
    let leaf = |l: usize| format!("S-{:016x}", 0x6000 + l);
    let host = |l: usize, h: usize| format!("H-{:016x}", 0x10_0000 + (l * 64 + h) * 4);
    let rate = |a: &str, b: &str| link(a, b).or(link(b, a)).unwrap_or("4xEDR");
    let mut out = String::new();
    for s in 0..spines {
        out.push_str(&format!(
            "switchguid=0x{:x}\nSwitch\t{ports} \"{}\"\t# \"spine{s}\" enhanced port 0 lid 0 lmc 0\n",
            0x5000 + s,
            spine(s)
        ));
        for l in 0..leaves {
            out.push_str(&format!(
                "[{}]\t\"{}\"[{}]\t# \"leaf{l}\" lid 0 {}\n",
                l + 1,
                leaf(l),
                hosts + s + 1,
                rate(&spine(s), &leaf(l))
            ));
        }
        out.push('\n');
    }
    for l in 0..leaves {
        out.push_str(&format!(
            "switchguid=0x{:x}\nSwitch\t{ports} \"{}\"\t# \"leaf{l}\" enhanced port 0 lid 0 lmc 0\n",
            0x6000 + l,
            leaf(l)
        ));
        for h in 0..hosts {
            out.push_str(&format!(
                "[{}]\t\"{}\"[1]\t# \"node{l:02}{h:02} HCA-1\" lid 0 {}\n",
                h + 1,
                host(l, h),
                rate(&leaf(l), &host(l, h))
            ));
        }
        for s in 0..spines {
            out.push_str(&format!(
                "[{}]\t\"{}\"[{}]\t# \"spine{s}\" lid 0 {}\n",
                hosts + s + 1,
                spine(s),
                l + 1,
                rate(&leaf(l), &spine(s))
            ));
        }
        out.push('\n');
    }
    for l in 0..leaves {
        for h in 0..hosts {
            out.push_str(&format!(
                "caguid=0x{:x}\nCa\t1 \"{}\"\t# \"node{l:02}{h:02} HCA-1\"\n[1]\t\"{}\"[{}]\t# lid 0 lmc 0 \"leaf{l}\" lid 0 {}\n\n",
                0x10_0000 + (l * 64 + h) * 4,
                host(l, h),
                leaf(l),
                h + 1,
                rate(&host(l, h), &leaf(l))
            ));
        }
    }
    out
}

#[test]
#[ignore = "needs ibsim-utils, opensm, infiniband-diags (ibsim, opensm, ibnetdiscover, perfquery); scripts/test runs it"]
fn a_fat_tree_with_planted_faults_each_found_and_explained() {
    require_sim();
    // leaf2 ↔ spine1 enabled only up to DDR and node0305's HCA only up to 1X (ibsim sets
    // LinkSpeedEnabled/LinkWidthEnabled from the topology and trains each link at the best
    // both ends enable): a configuration difference, info. Symbol errors on leaf0 port 1:
    // the one fault of the cable.
    let bad_spine = format!("S-{:016x}", 0x5001);
    let bad_leaf = format!("S-{:016x}", 0x6002);
    let narrow_host = format!("H-{:016x}", 0x10_0000 + (3 * 64 + 5) * 4);
    let topology = fat_tree(4, 6, 8, |a, b| {
        if a == bad_spine && b == bad_leaf {
            Some("4xDDR")
        } else if a == narrow_host {
            Some("1xEDR")
        } else {
            None
        }
    });
    let mut sim = Sim::start(&topology);
    sim.start_sm();
    sim.console(&format!(
        "PerformanceSet \"S-{:016x}\"[1] PortCounters.SymbolErrorCounter=50",
        0x6000
    ));
    let (j, code) = sim.subnet(&[]);
    assert_eq!(code, 1, "the symbol errors: {:#?}", j["findings"]);
    assert_eq!(j["summary"]["switches"], 10);
    assert_eq!(j["summary"]["cas"], 48);
    assert_eq!(j["summary"]["links"], 4 * 6 + 6 * 8);

    let reference = sim.run(&tool("ibnetdiscover"), &[]);
    let (want_links, want_lids) = ibnetdiscover_facts(&String::from_utf8_lossy(&reference.stdout));
    let (got_links, got_lids) = rdmactl_facts(&j);
    assert_eq!(got_links, want_links);
    assert_eq!(got_lids, want_lids);

    assert!(
        findings(&j, "subnet-link-degraded").is_empty(),
        "nothing trained below what its ends enable: {:#?}",
        j["findings"]
    );
    let capability = findings(&j, "subnet-link-capability");
    assert_eq!(capability.len(), 2, "{:#?}", j["findings"]);
    for f in &capability {
        assert_eq!(f["severity"], "info");
        assert!(!f["fix"].as_str().unwrap().contains("cable"), "{f}");
    }
    let ddr = capability
        .iter()
        .find(|f| f["subject"].as_str().unwrap().contains("\"spine1\""))
        .unwrap();
    assert!(
        ddr["subject"].as_str().unwrap().contains("\"leaf2\""),
        "{ddr}"
    );
    let message = ddr["message"].as_str().unwrap();
    assert!(
        message.contains("link runs at 4X DDR, the best both ends allow, where most inter-switch links run 4X EDR"),
        "{message}"
    );
    assert!(message.contains("is enabled only up to DDR"), "{message}");
    let narrow = capability
        .iter()
        .find(|f| f["subject"].as_str().unwrap().contains("node0305"))
        .unwrap();
    let message = narrow["message"].as_str().unwrap();
    assert!(
        message.contains("where most switch-to-CA links run 4X EDR"),
        "{message}"
    );
    assert!(
        message.contains("is enabled only up to 1X though it supports 12X"),
        "{message}"
    );
    let errors = findings(&j, "subnet-link-errors");
    assert_eq!(errors.len(), 1, "{:#?}", j["findings"]);
    assert!(errors[0]["subject"]
        .as_str()
        .unwrap()
        .starts_with("switch \"leaf0\" port 1 ↔"));
    assert!(errors[0]["fix"].as_str().unwrap().contains("cable"));

    // --svg draws every node and link (each link its own path), the links with findings,
    // and only they, in their finding's colour with the finding in their tooltip.
    let svg = sim.dir.path().join("subnet.svg");
    sim.subnet(&["--svg", svg.to_str().unwrap()]);
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(svg.starts_with("<svg ") && svg.ends_with("</svg>\n"));
    assert_eq!(svg.matches("<rect ").count(), 10);
    assert_eq!(svg.matches("<circle ").count(), 48);
    assert_eq!(svg.matches("<path ").count(), 72);
    let coloured: Vec<&str> = svg
        .lines()
        .filter(|l| l.starts_with("<path ") && !l.contains(GREY))
        .collect();
    // The two capability links in the info colour and the link with symbol errors in the
    // warning colour, each with its finding in its tooltip.
    assert_eq!(coloured.len(), 3, "{coloured:#?}");
    for f in capability.iter().chain(&errors) {
        let colour = severity_colour(f["severity"].as_str().unwrap());
        let drawn: Vec<&&str> = coloured
            .iter()
            .filter(|l| l.contains(&xml_text(f["message"].as_str().unwrap())))
            .collect();
        assert_eq!(drawn.len(), 1, "{f}: {coloured:#?}");
        assert!(drawn[0].contains(colour), "{f}: {}", drawn[0]);
    }

    // A host unlinked since the baseline (the -j above, and ibnetdiscover's file).
    let baseline_json = sim.dir.path().join("baseline.json");
    std::fs::write(&baseline_json, j.to_string()).unwrap();
    let baseline_topo = sim.dir.path().join("baseline.topo");
    std::fs::write(&baseline_topo, &reference.stdout).unwrap();
    let gone = format!("H-{:016x}", 0x10_0000 + (64 + 2) * 4);
    sim.console(&format!("Unlink \"{gone}\""));
    // And the cable between leaf0's port 9 and spine0.
    sim.console(&format!("Unlink \"S-{:016x}\"[9]", 0x6000));
    for baseline in [&baseline_json, &baseline_topo] {
        let (j, code) = sim.subnet(&["--no-counters", "--baseline", baseline.to_str().unwrap()]);
        assert_eq!(code, 1);
        let missing = findings(&j, "subnet-node-missing");
        assert_eq!(missing.len(), 1, "{baseline:?}: {:#?}", j["findings"]);
        assert!(missing[0]["message"]
            .as_str()
            .unwrap()
            .contains("node0102 HCA-1"));
        let evidence = missing[0]["evidence"].to_string();
        assert!(
            evidence.contains("\\\"leaf1\\\" port 3 is DOWN"),
            "{evidence}"
        );
        assert!(!codes(&j).contains(&"subnet-link-moved".to_string()));
        let down = findings(&j, "subnet-link-down");
        assert_eq!(down.len(), 1, "{baseline:?}: {:#?}", j["findings"]);
        let subject = down[0]["subject"].as_str().unwrap();
        assert!(
            subject.contains("\"leaf0\" port 9") && subject.contains("\"spine0\" port 1"),
            "{subject}"
        );
        assert!(
            down[0]["evidence"].to_string().contains("DOWN"),
            "{}",
            down[0]
        );
    }
}

/// 18 spines, 24 leaves of 36 ports, 18 hosts a leaf: 42 switches and 432 hosts.
fn large_fat_tree() -> String {
    fat_tree(18, 24, 18, |_, _| None)
}

#[test]
#[ignore = "needs ibsim-utils, opensm, infiniband-diags (ibsim, opensm, ibnetdiscover, perfquery); scripts/test runs it"]
fn a_474_node_fat_tree_is_walked_exactly_as_ibnetdiscover_sees_it() {
    require_sim();
    let mut sim = Sim::start(&large_fat_tree());
    sim.start_sm();
    let (j, code) = sim.subnet(&[]);
    assert_eq!(j["summary"]["nodes"], 474);
    assert_eq!(j["summary"]["links"], 18 * 24 + 24 * 18);
    let reference = sim.run(&tool("ibnetdiscover"), &[]);
    let (want_links, want_lids) = ibnetdiscover_facts(&String::from_utf8_lossy(&reference.stdout));
    let (got_links, got_lids) = rdmactl_facts(&j);
    assert_eq!(got_links, want_links);
    assert_eq!(got_lids, want_lids);
    assert_eq!(code, 0, "a clean fabric: {:#?}", j["findings"]);
    assert_eq!(codes(&j), ["subnet-sm"], "{}", j["mads"]);
}

/// Discovery time on the largest topology, rdmactl against ibnetdiscover, in one run (for
/// docs/benchmarks.md). Counters off: ibnetdiscover reads none.
#[test]
#[ignore = "benchmark: cargo test --release --test subnet_ibsim -- --ignored --nocapture"]
fn benchmark_discovery_against_ibnetdiscover() {
    require_sim();
    let mut sim = Sim::start(&large_fat_tree());
    sim.start_sm();
    let rdmactl = PathBuf::from(env!("CARGO_BIN_EXE_rdmactl"));
    let ibnetdiscover = tool("ibnetdiscover");
    let time = |program: &Path, args: &[&str]| {
        let start = Instant::now();
        let out = sim.run(program, args);
        assert!(out.status.code().is_some_and(|c| c <= 1), "{program:?}");
        start.elapsed().as_secs_f64() * 1000.0
    };
    let runs = 5;
    let mut ours = Vec::new();
    let mut theirs = Vec::new();
    for _ in 0..runs {
        ours.push(time(
            &rdmactl,
            &["subnet", "--no-counters", "--topology", "/dev/null"],
        ));
        theirs.push(time(&ibnetdiscover, &[]));
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(|a, b| a.total_cmp(b));
        v[v.len() / 2]
    };
    let (o, t) = (median(&mut ours), median(&mut theirs));
    println!("474 nodes, 864 links, {runs} runs each, median wall ms:");
    println!("  rdmactl subnet --no-counters: {o:.1} ms {ours:?}");
    println!("  ibnetdiscover:                {t:.1} ms {theirs:?}");
    println!("  ratio (ibnetdiscover / rdmactl): {:.2}", t / o);
    let with_counters = time(&rdmactl, &["subnet"]);
    println!(
        "  rdmactl subnet (with PortCounters on both ends of every link): {with_counters:.1} ms"
    );
}

// ---- judgement: counters, capability, parallel links, INIT/ARMED, an SM gone (issue 27)

/// The finding with `code` whose subject contains `what`.
fn finding_on<'a>(j: &'a Value, code: &str, what: &str) -> &'a Value {
    findings(j, code)
        .into_iter()
        .find(|f| f["subject"].as_str().unwrap_or("").contains(what))
        .unwrap_or_else(|| panic!("no {code} on {what}: {:#?}", j["findings"]))
}

fn text_of(f: &Value) -> String {
    format!("{} {} {}", f["message"], f["evidence"], f["fix"])
}

#[test]
#[ignore = "needs ibsim-utils, opensm, infiniband-diags (ibsim, opensm, ibnetdiscover, perfquery); scripts/test runs it"]
fn every_error_and_congestion_counter_gets_its_own_cause_and_fix() {
    require_sim();
    let mut sim = Sim::start(&fat_tree(2, 2, 4, |_, _| None));
    sim.start_sm();
    let leaf = |l: usize| format!("S-{:016x}", 0x6000 + l);
    let host = |l: usize, h: usize| format!("H-{:016x}", 0x10_0000 + (l * 64 + h) * 4);
    for (node, port, field) in [
        (leaf(0), 1, "PortRcvSwitchRelayErrors=200"),
        (leaf(0), 2, "PortXmitDiscards=500"),
        (leaf(0), 3, "ExcessiveBufferOverrunErrors=3"),
        (leaf(0), 4, "VL15Dropped=300"),
        (leaf(1), 1, "PortXmitConstraintErrors=5"),
        (leaf(1), 2, "PortXmitWait=4294967295"),
        // node0102 receives packets marked bad; leaf1 port 5 (from spine0) has the
        // symbol errors where they were corrupted.
        (host(1, 2), 1, "PortRcvRemotePhysicalErrors=50"),
        (leaf(1), 5, "SymbolErrorCounter=100"),
    ] {
        sim.console(&format!(
            "PerformanceSet \"{node}\"[{port}] PortCounters.{field}"
        ));
    }
    let (j, code) = sim.subnet(&[]);
    assert_eq!(code, 1);
    // (code, link, words of its cause and fix)
    let cases = [
        (
            "subnet-relay-errors",
            "\"leaf0\" port 1 ↔",
            "forwarding table",
        ),
        (
            "subnet-xmit-discards",
            "\"leaf0\" port 2 ↔",
            "head-of-queue",
        ),
        ("subnet-buffer-overrun", "\"leaf0\" port 3 ↔", "credits"),
        ("subnet-vl15-dropped", "\"leaf0\" port 4 ↔", "SM storm"),
        (
            "subnet-constraint-errors",
            "\"leaf1\" port 1 ↔",
            "partitions.conf",
        ),
        ("subnet-xmit-wait", "\"leaf1\" port 2 ↔", "congestion"),
    ];
    for (code, link, words) in cases {
        let f = finding_on(&j, code, link);
        let text = text_of(f);
        assert!(text.contains(words), "{code}: {text}");
        assert!(
            !f["fix"].as_str().unwrap().contains("cable"),
            "{code} is not the cable's: {text}"
        );
    }
    let wait = finding_on(&j, "subnet-xmit-wait", "\"leaf1\" port 2 ↔");
    assert_eq!(wait["severity"], "info");
    assert!(text_of(wait).contains("saturated at its 32-bit maximum"));
    // Remote physical errors point to where the corruption happened, which has its own
    // finding with the cable as its fix.
    let remote = finding_on(&j, "subnet-remote-physical-errors", "node0102");
    let text = text_of(remote);
    assert!(
        text.contains("upstream: switch \\\"leaf1\\\" port 5: symbol_error = 100"),
        "{text}"
    );
    assert!(
        remote["fix"]
            .as_str()
            .unwrap()
            .starts_with("repair the link at switch \"leaf1\" port 5"),
        "{text}"
    );
    let origin = finding_on(&j, "subnet-link-errors", "\"leaf1\" port 5");
    assert!(origin["fix"].as_str().unwrap().contains("cable"));
    assert_eq!(
        findings(&j, "subnet-link-errors").len(),
        1,
        "only the link with symbol errors is the cable's: {:#?}",
        j["findings"]
    );
}

/// Two switches joined by two links, one of them with an end enabled only up to FDR;
/// EDR hosts, one QDR-only host, and a dual-port HCA with a port on each switch.
fn mixed_generations(slow_parallel: bool) -> String {
    let sw = |n: u64| format!("S-{:016x}", 0x7000 + n);
    let ca = |n: u64| format!("H-{:016x}", 0x30_0000 + n * 4);
    let rate = |n: u64| if n == 3 { "4xQDR" } else { "4xEDR" };
    let mut out = String::new();
    for s in 0..2u64 {
        out.push_str(&format!(
            "switchguid=0x{:x}\nSwitch\t36 \"{}\"\t# \"sw{s}\" enhanced port 0 lid 0 lmc 0\n",
            0x7000 + s,
            sw(s)
        ));
        let other = sw(1 - s);
        let other_name = format!("sw{}", 1 - s);
        out.push_str(&format!(
            "[1]\t\"{other}\"[1]\t# \"{other_name}\" lid 0 4xEDR\n"
        ));
        // The second inter-switch link: sw0's end enabled only up to FDR.
        let second = if slow_parallel && s == 0 {
            "4xFDR"
        } else {
            "4xEDR"
        };
        out.push_str(&format!(
            "[2]\t\"{other}\"[2]\t# \"{other_name}\" lid 0 {second}\n"
        ));
        for h in 0..4u64 {
            let n = s * 4 + h;
            out.push_str(&format!(
                "[{}]\t\"{}\"[1]\t# \"host{n} HCA-1\" lid 0 {}\n",
                h + 3,
                ca(n),
                rate(n)
            ));
        }
        out.push_str(&format!(
            "[10]\t\"{}\"[{}]\t# \"dual HCA-1\" lid 0 4xEDR\n\n",
            ca(9),
            s + 1
        ));
    }
    for n in 0..8u64 {
        let (s, h) = (n / 4, n % 4);
        out.push_str(&format!(
            "caguid=0x{:x}\nCa\t1 \"{}\"\t# \"host{n} HCA-1\"\n[1]\t\"{}\"[{}]\t# lid 0 lmc 0 \"sw{s}\" lid 0 {}\n\n",
            0x30_0000 + n * 4,
            ca(n),
            sw(s),
            h + 3,
            rate(n)
        ));
    }
    out.push_str(&format!(
        "caguid=0x{:x}\nCa\t2 \"{}\"\t# \"dual HCA-1\"\n[1]\t\"{}\"[10]\t# lid 0 lmc 0 \"sw0\" lid 0 4xEDR\n[2]\t\"{}\"[10]\t# lid 0 lmc 0 \"sw1\" lid 0 4xEDR\n\n",
        0x30_0000 + 9 * 4,
        ca(9),
        sw(0),
        sw(1)
    ));
    out
}

#[test]
#[ignore = "needs ibsim-utils, opensm, infiniband-diags (ibsim, opensm, ibnetdiscover, perfquery); scripts/test runs it"]
fn a_healthy_subnet_of_mixed_generations_with_a_dual_port_hca_exits_0() {
    require_sim();
    let mut sim = Sim::start(&mixed_generations(false));
    sim.start_sm();
    let (j, code) = sim.subnet(&[]);
    assert_eq!(j["summary"]["nodes"], 11);
    let worse: Vec<&Value> = j["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] == "warn" || f["severity"] == "fail")
        .collect();
    assert!(worse.is_empty(), "{worse:#?}");
    assert_eq!(code, 0);
    // The QDR host is said to be one, as info, with no cable to swap.
    let qdr = finding_on(&j, "subnet-link-capability", "host3 HCA-1");
    assert_eq!(qdr["severity"], "info");
    let text = text_of(qdr);
    assert!(
        text.contains("link runs at 4X QDR, the best both ends allow, where most switch-to-CA links run 4X EDR"),
        "{text}"
    );
    assert!(
        text.contains("\\\"host3 HCA-1\\\" port 1 supports only up to QDR (an older generation)"),
        "{text}"
    );
    assert!(
        !text.contains("trained down") && !text.contains("reseat"),
        "{text}"
    );
    assert!(findings(&j, "subnet-link-degraded").is_empty());
    // Both ports of the dual-port HCA: their counters were read over their own LIDs.
    let dual: Vec<&Value> = j["links"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["a"]["node"] == "dual HCA-1" || l["b"]["node"] == "dual HCA-1")
        .collect();
    assert_eq!(dual.len(), 2);
    for l in dual {
        let side = if l["a"]["node"] == "dual HCA-1" {
            "a"
        } else {
            "b"
        };
        assert!(
            l["counters"][side]["port_xmit_data"].is_u64(),
            "{l:#}: the dual-port HCA's counters"
        );
    }
}

#[test]
#[ignore = "needs ibsim-utils, opensm, infiniband-diags (ibsim, opensm, ibnetdiscover, perfquery); scripts/test runs it"]
fn a_slower_parallel_link_is_named_with_the_end_that_holds_it_back() {
    require_sim();
    let mut sim = Sim::start(&mixed_generations(true));
    sim.start_sm();
    let (j, code) = sim.subnet(&["--no-counters"]);
    assert_eq!(code, 1);
    let slow = findings(&j, "subnet-parallel-link-slower");
    assert_eq!(slow.len(), 1, "{:#?}", j["findings"]);
    let f = slow[0];
    assert_eq!(f["severity"], "warn");
    assert_eq!(
        f["subject"],
        "switch \"sw0\" port 2 ↔ switch \"sw1\" port 2"
    );
    let text = text_of(f);
    assert!(
        text.contains(
            "runs at 4X FDR while its parallel link between the same two nodes runs at 4X EDR"
        ),
        "{text}"
    );
    assert!(
        text.contains("switch \\\"sw0\\\" port 2 is enabled only up to FDR though it supports"),
        "{text}"
    );
    assert!(!text.contains("reseat"), "{text}");
    assert!(findings(&j, "subnet-link-degraded").is_empty());
    assert!(
        findings(&j, "subnet-link-capability")
            .iter()
            .all(|f| !f["subject"].as_str().unwrap().contains("sw0\" port 2")),
        "said once"
    );
}

/// The LID of the node whose description is `desc`.
fn lid_of(j: &Value, desc: &str) -> u64 {
    j["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["description"] == desc)
        .and_then(|n| n["lid"].as_u64())
        .unwrap_or_else(|| panic!("no node {desc}"))
}

#[test]
#[ignore = "needs ibsim-utils, opensm, infiniband-diags (ibsim, opensm, ibnetdiscover, perfquery); scripts/test runs it"]
fn links_in_init_or_armed_are_named_with_both_ends_and_the_sm_s_part() {
    require_sim();
    let mut sim = Sim::start(&example("net.2sw2path4hca"));
    sim.start_sm();
    let (before, _) = sim.subnet(&["--no-counters"]);
    let hca4 = lid_of(&before, "Hca4").to_string();
    let switch1 = lid_of(&before, "Switch1").to_string();
    // Hca4's port ARMED by a PortInfo Set, as an SM that stopped mid-sweep leaves it;
    // Switch1's port 2 (to Hca3) taken down, so it comes back in INIT.
    let port_state = |args: &[&str]| {
        let out = sim.run(&tool("ibportstate"), args);
        assert!(out.status.success(), "ibportstate {args:?}: {out:?}");
    };
    // The down first: its trap makes the SM sweep, which would activate an ARMED port.
    port_state(&[&switch1, "2", "down"]);
    std::thread::sleep(Duration::from_secs(2));
    port_state(&[&hca4, "1", "arm"]);
    let (j, code) = sim.subnet(&[]);
    assert_eq!(code, 1);
    let idle = findings(&j, "subnet-link-not-active");
    assert_eq!(idle.len(), 2, "{:#?}\n{}", j["findings"], j["nodes"]);
    let armed = finding_on(&j, "subnet-link-not-active", "\"Hca4\" port 1");
    let text = text_of(armed);
    assert!(
        text.contains("ARMED and never ACTIVE, an SM sweep problem"),
        "{text}"
    );
    assert!(
        text.contains("\\\"Hca4\\\" port 1: ARMED (LINK_UP)"),
        "{text}"
    );
    assert!(
        text.contains("switch \\\"Switch2\\\" port 2: ACTIVE"),
        "{text}"
    );
    let init = finding_on(&j, "subnet-link-not-active", "\"Hca3\" port 1");
    let text = text_of(init);
    assert!(text.contains("still INIT"), "{text}");
    assert!(
        text.contains("switch \\\"Switch1\\\" port 2: INIT (LINK_UP)"),
        "{text}"
    );
    assert!(!text.contains("ARMED"), "{text}");
    for f in &idle {
        assert!(!f["fix"].as_str().unwrap().contains("cable"));
    }
    // Counters behind a port that is not ACTIVE are not asked for, nor called unanswered.
    assert!(
        findings(&j, "subnet-attribute-unanswered").is_empty(),
        "{:#?}",
        j["findings"]
    );
    assert!(findings(&j, "subnet-no-sm").is_empty());
}

#[test]
#[ignore = "needs ibsim-utils, opensm, infiniband-diags (ibsim, opensm, ibnetdiscover, perfquery); scripts/test runs it"]
fn an_sm_that_died_leaves_ports_active_and_is_told_apart_from_no_sm() {
    require_sim();
    let mut sim = Sim::start(&example("net.2sw2path4hca"));
    sim.start_sm();
    if let Some(sm) = &mut sim.opensm {
        stop(sm);
    }
    sim.opensm = None;
    let (j, code) = sim.subnet(&[]);
    assert_eq!(code, 1);
    assert!(
        findings(&j, "subnet-no-sm").is_empty(),
        "{:#?}",
        j["findings"]
    );
    let gone = findings(&j, "subnet-sm-gone");
    assert_eq!(gone.len(), 1, "{:#?}", j["findings"]);
    let text = text_of(gone[0]);
    assert!(text.contains("forwarding goes on"), "{text}");
    assert!(text.contains("new rdma_cm connections"), "{text}");
    assert!(text.contains("0 in INIT"), "{text}");
    assert!(!text.contains("INIT without LIDs"), "{text}");
    // The dead SM's port still says IsSM: its silence is the finding's evidence, not a
    // request to resend.
    assert!(text.contains("SMInfo got no answer"), "{text}");
    assert!(
        findings(&j, "subnet-attribute-unanswered").is_empty(),
        "{:#?}",
        j["findings"]
    );
    // The counters of ACTIVE ports are still read.
    assert!(findings(&j, "subnet-counters-unavailable").is_empty());
}

#[test]
#[ignore = "needs ibsim-utils, opensm, infiniband-diags (ibsim, opensm, ibnetdiscover, perfquery); scripts/test runs it"]
fn with_no_sm_the_init_links_are_named_and_no_counter_request_is_sent() {
    require_sim();
    let sim = Sim::start(&example("net.2sw2path4hca"));
    let (j, _) = sim.subnet(&[]);
    let no = findings(&j, "subnet-no-sm");
    assert_eq!(no.len(), 1, "{:#?}", j["findings"]);
    let text = text_of(no[0]);
    assert!(text.contains("port(s) stay in INIT without LIDs"), "{text}");
    assert!(text.contains("\\\"Hca1\\\" port 1 is INIT"), "{text}");
    assert!(findings(&j, "subnet-link-not-active").is_empty());
    assert_eq!(findings(&j, "subnet-counters-unavailable").len(), 1);
    for code in [
        "subnet-attribute-unanswered",
        "subnet-mads-resent",
        "subnet-sm-gone",
    ] {
        assert!(
            findings(&j, code).is_empty(),
            "{code}: {:#?}",
            j["findings"]
        );
    }
    assert!(!j["findings"].to_string().contains("switch with errors"));
}

// ---- the walk: PMA routing, no SM, loss and dead regions (issue 27)

/// A switch's header line and a CA's, in ibnetdiscover's format as ibsim reads it.
fn switch_header(guid: u64, ports: u8, desc: &str) -> String {
    format!("switchguid=0x{guid:x}\nSwitch\t{ports} \"S-{guid:016x}\"\t# \"{desc}\" enhanced port 0 lid 0 lmc 0\n")
}

fn ca_header(guid: u64, ports: u8, desc: &str) -> String {
    format!("caguid=0x{guid:x}\nCa\t{ports} \"H-{guid:016x}\"\t# \"{desc}\"\n")
}

/// Two switches joined by two cables; `hosts` dual-port HCAs with port 1 on switch A and
/// port 2 on switch B; one single-port HCA first (the local port umad2sim picks).
fn dual_port_hcas(hosts: u8) -> String {
    let (a, b) = (0x7000u64, 0x7001u64);
    let host = |h: u8| 0x20_0000u64 + u64::from(h) * 4;
    let local = 0x30_0000u64;
    let mut out = String::new();
    for (me, other, name) in [(a, b, "swA"), (b, a, "swB")] {
        out.push_str(&switch_header(me, 8, name));
        for p in [1u8, 2] {
            out.push_str(&format!("[{p}]\t\"S-{other:016x}\"[{p}]\t# lid 0 4xEDR\n"));
        }
        for h in 0..hosts {
            let port = if me == a { 1 } else { 2 };
            out.push_str(&format!(
                "[{}]\t\"H-{:016x}\"[{port}]\t# lid 0 4xEDR\n",
                h + 3,
                host(h)
            ));
        }
        if me == a {
            out.push_str(&format!("[8]\t\"H-{local:016x}\"[1]\t# lid 0 4xEDR\n"));
        }
        out.push('\n');
    }
    // The local HCA first among the CAs: ibsim's default port is its first CA's.
    out.push_str(&ca_header(local, 1, "local HCA-1"));
    out.push_str(&format!("[1]\t\"S-{a:016x}\"[8]\t# lid 0 4xEDR\n\n"));
    for h in 0..hosts {
        out.push_str(&ca_header(host(h), 2, &format!("dual{h} HCA-1")));
        out.push_str(&format!("[1]\t\"S-{a:016x}\"[{}]\t# lid 0 4xEDR\n", h + 3));
        out.push_str(&format!(
            "[2]\t\"S-{b:016x}\"[{}]\t# lid 0 4xEDR\n\n",
            h + 3
        ));
    }
    out
}

/// A `rows` × `cols` torus of switches (port 1 east, 2 west, 3 south, 4 north, wrapping
/// round, so every row and column is a loop) with one host on port 5 of each. Every port
/// has a LID from the file, as a subnet whose SM has gone keeps them: with no SM running
/// the ports stay INIT.
fn torus(rows: usize, cols: usize) -> String {
    let sw = |r: usize, c: usize| 0x8000u64 + (r * cols + c) as u64;
    let host = |r: usize, c: usize| 0x40_0000u64 + ((r * cols + c) as u64) * 4;
    let sw_lid = |r: usize, c: usize| 1 + r * cols + c;
    let mut out = String::new();
    // The hosts first: the first CA is the local port.
    for r in 0..rows {
        for c in 0..cols {
            out.push_str(&ca_header(host(r, c), 1, &format!("t{r}{c} HCA-1")));
            out.push_str(&format!(
                "[1]\t\"S-{:016x}\"[5]\t# lid {} lmc 0 \"torus{r}{c}\" lid {} 4xEDR\n\n",
                sw(r, c),
                100 + sw_lid(r, c),
                sw_lid(r, c)
            ));
        }
    }
    for r in 0..rows {
        for c in 0..cols {
            let header = switch_header(sw(r, c), 8, &format!("torus{r}{c}"));
            out.push_str(&header.replace("lid 0", &format!("lid {}", sw_lid(r, c))));
            let neighbours = [
                (1, sw(r, (c + 1) % cols), 2),
                (2, sw(r, (c + cols - 1) % cols), 1),
                (3, sw((r + 1) % rows, c), 4),
                (4, sw((r + rows - 1) % rows, c), 3),
            ];
            for (p, peer, q) in neighbours {
                out.push_str(&format!("[{p}]\t\"S-{peer:016x}\"[{q}]\t# lid 0 4xEDR\n"));
            }
            out.push_str(&format!(
                "[5]\t\"H-{:016x}\"[1]\t# lid 0 4xEDR\n\n",
                host(r, c)
            ));
        }
    }
    out
}

/// A program's wall time in this simulator, and its output.
fn timed(sim: &Sim, program: &Path, args: &[&str]) -> (Duration, Output) {
    let start = Instant::now();
    let out = sim.run(program, args);
    (start.elapsed(), out)
}

fn ibnetdiscover_links(sim: &Sim) -> (Duration, BTreeMap<LinkKey, String>) {
    let (took, out) = timed(sim, &tool("ibnetdiscover"), &[]);
    let (links, _) = ibnetdiscover_facts(&String::from_utf8_lossy(&out.stdout));
    (took, links)
}

/// `rdmactl subnet -j ARGS`, timed.
fn timed_subnet(sim: &Sim, args: &[&str]) -> (Duration, Value) {
    let start = Instant::now();
    let (j, _) = sim.subnet(args);
    (start.elapsed(), j)
}

fn node_guids(j: &Value) -> BTreeSet<u64> {
    j["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| hex(n["guid"].as_str().unwrap()))
        .collect()
}

/// The default --timeout, in the bounds below.
const DEFAULT_TIMEOUT: Duration = Duration::from_millis(200);
/// What a loaded two-core CI machine may add to one tool's run against the other's: two
/// process starts under LD_PRELOAD, ibsim sharing the cores, debug build.
const SLACK: Duration = Duration::from_millis(1500);

#[test]
#[ignore = "needs ibsim-utils, opensm, infiniband-diags (ibsim, opensm, ibnetdiscover, perfquery); scripts/test runs it"]
fn a_dual_port_hcas_second_port_is_read_at_its_own_lid_as_perfquery_reads_it() {
    require_sim();
    let mut sim = Sim::start(&dual_port_hcas(2));
    sim.start_sm();
    let (j, _) = sim.subnet(&[]);
    assert!(
        findings(&j, "subnet-attribute-unanswered").is_empty(),
        "{:#?}",
        j["findings"]
    );
    assert_eq!(j["mads"]["unanswered"], 0, "{:#?}", j["unanswered"]);
    let (links, lids) = rdmactl_facts(&j);
    let mut checked = 0;
    for l in j["links"].as_array().unwrap() {
        for side in ["a", "b"] {
            let guid = hex(l[side]["guid"].as_str().unwrap());
            let port = l[side]["port"].as_u64().unwrap() as u8;
            let Some(lid) = lids.get(&(guid, port)).filter(|_| guid >= 0x20_0000) else {
                continue;
            };
            if guid >= 0x30_0000 {
                continue; // the local HCA: single-port
            }
            let theirs = perfquery_args(&sim, &["-x", &lid.to_string(), &port.to_string()]);
            // The extended counters are there (unicast ones exist only in them) and equal
            // perfquery's, read after: its own request and answer, and opensm's sweeps,
            // may have added a few packets since.
            for (ours, name) in [
                ("port_xmit_data", "PortXmitData"),
                ("port_rcv_data", "PortRcvData"),
                ("port_xmit_packets", "PortXmitPkts"),
                ("port_rcv_packets", "PortRcvPkts"),
                ("unicast_xmit_packets", "PortUnicastXmitPkts"),
                ("unicast_rcv_packets", "PortUnicastRcvPkts"),
            ] {
                let mine = l["counters"][side][ours]
                    .as_u64()
                    .unwrap_or_else(|| panic!("{ours} of {guid:#x} port {port}: {l}"));
                let slack = if name.ends_with("Data") { 8 * 72 } else { 8 };
                assert!(
                    mine <= theirs[name] && theirs[name] - mine <= slack,
                    "{ours} of {guid:#x} port {port} (LID {lid}): {mine} against perfquery's {}",
                    theirs[name]
                );
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 4, "both ports of both dual-port HCAs: {links:?}");
}

#[test]
#[ignore = "needs ibsim-utils, opensm, infiniband-diags (ibsim, opensm, ibnetdiscover, perfquery); scripts/test runs it"]
fn a_torus_without_a_subnet_manager_is_walked_whole_and_no_pma_request_is_sent() {
    require_sim();
    let sim = Sim::start(&torus(3, 3));
    let (theirs_took, want) = ibnetdiscover_links(&sim);
    assert_eq!(want.len(), 9 * 2 + 9, "ibnetdiscover's view of the torus");
    let (took, j) = timed_subnet(&sim, &[]);
    let (got, _) = rdmactl_facts(&j);
    assert_eq!(got, want);
    assert_eq!(j["summary"]["nodes"], 18);
    // No SM: no LIDs, so no LID-routed request could arrive and none was sent.
    assert_eq!(j["mads"]["unanswered"], 0, "{:#?}", j["unanswered"]);
    assert_eq!(j["mads"]["resent"], 0);
    assert!(findings(&j, "subnet-attribute-unanswered").is_empty());
    assert_eq!(findings(&j, "subnet-no-sm").len(), 1);
    // Nothing is lost, so nothing waits: the bound is ibnetdiscover's time and the slack.
    println!("torus, no SM: rdmactl {took:?}, ibnetdiscover {theirs_took:?}");
    assert!(
        took <= theirs_took + SLACK,
        "rdmactl {took:?} against ibnetdiscover's {theirs_took:?}"
    );
}

#[test]
#[ignore = "needs ibsim-utils, opensm, infiniband-diags (ibsim, opensm, ibnetdiscover, perfquery); scripts/test runs it"]
fn a_dead_switch_costs_about_one_timeout_and_a_lossy_one_loses_nothing() {
    require_sim();
    // 2 spines, 4 leaves of 3 hosts; the local host is on leaf0.
    let mut sim = Sim::start(&fat_tree(2, 4, 3, |_, _| None));
    sim.start_sm();
    let (_, want) = ibnetdiscover_links(&sim);
    let (clean, _) = sim.subnet(&[]);
    let all_nodes = node_guids(&clean);
    assert_eq!(all_nodes.len(), 6 + 12);
    assert_eq!(rdmactl_facts(&clean).0, want);

    // leaf2 drops everything: it and its hosts are not reached. Bound: ibnetdiscover's
    // time, one --timeout (a silent node is given up after one), and the slack.
    let leaf2 = 0x6002u64;
    sim.console(&format!("Error \"S-{leaf2:016x}\" 100"));
    let (theirs_took, _) = ibnetdiscover_links(&sim);
    let (took, j) = timed_subnet(&sim, &[]);
    println!("dead leaf: rdmactl {took:?}, ibnetdiscover {theirs_took:?}");
    assert!(
        took <= theirs_took + DEFAULT_TIMEOUT + SLACK,
        "rdmactl {took:?} against ibnetdiscover's {theirs_took:?}"
    );
    let found = node_guids(&j);
    let behind: BTreeSet<u64> = (0..3u64).map(|h| 0x10_0000 + (2 * 64 + h) * 4).collect();
    let expected: BTreeSet<u64> = all_nodes
        .iter()
        .copied()
        .filter(|g| *g != leaf2 && !behind.contains(g))
        .collect();
    assert_eq!(found, expected, "every other node is found");
    let f = findings(&j, "subnet-node-unanswered");
    assert_eq!(f.len(), 1, "{:#?}", j["findings"]);
    assert!(f[0]["evidence"].to_string().contains("spine"), "{}", f[0]);

    // leaf3 drops 45% of what enters its ports: every node and link is still found.
    sim.console(&format!("Error \"S-{leaf2:016x}\" 0"));
    sim.console(&format!("Error \"S-{:016x}\" 45", 0x6003));
    let (theirs_took, _) = ibnetdiscover_links(&sim);
    let (took, j) = timed_subnet(&sim, &["--no-counters"]);
    println!("45% loss on a leaf: rdmactl {took:?}, ibnetdiscover {theirs_took:?}");
    assert!(
        took <= theirs_took + DEFAULT_TIMEOUT + SLACK,
        "rdmactl {took:?} against ibnetdiscover's {theirs_took:?}"
    );
    assert_eq!(node_guids(&j), all_nodes, "{:#?}", j["unanswered"]);
    assert_eq!(rdmactl_facts(&j).0, want, "{:#?}", j["unanswered"]);
    assert!(j["mads"]["resent"].as_u64().unwrap() > 0);
    assert!(j["mads"]["retried"].as_u64().unwrap() > 0);
}

#[test]
#[ignore = "needs ibsim-utils, opensm, infiniband-diags (ibsim, opensm, ibnetdiscover, perfquery); scripts/test runs it"]
fn many_runs_with_no_retries_and_a_1_ms_timeout_never_hang_nor_crash() {
    require_sim();
    let mut sim = Sim::start(&dual_port_hcas(2));
    sim.start_sm();
    for run in 0..12 {
        // A hard limit: a hang at exit is a failure, not a stuck test.
        let out = sim
            .command_with({
                let mut c = Command::new("timeout");
                c.args(["-k", "2", "20"]).arg(env!("CARGO_BIN_EXE_rdmactl"));
                c
            })
            .args(["subnet", "--retries", "0", "--timeout", "1"])
            .output()
            .unwrap();
        let code = out.status.code();
        assert!(
            matches!(code, Some(0) | Some(1)),
            "run {run}: exit {:?} (124: hung; none: a signal); stderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

// ---- outputs: lists, baseline input, width, SVG (issue 27)

/// The SVG's colours (src/render/subnet.rs): a link with no finding, and by severity.
const GREY: &str = "#7a8a99";
fn severity_colour(severity: &str) -> &'static str {
    match severity {
        "fail" => "#d00000",
        "warn" => "#e08a00",
        "info" => "#2a7fd4",
        other => panic!("no colour for {other}"),
    }
}

/// Text as the SVG escapes it.
fn xml_text(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn rdmactl_in(sim: &Sim, args: &[&str]) -> Output {
    sim.run(Path::new(env!("CARGO_BIN_EXE_rdmactl")), args)
}

/// --hosts and --switches print exactly what ibhosts and ibswitches print on the same
/// fabric, base and enhanced port 0 alike. Compared as sorted lines: both tools list nodes
/// in the order their NodeInfo answers came back with several MADs in flight (libibnetdisc
/// prepends each node it finds to its type's list), so the order is the walk's timing, not
/// a property of the fabric a script could rely on.
#[test]
#[ignore = "needs ibsim-utils, opensm, infiniband-diags (ibsim, opensm, ibnetdiscover, perfquery); scripts/test runs it"]
fn hosts_and_switches_lists_equal_ibhosts_and_ibswitches() {
    require_sim();
    for (name, topology) in [
        ("net.2sw2path4hca", example("net.2sw2path4hca")),
        ("fat tree", fat_tree(2, 3, 4, |_, _| None)),
    ] {
        let mut sim = Sim::start(&topology);
        sim.start_sm();
        for (flag, reference) in [("--hosts", "ibhosts"), ("--switches", "ibswitches")] {
            let sorted = |out: Output| -> Vec<String> {
                assert!(out.status.success(), "{name} {flag}: {out:?}");
                let mut lines: Vec<String> = String::from_utf8(out.stdout)
                    .unwrap()
                    .lines()
                    .map(str::to_string)
                    .collect();
                lines.sort();
                lines
            };
            let ours = sorted(rdmactl_in(&sim, &["subnet", flag]));
            let theirs = sorted(sim.run(&tool(reference), &[]));
            assert!(!theirs.is_empty(), "{name}: {reference} listed nothing");
            assert_eq!(ours, theirs, "{name} {flag}");
        }
    }
}

/// What is neither `subnet -j` nor ibnetdiscover output is refused before the walk, exit 2,
/// naming the file and the line; an empty file too. Real ibnetdiscover output still reads.
#[test]
#[ignore = "needs ibsim-utils, opensm, infiniband-diags (ibsim, opensm, ibnetdiscover, perfquery); scripts/test runs it"]
fn a_baseline_that_is_no_topology_is_refused_with_its_line() {
    require_sim();
    let mut sim = Sim::start(&example("net.2sw2path4hca"));
    sim.start_sm();
    let dir = sim.dir.path();
    let cases: [(&str, &[u8], &str); 5] = [
        ("empty", b"", "the file is empty"),
        (
            "prose",
            b"Fabric notes\nall cables checked\n",
            "line 1: neither",
        ),
        ("garbage", b"\x00\x01\xfe\xff\n", "line 1: not text"),
        ("truncated.json", b"{\n  \"nodes\": [\n", "line 2: not JSON"),
        (
            "other.json",
            b"{\"devices\": []}",
            "JSON without the \"nodes\" and \"links\"",
        ),
    ];
    for (file, content, why) in cases {
        let path = dir.join(file);
        std::fs::write(&path, content).unwrap();
        let out = rdmactl_in(&sim, &["subnet", "--baseline", path.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{file}: {stderr}");
        assert!(out.stdout.is_empty(), "{file}: no report");
        assert!(
            stderr.contains(&format!("--baseline {}: {why}", path.display())),
            "{file}: {stderr}"
        );
        assert!(stderr.contains("`ibnetdiscover`"), "{file}: {stderr}");
    }
    let reference = dir.join("ibnetdiscover.out");
    std::fs::write(&reference, sim.run(&tool("ibnetdiscover"), &[]).stdout).unwrap();
    let (j, code) = sim.subnet(&["--no-counters", "--baseline", reference.to_str().unwrap()]);
    assert_eq!(code, 0, "{:#?}", j["findings"]);
    assert_eq!(codes(&j), ["subnet-sm"], "nothing added, missing or moved");
}

/// A failed --topology or --svg write says "cannot write", the path, the OS error once and
/// what to do; exit 5 (an operating-system call failed).
#[test]
#[ignore = "needs ibsim-utils, opensm, infiniband-diags (ibsim, opensm, ibnetdiscover, perfquery); scripts/test runs it"]
fn a_failed_write_says_cannot_write_once() {
    require_sim();
    let mut sim = Sim::start(&example("net.1"));
    sim.start_sm();
    for flag in ["--topology", "--svg"] {
        let path = sim.dir.path().join("no-such-dir").join("out");
        let out = rdmactl_in(
            &sim,
            &["subnet", "--no-counters", flag, path.to_str().unwrap()],
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(5), "{stderr}");
        let line = stderr
            .lines()
            .find(|l| l.starts_with("rdmactl: "))
            .unwrap_or_else(|| panic!("{stderr}"));
        assert_eq!(
            line,
            format!(
                "rdmactl: cannot write {} ({flag}): No such file or directory (os error 2); \
                 create its directory first, or give a path in one that exists",
                path.display()
            )
        );
    }
}

/// A 64-character node description in a finding's subject: with COLUMNS every line of the
/// text report fits, no word of it lost; without, lines are whole; -j is never cut.
#[test]
#[ignore = "needs ibsim-utils, opensm, infiniband-diags (ibsim, opensm, ibnetdiscover, perfquery); scripts/test runs it"]
fn the_text_report_fits_columns_with_a_long_node_description() {
    require_sim();
    let long = "node042 mlx5_0 HCA-1 rack 17 row 4 building B east datacenter";
    let topology = example("net.2sw2path4hca").replace("\"Hca3\"", &format!("\"{long}\""));
    let mut sim = Sim::start(&topology);
    sim.start_sm();
    sim.console("PerformanceSet \"Switch1\"[2] PortCounters.SymbolErrorCounter=77");
    let text = |columns: Option<&str>| {
        let mut c = sim.command(Path::new(env!("CARGO_BIN_EXE_rdmactl")));
        c.arg("subnet").env_remove("COLUMNS");
        if let Some(w) = columns {
            c.env("COLUMNS", w);
        }
        let out = c.output().unwrap();
        assert_eq!(out.status.code(), Some(1));
        String::from_utf8(out.stdout).unwrap()
    };
    let whole = text(None);
    let widest = whole.lines().map(|l| l.chars().count()).max().unwrap();
    assert!(widest > 120, "the long subject widens a line: {whole}");
    assert!(whole.contains(long), "{whole}");
    for width in [80usize, 100] {
        let narrow = text(Some(&width.to_string()));
        for line in narrow.lines() {
            assert!(line.chars().count() <= width, "{width}: {line:?}\n{narrow}");
        }
        let words = |t: &str| -> BTreeSet<String> {
            t.split_whitespace()
                .filter(|w| !w.contains("ms") && w.parse::<u64>().is_err())
                .map(str::to_string)
                .collect()
        };
        // The same words (timings aside), only wrapped.
        let (a, b) = (words(&whole), words(&narrow));
        let lost: Vec<&String> = a.difference(&b).collect();
        assert!(lost.is_empty(), "{width}: {lost:?}\n{narrow}");
    }
    let (j, _) = sim.subnet(&[]);
    assert!(j["nodes"].to_string().contains(long));
}

/// A 3×3 torus of switches, one host each: every switch is a leaf, so the ring links lie
/// within one tier.
fn ring_torus() -> String {
    let sw = |r: usize, c: usize| format!("S-{:016x}", 0x7000 + r * 3 + c);
    let host = |r: usize, c: usize| format!("H-{:016x}", 0x30_0000 + (r * 3 + c) * 4);
    let mut out = String::new();
    for r in 0..3 {
        for c in 0..3 {
            out.push_str(&format!(
                "switchguid=0x{:x}\nSwitch\t8 \"{}\"\t# \"torus{r}{c}\" enhanced port 0 lid 0 lmc 0\n",
                0x7000 + r * 3 + c,
                sw(r, c)
            ));
            for (port, peer, peer_port) in [
                (1, sw(r, (c + 1) % 3), 2),
                (2, sw(r, (c + 2) % 3), 1),
                (3, sw((r + 1) % 3, c), 4),
                (4, sw((r + 2) % 3, c), 3),
            ] {
                out.push_str(&format!("[{port}]\t\"{peer}\"[{peer_port}]\n"));
            }
            out.push_str(&format!("[5]\t\"{}\"[1]\n\n", host(r, c)));
        }
    }
    for r in 0..3 {
        for c in 0..3 {
            out.push_str(&format!(
                "caguid=0x{:x}\nCa\t1 \"{}\"\t# \"h{r}{c} HCA-1\"\n[1]\t\"{}\"[5]\n\n",
                0x30_0000 + (r * 3 + c) * 4,
                host(r, c),
                sw(r, c)
            ));
        }
    }
    out
}

/// The numbers of an SVG path's `d`.
fn path_numbers(line: &str) -> Vec<f64> {
    line.split("d=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect()
}

/// --svg on a torus and on a fat tree with two cables between one leaf and one spine: one
/// path per link, parallel ones included, no two alike, within the width bound; the ring's
/// links bow out of their row, so its loops show.
#[test]
#[ignore = "needs ibsim-utils, opensm, infiniband-diags (ibsim, opensm, ibnetdiscover, perfquery); scripts/test runs it"]
fn the_svg_draws_every_link_of_a_torus_and_of_parallel_cables() {
    require_sim();
    let leaf0 = format!("S-{:016x}", 0x6000);
    let spine0 = format!("S-{:016x}", 0x5000);
    // fat_tree(2, 3, 2): spine0's free port is 4, leaf0's is 5; cable them too.
    let parallel = fat_tree(2, 3, 2, |_, _| None)
        .replace(
            "[1]\t\"S-0000000000006000\"[3]\t# \"leaf0\" lid 0 4xEDR\n",
            &format!(
                "[1]\t\"{leaf0}\"[3]\t# \"leaf0\" lid 0 4xEDR\n[4]\t\"{leaf0}\"[5]\t# \"leaf0\" lid 0 4xEDR\n"
            ),
        )
        .replace(
            "[3]\t\"S-0000000000005000\"[1]\t# \"spine0\" lid 0 4xEDR\n",
            &format!(
                "[3]\t\"{spine0}\"[1]\t# \"spine0\" lid 0 4xEDR\n[5]\t\"{spine0}\"[4]\t# \"spine0\" lid 0 4xEDR\n"
            ),
        );
    for (name, topology, links) in [
        ("torus", ring_torus(), 18 + 9),
        ("parallel", parallel, 6 + 6 + 1),
    ] {
        let mut sim = Sim::start(&topology);
        sim.start_sm();
        let path = sim.dir.path().join("subnet.svg");
        let (j, _) = sim.subnet(&["--no-counters", "--svg", path.to_str().unwrap()]);
        assert_eq!(j["summary"]["links"], links, "{name}");
        let reference = sim.run(&tool("ibnetdiscover"), &[]);
        let (theirs, _) = ibnetdiscover_facts(&String::from_utf8_lossy(&reference.stdout));
        assert_eq!(theirs.len(), links, "{name}: ibnetdiscover's count");
        let svg = std::fs::read_to_string(&path).unwrap();
        let drawn: Vec<&str> = svg.lines().filter(|l| l.starts_with("<path ")).collect();
        assert_eq!(drawn.len(), links, "{name}: one path per link");
        let ds: BTreeSet<String> = drawn
            .iter()
            .map(|l| format!("{:?}", path_numbers(l)))
            .collect();
        assert_eq!(ds.len(), links, "{name}: no two link paths alike");
        let size: Vec<f64> = svg
            .lines()
            .next()
            .unwrap()
            .split('"')
            .filter_map(|w| w.parse().ok())
            .collect();
        assert!(size[0] <= 3200.0 && size[1] <= 3200.0, "{name}: {size:?}");
        // Switch-to-switch paths: bent off the straight line in the torus (one tier).
        let bend = |v: &[f64]| {
            let (ax, ay, cx, cy, bx, by) = (v[0], v[1], v[2], v[3], v[4], v[5]);
            ((bx - ax) * (cy - ay) - (by - ay) * (cx - ax)).abs() / (bx - ax).hypot(by - ay)
        };
        let between_switches: Vec<&&str> = drawn
            .iter()
            .filter(|l| l.matches("switch &quot;").count() == 2)
            .collect();
        if name == "torus" {
            assert_eq!(between_switches.len(), 18);
            for l in &between_switches {
                assert!(bend(&path_numbers(l)) > 10.0, "{l}");
            }
        } else {
            let cables: Vec<&&&str> = between_switches
                .iter()
                .filter(|l| l.contains("&quot;leaf0&quot;") && l.contains("&quot;spine0&quot;"))
                .collect();
            assert_eq!(cables.len(), 2, "{cables:#?}");
            assert!(cables
                .iter()
                .any(|l| l.contains("&quot;leaf0&quot; port 5")));
            assert!(cables
                .iter()
                .any(|l| l.contains("&quot;leaf0&quot; port 3")));
        }
    }
}

/// A link down since the baseline shows both ends' port states in the text report, with a
/// `subnet -j` baseline and with ibnetdiscover's. A switch-to-switch link and the second
/// port of a two-port HCA (still reached through its first) are unlinked. The HCA's own
/// end reads "not read": the walk reads a CA's PortInfo only on the port it reached the CA
/// by (as libibnetdisc does), so only the switch end of that link has a state to show.
#[test]
#[ignore = "needs ibsim-utils, opensm, infiniband-diags (ibsim, opensm, ibnetdiscover, perfquery); scripts/test runs it"]
fn a_link_down_since_the_baseline_shows_the_port_states_in_the_text() {
    require_sim();
    let mut sim = Sim::start(&example("net.2sw2path4hca2port"));
    sim.start_sm();
    let (before, _) = sim.subnet(&["--no-counters"]);
    let json = sim.dir.path().join("baseline.json");
    std::fs::write(&json, before.to_string()).unwrap();
    let topo = sim.dir.path().join("baseline.topo");
    std::fs::write(&topo, sim.run(&tool("ibnetdiscover"), &[]).stdout).unwrap();
    sim.console("Unlink \"Switch1\"[5]");
    sim.console("Unlink \"Hca1\"[2]");
    for baseline in [&json, &topo] {
        let out = rdmactl_in(
            &sim,
            &[
                "subnet",
                "--no-counters",
                "--baseline",
                baseline.to_str().unwrap(),
            ],
        );
        assert_eq!(out.status.code(), Some(1));
        let text = String::from_utf8(out.stdout).unwrap();
        let downs = text.matches("subnet-link-down").count();
        assert_eq!(downs, 2, "{baseline:?}:\n{text}");
        for end in [
            "switch \"Switch1\" port 5 is DOWN (POLLING)",
            "switch \"Switch2\" port 5 is DOWN (POLLING)",
            "switch \"Switch1\" port 2 is DOWN (POLLING)",
        ] {
            assert!(
                text.contains(&format!("evidence: {end}")),
                "{baseline:?}: {end}\n{text}"
            );
        }
    }
}
