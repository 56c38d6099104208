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
