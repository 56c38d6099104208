//! The committed man pages and completions must match what the clap definition generates
//! now; regenerate with `cargo run -- generate .` after changing a flag.

use std::path::Path;

#[test]
fn committed_man_pages_and_completions_are_fresh() {
    let fresh = tempfile::tempdir().expect("temp dir");
    assert_cmd::Command::cargo_bin("rdmactl")
        .expect("binary")
        .args(["generate"])
        .arg(fresh.path())
        .env_remove("RDMACTL_SYSFS")
        .assert()
        .success();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut stale = Vec::new();
    for dir in ["man", "completions"] {
        let generated = fresh.path().join(dir);
        let entries = std::fs::read_dir(&generated).expect("generated dir");
        for entry in entries {
            let entry = entry.expect("dir entry");
            let name = Path::new(dir).join(entry.file_name());
            let committed = std::fs::read(repo.join(&name)).unwrap_or_default();
            if committed != std::fs::read(entry.path()).expect("generated file") {
                stale.push(name.display().to_string());
            }
        }
        // A committed file that is no longer generated is stale too.
        for entry in std::fs::read_dir(repo.join(dir))
            .into_iter()
            .flatten()
            .flatten()
        {
            if !generated.join(entry.file_name()).exists() {
                stale.push(format!(
                    "{} (no longer generated)",
                    Path::new(dir).join(entry.file_name()).display()
                ));
            }
        }
    }
    assert!(
        stale.is_empty(),
        "stale generated files: {}; run `cargo run -- generate .` and commit",
        stale.join(", ")
    );
}

fn man_pages() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("man");
    let mut pages: Vec<(String, String)> = std::fs::read_dir(&dir)
        .expect("man/")
        .map(|e| {
            let path = e.expect("dir entry").path();
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&path).expect("man page"))
        })
        .collect();
    pages.sort();
    pages
}

/// The roff text of one section, up to the next `.SH`.
fn section<'a>(page: &'a str, heading: &str) -> Option<&'a str> {
    let start = page.find(&format!(".SH {heading}\n"))?;
    let body = &page[start..];
    let end = body[4..].find("\n.SH ").map_or(body.len(), |i| i + 5);
    Some(&body[..end])
}

/// What a reader of `man rdmactl-pingpong` needs: the command as typed, the global flags,
/// exit codes and environment, and no pointer to a page that is not shipped.
#[test]
fn man_pages_say_how_to_type_the_command_and_ship_what_they_name() {
    let pages = man_pages();
    let mut references = 0;
    let names: Vec<&str> = pages.iter().map(|(n, _)| n.as_str()).collect();
    for want in [
        "rdmactl",
        "rdmactl-pingpong",
        "rdmactl-gid-decode",
        "rdmactl-gid-encode",
    ] {
        assert!(names.contains(&want), "{want}.1 not shipped: {names:?}");
    }
    for (name, page) in &pages {
        let synopsis = section(page, "SYNOPSIS").unwrap_or_else(|| panic!("{name}: no SYNOPSIS"));
        // `rdmactl-gid-decode` is typed `rdmactl gid decode`.
        let typed = name.replace('-', " ");
        assert!(
            synopsis.contains(&format!("\\fB{typed}\\fR")),
            "{name}: SYNOPSIS does not start with `{typed}`:\n{synopsis}"
        );
        assert!(!synopsis.contains("rdmactl\\-"), "{name}: {synopsis}");
        let global = section(page, "\"GLOBAL OPTIONS\"")
            .unwrap_or_else(|| panic!("{name}: no GLOBAL OPTIONS"));
        for flag in [
            "\\fB\\-j\\fR, \\fB\\-\\-json\\fR",
            "\\fB\\-\\-color\\fR",
            "\\fB\\-\\-sysfs\\fR",
        ] {
            assert!(global.contains(flag), "{name}: no {flag}");
        }
        let exit =
            section(page, "\"EXIT STATUS\"").unwrap_or_else(|| panic!("{name}: no EXIT STATUS"));
        for code in 0..=5 {
            assert!(
                exit.contains(&format!("\\fB{code}\\fR")),
                "{name}: exit {code}"
            );
        }
        let env = section(page, "ENVIRONMENT").unwrap_or_else(|| panic!("{name}: no ENVIRONMENT"));
        for var in ["RDMACTL_SYSFS", "NO_COLOR", "TERM", "COLUMNS"] {
            assert!(env.contains(var), "{name}: no {var}");
        }
        // Every `name(1)` reference (SUBCOMMANDS, SEE ALSO) is a page in man/.
        let plain = page
            .replace("\\fB", "")
            .replace("\\fR", "")
            .replace("\\fI", "")
            .replace("\\-", "-");
        for word in plain.split_whitespace().filter(|w| w.contains("(1)")) {
            let referenced = word[..word.find("(1)").unwrap()]
                .trim_start_matches(|c: char| !c.is_ascii_alphanumeric());
            assert!(
                names.contains(&referenced),
                "{name}: refers to {referenced}(1), which is not shipped"
            );
            references += 1;
        }
    }
    // rdmactl.1 names the 8 subcommand pages; rdmactl-gid.1 its two; each page rdmactl(1).
    assert!(
        references >= 8 + 2 + 10,
        "only {references} references found"
    );
}

