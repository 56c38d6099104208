//! Every transcript in README.md and docs/guide.md is checked against the current build.
//!
//! The `rdmactl` lines of ```` ```sh ```` blocks are checked as a VM transcript's commands are.
//!
//! A transcript is a fenced block with a `$ ` line. It must be a ```` ```console ```` block,
//! and the line just above its fence must say where its output comes from:
//!
//! - `<!-- transcript: sysfs=tests/fixtures/sysfs/TREE -->` (optionally `procfs=DIR`, and
//!   `link=NAME:PATH` any number of times; `offline` alone for a command that reads no
//!   host): an offline transcript. Each `$ ` line runs with
//!   `sh` in a fresh temporary folder that holds `tests` (a link to this checkout's) and each
//!   `link` NAME pointing at PATH; this build's `rdmactl` is first on PATH, and
//!   `RDMACTL_SYSFS`/`RDMACTL_PROCFS` name the trees. Its output, stdout and stderr
//!   together, must be the lines under it, where a line `...` stands for any number of lines.
//! - `<!-- transcript: vm -->`: output of a live RDMA stack (the Soft-RoCE VM, or ibsim).
//!   It cannot run here, so every `rdmactl` command line in it must still parse with the
//!   current CLI (`rdmactl ARGS --help` exits 0), and every diagnostic code it shows (the
//!   second word of a finding line, `[code: ...]`, `rdmactl explain CODE`) must be a
//!   `### \`code\`` heading of docs/failures.md.
//!
//! When an offline transcript fails, the message prints what the command prints now: paste
//! it into the block (keeping a `...` line where the transcript leaves lines out). A VM
//! transcript is refreshed from `scripts/demo` or `tests/vm/run`.
//!
//! It also checks that the README shows the command `.ci/run` runs: CI runs exactly the
//! README's test command.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

