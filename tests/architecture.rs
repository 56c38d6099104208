//! The layering written down in DEVELOPERS.md, checked: the module import graph of `src/`
//! has no circles, `unsafe` lives only under `src/verbs/`, and the fact gatherers (verbs,
//! sysfs, net, oob) never import the rules. Reads the sources; builds nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Modules that hold diagnosis rules: pure functions from facts to findings.
const RULE_MODULES: &[&str] = &["diagnose"];
/// Modules that gather facts from the system; they may import the vocabulary and the
/// fact types, never the rules, the commands or the renderers.
const GATHERERS: &[&str] = &["gather", "wire"];
const UPPER_LAYERS: &[&str] = &["cmd", "app", "render", "diagnose"];

fn src() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `src/cmd/check.rs` → `cmd::check`; `src/verbs/mod.rs` → `verbs`; `src/main.rs` → `crate`.
fn module_of(path: &Path) -> String {
    let rel = path.strip_prefix(src()).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    if parts == ["main"] {
        return "crate".into();
    }
    parts.join("::")
}

/// The code of a file without its `#[cfg(test)] mod tests` block and comments: tests may
/// reach across layers to build fixtures.
fn production_code(text: &str) -> String {
    let cut = text.find("#[cfg(test)]\nmod tests").unwrap_or(text.len());
    text[..cut]
        .lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every module path named in `crate::a::b` or `super::x` form, resolved against the known
/// modules (the longest prefix that is a module).
fn imports(module: &str, code: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let bytes = code.as_bytes();
    let is_ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b':';
    for start_word in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(pos) = code[from..].find(start_word) {
            let at = from + pos;
            from = at + start_word.len();
            if at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_') {
                continue;
            }
            let mut end = at;
            while end < bytes.len() && is_ident(bytes[end]) {
                end += 1;
            }
            let path = &code[at..end];
            let mut segments: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
            let base: Vec<String> = if segments[0] == "crate" {
                segments.remove(0);
                Vec::new()
            } else {
                // super:: relative to this module (a mod.rs module's parent is its parent).
                let mut own: Vec<String> = module.split("::").map(String::from).collect();
                while segments.first() == Some(&"super") {
                    segments.remove(0);
                    own.pop();
                }
                own
            };
            let mut best = None;
            let mut candidate = base.clone();
            for seg in &segments {
                candidate.push(seg.to_string());
                let name = candidate.join("::");
                if modules.contains(&name) {
                    best = Some(name);
                }
            }
            if best.is_none() && !base.is_empty() {
                best = Some(base.join("::"));
            }
            if let Some(target) = best {
                if target != module && !module.starts_with(&format!("{target}::")) {
                    found.insert(target);
                }
            }
        }
    }
    found
}

fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let modules: BTreeSet<String> = files.iter().map(|f| module_of(f)).collect();
    files
        .iter()
        .map(|f| {
            let module = module_of(f);
            let code = production_code(&fs::read_to_string(f).unwrap());
            let deps = imports(&module, &code, &modules);
            (module, deps)
        })
        .collect()
}

fn top(module: &str) -> &str {
    module.split("::").next().unwrap()
}

/// Circles among top-level modules and among files (`cmd::a` ↔ `cmd::b` counts too).
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let nodes: Vec<&String> = graph.keys().collect();
    // Tarjan would do; the graph is small, so a DFS from each node finds each circle.
    for start in &nodes {
        let mut stack = vec![(start.to_string(), vec![start.to_string()])];
        let mut seen = BTreeSet::new();
        while let Some((node, path)) = stack.pop() {
            for next in graph.get(&node).into_iter().flatten() {
                // A parent module (foo/mod.rs) naturally names its children; that is
                // declaration, not an upward arrow, so only child → parent counts.
                if next == *start {
                    let mut circle = path.clone();
                    circle.push(next.clone());
                    if circle.iter().min() == Some(start) {
                        found.push(circle);
                    }
                } else if seen.insert(next.clone()) && next > start {
                    let mut p = path.clone();
                    p.push(next.clone());
                    stack.push((next.clone(), p));
                }
            }
        }
    }
    found
}

