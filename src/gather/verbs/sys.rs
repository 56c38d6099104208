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

/// What `TCP_INFO` says of the acknowledgements on a socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpAcks {
    /// Segments sent that the peer's kernel has not acknowledged (`tcpi_unacked`).
    pub unacked: u32,
    /// Milliseconds since the last ACK came (`tcpi_last_ack_recv`).
    pub last_ack_ms: u32,
}

/// The acknowledgements on TCP socket `fd`: nothing unacknowledged and an ACK received just
/// after a write means the peer host's kernel is alive and reading its network, whatever
/// its process does (a segment that never left is not "unacknowledged", so the time of
/// the last ACK is needed too). Err carries the errno.
pub fn tcp_acks(fd: std::os::fd::RawFd) -> Result<TcpAcks, i32> {
    // SAFETY: all-zero is a valid tcp_info (plain integers).
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: `info` is writable for `len` bytes, and the kernel writes at most `len`.
    let ret = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    if ret != 0 {
        return Err(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO));
    }
    Ok(TcpAcks {
        unacked: info.tcpi_unacked,
        last_ack_ms: info.tcpi_last_ack_recv,
    })
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

    /// A connected loopback socket whose write was read: nothing left unacknowledged.
    #[test]
    fn tcp_acks_say_the_peer_kernel_acknowledged() {
        use std::io::{Read, Write};
        use std::os::fd::AsRawFd;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        client.write_all(b"probe").unwrap();
        let mut got = [0u8; 5];
        server.read_exact(&mut got).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(50));
        let acks = tcp_acks(client.as_raw_fd()).unwrap();
        assert_eq!(acks.unacked, 0);
        assert!(acks.last_ack_ms < 1000, "{acks:?}");
        assert_eq!(tcp_acks(-1), Err(libc::EBADF));
    }
}
