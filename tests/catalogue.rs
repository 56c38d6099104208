//! docs/failures.md lists every explanation code the rules can emit, and nothing else: the
//! codes are read from the rules' sources (src/diagnose/datapath/ and cm.rs, production
//! code only) and compared with the page's `### \`code\`` headings. The page is also the
//! registry `rdmactl explain` reads: every code of every rule anywhere under src/ has an
//! entry, and every entry's code is explainable by the built binary.

use std::collections::BTreeSet;
use std::fs;
use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A source file without its `#[cfg(test)] mod tests { ... }` block: tests build explanations
/// with made-up codes. (A `mod tests;` declaration names a file and cuts nothing.)
fn production(path: &str) -> String {
    let text = fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"));
    let cut = text.find("#[cfg(test)]\nmod tests {").unwrap_or(text.len());
    // Line comments may quote a code that no rule emits any more.
    text[..cut]
        .lines()
        .map(|l| match l.find("//") {
            Some(i) if !l[..i].contains('"') => &l[..i],
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `^[a-z][a-z0-9]*(-[a-z0-9]+)*$`: a code as the rules spell it (`flushed` has no dash).
fn is_name(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_lowercase())
        && s.split('-').all(|p| {
            !p.is_empty()
                && p.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        })
}

/// `^[a-z][a-z0-9]*(-[a-z0-9]+)+$`: kebab-case with at least one dash, for literals that are
/// codes only by their look (a computed `let code = ...`).
fn is_code(s: &str) -> bool {
    is_name(s) && s.contains('-')
}

/// The string literal at the start of `text` (after whitespace), if there is one.
fn literal_at(text: &str) -> Option<&str> {
    let rest = text.trim_start().strip_prefix('"')?;
    let end = rest.find('"')?;
    Some(&rest[..end])
}

/// Every code in the production code of one rules file:
/// - the first argument of `b.done(`, `why(`, `Explanation::new(` when it is a literal;
/// - the code of `Finding::new(Severity::Fail, "...")` (compare_peers: only its Fail
///   findings become explanations);
/// - the first element of a `Some(("...", ...))` rule tuple (port_not_active);
/// - the kebab-case literals of a computed `let code = ... ;`.
fn codes_in(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let bytes = code.as_bytes();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'.' || c == b':';
    let mut take = |s: &str, at: &str| {
        assert!(is_name(s), "{at}: {s:?} is not a kebab-case code");
        out.insert(s.to_string());
    };
    for call in ["b.done(", "why(", "Explanation::new(", "Some(("] {
        for (at, _) in code.match_indices(call) {
            // `why(` must not be the tail of another name (`fn why(` is followed by no literal).
            if call == "why(" && at > 0 && ident(bytes[at - 1]) {
                continue;
            }
            if let Some(s) = literal_at(&code[at + call.len()..]) {
                take(s, call);
            }
        }
    }
    for (at, _) in code.match_indices("Finding::new(") {
        let args = code[at + "Finding::new(".len()..].trim_start();
        if let Some(rest) = args.strip_prefix("Severity::Fail,") {
            if let Some(s) = literal_at(rest) {
                take(s, "Finding::new(Severity::Fail");
            }
        }
    }
    for (at, _) in code.match_indices("let code =") {
        let stmt = &code[at..];
        let stmt = &stmt[..stmt.find(';').unwrap_or(stmt.len())];
        for (i, piece) in stmt.split('"').enumerate() {
            // Odd pieces are inside quotes.
            if i % 2 == 1 && is_code(piece) {
                out.insert(piece.to_string());
            }
        }
    }
    out
}

/// The rules files under `dir`, relative to the crate root, sorted; `tests.rs` is a test
/// module of its folder, not rules.
fn rules_files(dir: &str) -> Vec<String> {
    let mut files: Vec<String> = fs::read_dir(root().join(dir))
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .map(|entry| entry.expect(dir).file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".rs") && name != "tests.rs")
        .map(|name| format!("{dir}/{name}"))
        .collect();
    files.sort();
    files
}

fn source_codes() -> BTreeSet<String> {
    let mut all = BTreeSet::new();
    for file in rules_files("src/diagnose/datapath") {
        all.extend(codes_in(&production(&file)));
    }
    all.extend(codes_in(&production("src/diagnose/cm.rs")));
    all
}

/// The `### \`code\`` headings of docs/failures.md, as (code, in the explanation groups).
/// The explanation groups are everything before "## Findings of".
fn headings() -> (BTreeSet<String>, BTreeSet<String>) {
    let doc = fs::read_to_string(root().join("docs/failures.md")).expect("docs/failures.md");
    let (explained, findings) = match doc.find("\n## Findings of") {
        Some(i) => doc.split_at(i),
        None => (doc.as_str(), ""),
    };
    let parse = |text: &str| -> BTreeSet<String> {
        text.lines()
            .filter_map(|l| l.strip_prefix("### `")?.strip_suffix('`'))
            .map(str::to_string)
            .collect()
    };
    (parse(explained), parse(findings))
}

#[test]
fn the_extractor_finds_known_codes() {
    let codes = source_codes();
    for known in [
        // b.done, datapath
        "retry-exceeded",
        "same-host-drop",
        "no-listener",
        // why(), cm
        "cm-no-listener",
        "cm-netdev-down",
        // Explanation::new
        "port-in-use",
        // a code without a dash
        "flushed",
        // port_not_active's tuple
        "port-down",
        "ib-port-not-active",
        // let code = if ...
        "roce-version-mismatch",
        "gid-family-mismatch",
        // compare_peers' Fail findings
        "ib-lid-zero",
        "link-layer-mismatch",
    ] {
        assert!(codes.contains(known), "extractor missed {known}: {codes:?}");
    }
    // Test-only codes and the Info finding of compare_peers are not explanations.
    assert!(!codes.contains("mtu-differs"), "{codes:?}");
    assert!(codes.len() > 60, "only {} codes: {codes:?}", codes.len());
}

#[test]
fn the_extractor_reads_multi_line_calls() {
    let code = "b.done(\n    \"one-code\",\n    x)\nwhy(\"two-code\", a, b)\nfn why(code: &str)\n\
                Finding::new(\n  Severity::Fail,\n  \"three-code\",\n  m)\n\
                Finding::new(Severity::Info, \"not-this\", m)\n\
                let code = if a {\n  \"four-code\"\n} else {\n  \"five-code\"\n};\n\
                return Some((\n  \"six-code\",\n  s))\nSome((owner, ev))";
    let got: Vec<String> = codes_in(code).into_iter().collect();
    assert_eq!(
        got,
        [
            "five-code",
            "four-code",
            "one-code",
            "six-code",
            "three-code",
            "two-code"
        ]
    );
}

#[test]
fn every_code_is_catalogued() {
    let (explained, _) = headings();
    let missing: Vec<String> = source_codes().difference(&explained).cloned().collect();
    assert!(
        missing.is_empty(),
        "codes with no `### \\`code\\`` heading in docs/failures.md: {missing:?}"
    );
}

#[test]
fn every_catalogued_code_exists() {
    let (explained, _) = headings();
    let stale: Vec<String> = explained.difference(&source_codes()).cloned().collect();
    assert!(
        stale.is_empty(),
        "docs/failures.md lists codes no rule emits: {stale:?}"
    );
}

/// The finding codes of the counters rules (every `Finding::new(Severity::X, "code"` in
/// src/diagnose/counters.rs), each a heading in the findings part of docs/failures.md.
fn counters_codes() -> BTreeSet<String> {
    let code = production("src/diagnose/counters.rs");
    let mut out = BTreeSet::new();
    for (at, _) in code.match_indices("Finding::new(") {
        let args = &code[at + "Finding::new(".len()..];
        let Some(comma) = args.find(',') else {
            continue;
        };
        if let Some(s) = literal_at(&args[comma + 1..]) {
            assert!(is_name(s), "{s:?} is not a kebab-case code");
            out.insert(s.to_string());
        }
    }
    out
}

#[test]
fn every_counters_code_is_catalogued_and_nothing_stale() {
    let codes = counters_codes();
    assert!(codes.contains("counters-retransmission"), "{codes:?}");
    assert!(codes.contains("counters"), "{codes:?}");
    let (_, findings) = headings();
    let missing: Vec<&String> = codes.iter().filter(|c| !findings.contains(*c)).collect();
    assert!(
        missing.is_empty(),
        "not in docs/failures.md's findings: {missing:?}"
    );
    let stale: Vec<&String> = findings
        .iter()
        .filter(|c| c.starts_with("counters") && !codes.contains(*c))
        .collect();
    assert!(
        stale.is_empty(),
        "docs/failures.md lists counters codes no rule emits: {stale:?}"
    );
}

#[test]
fn the_findings_section_has_entries() {
    let (_, findings) = headings();
    for code in ["memlock", "port-state", "kernel-choice", "gid-slot"] {
        assert!(
            findings.contains(code),
            "{code} missing from the findings section"
        );
    }
}

/// `fabric`'s suspect codes (`code: "fabric-..."` in src/diagnose/fabric.rs), each a heading
/// in the findings part of docs/failures.md, and no stale `fabric-` heading.
#[test]
fn every_fabric_code_is_catalogued_and_nothing_stale() {
    let code = production("src/diagnose/fabric.rs");
    let mut codes = BTreeSet::new();
    for (at, _) in code.match_indices('"') {
        if let Some(s) = literal_at(&code[at..]) {
            if s.starts_with("fabric-") && is_code(s) {
                codes.insert(s.to_string());
            }
        }
    }
    assert!(codes.contains("fabric-endpoint-slow"), "{codes:?}");
    let (_, findings) = headings();
    let documented: BTreeSet<String> = findings
        .iter()
        .filter(|h| h.starts_with("fabric-"))
        .cloned()
        .collect();
    assert_eq!(
        codes, documented,
        "src/diagnose/fabric.rs against docs/failures.md"
    );
}

/// Every production source file under src/, by path: the rules are found wherever they
/// live, so a rule moved to another file or folder stays checked.
fn all_production_sources() -> Vec<(String, String)> {
    fn walk(dir: &std::path::Path, out: &mut Vec<String>) {
        let mut entries: Vec<_> = fs::read_dir(dir).unwrap().flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let path = e.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|x| x == "rs") {
                let rel = path.strip_prefix(root()).unwrap();
                out.push(rel.to_string_lossy().into_owned());
            }
        }
    }
    let mut paths = Vec::new();
    walk(&root().join("src"), &mut paths);
    paths
        .into_iter()
        .map(|p| {
            let text = production(&p);
            (p, text)
        })
        .collect()
}

