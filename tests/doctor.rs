//! `rdmactl doctor` on captured trees. With --sysfs the host checks (/dev, libibverbs,
//! memlock) are skipped and named as skipped, so these outputs depend only on the fixture;
//! --procfs adds the captured /proc (tests/fixtures/procfs/).

use assert_cmd::Command;
use predicates::prelude::*;

fn doctor(tree: &str) -> assert_cmd::assert::Assert {
    Command::cargo_bin("rdmactl")
        .unwrap()
        .env_remove("NO_COLOR")
        .env_remove("RDMACTL_SYSFS")
        .env_remove("RDMACTL_PROCFS")
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
            "FAIL  port-state  rxe1/1  rxe1/1 is DOWN: a RoCE port follows its netdev, and veth1 is down",
        ))
        .stdout(predicate::str::contains("evidence: netdev veth1 operstate down"))
        .stdout(predicate::str::contains("fix: bring the interface up: `ip link set veth1 up`"))
        .stdout(predicate::str::contains("evidence: netdev veth0 operstate lowerlayerdown"))
        .stdout(predicate::str::contains("FAIL  netdev").not())
        .stdout(predicate::str::contains("3 ok, 1 info, 0 warning(s), 2 failure(s)"));
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
        .env_remove("RDMACTL_PROCFS")
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
        .env_remove("RDMACTL_PROCFS")
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

fn rdmactl_on(tree: &str, args: &[&str]) -> assert_cmd::assert::Assert {
    Command::cargo_bin("rdmactl")
        .unwrap()
        .env_remove("NO_COLOR")
        .env_remove("RDMACTL_SYSFS")
        .env_remove("RDMACTL_PROCFS")
        .arg("--sysfs")
        .arg(format!(
            "{}/tests/fixtures/sysfs/{tree}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .args(args)
        .assert()
}

/// `--save-expect` on a good host writes a manifest the same host meets; an edited one that
/// wants what the host cannot have fails with the expectation's code, expected against found.
#[test]
fn a_saved_manifest_passes_and_an_edited_one_fails_with_its_code() {
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("expect.toml");
    let saved_s = saved.to_str().unwrap();
    rdmactl_on("rxe-veth-basic", &["doctor", "--save-expect", saved_s])
        .success()
        .stderr(format!(
            "rdmactl: wrote {saved_s}: 2 device(s), 2 port(s); check the other hosts with `rdmactl doctor --expect {saved_s}`\n"
        ));
    // A host with a DOWN port is not a good picture: said as it is saved.
    let down = dir.path().join("down.toml");
    rdmactl_on(
        "port-down",
        &["doctor", "--save-expect", down.to_str().unwrap()],
    )
    .code(1)
    .stderr(predicate::str::contains(
        "rdmactl: note: mlx5_0/1 is DOWN, and the manifest now expects that;",
    ));
    let text = std::fs::read_to_string(&saved).unwrap();
    assert!(text.contains("ipv4_gid_index = 1"), "{text}");
    rdmactl_on("rxe-veth-basic", &["doctor", "--expect", saved_s])
        .success()
        .stdout(predicate::str::contains(
            "ok    expect-port-rate   rxe0/1  rate 10 Gb/sec (1X FDR10), at least 10 Gb/s as expected",
        ))
        .stdout(predicate::str::contains("0 failure(s)"));

    let edited = dir.path().join("edited.toml");
    std::fs::write(
        &edited,
        text.replace("min_rate_gbps = 10.0", "min_rate_gbps = 100"),
    )
    .unwrap();
    rdmactl_on(
        "rxe-veth-basic",
        &["doctor", "--expect", edited.to_str().unwrap()],
    )
    .code(1)
    .stdout(predicate::str::contains(
        "FAIL  expect-port-rate   rxe0/1  rate 10 Gb/sec (1X FDR10), expected at least 100 Gb/s",
    ))
    .stdout(predicate::str::contains(
        "evidence: expected: min_rate_gbps = 100",
    ))
    .stdout(predicate::str::contains("2 failure(s)"));
    rdmactl_on(
        "rxe-veth-basic",
        &[
            "doctor",
            "--expect",
            edited.to_str().unwrap(),
            "--format",
            "nhc",
        ],
    )
    .code(1)
    .stdout("rdmactl: rxe0/1 expect-port-rate (+1 more)\n");

    // The same manifest as JSON reads the same.
    let json = dir.path().join("expect.json");
    rdmactl_on(
        "rxe-veth-basic",
        &["doctor", "--save-expect", json.to_str().unwrap()],
    )
    .success();
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["device"][1]["port"][0]["netdev_mtu"], 1500, "{v}");
    rdmactl_on(
        "rxe-veth-basic",
        &["doctor", "--expect", json.to_str().unwrap()],
    )
    .success()
    .stdout(predicate::str::contains("ok    expect-ipv4-gid    rxe1/1"));
}

#[test]
fn an_unknown_manifest_key_is_refused_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        "devices = 2\n[[device]]\nname = \"rxe0\"\nfirmwre = \"1\"\n",
    )
    .unwrap();
    let bad = bad.to_str().unwrap();
    rdmactl_on("rxe-veth-basic", &["doctor", "--expect", bad])
        .code(2)
        .stderr(predicate::str::contains("line 4: unknown field `firmwre`"));
    rdmactl_on(
        "rxe-veth-basic",
        &["doctor", "--expect", bad, "--format", "nagios"],
    )
    .code(3)
    .stdout(predicate::str::starts_with("RDMACTL UNKNOWN - --expect "))
    .stdout(predicate::str::contains("line 4: unknown field `firmwre`"));
    // A broken check must not pass as healthy under NHC or Slurm.
    rdmactl_on(
        "rxe-veth-basic",
        &["doctor", "--expect", bad, "--format", "nhc"],
    )
    .code(1)
    .stdout("rdmactl: check failed to run; see rdmactl doctor\n");
}