/// Runs the committed bash completion for a command line whose last word is being
/// completed, and returns the candidates.
fn bash_complete(words: &[&str], env_sysfs: Option<&str>) -> Vec<String> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let script = format!(
        "source completions/rdmactl.bash; COMP_WORDS=({}); COMP_CWORD={}; \
         _rdmactl_with_devices rdmactl \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; \
         printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        words
            .iter()
            .map(|w| format!("'{w}'"))
            .collect::<Vec<_>>()
            .join(" "),
        words.len() - 1
    );
    let mut cmd = std::process::Command::new("bash");
    cmd.current_dir(repo).args(["--norc", "-c", &script]);
    match env_sysfs {
        Some(dir) => cmd.env("RDMACTL_SYSFS", dir),
        None => cmd.env_remove("RDMACTL_SYSFS"),
    };
    let out = cmd.output().expect("bash runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut got: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect();
    got.sort();
    got
}

#[test]
fn bash_completes_device_names_from_sysfs() {
    let ib = "tests/fixtures/sysfs/ib-hca";
    let rxe = "tests/fixtures/sysfs/rxe-veth-basic";
    assert_eq!(
        bash_complete(&["rdmactl", "check", "-d", ""], Some(rxe)),
        ["rxe0", "rxe1"]
    );
    assert_eq!(
        bash_complete(&["rdmactl", "pingpong", "--ib-dev", "rxe1"], Some(rxe)),
        ["rxe1"]
    );
    // --sysfs on the line wins over the environment.
    assert_eq!(
        bash_complete(&["rdmactl", "--sysfs", ib, "devices", "-d", ""], Some(rxe)),
        ["mlx5_0", "mlx5_1"]
    );
    // The DEV[/PORT] argument of ports and gids: devices and their ports.
    assert_eq!(
        bash_complete(&["rdmactl", "gids", "mlx5_0"], Some(ib)),
        ["mlx5_0", "mlx5_0/1"]
    );
    let port = bash_complete(&["rdmactl", "ports", "-i", ""], Some(ib));
    assert!(
        !port.iter().any(|c| c.starts_with("mlx5")),
        "-i takes a port number, not a device: {port:?}"
    );
    // Flags still come from clap's completion.
    let flags = bash_complete(&["rdmactl", "ports", "--ib"], Some(ib));
    assert_eq!(flags, ["--ib-dev", "--ib-port"]);
    // No RDMA devices: nothing to offer, and no error.
    assert_eq!(
        bash_complete(
            &["rdmactl", "check", "-d", ""],
            Some("tests/fixtures/sysfs/no-infiniband")
        ),
        Vec::<String>::new()
    );
}
