//! The layout of `src/` (DEVELOPERS.md's table), checked by folder: a new file is covered by
//! the folder it lands in, with no list to keep. Reads the sources; builds nothing.
//!
//! The rules, each one checker over (path, text) pairs, so the real tree and the small trees
//! planted in this file's own tests go through the same code:
//!
//! - `cmd/`: one module per subcommand (`cmd/x.rs`, with `cmd/x/` for its parts), and none
//!   imports another (`super::y` or `crate::cmd::y`); `cmd/mod.rs` only declares modules, so
//!   there is nothing in it to import.
//! - `diagnose/`, `render/`, `model/` do no I/O: no `std::fs`, `std::process`, `std::env`,
//!   `std::os`, no `std::io::{stdin, stdout, stderr}` and no print macros. From `std::net` only
//!   the address types (`IpAddr`, `Ipv4Addr`, `Ipv6Addr`, `SocketAddr`, `SocketAddrV4`,
//!   `SocketAddrV6`, `AddrParseError`) are allowed: they are values that facts carry, while
//!   sockets and name lookups talk to the system. From `libc` only constants (upper-case
//!   names: `EINVAL`, `SIGINT`): an errno or signal number is data a rule compares with; a
//!   libc function or type is a call into the system.
//! - `diagnose/`, `render/`, `model/` import nothing from `gather/`, `wire/`, `traffic/`,
//!   `cmd/` or `app`; `diagnose/` imports no renderer either (a rule says what it found,
//!   `render/` words it).
//! - `model/` imports nothing above it: only `model/` itself and leaf plumbing, a top-level
//!   file of `src/` that itself imports nothing from the crate (today `exit`: the exit-code
//!   numbers). Leaf is computed, not listed: plumbing that imports the CLI, the errors or the
//!   printers (as `output` does) would pull those under the vocabulary.
//! - `gather/` and `wire/` never import `diagnose/`, `render/`, `cmd/`, `traffic/` or `app`.
//! - `unsafe` only under `gather/verbs/`.
//! - No import circle among the files of `src/`, siblings of one folder included (a file and
//!   its own parent module do not count: the parent declares it).
//! - Each diagnostic code (`codes::NAME`) is emitted from one file: one question, one
//!   rule, so one cause and one fix wherever it is asked. A use that only compares
//!   (`== codes::X`, `!= codes::X`, a match arm `codes::X =>` or `codes::X |`, inside
//!   `matches!`) is not an emission; test files (`tests.rs`, `*_tests.rs`) and test items
//!   are exempt.
//! - And apart from the layout: no text names a document the project does not ship.
//!
//! Test code (`#[cfg(test)]` items) is exempt: tests may reach across layers to build
//! fixtures. Comments and string literals are not code, except a string that is a crate
//! path (`serialize_with = "crate::output::ser_3dp"`), which is an import in disguise.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Source files by path relative to `src/` (`cmd/check.rs`), with their text.
type Tree = BTreeMap<String, String>;

/// The folders whose code must do no I/O.
const PURE: &[&str] = &["diagnose", "render", "model"];
/// What a pure folder may never import.
const ABOVE_PURE: &[&str] = &["gather", "wire", "traffic", "ask", "cmd", "app"];
/// What the gatherers and the wire protocols may never import.
const ABOVE_GATHER: &[&str] = &["diagnose", "render", "cmd", "traffic", "ask", "app"];
/// `std::net` items that are plain values.
const NET_DATA: &[&str] = &[
    "IpAddr",
    "Ipv4Addr",
    "Ipv6Addr",
    "SocketAddr",
    "SocketAddrV4",
    "SocketAddrV6",
    "AddrParseError",
];
/// `std` modules that reach the system.
const STD_IO: &[&str] = &["fs", "process", "env", "os"];
/// Macros that write to the terminal.
const PRINTS: &[&str] = &["print", "println", "eprint", "eprintln", "dbg"];

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

/// `src/` as a [`Tree`].
fn real_tree() -> Tree {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    files
        .iter()
        .map(|f| {
            let rel = f.strip_prefix(src()).unwrap().to_string_lossy();
            (rel.replace('\\', "/"), fs::read_to_string(f).unwrap())
        })
        .collect()
}

/// `cmd/check.rs` → `cmd::check`; `gather/verbs/mod.rs` → `gather::verbs`; `main.rs` → `crate`.
fn module_of(path: &str) -> String {
    let mut parts: Vec<&str> = path.trim_end_matches(".rs").split('/').collect();
    if parts.last() == Some(&"mod") {
        parts.pop();
    }
    if parts == ["main"] {
        return "crate".into();
    }
    parts.join("::")
}