#[test]
fn health_check_formats_on_a_down_port() {
    rdmactl_on("rxe-veth-vlan-ipv6-down", &["doctor", "--format", "nagios"])
        .code(2)
        .stdout(predicate::str::starts_with(
            "RDMACTL CRITICAL - port-state rxe0/1: rxe0/1 is DOWN: a RoCE port follows its netdev, and veth0 has no carrier (its link partner is down) (+1 more) | ports_active=0;;;0;2 ports=2;;;0 failures=2;;;0",
        ))
        .stdout(predicate::str::contains(
            "\nFAIL port-state rxe1/1: rxe1/1 is DOWN: a RoCE port follows its netdev, and veth1 is down\n",
        ));
    rdmactl_on("rxe-veth-basic", &["doctor", "--format", "nagios"])
        .code(0)
        .stdout(predicate::str::starts_with(
            "RDMACTL OK - 2 of 2 port(s) ACTIVE, 9 check(s) passed | ports_active=2;;;0;2",
        ));
    rdmactl_on("rxe-veth-vlan-ipv6-down", &["doctor", "--format", "nhc"])
        .code(1)
        .stdout("rdmactl: rxe0/1 port-state (+1 more)\n");
    rdmactl_on("rxe-veth-basic", &["doctor", "--format", "nhc"])
        .code(0)
        .stdout("");
    let out = rdmactl_on("rxe-veth-vlan-ipv6-down", &["doctor", "--format", "junit"]).code(1);
    let xml = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"rdmactl\" tests=\"6\" failures=\"2\""), "{xml}");
    // The capture's line of checks not run is a passed test case that says so.
    assert_eq!(xml.matches("<testcase ").count(), 6, "{xml}");
    assert!(
        xml.contains("<testcase classname=\"rdmactl.doctor.capture\" name=\"capture host\">"),
        "{xml}"
    );
    assert!(xml.contains("<failure type=\"port-state\" message=\"rxe1/1 is DOWN: a RoCE port follows its netdev, and veth1 is down\">evidence: rxe1/1 state DOWN, phys_state DISABLED\nevidence: netdev veth1 operstate down\nfix: bring the interface up: `ip link set veth1 up`\n</failure>"), "{xml}");
    rdmactl_on("rxe-veth-basic", &["-j", "doctor", "--format", "junit"])
        .code(2)
        .stderr(predicate::str::contains("-j and --format junit: give one"));
}

