//! How `-g auto` reads: the chosen index and why, one line per other slot, and the error
//! when nothing fits.

use crate::diagnose::gid_auto::GidChoice;
use crate::diagnose::gidselect::{self, Verdict};

impl GidChoice {
    /// "auto: GID index 1 (RoCE v2, ::ffff:192.168.77.2 on veth1): RoCE v2, IPv4 like ..."
    /// and one line per other slot.
    pub fn render(&self) -> String {
        let toward = self
            .peer
            .map(|p| format!(" toward {p}"))
            .unwrap_or_default();
        let mut out = match self.selection.chosen {
            Some(i) => {
                let what = self
                    .table
                    .iter()
                    .find(|e| e.index == i)
                    .map(gidselect::describe)
                    .unwrap_or_else(|| format!("GID index {i}"));
                let why = self
                    .selection
                    .reason(i)
                    .map(|r| r.why.clone())
                    .unwrap_or_default();
                format!(
                    "-g auto on {}/{}{toward}: chose {what}: {why}\n",
                    self.device, self.port
                )
            }
            None => format!(
                "-g auto on {}/{}{toward}: no GID index fits\n",
                self.device, self.port
            ),
        };
        for r in &self.selection.reasons {
            if r.verdict == Verdict::Chosen {
                continue;
            }
            let verdict = match r.verdict {
                Verdict::Usable => "usable",
                _ => "rejected",
            };
            out.push_str(&format!("  index {} {verdict}: {}\n", r.index, r.why));
        }
        out
    }

    /// The error when nothing fits: every slot and why it was turned down.
    pub fn none_fits(&self) -> String {
        let reasons: Vec<String> = self
            .selection
            .reasons
            .iter()
            .map(|r| format!("index {}: {}", r.index, r.why))
            .collect();
        format!(
            "-g auto: no GID on {}/{} fits{}: {}",
            self.device,
            self.port,
            self.peer
                .map(|p| format!(" the peer {p}"))
                .unwrap_or_default(),
            if reasons.is_empty() {
                "the GID table is empty".into()
            } else {
                reasons.join("; ")
            }
        )
    }
}
