//! Plain libc calls the diagnostics need, kept here with the rest of the FFI.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// `access(path, R_OK | W_OK)`: can this process open the node read-write, as libibverbs
/// does? Err carries the errno (EACCES, ENOENT, ...).
pub fn access_read_write(path: &Path) -> Result<(), i32> {
    let c_path = CString::new(path.as_os_str().as_bytes()).map_err(|_| libc::EINVAL)?;
    // SAFETY: a valid NUL-terminated path; access() only reads it.
    let ret = unsafe { libc::access(c_path.as_ptr(), libc::R_OK | libc::W_OK) };
    if ret == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO))
    }
}

/// The effective user id: root bypasses RLIMIT_MEMLOCK only through CAP_IPC_LOCK, but the
/// evidence line still says who ran the check.
pub fn effective_uid() -> u32 {
    // SAFETY: geteuid() has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// The name of the network interface with this index in this process's network namespace
/// (`if_indextoname`); None when there is none here.
pub fn interface_name(index: u32) -> Option<String> {
    let mut name = [0 as libc::c_char; libc::IF_NAMESIZE];
    // SAFETY: the buffer holds IF_NAMESIZE bytes, as if_indextoname requires; on success
    // it holds a NUL-terminated name.
    let found = unsafe { libc::if_indextoname(index, name.as_mut_ptr()) };
    if found.is_null() {
        return None;
    }
    // SAFETY: if_indextoname succeeded, so `name` is NUL-terminated within its length.
    let name = unsafe { std::ffi::CStr::from_ptr(name.as_ptr()) };
    Some(name.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interface_name_names_loopback_and_nothing_for_a_free_index() {
        let index: u32 = std::fs::read_to_string("/sys/class/net/lo/ifindex")
            .expect("lo in this namespace")
            .trim()
            .parse()
            .unwrap();
        assert_eq!(interface_name(index).as_deref(), Some("lo"));
        assert_eq!(interface_name(0), None);
        assert_eq!(interface_name(u32::MAX), None);
    }
}