#[test]
fn wait_returns_at_once_on_active_ports_and_times_out_with_the_reason() {
    let start = std::time::Instant::now();
    rdmactl_on("rxe-veth-basic", &["wait", "--timeout", "5"])
        .success()
        .stdout(predicate::str::starts_with(
            "2 port(s) ACTIVE after 0.0 s: rxe0/1, rxe1/1",
        ));
    assert!(start.elapsed().as_secs_f64() < 4.0, "{:?}", start.elapsed());

    let start = std::time::Instant::now();
    rdmactl_on("rxe-veth-vlan-ipv6-down", &["wait", "rxe1/1", "--timeout", "0.3"])
        .code(1)
        .stdout(predicate::str::is_match(r"^gave up after 0\.\d s: 1 of 1 port\(s\) not ACTIVE\n").unwrap())
        .stdout(predicate::str::contains(
            "FAIL  port-state  rxe1/1  rxe1/1 is DOWN: a RoCE port follows its netdev, and veth1 is down",
        ))
        .stdout(predicate::str::contains("evidence: netdev veth1 operstate down"))
        .stdout(predicate::str::contains("fix: bring the interface up: `ip link set veth1 up`"))
        // Only the port asked about.
        .stdout(predicate::str::contains("rxe0/1").not());
    let took = start.elapsed().as_secs_f64();
    assert!(took >= 0.3, "{took}");

    rdmactl_on(
        "rxe-veth-basic",
        &["-j", "wait", "mlx5_0", "--timeout", "0"],
    )
    .code(1)
    .stdout(predicate::str::contains(
        "\"code\": \"wait-device-missing\"",
    ))
    .stdout(predicate::str::contains(
        "\"missing\": [\n    \"mlx5_0\"\n  ]",
    ));

    // Issue 39: a port its device does not have never appears: at once, exit 3, naming
    // the ports there are (a missing device may still appear at boot, and is waited for).
    let start = std::time::Instant::now();
    rdmactl_on("rxe-veth-basic", &["wait", "rxe0/7", "--timeout", "30"])
        .code(3)
        .stderr("rdmactl: no port 7 on rxe0; ports: 1\n");
    assert!(
        start.elapsed().as_secs_f64() < 10.0,
        "{:?}",
        start.elapsed()
    );
    // Not on a terminal (a boot's journal), a start line says what is awaited.
    rdmactl_on(
        "rxe-veth-vlan-ipv6-down",
        &["wait", "rxe1/1", "--timeout", "0.2"],
    )
    .code(1)
    .stderr(predicate::str::starts_with("rdmactl: waiting"))
    .stderr(predicate::str::contains("rxe1/1 DOWN"));
}

/// The GPU path (tests/fixtures/make-gpu-path.py): a PCIe switch with ACS redirecting
/// between mlx5_0 and a GPU, mlx5_1 trained at 8 GT/s x8, a GPU on another root complex of
/// mlx5_1's NUMA node, the IOMMU translating, nvidia_peermem loaded but not registered.
#[test]
fn gpu_path_problems_are_each_named_with_their_fix() {
    doctor("gpu-path-acs")
        .code(1)
        .stdout(predicate::str::contains(
            "ok    pcie-link   mlx5_0            mlx5_0 (0000:03:00.0) runs at 16 GT/s x16, the most its links allow",
        ))
        .stdout(predicate::str::contains(
            "warn  pcie-link   mlx5_1            mlx5_1 runs at 8 GT/s x8 of 16 GT/s x16: reseat, or check the slot",
        ))
        .stdout(predicate::str::contains(
            "evidence: 0000:81:00.0 (below 0000:80:01.0): runs at 8 GT/s x8; 0000:81:00.0 can do 16 GT/s x16, 0000:80:01.0 can do 16 GT/s x16",
        ))
        .stdout(predicate::str::contains(
            "ok    gpu-path    gpu 0000:04:00.0  closest HCA mlx5_0, PIX (one PCIe switch): NCCL_IB_HCA=mlx5_0 UCX_NET_DEVICES=mlx5_0:1",
        ))
        .stdout(predicate::str::contains(
            "warn  pcie-acs    gpu 0000:04:00.0  ACS redirects peer-to-peer traffic on 0000:02:10.0, 0000:02:08.0 between mlx5_0 and GPU 0000:04:00.0",
        ))
        .stdout(predicate::str::contains(
            "evidence: 0000:02:08.0: ACS at 0x148, ACSCtl 0x001d (SrcValid+ ReqRedir+ CmpltRedir+ UpstreamFwd+)",
        ))
        .stdout(predicate::str::contains("`setpci -s 0000:02:08.0 ECAP_ACS+6.w=0000`"))
        // The switch's upstream port and the root port are not on the P2P path.
        .stdout(predicate::str::contains("0000:01:00.0: ACS").not())
        .stdout(predicate::str::contains("0000:00:01.0: ACS").not())
        .stdout(predicate::str::contains(
            "warn  gpu-path    gpu 0000:c1:00.0  closest HCA mlx5_1, NODE (another root complex of the same NUMA node)",
        ))
        .stdout(predicate::str::contains(
            "evidence: mlx5_0 0000:03:00.0 (NUMA node 0, cpus 0-31): SYS (across NUMA nodes)",
        ))
        .stdout(predicate::str::contains(
            "warn  iommu       host              the IOMMU translates DMA of mlx5_0, mlx5_1, GPU 0000:04:00.0, GPU 0000:c1:00.0",
        ))
        .stdout(predicate::str::contains("evidence: mlx5_0: iommu_group 4, type DMA-FQ"))
        .stdout(predicate::str::contains("boot with `iommu=pt`"))
        .stdout(predicate::str::contains(
            "FAIL  gpudirect   host              nvidia_peermem is loaded but not registered in kernel/mm/memory_peers: GPUDirect RDMA is off",
        ))
        .stdout(predicate::str::contains("evidence: kernel/mm/memory_peers: empty"))
        // The ACS path is only judged where the GPU's best path is within PCIe.
        .stdout(predicate::str::contains("pcie-acs    gpu 0000:c1:00.0").not())
        .stdout(predicate::str::contains("7 ok, 1 info, 4 warning(s), 1 failure(s)"));
}