const DOCUMENTS: &[&str] = &["README.md", "docs/guide.md"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A command line and the output under it, as written.
struct Step {
    /// `FILE:LINE` of the `$ ` line.
    at: String,
    command: String,
    expected: Vec<String>,
}

enum Source {
    Offline {
        sysfs: Option<String>,
        procfs: Option<String>,
        links: Vec<(String, String)>,
    },
    Vm,
    /// A ```` ```sh ```` block: its `rdmactl` lines are checked as a VM transcript's are.
    Sh,
}

struct Transcript {
    source: Source,
    steps: Vec<Step>,
}

fn parse_marker(line: &str, at: &str) -> Result<Source, String> {
    let body = line
        .trim()
        .strip_prefix("<!-- transcript:")
        .and_then(|rest| rest.strip_suffix("-->"))
        .ok_or_else(|| {
            format!(
                "{at}: a transcript needs a marker on the line above its fence: \
                 `<!-- transcript: vm -->` or `<!-- transcript: sysfs=tests/fixtures/sysfs/TREE -->` \
                 (see tests/docs_transcripts.rs)"
            )
        })?;
    let words: Vec<&str> = body.split_whitespace().collect();
    if words == ["vm"] {
        return Ok(Source::Vm);
    }
    let (mut sysfs, mut procfs, mut links) = (None, None, Vec::new());
    for word in words {
        match word.split_once('=') {
            Some(("sysfs", dir)) => sysfs = Some(dir.to_string()),
            Some(("procfs", dir)) => procfs = Some(dir.to_string()),
            None if word == "offline" => {}
            Some(("link", spec)) => {
                let (name, path) = spec
                    .split_once(':')
                    .ok_or_else(|| format!("{at}: link={spec} is not NAME:PATH"))?;
                links.push((name.to_string(), path.to_string()));
            }
            _ => {
                return Err(format!(
                    "{at}: unknown word {word:?} in the transcript marker"
                ))
            }
        }
    }
    for dir in sysfs
        .iter()
        .chain(&procfs)
        .chain(links.iter().map(|(_, p)| p))
    {
        if !root().join(dir).exists() {
            return Err(format!(
                "{at}: the marker names {dir}, which does not exist"
            ));
        }
    }
    Ok(Source::Offline {
        sysfs,
        procfs,
        links,
    })
}

fn transcripts(file: &str, text: &str) -> Result<Vec<Transcript>, Vec<String>> {
    let lines: Vec<&str> = text.lines().collect();
    let (mut out, mut errors) = (Vec::new(), Vec::new());
    let mut i = 0;
    while i < lines.len() {
        let Some(info) = lines[i].strip_prefix("```") else {
            i += 1;
            continue;
        };
        let open = i;
        let mut body = Vec::new();
        i += 1;
        while i < lines.len() && !lines[i].starts_with("```") {
            body.push(lines[i]);
            i += 1;
        }
        i += 1;
        let at = format!("{file}:{}", open + 1);
        if !body.iter().any(|l| l.starts_with("$ ")) {
            if info.trim() == "sh" {
                let steps: Vec<Step> = body
                    .iter()
                    .enumerate()
                    .filter(|(_, l)| l.starts_with("rdmactl "))
                    .map(|(n, l)| Step {
                        at: format!("{file}:{}", open + n + 2),
                        command: l.to_string(),
                        expected: Vec::new(),
                    })
                    .collect();
                if !steps.is_empty() {
                    out.push(Transcript {
                        source: Source::Sh,
                        steps,
                    });
                }
            } else if info.trim() == "console" {
                errors.push(format!("{at}: a console block with no `$ ` line"));
            }
            continue;
        }
        if info.trim() != "console" {
            errors.push(format!(
                "{at}: a transcript (it has `$ ` lines) must be ```console"
            ));
            continue;
        }
        let above = if open > 0 { lines[open - 1] } else { "" };
        let source = match parse_marker(above, &at) {
            Ok(source) => source,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        let mut steps: Vec<Step> = Vec::new();
        for (n, line) in body.into_iter().enumerate() {
            if let Some(command) = line.strip_prefix("$ ") {
                steps.push(Step {
                    at: format!("{file}:{}", open + n + 2),
                    command: command.to_string(),
                    expected: Vec::new(),
                });
            } else if let Some(step) = steps.last_mut() {
                step.expected.push(line.trim_end().to_string());
            } else {
                errors.push(format!("{at}: output before the first `$ ` line"));
            }
        }
        for step in &mut steps {
            while step.expected.last().is_some_and(|l| l.is_empty()) {
                step.expected.pop();
            }
        }
        out.push(Transcript { source, steps });
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

fn all_transcripts() -> Vec<Transcript> {
    let mut all = Vec::new();
    let mut errors = Vec::new();
    for file in DOCUMENTS {
        let text = std::fs::read_to_string(root().join(file)).unwrap();
        match transcripts(file, &text) {
            Ok(t) => all.extend(t),
            Err(e) => errors.extend(e),
        }
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
    all
}

/// Does `actual` match `expected`, where an `...` line of `expected` matches any run of lines?
fn matches(expected: &[String], actual: &[String]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((first, rest)) if first == "..." => {
            (0..=actual.len()).any(|skip| matches(rest, &actual[skip..]))
        }
        Some((first, rest)) => actual
            .split_first()
            .is_some_and(|(a, more)| a == first && matches(rest, more)),
    }
}

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_rdmactl"))
}

/// A command with none of the caller's terminal settings or RDMACTL_* variables.
fn hermetic(program: &Path) -> Command {
    let mut cmd = Command::new(program);
    for key in ["NO_COLOR", "COLUMNS", "TERM"] {
        cmd.env_remove(key);
    }
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("RDMACTL_") {
            cmd.env_remove(key);
        }
    }
    cmd
}

/// The folder an offline transcript's lines run in, one after another (a line may read
/// what the one before wrote).
fn folder(links: &[(String, String)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(root().join("tests"), dir.path().join("tests")).unwrap();
    for (name, target) in links {
        let link = dir.path().join(name);
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(root().join(target), link).unwrap();
    }
    dir
}

fn run_offline(t: &Transcript, step: &Step, dir: &Path) -> Result<(), String> {
    let Source::Offline { sysfs, procfs, .. } = &t.source else {
        unreachable!()
    };
    let path = format!(
        "{}:{}",
        bin().parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = hermetic(Path::new("sh"));
    cmd.current_dir(dir)
        .env("PATH", path)
        .arg("-c")
        .arg(format!("exec 2>&1\n{}", step.command));
    // Relative to the folder, through its `tests` link: the output names the tree as a
    // reader who runs the command from a checkout would.
    if let Some(sysfs) = sysfs {
        cmd.env("RDMACTL_SYSFS", sysfs);
    }
    if let Some(procfs) = procfs {
        cmd.env("RDMACTL_PROCFS", procfs);
    }
    let out = cmd.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let mut actual: Vec<String> = text.lines().map(|l| l.trim_end().to_string()).collect();
    while actual.last().is_some_and(|l| l.is_empty()) {
        actual.pop();
    }
    if matches(&step.expected, &actual) {
        return Ok(());
    }
    Err(format!(
        "{}: `$ {}` no longer prints what the transcript shows.\n\
         --- the transcript ---\n{}\n--- printed now (stdout and stderr) ---\n{}\n\
         --- end ---\n\
         If the new output is right, paste it into the block (keep a `...` line where the \
         transcript leaves lines out) and run `cargo test --test docs_transcripts` again.",
        step.at,
        step.command,
        step.expected.join("\n"),
        actual.join("\n")
    ))
}

/// Shell-like words of one command: quotes grouped, unquoted `#` starts a comment, and the
/// line split into commands at `|`, `;` and `&`.
fn commands(line: &str) -> Vec<Vec<String>> {
    let (mut out, mut words, mut word) = (Vec::new(), Vec::new(), String::new());
    let (mut quote, mut in_word) = (None, false);
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, '#') if !in_word => break,
            (None, c) if c.is_whitespace() || "|;&".contains(c) => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
                if "|;&".contains(c) && !words.is_empty() {
                    out.push(std::mem::take(&mut words));
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    if !words.is_empty() {
        out.push(words);
    }
    out
}

fn catalogue() -> BTreeSet<String> {
    let text = std::fs::read_to_string(root().join("docs/failures.md")).unwrap();
    text.lines()
        .filter_map(|l| l.strip_prefix("### `"))
        .filter_map(|l| l.split('`').next())
        .map(str::to_string)
        .collect()
}

/// The diagnostic codes a transcript's output shows.
fn codes_shown(lines: &[String]) -> Vec<String> {
    let is_code = |w: &str| {
        w.starts_with(|c: char| c.is_ascii_lowercase())
            && w.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    };
    let mut out = Vec::new();
    for line in lines {
        // A finding line starts at the margin; selftest's indented step lines do not count.
        let mut words = line.split_whitespace();
        if let (false, Some("ok" | "warn" | "FAIL" | "info"), Some(code)) =
            (line.starts_with(' '), words.next(), words.next())
        {
            if is_code(code) {
                out.push(code.to_string());
            }
        }
        for (at, _) in line.match_indices('[') {
            let rest = &line[at + 1..];
            if let Some((code, _)) = rest.split_once(": ") {
                if is_code(code) && code.contains('-') {
                    out.push(code.to_string());
                }
            }
        }
    }
    out
}

fn check_vm(t: &Transcript, catalogue: &BTreeSet<String>) -> Vec<String> {
    let mut errors = Vec::new();
    for step in &t.steps {
        let mut ran = false;
        for words in commands(&step.command) {
            let Some(at) = words.iter().position(|w| w == "rdmactl") else {
                continue;
            };
            ran = true;
            // pdsh puts each node's rank where `%n` is.
            let args: Vec<String> = words[at + 1..]
                .iter()
                .map(|w| if w == "%n" { "0".into() } else { w.clone() })
                .collect();
            if args.first().map(String::as_str) == Some("explain") {
                for code in args.iter().skip(1).filter(|a| !a.starts_with('-')) {
                    if !catalogue.contains(code) {
                        errors.push(format!(
                            "{}: `rdmactl explain {code}`: no such code in docs/failures.md",
                            step.at
                        ));
                    }
                }
            }
            let out = hermetic(&bin())
                .current_dir(root())
                .args(&args)
                .arg("--help")
                .output()
                .unwrap();
            if !out.status.success() {
                errors.push(format!(
                    "{}: `rdmactl {}` no longer parses with this CLI:\n{}\
                     Update the command and its output from the VM (scripts/demo, tests/vm/run).",
                    step.at,
                    args.join(" "),
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
        }
        if !ran {
            errors.push(format!("{}: `$ {}` runs no rdmactl", step.at, step.command));
        }
        for code in codes_shown(&step.expected) {
            if !catalogue.contains(&code) {
                errors.push(format!(
                    "{}: the output shows the code `{code}`, which docs/failures.md does not \
                     list: it was renamed or removed; update the transcript",
                    step.at
                ));
            }
        }
    }
    errors
}

#[test]
fn offline_transcripts_print_what_they_show() {
    let mut errors = Vec::new();
    let mut count = 0;
    for t in all_transcripts() {
        let Source::Offline { links, .. } = &t.source else {
            continue;
        };
        let dir = folder(links);
        for step in &t.steps {
            count += 1;
            if let Err(e) = run_offline(&t, step, dir.path()) {
                errors.push(e);
            }
        }
    }
    assert!(count > 0, "no offline transcript found");
    assert!(errors.is_empty(), "{}", errors.join("\n\n"));
}

#[test]
fn vm_transcripts_parse_and_show_only_catalogued_codes() {
    let catalogue = catalogue();
    let mut errors = Vec::new();
    let mut count = 0;
    for t in all_transcripts() {
        if matches!(t.source, Source::Vm | Source::Sh) {
            count += 1;
            errors.extend(check_vm(&t, &catalogue));
        }
    }
    assert!(count > 0, "no VM transcript found");
    assert!(errors.is_empty(), "{}", errors.join("\n\n"));
}

#[test]
fn the_vm_check_catches_a_bad_flag_and_an_unknown_code() {
    let t = Transcript {
        source: Source::Vm,
        steps: vec![Step {
            at: "planted:2".into(),
            command: "rdmactl pingpong --no-such-flag 192.0.2.1".into(),
            expected: vec!["FAIL  no-such-code  rxe0/1  planted".into()],
        }],
    };
    let errors = check_vm(&t, &catalogue());
    assert_eq!(errors.len(), 2, "{errors:?}");
}

#[test]
fn a_transcript_needs_a_console_fence_and_a_marker() {
    let unmarked = "text\n\n```console\n$ rdmactl devices\nDEVICE\n```\n";
    let plain = "<!-- transcript: vm -->\n```\n$ rdmactl devices\n```\n";
    let unknown = "<!-- transcript: live -->\n```console\n$ rdmactl devices\n```\n";
    for text in [unmarked, plain, unknown] {
        assert!(transcripts("planted", text).is_err(), "{text}");
    }
    let good =
        "<!-- transcript: offline -->\n```console\n$ rdmactl gid encode 10.0.0.1\nIP\n\n$ x\n```\n";
    let found = transcripts("planted", good).unwrap();
    assert_eq!(found[0].steps.len(), 2);
    assert_eq!(found[0].steps[0].expected, ["IP"]);
    assert_eq!(found[0].steps[1].at, "planted:6");
}

#[test]
fn elision_matches_any_run_of_lines_and_nothing_else() {
    let s = |v: &[&str]| v.iter().map(|l| l.to_string()).collect::<Vec<_>>();
    assert!(matches(&s(&["a", "...", "d"]), &s(&["a", "b", "c", "d"])));
    assert!(matches(&s(&["a", "...", "d"]), &s(&["a", "d"])));
    assert!(!matches(&s(&["a", "...", "d"]), &s(&["a", "b", "e"])));
    assert!(!matches(&s(&["a", "b"]), &s(&["a", "b", "c"])));
    assert_eq!(
        commands("srun -N 2 rdmactl fabric -w 'h[0-3]' # note | x"),
        vec![s(&["srun", "-N", "2", "rdmactl", "fabric", "-w", "h[0-3]"])]
    );
    assert_eq!(
        commands("rdmactl explain x | head -3").len(),
        2,
        "a pipe splits commands"
    );
}

#[test]
fn the_readme_shows_the_command_ci_runs() {
    let ci = std::fs::read_to_string(root().join(".ci/run")).unwrap();
    let command = ci
        .lines()
        .find_map(|l| l.strip_prefix("exec "))
        .expect(".ci/run ends with `exec COMMAND`");
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    assert!(
        readme
            .lines()
            .any(|l| l.split('#').next().unwrap().trim() == command),
        "the README must show `{command}` (what .ci/run runs) on a line of its own"
    );
}
