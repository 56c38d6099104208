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
