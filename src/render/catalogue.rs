//! `rdmactl explain`: catalogue entries as docs/failures.md writes them (as `rustc --explain`
//! prints its Markdown), the list of codes, and the JSON of both.

use serde::Serialize;

use crate::model::catalogue::Entry;

/// The entries of one code, each under a line naming its codes and group:
/// `ib-peer-lid-zero — Data path (TCP exchange, verbs setup, QP transitions)`.
pub fn entries_text(entries: &[Entry]) -> String {
    entries
        .iter()
        .map(|e| format!("{} — {}\n\n{}\n", e.codes.join(", "), e.group, e.text))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every code, one a line, under its group.
pub fn list_text(entries: &[Entry]) -> String {
    let mut out = String::new();
    let mut group = None;
    for e in entries {
        if group != Some(e.group) {
            if group.is_some() {
                out.push('\n');
            }
            out.push_str(&format!("{}:\n", e.group));
            group = Some(e.group);
        }
        for code in &e.codes {
            out.push_str(&format!("  {code}\n"));
        }
    }
    out
}

/// `explain -j CODE`.
#[derive(Debug, Serialize)]
pub struct Explained<'a> {
    pub code: &'a str,
    pub entries: Vec<EntryJson>,
}

#[derive(Debug, Serialize)]
pub struct EntryJson {
    pub codes: Vec<&'static str>,
    pub group: &'static str,
    /// The `- **When:**`, `Cause`, `Seen` and `Fix` items, each on one line; null for an
    /// entry written as prose (the findings), whose `text` says it all.
    pub when: Option<String>,
    pub cause: Option<String>,
    pub seen: Option<String>,
    pub fix: Option<String>,
    pub text: &'static str,
}

pub fn explained<'a>(code: &'a str, entries: &[Entry]) -> Explained<'a> {
    Explained {
        code,
        entries: entries
            .iter()
            .map(|e| EntryJson {
                codes: e.codes.clone(),
                group: e.group,
                when: e.item("When"),
                cause: e.item("Cause"),
                seen: e.item("Seen"),
                fix: e.item("Fix"),
                text: e.text,
            })
            .collect(),
    }
}

/// `explain -j`: one row per code and entry.
#[derive(Debug, Serialize)]
pub struct CodeRow {
    pub code: &'static str,
    pub group: &'static str,
}

pub fn list(entries: &[Entry]) -> Vec<CodeRow> {
    entries
        .iter()
        .flat_map(|e| {
            e.codes.iter().map(|&code| CodeRow {
                code,
                group: e.group,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::catalogue::{entries, lookup};

    #[test]
    fn an_entry_prints_as_written() {
        let text = entries_text(&lookup("ib-peer-lid-zero"));
        assert!(
            text.starts_with(
                "ib-peer-lid-zero — Data path (TCP exchange, verbs setup, QP transitions)\n\n- **When:**"
            ),
            "{text}"
        );
        let two = entries_text(&lookup("mtu-mismatch"));
        assert_eq!(two.matches("mtu-mismatch — ").count(), 2, "{two}");
        let json = serde_json::to_value(explained("ib-peer-lid-zero", &lookup("ib-peer-lid-zero")))
            .unwrap();
        assert!(json["entries"][0]["fix"]
            .as_str()
            .unwrap()
            .starts_with("start a subnet manager on the peer's fabric"));
        let finding = serde_json::to_value(explained("memlock", &lookup("memlock"))).unwrap();
        assert!(finding["entries"][0]["fix"].is_null());
    }

    #[test]
    fn the_list_groups_codes() {
        let all = entries();
        let text = list_text(&all);
        assert!(
            text.starts_with(
                "Data path (TCP exchange, verbs setup, QP transitions):\n  ib-peer-lid-zero\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("\n\nFindings of `subnet`:\n  subnet-sm\n"),
            "{text}"
        );
        assert!(text.contains("  subnet-vl-mismatch\n"));
        assert_eq!(
            list(&all).len(),
            text.lines().filter(|l| l.starts_with("  ")).count()
        );
    }
}