#[test]
fn the_import_graph_has_no_circles() {
    let mut g = graph();
    // `mod x;` in a parent is a declaration, not a dependency.
    for (module, deps) in g.iter_mut() {
        deps.retain(|d| !d.starts_with(&format!("{module}::")) && module != "crate");
    }
    let found = cycles(&g);
    assert!(
        found.is_empty(),
        "import circles in src/ (each is a chain of `use`s that comes back to its start):\n{}",
        found
            .iter()
            .map(|c| format!("  {}", c.join(" → ")))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn gatherers_never_import_rules_commands_or_renderers() {
    let g = graph();
    let mut wrong = Vec::new();
    for (module, deps) in &g {
        if !GATHERERS.contains(&top(module)) {
            continue;
        }
        for d in deps {
            if UPPER_LAYERS.contains(&top(d)) || RULE_MODULES.contains(&top(d)) {
                wrong.push(format!("  {module} imports {d}"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "fact gatherers import upper layers:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn rules_do_no_io_and_import_no_gatherer() {
    let g = graph();
    let mut wrong = Vec::new();
    for (module, deps) in &g {
        if !RULE_MODULES.contains(&top(module)) {
            continue;
        }
        for d in deps {
            if GATHERERS.contains(&top(d)) || ["cmd", "app", "render"].contains(&top(d)) {
                wrong.push(format!("  {module} imports {d}"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "rule modules import gatherers, commands or renderers:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn unsafe_lives_only_in_verbs() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let offenders: Vec<String> = files
        .iter()
        .filter(|f| !module_of(f).starts_with("gather::verbs"))
        .filter(|f| {
            let code = production_code(&fs::read_to_string(f).unwrap());
            code.contains("unsafe {") || code.contains("unsafe fn") || code.contains("unsafe impl")
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        offenders.is_empty(),
        "unsafe outside src/gather/verbs/: {offenders:?}"
    );
}

#[test]
fn no_text_points_at_a_document_the_project_does_not_ship() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    for extra in ["README.md", "DEVELOPERS.md"] {
        files.push(root.join(extra));
    }
    for dir in ["docs", "tests/vm", "man"] {
        for entry in fs::read_dir(root.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.is_file() {
                files.push(path);
            }
        }
    }
    let mut missing = Vec::new();
    for f in &files {
        let text = fs::read_to_string(f).unwrap();
        for (at, _) in text.match_indices("docs/") {
            let rest = &text[at..];
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || "/._-".contains(c)))
                .unwrap_or(rest.len());
            let doc = rest[..end].trim_end_matches('.');
            if doc.ends_with(".md") && !root.join(doc).exists() {
                missing.push(format!("{} names {doc}", f.display()));
            }
        }
        // The design notes this project grew from are not shipped; nothing may cite them.
        for cite in ["failure-modes", "softroce-vm.md", "design.md"] {
            if text.contains(cite) {
                missing.push(format!("{} cites {cite}", f.display()));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "references to documents not shipped: {missing:?}"
    );
}

#[test]
fn the_checker_sees_a_circle() {
    // The checker itself: a two-module circle and a three-module one are found.
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    g.insert("a".into(), ["b".to_string()].into());
    g.insert("b".into(), ["a".to_string()].into());
    g.insert("c".into(), ["d".to_string()].into());
    g.insert("d".into(), ["e".to_string()].into());
    g.insert("e".into(), ["c".to_string()].into());
    g.insert("f".into(), ["a".to_string()].into());
    let found = cycles(&g);
    assert_eq!(found.len(), 2, "{found:?}");
    let modules: BTreeSet<String> = ["x", "x::y", "z"].iter().map(|s| s.to_string()).collect();
    let deps = imports(
        "x::y",
        "use super::super::z::Thing; use crate::x::y::Q;",
        &modules,
    );
    assert_eq!(deps, ["z".to_string()].into());
}
