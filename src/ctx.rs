//! How a command was invoked: what every command needs, resolved once by `app`.

use std::path::PathBuf;

use crate::output::Style;

/// What every command needs to know about how it was invoked.
#[derive(Debug, Clone)]
pub struct Ctx {
    pub json: bool,
    pub style: Style,
    /// The sysfs root; `/sys` unless `--sysfs` points at a captured tree.
    pub sysfs: PathBuf,
    /// True when `--sysfs` was given: the tree is not this host's, so skip verbs.
    pub captured: bool,
    /// `--procfs`: the captured host's /proc (only with `--sysfs`); None reads no /proc for
    /// a captured tree, and the live /proc on this host.
    pub procfs: Option<PathBuf>,
}

#[cfg(test)]
impl Ctx {
    /// A plain-text invocation on the captured tree `tests/fixtures/sysfs/NAME`.
    pub fn fixture(name: &str) -> Ctx {
        Ctx {
            json: false,
            style: Style::plain(),
            sysfs: PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/sysfs")
                .join(name),
            captured: true,
            procfs: None,
        }
    }
}
