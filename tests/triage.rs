//! `rdmactl triage` on job logs (tests/fixtures/joblogs/, each built from its tool's format
//! strings as SOURCE.txt says): the root line, the peer, the code, the next commands with the
//! job's parameters, no false cause; text and `-j` (checked against tests/json-schema.txt);
//! standard input, clean logs, binary and unreadable files.

mod schema;

use std::io::Write;
use std::path::PathBuf;

use assert_cmd::Command;
use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn rdmactl() -> Command {
    let mut cmd = Command::cargo_bin("rdmactl").unwrap();
    cmd.current_dir(root())
        .env_remove("NO_COLOR")
        .env_remove("COLUMNS")
        .env_remove("TERM");
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
        code: out.status.code().expect("exited"),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

fn log(name: &str) -> String {
    format!("tests/fixtures/joblogs/{name}")
}

/// `-j` of one log, checked against its documented shape.
fn json(name: &str) -> Value {
    let r = run(&["-j", "triage", &log(name)]);
    let v: Value = serde_json::from_str(&r.stdout)
        .unwrap_or_else(|e| panic!("{name}: not JSON: {e}\n{}", r.stdout));
    let bad = schema::mismatches("triage", &v);
    assert!(bad.is_empty(), "{name}: {bad:#?}");
    v
}

fn finding<'a>(v: &'a Value, code: &str) -> &'a Value {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == code)
        .unwrap_or_else(|| panic!("no {code} in {:#}", v["findings"]))
}

fn codes(v: &Value) -> Vec<String> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap().to_string())
        .collect()
}

fn commands(f: &Value) -> Vec<String> {
    f["next"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            format!(
                "{}: {}",
                n["on"].as_str().unwrap(),
                n["command"].as_str().unwrap()
            )
        })
        .collect()
}

#[test]
fn nccl_retry_exceeded_from_two_ranks_is_one_event_pointing_at_the_peer() {
    // NCCL is not installable here: the lines are built from NCCL 2.19's format strings.
    let v = json("nccl-retry.log");
    assert_eq!(codes(&v), ["retry-exceeded", "log-common-peer"]);
    let f = finding(&v, "retry-exceeded");
    assert_eq!(f["root"]["line"], 6);
    assert_eq!(f["peer"], "10.0.3.7");
    assert_eq!(f["cascade"]["count"], 3, "the flush storm is the cascade");
    assert_eq!(f["reporters"], serde_json::json!(["node1", "node2"]));
    let next = commands(f);
    assert!(
        next.contains(&"node1: rdmactl check -d mlx5_2 --peer 10.0.3.7".into()),
        "{next:?}"
    );
    assert!(
        next.contains(&"node2: rdmactl check -d mlx5_0 --peer 10.0.3.7".into()),
        "{next:?}"
    );
    // The log does not decide between a dead peer, a lost path and a mismatch.
    let why = f["message"].as_str().unwrap();
    assert!(why.contains("does not decide"), "{why}");
    assert!(f["unknown"].to_string().contains("alive"));
    let common = finding(&v, "log-common-peer");
    assert_eq!(common["peer"], "10.0.3.7");
    assert_eq!(v["rdma_error"], true);
    assert_eq!(v["error_lines"], 5);
    assert_eq!(v["versions"][0]["library"], "NCCL");
    assert_eq!(v["versions"][0]["version"], "2.19.3+cuda12.2");
    assert_eq!(v["versions"][0]["line"], 2);
    let r = run(&["triage", &log("nccl-retry.log")]);
    assert_eq!(r.code, 1);
    assert!(r.stdout.contains("FAIL retry-exceeded"), "{}", r.stdout);
    assert!(
        r.stdout
            .contains("root tests/fixtures/joblogs/nccl-retry.log:6"),
        "{}",
        r.stdout
    );
}

