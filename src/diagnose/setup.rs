//! A local setup step that failed before any traffic (opening the device, querying its
//! port or a GID): which user error it is, in the words a GID slot the kernel refused gets.
//! `datapath`'s rules explain the same two GID errnos when they end a run.

use crate::model::failure::{Cause, Failure, Step};

/// What a failed setup step means to the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetupVerdict {
    /// No RDMA stack: no device at all, or a kernel without the verbs.
    NoRdma,
    /// The named device does not exist (others do).
    NoSuchDevice,
    /// The device has no such port.
    NoSuchPort,
    /// An empty GID slot or an index past the table, and the hint that says which.
    NoSuchGid { hint: &'static str },
    /// Anything else: the failure as it is.
    Other,
}

/// The verdict on a local setup failure; `devices_listed` says whether any RDMA device
/// exists at all.
pub fn setup_verdict(failure: &Failure, devices_listed: bool) -> SetupVerdict {
    let Cause::Errno { errno, .. } = failure.cause else {
        return SetupVerdict::Other;
    };
    match failure.step {
        Step::Open if errno == libc::ENODEV && !devices_listed => SetupVerdict::NoRdma,
        Step::Open if errno == libc::ENODEV => SetupVerdict::NoSuchDevice,
        Step::Open if errno == libc::ENOSYS || errno == libc::EOPNOTSUPP => SetupVerdict::NoRdma,
        Step::QueryPort if errno == libc::EINVAL => SetupVerdict::NoSuchPort,
        Step::QueryGid if is_gid_slot_errno(errno) => SetupVerdict::NoSuchGid {
            hint: gid_slot_hint(errno),
        },
        _ => SetupVerdict::Other,
    }
}

/// ENODATA (an empty slot) or EINVAL (an index past the table) from a GID lookup: the
/// index is wrong, not the stack.
pub fn is_gid_slot_errno(errno: i32) -> bool {
    errno == libc::ENODATA || errno == libc::EINVAL
}

/// A GID lookup's failure that names a wrong index (see [`is_gid_slot_errno`]).
pub fn is_bad_gid_slot(cause: &Cause) -> bool {
    matches!(cause, Cause::Errno { errno, .. } if is_gid_slot_errno(*errno))
}

/// What the errno of a refused GID slot says, and where to look.
fn gid_slot_hint(errno: i32) -> &'static str {
    if errno == libc::ENODATA {
        "the slot is empty (ENODATA); list the populated ones with `rdmactl gids`"
    } else {
        "the index is past the GID table (EINVAL); list them with `rdmactl gids`"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::failure::FailureContext;

    fn failed(step: Step, errno: i32) -> Failure {
        Failure::new(step, Cause::errno(errno), FailureContext::default())
    }

    #[test]
    fn gid_slot_errnos_name_the_index() {
        assert_eq!(
            setup_verdict(&failed(Step::QueryGid, libc::ENODATA), true),
            SetupVerdict::NoSuchGid {
                hint: "the slot is empty (ENODATA); list the populated ones with `rdmactl gids`"
            }
        );
        assert!(matches!(
            setup_verdict(&failed(Step::QueryGid, libc::EINVAL), true),
            SetupVerdict::NoSuchGid { hint } if hint.starts_with("the index is past")
        ));
        assert_eq!(
            setup_verdict(&failed(Step::QueryGid, libc::EIO), true),
            SetupVerdict::Other
        );
    }

    #[test]
    fn a_missing_device_is_no_rdma_only_when_none_exists() {
        let f = failed(Step::Open, libc::ENODEV);
        assert_eq!(setup_verdict(&f, false), SetupVerdict::NoRdma);
        assert_eq!(setup_verdict(&f, true), SetupVerdict::NoSuchDevice);
        let f = failed(Step::QueryPort, libc::EINVAL);
        assert_eq!(setup_verdict(&f, true), SetupVerdict::NoSuchPort);
    }
}
