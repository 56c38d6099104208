//! Borderless, `ip`-style tables on comfy-table, coloured with owo-colors only when the
//! style asks for it.
//!
//! comfy-table (without its crossterm-based `custom_styling` feature) counts escape bytes
//! as text, so a coloured cell would throw its column out of line. Every cell of a
//! coloured column, header included, therefore gets the same 10 bytes of escapes
//! (`ESC[3Xm … ESC[39m`; uncoloured cells use the default colour), which keeps the padding
//! right. A test checks that stripping the escapes gives back the plain table exactly.

use comfy_table::{ContentArrangement, Table};
use owo_colors::OwoColorize;

use crate::output::Style;

/// How a value reads at a glance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    Plain,
    Good,
    Warn,
    Bad,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    pub text: String,
    pub tone: Tone,
}

impl Cell {
    pub fn new(text: impl Into<String>, tone: Tone) -> Cell {
        Cell {
            text: text.into(),
            tone,
        }
    }
}

impl From<String> for Cell {
    fn from(text: String) -> Cell {
        Cell {
            text,
            tone: Tone::Plain,
        }
    }
}

impl From<&str> for Cell {
    fn from(text: &str) -> Cell {
        Cell {
            text: text.to_string(),
            tone: Tone::Plain,
        }
    }
}

/// "-" for a value that is absent.
pub fn or_dash<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| "-".to_string(), |v| v.to_string())
}

pub fn render(headers: &[&str], rows: &[Vec<Cell>], style: Style) -> String {
    let painted: Vec<bool> = (0..headers.len())
        .map(|c| {
            style.color
                && rows
                    .iter()
                    .any(|r| r.get(c).is_some_and(|cell| cell.tone != Tone::Plain))
        })
        .collect();
    let mut table = Table::new();
    table.load_preset(comfy_table::presets::NOTHING);
    table.set_content_arrangement(ContentArrangement::Disabled);
    table.set_header(
        headers
            .iter()
            .enumerate()
            .map(|(c, h)| paint(h, Tone::Plain, painted[c])),
    );
    for row in rows {
        table.add_row(
            row.iter()
                .enumerate()
                .map(|(c, cell)| paint(&cell.text, cell.tone, painted[c])),
        );
    }
    for column in table.column_iter_mut() {
        column.set_padding((0, 2));
    }
    let mut out = String::new();
    for line in table.lines() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn paint(text: &str, tone: Tone, column_painted: bool) -> String {
    if !column_painted {
        return text.to_string();
    }
    match tone {
        Tone::Plain => text.default_color().to_string(),
        Tone::Good => text.green().to_string(),
        Tone::Warn => text.yellow().to_string(),
        Tone::Bad => text.red().to_string(),
    }
}

/// Removes ANSI escape sequences (CSI ... letter); for tests and width checks.
#[cfg(test)]
pub fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<Vec<Cell>> {
        vec![
            vec![
                "rxe0/1".into(),
                Cell::new("ACTIVE", Tone::Good),
                "veth0".into(),
            ],
            vec!["rxe1/1".into(), Cell::new("DOWN", Tone::Bad), "-".into()],
            vec![
                "mlx5_10/1".into(),
                Cell::new("INIT", Tone::Warn),
                "ens1f0np0".into(),
            ],
        ]
    }

    #[test]
    fn plain_table_is_aligned_without_trailing_space() {
        let out = render(&["PORT", "STATE", "NETDEV"], &sample(), Style::plain());
        assert_eq!(
            out,
            "PORT       STATE   NETDEV\n\
             rxe0/1     ACTIVE  veth0\n\
             rxe1/1     DOWN    -\n\
             mlx5_10/1  INIT    ens1f0np0\n"
        );
    }

    #[test]
    fn colour_keeps_the_layout() {
        let plain = render(&["PORT", "STATE", "NETDEV"], &sample(), Style::plain());
        let coloured = render(
            &["PORT", "STATE", "NETDEV"],
            &sample(),
            Style { color: true },
        );
        assert!(coloured.contains("\x1b[32mACTIVE\x1b[39m"), "{coloured:?}");
        assert!(coloured.contains("\x1b[31mDOWN\x1b[39m"), "{coloured:?}");
        assert_eq!(strip_ansi(&coloured), plain);
    }
}
