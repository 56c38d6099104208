//! Borderless, `ip`-style tables: left-aligned columns two spaces apart, no trailing space,
//! coloured with owo-colors only where a cell has a tone and the style asks for colour.
//!
//! Widths are measured on the plain text and the padding goes outside the escapes, so a
//! plain cell, and every header, carries no escape at all (no bare `ESC[39m` on a dumb
//! terminal or in a log). When the style has a width (COLUMNS, or the terminal's), the
//! widest columns are cut to fit, each cut value ending in `+` as `ps` marks a truncated
//! field; `-j` is never cut.

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

/// Columns are two spaces apart.
const GAP: usize = 2;
/// No column is cut below this many characters (two and the `+`).
const MIN_WIDTH: usize = 3;

pub fn render(headers: &[&str], rows: &[Vec<Cell>], style: Style) -> String {
    let header_cells: Vec<Cell> = headers.iter().map(|h| Cell::from(*h)).collect();
    let all: Vec<&[Cell]> = std::iter::once(header_cells.as_slice())
        .chain(rows.iter().map(Vec::as_slice))
        .collect();
    let columns = all.iter().map(|r| r.len()).max().unwrap_or(0);
    let mut widths = vec![0; columns];
    for row in &all {
        for (c, cell) in row.iter().enumerate() {
            widths[c] = widths[c].max(len(&cell.text));
        }
    }
    if let Some(limit) = style.width {
        fit(&mut widths, limit);
    }
    let mut out = String::new();
    for row in &all {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            let text = cut(&cell.text, widths[c]);
            let pad = widths[c] - len(&text);
            line.push_str(&paint(&text, cell.tone, style));
            if c + 1 < row.len() {
                line.push_str(&" ".repeat(pad + GAP));
            }
        }
        out.push_str(line.trim_end_matches(' '));
        out.push('\n');
    }
    out
}

fn len(text: &str) -> usize {
    text.chars().count()
}

/// Narrows the widest column, one character at a time, until the line fits `limit` or
/// every column is at `MIN_WIDTH`: the widest column (a GID, a rate) has the most to give.
/// The first column names the row (`rxe0/1`, `mlx5_0`) and is cut last, so each line
/// still says what it is about.
fn fit(widths: &mut [usize], limit: usize) {
    let total = |w: &[usize]| w.iter().sum::<usize>() + GAP * w.len().saturating_sub(1);
    while total(widths) > limit {
        // Of equally wide columns the rightmost: the left ones identify the row.
        let widest = |from: usize| {
            (from..widths.len())
                .filter(|c| widths[*c] > MIN_WIDTH)
                .max_by_key(|c| (widths[*c], *c))
        };
        let Some(column) = widest(1).or_else(|| widest(0)) else {
            return;
        };
        widths[column] -= 1;
    }
}

/// `text` cut to `width` characters, the last one a `+` when anything was cut.
fn cut(text: &str, width: usize) -> String {
    if len(text) <= width {
        return text.to_string();
    }
    let mut kept: String = text.chars().take(width.saturating_sub(1)).collect();
    kept.push('+');
    kept
}

fn paint(text: &str, tone: Tone, style: Style) -> String {
    if !style.color {
        return text.to_string();
    }
    match tone {
        Tone::Plain => text.to_string(),
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

    const HEADERS: &[&str] = &["PORT", "STATE", "NETDEV"];

    fn coloured() -> Style {
        Style {
            color: true,
            width: None,
        }
    }

    #[test]
    fn plain_table_is_aligned_without_trailing_space() {
        let out = render(HEADERS, &sample(), Style::plain());
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
        let plain = render(HEADERS, &sample(), Style::plain());
        let coloured = render(HEADERS, &sample(), coloured());
        assert!(coloured.contains("\x1b[32mACTIVE\x1b[39m"), "{coloured:?}");
        assert!(coloured.contains("\x1b[31mDOWN\x1b[39m"), "{coloured:?}");
        assert_eq!(strip_ansi(&coloured), plain);
    }

    /// Only a cell with a tone carries escapes: no bare reset or default-colour sequence on
    /// a header or a plain cell, and none at all with colour off.
    #[test]
    fn escapes_only_where_a_colour_was_set() {
        let coloured = render(HEADERS, &sample(), coloured());
        let header = coloured.lines().next().unwrap();
        assert!(!header.contains('\x1b'), "{header:?}");
        for line in coloured.lines() {
            let tinted = ["\x1b[32m", "\x1b[31m", "\x1b[33m"]
                .iter()
                .map(|c| line.matches(c).count())
                .sum::<usize>();
            assert_eq!(line.matches('\x1b').count(), 2 * tinted, "{line:?}");
        }
        assert!(!render(HEADERS, &sample(), Style::plain()).contains('\x1b'));
    }

    #[test]
    fn a_width_cuts_the_widest_column_and_marks_it() {
        let rows = vec![vec![
            Cell::from("rxe0"),
            Cell::from("fe80:0000:0000:0000:14e6:19ff:fedf:e644"),
            Cell::new("RoCE v2", Tone::Good),
        ]];
        let style = Style {
            color: true,
            width: Some(40),
        };
        let out = render(&["DEVICE", "GID", "TYPE"], &rows, style);
        for line in strip_ansi(&out).lines() {
            assert!(line.chars().count() <= 40, "{line:?}");
        }
        assert!(
            strip_ansi(&out).contains("rxe0    fe80:0000:0000:0000:14+  RoCE v2"),
            "{out:?}"
        );
        // Nothing to cut when it fits; a width too small for the minimum stops there.
        let wide = Style {
            color: false,
            width: Some(200),
        };
        assert_eq!(
            render(&["DEVICE", "GID", "TYPE"], &rows, wide),
            render(&["DEVICE", "GID", "TYPE"], &rows, Style::plain())
        );
        let tiny = Style {
            color: false,
            width: Some(1),
        };
        let out = render(&["DEVICE", "GID", "TYPE"], &rows, tiny);
        assert_eq!(out, "DE+  GID  TY+\nrx+  fe+  Ro+\n");
    }
}
