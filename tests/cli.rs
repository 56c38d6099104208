//! Every inventory command, in table and JSON form, on every fixture tree, compared with
//! golden transcripts under tests/golden/. `UPDATE_GOLDEN=1 cargo test --test cli`
//! rewrites them; otherwise any difference fails. Hermetic: NO_COLOR and RDMACTL_* are
//! cleared and every run names its tree with --sysfs.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Stdio};

use assert_cmd::Command;

const FIXTURES: &str = "tests/fixtures/sysfs";

/// Trees with devices; each gets the whole command matrix.
const TREES: &[&str] = &[
    "rxe-veth-basic",
    "rxe-veth-vlan-ipv6-down",
    "procfs-testdata",
    "mlx5-roce-vlan",
    "ib-hca",
    "ibsim",
    "pod-gid-holes",
    "ipv6-only",
    "port-down",
    "unreadable",
    "rxe-counters",
    "siw-ens3",
    "bnxt-re-hw-only",
    "sriov-vf-no-pma",
];

const MATRIX: &[&[&str]] = &[
    &["devices"],
    &["devices", "-j"],
    &["ports"],
    &["ports", "-j"],
    &["gids"],
    &["gids", "--ip"],
    &["gids", "-j"],
    &["devices", "-v"],
    &["devices", "-v", "-j"],
    &["counters"],
    &["counters", "--all"],
    &["counters", "-j"],
    &["qos"],
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn rdmactl() -> Command {
    let mut cmd = Command::cargo_bin("rdmactl").unwrap();
    // The terminal's settings change the tables (colour, width): none of them leak in.
    cmd.current_dir(root())
        .env_remove("NO_COLOR")
        .env_remove("COLUMNS")
        .env_remove("TERM");
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("RDMACTL_") {
            cmd.env_remove(key);
        }
    }
    cmd
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn run(args: &[&str]) -> Run {
    let out = rdmactl().args(args).output().unwrap();
    Run {
        code: out.status.code().expect("exited, not killed"),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

fn sysfs(tree: &str) -> String {
    format!("{FIXTURES}/{tree}")
}

/// Compares with (or, under UPDATE_GOLDEN=1, writes) tests/golden/<name>.
fn golden(name: &str, actual: &str) {
    let path = root().join("tests/golden").join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; run UPDATE_GOLDEN=1 cargo test --test cli",
            path.display()
        )
    });
    if want != actual {
        let first = want.lines().zip(actual.lines()).position(|(a, b)| a != b);
        panic!(
            "{} differs (first differing line: {first:?})\n--- want ---\n{want}\n--- got ---\n{actual}",
            path.display()
        );
    }
}

fn transcript(args: &[&str], r: &Run) -> String {
    let mut t = format!("$ rdmactl {}\n{}", args.join(" "), r.stdout);
    if !r.stderr.is_empty() {
        t.push_str("--- stderr ---\n");
        t.push_str(&r.stderr);
    }
    t.push_str(&format!("--- exit {} ---\n", r.code));
    t
}

fn slug(args: &[&str]) -> String {
    args.iter()
        .map(|a| a.trim_start_matches('-').replace('/', "-"))
        .collect::<Vec<_>>()
        .join("_")
}

#[test]
fn every_command_on_every_tree_matches_its_golden() {
    for tree in TREES {
        for cmd in MATRIX {
            let mut args = vec!["--sysfs", &sysfs(tree)]
                .into_iter()
                .map(String::from)
                .collect::<Vec<_>>();
            args.extend(cmd.iter().map(|s| s.to_string()));
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let r = run(&args);
            assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
            if cmd.contains(&"-j") {
                let v: serde_json::Value = serde_json::from_str(&r.stdout)
                    .unwrap_or_else(|e| panic!("{args:?}: not JSON: {e}\n{}", r.stdout));
                assert!(v.is_array(), "{args:?}");
            }
            golden(&format!("{tree}/{}.txt", slug(cmd)), &transcript(&args, &r));
        }
    }
}

#[test]
fn selections_and_the_all_flag() {
    let cases: &[(&str, &[&str])] = &[
        ("ib-hca", &["devices", "-d", "mlx5_1"]),
        ("ib-hca", &["ports", "mlx5_0/1", "-j"]),
        ("ib-hca", &["ports", "-d", "mlx5_1"]),
        ("mlx4", &["ports", "-i", "2"]),
        ("ibsim", &["ports", "-v"]),
        ("rxe-vm-basic", &["ports", "-v", "-j"]),
        ("rxe-veth-vlan-ipv6-down", &["gids", "rxe0/1", "--ip"]),
        (
            "rxe-veth-vlan-ipv6-down",
            &["gids", "-d", "rxe1", "-i", "1", "--ip", "-j"],
        ),
        ("pod-gid-holes", &["gids", "--all", "--ip"]),
        ("unreadable", &["gids", "--all", "--ip", "-j"]),
        ("procfs-testdata", &["gids", "--ip"]),
    ];
    for (tree, cmd) in cases {
        let tree = if *tree == "mlx4" {
            "procfs-testdata"
        } else {
            tree
        };
        let dir = sysfs(tree);
        let mut args = vec!["--sysfs", dir.as_str()];
        args.extend_from_slice(cmd);
        let r = run(&args);
        assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
        golden(
            &format!("{tree}/select_{}.txt", slug(cmd)),
            &transcript(&args, &r),
        );
    }
}

#[test]
fn gid_decode_and_encode() {
    let cases: &[&[&str]] = &[
        &[
            "gid",
            "decode",
            "0000:0000:0000:0000:0000:ffff:0a0b:0bfb",
            "::ffff:10.11.11.251",
            "00:00:00:00:00:00:00:00:00:00:ff:ff:0a:0b:0b:52",
            "00000000000000000000ffff0a0b0bfb",
            "fe80:0000:0000:0000:5054:00ff:fe12:3456",
            "2001:db8:77::1",
            "ff02::1",
            "::",
            // All of fe80::/10 is link-local; ::1 is loopback, not global.
            "fe80:0:0:1::5",
            "::1",
        ],
        &[
            "gid",
            "decode",
            "-j",
            "fe80::5054:ff:fe12:3456",
            "::ffff:192.168.77.1",
        ],
        &[
            "gid",
            "encode",
            "10.11.11.251",
            "192.168.77.2",
            "2001:db8:77::1",
        ],
        &["gid", "encode", "-j", "10.11.11.251"],
    ];
    for (i, args) in cases.iter().enumerate() {
        let r = run(args);
        assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
        golden(&format!("gid/{i}-{}.txt", args[1]), &transcript(args, &r));
    }
    // `ip addr`'s form: the prefix length is dropped.
    let cidr = run(&["gid", "encode", "10.11.11.251/24"]);
    let plain = run(&["gid", "encode", "10.11.11.251"]);
    assert_eq!(
        (cidr.code, &cidr.stdout),
        (0, &plain.stdout),
        "{}",
        cidr.stderr
    );
    let bad = run(&["gid", "encode", "10.11.11.251/33"]);
    assert_eq!(bad.code, 2);
    assert!(
        bad.stderr.contains("the prefix length '33' is not 0 to 32"),
        "{}",
        bad.stderr
    );
    // The seed example from the issue.
    let r = run(&["gid", "decode", "0000:0000:0000:0000:0000:ffff:0a0b:0bfb"]);
    assert!(r.stdout.contains("10.11.11.251"), "{}", r.stdout);
}

