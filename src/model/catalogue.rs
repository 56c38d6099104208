//! The registry of diagnostic codes: docs/failures.md, compiled in. Each `### \`code\``
//! heading there is one entry (a heading may name several codes that share it), under the
//! `## ` group it sits in. `rdmactl explain` prints an entry as it is written; build.rs makes
//! each code a `model::codes` constant, the only way a rule names one, so the rules emit only
//! codes that have an entry. The page is the one source, so the catalogue, the codes and the
//! documentation cannot drift apart.

use serde::Serialize;

/// The page, as the repository holds it.
const FAILURES_MD: &str = include_str!("../../docs/failures.md");

/// One `### ` entry of the page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Entry {
    /// Every code the heading names (most name one).
    pub codes: Vec<&'static str>,
    /// The `## ` heading the entry sits under.
    pub group: &'static str,
    /// The entry's text below its heading, trimmed.
    pub text: &'static str,
}

impl Entry {
    /// The text of a `- **Label:**` item of the entry (`When`, `Cause`, `Seen`, `Fix`),
    /// joined onto one line; None for an entry written as prose.
    pub fn item(&self, label: &str) -> Option<String> {
        let start = format!("- **{label}:**");
        let mut lines = self.text.lines().skip_while(|l| !l.starts_with(&start));
        let first = lines.next()?.strip_prefix(&start)?.trim().to_string();
        let rest = lines.take_while(|l| l.starts_with("  ")).map(str::trim);
        Some(
            std::iter::once(first.as_str())
                .chain(rest)
                .collect::<Vec<_>>()
                .join(" "),
        )
    }
}

/// Every entry, in the page's order.
pub fn entries() -> Vec<Entry> {
    let mut out: Vec<Entry> = Vec::new();
    let mut group = "";
    // Byte offsets of the current entry's body, so `text` borrows the page.
    let mut open: Option<(Vec<&'static str>, usize)> = None;
    let mut offset = 0;
    let mut close = |open: &mut Option<(Vec<&'static str>, usize)>, end: usize, group| {
        if let Some((codes, start)) = open.take() {
            out.push(Entry {
                codes,
                group,
                text: FAILURES_MD[start..end].trim(),
            });
        }
    };
    for line in FAILURES_MD.split_inclusive('\n') {
        let bare = line.trim_end();
        if let Some(heading) = bare.strip_prefix("### ") {
            close(&mut open, offset, group);
            let codes = heading
                .split(',')
                .filter_map(|c| c.trim().strip_prefix('`')?.strip_suffix('`'))
                .collect();
            open = Some((codes, offset + line.len()));
        } else if let Some(heading) = bare.strip_prefix("## ") {
            close(&mut open, offset, group);
            group = heading;
        }
        offset += line.len();
    }
    close(&mut open, FAILURES_MD.len(), group);
    out
}

/// The entries that name `code` (a code may be both a failure explanation and a finding).
pub fn lookup(code: &str) -> Vec<Entry> {
    entries()
        .into_iter()
        .filter(|e| e.codes.contains(&code))
        .collect()
}

/// Every catalogued code, sorted, each once.
pub fn codes() -> Vec<&'static str> {
    let mut all: Vec<&'static str> = entries().into_iter().flat_map(|e| e.codes).collect();
    all.sort_unstable();
    all.dedup();
    all
}

/// The catalogued codes a mistyped `code` may have meant: those that contain it or that it
/// contains, and those within an edit distance of a third of its length; closest first.
pub fn close_matches(code: &str) -> Vec<&'static str> {
    let limit = (code.len() / 3).max(1);
    let mut near: Vec<(usize, &'static str)> = codes()
        .into_iter()
        .filter_map(|c| {
            let d = edit_distance(code, c);
            let related = !code.is_empty() && (c.contains(code) || code.contains(c));
            (d <= limit || related).then_some((d, c))
        })
        .collect();
    near.sort();
    near.into_iter().map(|(_, c)| c).take(5).collect()
}

/// Levenshtein distance over bytes (codes are ASCII).
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_carry_their_group_and_items() {
        let port_down = lookup("ib-peer-lid-zero");
        assert_eq!(port_down.len(), 1);
        let e = &port_down[0];
        assert!(e.group.starts_with("Data path"), "{}", e.group);
        assert!(e.text.starts_with("- **When:**"), "{}", e.text);
        assert!(!e.text.contains("### "), "{}", e.text);
        let fix = e.item("Fix").unwrap();
        assert!(
            fix.starts_with("start a subnet manager on the peer's fabric"),
            "{fix}"
        );
        assert!(!fix.contains('\n'), "{fix}");
        assert_eq!(e.item("Nothing"), None);
    }

    #[test]
    fn shared_headings_and_codes_in_two_groups() {
        let vl = lookup("subnet-vl-mismatch");
        assert_eq!(vl.len(), 1);
        assert_eq!(vl[0].codes, ["subnet-mtu-mismatch", "subnet-vl-mismatch"]);
        // An explanation of a failed run and a finding of doctor share the code.
        let mtu = lookup("mtu-mismatch");
        assert_eq!(mtu.len(), 2, "{mtu:?}");
        assert!(mtu[1].item("When").is_none());
        assert!(!lookup("retry-exceeded").is_empty());
        assert!(lookup("no-such-code").is_empty());
        let all = codes();
        assert!(all.len() > 150, "{}", all.len());
        assert!(all.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn close_matches_name_what_a_typo_meant() {
        assert_eq!(close_matches("retry-exeeded")[0], "retry-exceeded");
        assert!(
            close_matches("memlok").contains(&"memlock"),
            "{:?}",
            close_matches("memlok")
        );
        assert!(close_matches("cm-no-listen").contains(&"cm-no-listener"));
        assert!(close_matches("zzzzzzzzzzzzzzzz").is_empty());
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