fn top(module: &str) -> &str {
    module.split("::").next().unwrap()
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Whether `s` is a path into this crate (`crate::output::ser_3dp`), as serde's
/// `serialize_with` strings are.
fn is_crate_path(s: &str) -> bool {
    let mut segs = s.split("::");
    matches!(segs.next(), Some("crate" | "super" | "self"))
        && s.contains("::")
        && segs.all(|seg| !seg.is_empty() && seg.chars().all(is_ident))
}

/// The text with comments removed and string and character literals emptied (a crate path
/// in a string is kept, unquoted). Lines stay where they were.
fn strip_comments_and_literals(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let prev_ident = |i: usize| i > 0 && is_ident(c[i - 1]);
    while i < c.len() {
        let at = |k: usize| c.get(k).copied().unwrap_or('\0');
        match c[i] {
            '/' if at(i + 1) == '/' => {
                while i < c.len() && c[i] != '\n' {
                    i += 1;
                }
            }
            '/' if at(i + 1) == '*' => {
                let mut depth = 0;
                while i < c.len() {
                    if c[i] == '/' && at(i + 1) == '*' {
                        depth += 1;
                        i += 2;
                    } else if c[i] == '*' && at(i + 1) == '/' {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        if c[i] == '\n' {
                            out.push('\n');
                        }
                        i += 1;
                    }
                }
            }
            'r' if (!prev_ident(i) || (i >= 1 && c[i - 1] == 'b' && !prev_ident(i - 1)))
                && (at(i + 1) == '"' || at(i + 1) == '#') =>
            {
                let mut hashes = 0;
                let mut j = i + 1;
                while at(j) == '#' {
                    hashes += 1;
                    j += 1;
                }
                if at(j) != '"' {
                    out.push('r');
                    i += 1;
                    continue;
                }
                j += 1;
                let start = j;
                loop {
                    if j >= c.len() {
                        break;
                    }
                    if c[j] == '"' && (1..=hashes).all(|h| at(j + h) == '#') {
                        break;
                    }
                    j += 1;
                }
                let body: String = c[start..j.min(c.len())].iter().collect();
                push_literal(&mut out, &body);
                i = j + 1 + hashes;
            }
            '"' => {
                let mut j = i + 1;
                while j < c.len() && c[j] != '"' {
                    if c[j] == '\\' {
                        j += 1;
                    }
                    j += 1;
                }
                let body: String = c[i + 1..j.min(c.len())].iter().collect();
                push_literal(&mut out, &body);
                i = j + 1;
            }
            '\'' if at(i + 1) == '\\' => {
                let mut j = i + 3;
                while j < c.len() && c[j] != '\'' {
                    j += 1;
                }
                out.push_str("' '");
                i = j + 1;
            }
            '\'' if at(i + 2) == '\'' => {
                out.push_str("' '");
                i += 3;
            }
            ch => {
                out.push(ch);
                i += 1;
            }
        }
    }
    out
}

/// A string literal's stand-in: its newlines (so lines keep their numbers), and a crate
/// path unquoted.
fn push_literal(out: &mut String, body: &str) {
    if is_crate_path(body) {
        out.push(' ');
        out.push_str(body);
        out.push(' ');
    } else {
        out.push_str("\"\"");
        for _ in body.matches('\n') {
            out.push('\n');
        }
    }
}

/// Whether a `#[cfg(...)]` predicate holds only under test.
fn is_test_cfg(attr: &str) -> bool {
    let a: String = attr.chars().filter(|c| !c.is_whitespace()).collect();
    let Some(pred) = a.strip_prefix("#[cfg(") else {
        return false;
    };
    let has_test = pred
        .split(|c: char| !is_ident(c))
        .any(|word| word == "test");
    has_test && !pred.contains("not(") && !pred.starts_with("any(")
}

/// The end (exclusive) of the attribute starting at `i` (`#[` ... `]`).
fn attribute_end(c: &[char], i: usize) -> usize {
    let mut depth = 0;
    let mut j = i;
    while j < c.len() {
        match c[j] {
            '[' => depth += 1,
            ']' => {
                depth -= 1;
                if depth == 0 {
                    return j + 1;
                }
            }
            _ => {}
        }
        j += 1;
    }
    c.len()
}

/// The end (exclusive) of the item starting at `i`: its first `;` outside brackets, or the
/// close of its first top-level `{ }` block.
fn item_end(c: &[char], mut i: usize) -> usize {
    // Further attributes belong to the same item.
    loop {
        while i < c.len() && c[i].is_whitespace() {
            i += 1;
        }
        if i + 1 < c.len() && c[i] == '#' && c[i + 1] == '[' {
            i = attribute_end(c, i);
        } else {
            break;
        }
    }
    let mut depth = 0i32;
    while i < c.len() {
        match c[i] {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ';' if depth == 0 => return i + 1,
            '{' if depth == 0 => {
                let mut braces = 0;
                while i < c.len() {
                    match c[i] {
                        '{' => braces += 1,
                        '}' => {
                            braces -= 1;
                            if braces == 0 {
                                return i + 1;
                            }
                        }
                        _ => {}
                    }
                    i += 1;
                }
                return c.len();
            }
            _ => {}
        }
        i += 1;
    }
    c.len()
}

/// The code of a file as it is built outside tests: comments, literals and `#[cfg(test)]`
/// items removed.
fn production_code(text: &str) -> String {
    let c: Vec<char> = strip_comments_and_literals(text).chars().collect();
    let mut out = String::with_capacity(c.len());
    let mut i = 0;
    while i < c.len() {
        if c[i] == '#' && c.get(i + 1) == Some(&'[') {
            let end = attribute_end(&c, i);
            let attr: String = c[i..end].iter().collect();
            if is_test_cfg(&attr) {
                let skip = item_end(&c, end);
                out.extend(c[i..skip].iter().filter(|&&ch| ch == '\n'));
                i = skip;
                continue;
            }
            out.push_str(&attr);
            i = end;
            continue;
        }
        out.push(c[i]);
        i += 1;
    }
    out
}

/// Every path that starts with `root::` (`crate`, `super`, `std`, `libc`) at a word
/// boundary, with `use` groups expanded: `use crate::{a::b, c}` gives `a::b` and `c`. The
/// root itself is left off; `*` stands for a glob.
fn paths_from(code: &str, root: &str) -> Vec<Vec<String>> {
    let c: Vec<char> = code.chars().collect();
    let r: Vec<char> = root.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i + r.len() + 2 <= c.len() {
        let matches_root = c[i..i + r.len()] == r[..]
            && c[i + r.len()] == ':'
            && c.get(i + r.len() + 1) == Some(&':');
        let boundary = i == 0 || !(is_ident(c[i - 1]) || c[i - 1] == ':')
            // `::std::x` names std from the extern prelude.
            || (i >= 2 && c[i - 1] == ':' && c[i - 2] == ':' && (i < 3 || !is_ident(c[i - 3])));
        let ident_before_colons = i >= 3 && c[i - 1] == ':' && is_ident(c[i - 3]);
        if matches_root && boundary && !ident_before_colons {
            let mut j = i + r.len() + 2;
            parse_tree(&c, &mut j, Vec::new(), &mut out);
            i = j.max(i + 1);
        } else {
            i += 1;
        }
    }
    out
}

fn skip_ws(c: &[char], j: &mut usize) {
    while *j < c.len() && c[*j].is_whitespace() {
        *j += 1;
    }
}

fn ident_at(c: &[char], j: &mut usize) -> String {
    let start = *j;
    while *j < c.len() && is_ident(c[*j]) {
        *j += 1;
    }
    c[start..*j].iter().collect()
}

/// One use tree at `j` (just after a `::`): a segment, a `{...}` group or `*`.
fn parse_tree(c: &[char], j: &mut usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    skip_ws(c, j);
    match c.get(*j) {
        Some('{') => {
            *j += 1;
            loop {
                skip_ws(c, j);
                match c.get(*j) {
                    None => return,
                    Some('}') => {
                        *j += 1;
                        return;
                    }
                    Some(',') => *j += 1,
                    Some(_) => {
                        let before = *j;
                        parse_tree(c, j, prefix.clone(), out);
                        if *j == before {
                            *j += 1;
                        }
                    }
                }
            }
        }
        Some('*') => {
            *j += 1;
            let mut p = prefix;
            p.push("*".into());
            out.push(p);
        }
        Some(&ch) if is_ident(ch) => {
            let seg = ident_at(c, j);
            let mut p = prefix;
            if seg != "self" {
                p.push(seg);
            }
            let mut k = *j;
            skip_ws(c, &mut k);
            let more = c.get(k) == Some(&':')
                && c.get(k + 1) == Some(&':')
                && c.get(k + 2)
                    .is_some_and(|&n| is_ident(n) || n == '{' || n == '*');
            if more {
                *j = k + 2;
                parse_tree(c, j, p, out);
            } else {
                // `as name` renames; the path stays the same.
                skip_ws(c, &mut k);
                if c[k..].starts_with(&['a', 's', ' ']) {
                    *j = k + 3;
                    skip_ws(c, j);
                    ident_at(c, j);
                }
                out.push(p);
            }
        }
        _ => {}
    }
}

/// The modules of this crate a file's code names (`crate::a::b`, `super::x`), each resolved
/// to the longest prefix that is a module; `super::x` where `x` is no module names the
/// parent itself.
fn imports(module: &str, code: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let own: Vec<String> = if module == "crate" {
        Vec::new()
    } else {
        module.split("::").map(String::from).collect()
    };
    let mut named: Vec<(Vec<String>, Vec<String>)> = paths_from(code, "crate")
        .into_iter()
        .map(|p| (Vec::new(), p))
        .collect();
    for p in paths_from(code, "super") {
        let mut base = own.clone();
        base.pop();
        let mut rest = p.as_slice();
        while rest.first().is_some_and(|s| s == "super") {
            base.pop();
            rest = &rest[1..];
        }
        named.push((base, rest.to_vec()));
    }
    for (base, rest) in named {
        let mut best = (!base.is_empty()).then(|| base.join("::"));
        let mut candidate = base;
        for seg in rest {
            candidate.push(seg);
            let name = candidate.join("::");
            if modules.contains(&name) {
                best = Some(name);
            }
        }
        if let Some(target) = best {
            if target != module {
                found.insert(target);
            }
        }
    }
    found
}

/// Each module of the tree with the modules its production code imports.
fn graph(tree: &Tree) -> BTreeMap<String, (String, BTreeSet<String>)> {
    let modules: BTreeSet<String> = tree.keys().map(|p| module_of(p)).collect();
    tree.iter()
        .map(|(path, text)| {
            let module = module_of(path);
            let deps = imports(&module, &production_code(text), &modules);
            (module, (path.clone(), deps))
        })
        .collect()
}

/// Whether `module` lies in top-level folder `folder` (`gather::net` in `gather`).
fn under(module: &str, folder: &str) -> bool {
    top(module) == folder
}

/// `cmd/` modules import no other `cmd/` module, and `cmd/mod.rs` only declares modules.
fn cmd_modules_stand_alone(tree: &Tree) -> Vec<String> {
    let mut wrong = Vec::new();
    for (module, (path, deps)) in graph(tree) {
        if !under(&module, "cmd") {
            continue;
        }
        let own = module.split("::").nth(1);
        for d in &deps {
            let other = d.split("::").nth(1);
            if under(d, "cmd") && (other.is_none() || other != own) {
                wrong.push(format!("{path} ({module}) imports {d}"));
            }
        }
    }
    if let Some(text) = tree.get("cmd/mod.rs") {
        wrong.extend(
            not_declarations(&production_code(text))
                .into_iter()
                .map(|s| format!("cmd/mod.rs holds more than module declarations: `{s}`")),
        );
    }
    wrong
}

/// The statements of a module's code that are not `mod x;` / `pub mod x;` (attributes
/// aside).
fn not_declarations(code: &str) -> Vec<String> {
    let c: Vec<char> = code.chars().collect();
    let mut rest = String::new();
    let mut i = 0;
    while i < c.len() {
        if c[i] == '#' && (c.get(i + 1) == Some(&'[') || c.get(i + 1) == Some(&'!')) {
            let open = if c[i + 1] == '!' { i + 1 } else { i };
            i = attribute_end(&c, open);
            continue;
        }
        rest.push(c[i]);
        i += 1;
    }
    let mut odd = Vec::new();
    let mut statement = String::new();
    for ch in rest.chars() {
        statement.push(ch);
        if ch == ';' || ch == '}' {
            let s = statement.split_whitespace().collect::<Vec<_>>().join(" ");
            let words: Vec<&str> = s.trim_end_matches(';').split(' ').collect();
            let declares = ch == ';'
                && matches!(
                    words.as_slice(),
                    ["mod", name] | ["pub" | "pub(crate)", "mod", name]
                        if name.chars().all(is_ident)
                );
            if !declares {
                odd.push(s);
            }
            statement.clear();
        }
    }
    let tail = statement.trim();
    if !tail.is_empty() {
        odd.push(tail.split_whitespace().collect::<Vec<_>>().join(" "));
    }
    odd
}

/// What in a pure folder's code reaches the system: a `std` I/O module, a socket, a libc
/// call or type, a terminal handle, a print macro.
fn io_in(code: &str) -> Vec<String> {
    let mut found = Vec::new();
    for p in paths_from(code, "std") {
        let first = p.first().map(String::as_str).unwrap_or("*");
        let second = p.get(1).map(String::as_str);
        let reaches = STD_IO.contains(&first)
            || first == "*"
            || (first == "net" && !second.is_some_and(|s| NET_DATA.contains(&s)))
            || (first == "io"
                && second.is_some_and(|s| ["stdin", "stdout", "stderr", "*"].contains(&s)));
        if reaches {
            found.push(format!("std::{}", p.join("::")));
        }
    }
    for p in paths_from(code, "libc") {
        let name = p.first().map(String::as_str).unwrap_or("*");
        let constant = name
            .chars()
            .all(|ch| ch.is_ascii_uppercase() || ch.is_ascii_digit() || ch == '_');
        if !constant || name.is_empty() {
            found.push(format!("libc::{}", p.join("::")));
        }
    }
    let c: Vec<char> = code.chars().collect();
    for m in PRINTS {
        let pat: Vec<char> = format!("{m}!").chars().collect();
        for i in 0..c.len().saturating_sub(pat.len() - 1) {
            if c[i..i + pat.len()] == pat[..] && (i == 0 || !is_ident(c[i - 1])) {
                found.push(format!("{m}!"));
            }
        }
    }
    found
}

/// `diagnose/`, `render/` and `model/` do no I/O.
fn pure_folders_do_no_io(tree: &Tree) -> Vec<String> {
    let mut wrong = Vec::new();
    for (path, text) in tree {
        if !PURE.contains(&top(&module_of(path))) {
            continue;
        }
        for what in io_in(&production_code(text)) {
            wrong.push(format!("{path} uses {what}"));
        }
    }
    wrong
}

/// `diagnose/`, `render/` and `model/` import no gatherer, protocol, engine or command;
/// `diagnose/` imports no renderer.
fn pure_folders_import_nothing_that_does_io(tree: &Tree) -> Vec<String> {
    let mut wrong = Vec::new();
    for (module, (path, deps)) in graph(tree) {
        let folder = top(&module);
        if !PURE.contains(&folder) {
            continue;
        }
        for d in &deps {
            let banned =
                ABOVE_PURE.contains(&top(d)) || (folder == "diagnose" && under(d, "render"));
            if banned {
                wrong.push(format!("{path} ({module}) imports {d}"));
            }
        }
    }
    wrong
}

/// `model/` imports only `model/` and leaf plumbing (a top-level file of `src/` that
/// imports nothing from the crate).
fn model_imports_only_model_and_leaf_plumbing(tree: &Tree) -> Vec<String> {
    let g = graph(tree);
    let is_leaf_plumbing = |m: &str| {
        !m.contains("::")
            && m != "crate"
            && !g.keys().any(|k| k.starts_with(&format!("{m}::")))
            && g.get(m).is_some_and(|(_, deps)| deps.is_empty())
    };
    let mut wrong = Vec::new();
    for (module, (path, deps)) in &g {
        if !under(module, "model") {
            continue;
        }
        for d in deps {
            if !under(d, "model") && !is_leaf_plumbing(d) {
                wrong.push(format!("{path} ({module}) imports {d}"));
            }
        }
    }
    wrong
}

/// `gather/` and `wire/` import no rule, renderer, command, engine or `app`.
fn gatherers_import_nothing_above_them(tree: &Tree) -> Vec<String> {
    let mut wrong = Vec::new();
    for (module, (path, deps)) in graph(tree) {
        if !["gather", "wire"].contains(&top(&module)) {
            continue;
        }
        for d in &deps {
            if ABOVE_GATHER.contains(&top(d)) {
                wrong.push(format!("{path} ({module}) imports {d}"));
            }
        }
    }
    wrong
}

/// `unsafe` only under `gather/verbs/`.
fn unsafe_only_in_verbs(tree: &Tree) -> Vec<String> {
    tree.iter()
        .filter(|(path, _)| !path.starts_with("gather/verbs/"))
        .filter(|(_, text)| {
            production_code(text)
                .split(|c: char| !is_ident(c))
                .any(|word| word == "unsafe")
        })
        .map(|(path, _)| format!("{path} uses unsafe"))
        .collect()
}

/// Type names with more than one definition in production code: a name means one thing
/// across the crate, so a reader who meets `Report` or `PortInfo` knows which one it is.
/// Associated types (`type Target = str;` inside an impl) are not definitions of a name.
fn type_names_defined_twice(tree: &Tree) -> Vec<String> {
    let mut defined: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (path, text) in tree {
        let code = production_code(text);
        for line in code.lines() {
            let words: Vec<&str> = line
                .split(|c: char| !is_ident(c))
                .filter(|w| !w.is_empty())
                .collect();
            let item = words
                .iter()
                .position(|w| ["struct", "enum", "trait", "type"].contains(w));
            let Some(at) = item else { continue };
            // Only item definitions: what precedes the keyword is visibility, nothing else.
            if !words[..at]
                .iter()
                .all(|w| ["pub", "crate", "super", "self", "in"].contains(w))
            {
                continue;
            }
            // An associated type is indented inside its impl or trait, and a type local to
            // one function body (eight spaces or more) is that function's own; an inline
            // `mod x { }` indents its items by four.
            let indent = line.len() - line.trim_start().len();
            if (indent > 0 && words[at] == "type") || indent >= 8 {
                continue;
            }
            if let Some(name) = words.get(at + 1) {
                defined
                    .entry(name.to_string())
                    .or_default()
                    .push(path.clone());
            }
        }
    }
    defined
        .into_iter()
        .filter(|(_, paths)| paths.len() > 1)
        .map(|(name, paths)| format!("{name} is defined in {}", paths.join(", ")))
        .collect()
}

/// Codes allowed to be emitted from more than one file while their rules are being merged:
/// none now. A code put here must really be duplicated (the test says when it no longer is).
const STILL_DUPLICATED: &[&str] = &[];

/// A file of tests by its name (declared `#[cfg(test)] mod tests;` by its parent).
fn is_test_file(path: &str) -> bool {
    let stem = path
        .rsplit('/')
        .next()
        .unwrap_or(path)
        .trim_end_matches(".rs");
    stem == "tests" || stem.ends_with("_tests")
}

/// Whether position `at` of `c` lies inside the parentheses of a `matches!(...)`.
fn inside_matches(c: &[char], at: usize) -> bool {
    let mut depth = 0i32;
    let mut i = at;
    while i > 0 {
        i -= 1;
        match c[i] {
            ')' | ']' | '}' => depth += 1,
            '(' | '[' | '{' if depth > 0 => depth -= 1,
            '(' => {
                let before: String = c[i.saturating_sub(8)..i].iter().collect();
                if before.ends_with("matches!") {
                    return true;
                }
            }
            // A `;` or a block opening at depth 0 ends the expression the code sits in.
            ';' | '{' if depth == 0 => return false,
            _ => {}
        }
    }
    false
}

/// Whether position `at` sits directly in a `[...]` list: the innermost bracket open
/// before it is a `[`.
fn inside_list(c: &[char], at: usize) -> bool {
    let mut depth = 0usize;
    for &ch in c[..at].iter().rev() {
        match ch {
            ')' | ']' | '}' => depth += 1,
            '(' | '{' if depth == 0 => return false,
            '[' if depth == 0 => return true,
            '(' | '[' | '{' => depth -= 1,
            _ => {}
        }
    }
    false
}

/// The `codes::NAME` a file emits: every use that is not a comparison.
fn codes_emitted(code: &str) -> BTreeSet<String> {
    let c: Vec<char> = code.chars().collect();
    let needle: Vec<char> = "codes::".chars().collect();
    let mut out = BTreeSet::new();
    let mut i = 0;
    while i + needle.len() <= c.len() {
        if c[i..i + needle.len()] != needle[..] || (i > 0 && is_ident(c[i - 1])) {
            i += 1;
            continue;
        }
        let start = i + needle.len();
        let mut end = start;
        while end < c.len()
            && (c[end].is_ascii_uppercase() || c[end].is_ascii_digit() || c[end] == '_')
        {
            end += 1;
        }
        i = end.max(i + 1);
        if end == start || (end < c.len() && is_ident(c[end])) {
            continue;
        }
        let name: String = c[start..end].iter().collect();
        // The two characters before the path (`crate::model::` and spaces skipped) and the
        // two after it.
        let mut b = start - needle.len();
        while b > 0 && (is_ident(c[b - 1]) || c[b - 1] == ':') {
            b -= 1;
        }
        while b > 0 && c[b - 1].is_whitespace() {
            b -= 1;
        }
        let before: String = c[b.saturating_sub(2)..b].iter().collect();
        let after: String = c[end..]
            .iter()
            .skip_while(|ch| ch.is_whitespace())
            .take(2)
            .collect();
        let compared = before.ends_with("==")
            || before.ends_with("!=")
            || after.starts_with("==")
            || after.starts_with("!=")
            || after.starts_with("=>")
            || (after.starts_with('|') && !after.starts_with("||"))
            || inside_matches(&c, start)
            // A key to look a finding up by (`&codes::X`), or one of a list of codes a
            // finding is matched against (`[codes::A, codes::B].contains(..)`).
            || (before.ends_with('&') && !before.ends_with("&&"))
            || inside_list(&c, b);
        if !compared {
            out.insert(name);
        }
    }
    out
}

/// Codes emitted from more than one file, with the files; `allowed` are left out.
fn codes_emitted_twice(tree: &Tree, allowed: &[&str]) -> Vec<String> {
    let mut by_code: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (path, text) in tree {
        if is_test_file(path) {
            continue;
        }
        for name in codes_emitted(&production_code(text)) {
            by_code.entry(name).or_default().push(path.clone());
        }
    }
    by_code
        .into_iter()
        .filter(|(name, files)| files.len() > 1 && !allowed.contains(&name.as_str()))
        .map(|(name, files)| format!("codes::{name} is emitted from {}", files.join(", ")))
        .collect()
}

/// Circles among the files' imports (`cmd::a` → `cmd::b` → `cmd::a`), each as the chain of
/// imports that comes back to its start. A module and its own parent or children do not
/// count: a parent declares its children, and that is not an upward arrow.
fn import_circles(tree: &Tree) -> Vec<String> {
    let g: BTreeMap<String, BTreeSet<String>> = graph(tree)
        .into_iter()
        .map(|(module, (_, deps))| {
            let related = |d: &String| {
                module == "crate"
                    || d.starts_with(&format!("{module}::"))
                    || module.starts_with(&format!("{d}::"))
            };
            let deps = deps.into_iter().filter(|d| !related(d)).collect();
            (module, deps)
        })
        .collect();
    cycles(&g).into_iter().map(|c| c.join(" → ")).collect()
}

fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    // Tarjan would do; the graph is small, so a DFS from each node finds each circle,
    // reported once from its smallest module.
    for start in graph.keys() {
        let mut stack = vec![(start.clone(), vec![start.clone()])];
        let mut seen = BTreeSet::new();
        while let Some((node, path)) = stack.pop() {
            for next in graph.get(&node).into_iter().flatten() {
                if next == start {
                    let mut circle = path.clone();
                    circle.push(next.clone());
                    found.push(circle);
                } else if next > start && seen.insert(next.clone()) {
                    let mut p = path.clone();
                    p.push(next.clone());
                    stack.push((next.clone(), p));
                }
            }
        }
    }
    found
}

