//! How to print: JSON or table, with or without colour. Renderers get a `Style` and
//! return strings; only `Output::print` writes to stdout.

use std::io::{IsTerminal, Write};

use crate::cli::ColorChoice;

#[derive(Debug, Clone, Copy)]
pub struct Style {
    pub color: bool,
    /// The most columns a table may take: COLUMNS when set, else the terminal's width;
    /// None when stdout is not a terminal and COLUMNS is unset (a pipe gets whole lines).
    pub width: Option<usize>,
}

impl Style {
    pub fn resolve(choice: ColorChoice) -> Style {
        let color = wants_color(
            choice,
            std::env::var_os("NO_COLOR").as_deref(),
            std::env::var_os("TERM").as_deref(),
            std::io::stdout().is_terminal(),
        );
        let width = columns(std::env::var("COLUMNS").ok().as_deref()).or_else(|| {
            terminal_size::terminal_size_of(std::io::stdout()).map(|(w, _)| usize::from(w.0))
        });
        Style { color, width }
    }

    #[cfg(test)]
    pub fn plain() -> Style {
        Style {
            color: false,
            width: None,
        }
    }
}

/// `--color auto` colours only a terminal that shows colour: not with NO_COLOR set (to
/// anything but empty), not on TERM=dumb (Emacs shell, some CI logs print escapes as
/// text), not into a pipe. `always` and `never` are what the user asked for.
fn wants_color(
    choice: ColorChoice,
    no_color: Option<&std::ffi::OsStr>,
    term: Option<&std::ffi::OsStr>,
    stdout_is_tty: bool,
) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            no_color.map_or(true, |v| v.is_empty())
                && term.map_or(true, |t| t != "dumb")
                && stdout_is_tty
        }
    }
}

/// COLUMNS as the shell exports it; anything but a positive number is ignored, as `ls`
/// ignores it.
fn columns(value: Option<&str>) -> Option<usize> {
    value?.trim().parse::<usize>().ok().filter(|w| *w > 0)
}

/// Write to stdout. A closed pipe (`rdmactl gids | head`) surfaces as an `Error::Io` of
/// kind BrokenPipe, which main turns into a quiet exit.
pub fn print(text: &str) -> crate::error::Result<()> {
    let write = || -> std::io::Result<()> {
        let mut out = std::io::stdout().lock();
        out.write_all(text.as_bytes())?;
        if !text.ends_with('\n') {
            out.write_all(b"\n")?;
        }
        out.flush()
    };
    write().map_err(|source| crate::error::Error::Io {
        path: "<stdout>".into(),
        source,
    })
}

/// Writes a file the user named for an output (`--topology`, `--svg`), whole; a failure
/// names the path and the flag.
pub fn write_file(
    path: &std::path::Path,
    flag: &'static str,
    text: &str,
) -> crate::error::Result<()> {
    std::fs::write(path, text).map_err(|error| crate::error::Error::Write {
        path: path.to_path_buf(),
        flag,
        error,
    })
}

/// Replace `path` with `text` whole: written beside it and renamed over it, so a reader (a
/// check running at the same moment) sees the old file or the new one, never half of one.
/// The directory is created when missing (`/var/lib/rdmactl` on first use).
pub fn replace_file(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp.{}", std::process::id()));
    let tmp = std::path::PathBuf::from(tmp);
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, path))
        .inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
}

pub fn json<T: serde::Serialize>(value: &T) -> String {
    // Serialising our own plain data types cannot fail.
    serde_json::to_string_pretty(value).expect("model types serialise")
}

/// The JSON figures' rounding lives with the data it serialises; commands reach it here too.
pub use crate::model::rounding::{round_to, ser_opt_3dp};

/// Warnings and notes for stderr, already worded by a renderer; nothing when empty. The one
/// place a command writes to stderr besides the error that ends it.
pub fn note(text: &str) {
    use std::io::Write;
    if !text.is_empty() {
        let _ = std::io::stderr().write_all(text.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_in_auto_only_on_a_terminal_that_shows_it() {
        use std::ffi::OsStr;
        let auto = |no_color: Option<&str>, term: Option<&str>, tty| {
            wants_color(
                ColorChoice::Auto,
                no_color.map(OsStr::new),
                term.map(OsStr::new),
                tty,
            )
        };
        assert!(auto(None, Some("xterm-256color"), true));
        assert!(auto(None, None, true));
        assert!(
            auto(Some(""), Some("xterm"), true),
            "an empty NO_COLOR does not count"
        );
        assert!(!auto(None, Some("dumb"), true));
        assert!(!auto(Some("1"), Some("xterm"), true));
        assert!(!auto(None, Some("xterm"), false));
        assert!(wants_color(
            ColorChoice::Always,
            None,
            Some(OsStr::new("dumb")),
            false
        ));
        assert!(!wants_color(ColorChoice::Never, None, None, true));
    }

    /// A failed write says "cannot write", the path, the OS error once, and the next step.
    #[test]
    fn a_failed_write_names_the_path_its_error_once_and_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("no-such-dir").join("subnet.svg");
        let err = write_file(&path, "--svg", "<svg/>").unwrap_err();
        assert_eq!(err.exit_code(), crate::exit::SYSTEM);
        // As main prints it: the error and its chain of sources.
        let shown = format!("{:#}", anyhow::Error::from(err));
        assert_eq!(
            shown,
            format!(
                "cannot write {} (--svg): No such file or directory (os error 2); create its \
                 directory first, or give a path in one that exists",
                path.display()
            )
        );
        // A directory where a file should be.
        let err = write_file(dir.path(), "--topology", "")
            .unwrap_err()
            .to_string();
        assert!(err.contains("(--topology): Is a directory"), "{err}");
        assert!(err.ends_with("give a file name, not a directory"), "{err}");
        assert_eq!(err.matches("os error").count(), 1, "{err}");
    }

    #[test]
    fn columns_from_the_environment() {
        assert_eq!(columns(Some("80")), Some(80));
        assert_eq!(columns(Some(" 132\n")), Some(132));
        assert_eq!(columns(Some("0")), None);
        assert_eq!(columns(Some("wide")), None);
        assert_eq!(columns(None), None);
    }
}
