//! Man pages and shell completions, generated from the clap definition so they never
//! drift from the real flags. `tests/generated.rs` fails when the committed copies are stale.

use std::path::{Path, PathBuf};

use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::{Cli, GenerateArgs};
use crate::error::{Error, Result};

pub fn run(args: &GenerateArgs) -> Result<u8> {
    for (path, bytes) in artifacts() {
        let path = args.dir.join(path);
        let io_err = |source| Error::Io {
            path: path.clone(),
            source,
        };
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(io_err)?;
        }
        std::fs::write(&path, bytes).map_err(io_err)?;
    }
    Ok(crate::exit::OK)
}

/// Every generated file, relative to the repository root.
pub fn artifacts() -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let cmd = Cli::command();
    let version = cmd.get_version().unwrap_or_default().to_string();
    files.push((Path::new("man/rdmactl.1").to_path_buf(), render_man(&cmd)));
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("rdmactl-{}", sub.get_name());
        let sub = sub.clone().name(name.clone()).version(version.clone());
        files.push((PathBuf::from(format!("man/{name}.1")), render_man(&sub)));
    }
    for (shell, file) in [
        (Shell::Bash, "rdmactl.bash"),
        (Shell::Zsh, "_rdmactl"),
        (Shell::Fish, "rdmactl.fish"),
    ] {
        let mut buf = Vec::new();
        clap_complete::generate(shell, &mut Cli::command(), "rdmactl", &mut buf);
        files.push((PathBuf::from(format!("completions/{file}")), buf));
    }
    files
}

fn render_man(cmd: &clap::Command) -> Vec<u8> {
    let mut buf = Vec::new();
    // Writing into a Vec cannot fail.
    clap_mangen::Man::new(cmd.clone())
        .render(&mut buf)
        .expect("render man page into memory");
    buf
}