#[test]
fn errors_are_one_line_naming_what_exists_with_their_exit_codes() {
    let ib = sysfs("ib-hca");
    let rxe = sysfs("rxe-veth-basic");
    let cases: Vec<(Vec<&str>, i32, String)> = vec![
        (vec!["--sysfs", &rxe, "devices", "-d", "mlx5_9"], 3, "no device 'mlx5_9'; devices: rxe0, rxe1".into()),
        (vec!["--sysfs", &rxe, "ports", "mlx5_9/1"], 3, "no device 'mlx5_9'; devices: rxe0, rxe1".into()),
        (vec!["--sysfs", &ib, "ports", "mlx5_0/2"], 3, "no port 2 on mlx5_0; ports: 1".into()),
        (vec!["--sysfs", &ib, "gids", "-i", "2"], 3, "no port 2 on any device; ports: 1".into()),
        (vec!["--sysfs", &ib, "gids", "mlx5_0/1", "-i", "2"], 2, "port 1 in DEV/PORT and -i 2 disagree; give one".into()),
        (vec!["--sysfs", &rxe, "devices", "-v", "-d", "mlx5_9"], 3, "no device 'mlx5_9'; devices: rxe0, rxe1".into()),
        // --cm: what does not apply is refused before anything is opened.
        (
            vec!["pingpong", "--cm", "-g", "0", "192.168.77.1"],
            2,
            "-g does not apply with --cm: the kernel picks the GID from the route (rdmactl check --peer shows its choice)".into(),
        ),
        (
            vec!["pingpong", "--cm", "-m", "1024", "192.168.77.1"],
            2,
            "-m does not apply with --cm: the CM takes the path MTU from the route (the netdev MTU on RoCE, the path record on InfiniBand)".into(),
        ),
        (
            vec!["pingpong", "--cm", "-s", "268435457", "192.168.77.1"],
            2,
            "--size 268435457: with --cm give 1 to 268435456 bytes (256 MiB, what a server registers at most)".into(),
        ),
        (
            vec!["pingpong", "--cm", "--compat", "rc_pingpong", "192.168.77.1"],
            2,
            "--compat speaks a TCP exchange; it does not combine with --cm".into(),
        ),
        (
            vec!["pingpong", "--cm", "-i", "2", "192.168.77.1"],
            2,
            "-i 2: with --cm a port is named with -d (its address is bound); without -d the kernel picks device and port from the route".into(),
        ),
        (
            vec!["pingpong", "--cm", "--duration", "10", "192.168.77.1"],
            2,
            "--duration, -e, --persist, --sl, --tclass and --pkey-index are not implemented with --cm; use the TCP exchange".into(),
        ),
        // Long runs: what cannot work is refused before a device is opened.
        (
            vec!["pingpong", "--persist", "192.168.77.1"],
            2,
            "--persist is for the server (without SERVER): it serves one client after another".into(),
        ),
        (
            vec!["pingpong", "--compat", "rc_pingpong", "--duration", "5", "192.168.77.1"],
            2,
            "--compat rc_pingpong runs -n SEND iterations, as the stock tool: drop --duration and --lat".into(),
        ),
        (
            vec!["pingpong", "--duration", "0", "192.168.77.1"],
            2,
            "--duration 0: give 0.001 <= SECS <= 2592000 (30 days)".into(),
        ),
        (
            vec!["pingpong", "--interval", "0.01", "192.168.77.1"],
            2,
            "--interval 0.01: give 0.1 <= SECS <= 3600".into(),
        ),
        // pingpong and selftest run on this host's devices: a captured tree is refused.
        (
            vec!["--sysfs", &rxe, "pingpong", "--cm", "-d", "mlx5_9", "192.168.77.1"],
            2,
            format!("--sysfs {rxe}: pingpong does not read a captured tree: it opens this host's devices through libibverbs and sends real traffic"),
        ),
        (
            vec!["selftest", "--cm", "-d", "rxe0", "--sysfs", &rxe],
            2,
            format!("--sysfs {rxe}: selftest does not read a captured tree: it opens this host's devices through libibverbs and sends real traffic"),
        ),
        (
            vec!["--sysfs", &rxe, "selftest", "-d", "rxe0", "-g", "1"],
            2,
            format!("--sysfs {rxe}: selftest does not read a captured tree: it opens this host's devices through libibverbs and sends real traffic"),
        ),
        (
            vec!["gid", "decode", "::1", "10.11.11.251"],
            2,
            "'10.11.11.251' is not a GID; accepted forms: sysfs 'fe80:0000:0000:0000:0202:c9ff:fe00:0001', \
             IPv6 '::ffff:10.11.11.251', bytes '00:00:...:0a:0b:0b:fb' (16 pairs), \
             or 32 hex digits '00000000000000000000ffff0a0b0bfb'; \
             '10.11.11.251' is an IP address: `rdmactl gid encode 10.11.11.251` gives its GID"
                .into(),
        ),
    ];
    for (args, code, line) in cases {
        let r = run(&args);
        assert_eq!(r.code, code, "{args:?}: {}", r.stderr);
        assert_eq!(r.stderr, format!("rdmactl: {line}\n"), "{args:?}");
        assert_eq!(r.stdout, "", "{args:?}: nothing on stdout when failing");
    }
}