#[test]
fn gpu_path_fixed_host_passes() {
    doctor("gpu-path-ok")
        .success()
        .stdout(predicate::str::contains(
            "ok    pcie-link   mlx5_1            mlx5_1 (0000:81:00.0) runs at 16 GT/s x16, the most its links allow",
        ))
        .stdout(predicate::str::contains(
            "ok    pcie-acs    gpu 0000:04:00.0  no ACS redirect on the bridges between mlx5_0 and GPU 0000:04:00.0",
        ))
        .stdout(predicate::str::contains("ok    iommu       host              no IOMMU translates DMA"))
        .stdout(predicate::str::contains(
            "ok    gpudirect   host              nvidia_peermem is loaded and registered",
        ))
        // The GPU on the other root complex stays a warning: the fix is hardware.
        .stdout(predicate::str::contains("warn  gpu-path    gpu 0000:c1:00.0"))
        .stdout(predicate::str::contains("warn  pcie-").not())
        .stdout(predicate::str::contains("11 ok, 1 info, 1 warning(s), 0 failure(s)"));
}

#[test]
fn gpu_path_without_root_says_so_and_never_guesses_acs() {
    doctor("gpu-path-noroot")
        .code(1)
        .stdout(predicate::str::contains(
            "PCI config space past 64 bytes (captured without root: link registers, ACS)",
        ))
        .stdout(predicate::str::contains(
            "info  pcie-acs    gpu 0000:04:00.0  ACS of 0000:02:10.0, 0000:02:08.0 not readable without root: run as root",
        ))
        .stdout(predicate::str::contains(
            "evidence: 0000:02:08.0: config read as 64 bytes, the extended capabilities start at 0x100",
        ))
        .stdout(predicate::str::contains("ACSCtl").not())
        .stdout(predicate::str::contains("no ACS redirect").not())
        // sysfs still gives the link without root.
        .stdout(predicate::str::contains(
            "ok    pcie-link   mlx5_0            mlx5_0 (0000:03:00.0) runs at 16 GT/s x16",
        ))
        .stdout(predicate::str::contains(
            "FAIL  gpudirect   host              nvidia_peermem is not loaded: GPUDirect RDMA is off",
        ))
        .stdout(predicate::str::contains(
            "evidence: kernel/mm/memory_peers: absent (a kernel without the peer-memory API)",
        ));
}

#[test]
fn gpu_path_findings_in_json() {
    let out = rdmactl_on("gpu-path-acs", &["-j", "doctor"]).code(1);
    let v: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let findings = v["findings"].as_array().unwrap();
    let of = |code: &str| -> Vec<&serde_json::Value> {
        findings.iter().filter(|f| f["code"] == code).collect()
    };
    let acs = of("pcie-acs");
    assert_eq!(acs.len(), 1, "{acs:#?}");
    assert_eq!(acs[0]["severity"], "warn");
    assert_eq!(acs[0]["subject"], "gpu 0000:04:00.0");
    assert!(acs[0]["fix"]
        .as_str()
        .unwrap()
        .contains("setpci -s 0000:02:10.0 ECAP_ACS+6.w=0000"));
    let links = of("pcie-link");
    assert_eq!(
        links
            .iter()
            .map(|f| (
                f["device"].as_str().unwrap(),
                f["severity"].as_str().unwrap()
            ))
            .collect::<Vec<_>>(),
        [("mlx5_0", "ok"), ("mlx5_1", "warn")]
    );
    assert_eq!(of("gpu-path").len(), 2);
    assert_eq!(of("iommu")[0]["severity"], "warn");
    assert_eq!(of("gpudirect")[0]["severity"], "fail");
}