#[test]
fn nccl_empty_gid_slot_names_the_index_and_no_network_cause() {
    let v = json("nccl-gid-empty.log");
    assert_eq!(codes(&v), ["log-qp-transition"]);
    let f = finding(&v, "log-qp-transition");
    assert_eq!(f["root"]["line"], 3);
    assert_eq!(f["device"], "mlx5_3");
    assert_eq!(f["gid_index"], 5);
    assert_eq!(f["reporters"], serde_json::json!(["gpu-b"]));
    let why = f["message"].as_str().unwrap();
    assert!(why.contains("GID index 5 is an empty slot"), "{why}");
    // No false cause: nothing about the peer, the path or ARP.
    for wrong in ["ARP", "route", "retry", "peer is down"] {
        assert!(!why.contains(wrong), "{wrong} in {why}");
    }
    let next = commands(f);
    assert_eq!(
        next[0],
        "gpu-b: rdmactl check -d mlx5_3 -i 1 -g 5 --peer 192.168.40.11"
    );
    assert!(
        next.contains(&"gpu-b: rdmactl gids -d mlx5_3".into()),
        "{next:?}"
    );
    let e = &v["events"][0];
    assert_eq!(e["errno_name"], "ENODATA");
    assert_eq!(e["rank"], 1);
    assert_eq!(e["local_gid"], "::");
    assert_eq!(e["remote_ip"], "192.168.40.11");
}

#[test]
fn open_mpi_over_ucx_pairs_both_ends_and_rules_out_a_dead_peer() {
    let v = json("ucx-ompi.log");
    assert_eq!(
        codes(&v),
        ["retry-exceeded"],
        "both ends are one event, no common peer"
    );
    let f = finding(&v, "retry-exceeded");
    assert_eq!(f["root"]["line"], 3);
    assert_eq!(f["gid_index"], 3);
    assert!(f["ruled_out"].to_string().contains("a dead peer"));
    assert!(!f["unknown"].to_string().contains("alive"));
    let next = commands(f);
    assert!(
        next.contains(
            &"hpc02 (10.2.0.5): rdmactl pingpong -d mlx5_1 -i 1 -g 3 --tclass 106".into()
        ),
        "{next:?}"
    );
    assert!(
        next.contains(&"hpc01: rdmactl pingpong -d mlx5_0 -i 1 -g 3 --tclass 106 10.2.0.5".into()),
        "{next:?}"
    );
    let e = &v["events"][0];
    assert_eq!(
        (e["host"].as_str(), e["pid"].as_u64()),
        (Some("hpc01"), Some(23001))
    );
    assert_eq!(
        (e["syndrome"].as_u64(), e["vendor_err"].as_u64()),
        (Some(0x15), Some(0x81))
    );
    assert_eq!(e["qpn"], 0x1a2b);
    assert_eq!(e["remote_qpn"], 0x2c4);
}

#[test]
fn ucx_verbs_rnr_is_the_peer_process_not_the_network() {
    let v = json("ucx-verbs.log");
    assert_eq!(codes(&v), ["rnr-retry-exceeded"]);
    let f = finding(&v, "rnr-retry-exceeded");
    assert_eq!(f["peer"], "192.168.77.2");
    assert_eq!(f["cascade"]["count"], 1);
    assert!(f["ruled_out"].to_string().contains("packet loss"));
    assert_eq!(
        commands(f)[0],
        "vm1: rdmactl check -i 1 -g 1 --peer 192.168.77.2"
    );
}

#[test]
fn perftest_rc_pingpong_rdmactl_and_kernel_lines() {
    let v = json("perftest.log");
    assert_eq!(codes(&v), ["retry-exceeded"]);
    assert_eq!(finding(&v, "retry-exceeded")["root"]["line"], 8);
    assert_eq!(v["events"][0]["library"], "perftest");

    let v = json("ibv-rc-pingpong.log");
    assert_eq!(finding(&v, "retry-exceeded")["root"]["line"], 3);
    assert_eq!(v["events"][0]["library"], "ibv_rc_pingpong");

    let v = json("rdmactl.log");
    let f = finding(&v, "retry-exceeded");
    assert_eq!(f["root"]["line"], 1);
    assert_eq!(f["peer"], "192.168.77.1");
    assert_eq!(
        commands(f)[0],
        "the reporting host: rdmactl check -d rxe1 -i 1 -g 1 --peer 192.168.77.1"
    );

    let v = json("kernel.log");
    let f = finding(&v, "remote-access");
    assert_eq!(f["root"]["line"], 2);
    assert_eq!(f["device"], "mlx5_1");
    assert_eq!(f["cascade"]["count"], 1);
    assert!(f["ruled_out"].to_string().contains("network path"));
    assert_eq!(v["events"][0]["host"], "node3");
}

