//! `doctor --expect FILE`: the manifest read from its file, and which kernel modules are
//! loaded (`module/NAME` under the sysfs root, so a captured tree answers for its host; on a
//! live host /proc/modules too).

use std::path::Path;

use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::model::expect::{self, Manifest, ModulesSeen};

/// The manifest in `path`; a refusal (exit 2) names the file and the line that failed.
pub fn read(path: &Path) -> Result<Manifest> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    expect::parse(&path.display().to_string(), &text).map_err(|why| {
        Error::Usage(format!(
            "--expect {}: {why}; the keys are listed in docs/health-checks.md, and \
             `rdmactl doctor --save-expect FILE` writes one from a good host",
            path.display()
        ))
    })
}

/// Which of `names` are loaded. A live host's /sys/module lists every loaded module (and
/// built-in ones with parameters); /proc/modules is asked too, as doctor does. A captured
/// tree answers from its `module/` and, with `--procfs`, its captured `modules`; with
/// neither it cannot tell.
pub fn modules(ctx: &Ctx, names: &[String]) -> ModulesSeen {
    let dir = ctx.sysfs.join("module");
    let proc_modules = match (&ctx.procfs, ctx.captured) {
        (Some(root), _) => Some(root.clone()),
        (None, false) => Some(std::path::PathBuf::from(crate::gather::procfs::PROC)),
        (None, true) => None,
    };
    if ctx.captured && !dir.is_dir() && proc_modules.is_none() {
        return ModulesSeen {
            loaded: None,
            source: format!("{} (not in the captured tree)", dir.display()),
        };
    }
    let loaded = names
        .iter()
        .filter(|n| {
            dir.join(n.as_str()).is_dir()
                || proc_modules
                    .as_deref()
                    .is_some_and(|root| crate::gather::procfs::module_loaded_in(root, n))
        })
        .cloned()
        .collect();
    ModulesSeen {
        loaded: Some(loaded),
        source: match &proc_modules {
            Some(root) => format!("{} and {}", dir.display(), root.join("modules").display()),
            None => dir.display().to_string(),
        },
    }
}
