//! A failure and its explanation as a person reads it: the one-line summary with the raw
//! numbers, then why, what was seen in this run, and the fix. Every command that explains a
//! failure (pingpong, selftest, TCP and CM alike) prints it through here, once, on stderr.

use crate::model::diagnostic::Explanation;

/// `why:`, `seen:` and `fix:` lines, indented by `indent`.
pub fn body(x: &Explanation, indent: &str) -> String {
    parts(
        &x.summary,
        x.evidence.iter().map(|e| e.to_string()),
        &x.fix,
        indent,
    )
}

/// The same block from its parts: `fabric` relays the explanations its pair tests printed.
pub fn parts(
    summary: &str,
    seen: impl IntoIterator<Item = String>,
    fix: &str,
    indent: &str,
) -> String {
    let mut out = format!("{indent}  why:  {summary}\n");
    for e in seen {
        out.push_str(&format!("{indent}  seen: {e}\n"));
    }
    out.push_str(&format!("{indent}  fix:  {fix}\n"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::diagnostic::FailureReport;
    use crate::model::failure::{Cause, Failure, FailureContext, Step};

    #[test]
    fn one_block_with_aligned_labels() {
        let failure = Failure::new(
            Step::Rtr,
            Cause::errno(libc::ETIMEDOUT),
            FailureContext {
                device: "rxe0".into(),
                port: 1,
                gid_index: Some(1),
                ..FailureContext::default()
            },
        );
        let mut x = Explanation::new("no-neighbour", "no ARP reply", "check the peer");
        x.evidence.push(crate::model::diagnostic::Seen::new(
            crate::model::diagnostic::Source::Route,
            "neighbour FAILED",
        ));
        let r = FailureReport::new(&failure, x);
        assert_eq!(
            r.message,
            "modify QP to RTR failed (rxe0/1, GID index 1): ETIMEDOUT (110: Connection timed out)"
        );
        assert_eq!(
            body(&r.explanation, ""),
            "  why:  no ARP reply\n  seen: neighbour FAILED\n  fix:  check the peer\n"
        );
    }
}