#[test]
fn no_rdma_and_no_devices_explain_themselves() {
    for cmd in [
        &["devices"][..],
        &["ports"],
        &["gids", "--ip"],
        &["devices", "-j"],
    ] {
        let dir = sysfs("no-infiniband");
        let mut args = vec!["--sysfs", dir.as_str()];
        args.extend_from_slice(cmd);
        let r = run(&args);
        assert_eq!(r.code, 4, "{args:?}");
        // A tree without module/ or bus/pci: what is unknown is said, no module is claimed
        // missing.
        assert!(
            r.stderr.starts_with(&format!(
                "rdmactl: no RDMA devices: {dir}/class/infiniband does not exist, so the RDMA \
                 core (ib_core) is not loaded: which NIC should carry RDMA here is unknown"
            )),
            "{}",
            r.stderr
        );
        assert!(
            r.stderr.contains(&format!(
                "seen: {dir}/bus/pci/devices is not there: which NICs this host has is unknown"
            )),
            "{}",
            r.stderr
        );
        assert!(
            r.stderr
                .contains("modprobe rdma_rxe; rdma link add rxe0 type rxe netdev"),
            "{}",
            r.stderr
        );
        assert!(!r.stderr.contains("Load your NIC's"), "{}", r.stderr);
        let dir = sysfs("no-devices");
        let mut args = vec!["--sysfs", dir.as_str()];
        args.extend_from_slice(cmd);
        let r = run(&args);
        assert_eq!(r.code, 4, "{args:?}");
        assert!(
            r.stderr.contains("class/infiniband is empty"),
            "{}",
            r.stderr
        );
        assert!(
            r.stderr.contains("rdma link add rxe0 type rxe netdev eth0"),
            "{}",
            r.stderr
        );
    }
    let r = run(&["--sysfs", &sysfs("no-devices"), "devices", "-d", "rxe0"]);
    assert_eq!(
        (r.code, r.stderr.as_str()),
        (3, "rdmactl: no device 'rxe0'; devices: none\n")
    );
}

#[test]
fn unreadable_attributes_are_warned_about_and_carried_in_json() {
    let dir = sysfs("unreadable");
    let r = run(&["--sysfs", &dir, "ports"]);
    assert_eq!(r.code, 0);
    assert!(r.stderr.contains(&format!(
        "rdmactl: warning: cannot read {dir}/class/infiniband/irdma0/ports/1/state: Is a directory"
    )));
    let r = run(&["--sysfs", &dir, "devices", "-j"]);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let problems = v[0]["read_problems"].as_array().unwrap();
    assert!(problems[0]["path"]
        .as_str()
        .unwrap()
        .ends_with("irdma0/fw_ver"));
    assert_eq!(r.stderr, "", "JSON mode keeps stderr for errors");
}

#[test]
fn json_numbers_are_numbers() {
    let r = run(&["--sysfs", &sysfs("ib-hca"), "ports", "mlx5_0/1", "-j"]);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let p = &v[0];
    assert_eq!(p["lid"], 700);
    assert_eq!(p["sm_lid"], 1);
    assert_eq!(p["lmc"], 2);
    assert_eq!(p["port"], 1);
    assert_eq!(p["netdev_mtu"], 4092);
    assert_eq!(p["rate_gbps"], 200.0);
    assert_eq!(p["state"], "ACTIVE");
    assert_eq!(p["physical_state"], "LINK_UP");
    assert_eq!(p["netdev"], "ib0");
}

