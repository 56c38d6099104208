//! `rdmactl qos` on captured trees: each planted break of the RoCE QoS chain is named with
//! its cause and fix, and no other link is blamed. The qos-* trees (make-synthetic.sh) carry
//! the DCB reply bytes of tests/fixtures/dcb/ and `ethtool -S`/`-a` text under capture/.

use std::process::Command;

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn qos(tree: &str, extra: &[&str]) -> Run {
    run_cmd(tree, "qos", extra)
}

fn run_cmd(tree: &str, cmd: &str, extra: &[&str]) -> Run {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rdmactl"));
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("RDMACTL_")
            || [
                "NCCL_IB_TC",
                "NCCL_IB_SL",
                "UCX_IB_TRAFFIC_CLASS",
                "NO_COLOR",
                "COLUMNS",
            ]
            .contains(&key.to_string_lossy().as_ref())
        {
            c.env_remove(key);
        }
    }
    let out = c
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["--sysfs", &format!("tests/fixtures/sysfs/{tree}"), cmd])
        .args(extra)
        .output()
        .unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The finding codes of a `qos -j` run, in order.
fn codes(tree: &str, extra: &[&str]) -> (i32, Vec<String>) {
    let mut args = vec!["-j"];
    args.extend(extra);
    let r = qos(tree, &args);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect(&r.stderr);
    let codes = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap().to_string())
        .collect();
    (r.code, codes)
}