#[test]
fn a_clean_log_exits_0_and_many_files_keep_their_names() {
    let r = run(&["triage", &log("clean.log")]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.starts_with("no RDMA error in the log\n"),
        "{}",
        r.stdout
    );
    let r = run(&["-j", "triage", &log("clean.log"), &log("kernel.log")]);
    assert_eq!(r.code, 1);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["findings"][0]["root"]["file"], log("kernel.log"));
    assert_eq!(v["lines"], 7);
}

#[test]
fn standard_input_and_dash() {
    let text = std::fs::read(root().join(log("nccl-gid-empty.log"))).unwrap();
    for args in [&["triage"][..], &["triage", "-"][..]] {
        let out = rdmactl()
            .args(args)
            .write_stdin(text.clone())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        let stdout = String::from_utf8(out.stdout).unwrap();
        assert!(stdout.contains("root stdin:3"), "{stdout}");
    }
}

#[test]
fn binary_and_unreadable_files_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("core.gz");
    std::fs::File::create(&bin)
        .unwrap()
        .write_all(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03")
        .unwrap();
    let r = run(&["triage", bin.to_str().unwrap()]);
    assert_eq!(r.code, 2);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("core.gz is not a text log (a NUL byte"),
        "{}",
        r.stderr
    );
    let r = run(&["triage", "/nonexistent/job.log"]);
    assert_eq!(r.code, 2);
    assert_eq!(
        r.stderr,
        "rdmactl: cannot read /nonexistent/job.log: ENOENT (2, No such file or directory); \
         give a job's log file, or - for standard input\n"
    );
    let r = run(&["triage", dir.path().to_str().unwrap()]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("EISDIR (21, Is a directory)"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_big_flush_storm_stays_one_finding() {
    // Many flushes after one root: counted, not listed, and the root stays first.
    let mut text = String::new();
    text.push_str(" Completion with error at client\n Failed status 12: wr_id 0 syndrom 0x81\n");
    for i in 0..50_000 {
        text.push_str(&format!(" Failed status 5: wr_id {i} syndrom 0xf4\n"));
    }
    let out = rdmactl()
        .args(["-j", "triage"])
        .write_stdin(text)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(codes(&v), ["retry-exceeded"]);
    let f = finding(&v, "retry-exceeded");
    assert_eq!(f["root"]["line"], 2);
    assert_eq!(f["cascade"]["count"], 50_000);
    assert_eq!(v["flushes"].as_array().unwrap().len(), 1);
}

#[test]
fn real_logs_from_the_vm() {
    // rdmactl's own client, its packets dropped (tests/vm/cases/77-triage.sh).
    let v = json("vm/rdmactl-same-host-drop.log");
    assert_eq!(codes(&v), ["retry-exceeded"]);
    let f = finding(&v, "retry-exceeded");
    assert_eq!(f["root"]["line"], 13);
    assert_eq!(f["peer"], "192.168.77.1");
    assert_eq!(
        commands(f)[0],
        "the reporting host: rdmactl check -d rxe1 -i 1 -g 1 --peer 192.168.77.1"
    );
    // ibv_rc_pingpong on an empty GID slot: the server's RTR fails on the client's GID ::.
    let v = json("vm/ibv-rc-pingpong-empty-gid.log");
    assert_eq!(codes(&v), ["log-qp-transition"]);
    let f = finding(&v, "log-qp-transition");
    assert_eq!(f["root"]["line"], 5);
    let why = f["message"].as_str().unwrap();
    assert!(
        why.contains("empty slot") && why.contains("line 3"),
        "{why}"
    );
    assert!(
        !f["ruled_out"].to_string().contains("the peer"),
        "{}",
        f["ruled_out"]
    );
    // ib_send_bw on the empty GID index 7 refuses before any QP; its banner (stdout,
    // flushed at exit) follows the refusal and still names the device and index.
    let v = json("vm/ib-send-bw-empty-gid.log");
    assert_eq!(codes(&v), ["log-gid-family"]);
    let f = finding(&v, "log-gid-family");
    assert_eq!(f["root"]["line"], 2);
    assert_eq!((&f["device"], &f["gid_index"]), (&"rxe1".into(), &7.into()));
    let why = f["message"].as_str().unwrap();
    assert!(why.contains("empty GID ::"), "{why}");
    assert!(!why.contains("retry") && !why.contains("ARP"), "{why}");
    assert_eq!(
        commands(f),
        [
            "the reporting host: rdmactl check -d rxe1 -g 7",
            "the reporting host: rdmactl gids -d rxe1"
        ]
    );
}

/// A host that holds the root line's local GID is that end: `check`'s rules on its port and
/// GID index toward the peer are added under the finding, in text and `-j`; `--no-host`
/// judges the log alone.
#[test]
fn the_host_holding_the_local_gid_adds_checks_evidence() {
    let sysfs = "tests/fixtures/sysfs/rxe-veth-basic";
    let r = run(&["--sysfs", sysfs, "triage", &log("nccl-retry-here.log")]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stdout.contains(
            "here: the root line's local GID ::ffff:192.168.77.1 is rxe0/1 GID index 1 here \
             (the log names mlx5_2); check rxe0/1 GID index 1 toward 10.0.3.7:"
        ),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("    ok    port-state     rxe0/1 is ACTIVE"),
        "{}",
        r.stdout
    );
    // node2's failure (10.0.3.8) and the common peer are not this host: said once.
    assert!(
        r.stdout.contains("this host added no evidence to 1 finding(s): none of the root line's GIDs or its peer's address is on this host"),
        "{}",
        r.stdout
    );
    let alone = run(&[
        "--sysfs",
        sysfs,
        "triage",
        "--no-host",
        &log("nccl-retry-here.log"),
    ]);
    assert_eq!(alone.code, 1);
    assert!(!alone.stdout.contains("here:"), "{}", alone.stdout);
    assert!(
        !alone.stdout.contains("added no evidence"),
        "{}",
        alone.stdout
    );

    let out = run(&[
        "--sysfs",
        sysfs,
        "-j",
        "triage",
        &log("nccl-retry-here.log"),
    ]);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    let bad = schema::mismatches("triage", &v);
    assert!(bad.is_empty(), "{bad:#?}");
    let host = &finding(&v, "retry-exceeded")["host"];
    assert_eq!(host["here"], true, "{host:#}");
    assert_eq!(host["device"], "rxe0");
    assert_eq!(host["gid_index"], 1);
    assert_eq!(host["peer"], "10.0.3.7");
    let port_state = host["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "port-state")
        .expect("port-state");
    assert_eq!(port_state["severity"], "ok");
    assert_eq!(finding(&v, "log-common-peer")["host"]["here"], false);
}

/// A host that holds the remote GID is the peer: checked toward the reporter's address.
#[test]
fn the_host_holding_the_remote_gid_is_the_peer() {
    let r = run(&[
        "--sysfs",
        "tests/fixtures/sysfs/rxe-veth-basic",
        "triage",
        &log("nccl-peer-here.log"),
    ]);
    assert!(
        r.stdout.contains(
            "here: the root line's peer ::ffff:192.168.77.2 is rxe1/1 GID index 1 here: \
             this host is the peer; check rxe1/1 GID index 1 toward 10.0.3.6:"
        ),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains("added no evidence"), "{}", r.stdout);
}

/// The host's own evidence can decide what the log cannot: its port is DOWN. The log's
/// words stay the log's ("the log does not decide which"); the host block says the cause,
/// with the fix for this host.
#[test]
fn a_down_port_here_is_shown_under_the_logs_failure() {
    let r = run(&[
        "--sysfs",
        "tests/fixtures/sysfs/port-down",
        "triage",
        &log("nccl-port-down-here.log"),
    ]);
    assert_eq!(r.code, 1);
    let here = &r.stdout[r.stdout.find("  here: ").expect("a host block")..];
    assert!(
        here.contains("FAIL  port-state     mlx5_0/1 is DOWN: a RoCE port follows its netdev, and ens1f0np0 is down"),
        "{here}"
    );
    assert!(
        here.contains("fix: bring the interface up: `ip link set ens1f0np0 up`"),
        "{here}"
    );
    // Not the cable, not the peer: the host's own evidence names its netdev.
    assert!(!here.contains("cable"), "{here}");
    // Asked as `check` asks it: the same findings, the kernel's choice among them (not
    // asked of a captured tree).
    assert!(
        here.contains(
            "info  kernel-choice  kernel's GID choice not asked: --sysfs points at a captured tree"
        ),
        "{here}"
    );
}

/// One question, one answer: the host block of triage is `check`'s own findings on that
/// port, GID index and peer, line for line.
#[test]
fn triage_asks_the_port_as_check_does() {
    let sysfs = "tests/fixtures/sysfs/port-down";
    let t = run(&["--sysfs", sysfs, "triage", &log("nccl-port-down-here.log")]);
    let c = run(&[
        "--sysfs", sysfs, "check", "-d", "mlx5_0", "-g", "0", "--peer", "10.0.3.7",
    ]);
    let verdicts = |text: &str| -> Vec<String> {
        text.lines()
            .map(str::trim_start)
            .filter(|l| {
                ["ok ", "info ", "warn ", "FAIL "]
                    .iter()
                    .any(|v| l.starts_with(v))
            })
            .map(String::from)
            .collect()
    };
    let here = &t.stdout[t.stdout.find("  here: ").expect("a host block")..];
    let from_check = verdicts(&c.stdout);
    assert_eq!(from_check.len(), 7, "{}", c.stdout);
    assert_eq!(
        verdicts(here),
        from_check,
        "triage:\n{here}\ncheck:\n{}",
        c.stdout
    );
}

#[test]
fn libfabric_verbs_through_rxm_and_its_own_qp_transition() {
    // Built from libfabric v2.6's format strings (SOURCE.txt): rxm's fi_cq_readerr line with
    // the verbs status, and the verbs provider's VRB_WARN_ERRNO for ibv_modify_qp.
    let v = json("libfabric.log");
    assert_eq!(codes(&v), ["retry-exceeded", "log-qp-transition"]);
    let f = finding(&v, "retry-exceeded");
    assert_eq!(f["root"]["line"], 5);
    assert_eq!(f["reporters"], serde_json::json!(["rank 1"]));
    let why = f["message"].as_str().unwrap();
    assert!(why.contains("did not acknowledge"), "{why}");
    assert!(
        !why.contains("empty slot") && !why.contains("receive posted"),
        "{why}"
    );
    assert_eq!(commands(f)[0], "rank 1: rdmactl check");
    assert_eq!(v["events"][0]["library"], "libfabric");
    assert_eq!(v["events"][0]["pid"], 5120);

    let t = finding(&v, "log-qp-transition");
    assert_eq!(t["root"]["line"], 6);
    let why = t["message"].as_str().unwrap();
    assert!(why.contains("EINVAL (22, Invalid argument)"), "{why}");
    assert!(why.contains("a state the line does not name"), "{why}");
    // The line names no state: no RTR-only cause is claimed.
    for wrong in ["empty slot", "ARP", "MTU", "RTR"] {
        assert!(!why.contains(wrong), "{wrong} in {why}");
    }
    let next = commands(t);
    assert_eq!(next, ["rank 0: rdmactl check", "rank 0: rdmactl gids"]);
}

#[test]
fn nvshmem_ibrc_rnr_and_ibgda_syndrome() {
    // Built from NVSHMEM 3.4.5's format strings (SOURCE.txt).
    let v = json("nvshmem.log");
    assert_eq!(codes(&v), ["rnr-retry-exceeded", "retry-exceeded"]);
    let f = finding(&v, "rnr-retry-exceeded");
    assert_eq!(f["root"]["line"], 2);
    assert_eq!(f["reporters"], serde_json::json!(["gpu1"]));
    let why = f["message"].as_str().unwrap();
    assert!(why.contains("had no receive posted"), "{why}");
    assert!(!why.contains("lost the packets"), "{why}");
    assert!(f["ruled_out"].to_string().contains("packet loss"));
    assert_eq!(commands(f)[0], "gpu1: rdmactl check");

    // ibgda's error is the mlx5 CQE syndrome 0x15: transport retries exceeded.
    let g = finding(&v, "retry-exceeded");
    assert_eq!(g["root"]["line"], 4);
    assert_eq!(g["reporters"], serde_json::json!(["gpu2"]));
    assert!(!g["message"].as_str().unwrap().contains("receive posted"));
    let e = &v["events"][1];
    assert_eq!(e["library"], "NVSHMEM");
    assert_eq!(e["syndrome"], 0x15);
    let r = run(&["triage", "--no-host", &log("nvshmem.log")]);
    assert_eq!(r.code, 1);
    assert!(r.stdout.contains("FAIL rnr-retry-exceeded"), "{}", r.stdout);
}

#[test]
fn mooncake_failed_slice_is_the_peers_refusal_not_the_network() {
    // Built from Mooncake's worker_pool.cpp LOG(ERROR) format (SOURCE.txt).
    let v = json("mooncake.log");
    assert_eq!(codes(&v), ["remote-access"]);
    let f = finding(&v, "remote-access");
    assert_eq!(f["root"]["line"], 2);
    assert_eq!(f["peer"], "10.0.5.2");
    assert_eq!(f["device"], "mlx5_0");
    let why = f["message"].as_str().unwrap();
    assert!(why.contains("refused an RDMA READ or WRITE"), "{why}");
    for wrong in ["retry", "lost the packets", "empty slot"] {
        assert!(!why.contains(wrong), "{wrong} in {why}");
    }
    assert!(f["ruled_out"].to_string().contains("network path"));
    let next = commands(f);
    assert_eq!(
        next[0],
        "prefill-0: rdmactl check -d mlx5_0 --peer 10.0.5.2"
    );
    assert!(
        next.contains(&"prefill-0: rdmactl pingpong -d mlx5_0 -g auto 10.0.5.2".into()),
        "{next:?}"
    );
    assert_eq!(v["events"][0]["library"], "Mooncake");
}

#[test]
fn perftest_gid_types_refusal_is_a_family_mismatch_not_the_network() {
    // Built from perftest's banner and ctx_check_gid_compatibility refusal (SOURCE.txt).
    let v = json("perftest-gid-types.log");
    assert_eq!(codes(&v), ["log-gid-family"]);
    let f = finding(&v, "log-gid-family");
    assert_eq!(f["root"]["line"], 11);
    assert_eq!(f["device"], "mlx5_2");
    assert_eq!(f["gid_index"], 1);
    let why = f["message"].as_str().unwrap();
    assert!(why.contains("different address families"), "{why}");
    assert!(why.contains("GID index 1"), "{why}");
    for wrong in ["retry", "empty slot", "ARP", "did not acknowledge"] {
        assert!(!why.contains(wrong), "{wrong} in {why}");
    }
    assert!(f["ruled_out"].to_string().contains("network path"));
    assert_eq!(
        commands(f),
        [
            "cn1: rdmactl check -d mlx5_2 -g 1",
            "cn1: rdmactl gids -d mlx5_2"
        ]
    );
    assert_eq!(v["events"][0]["kind"], "gid_family");
    // Understood: the banner's device and GID index lines, the refusal and its advice; the
    // other eight lines are ordinary output.
    assert_eq!(v["skipped"], 8);
    let r = run(&["triage", "--no-host", &log("perftest-gid-types.log")]);
    assert_eq!(r.code, 1);
    assert!(r.stdout.contains("FAIL log-gid-family"), "{}", r.stdout);
}

#[test]
fn soft_roce_refusing_a_roce_v1_gid_says_so() {
    // Built from rdma_rxe's rxe_av_chk_attr format behind rxe_dbg_qp (SOURCE.txt).
    let v = json("kernel-rxe.log");
    assert_eq!(codes(&v), ["log-qp-transition"]);
    let f = finding(&v, "log-qp-transition");
    assert_eq!(f["root"]["line"], 2);
    assert_eq!(f["device"], "rxe1");
    assert_eq!(f["reporters"], serde_json::json!(["vm1"]));
    let why = f["message"].as_str().unwrap();
    assert!(
        why.contains("RoCE v1") && why.contains("RoCE v2 only"),
        "{why}"
    );
    for wrong in ["empty slot", "ARP", "beyond the port's GID table", "route"] {
        assert!(!why.contains(wrong), "{wrong} in {why}");
    }
    assert!(f["ruled_out"].to_string().contains("network path"));
    assert_eq!(
        commands(f),
        ["vm1: rdmactl check -d rxe1", "vm1: rdmactl gids -d rxe1"]
    );
    assert_eq!(v["events"][0]["library"], "kernel");
    assert_eq!(v["events"][0]["errno_name"], "EINVAL");
}
