//! Device limits: the largest inline SEND, and the P_Key table.

use super::{send, PairSpec, ALL_REMOTE, INLINE_CEILING};
use crate::gather::verbs::qp::{Qp, SendFlags};
use crate::model::failure::{Cause, Failure};
use crate::traffic::selftest::{pattern, StepResult, Tester};

impl Tester {
    /// The largest max_inline_data the first device grants at QP create (a binary search:
    /// too much is refused with EINVAL or ENOMEM).
    fn device_max_inline(&self) -> Result<u32, Failure> {
        let cq = self.new_cq(0, 4, false)?;
        let pd = self.ends[0].pd.as_ref().expect("pd");
        let (mut fits, mut too_big) = (0u32, INLINE_CEILING + 1);
        while too_big - fits > 1 {
            let mid = fits + (too_big - fits) / 2;
            let mut cfg = self.config(0, &cq, &cq);
            cfg.max_inline_data = mid;
            match Qp::create_configured(pd, &cfg) {
                Ok(_) => fits = mid,
                Err(f)
                    if matches!(f.cause, Cause::Errno { errno, .. }
                        if errno == libc::EINVAL || errno == libc::ENOMEM) =>
                {
                    too_big = mid
                }
                Err(f) => return Err(f),
            }
        }
        Ok(fits)
    }

    /// A SEND of exactly max_inline_data bytes inline arrives intact; one byte more is
    /// refused at post, and the refusal is explained.
    pub(super) fn inline(&mut self) -> StepResult {
        let asked = self.device_max_inline()?;
        let mut p = self.pair(PairSpec {
            inline: asked,
            // The granted size may round the asked one up; a page more covers it.
            mr_bytes: (asked as usize + 4096).next_multiple_of(4096),
            ..PairSpec::default()
        })?;
        let max = p.qps[0].max_inline_data();
        if max == 0 {
            return Ok(format!(
                "not supported by {} (max_inline_data 0)",
                self.device_name(0)
            ));
        }
        let len = max as usize;
        let room = p.mrs[1].size();
        if len + 1 > room {
            return Err(self.invalid(
                0,
                format!("max_inline_data {max} is larger than the test's buffer"),
            ));
        }
        p.qps[1].post_recv(&p.mrs[1], 0, room as u32, 0)?;
        let data = pattern("inline", len + 1);
        p.mrs[0].write(0, &data);
        let inline = SendFlags {
            signaled: true,
            solicited: false,
            inline: true,
        };
        p.qps[0].post(&p.mrs[0], &send(1, 0, max, inline))?;
        // Overwrite the source at once: inline data was copied at post, so what arrives
        // must still be the original.
        p.mrs[0].fill(0, len, 0);
        self.next_ok(0, &mut p.cqs[0], &p.qps[0])?;
        let wc = self.next_ok(1, &mut p.cqs[1], &p.qps[1])?;
        if wc.wc.byte_len != max || p.mrs[1].read(0, len) != data[..len] {
            return Err(self.invalid(
                1,
                format!(
                    "the {max}-byte inline SEND arrived as {} bytes or changed",
                    wc.wc.byte_len
                ),
            ));
        }
        p.mrs[0].write(0, &data);
        let refused = match p.qps[0].post(&p.mrs[0], &send(2, 0, max + 1, inline)) {
            Ok(()) => {
                return Err(self.broken(
                    0,
                    format!(
                    "an inline SEND of {} bytes was accepted, above the QP's max_inline_data {max}",
                    max + 1
                ),
                ))
            }
            Err(f) => f,
        };
        let x = self.explain_with(refused.clone(), |k| {
            k.inline_bytes = Some(max + 1);
            k.max_inline_data = Some(max);
        });
        self.messages += 1;
        let ceiling = if asked == INLINE_CEILING {
            format!(" (at least: the search stops at {INLINE_CEILING})")
        } else {
            String::new()
        };
        Ok(format!(
            "max_inline_data {max}{ceiling}: a {max}-byte inline SEND arrived intact; {} bytes refused: {} [{}: {}]",
            max + 1,
            refused.cause,
            x.explanation.code,
            x.explanation.message
        ))
    }

    /// The port's P_Key table; a QP moved to INIT with the default P_Key's index holds
    /// it; an index past the table is refused at INIT, and the refusal is explained.
    pub(super) fn pkey(&mut self) -> StepResult {
        let ctx = self.ends[0].ctx.clone().expect("opened");
        let table = ctx.pkey_table(self.port)?;
        // The default P_Key is 0xffff (full member) or 0x7fff (limited member).
        let Some(default) = table.iter().position(|k| k & 0x7fff == 0x7fff) else {
            return Err(self.broken(
                0,
                format!(
                    "the P_Key table of {}/{} has no default P_Key (0xffff or 0x7fff): {}",
                    ctx.name(),
                    self.port,
                    show_pkeys(&table)
                ),
            ));
        };
        let cq = self.new_cq(0, 4, false)?;
        let pd = self.ends[0].pd.clone().expect("pd");
        let (qp, _) = Qp::create_configured(&pd, &self.config(0, &cq, &cq))?;
        qp.to_init_pkey(ALL_REMOTE, default as u16)?;
        let held = qp.pkey_index()?;
        if usize::from(held) != default {
            return Err(self.broken(
                0,
                format!("INIT with P_Key index {default} left the QP at index {held}"),
            ));
        }
        let past = table.len() as u16;
        let (outside, _) = Qp::create_configured(&pd, &self.config(0, &cq, &cq))?;
        let checked = format!(
            "P_Key table {}; INIT with index {default} (0x{:04x}) holds it",
            show_pkeys(&table),
            table[default]
        );
        match outside.to_init_pkey(ALL_REMOTE, past) {
            // Not a broken rule: correct code never gives such an index. But code that
            // does works here and fails on a device that checks, so say so.
            Ok(()) => Ok(format!(
                "{checked}; index {past}, past the table, accepted at INIT by {} (its kernel does not check P_Key indices: a wrong index goes unnoticed here and fails where they are checked)",
                ctx.name()
            )),
            Err(refused) => {
                let x = self.explain_with(refused.clone(), |k| {
                    k.pkey_index = Some(u32::from(past));
                    k.pkey_table_len = Some(table.len() as u32);
                });
                Ok(format!(
                    "{checked}; index {past} refused: {} [{}: {}]",
                    refused.cause, x.explanation.code, x.explanation.message
                ))
            }
        }
    }
}

fn show_pkeys(table: &[u16]) -> String {
    let keys: Vec<String> = table
        .iter()
        .enumerate()
        .map(|(i, k)| format!("[{i}] 0x{k:04x}"))
        .collect();
    keys.join(" ")
}