/// Every code a rule can emit, anywhere under src/: what `codes_in` reads, and the code
/// of every `Finding::new(SEVERITY, "code"`, `Diagnostic::new(SEVERITY, "code"`, doctor's
/// `finding("code"`, and a suspect's `code: "code"` or `(SuspectKind::X, "code"`.
fn every_emitted_code() -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (path, code) in all_production_sources() {
        out.extend(codes_in(&code));
        let bytes = code.as_bytes();
        // A suspect's `(SuspectKind::X, "code", reason)` tuple reads like a constructor.
        for call in ["Finding::new(", "Diagnostic::new(", "SuspectKind::"] {
            for (at, _) in code.match_indices(call) {
                let args = &code[at + call.len()..];
                let Some(comma) = args.find(',') else {
                    continue;
                };
                if let Some(s) = literal_at(&args[comma + 1..]) {
                    assert!(is_name(s), "{path}: {s:?} is not a kebab-case code");
                    out.insert(s.to_string());
                }
            }
        }
        for call in ["finding(", "code: "] {
            for (at, _) in code.match_indices(call) {
                if call == "finding("
                    && at > 0
                    && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_')
                {
                    continue;
                }
                if let Some(s) = literal_at(&code[at + call.len()..]) {
                    assert!(is_name(s), "{path}: {s:?} is not a kebab-case code");
                    out.insert(s.to_string());
                }
            }
        }
    }
    out
}

/// Every code the page names, in every group.
fn all_headings() -> BTreeSet<String> {
    let doc = fs::read_to_string(root().join("docs/failures.md")).expect("docs/failures.md");
    doc.lines()
        .filter_map(|l| l.strip_prefix("### "))
        .flat_map(|h| h.split(','))
        .filter_map(|c| c.trim().strip_prefix('`')?.strip_suffix('`'))
        .map(str::to_string)
        .collect()
}

#[test]
fn every_code_a_rule_can_emit_has_an_entry() {
    let emitted = every_emitted_code();
    for known in [
        "retry-exceeded",
        "memlock",
        "env-nccl-ib-hca",
        "subnet-no-sm",
        "fabric-link",
    ] {
        assert!(
            emitted.contains(known),
            "the scan missed {known}: {emitted:?}"
        );
    }
    let documented = all_headings();
    // compare_peers' informational finding feeds a rule and is never printed.
    let missing: Vec<&String> = emitted
        .iter()
        .filter(|c| !documented.contains(*c) && *c != "mtu-differs")
        .collect();
    assert!(
        missing.is_empty(),
        "codes with no entry in docs/failures.md (so `rdmactl explain` cannot explain them): {missing:?}"
    );
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
