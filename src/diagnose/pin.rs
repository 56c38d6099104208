//! Before allocating: a run that would pin more than the memlock limit or the available
//! memory is refused with the numbers (the OOM killer would end it without a word).

use crate::model::facts::MemlockFacts;
use crate::model::failure::{Cause, PinLimit};

/// The refusal for a run that pins `memlock.needed_bytes` (`what` says what they are), or
/// None when it fits under the limit without CAP_IPC_LOCK and under `mem_available`.
pub fn would_pin(
    memlock: &MemlockFacts,
    mem_available: Option<u64>,
    what: String,
) -> Option<Cause> {
    let refuse = |limit_bytes, limit| Cause::WouldPin {
        pinned_bytes: memlock.needed_bytes,
        what: what.clone(),
        limit_bytes,
        limit,
    };
    if let (false, Some(limit)) = (memlock.cap_ipc_lock, memlock.limit_bytes) {
        if memlock.needed_bytes > limit {
            return Some(refuse(limit, PinLimit::Memlock));
        }
    }
    match mem_available {
        Some(avail) if memlock.needed_bytes > avail => Some(refuse(avail, PinLimit::MemAvailable)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memlock(limit_bytes: Option<u64>, cap_ipc_lock: bool) -> MemlockFacts {
        MemlockFacts {
            limit_bytes,
            cap_ipc_lock,
            needed_bytes: 1 << 20,
        }
    }

    #[test]
    fn refused_over_the_limit_or_the_memory() {
        let what = || "2 × the message".to_string();
        assert!(matches!(
            would_pin(&memlock(Some(65536), false), None, what()),
            Some(Cause::WouldPin {
                limit: PinLimit::Memlock,
                limit_bytes: 65536,
                ..
            })
        ));
        assert_eq!(would_pin(&memlock(Some(65536), true), None, what()), None);
        assert_eq!(
            would_pin(&memlock(None, false), Some(2 << 20), what()),
            None
        );
        assert!(matches!(
            would_pin(&memlock(None, false), Some(4096), what()),
            Some(Cause::WouldPin {
                limit: PinLimit::MemAvailable,
                ..
            })
        ));
    }
}
