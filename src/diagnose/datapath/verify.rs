//! Runs whose traffic completed, yet showed something wrong: corrupted data, broken verbs
//! semantics.

use crate::model::codes;
use crate::model::diagnostic::{Diagnostic, Seen, Source};
use crate::model::failure::Failure;

use super::Builder;

/// Every work request completed, yet the bytes that arrived are not the ones sent: on
/// either exchange (`diagnose::cm` defers here).
pub(super) fn data_mismatch(b: Builder) -> Diagnostic {
    let seen = format!("{}", b.failure.cause);
    b.done(
        codes::DATA_MISMATCH,
        "every work request completed successfully, yet the bytes differ from what was sent: memory corruption on either host, a buggy provider, or a peer that changed its buffer meanwhile".into(),
        vec![Seen::new(Source::Failure, seen)],
        "rerun; if it repeats, run rdmactl selftest on each host to find the side that corrupts".into(),
        false,
    )
}

/// The stack did what the verbs rules rule out: the earlier steps show the basic path
/// works, so this is the provider or kernel, not the caller.
pub(super) fn semantics_broken(failure: &Failure) -> Diagnostic {
    let mut x = Diagnostic::explanation(
        codes::SEMANTICS_BROKEN,
        format!(
            "the RDMA stack broke a verbs rule on {}: code that relies on it would fail here through no fault of its own",
            if failure.context.device.is_empty() {
                "this device"
            } else {
                &failure.context.device
            }
        ),
        "update the provider (rdma-core) and the kernel driver; if it persists, report it to their maintainers with this output (rdmactl -j selftest)",
    );
    x.evidence
        .push(Seen::new(Source::Failure, failure.cause.to_string()));
    x
}
