//! iproute2's `dcb` as a second reference for the DCB fixtures: the bytes of
//! tests/fixtures/dcb/NAME.nl, which rdmactl's decoder must read as NAME.expect.json (its
//! unit test in src/gather/net/dcb.rs), are fed to `dcb -j` through an LD_PRELOAD shim
//! (tests/fixtures/dcb/dcb-shim.c) in place of the kernel's reply, and what dcb prints must
//! be the same values. No NIC here has DCB, so the kernel itself would only answer
//! EOPNOTSUPP. Ignored by a plain `cargo test` (scripts/test runs it with `--include-ignored`);
//! fails, never skips, when dcb or a C compiler is missing.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

const FIXTURES: [&str; 6] = [
    "full",
    "pfc-wrong-priority",
    "dscp-unmapped",
    "pause-storm",
    "good",
    "pcp-untagged",
];

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dcb")
}

/// The shim, built into `dir`.
fn build_shim(dir: &Path) -> PathBuf {
    let so = dir.join("dcb-shim.so");
    let out = Command::new("cc")
        .args(["-shared", "-fPIC", "-Wall", "-o"])
        .arg(&so)
        .arg(fixtures().join("dcb-shim.c"))
        .arg("-ldl")
        .output()
        .expect("cc is needed to build the dcb shim (install gcc or clang)");
    assert!(
        out.status.success(),
        "cc failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    so
}

fn dcb_command() -> Command {
    let mut cmd = Command::new("dcb");
    let path = std::env::var("PATH").unwrap_or_default();
    cmd.env("PATH", format!("{path}:/usr/sbin:/sbin"));
    cmd
}

/// `dcb -j -s OBJECT show dev lo` answered with `reply`: (success, stdout, stderr).
fn dcb(shim: &Path, reply: &Path, object: &str) -> (bool, String, String) {
    let out = dcb_command()
        .args(["-j", "-s", object, "show", "dev", "lo"])
        .env("LD_PRELOAD", shim)
        .env("DCB_SHIM_REPLY", reply)
        .output()
        .expect("iproute2's dcb is needed (package iproute2)");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn dcb_json(shim: &Path, reply: &Path, object: &str) -> Value {
    let (ok, stdout, stderr) = dcb(shim, reply, object);
    assert!(ok, "dcb {object} on {}: {stderr}", reply.display());
    serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("dcb {object}: {e}: {stdout:?} {stderr}"))
}

fn tsa_name(tsa: &Value) -> &'static str {
    // IEEE_8021QAZ_TSA_* as dcb_ets.c names them.
    match tsa.as_u64() {
        Some(0) => "strict",
        Some(1) => "cbs",
        Some(2) => "ets",
        Some(255) => "vendor",
        _ => "???",
    }
}

/// What `dcb -j -s ets show` prints for the expected `struct ieee_ets`.
fn ets_as_dcb(e: &Value) -> Value {
    let tsa = |f: &str| -> Value { e[f].as_array().unwrap().iter().map(tsa_name).collect() };
    json!({
        "willing": e["willing"],
        "ets_cap": e["ets_cap"],
        "cbs": e["cbs"].as_u64() != Some(0),
        "tc_bw": e["tc_tx_bw"],
        "pg_bw": e["tc_rx_bw"],
        "tc_tsa": tsa("tc_tsa"),
        "prio_tc": e["prio_tc"],
        "reco_tc_bw": e["tc_reco_bw"],
        "reco_tc_tsa": tsa("tc_reco_tsa"),
        "reco_prio_tc": e["reco_prio_tc"],
    })
}

fn pfc_as_dcb(p: &Value) -> Value {
    let en = p["pfc_en"].as_u64().unwrap();
    let prio_pfc: Vec<bool> = (0..8).map(|i| en & (1 << i) != 0).collect();
    json!({
        "pfc_cap": p["pfc_cap"],
        "macsec_bypass": p["mbc"].as_u64() != Some(0),
        "delay": p["delay"],
        "prio_pfc": prio_pfc,
        "requests": p["requests"],
        "indications": p["indications"],
    })
}

/// dcb_app.c groups the table by selector, each entry `[protocol, priority]`; sorted here
/// on both sides so that order within a group does not matter.
fn app_as_dcb(apps: &Value) -> Value {
    let mut groups = serde_json::Map::new();
    for a in apps.as_array().unwrap() {
        let key = match a["selector"].as_u64().unwrap() {
            1 => "ethtype_prio",
            2 => "stream_port_prio",
            3 => "dgram_port_prio",
            4 => "port_prio",
            5 => "dscp_prio",
            255 => "pcp_prio",
            s => panic!("selector {s} in a fixture"),
        };
        let entry = json!([a["protocol"], a["priority"]]);
        groups
            .entry(key)
            .or_insert_with(|| json!([]))
            .as_array_mut()
            .unwrap()
            .push(entry);
    }
    sorted_groups(Value::Object(groups))
}

