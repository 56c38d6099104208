//! Runs stopped by the user or the peer: no local rule applies.

use crate::model::codes;
use crate::model::diagnostic::{Diagnostic, Seen, Source};
use crate::model::failure::Failure;

use super::Builder;

pub(super) fn interrupted(failure: &Failure, signal: i32) -> Diagnostic {
    let name = crate::model::failure::signal_name(signal);
    let mut x = Diagnostic::explanation(
        codes::INTERRUPTED,
        format!(
            "the run was stopped by {name} ({}), not by a fault",
            if signal == libc::SIGINT {
                "Ctrl-C"
            } else {
                "kill, or a job scheduler ending the job"
            }
        ),
        "rerun it to completion; a smaller -n finishes sooner",
    );
    if let Some(note) = &failure.context.note {
        x.evidence
            .push(Seen::new(Source::Failure, format!("stopped {note}")));
    }
    x
}

/// The peer explained its own failure: its words, marked as the peer's.
pub(super) fn peer_reported(notice: &crate::model::failure::PeerNotice) -> Diagnostic {
    let mut x = Diagnostic::explanation(
        notice.code.clone(),
        format!("the {} found the cause: {}", notice.role, notice.summary),
        notice.fix.clone(),
    );
    x.evidence.push(Seen::new(
        Source::PeerNotice,
        format!("the {} said: {}", notice.role, notice.message),
    ));
    x.evidence.extend(
        notice
            .evidence
            .iter()
            .map(|e| Seen::new(Source::PeerNotice, format!("{}: {e}", notice.role))),
    );
    x
}

/// The out-of-band connection closed while this end waited for completions: the peer is
/// gone, and said nothing (a peer that fails or is interrupted says why first).
pub(super) fn peer_gone(b: Builder) -> Diagnostic {
    // Not via `done`: whether the GID fits says nothing about a closed connection.
    let mut x = Diagnostic::explanation(
        codes::PEER_GONE,
        "the peer went away mid-run: it closed the out-of-band connection without a word (killed with SIGKILL, crashed, or an older rdmactl)",
        "look at the peer: its process, its output, and dmesg on its host",
    );
    if let Some(note) = &b.failure.context.note {
        x.evidence.push(Seen::new(
            Source::Failure,
            format!("the connection closed {note}"),
        ));
    }
    x
}