/// A tree whose devices are not PCI functions (software devices, trees captured without
/// `devices/`) gets no GPU-path finding at all.
#[test]
fn no_pci_function_no_gpu_path_findings() {
    for tree in ["rxe-veth-basic", "ib-hca"] {
        doctor(tree)
            .stdout(predicate::str::contains("pcie-").not())
            .stdout(predicate::str::contains("gpu-path").not())
            .stdout(predicate::str::contains("gpudirect").not());
    }
}

fn fixture(kind: &str, name: &str) -> String {
    format!(
        "{}/tests/fixtures/{kind}/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// A capture says, in one info line, which checks it cannot support; without --procfs the
/// memlock limit is among them, not passed.
#[test]
fn a_capture_names_the_checks_it_cannot_support() {
    doctor("rxe-veth-basic")
        .success()
        .stdout(predicate::str::contains(
            "info  capture     host    captured host: not checked: /dev/infiniband nodes, libibverbs and its providers, verbs queries (active MTU), IP addresses and ARP sysctls (same subnet, ARP flux), network namespace, memlock limit and loaded modules (no --procfs)",
        ))
        .stdout(predicate::str::contains("memlock     host").not());
}

/// `--sysfs sos/sys --procfs sos/proc doctor`: the captured limit is judged (Debian's 8 MiB
/// for a user without CAP_IPC_LOCK is small), and the capture line no longer lists it. The
/// environment variable works as the flag does.
#[test]
fn procfs_judges_the_captured_memlock_limit() {
    let procfs = fixture("procfs", "sos-user");
    for by_env in [false, true] {
        let mut cmd = Command::cargo_bin("rdmactl").unwrap();
        cmd.env_remove("NO_COLOR")
            .env_remove("RDMACTL_PROCFS")
            .env("RDMACTL_SYSFS", fixture("sysfs", "rxe-veth-basic"));
        if by_env {
            cmd.env("RDMACTL_PROCFS", &procfs);
        } else {
            cmd.args(["--procfs", &procfs]);
        }
        let out = cmd.arg("doctor").assert().success();
        let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
        assert!(
            text.contains(
                "warn  memlock     host    locked-memory limit 8 MiB holds rdmactl's default runs"
            ),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "{procfs}/self/limits and self/status: the process that took the capture"
            )),
            "{text}"
        );
        assert!(
            text.contains("RLIMIT_MEMLOCK soft limit 8 MiB; CAP_IPC_LOCK not held"),
            "{text}"
        );
        assert!(
            text.contains("captured host: not checked: /dev/infiniband nodes, libibverbs and its providers, verbs queries (active MTU), IP addresses and ARP sysctls (same subnet, ARP flux), network namespace\n"),
            "{text}"
        );
    }
}

/// The captured /proc/modules answers whether rdma_rxe is loaded when sysfs has no
/// module/ directory: the fix is `rdma link add`, not modprobe.
#[test]
fn procfs_modules_say_rxe_is_loaded() {
    rdmactl_on(
        "no-devices",
        &["--procfs", &fixture("procfs", "sos-user"), "doctor"],
    )
    .code(4)
    .stdout(predicate::str::contains("modprobe").not())
    .stdout(predicate::str::contains("sos-user/modules lists rdma_rxe"));
}

/// --procfs describes the host --sysfs does: alone it would mix a capture with this host.
#[test]
fn procfs_without_sysfs_is_refused() {
    Command::cargo_bin("rdmactl")
        .unwrap()
        .env_remove("RDMACTL_SYSFS")
        .env_remove("RDMACTL_PROCFS")
        .args(["--procfs", "/tmp/sos/proc", "doctor"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "--procfs /tmp/sos/proc: give the same host's captured sysfs with --sysfs",
        ));
    rdmactl_on(
        "rxe-veth-basic",
        &["--procfs", "/nonexistent/proc", "doctor"],
    )
    .code(2)
    .stderr(predicate::str::contains(
        "--procfs /nonexistent/proc: not a directory",
    ));
}

