//! Engines that move real traffic, driven by several commands.

pub mod counters;
pub mod fabric;
pub mod failure;
pub mod meter;
pub mod pingpong;
pub mod selftest;

/// A caught SIGINT/SIGTERM as the failure of a wait for completions, for the watch of
/// `Cq::wait_watching`.
pub fn interrupted_wait() -> Option<crate::model::failure::Failure> {
    crate::interrupt::caught().map(|signal| {
        crate::model::failure::Failure::new(
            crate::model::failure::Step::Poll,
            crate::model::failure::Cause::Interrupted { signal },
            crate::model::failure::FailureContext::default(),
        )
    })
}
