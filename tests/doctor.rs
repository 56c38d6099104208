//! `rdmactl doctor` on captured trees. With --sysfs the host checks (/dev, libibverbs,
//! memlock) are skipped, so these outputs depend only on the fixture.

use assert_cmd::Command;
use predicates::prelude::*;

fn doctor(tree: &str) -> assert_cmd::assert::Assert {
    Command::cargo_bin("rdmactl")
        .unwrap()
        .env_remove("NO_COLOR")
        .env_remove("RDMACTL_SYSFS")
        .arg("--sysfs")
        .arg(format!(
            "{}/tests/fixtures/sysfs/{tree}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .arg("doctor")
        .assert()
}

#[test]
fn healthy_rxe_capture_passes() {
    doctor("rxe-veth-basic")
        .success()
        .stdout(predicate::str::contains(
            "ok    ipv4-gid    rxe0/1  IPv4-mapped GID at index 1 (192.168.77.1)",
        ))
        .stdout(predicate::str::contains("0 failure(s)"));
}

#[test]
fn down_veth_is_named_with_its_fix() {
    // One root cause, one failure: the netdev's state is the port-state failure's evidence,
    // not a second failure.
    doctor("rxe-veth-vlan-ipv6-down")
        .code(1)
        .stdout(predicate::str::contains(
            "FAIL  port-state  rxe1/1  port is DOWN: a RoCE port follows its netdev, so veth1 has no link",
        ))
        .stdout(predicate::str::contains("evidence: class/net/veth1/operstate down"))
        .stdout(predicate::str::contains("fix: bring the interface up: `ip link set veth1 up`"))
        .stdout(predicate::str::contains("evidence: class/net/veth0/operstate lowerlayerdown"))
        .stdout(predicate::str::contains("FAIL  netdev").not())
        .stdout(predicate::str::contains("3 ok, 0 warning(s), 2 failure(s)"));
}

#[test]
fn infiniband_lid_problems() {
    doctor("ib-hca")
        .code(1)
        .stdout(predicate::str::contains(
            "ok    lid         mlx5_0/1  LID 700, SM LID 1",
        ))
        // The permissive LID of a DOWN port follows from the port state: evidence, not a
        // failure of its own.
        .stdout(predicate::str::contains(
            "evidence: lid 0xffff, sm_lid 0x0: no usable address while the port is DOWN",
        ))
        .stdout(predicate::str::contains("FAIL  lid").not())
        .stdout(predicate::str::contains("1 failure(s)"));
}

#[test]
fn ipv6_only_port_warns_about_ipv4_defaults() {
    doctor("ipv6-only")
        .success()
        .stdout(predicate::str::contains("warn  ipv4-gid"))
        .stdout(predicate::str::contains("NCCL_IB_ADDR_FAMILY=AF_INET6"));
}

#[test]
fn no_rdma_at_all_explains_how_to_load_a_driver() {
    // No device is exit 4, as for every other command.
    doctor("no-infiniband")
        .code(4)
        .stdout(predicate::str::contains("no RDMA support in the kernel"))
        .stdout(predicate::str::contains(
            "modprobe rdma_rxe; rdma link add rxe0 type rxe netdev eth0",
        ));
}

#[test]
fn incomplete_trees_are_not_failures() {
    // procfs-testdata has no lid files: unknown is not broken.
    doctor("procfs-testdata")
        .success()
        .stdout(predicate::str::contains("FAIL").not());
}

#[test]
fn json_counts_match_findings() {
    let out = Command::cargo_bin("rdmactl")
        .unwrap()
        .env_remove("RDMACTL_SYSFS")
        .args(["-j", "--sysfs"])
        .arg(format!(
            "{}/tests/fixtures/sysfs/port-down",
            env!("CARGO_MANIFEST_DIR")
        ))
        .arg("doctor")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let findings = v["findings"].as_array().unwrap();
    let fails = findings.iter().filter(|f| f["severity"] == "fail").count();
    assert_eq!(v["fail"], fails);
    assert!(fails > 0);
    assert!(findings
        .iter()
        .all(|f| f["code"].is_string() && f["message"].is_string()));
    // A device is `device` (with `port` for a port), as in every command; only the host
    // keeps `subject`.
    for f in findings {
        match f["code"].as_str().unwrap() {
            "kernel" => assert_eq!(
                (&f["subject"], &f["device"]),
                (&serde_json::json!("host"), &serde_json::Value::Null),
                "{f}"
            ),
            "port-state" => {
                assert!(f["device"].is_string() && f["port"].is_u64(), "{f}");
                assert_eq!(f["subject"], serde_json::Value::Null, "{f}");
            }
            _ => assert!(f["subject"] == "host" || f["device"].is_string(), "{f}"),
        }
    }
}

#[test]
fn unknown_device_names_the_real_ones() {
    Command::cargo_bin("rdmactl")
        .unwrap()
        .env_remove("RDMACTL_SYSFS")
        .arg("--sysfs")
        .arg(format!(
            "{}/tests/fixtures/sysfs/rxe-veth-basic",
            env!("CARGO_MANIFEST_DIR")
        ))
        .args(["doctor", "-d", "mlx5_9"])
        .assert()
        .code(3)
        .stderr(predicate::str::contains(
            "no device 'mlx5_9'; devices: rxe0, rxe1",
        ));
}

#[test]
fn simulated_infiniband_without_link_layer_is_checked_as_infiniband() {
    doctor("ibsim")
        .success()
        .stdout(predicate::str::contains(
            "ok    lid         ibsim0/1  LID 2, SM LID 1",
        ))
        .stdout(predicate::str::contains("0 failure(s)"));
}

/// Soft-iWARP: the port is checked as iWARP (rdma_cm only, its GID the MAC), and no RoCE
/// rule speaks about it: no IPv4-mapped GID wanted, no RoCE MTU, no "full" one-slot table.
#[test]
fn iwarp_gets_no_roce_gid_rule() {
    doctor("siw-ens3")
        .success()
        .stdout(predicate::str::contains(
            "info  iwarp       siw0/1  iWARP port: it connects only through rdma_cm",
        ))
        .stdout(predicate::str::contains("rdmactl pingpong --cm"))
        .stdout(predicate::str::contains(
            "ok    netdev      siw0/1  netdev ens3 is up",
        ))
        .stdout(predicate::str::contains("ipv4-gid").not())
        .stdout(predicate::str::contains("RoCE MTU").not())
        .stdout(predicate::str::contains("gid-table").not())
        .stdout(predicate::str::contains("0 warning(s), 0 failure(s)"));
}

/// No device: exit 4, and the fix names a netdev that is up.
#[test]
fn no_devices_exit_4_and_name_an_up_netdev() {
    doctor("no-devices")
        .code(4)
        .stdout(predicate::str::contains(
            "the RDMA core is loaded but no device is registered",
        ))
        .stdout(predicate::str::contains(
            "modprobe rdma_rxe; rdma link add rxe0 type rxe netdev eth0",
        ));
}

/// rdma_rxe already loaded: the fix is only `rdma link add`, not `modprobe` again.
#[test]
fn rxe_loaded_without_a_device_says_add_one() {
    doctor("rxe-loaded-no-device")
        .code(4)
        .stdout(predicate::str::contains("modprobe").not())
        .stdout(predicate::str::contains(
            "`rdma link add rxe0 type rxe netdev enp1s0`",
        ))
        .stdout(predicate::str::contains("module/rdma_rxe exists"));
}