/// `--expect`'s modules on a capture: without `module/` or --procfs the capture cannot tell;
/// with --procfs its captured `modules` answers.
#[test]
fn expected_modules_are_read_from_the_captured_proc() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("expect.toml");
    std::fs::write(&manifest, "modules = [\"rdma_rxe\", \"mlx5_ib\"]\n").unwrap();
    let manifest = manifest.display().to_string();
    let without = rdmactl_on("rxe-veth-basic", &["doctor", "--expect", &manifest]);
    let text = String::from_utf8(without.get_output().stdout.clone()).unwrap();
    assert!(text.contains("not in the captured tree"), "{text}");
    let procfs = fixture("procfs", "sos-user");
    let with = rdmactl_on(
        "rxe-veth-basic",
        &["--procfs", &procfs, "doctor", "--expect", &manifest],
    )
    .code(1);
    let text = String::from_utf8(with.get_output().stdout.clone()).unwrap();
    assert!(
        text.contains(&format!("{procfs}/modules")),
        "the source names the captured file: {text}"
    );
    let line = |module: &str| {
        text.lines()
            .find(|l| l.contains("expect-module") && l.contains(module))
            .unwrap_or_else(|| panic!("no expect-module line for {module}: {text}"))
            .to_string()
    };
    assert!(line("rdma_rxe").starts_with("ok "), "{text}");
    assert!(line("mlx5_ib").starts_with("FAIL "), "{text}");
}

/// A captured tree is another host's: where this process runs (a container, its /dev, its
/// /etc/nccl.conf, its NCCL variables) says nothing about it, so no container finding is
/// made, even with a variable set that a container finding would judge.
#[test]
fn a_captured_tree_gets_no_container_findings() {
    Command::cargo_bin("rdmactl")
        .unwrap()
        .env_remove("RDMACTL_SYSFS")
        .env("NCCL_IB_HCA", "mlx5_9")
        .env("KUBERNETES_SERVICE_HOST", "10.0.0.1")
        .arg("--sysfs")
        .arg(format!(
            "{}/tests/fixtures/sysfs/rxe-veth-basic",
            env!("CARGO_MANIFEST_DIR")
        ))
        .arg("doctor")
        .assert()
        .success()
        .stdout(predicate::str::contains("ok    kernel"))
        .stdout(
            predicate::str::is_match(
                "(?m)^\\S+ +(container|device-nodes|job-memlock|rdma-netns|namespace-gids|cma|sys-read-only|nccl-conf|env-nccl-ib-hca) ",
            )
            .unwrap()
            .not(),
        );
}

/// A copy of a fixture tree to change under a test (symlinks copied as links).
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

fn doctor_in(tree: &std::path::Path, args: &[&str]) -> assert_cmd::assert::Assert {
    Command::cargo_bin("rdmactl")
        .unwrap()
        .env_remove("NO_COLOR")
        .env_remove("RDMACTL_SYSFS")
        .env_remove("RDMACTL_PROCFS")
        .arg("--sysfs")
        .arg(tree)
        .arg("doctor")
        .args(args)
        .assert()
}

/// rxe-counters holds two non-zero error counters since the last reset. A health check
/// with state records them once (OK, not WARNING), passes while they stay, warns with the
/// delta when one grows, and passes again on the run after.
#[test]
fn a_health_check_warns_on_counters_that_grow_not_on_old_totals() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    copy_tree(
        std::path::Path::new(&format!(
            "{}/tests/fixtures/sysfs/rxe-counters",
            env!("CARGO_MANIFEST_DIR")
        )),
        &tree,
    );
    let state = dir.path().join("state/doctor.json");
    let state_arg = state.to_str().unwrap();
    let nagios = ["--format", "nagios", "--state", state_arg];
    // Without state (a person's run) the totals are information.
    doctor_in(&tree, &[])
        .success()
        .stdout(predicate::str::contains(
            "info  counters    rxe0/1  2 error counters are non-zero since the last reset",
        ));
    doctor_in(&tree, &nagios)
        .code(0)
        .stdout(predicate::str::starts_with("RDMACTL OK"));
    assert!(std::fs::read_to_string(&state)
        .unwrap()
        .contains("hw_counters/retry_exceeded_err"));
    doctor_in(&tree, &nagios)
        .code(0)
        .stdout(predicate::str::starts_with("RDMACTL OK"));
    let file = tree.join("class/infiniband/rxe0/ports/1/hw_counters/link_downed");
    std::fs::write(&file, "1\n").unwrap();
    doctor_in(&tree, &nagios)
        .code(1)
        .stdout(predicate::str::starts_with(
            "RDMACTL WARNING - counters rxe0/1: 1 error counter grew in the ",
        ))
        .stdout(predicate::str::contains("link_downed +1"));
    doctor_in(&tree, &nagios)
        .code(0)
        .stdout(predicate::str::starts_with("RDMACTL OK"));
}

