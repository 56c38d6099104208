//! Memory and device access: memlock, pinned memory, the device files, a device that is gone.

use crate::diagnose::device_node;
use crate::model::codes::{self, Code};
use crate::model::diagnostic::{Diagnostic, Seen, Source};
use crate::model::errno::errno_name;
use crate::model::facts::DeviceNodeFacts;
use crate::model::failure::Cause;

use super::{generic, Builder};

/// Rows 8 (memlock) and resource exhaustion.
pub(super) fn memlock(b: Builder) -> Diagnostic {
    let step = b.failure.step;
    let mut memlock = b.ctx.memlock.clone();
    if let (Some(m), Cause::WouldPin { pinned_bytes, .. }) = (&mut memlock, &b.failure.cause) {
        m.needed_bytes = *pinned_bytes;
    }
    match memlock {
        Some(m) if !m.cap_ipc_lock && m.limit_bytes.is_some_and(|l| l < m.needed_bytes) => {
            let limit = m.limit_bytes.unwrap_or(0);
            b.done(
                codes::MEMLOCK_LIMIT,
                format!(
                    "the locked-memory limit ({}) is smaller than what {} needs to pin ({}), and this process lacks CAP_IPC_LOCK",
                    human_bytes(limit),
                    step.name(),
                    human_bytes(m.needed_bytes)
                ),
                vec![Seen::new(Source::Memlock, format!("RLIMIT_MEMLOCK soft limit {limit} bytes (ulimit -l {})", limit / 1024)), Seen::new(Source::Memlock, format!("needed {} bytes", m.needed_bytes)), Seen::new(Source::Memlock, "CAP_IPC_LOCK not held")],
                "raise memlock: '* - memlock unlimited' in /etc/security/limits.conf, LimitMEMLOCK=infinity in the systemd unit, or --ulimit memlock=-1 for the container".into(),
                false,
            )
        }
        Some(m) => {
            let limit = m.limit_bytes.map(human_bytes).unwrap_or_else(|| "unlimited".into());
            b.done(
                codes::OUT_OF_RESOURCES,
                format!("{} ran out of memory although memlock allows it: the device's resources (max_mr, max_cq, max_qp) or the system's memory are exhausted", step.name()),
                vec![Seen::new(Source::Memlock, format!("RLIMIT_MEMLOCK {limit}, CAP_IPC_LOCK {}", if m.cap_ipc_lock { "held" } else { "not held" }))],
                "reduce the sizes (-s, queue depth), or free device resources held by other processes".into(),
                false,
            )
        }
        None => b.done(
            codes::MEMLOCK_LIMIT,
            format!("{} could not pin memory: usually the locked-memory limit (ulimit -l) for a process without CAP_IPC_LOCK", step.name()),
            vec![],
            "check ulimit -l; raise memlock in limits.conf, the systemd unit or the container".into(),
            false,
        ),
    }
}

/// Checked before allocating: more than the host has available would end in the OOM killer.
pub(super) fn memory_short(b: Builder) -> Diagnostic {
    let Cause::WouldPin {
        pinned_bytes,
        what,
        limit_bytes,
        ..
    } = &b.failure.cause
    else {
        return generic(b);
    };
    let ratio = (*pinned_bytes / (*limit_bytes).max(1)).max(1) + 1;
    b.done(
        codes::MEMORY_SHORT,
        format!(
            "the run would pin {} ({what}), more than the {} of memory this host has available: the OOM killer would end it",
            human_bytes(*pinned_bytes),
            human_bytes(*limit_bytes)
        ),
        vec![Seen::new(Source::Memlock, format!("MemAvailable {limit_bytes} bytes (/proc/meminfo)")), Seen::new(Source::Memlock, format!("to pin {pinned_bytes} bytes ({what})"))],
        format!("use a message size at least {ratio} times smaller (-s), or free memory on this host"),
        false,
    )
}

/// `device-access` for a node that refused this process, worded by the device-node rule:
/// the open here (or the registration) and a CM that could not answer (librdmacm opens the
/// node on the way) both say it from this one place.
pub(crate) fn node_refused(
    node: &DeviceNodeFacts,
    errno: Option<i32>,
) -> Option<(Code, String, Vec<Seen>, String)> {
    let r = device_node::refusal(node, errno)?;
    let seen = r
        .evidence
        .into_iter()
        .map(|e| Seen::new(Source::DeviceNode, e))
        .collect();
    Some((codes::DEVICE_ACCESS, r.message, seen, r.fix))
}

/// The uverbs node refused the open (or the registration): what its mode and owner say
/// against this process's ids, worded by the one device-node rule.
pub(super) fn device_access(b: Builder) -> Diagnostic {
    let errno = match &b.failure.cause {
        Cause::Errno { errno, .. } => Some(*errno),
        _ => None,
    };
    let node = b.ctx.device_node.clone().unwrap_or_default();
    if let Some((code, summary, seen, fix)) = node_refused(&node, errno) {
        return b.done(code, summary, seen, fix, false);
    }
    // The node was not looked at (a captured tree, the peer's report): say only what the
    // errno says, and how to look.
    let path = if node.path.is_empty() {
        "the device's /dev/infiniband/uverbsN node".to_string()
    } else {
        node.path.clone()
    };
    let errno = errno.map(errno_name).unwrap_or("an error");
    b.done(
        codes::DEVICE_ACCESS,
        format!("{path} cannot be opened read-write ({errno}); its mode and owner were not read here, so what refused it is not known"),
        vec![],
        "compare `ls -l /dev/infiniband` with `id` for the user that runs it; the kernel creates uverbs nodes 0666".into(),
        false,
    )
}

pub(super) fn device_gone(b: Builder) -> Diagnostic {
    let node = b.ctx.device_node.clone().unwrap_or_default();
    let mut ev = Vec::new();
    if !node.path.is_empty() {
        ev.push(Seen::new(
            Source::DeviceNode,
            format!(
                "{}: {}",
                node.path,
                if node.exists { "present" } else { "missing" }
            ),
        ));
    }
    b.done(
        codes::DEVICE_GONE,
        "the device node is missing: the device was removed, its driver unloaded, or /dev/infiniband is not mapped into this container".into(),
        ev,
        "check /sys/class/infiniband and /dev/infiniband; pass the devices into the container".into(),
        false,
    )
}

fn human_bytes(n: u64) -> String {
    if n >= 1 << 30 && n % (1 << 30) == 0 {
        format!("{} GiB", n >> 30)
    } else if n >= 1 << 20 && n % (1 << 20) == 0 {
        format!("{} MiB", n >> 20)
    } else if n >= 1 << 10 && n % (1 << 10) == 0 {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} bytes")
    }
}
