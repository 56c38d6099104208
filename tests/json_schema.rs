//! Every command's `-j` output on every fixture tree has exactly the keys and types of its
//! shape in tests/json-schema.txt, and docs/json.md documents each of those keys in the
//! command's section. pingpong and selftest need a device: their report shapes are
//! checked by the crate's unit tests against the same file.

mod schema;

use std::path::PathBuf;

use assert_cmd::Command;
use serde_json::Value;

const TREES: &[&str] = &[
    "rxe-veth-basic",
    "rxe-veth-vlan-ipv6-down",
    "rxe-vm-basic",
    "procfs-testdata",
    "mlx5-roce-vlan",
    "ib-hca",
    "ibsim",
    "pod-gid-holes",
    "ipv6-only",
    "port-down",
    "unreadable",
    "rxe-counters",
    "gpu-path-acs",
    "qos-good",
    "qos-pfc-wrong-priority",
    "qos-pause-storm",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// stdout of a run (any exit code: a failed check still prints its report), or None when
/// it printed nothing.
fn json(args: &[&str]) -> Option<Value> {
    let mut cmd = Command::cargo_bin("rdmactl").unwrap();
    cmd.current_dir(root()).env_remove("COLUMNS");
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("RDMACTL_") {
            cmd.env_remove(key);
        }
    }
    let out = cmd.args(args).output().unwrap();
    if out.stdout.is_empty() {
        return None;
    }
    Some(serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: not JSON: {e}")))
}

#[test]
fn every_command_on_every_tree_has_its_documented_shape() {
    let schema = schema::load();
    let mut errors = Vec::new();
    let mut checked: std::collections::BTreeMap<String, usize> = Default::default();
    let mut expect = |args: Vec<String>, ty: &str, errors: &mut Vec<String>| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let Some(value) = json(&args) else {
            return;
        };
        let ty_parsed = schema::parse_type(ty);
        schema.check(&ty_parsed, &value, &format!("{args:?}"), errors);
        *checked
            .entry(ty.trim_matches(|c| c == '[' || c == ']').to_string())
            .or_default() += 1;
    };
    for tree in TREES {
        let dir = format!("tests/fixtures/sysfs/{tree}");
        let with = |rest: &[&str]| -> Vec<String> {
            ["-j", "--sysfs", dir.as_str()]
                .iter()
                .chain(rest)
                .map(|s| s.to_string())
                .collect()
        };
        expect(with(&["devices"]), "[@device]", &mut errors);
        expect(with(&["ports"]), "[@port]", &mut errors);
        expect(with(&["ports", "-v"]), "[@port]", &mut errors);
        expect(with(&["gids"]), "[@gid_row]", &mut errors);
        expect(with(&["gids", "--all"]), "[@gid_row]", &mut errors);
        expect(with(&["devices", "-v"]), "[@devinfo_sysfs]", &mut errors);
        expect(with(&["doctor"]), "@doctor", &mut errors);
        // A DOWN port makes wait time out: 0.05 s keeps every tree quick.
        expect(with(&["wait", "--timeout", "0.05"]), "@wait", &mut errors);
        expect(with(&["counters"]), "[@counters_port]", &mut errors);
        expect(
            with(&["counters", "--interval", "0.01", "--count", "1"]),
            "@counters_sample",
            &mut errors,
        );
        expect(with(&["qos"]), "@qos_report", &mut errors);
        expect(
            with(&["qos", "--tclass", "106"]),
            "@qos_report",
            &mut errors,
        );
        expect(
            with(&["qos", "--interval", "0.01"]),
            "@qos_interval",
            &mut errors,
        );
        let names: Vec<String> = std::fs::read_dir(root().join(&dir).join("class/infiniband"))
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| !n.starts_with('.'))
                    .collect()
            })
            .unwrap_or_default();
        for name in &names {
            for rest in [
                &["check", "-d", name][..],
                &["check", "-d", name, "-g", "0", "--peer", "192.0.2.7"],
                &["check", "-d", name, "-g", "999"],
                &["check", "-d", name, "--peer", "2001:db8::7", "--env"],
            ] {
                expect(with(rest), "@check", &mut errors);
            }
        }
    }
    let own = |args: &[&str]| args.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    expect(
        own(&[
            "gid",
            "decode",
            "-j",
            "fe80::5054:ff:fe12:3456",
            "::ffff:10.0.0.1",
            "::",
        ]),
        "[@gid_decode]",
        &mut errors,
    );
    expect(
        own(&["gid", "encode", "-j", "10.0.0.1", "2001:db8::1"]),
        "[@gid_encode]",
        &mut errors,
    );
    for code in ["port-down", "mtu-mismatch", "memlock", "subnet-vl-mismatch"] {
        expect(own(&["explain", "-j", code]), "@explain", &mut errors);
    }
    expect(own(&["explain", "-j"]), "[@explain_code]", &mut errors);
    assert!(
        errors.is_empty(),
        "{} mismatches:\n{}",
        errors.len(),
        errors.join("\n")
    );
    for ty in [
        "@device",
        "@port",
        "@gid_row",
        "@devinfo_sysfs",
        "@doctor",
        "@wait",
        "@check",
        "@gid_decode",
        "@gid_encode",
        "@counters_port",
        "@counters_sample",
        "@explain",
        "@explain_code",
    ] {
        assert!(
            checked.get(ty).is_some_and(|n| *n > 0),
            "{ty} never checked: {checked:?}"
        );
    }
}

#[test]
fn every_key_of_the_schema_is_documented_in_its_section() {
    let doc = std::fs::read_to_string(root().join("docs/json.md")).unwrap();
    let missing = schema::load().undocumented(&doc);
    assert!(missing.is_empty(), "not in docs/json.md: {missing:#?}");
}

#[test]
fn the_checker_rejects_what_does_not_fit() {
    let schema = schema::Schema::parse(
        "shape a \"x\"\n  k  number|null\n  o?  [@b]\nshape b \"x\"\n  s  string\n",
    );
    let ty = schema::parse_type("@a");
    let cases = [
        (r#"{"k": 1}"#, true),
        (r#"{"k": null, "o": [{"s": "x"}]}"#, true),
        (r#"{"k": "1"}"#, false),
        (r#"{}"#, false),
        (r#"{"k": 1, "extra": 2}"#, false),
        (r#"{"k": 1, "o": [{"s": 1}]}"#, false),
    ];
    for (text, want) in cases {
        let mut errors = Vec::new();
        let value: Value = serde_json::from_str(text).unwrap();
        assert_eq!(
            schema.check(&ty, &value, "$", &mut errors),
            want,
            "{text}: {errors:?}"
        );
        assert_eq!(errors.is_empty(), want, "{text}: {errors:?}");
    }
}
