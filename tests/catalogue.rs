//! docs/failures.md is the registry of diagnostic codes. build.rs turns each of its
//! `### \`code\`` headings into a `model::codes` constant, and a rule can name a code only
//! through one, so every code a rule emits has an entry: the compiler checks that direction
//! (and the unit test of `model::codes` that each constant spells its heading). This test
//! checks the other: every entry is a code some rule still uses, and `rdmactl explain`
//! explains every one.

use std::collections::BTreeSet;
use std::fs;
use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A source file without its `#[cfg(test)] mod tests { ... }` block, and without line
/// comments, which may name a code no rule emits any more. (A `mod tests;` declaration
/// names a file and cuts nothing.)
fn production(path: &std::path::Path) -> String {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let cut = text.find("#[cfg(test)]\nmod tests {").unwrap_or(text.len());
    text[..cut]
        .lines()
        .map(|l| match l.find("//") {
            Some(i) if !l[..i].contains('"') => &l[..i],
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every production source file under src/ (a folder's `tests.rs` is a test module): the
/// rules are found wherever they live.
fn all_production_sources() -> Vec<String> {
    fn walk(dir: &std::path::Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<_> = fs::read_dir(dir).unwrap().flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let path = e.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|x| x == "rs")
                && path.file_name().is_some_and(|n| n != "tests.rs")
            {
                out.push(path);
            }
        }
    }
    let mut paths = Vec::new();
    walk(&root().join("src"), &mut paths);
    paths.iter().map(|p| production(p)).collect()
}

/// Every code the page names, in every group (a heading may name several).
fn all_headings() -> BTreeSet<String> {
    let doc = fs::read_to_string(root().join("docs/failures.md")).expect("docs/failures.md");
    doc.lines()
        .filter_map(|l| l.strip_prefix("### "))
        .flat_map(|h| h.split(','))
        .filter_map(|c| c.trim().strip_prefix('`')?.strip_suffix('`'))
        .map(str::to_string)
        .collect()
}

/// The constant build.rs makes of a code: `port-down` is `PORT_DOWN`.
fn constant(code: &str) -> String {
    code.to_ascii_uppercase().replace('-', "_")
}

/// Every `codes::NAME` the production sources mention.
fn used_constants() -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for text in all_production_sources() {
        for (at, _) in text.match_indices("codes::") {
            let name: String = text[at + "codes::".len()..]
                .chars()
                .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.insert(name);
            }
        }
    }
    out
}

#[test]
fn every_catalogued_code_is_used_by_a_rule() {
    let used = used_constants();
    for known in [
        "RETRY_EXCEEDED",
        "MEMLOCK",
        "ENV_NCCL_IB_HCA",
        "FABRIC_LINK",
    ] {
        assert!(used.contains(known), "the scan missed {known}: {used:?}");
    }
    let stale: Vec<String> = all_headings()
        .into_iter()
        .filter(|code| !used.contains(&constant(code)))
        .collect();
    assert!(
        stale.is_empty(),
        "docs/failures.md lists codes no rule emits: {stale:?}"
    );
}

#[test]
fn the_page_groups_failures_and_findings() {
    let doc = fs::read_to_string(root().join("docs/failures.md")).expect("docs/failures.md");
    let findings = &doc[doc.find("\n## Findings of").expect("a findings group")..];
    for code in ["memlock", "port-state", "kernel-choice", "gid-slot"] {
        assert!(
            findings.contains(&format!("### `{code}`")),
            "{code} missing from the findings section"
        );
    }
}

#[test]
fn every_catalogued_code_is_explainable() {
    let rdmactl = || {
        let mut cmd = assert_cmd::Command::cargo_bin("rdmactl").unwrap();
        cmd.current_dir(root()).env("NO_COLOR", "1");
        cmd
    };
    let out = rdmactl().args(["explain", "-j"]).output().unwrap();
    assert!(out.status.success());
    let list: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    let listed: BTreeSet<String> = list
        .iter()
        .map(|row| row["code"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        listed,
        all_headings(),
        "`rdmactl explain` against docs/failures.md"
    );
    for code in &listed {
        let out = rdmactl().args(["explain", code]).output().unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(out.status.success(), "explain {code}: {:?}", out.stderr);
        let first = text.lines().next().unwrap_or_default();
        assert!(
            first
                .split(" — ")
                .next()
                .unwrap()
                .split(", ")
                .any(|c| c == code),
            "explain {code} begins {first:?}"
        );
        assert!(text.lines().count() > 2, "explain {code}: {text}");
    }
}
