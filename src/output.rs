//! How to print: JSON or table, with or without colour. Renderers get a `Style` and
//! return strings; only `Output::print` writes to stdout.

use std::io::{IsTerminal, Write};

use crate::cli::ColorChoice;

#[derive(Debug, Clone, Copy)]
pub struct Style {
    pub color: bool,
}

impl Style {
    pub fn resolve(choice: ColorChoice) -> Style {
        let color = match choice {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                std::env::var_os("NO_COLOR").map_or(true, |v| v.is_empty())
                    && std::io::stdout().is_terminal()
            }
        };
        Style { color }
    }

    #[cfg(test)]
    pub fn plain() -> Style {
        Style { color: false }
    }
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

pub fn json<T: serde::Serialize>(value: &T) -> String {
    // Serialising our own plain data types cannot fail.
    serde_json::to_string_pretty(value).expect("model types serialise")
}