/// A state file that cannot be written is said once, with its path and errno, as a
/// warning; the check's own verdict stands and nothing is fatal.
#[test]
fn an_unwritable_state_file_is_one_warning_with_path_and_errno() {
    let dir = tempfile::tempdir().unwrap();
    // A regular file where the state's directory should be: ENOTDIR (or EEXIST), by name.
    let blocker = dir.path().join("not-a-dir");
    std::fs::write(&blocker, "").unwrap();
    let state = blocker.join("doctor.json");
    let out = doctor_in(
        std::path::Path::new(&format!(
            "{}/tests/fixtures/sysfs/rxe-counters",
            env!("CARGO_MANIFEST_DIR")
        )),
        &["--format", "nagios", "--state", state.to_str().unwrap()],
    )
    .code(1)
    .get_output()
    .stdout
    .clone();
    let out = String::from_utf8(out).unwrap();
    assert!(
        out.starts_with(
            "RDMACTL WARNING - counters-state host: the counters' state was not saved to "
        ),
        "{out}"
    );
    assert!(out.contains(&format!("{}", state.display())), "{out}");
    assert!(
        out.contains("(17, File exists)") || out.contains("(20, Not a directory)"),
        "{out}"
    );
    assert_eq!(out.matches("counters-state").count(), 2, "{out}");
}

/// A port `state` file that cannot be read (EISDIR in `unreadable`, as EACCES would be) or
/// is gone is the cause: the file and its errno, never the cable, while the netdev's
/// `operstate up` stays as evidence. check gives the same answer (one rule).
#[test]
fn an_unreadable_or_absent_port_state_names_the_file_not_the_cable() {
    let out = rdmactl_on("unreadable", &["doctor"])
        .code(1)
        .get_output()
        .stdout
        .clone();
    let out = String::from_utf8(out).unwrap();
    let line = out.lines().find(|l| l.contains("port-state")).unwrap();
    assert!(
        line.contains("irdma0/1's state is not known: its state file could not be read: ")
            && line.contains("/class/infiniband/irdma0/ports/1/state: EISDIR (21, Is a directory)"),
        "{out}"
    );
    assert!(
        out.contains("evidence: netdev ens801f0 operstate up"),
        "{out}"
    );
    for false_cause in ["cable", "has no link", "switch port"] {
        assert!(!out.contains(false_cause), "{false_cause}: {out}");
    }
    // The file gone: ENOENT, by path.
    let dir = tempfile::tempdir().unwrap();
    copy_tree(
        std::path::Path::new(&format!(
            "{}/tests/fixtures/sysfs/rxe-veth-basic",
            env!("CARGO_MANIFEST_DIR")
        )),
        dir.path(),
    );
    std::fs::remove_file(dir.path().join("class/infiniband/rxe0/ports/1/state")).unwrap();
    let out = doctor_in(dir.path(), &[])
        .code(1)
        .get_output()
        .stdout
        .clone();
    let out = String::from_utf8(out).unwrap();
    assert!(
        out.contains("rxe0/1's state is not known: its state file could not be read: ")
            && out.contains(
                "/class/infiniband/rxe0/ports/1/state: ENOENT (2, No such file or directory)"
            ),
        "{out}"
    );
    assert!(!out.contains("cable"), "{out}");
    // check asks the same rule.
    Command::cargo_bin("rdmactl")
        .unwrap()
        .arg("--sysfs")
        .arg(dir.path())
        .args(["check", "-d", "rxe0", "-g", "1"])
        .assert()
        .stdout(predicate::str::contains("rxe0/1's state is not known"))
        .stdout(predicate::str::contains("cable").not());
}