#[test]
fn a_correct_chain_is_ok_and_names_each_link() {
    let r = qos("qos-good", &[]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    assert!(r.stdout.contains("ok    qos-chain  mlx5_0/1  traffic class 106 (DSCP 26, ECN 2) from rdma_cm's default_roce_tos: DSCP 26 → priority 3"), "{}", r.stdout);
    assert!(
        r.stdout.contains("PFC           on priority 3"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("1 ok, 0 warning(s), 0 failure(s)"),
        "{}",
        r.stdout
    );
}

#[test]
fn pfc_on_another_priority_fails_with_the_pauses_that_show_it() {
    let (code, c) = codes("qos-pfc-wrong-priority", &[]);
    assert_eq!(code, 1);
    assert_eq!(c, ["qos-pfc-priority", "qos-pause-other-priority"]);
    let r = qos("qos-pfc-wrong-priority", &[]);
    let out = &r.stdout;
    assert!(out.contains("FAIL  qos-pfc-priority"), "{out}");
    assert!(out.contains("PFC is not enabled on priority 3"), "{out}");
    assert!(out.contains("(PFC is on priority 4)"), "{out}");
    assert!(
        out.contains("`dcb pfc set dev ens1f0np0 prio-pfc 3:on`"),
        "{out}"
    );
    // DSCP 34 is mapped to priority 4, where PFC is on: the fix names that traffic class.
    assert!(out.contains("traffic class 138"), "{out}");
    assert!(out.contains("priority 0: received 183442, sent 0"), "{out}");
    for wrong in ["qos-ecn", "qos-dscp-unmapped", "qos-pause-storm", "cable"] {
        assert!(!out.contains(wrong), "{wrong}: {out}");
    }
}

#[test]
fn an_unmapped_dscp_under_dscp_trust_warns_and_does_not_blame_pfc() {
    let (code, c) = codes("qos-dscp-unmapped", &[]);
    assert_eq!((code, c), (1, vec!["qos-dscp-unmapped".to_string()]));
    let out = qos("qos-dscp-unmapped", &[]).stdout;
    assert!(
        out.contains("DSCP 26 is not in the APP table of ens1f0np0"),
        "{out}"
    );
    assert!(out.contains("dscp-prio 26:3"), "{out}");
    assert!(out.contains("unknown: the priority of DSCP 26"), "{out}");
    assert!(
        !out.contains("PFC is not enabled") && !out.contains("ok    qos-chain"),
        "{out}"
    );
}

#[test]
fn ecn_off_on_the_roce_priority_and_marks_without_cnps() {
    let (code, c) = codes("qos-ecn-off", &[]);
    assert_eq!(
        (code, c),
        (
            1,
            vec!["qos-ecn-off".to_string(), "qos-ecn-no-cnp".to_string()]
        )
    );
    let out = qos("qos-ecn-off", &[]).stdout;
    assert!(
        out.contains("ECN (DCQCN) is off on priority 3 of ens1f0np0"),
        "{out}"
    );
    assert!(
        out.contains("ecn/roce_np/enable/3: 0, ecn/roce_rp/enable/3: 0"),
        "{out}"
    );
    assert!(out.contains("88213407 ECN-marked RoCE packets"), "{out}");
    assert!(
        !out.contains("qos-pfc") && !out.contains("receive queue"),
        "{out}"
    );
}

#[test]
fn a_pause_storm_from_this_host_and_global_pause_beside_pfc() {
    let (code, c) = codes("qos-pause-storm", &[]);
    assert_eq!(code, 1);
    assert_eq!(c, ["qos-chain", "qos-global-pause", "qos-pause-storm"]);
    let out = qos("qos-pause-storm", &[]).stdout;
    assert!(out.contains("FAIL  qos-pause-storm"), "{out}");
    assert!(out.contains("pause storm from ens1f0np0"), "{out}");
    assert!(out.contains("tx_pause_storm_error_events +3"), "{out}");
    assert!(
        out.contains("`ethtool -A ens1f0np0 rx off tx off`"),
        "{out}"
    );
    assert!(!out.contains("toward ens1f0np0"), "{out}");
}

#[test]
fn rnr_without_a_congestion_signal_is_an_empty_receive_queue() {
    let (code, c) = codes("qos-rnr-not-congestion", &[]);
    assert_eq!(
        (code, c),
        (
            1,
            vec![
                "qos-chain".to_string(),
                "qos-rnr-not-congestion".to_string()
            ]
        )
    );
    let out = qos("qos-rnr-not-congestion", &[]).stdout;
    assert!(out.contains("receiver not ready, not congestion"), "{out}");
    assert!(
        out.contains("out_of_buffer equals rnr_nak_retry_err (1543)"),
        "{out}"
    );
    assert!(out.contains("post receives before the peer sends"), "{out}");
    assert!(
        !out.contains("qos-ecn") && !out.contains("pause storm"),
        "{out}"
    );
}

#[test]
fn a_virtual_nic_is_not_checked_and_nothing_is_ok() {
    let r = qos("rxe-vm-basic", &[]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    assert!(
        r.stdout.contains("info  qos-not-manageable  rxe0/1"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("not checked: DCB (PFC, ETS, APP table, trust)"),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains("ok    qos"), "{}", r.stdout);
}

#[test]
fn the_job_traffic_class_is_judged_beside_the_cm_default() {
    // --tclass 0x48 is DSCP 18: unmapped in qos-good's APP table.
    let out = qos("qos-good", &["--tclass", "0x48"]).stdout;
    assert!(
        out.contains("traffic class 72 (DSCP 18, ECN 0) from --tclass"),
        "{out}"
    );
    assert!(out.contains("warn  qos-dscp-unmapped"), "{out}");
    assert!(
        out.contains("ok    qos-chain"),
        "the cm default still lines up: {out}"
    );
    let mut c = Command::new(env!("CARGO_BIN_EXE_rdmactl"));
    let r = c
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("NCCL_IB_TC", "106")
        .env("UCX_IB_TRAFFIC_CLASS", "72")
        .args(["--sysfs", "tests/fixtures/sysfs/qos-good", "qos", "-j"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    let chains = &v["ports"][0]["chains"];
    assert_eq!(chains[0]["tclass"], 106);
    assert_eq!(
        chains[0]["sources"],
        serde_json::json!([{"env": "NCCL_IB_TC"}, "cm_default"])
    );
    assert_eq!(chains[1]["tclass"], 72);
    assert_eq!(chains[1]["priority"], serde_json::Value::Null);
}

#[test]
fn bad_input_is_a_usage_error_that_names_what_exists() {
    let r = qos("qos-good", &["--tclass", "300"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    let r = qos("qos-good", &["mlx5_9"]);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("mlx5_0"), "{}", r.stderr);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    // An InfiniBand host has no RoCE port: said, not an error.
    let r = qos("ib-hca", &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("no RoCE port"), "{}", r.stdout);
}

#[test]
fn an_interval_judges_what_moved_not_the_totals() {
    // Nothing moves in a captured tree: the storm's totals are not an interval's storm.
    let r = qos("qos-pause-storm", &["--interval", "0.05", "-j"]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["findings"].as_array().unwrap().len(), 0, "{}", r.stdout);
    assert_eq!(v["ports"][0]["pauses"][3]["tx"], 0);
}

#[test]
fn doctor_shows_the_chain_s_failures_and_not_its_info() {
    let r = run_cmd("qos-pfc-wrong-priority", "doctor", &[]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(r.stdout.contains("FAIL  qos-pfc-priority"), "{}", r.stdout);
    let r = run_cmd("rxe-vm-basic", "doctor", &[]);
    assert!(!r.stdout.contains("qos-"), "{}", r.stdout);
}

/// qos-good with its DCB trusting PCP only (tests/fixtures/dcb/pcp-untagged.nl: PFC on 3)
/// and every GID on ens1f0np0 itself (no VLAN netdev): untagged RoCE has no PCP and lands
/// on priority 0, which PFC does not protect. The GIDs' netdevs decide it, and the finding
/// says so; with qos-good's VLAN 200 GIDs left in place the priority stays unknown.
#[test]
fn pcp_trust_with_untagged_roce_is_lossy_on_priority_0() {
    fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            let target = to.join(e.file_name());
            let kind = e.file_type().unwrap();
            if kind.is_symlink() {
                std::os::unix::fs::symlink(std::fs::read_link(e.path()).unwrap(), &target).unwrap();
            } else if kind.is_dir() {
                copy_tree(&e.path(), &target);
            } else {
                std::fs::copy(e.path(), &target).unwrap();
            }
        }
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path();
    copy_tree(&root.join("tests/fixtures/sysfs/qos-good"), tree);
    std::fs::copy(
        root.join("tests/fixtures/dcb/pcp-untagged.nl"),
        tree.join("capture/dcb/ens1f0np0.nl"),
    )
    .unwrap();
    std::fs::write(tree.join("class/net/ens1f0np0/qos/trust"), "pcp\n").unwrap();
    let run = || {
        let out = Command::new(env!("CARGO_BIN_EXE_rdmactl"))
            .env_remove("RDMACTL_SYSFS")
            .env_remove("NCCL_IB_TC")
            .env_remove("UCX_IB_TRAFFIC_CLASS")
            .env_remove("NO_COLOR")
            .arg("--sysfs")
            .arg(tree)
            .arg("qos")
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    // VLAN 200's GIDs beside the untagged ones: the priority is the tag's, unknown.
    let (code, out) = run();
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("qos-pfc-priority"), "{out}");
    // Every GID on ens1f0np0: untagged.
    let ndevs = tree.join("class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs");
    for e in std::fs::read_dir(&ndevs).unwrap() {
        std::fs::write(e.unwrap().path(), "ens1f0np0\n").unwrap();
    }
    let (code, out) = run();
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("FAIL  qos-pfc-priority  mlx5_0/1  PFC is not enabled on priority 0, where traffic class 106"),
        "{out}"
    );
    assert!(
        out.contains("untagged RoCE: every GID's netdev is ens1f0np0 itself (no VLAN netdev), so frames carry no PCP and PCP trust puts them on priority 0"),
        "{out}"
    );
    assert!(!out.contains("(APP table)"), "{out}");
}
