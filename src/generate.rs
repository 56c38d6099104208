//! Man pages and shell completions, generated from the clap definition so they never
//! drift from the real flags. `tests/generated.rs` fails when the committed copies are stale.

use std::path::{Path, PathBuf};

use clap::CommandFactory;
use clap_complete::Shell;
use clap_mangen::roff::{bold, roman, Roff};

use crate::cli::{Cli, GenerateArgs, ENVIRONMENT, EXIT_CODES};
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
    let mut cmd = Cli::command();
    // Building propagates the global flags (-j, --color, --sysfs) into every subcommand
    // and names each one as it is typed (`rdmactl pingpong`), which its page shows.
    cmd.build();
    man_pages(&cmd, &mut files);
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

/// A page for the command and, recursively, for each subcommand that is not hidden: every
/// page a SUBCOMMANDS section names (`rdmactl-gid-decode(1)`) is shipped.
fn man_pages(cmd: &clap::Command, files: &mut Vec<(PathBuf, Vec<u8>)>) {
    let name = cmd.get_display_name().unwrap_or(cmd.get_name()).to_string();
    files.push((Path::new("man").join(format!("{name}.1")), render_man(cmd)));
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        man_pages(sub, files);
    }
}

fn render_man(cmd: &clap::Command) -> Vec<u8> {
    // The exit codes and environment get sections of their own below, not an EXTRA one.
    let page = cmd.clone().after_long_help(None::<&str>);
    let mut buf = Vec::new();
    // Writing into a Vec cannot fail.
    let version = cmd.get_version().unwrap_or_default();
    clap_mangen::Man::new(page)
        .source(format!("rdmactl {version}"))
        .render(&mut buf)
        .expect("render man page into memory");
    let text = String::from_utf8(buf).expect("clap_mangen writes UTF-8");
    let extra = sections(cmd);
    // Before VERSION, where man pages put them; at the end if there is no VERSION.
    let at = text.find(".SH VERSION").unwrap_or(text.len());
    format!("{}{extra}{}", &text[..at], &text[at..]).into_bytes()
}

/// EXIT STATUS, ENVIRONMENT and, on a subcommand's page, SEE ALSO.
fn sections(cmd: &clap::Command) -> String {
    let mut roff = Roff::new();
    roff.control("SH", ["EXIT STATUS"]);
    for (code, meaning) in EXIT_CODES {
        roff.control("TP", []).text([bold(code.to_string())]);
        roff.text([roman(*meaning)]);
    }
    roff.control("SH", ["ENVIRONMENT"]);
    for (name, meaning) in ENVIRONMENT {
        roff.control("TP", []).text([bold(*name)]);
        roff.text([roman(*meaning)]);
    }
    if cmd.get_name() != "rdmactl" {
        roff.control("SH", ["SEE ALSO"]);
        roff.text([bold("rdmactl"), roman("(1)")]);
    }
    // Render strips nothing but adds roff's apostrophe preamble, which the page has already.
    let text = roff.render();
    let body = text.find(".SH").unwrap_or(0);
    text[body..].to_string()
}