/// The HCAs' and GPUs' own `iommu_group` links gone (their mode unreadable): the groups'
/// `kernel/iommu_groups/*/type` decide, and without those a captured kernel command line
/// (`--procfs`) does: `intel_iommu=on` without `iommu=pt` is translated. Never "not
/// readable" while either says it.
#[test]
fn the_iommu_mode_comes_from_the_groups_or_the_captured_command_line() {
    fn unlink_groups(dir: &std::path::Path) {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let kind = e.file_type().unwrap();
            if e.file_name() == "iommu_group" && kind.is_symlink() {
                std::fs::remove_file(e.path()).unwrap();
            } else if kind.is_dir() {
                unlink_groups(&e.path());
            }
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("sys");
    copy_tree(
        std::path::Path::new(&fixture("sysfs", "gpu-path-acs")),
        &tree,
    );
    unlink_groups(&tree.join("devices"));
    let iommu = |out: &assert_cmd::assert::Assert| {
        String::from_utf8(out.get_output().stdout.clone())
            .unwrap()
            .lines()
            .find(|l| l.contains(" iommu "))
            .unwrap_or_default()
            .to_string()
    };
    let line = iommu(&doctor_in(&tree, &[]));
    assert!(
        line.starts_with("warn  iommu")
            && line.contains("the IOMMU translates DMA: every IOMMU group"),
        "{line}"
    );
    // No group type either: the captured command line decides.
    for g in std::fs::read_dir(tree.join("kernel/iommu_groups")).unwrap() {
        let _ = std::fs::remove_file(g.unwrap().path().join("type"));
    }
    let line = iommu(&doctor_in(&tree, &[]));
    assert!(line.contains("not known"), "{line}");
    let proc = dir.path().join("proc");
    copy_tree(std::path::Path::new(&fixture("procfs", "sos-user")), &proc);
    std::fs::write(
        proc.join("cmdline"),
        "BOOT_IMAGE=/vmlinuz intel_iommu=on quiet\n",
    )
    .unwrap();
    let out = Command::cargo_bin("rdmactl")
        .unwrap()
        .env_remove("RDMACTL_SYSFS")
        .env_remove("RDMACTL_PROCFS")
        .arg("--sysfs")
        .arg(&tree)
        .arg("--procfs")
        .arg(&proc)
        .arg("doctor")
        .assert();
    let line = iommu(&out);
    assert!(
        line.starts_with("warn  iommu") && line.contains("does not ask for passthrough"),
        "{line}"
    );
    assert!(
        !line.contains("not known") && !line.contains("not readable"),
        "{line}"
    );
}

/// JUnit's `<testsuite>` carries `hostname` and `timestamp` (the schema's attributes); a
/// manifest that does not parse is an `<error>` test case in the XML, not only stderr.
#[test]
fn junit_names_host_and_time_and_a_bad_manifest_is_an_error_case() {
    let out = Command::cargo_bin("rdmactl")
        .unwrap()
        .env_remove("RDMACTL_SYSFS")
        .env_remove("RDMACTL_PROCFS")
        .args(["--sysfs", &fixture("sysfs", "rxe-veth-basic")])
        .args(["--procfs", &fixture("procfs", "sos-user")])
        .args(["doctor", "--format", "junit"])
        .assert()
        .code(0);
    let xml = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let host =
        std::fs::read_to_string(fixture("procfs", "sos-user") + "/sys/kernel/hostname").unwrap();
    let suite = xml.lines().find(|l| l.contains("<testsuite ")).unwrap();
    assert!(
        suite.contains(&format!("hostname=\"{}\"", host.trim())),
        "{suite}"
    );
    let stamp = suite.split("timestamp=\"").nth(1).unwrap();
    let stamp = &stamp[..19];
    assert!(
        stamp.len() == 19 && stamp.as_bytes()[10] == b'T' && stamp.starts_with("20"),
        "{suite}"
    );
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "devices = 2\nspeed = \"x\"\n").unwrap();
    let out = rdmactl_on(
        "rxe-veth-basic",
        &[
            "doctor",
            "--expect",
            bad.to_str().unwrap(),
            "--format",
            "junit",
        ],
    )
    .code(2)
    .stderr(predicate::str::contains("line 2"));
    let xml = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"rdmactl\" tests=\"1\" failures=\"0\" errors=\"1\">"), "{xml}");
    assert!(
        xml.contains("<error type=\"check-not-run\" message=\"--expect "),
        "{xml}"
    );
    assert!(xml.contains("line 2"), "{xml}");
}