fn assert_none(rule: &str, wrong: Vec<String>) {
    assert!(
        wrong.is_empty(),
        "{rule} (tests/architecture.rs says why):\n{}",
        wrong
            .iter()
            .map(|w| format!("  {w}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// One question, one rule: each diagnostic code is built into a `Diagnostic` in one file
/// (issue 37), apart from the codes other branches are still merging.
#[test]
fn each_code_is_emitted_from_one_file() {
    assert_none(
        "a code emitted from more than one file",
        codes_emitted_twice(&real_tree(), STILL_DUPLICATED),
    );
    // The allow-list holds only codes that are still duplicated: one merged leaves it.
    let all = codes_emitted_twice(&real_tree(), &[]);
    for name in STILL_DUPLICATED {
        assert!(
            all.iter()
                .any(|w| w.starts_with(&format!("codes::{name} is emitted"))),
            "codes::{name} is emitted from one file now: take it off STILL_DUPLICATED"
        );
    }
}

/// The rules pass vacuously on a folder that is not there: each one they name is.
#[test]
fn every_folder_the_rules_name_exists() {
    let tree = real_tree();
    for folder in [
        "cmd/",
        "diagnose/",
        "render/",
        "model/",
        "gather/",
        "gather/verbs/",
        "wire/",
        "traffic/",
    ] {
        assert!(
            tree.keys().any(|p| p.starts_with(folder)),
            "src/{folder} holds no .rs file: the layout rules name it"
        );
    }
}

#[test]
fn cmd_modules_import_no_other_cmd_module() {
    assert_none(
        "a cmd/ module imports another",
        cmd_modules_stand_alone(&real_tree()),
    );
}

#[test]
fn diagnose_render_and_model_do_no_io() {
    assert_none(
        "diagnose/, render/ or model/ reach the system",
        pure_folders_do_no_io(&real_tree()),
    );
}

#[test]
fn diagnose_render_and_model_import_no_gatherer_engine_or_command() {
    assert_none(
        "diagnose/, render/ or model/ import a layer that does I/O",
        pure_folders_import_nothing_that_does_io(&real_tree()),
    );
}

#[test]
fn model_imports_nothing_above_it() {
    assert_none(
        "model/ imports a module above it",
        model_imports_only_model_and_leaf_plumbing(&real_tree()),
    );
}

#[test]
fn gather_and_wire_import_no_rule_renderer_engine_or_command() {
    assert_none(
        "gather/ or wire/ import an upper layer",
        gatherers_import_nothing_above_them(&real_tree()),
    );
}

#[test]
fn unsafe_lives_only_in_gather_verbs() {
    assert_none(
        "unsafe outside src/gather/verbs/",
        unsafe_only_in_verbs(&real_tree()),
    );
}

#[test]
fn every_type_name_has_one_meaning() {
    assert_none(
        "a type name is defined twice",
        type_names_defined_twice(&real_tree()),
    );
}

#[test]
fn the_import_graph_has_no_circles() {
    assert_none("import circles in src/", import_circles(&real_tree()));
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

/// The paths the layout table of DEVELOPERS.md names: the backticked items of each row's
/// first cell. A row may name siblings after its first path (`src/render/table.rs`,
/// `inventory.rs`): a bare name is a file in the first path's folder.
fn layout_rows(developers_md: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in developers_md.lines() {
        let Some(cell) = line.strip_prefix("| ").filter(|c| c.starts_with('`')) else {
            continue;
        };
        let cell = &cell[..cell.find(" |").unwrap_or(cell.len())];
        // Odd pieces of the cell split at backticks are the quoted paths.
        let items: Vec<&str> = cell.split('`').skip(1).step_by(2).collect();
        let Some(first) = items.first() else { continue };
        let folder = match first.rfind('/') {
            Some(i) if !first.ends_with('/') => &first[..=i],
            _ => "",
        };
        for item in &items {
            if item.contains('/') {
                out.push(item.to_string());
            } else {
                out.push(format!("{folder}{item}"));
            }
        }
    }
    out
}

/// Every file of the tree (paths relative to `src/`) that no row of the layout covers (a
/// row covers its file, or everything under its folder), and every `src/` row that names
/// nothing in the tree.
fn layout_disagrees(tree: &Tree, rows: &[String]) -> Vec<String> {
    let rows: Vec<&str> = rows.iter().filter_map(|r| r.strip_prefix("src/")).collect();
    let covers =
        |row: &str, file: &str| file == row || (row.ends_with('/') && file.starts_with(row));
    let mut wrong: Vec<String> = tree
        .keys()
        .filter(|file| !rows.iter().any(|row| covers(row, file)))
        .map(|file| format!("src/{file} has no row in DEVELOPERS.md's layout table"))
        .collect();
    wrong.extend(
        rows.iter()
            .filter(|row| !tree.keys().any(|file| covers(row, file)))
            .map(|row| format!("DEVELOPERS.md names src/{row}, which is not in the tree")),
    );
    wrong
}

#[test]
fn developers_md_has_one_row_for_every_file_or_folder() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let text = fs::read_to_string(root.join("DEVELOPERS.md")).expect("DEVELOPERS.md");
    let rows = layout_rows(&text);
    assert_none(
        "the layout table and src/ disagree",
        layout_disagrees(&real_tree(), &rows),
    );
    // Rows outside src/ name files and folders of the repository.
    let missing: Vec<String> = rows
        .iter()
        .filter(|r| !r.starts_with("src/") && !root.join(r).exists())
        .map(|r| format!("DEVELOPERS.md names {r}, which does not exist"))
        .collect();
    assert_none("the layout table names what is not there", missing);
}

/// The checkers themselves, on small planted trees: each rule reports its violation, and a
/// tree that keeps every rule passes all of them.
mod planted {
    use super::*;

    /// A tree that keeps every rule, in the shapes the real one uses.
    fn clean() -> Tree {
        [
            ("main.rs", "mod cmd;\nmod model;\nmod exit;\nmod output;\nfn main() { cmd::doctor::run(); }\n"),
            ("exit.rs", "pub const FAILED: u8 = 1;\n"),
            ("output.rs", "use crate::cmd;\npub fn ser_3dp() {}\npub fn note(s: &str) { eprintln!(\"{s}\"); }\n"),
            ("cmd/mod.rs", "//! One module per subcommand.\n\npub mod doctor;\n#[cfg(test)]\nmod tests;\npub mod selftest;\n"),
            ("cmd/doctor.rs", "use crate::gather::net;\nuse crate::diagnose::doctor as rules;\nuse crate::render::{table, findings::text};\npub fn run() { println!(\"{}\", text()); }\n#[cfg(test)]\nmod tests {\n    use super::super::selftest;\n}\n"),
            ("cmd/selftest.rs", "mod semantics;\nuse crate::traffic::selftest::{self as engine};\n"),
            ("cmd/selftest/semantics.rs", "use super::{Tester, pattern};\n"),
            ("diagnose/mod.rs", "pub mod doctor;\n"),
            ("diagnose/doctor.rs", "use std::net::{IpAddr, SocketAddr};\nuse std::collections::BTreeMap;\nuse crate::model::facts::Facts;\n// std::fs::read is what a gatherer would call\nfn f(e: i32) -> bool { let s = \"std::process::exit\"; e == libc::EINVAL || e == libc::EAGAIN }\n#[cfg(test)]\nmod tests {\n    use crate::gather::net;\n    fn t() { std::fs::read(\"x\").unwrap(); }\n}\n"),
            ("render/mod.rs", "pub mod findings;\npub mod table;\n"),
            ("render/findings.rs", "use crate::model::diagnostic::Finding;\nuse crate::diagnose::doctor;\nuse std::fmt::Write;\npub fn text() -> String { let mut s = String::new(); writeln!(s, \"eprintln!\").unwrap(); s }\n"),
            ("render/table.rs", "use crate::output::Style;\n"),
            ("model/mod.rs", "pub mod facts;\npub mod diagnostic;\npub mod results;\n"),
            ("model/facts.rs", "use std::net::Ipv4Addr;\npub struct Facts { pub ipv4: Vec<(std::net::Ipv4Addr, u8)>, pub sig: i32 }\nconst S: i32 = libc::SIGINT;\n"),
            ("model/diagnostic.rs", "use super::facts::Facts;\nfn code() -> u8 { crate::exit::FAILED }\n"),
            ("model/results.rs", "#[derive(Serialize)]\npub struct R { #[serde(serialize_with = \"super::facts::ser\")] pub x: f64 }\nfn c() -> char { '\"' }\n"),
            ("gather/mod.rs", "pub mod net;\npub mod verbs;\n"),
            ("gather/net.rs", "use std::net::TcpStream;\nuse crate::model::facts::Facts;\n"),
            ("gather/verbs/mod.rs", "pub fn open() { unsafe { sys::open() } }\n"),
            ("wire/exchange.rs", "use crate::model::facts::Facts;\nuse crate::gather::net;\n"),
            ("traffic/selftest.rs", "use crate::gather::verbs;\n"),
        ]
        .into_iter()
        .map(|(p, t)| (p.to_string(), t.to_string()))
        .collect()
    }

    /// The clean tree with one file added or replaced.
    fn with(path: &str, text: &str) -> Tree {
        let mut t = clean();
        t.insert(path.into(), text.into());
        t
    }

    fn every_rule(tree: &Tree) -> Vec<String> {
        [
            cmd_modules_stand_alone(tree),
            pure_folders_do_no_io(tree),
            pure_folders_import_nothing_that_does_io(tree),
            model_imports_only_model_and_leaf_plumbing(tree),
            gatherers_import_nothing_above_them(tree),
            unsafe_only_in_verbs(tree),
            import_circles(tree),
            type_names_defined_twice(tree),
        ]
        .concat()
    }

    /// A code built in two files is reported; comparing with it, a match arm, `matches!`,
    /// a test item and a tests file are not emissions.
    #[test]
    fn a_code_emitted_from_two_files_is_reported() {
        let mut tree = Tree::new();
        tree.insert(
            "diagnose/port_state.rs".into(),
            "fn f() -> D { D::explanation(codes::PORT_STATE, \"down\", \"fix\") }\n".into(),
        );
        tree.insert(
            "diagnose/wait.rs".into(),
            concat!(
                "fn g(f: &D) -> bool { f.code == codes::PORT_STATE || codes::PORT_STATE != f.code }\n",
                "fn h(c: Code) -> u8 { match c { codes::PORT_STATE => 1, codes::NETDEV | codes::LID => 2, _ => 3 } }\n",
                "fn k(c: &Code) -> bool { matches!(*c, codes::PORT_STATE | codes::NETDEV) }\n",
                "fn l(c: &Code) -> bool { [codes::PORT_STATE, codes::NETDEV].contains(c) }\n",
                "fn m(f: &[D]) -> Option<&D> { find(f, &codes::PORT_STATE) }\n",
                "fn n(c: &Code) -> bool { *c == crate::model::codes::PORT_STATE }\n",
                "#[cfg(test)]\nmod tests {\n    fn t() { D::finding(codes::PORT_STATE) }\n}\n",
            )
            .into(),
        );
        tree.insert(
            "diagnose/datapath/tests.rs".into(),
            "fn t() { D::finding(codes::PORT_STATE) }\n".into(),
        );
        assert_eq!(codes_emitted_twice(&tree, &[]), Vec::<String>::new());
        tree.insert(
            "diagnose/check.rs".into(),
            "fn c() -> Vec<D> { vec![D::finding(Severity::Fail, codes::PORT_STATE, \"is DOWN\")] }\n".into(),
        );
        assert_eq!(
            codes_emitted_twice(&tree, &[]),
            ["codes::PORT_STATE is emitted from diagnose/check.rs, diagnose/port_state.rs"]
        );
        assert_eq!(
            codes_emitted_twice(&tree, &["PORT_STATE"]),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_tree_that_keeps_every_rule_passes() {
        assert_eq!(every_rule(&clean()), Vec::<String>::new());
    }

    #[test]
    fn a_cmd_module_that_imports_another_is_reported() {
        for text in [
            "use super::selftest::run;\n",
            "use crate::cmd::selftest;\n",
            "use crate::{model::facts::Facts, cmd::selftest::semantics};\n",
            "fn f() { super::selftest::run() }\n",
        ] {
            let wrong = cmd_modules_stand_alone(&with("cmd/doctor.rs", text));
            assert!(
                wrong
                    .iter()
                    .any(|w| w.starts_with("cmd/doctor.rs (cmd::doctor) imports cmd::selftest")),
                "{text:?}: {wrong:?}"
            );
        }
        // A part of a subcommand reaching another subcommand.
        let wrong = cmd_modules_stand_alone(&with(
            "cmd/selftest/semantics.rs",
            "use super::super::doctor;\n",
        ));
        assert_eq!(
            wrong,
            ["cmd/selftest/semantics.rs (cmd::selftest::semantics) imports cmd::doctor"]
        );
        // Something shared in cmd/mod.rs is an import of cmd from each user.
        let wrong = cmd_modules_stand_alone(&with("cmd/doctor.rs", "use super::device_port;\n"));
        assert_eq!(wrong, ["cmd/doctor.rs (cmd::doctor) imports cmd"]);
    }

    #[test]
    fn a_cmd_mod_rs_with_more_than_declarations_is_reported() {
        let wrong = cmd_modules_stand_alone(&with(
            "cmd/mod.rs",
            "pub mod doctor;\npub mod selftest;\nuse crate::model::facts::Facts;\npub fn device_port() -> u8 {\n    1\n}\n",
        ));
        assert_eq!(
            wrong,
            [
                "cmd/mod.rs holds more than module declarations: `use crate::model::facts::Facts;`",
                "cmd/mod.rs holds more than module declarations: `pub fn device_port() -> u8 { 1 }`",
            ]
        );
    }

    #[test]
    fn io_in_a_pure_folder_is_reported() {
        let cases = [
            ("diagnose/doctor.rs", "use std::fs;\n", "std::fs"),
            (
                "diagnose/doctor.rs",
                "fn f() { let _ = std::fs::read_to_string(\"/proc/meminfo\"); }\n",
                "std::fs::read_to_string",
            ),
            (
                "render/findings.rs",
                "use std::{fmt, io::stdout};\n",
                "std::io::stdout",
            ),
            (
                "render/findings.rs",
                "pub fn show(s: &str) { println!(\"{s}\"); }\n",
                "println!",
            ),
            (
                "render/findings.rs",
                "fn f() { eprintln!(\"x\") }\n",
                "eprintln!",
            ),
            (
                "model/facts.rs",
                "use std::net::{IpAddr, TcpStream};\n",
                "std::net::TcpStream",
            ),
            (
                "model/facts.rs",
                "fn f() { std::process::Command::new(\"ip\"); }\n",
                "std::process::Command::new",
            ),
            (
                "diagnose/doctor.rs",
                "fn home() -> bool { ::std::env::var_os(\"HOME\").is_some() }\n",
                "std::env::var_os",
            ),
            (
                "diagnose/doctor.rs",
                "fn pid() -> i32 { unsafe { libc::getpid() } }\n",
                "libc::getpid",
            ),
            (
                "model/facts.rs",
                "use libc::{EINVAL, rlimit};\n",
                "libc::rlimit",
            ),
        ];
        for (path, text, what) in cases {
            let wrong = pure_folders_do_no_io(&with(path, text));
            assert_eq!(wrong, [format!("{path} uses {what}")], "{text:?}");
        }
    }

    #[test]
    fn a_pure_folder_importing_a_layer_that_does_io_is_reported() {
        for (path, text, target) in [
            (
                "diagnose/doctor.rs",
                "use crate::gather::net::route_get;\n",
                "gather::net",
            ),
            (
                "render/findings.rs",
                "use crate::{model::facts::Facts, traffic::selftest};\n",
                "traffic::selftest",
            ),
            (
                "model/facts.rs",
                "use crate::wire::exchange::Dest;\n",
                "wire::exchange",
            ),
            (
                "render/table.rs",
                "fn f() { crate::cmd::doctor::run() }\n",
                "cmd::doctor",
            ),
            (
                "diagnose/doctor.rs",
                "use crate::render::findings::text;\n",
                "render::findings",
            ),
        ] {
            let wrong = pure_folders_import_nothing_that_does_io(&with(path, text));
            assert_eq!(
                wrong,
                [format!("{path} ({}) imports {target}", module_of(path))],
                "{text:?}"
            );
        }
    }

    #[test]
    fn model_importing_above_it_is_reported() {
        // output imports cmd here, so it is no leaf; a serde helper path in a string counts.
        let wrong = model_imports_only_model_and_leaf_plumbing(&with(
            "model/results.rs",
            "pub struct R { #[serde(serialize_with = \"crate::output::ser_3dp\")] pub x: f64 }\n",
        ));
        assert_eq!(wrong, ["model/results.rs (model::results) imports output"]);
        let wrong = model_imports_only_model_and_leaf_plumbing(&with(
            "model/facts.rs",
            "use crate::diagnose::doctor;\n",
        ));
        assert_eq!(
            wrong,
            ["model/facts.rs (model::facts) imports diagnose::doctor"]
        );
    }

    #[test]
    fn a_gatherer_importing_an_upper_layer_is_reported() {
        for (path, text, target) in [
            (
                "gather/net.rs",
                "use crate::diagnose::doctor::rules;\n",
                "diagnose::doctor",
            ),
            (
                "gather/verbs/mod.rs",
                "use crate::render::table;\n",
                "render::table",
            ),
            (
                "wire/exchange.rs",
                "use crate::traffic::selftest;\n",
                "traffic::selftest",
            ),
            (
                "gather/net.rs",
                "fn f() { crate::cmd::doctor::run() }\n",
                "cmd::doctor",
            ),
        ] {
            let wrong = gatherers_import_nothing_above_them(&with(path, text));
            assert_eq!(
                wrong,
                [format!("{path} ({}) imports {target}", module_of(path))],
                "{text:?}"
            );
        }
    }

    #[test]
    fn a_type_name_defined_twice_is_reported() {
        let mut tree = with("render/check.rs", "pub struct Report {\n    x: u8,\n}\n");
        tree.insert(
            "render/subnet.rs".into(),
            "pub(crate) enum Report { A }\nimpl Deref for X {\n    type Target = str;\n}\n".into(),
        );
        tree.insert(
            "render/doctor.rs".into(),
            "impl Deref for Y {\n    type Target = str;\n}\nfn f() {\n        struct Report;\n}\n#[cfg(test)]\nmod tests {\n    struct Report;\n}\n".into(),
        );
        assert_eq!(
            type_names_defined_twice(&tree),
            ["Report is defined in render/check.rs, render/subnet.rs"],
        );
    }

    #[test]
    fn unsafe_outside_gather_verbs_is_reported() {
        for text in [
            "fn f() { unsafe { libc::getpid() }; }\n",
            "unsafe fn g() {}\n",
            "unsafe impl Send for X {}\n",
        ] {
            let wrong = unsafe_only_in_verbs(&with("traffic/selftest.rs", text));
            assert_eq!(wrong, ["traffic/selftest.rs uses unsafe"], "{text:?}");
        }
        // Not code: a comment, a string, the lint's name, a test.
        let quiet = with(
            "traffic/selftest.rs",
            "#![deny(unsafe_code)]\n// unsafe { }\nconst S: &str = \"unsafe {\";\n#[cfg(test)]\nmod tests { fn f() { unsafe {} } }\n",
        );
        assert_eq!(unsafe_only_in_verbs(&quiet), Vec::<String>::new());
    }

    #[test]
    fn an_import_circle_is_reported() {
        let mut tree = with("gather/net.rs", "use crate::wire::exchange::Dest;\n");
        tree.insert(
            "wire/exchange.rs".into(),
            "use crate::gather::net;\n".into(),
        );
        assert_eq!(
            import_circles(&tree),
            ["gather::net → wire::exchange → gather::net"]
        );
        // Three files, through a `super::` path.
        let mut tree = with("render/findings.rs", "use super::table;\n");
        tree.insert(
            "render/table.rs".into(),
            "use crate::output::Style;\n".into(),
        );
        tree.insert("output.rs".into(), "use crate::render::findings;\n".into());
        assert_eq!(
            import_circles(&tree),
            ["output → render::findings → render::table → output"]
        );
    }

    #[test]
    fn the_parser_reads_the_shapes_rust_writes() {
        let modules: BTreeSet<String> = ["x", "x::y", "z", "z::w"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let deps = imports(
            "x::y",
            "use super::super::z::Thing; use crate::x::y::Q;\nuse crate::{\n    z::w::{self, A as B},\n    x,\n};",
            &modules,
        );
        assert_eq!(
            deps,
            ["x".to_string(), "z".to_string(), "z::w".to_string()].into()
        );
        // Literals and comments do not hide code after them or create code of their own.
        let code = production_code(
            "let a = '\"'; let b = r#\"crate::z \"# ; /* crate::z\n */ let c = b'\\''; use crate::z;\n",
        );
        assert_eq!(imports("x", &code, &modules), ["z".to_string()].into());
        // A test-only item of any shape is left out, and so is nothing after it.
        let code = production_code(
            "#[cfg(test)]\nuse crate::z;\n#[cfg(all(test, feature = \"q\"))]\n#[allow(dead_code)]\nfn f(a: [u8; 4]) { crate::z::g() }\nuse crate::x;\n",
        );
        assert_eq!(imports("z", &code, &modules), ["x".to_string()].into());
    }
    #[test]
    fn a_file_without_a_row_and_a_row_without_a_file_are_reported() {
        let md = "| path | what | may import |\n| --- | --- | --- |\n\
                  | `src/main.rs` | entry | all |\n\
                  | `src/cmd/` | commands | all |\n\
                  | `src/render/findings.rs`, `table.rs` | renderers | model |\n\
                  | `src/gone.rs` | removed long ago | — |\n";
        let tree: Tree = [
            "main.rs",
            "cmd/mod.rs",
            "cmd/doctor.rs",
            "render/findings.rs",
            "render/table.rs",
            "model/facts.rs",
        ]
        .into_iter()
        .map(|p| (p.to_string(), String::new()))
        .collect();
        let wrong = layout_disagrees(&tree, &layout_rows(md));
        assert_eq!(
            wrong,
            [
                "src/model/facts.rs has no row in DEVELOPERS.md's layout table",
                "DEVELOPERS.md names src/gone.rs, which is not in the tree",
            ],
        );
    }
}
