//! What the packages promise, checked without building them: every file that Cargo.toml's
//! cargo-deb list and contrib/rpm/rdmactl.spec's %install name exists (a glob matches at
//! least one file), both ship the same files, and the binary needs no glibc newer than the
//! floor the README states. Building and linting the packages is scripts/package's (lintian
//! and rpmlint fail it); installing the .deb is the VM suite's case 74-package.

use std::path::Path;
use std::process::Command;

/// The README's promise: built on Debian 12, the binary runs on glibc 2.34 and later.
const GLIBC_FLOOR: (u32, u32) = (2, 34);

fn manifest() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml")).unwrap()
}

/// The quoted source paths of one metadata section's `assets`.
fn asset_sources(section: &str) -> Vec<String> {
    let text = manifest();
    let start = text
        .find(&format!("[{section}]"))
        .unwrap_or_else(|| panic!("no [{section}] in Cargo.toml"));
    let rest = &text[start..];
    let assets = &rest[rest.find("assets = [").expect("assets")..];
    let assets = &assets[..assets.find("\n]").expect("end of assets")];
    assets
        .lines()
        .skip(1)
        .filter_map(|line| {
            let line = line.trim();
            let quoted = if let Some(s) = line.strip_prefix("{ source = \"") {
                s
            } else {
                line.strip_prefix("[\"")?
            };
            Some(quoted[..quoted.find('"')?].to_string())
        })
        .collect()
}

/// The checkout's files the rpm spec's %install copies (`$src/PATH`, and the binary as
/// `%{rdmactl_binary}`, which scripts/package points at the release build).
fn spec_sources() -> Vec<String> {
    let spec = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib/rpm/rdmactl.spec"),
    )
    .unwrap();
    let install = &spec[spec.find("\n%install").expect("%install")..];
    let install = &install[..install[1..].find("\n%").expect("end of %install") + 1];
    let mut sources = Vec::new();
    for line in install
        .lines()
        .filter(|l| l.trim_start().starts_with("install "))
    {
        for word in line.split_whitespace() {
            if let Some(path) = word.strip_prefix("$src/") {
                sources.push(path.to_string());
            } else if word == "%{rdmactl_binary}" {
                sources.push("target/release/rdmactl".to_string());
            }
        }
    }
    sources
}

/// Files a simple glob (`dir/*.ext` or a plain path) matches, relative to the repository.
fn matches(pattern: &str) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    match pattern.rsplit_once("/*") {
        Some((dir, suffix)) => std::fs::read_dir(root.join(dir))
            .map(|entries| {
                entries
                    .flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.ends_with(suffix))
                    .map(|n| format!("{dir}/{n}"))
                    .collect()
            })
            .unwrap_or_default(),
        None => {
            if root.join(pattern).is_file() {
                vec![pattern.to_string()]
            } else {
                vec![]
            }
        }
    }
}

#[test]
fn every_packaged_file_exists_and_both_packages_ship_the_same() {
    let deb = asset_sources("package.metadata.deb");
    let rpm = spec_sources();
    assert!(deb.len() >= 7, "{deb:?}");
    assert!(rpm.len() >= 7, "{rpm:?}");
    for source in deb.iter().chain(&rpm) {
        // The binary is built by scripts/package itself.
        if source.starts_with("target/") {
            continue;
        }
        assert!(!matches(source).is_empty(), "{source} matches no file");
    }
    // Each format's own files: lintian's overrides in the .deb; the license texts in the .rpm
    // (the .deb carries them in its copyright file, contrib/debian/copyright).
    let mut d: Vec<String> = deb
        .iter()
        .filter(|s| *s != "contrib/debian/lintian-overrides")
        .cloned()
        .collect();
    let mut r: Vec<String> = rpm
        .iter()
        .filter(|s| !s.starts_with("LICENSE-"))
        .cloned()
        .collect();
    d.sort();
    r.sort();
    assert_eq!(d, r, "the .deb and the .rpm ship different files");
}

#[test]
fn the_binary_needs_no_glibc_newer_than_the_readme_says() {
    let out = Command::new("objdump")
        .arg("-T")
        .arg(env!("CARGO_BIN_EXE_rdmactl"))
        .output()
        .expect("objdump (binutils) is needed for this test: scripts/setup installs it");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let newest = text
        .split("GLIBC_")
        .skip(1)
        .filter_map(|v| {
            let v: String = v
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            let mut parts = v.split('.').map(|p| p.parse::<u32>().ok());
            Some((parts.next()??, parts.next().flatten().unwrap_or(0)))
        })
        .max()
        .expect("GLIBC symbol versions");
    assert!(
        newest <= GLIBC_FLOOR,
        "the binary needs GLIBC_{}.{}, newer than the README's {}.{}",
        newest.0,
        newest.1,
        GLIBC_FLOOR.0,
        GLIBC_FLOOR.1
    );
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    assert!(readme.contains(&format!(
        "glibc {}.{} or\nlater",
        GLIBC_FLOOR.0, GLIBC_FLOOR.1
    )));
}