fn sorted_groups(mut v: Value) -> Value {
    if let Some(map) = v.as_object_mut() {
        for group in map.values_mut() {
            if let Some(entries) = group.as_array_mut() {
                entries.sort_by_key(|e| (e[0].as_u64(), e[1].as_u64()));
            }
        }
    }
    v
}

fn dcbx_as_dcb(dcbx: u64) -> Value {
    let names = [
        (0x01, "host"),
        (0x02, "lld_managed"),
        (0x04, "cee"),
        (0x08, "ieee"),
        (0x10, "static"),
    ];
    let mut out = serde_json::Map::new();
    for (bit, name) in names {
        if dcbx & bit != 0 {
            out.insert(name.to_string(), json!(true));
        }
    }
    Value::Object(out)
}

fn selector_name(s: &Value) -> &'static str {
    match s.as_u64() {
        Some(1) => "ethtype",
        Some(2) => "stream-port",
        Some(3) => "dgram-port",
        Some(4) => "port",
        Some(5) => "dscp",
        Some(255) => "pcp",
        _ => "?",
    }
}

/// Whether this dcb knows `apptrust` (iproute2 6.2 and later; kernel 6.2's trust table).
fn dcb_has_apptrust() -> bool {
    let out = dcb_command()
        .args(["apptrust", "help"])
        .output()
        .expect("iproute2's dcb is needed (package iproute2)");
    !String::from_utf8_lossy(&out.stderr).contains("is unknown")
}

#[test]
#[ignore = "needs iproute2 (dcb) and gcc (cc); scripts/test runs it"]
fn dcb_reads_the_fixtures_as_rdmactl_does() {
    let dir = tempfile::tempdir().unwrap();
    let shim = build_shim(dir.path());
    let apptrust = dcb_has_apptrust();
    if !apptrust {
        eprintln!(
            "note: this dcb has no `apptrust` object (before iproute2 6.2): the trust \
             table is checked against the unit test's values only"
        );
    }
    let mut compared = 0;
    for name in FIXTURES {
        let reply = fixtures().join(format!("{name}.nl"));
        let expect: Value = serde_json::from_slice(
            &std::fs::read(fixtures().join(format!("{name}.expect.json"))).unwrap(),
        )
        .unwrap();
        let mut check = |object: &str, want: Value, sort: bool| {
            let mut got = dcb_json(&shim, &reply, object);
            if sort {
                got = sorted_groups(got);
            }
            assert_eq!(got, want, "{name}: dcb {object}");
            compared += 1;
        };
        check("ets", ets_as_dcb(&expect["ets"]), false);
        check("pfc", pfc_as_dcb(&expect["pfc"]), false);
        check("app", app_as_dcb(&expect["app"]), true);
        check("dcbx", dcbx_as_dcb(expect["dcbx"].as_u64().unwrap()), false);
        if !expect["buffer"].is_null() {
            let b = &expect["buffer"];
            let want = json!({
                "prio_buffer": b["prio2buffer"],
                "buffer_size": b["buffer_size"],
                "total_size": b["total_size"],
            });
            check("buffer", want, false);
        }
        if !expect["maxrate"].is_null() {
            check("maxrate", json!({"tc_maxrate": expect["maxrate"]}), false);
        }
        if apptrust {
            let order: Vec<&str> = expect["trust"]
                .as_array()
                .unwrap()
                .iter()
                .map(selector_name)
                .collect();
            check("apptrust", json!({ "order": order }), false);
        }
    }
    // full: ets pfc app dcbx buffer maxrate; each of the others: ets pfc app dcbx.
    let per_trust = if apptrust { FIXTURES.len() } else { 0 };
    assert_eq!(compared, 6 + 4 * (FIXTURES.len() - 1) + per_trust);
}

#[test]
#[ignore = "needs iproute2 (dcb) and gcc (cc); scripts/test runs it"]
fn dcb_reads_the_eopnotsupp_fixture_as_the_kernels_refusal() {
    let dir = tempfile::tempdir().unwrap();
    let shim = build_shim(dir.path());
    let (ok, stdout, stderr) = dcb(&shim, &fixtures().join("eopnotsupp.nl"), "pfc");
    assert!(!ok, "dcb accepted an NLMSG_ERROR: {stdout}");
    assert!(
        stderr.contains("Operation not supported"),
        "dcb did not read EOPNOTSUPP: {stderr}"
    );
}