/// `ports` keeps the netdev's MTU (IPoIB's 4092 here) apart from the RDMA MTUs, which only
/// ibv_query_port reports: on a captured tree they are unknown, never guessed from sysfs.
#[test]
fn ports_label_the_rdma_and_netdev_mtus_and_do_not_guess() {
    let dir = sysfs("ib-hca");
    let r = run(&["--sysfs", &dir, "ports", "mlx5_0/1"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let mut lines = r.stdout.lines();
    let header: Vec<&str> = lines
        .next()
        .unwrap()
        .split("  ")
        .filter(|c| !c.is_empty())
        .map(str::trim)
        .collect();
    for column in ["ACTIVE MTU", "MAX MTU", "NETDEV", "NETDEV MTU"] {
        assert!(header.contains(&column), "{header:?}");
    }
    assert!(
        !header.contains(&"MTU"),
        "an unlabelled MTU column: {header:?}"
    );
    let row = lines.next().unwrap();
    assert!(row.contains("unknown     unknown  ib0     4092"), "{row}");
    assert!(
        r.stderr
            .contains("mlx5_0/1: ACTIVE MTU and MAX MTU unknown")
            && r.stderr.contains("is a captured tree"),
        "{}",
        r.stderr
    );
    let j = run(&["--sysfs", &dir, "ports", "mlx5_0/1", "-j"]);
    let v: serde_json::Value = serde_json::from_str(&j.stdout).unwrap();
    let p = &v[0];
    assert_eq!(p["active_mtu"], serde_json::Value::Null);
    assert_eq!(p["max_mtu"], serde_json::Value::Null);
    assert_eq!(p["verbs"]["available"], false);
    assert!(p["verbs"]["reason"]
        .as_str()
        .unwrap()
        .contains("captured tree"));
    assert_eq!(p["netdev_mtu"], 4092);
    assert_eq!(j.stderr, "", "JSON carries the reason; stderr stays quiet");
}

#[test]
fn colour_only_when_asked() {
    let dir = sysfs("rxe-veth-vlan-ipv6-down");
    let always = run(&["--sysfs", &dir, "--color", "always", "ports"]);
    assert!(
        always.stdout.contains("\x1b[31mDOWN\x1b[39m"),
        "{:?}",
        always.stdout
    );
    let never = run(&["--sysfs", &dir, "--color", "never", "ports"]);
    assert!(!never.stdout.contains('\x1b'));
    let out = rdmactl()
        .args(["--sysfs", &dir, "ports"])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(!String::from_utf8(out.stdout).unwrap().contains('\x1b'));
    let json = run(&["--sysfs", &dir, "--color", "always", "ports", "-j"]);
    assert!(!json.stdout.contains('\x1b'), "JSON is never coloured");
}

/// RDMACTL_SYSFS set for the inventory commands must not make pingpong run against
/// another host's tree; the refusal names the variable and how to run.
/// Colour on means escapes around coloured values only: no header and no plain cell
/// carries a bare default-colour or reset sequence.
#[test]
fn colour_escapes_only_where_a_colour_is_set() {
    let dir = sysfs("rxe-veth-vlan-ipv6-down");
    for cmd in [&["ports"][..], &["devices"], &["gids", "--ip"]] {
        let mut args = vec!["--sysfs", dir.as_str(), "--color", "always"];
        args.extend_from_slice(cmd);
        let r = run(&args);
        let header = r.stdout.lines().next().unwrap();
        assert!(!header.contains('\x1b'), "{cmd:?}: {header:?}");
        for line in r.stdout.lines() {
            let coloured = ["\x1b[31m", "\x1b[32m", "\x1b[33m"]
                .iter()
                .map(|c| line.matches(c).count())
                .sum::<usize>();
            // Each coloured value opens once and closes once; nothing else.
            assert_eq!(
                line.matches('\x1b').count(),
                2 * coloured,
                "{cmd:?}: {line:?}"
            );
            assert_eq!(
                line.matches("\x1b[39m").count(),
                coloured,
                "{cmd:?}: {line:?}"
            );
        }
    }
    // TERM=dumb with --color auto (the pipe here would stop colour anyway; the rule itself
    // is unit-tested in output.rs): nothing.
    let out = rdmactl()
        .env("TERM", "dumb")
        .args(["--sysfs", &dir, "--color", "auto", "ports"])
        .output()
        .unwrap();
    assert!(!String::from_utf8(out.stdout).unwrap().contains('\x1b'));
}

/// COLUMNS bounds every table line; the widest column is cut with a `+`, and -j is never cut.
#[test]
fn tables_honour_columns_and_json_does_not() {
    let dir = sysfs("mlx5-roce-vlan");
    for (cmd, width) in [
        (&["ports"][..], 80),
        (&["gids", "--ip"], 60),
        (&["devices"], 70),
    ] {
        let mut args = vec!["--sysfs", dir.as_str()];
        args.extend_from_slice(cmd);
        let narrow = rdmactl()
            .env("COLUMNS", width.to_string())
            .args(&args)
            .output()
            .unwrap();
        let text = String::from_utf8(narrow.stdout).unwrap();
        assert!(
            text.contains('+'),
            "{cmd:?} at {width}: nothing was cut\n{text}"
        );
        for line in text.lines() {
            assert!(line.chars().count() <= width, "{cmd:?}: {line:?}");
        }
        // One line per row still, and the identifying first column whole.
        let full = run(&args);
        assert_eq!(text.lines().count(), full.stdout.lines().count());
        let first = |s: &str| {
            s.lines()
                .map(|l| l.split(' ').next().unwrap().to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(first(&text), first(&full.stdout), "{cmd:?}");
    }
    let mut args = vec!["--sysfs", dir.as_str(), "gids", "-j"];
    let wide = run(&args);
    args.push("--ip");
    let narrow = rdmactl()
        .env("COLUMNS", "20")
        .args(&args[..4])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8(narrow.stdout).unwrap(), wide.stdout);
}

#[test]
fn sysfs_from_the_environment_is_refused_by_pingpong() {
    let out = rdmactl()
        .env("RDMACTL_SYSFS", sysfs("ib-hca"))
        .args(["pingpong", "-d", "mlx5_0", "-g", "0", "192.168.77.1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        format!(
            "rdmactl: RDMACTL_SYSFS={}: pingpong does not read a captured tree: it opens this \
             host's devices through libibverbs and sends real traffic; unset RDMACTL_SYSFS to \
             run it\n",
            sysfs("ib-hca")
        )
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn sysfs_from_the_environment() {
    let out = rdmactl()
        .env("RDMACTL_SYSFS", sysfs("ib-hca"))
        .args(["devices"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8(out.stdout)
        .unwrap()
        .contains("0c42:a103:00a1:b2c4"));
}

/// `rdmactl gids --all | head -1`: the reader goes away while rdmactl is still writing
/// (2 × 1024 slots is far more than a pipe buffer); rdmactl must exit 0 without a word.
#[test]
fn broken_pipe_exits_quietly() {
    let bin = assert_cmd::cargo::cargo_bin("rdmactl");
    let mut child = StdCommand::new(bin)
        .current_dir(root())
        .env_remove("NO_COLOR")
        .env_remove("RDMACTL_SYSFS")
        .args(["--sysfs", &sysfs("rxe-veth-basic"), "gids", "--all", "--ip"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.starts_with("DEVICE"), "{first}");
    // The reader is dropped here, closing the pipe.
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}

#[test]
fn fixture_trees_exist() {
    for tree in TREES
        .iter()
        .chain(&["no-devices", "no-infiniband", "rxe-loaded-no-device"])
    {
        assert!(
            Path::new(&root().join(FIXTURES).join(tree)).is_dir(),
            "{tree}"
        );
    }
}

/// `check` prints its findings through the same renderer as doctor, and on a captured tree
/// says that the kernel's CM was not asked instead of asking this host's kernel.
#[test]
fn check_on_a_captured_tree_skips_the_kernel_choice() {
    let rxe = sysfs("rxe-veth-basic");
    let r = run(&[
        "--sysfs",
        &rxe,
        "check",
        "-d",
        "rxe0",
        "--peer",
        "192.168.77.2",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("auto: chose index 1"), "{}", r.stdout);
    assert!(
        r.stdout.contains(
            "info  kernel-choice  kernel's GID choice not asked: --sysfs points at a captured tree"
        ),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("ok    mtu            RoCE MTU 1024 over netdev veth0 MTU 1500"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.ends_with("warning(s), 0 failure(s)\n"),
        "{}",
        r.stdout
    );
    // An empty slot is a GID index that does not exist: exit 3, as pingpong -g 7 exits.
    let j = run(&["-j", "--sysfs", &rxe, "check", "-d", "rxe0", "-g", "7"]);
    assert_eq!(j.code, 3, "{}", j.stderr);
    let v: serde_json::Value = serde_json::from_str(&j.stdout).unwrap();
    let slot = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "gid-slot")
        .unwrap();
    assert_eq!(slot["severity"], "fail");
    assert!(
        slot["fix"].as_str().unwrap().contains("use GID index 1"),
        "{slot}"
    );
    assert!(v.get("kernel_choice").is_none());
}

/// `check -g N` for an index that does not exist exits 3, like `pingpong -g N`: the
/// findings still say which indices exist (stdout, text or JSON), and stderr says it once.
#[test]
fn check_with_a_gid_index_that_does_not_exist_exits_3() {
    let rxe = sysfs("rxe-veth-basic");
    for (index, what) in [("999", "that slot is empty"), ("5000", "past the table")] {
        let args = [
            "--sysfs",
            &rxe,
            "check",
            "-d",
            "rxe1",
            "-g",
            index,
            "--peer",
            "192.168.77.1",
        ];
        let r = run(&args);
        assert_eq!(r.code, 3, "{args:?}: {}", r.stderr);
        assert!(r.stdout.contains("FAIL  gid-slot"), "{}", r.stdout);
        assert_eq!(
            r.stderr,
            format!(
                "rdmactl: no GID index {index} on rxe1/1; {what}; populated indices: 0, 1; \
                 use GID index 1 (RoCE v2, ::ffff:192.168.77.2 on veth1)\n"
            )
        );
        let mut json = vec!["-j"];
        json.extend_from_slice(&args);
        let j = run(&json);
        assert_eq!(j.code, 3);
        let v: serde_json::Value = serde_json::from_str(&j.stdout).unwrap();
        assert_eq!(v["result"], "fail");
        assert_eq!(v["gid_index"], index.parse::<u32>().unwrap());
    }
    // A populated index that does not fit the peer is a failed check (1), not a missing one:
    // an IPv4 GID toward an IPv6 address.
    let r = run(&[
        "--sysfs",
        &rxe,
        "check",
        "-d",
        "rxe1",
        "-g",
        "1",
        "--peer",
        "2001:db8::1",
    ]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(r.stderr, "");
    // The link-local index toward an IPv4 address works against a peer on its link-local
    // GID (one L2 segment): a warning, exit 0, that says check cannot see the peer's GID.
    let r = run(&[
        "--sysfs",
        &rxe,
        "check",
        "-d",
        "rxe1",
        "-g",
        "0",
        "--peer",
        "192.168.77.1",
    ]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("warn  gid-family"), "{}", r.stdout);
    assert!(!r.stdout.contains("FAIL"), "{}", r.stdout);
}

/// ibsim's tree has no `link_layer` files: InfiniBand, as libibverbs reads it. `check`
/// then takes index 0 (the port GID) instead of rejecting it as link-local IPv6, and an
/// SDR rate written without its name ("10 Gb/sec (4X)") is SDR.
#[test]
fn a_tree_without_link_layer_is_infiniband() {
    let dir = sysfs("ibsim");
    let auto = run(&["--sysfs", &dir, "check"]);
    assert_eq!(auto.code, 0, "{}{}", auto.stdout, auto.stderr);
    assert!(
        auto.stdout.contains("auto: chose index 0"),
        "{}",
        auto.stdout
    );
    assert!(!auto.stdout.contains("link-local IPv6"), "{}", auto.stdout);
    assert!(auto.stdout.contains("ok    ib-lid"), "{}", auto.stdout);
    let peer = run(&["--sysfs", &dir, "check", "-g", "0", "--peer", "10.0.0.2"]);
    assert_eq!(peer.code, 0, "{}{}", peer.stdout, peer.stderr);
    for roce in ["gid-family", "gid-type", "netdev ", "FAIL"] {
        assert!(!peer.stdout.contains(roce), "{roce}: {}", peer.stdout);
    }
    let ports = run(&["--sysfs", &dir, "ports", "-j"]);
    let v: serde_json::Value = serde_json::from_str(&ports.stdout).unwrap();
    assert_eq!(v[0]["link_layer"], "InfiniBand");
    assert_eq!(v[0]["link_width"], "4X");
    assert_eq!(v[0]["link_speed"], "SDR");
    let gids = run(&["--sysfs", &dir, "gids", "-j"]);
    let v: serde_json::Value = serde_json::from_str(&gids.stdout).unwrap();
    assert_eq!(
        v[0]["type"], "IB",
        "no gid_attrs: IB/RoCE v1, which is IB here"
    );
}

/// An InfiniBand GID is a subnet prefix and a port GUID: `gids` shows no IP for it, and
/// `check` names its type as `gids` does (IB, not the kernel's shared "IB/RoCE v1").
#[test]
fn infiniband_gids_have_no_ip_and_are_called_ib() {
    let dir = sysfs("ib-hca");
    let r = run(&["--sysfs", &dir, "check", "-d", "mlx5_0", "-g", "1"]);
    assert!(
        r.stdout
            .contains("GID index 1 (IB, fec0::c42:a103:a1:b2c4) is populated"),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains("IB/RoCE v1"), "{}", r.stdout);
    let r = run(&["--sysfs", &dir, "gids", "--ip", "-j"]);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    for row in v.as_array().unwrap() {
        assert_eq!(row["ip"], serde_json::Value::Null, "{row}");
    }
}

/// iWARP (the siw tree): its GID is the netdev's MAC, so `gids` gives it no IP, and
/// `check` applies no RoCE GID rule to it: it says the port connects through rdma_cm,
/// before any GID verdict, with either `-g auto` or an index.
#[test]
fn iwarp_gets_no_roce_gid_rule() {
    let dir = sysfs("siw-ens3");
    let r = run(&["--sysfs", &dir, "gids", "--ip", "-j"]);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    for row in v.as_array().unwrap() {
        assert_eq!(row["ip"], serde_json::Value::Null, "{row}");
    }
    for gid in [&[][..], &["-g", "0"][..]] {
        let mut args = vec![
            "--sysfs",
            &dir,
            "check",
            "-d",
            "siw0",
            "--peer",
            "192.0.2.7",
        ];
        args.extend(gid);
        let r = run(&args);
        assert_eq!(r.code, 2, "{args:?}: {}{}", r.stdout, r.stderr);
        assert!(r.stdout.is_empty(), "no GID verdict: {}", r.stdout);
        for want in [
            "siw0 is an iWARP device (node type RNIC, transport iWARP)",
            "connects only through rdma_cm",
            "rdmactl pingpong --cm",
        ] {
            assert!(r.stderr.contains(want), "{want:?} not in {}", r.stderr);
        }
        for roce in ["RoCE v1", "RoCE v2", "IPv4"] {
            assert!(!r.stderr.contains(roce), "{roce:?} in {}", r.stderr);
        }
    }
}

/// `-g -1` is NCCL's and perftest's "choose": the same as `-g auto`, not a clap error.
#[test]
fn check_gid_index_minus_one_is_auto() {
    let rxe = sysfs("rxe-veth-basic");
    let minus = run(&["--sysfs", &rxe, "check", "-d", "rxe0", "-g", "-1"]);
    let auto = run(&["--sysfs", &rxe, "check", "-d", "rxe0", "-g", "auto"]);
    assert_eq!(minus.code, 0, "{}", minus.stderr);
    assert_eq!(minus.stdout, auto.stdout);
    let j = run(&["-j", "--sysfs", &rxe, "check", "-d", "rxe0", "-g", "-1"]);
    let v: serde_json::Value = serde_json::from_str(&j.stdout).unwrap();
    assert_eq!(v["requested"], "auto");
    let bad = run(&["--sysfs", &rxe, "check", "-d", "rxe0", "-g", "-2"]);
    assert_eq!(bad.code, 2);
    assert!(
        bad.stderr.contains("'-2' is not a GID index"),
        "{}",
        bad.stderr
    );
}

/// `--peer fe80::...%IFNAME`, the form the tool asks for: the scope names the link the
/// peer is on, so the GID must be that netdev's, and `auto` picks it.
#[test]
fn check_a_scoped_link_local_peer() {
    let rxe = sysfs("rxe-vm-basic");
    let ok = run(&[
        "--sysfs",
        &rxe,
        "check",
        "-d",
        "rxe0",
        "-g",
        "0",
        "--peer",
        "fe80::1%veth0",
    ]);
    assert_eq!(ok.code, 0, "{}{}", ok.stdout, ok.stderr);
    assert!(
        ok.stdout
            .starts_with("check rxe0/1 GID index 0 toward fe80::1%veth0\n"),
        "{}",
        ok.stdout
    );
    assert!(
        ok.stdout.contains(
            "ok    peer-scope     the peer fe80::1%veth0 is on veth0, GID index 0's netdev"
        ),
        "{}",
        ok.stdout
    );
    let wrong = run(&[
        "-j",
        "--sysfs",
        &rxe,
        "check",
        "-d",
        "rxe0",
        "-g",
        "0",
        "--peer",
        "fe80::1%veth1",
    ]);
    assert_eq!(wrong.code, 1, "{}", wrong.stderr);
    let v: serde_json::Value = serde_json::from_str(&wrong.stdout).unwrap();
    assert_eq!(v["peer"], "fe80::1");
    assert_eq!(v["peer_scope"], "veth1");
    let f = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "peer-scope")
        .unwrap();
    assert_eq!(f["severity"], "fail", "{f}");
    // A VLAN's link: auto takes the link-local GID of the VLAN netdev the scope names.
    let vlan = sysfs("mlx5-roce-vlan");
    let r = run(&["--sysfs", &vlan, "check", "--peer", "fe80::1%ens1f0np0.200"]);
    assert!(r.stdout.contains("auto: chose index 5"), "{}", r.stdout);
    let r = run(&[
        "--sysfs",
        &vlan,
        "check",
        "-g",
        "1",
        "--peer",
        "fe80::1%ens1f0np0.200",
    ]);
    assert_eq!(r.code, 1);
    assert!(
        r.stdout
            .contains("fix: use GID index 5 (RoCE v2, fe80::ba59:9fff:fed4:3e2a on ens1f0np0.200)"),
        "{}",
        r.stdout
    );
    // A scope belongs to IPv6 only.
    let v4 = run(&["--sysfs", &rxe, "check", "--peer", "192.168.77.2%veth0"]);
    assert_eq!(v4.code, 2);
    assert!(
        v4.stderr.contains("IPv6 link-local address only"),
        "{}",
        v4.stderr
    );
}

/// `--peer` takes a host name, as pingpong's SERVER does; one that does not resolve is a
/// usage error that says so.
#[test]
fn check_peer_takes_a_host_name() {
    let rxe = sysfs("rxe-veth-basic");
    let r = run(&[
        "--sysfs",
        &rxe,
        "check",
        "-d",
        "rxe0",
        "--peer",
        "localhost",
    ]);
    let all = format!("{}{}", r.stdout, r.stderr);
    assert!(!all.contains("cannot resolve"), "{all}");
    assert!(all.contains("127.0.0.1") || all.contains("::1"), "{all}");
    let r = run(&[
        "--sysfs",
        &rxe,
        "check",
        "-d",
        "rxe0",
        "--peer",
        "no-such-host.invalid",
    ]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("cannot resolve 'no-such-host.invalid'"),
        "{}",
        r.stderr
    );
}

/// `check --env` reads the NCCL and UCX variables as the libraries do, on a captured tree.
#[test]
fn check_env_reads_the_variables_as_nccl_and_ucx_do() {
    let rxe = sysfs("rxe-veth-basic");
    let env_check = |vars: &[(&str, &str)], extra: &[&str]| {
        let mut cmd = rdmactl();
        for var in [
            "NCCL_IB_HCA",
            "NCCL_IB_GID_INDEX",
            "NCCL_IB_ROCE_VERSION_NUM",
            "NCCL_IB_ADDR_FAMILY",
            "NCCL_IB_ADDR_RANGE",
            "NCCL_SOCKET_IFNAME",
            "UCX_NET_DEVICES",
            "UCX_IB_GID_INDEX",
        ] {
            cmd.env_remove(var);
        }
        for (k, v) in vars {
            cmd.env(k, v);
        }
        let out = cmd
            .args(["--sysfs", &rxe, "check", "-d", "rxe0", "--env"])
            .args(extra)
            .output()
            .unwrap();
        (
            out.status.code().unwrap(),
            String::from_utf8(out.stdout).unwrap(),
        )
    };
    // strtoll(s, NULL, 0): 0x1 is index 1.
    let (code, out) = env_check(&[("NCCL_IB_GID_INDEX", "0x1")], &[]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("ok    env-nccl-ib-gid-index  NCCL_IB_GID_INDEX=0x1 selects GID index 1"),
        "{out}"
    );
    // Link-local without a peer: a warning, not a failure.
    let (code, out) = env_check(&[("NCCL_IB_GID_INDEX", "0")], &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("warn  env-nccl-ib-gid-index"), "{out}");
    assert!(out.contains("works only within one L2 segment"), "{out}");
    // Toward a routed IPv4 peer it fails.
    let (code, out) = env_check(&[("NCCL_IB_GID_INDEX", "0")], &["--peer", "192.168.77.2"]);
    assert_eq!(code, 1, "{out}");
    // A UCX port that is not on this host.
    let (code, out) = env_check(&[("UCX_NET_DEVICES", "mlx5_0:1")], &[]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("not on this host: mlx5_0:1"), "{out}");
    // UCX_IB_GID_INDEX=auto is judged as the index UCX's own rule takes (the first RoCE v2
    // IPv4 GID), here the one rdmactl picks too.
    let (code, out) = env_check(&[("UCX_IB_GID_INDEX", "auto")], &["--peer", "192.168.77.2"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("ok    env-ucx-ib-gid-index  UCX under auto will use GID index 1 (RoCE v2, ::ffff:192.168.77.1 on veth0), as rdmactl would"),
        "{out}"
    );
    // Unset in a UCX job (UCX_NET_DEVICES set) is UCX's default, auto, judged the same.
    let (code, out) = env_check(
        &[("UCX_NET_DEVICES", "rxe0:1")],
        &["--peer", "192.168.77.2"],
    );
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("ok    env-ucx-ib-gid-index  UCX under auto will use GID index 1 (RoCE v2, ::ffff:192.168.77.1 on veth0), as rdmactl would"),
        "{out}"
    );
    assert!(out.contains("UCX_IB_GID_INDEX unset (auto)"), "{out}");
    // Each variable alone is checked: none leaves the "none is set" line.
    for var in [
        ("NCCL_IB_ROCE_VERSION_NUM", "2"),
        ("NCCL_IB_ADDR_FAMILY", "AF_INET"),
        ("NCCL_IB_ADDR_RANGE", "192.168.77.0/24"),
        ("NCCL_SOCKET_IFNAME", "veth"),
        ("UCX_NET_DEVICES", "rxe0:1"),
        ("NCCL_IB_HCA", "^=rxe1"),
    ] {
        let (code, out) = env_check(&[var], &[]);
        assert_eq!(code, 0, "{var:?}: {out}");
        assert!(!out.contains("is set\n"), "{var:?}: {out}");
        let finding = format!("env-{}", var.0.to_lowercase().replace('_', "-"));
        assert!(out.contains(&format!("ok    {finding}")), "{var:?}: {out}");
    }
    let (_, out) = env_check(&[], &[]);
    assert!(out.contains("info  env "), "{out}");
    // InfiniBand: the index only matters for routed traffic.
    let mut cmd = rdmactl();
    let out = cmd
        .env("NCCL_IB_GID_INDEX", "1")
        .args([
            "--sysfs",
            &sysfs("ib-hca"),
            "check",
            "-d",
            "mlx5_0",
            "--env",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("addressed by LID"), "{text}");
}

/// `devices -v -j` carries every device key `devices -j` has (same names), and on a
/// captured tree the stderr note is one short line, not the list of verbs-only fields.
#[test]
fn devices_verbose_json_has_the_device_keys_of_devices_json() {
    for tree in TREES {
        let dir = sysfs(tree);
        let plain = run(&["--sysfs", &dir, "devices", "-j"]);
        let verbose = run(&["--sysfs", &dir, "devices", "-v", "-j"]);
        let plain: serde_json::Value = serde_json::from_str(&plain.stdout).unwrap();
        let verbose: serde_json::Value = serde_json::from_str(&verbose.stdout).unwrap();
        for (p, v) in plain
            .as_array()
            .unwrap()
            .iter()
            .zip(verbose.as_array().unwrap())
        {
            for (key, value) in p.as_object().unwrap() {
                assert!(v.get(key).is_some(), "{tree}: devices -v -j lacks {key}");
                if ["device", "node_type", "node_desc", "hca_type"].contains(&key.as_str()) {
                    assert_eq!(&v[key], value, "{tree}: {key}");
                }
            }
        }
        let text = run(&["--sysfs", &dir, "devices", "-v"]);
        let notes: Vec<&str> = text
            .stderr
            .lines()
            .filter(|l| l.starts_with("rdmactl: note:"))
            .collect();
        assert_eq!(notes.len(), 1, "{tree}: {}", text.stderr);
        assert!(
            notes[0].ends_with("shown from sysfs, without the fields only verbs report"),
            "{tree}: {}",
            notes[0]
        );
        assert!(!notes[0].contains("max_qp"), "{tree}: {}", notes[0]);
    }
}

/// `counters --interval` re-reads the files: a copy of a tree is rewritten between the
/// binary's samples, and the second sample shows a 32-bit hw counter that wrapped and a
/// PMA counter that saturated (never a negative delta).
#[test]
fn counters_interval_sees_wraps_and_saturation_in_a_changing_tree() {
    let t = tempfile::tempdir().unwrap();
    let port = t.path().join("class/infiniband/mlx5_0/ports/1");
    let put = |rel: &str, v: &str| {
        let p = port.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, format!("{v}\n")).unwrap();
    };
    put("state", "4: ACTIVE");
    put("counters/symbol_error", "65500");
    put("counters/port_xmit_data", "1000");
    put("hw_counters/out_of_sequence", "4294967290");
    let mut child = StdCommand::new(env!("CARGO_BIN_EXE_rdmactl"))
        .args(["--sysfs", t.path().to_str().unwrap(), "-j", "counters"])
        .args(["--interval", "0.3", "--count", "2"])
        .env_remove("RDMACTL_SYSFS")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first: serde_json::Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    // Sample 1 is out: change the files before sample 2 reads them.
    put("counters/symbol_error", "65535");
    put("counters/port_xmit_data", "1250");
    put("hw_counters/out_of_sequence", "6");
    let second: serde_json::Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert!(lines.next().is_none(), "--count 2 prints two samples");
    assert!(child.wait().unwrap().success());
    assert_eq!(first["sample"], 1);
    let find = |v: &serde_json::Value, name: &str| {
        v["ports"][0]["counters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .cloned()
            .unwrap()
    };
    assert_eq!(find(&first, "out_of_sequence")["delta"], 0);
    let oos = find(&second, "out_of_sequence");
    assert_eq!(
        (oos["state"].as_str(), oos["delta"].as_u64()),
        (Some("wrapped"), Some(12))
    );
    let sym = find(&second, "symbol_error");
    assert_eq!(
        (sym["state"].as_str(), sym["delta"].as_u64()),
        (Some("saturated"), Some(35))
    );
    assert_eq!(sym["exact"], false);
    assert_eq!(find(&second, "port_xmit_data")["delta"], 250);
    let codes: Vec<&str> = second["ports"][0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap())
        .collect();
    assert_eq!(
        codes,
        [
            "counters-retransmission",
            "counters-link-errors",
            "counters-saturated"
        ]
    );
}

#[test]
fn counters_select_and_refuse_like_the_other_commands() {
    let tree = sysfs("ib-hca");
    let r = run(&["--sysfs", &tree, "counters", "mlx5_1/1"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.starts_with("mlx5_1/1\n"), "{}", r.stdout);
    assert!(
        r.stdout
            .contains("symbol_error         65535  saturated, reset with perfquery -R"),
        "{}",
        r.stdout
    );
    let r = run(&["--sysfs", &tree, "counters", "mlx5_9"]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    let r = run(&["--sysfs", &tree, "counters", "mlx5_0/2"]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    let r = run(&["--sysfs", &tree, "counters", "--count", "2"]);
    assert_eq!(r.code, 2, "--count needs --interval: {}", r.stderr);
    let r = run(&["--sysfs", &tree, "counters", "--interval", "0"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("at least 0.01 seconds"), "{}", r.stderr);
}

/// `selftest --steps` is checked before a device is opened: a wrong name is a usage error
/// listing the steps, and `--steps` does not combine with `--cm` (whose steps are fixed).
#[test]
fn selftest_steps_are_checked_before_anything_is_opened() {
    let r = run(&["selftest", "--steps", "pkey,nosuch"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    assert!(
        r.stderr.contains("invalid value 'nosuch'")
            && r.stderr.contains(
                "possible values: basic, unsignaled, events, solicited, inline, pkey, flush, threads, shared-qp, fetch-add, srq"
            ),
        "{}",
        r.stderr
    );
    let r = run(&["selftest", "--cm", "--steps", "pkey"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("cannot be used with"), "{}", r.stderr);
}

#[test]
fn explain_prints_a_codes_entry_and_lists_every_code() {
    let entry = run(&["explain", "retry-exceeded"]);
    assert_eq!(entry.code, 0, "{}", entry.stderr);
    assert!(
        entry
            .stdout
            .starts_with("retry-exceeded — Work completions (shared by the TCP exchange and --cm)\n\n- **When:**"),
        "{}",
        entry.stdout
    );
    for item in ["- **Cause:**", "- **Seen:**", "- **Fix:**"] {
        assert!(entry.stdout.contains(item), "{item}: {}", entry.stdout);
    }
    assert!(!entry.stdout.contains("### "), "{}", entry.stdout);
    assert!(entry.stderr.is_empty(), "{}", entry.stderr);

    let json = run(&["explain", "-j", "same-host-arp"]);
    assert_eq!(json.code, 0);
    let value: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(value["code"], "same-host-arp");
    assert_eq!(value["entries"].as_array().unwrap().len(), 2, "{value}");

    let list = run(&["explain"]);
    assert_eq!(list.code, 0);
    assert!(
        list.stdout.contains("\n  retry-exceeded\n"),
        "{}",
        list.stdout
    );
    assert!(list.stdout.contains("\n  fabric-link\n"), "{}", list.stdout);

    let typo = run(&["explain", "retry-exeeded"]);
    assert_eq!(typo.code, 2);
    assert!(typo.stdout.is_empty(), "{}", typo.stdout);
    assert_eq!(
        typo.stderr,
        "rdmactl: no diagnostic code 'retry-exeeded'; did you mean retry-exceeded? \
         (`rdmactl explain` lists every code)\n"
    );
    let none = run(&["explain", "-j", "zzzzzzzzzzzzzzzz"]);
    assert_eq!(none.code, 2);
    assert!(none.stdout.is_empty());
    assert!(
        none.stderr.contains("`rdmactl explain` lists every code"),
        "{}",
        none.stderr
    );
}

/// The H100 host of issue 36's GPU run (Firecracker, kernel 6.18): ib_core, mlx5_core and
/// mlx5_ib loaded, /sys/class/infiniband empty, and only virtio functions and the GPU on
/// the PCI bus. Every command says there is no RDMA NIC, names the loaded mlx5_ib with no
/// Mellanox function to drive, and never tells the user to load it.
#[test]
fn a_loaded_mlx5_ib_with_no_mellanox_function_is_no_rdma_nic() {
    let dir = sysfs("h100-no-rdma-nic");
    let truth = "mlx5_ib is loaded but no PCI function of vendor 15b3 (Mellanox/NVIDIA) \
                 exists: this host has no RDMA NIC (network functions: 0000:00:03.0 1af4:1041 \
                 virtio-pci eth0)";
    let soft =
        "for Soft-RoCE on eth0: `modprobe rdma_rxe; rdma link add rxe0 type rxe netdev eth0`";
    for cmd in [
        &["devices"][..],
        &["ports"],
        &["gids"],
        &["counters"],
        &["qos"],
    ] {
        let mut args = vec!["--sysfs", dir.as_str()];
        args.extend_from_slice(cmd);
        let r = run(&args);
        assert_eq!(r.code, 4, "{args:?}: {}", r.stderr);
        assert!(
            r.stderr.starts_with(&format!(
                "rdmactl: no RDMA devices: {dir}/class/infiniband is empty, so no driver \
                 registered a device: {truth}\n"
            )),
            "{args:?}: {}",
            r.stderr
        );
        assert!(
            r.stderr.contains(&format!(
                "seen: RDMA provider modules loaded ({dir}/module): mlx5_ib\n"
            )),
            "{}",
            r.stderr
        );
        assert!(r.stderr.contains(soft), "{}", r.stderr);
        for wrong in [
            "Load your NIC's RDMA driver (mlx5_ib",
            "modprobe mlx5_ib",
            "load the NIC's RDMA driver",
        ] {
            assert!(
                !r.stderr.contains(wrong),
                "{args:?}: {wrong:?} in {}",
                r.stderr
            );
        }
    }
    let r = run(&["--sysfs", &dir, "doctor"]);
    assert_eq!(r.code, 4, "{}", r.stdout);
    assert!(
        r.stdout.contains(&format!(
            "the RDMA core is loaded but no device is registered: {truth}"
        )),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains(soft), "{}", r.stdout);
    assert!(
        !r.stdout.contains("mlx5_ib, irdma, bnxt_re"),
        "{}",
        r.stdout
    );
}

/// `res` reads the running kernel's resources over netlink: a captured tree is refused
/// with the reason (a usage error), not read beside this host's kernel; `--pid` and
/// `--comm` together are refused by clap.
#[test]
fn res_refuses_a_captured_tree() {
    let r = run(&["--sysfs", &sysfs("rxe-vm-basic"), "res"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("res reads the running kernel's RDMA resources over netlink"),
        "{}",
        r.stderr
    );
    assert!(r.stdout.is_empty());
    let r = run(&["res", "--pid", "1", "--comm", "init"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("cannot be used with"), "{}", r.stderr);
}
