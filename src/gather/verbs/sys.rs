//! Plain libc calls the diagnostics need, kept here with the rest of the FFI.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::model::qos::PauseParam;

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

/// iptables-legacy's table `table` as ip_tables (or ip6_tables) hands it out: the
/// `ipt_getinfo` reply (84 bytes) and the `ipt_get_entries` reply (the name, the size and
/// the entries from byte 40), both through getsockopt on a raw socket, as iptables-save
/// reads them. Needs CAP_NET_ADMIN (EPERM without); ENOENT when the table is not loaded.
pub fn iptables_legacy_table(table: &str, v6: bool) -> Result<(Vec<u8>, Vec<u8>), i32> {
    const SO_GET_INFO: libc::c_int = 64;
    const SO_GET_ENTRIES: libc::c_int = 65;
    const INFO_LEN: usize = 84;
    const ENTRIES_AT: usize = 40;
    if table.is_empty() || table.len() >= 32 {
        return Err(libc::EINVAL);
    }
    let (domain, level) = if v6 {
        (libc::AF_INET6, libc::IPPROTO_IPV6)
    } else {
        (libc::AF_INET, libc::IPPROTO_IP)
    };
    // SAFETY: socket() has no memory preconditions; a valid descriptor is owned below.
    let fd = unsafe {
        libc::socket(
            domain,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            libc::IPPROTO_RAW,
        )
    };
    if fd < 0 {
        return Err(last_errno());
    }
    // SAFETY: fd is a fresh descriptor nothing else owns; OwnedFd closes it.
    let socket = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
    let get = |opt: libc::c_int, buf: &mut Vec<u8>| -> Result<(), i32> {
        let mut len = buf.len() as libc::socklen_t;
        // SAFETY: buf is len bytes long and writable; the kernel writes at most len bytes
        // and reads the table name from its start.
        let ret = unsafe {
            libc::getsockopt(
                socket.as_raw_fd(),
                level,
                opt,
                buf.as_mut_ptr().cast(),
                &mut len,
            )
        };
        if ret == 0 {
            Ok(())
        } else {
            Err(last_errno())
        }
    };
    let mut info = vec![0u8; INFO_LEN];
    info[..table.len()].copy_from_slice(table.as_bytes());
    get(SO_GET_INFO, &mut info)?;
    let size = u32::from_ne_bytes(info[80..84].try_into().unwrap_or([0; 4])) as usize;
    // The table may grow between the two calls: the kernel then answers EAGAIN, and the
    // caller says the table was not read.
    let mut entries = vec![0u8; ENTRIES_AT + size];
    entries[..table.len()].copy_from_slice(table.as_bytes());
    entries[32..36].copy_from_slice(&(size as u32).to_ne_bytes());
    get(SO_GET_ENTRIES, &mut entries)?;
    Ok((info, entries))
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

/// `SIOCETHTOOL` and the ethtool commands used (uapi linux/sockios.h, linux/ethtool.h).
const SIOCETHTOOL: libc::c_ulong = 0x8946;
const ETHTOOL_GPAUSEPARAM: u32 = 0x12;
const ETHTOOL_GSTRINGS: u32 = 0x1b;
const ETHTOOL_GSTATS: u32 = 0x1d;
const ETHTOOL_GSSET_INFO: u32 = 0x37;
const ETH_SS_STATS: u32 = 1;
const ETH_GSTRING_LEN: usize = 32;

/// `struct ifreq` with `ifr_data` (the ethtool command buffer): a 16-byte name, then the
/// union, 24 bytes on 64-bit (its largest member is `struct ifmap`); padded to match.
#[repr(C)]
struct IfreqData {
    name: [libc::c_char; libc::IFNAMSIZ],
    data: *mut libc::c_void,
    _pad: [u8; 24 - std::mem::size_of::<*mut libc::c_void>()],
}

/// `struct ethtool_sset_info` asking for one set: the kernel writes one count in `data`.
#[repr(C)]
struct SsetInfo {
    cmd: u32,
    reserved: u32,
    sset_mask: u64,
    data: u32,
}

/// `struct ethtool_pauseparam`.
#[repr(C)]
#[derive(Default)]
struct EthtoolPause {
    cmd: u32,
    autoneg: u32,
    rx_pause: u32,
    tx_pause: u32,
}

// The uapi sizes, checked where the build is: a wrong layout fails to compile.
const _: () = assert!(std::mem::size_of::<SsetInfo>() == 24);
const _: () = assert!(std::mem::size_of::<EthtoolPause>() == 16);
const _: () = assert!(std::mem::size_of::<IfreqData>() == libc::IFNAMSIZ + 24);

/// One ethtool command on `ifname`: `buf` is the command's structure, its first u32 the
/// command. Err carries the errno (ENODEV: no such netdev here; EOPNOTSUPP: the driver
/// does not implement it).
///
/// # Safety
/// `buf` must point to a buffer large enough for everything the kernel writes back for
/// this command, valid for the duration of the call.
unsafe fn ethtool_ioctl(ifname: &str, buf: *mut libc::c_void) -> Result<(), i32> {
    let bytes = ifname.as_bytes();
    if bytes.is_empty() || bytes.len() >= libc::IFNAMSIZ || bytes.contains(&0) {
        return Err(libc::ENODEV);
    }
    let mut req = IfreqData {
        name: [0; libc::IFNAMSIZ],
        data: buf,
        _pad: [0; 24 - std::mem::size_of::<*mut libc::c_void>()],
    };
    for (dst, src) in req.name.iter_mut().zip(bytes) {
        *dst = *src as libc::c_char;
    }
    // ethtool(8) does the same: any datagram socket carries SIOCETHTOOL; AF_UNIX where
    // the namespace has no IPv4.
    // SAFETY: socket() has no memory preconditions.
    let mut fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        // SAFETY: as above.
        fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    }
    if fd < 0 {
        return Err(last_errno());
    }
    // SAFETY: fd is a socket we just opened and own; OwnedFd closes it once.
    let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
    // SAFETY: `req` is a valid ifreq with a NUL-terminated name; its data pointer is the
    // caller's buffer, which the caller guarantees is large enough for this command.
    let ret = unsafe { libc::ioctl(fd.as_raw_fd(), SIOCETHTOOL as _, &mut req) };
    if ret < 0 {
        Err(last_errno())
    } else {
        Ok(())
    }
}

fn last_errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// The netdev's 802.3x pause setting (`ethtool -a`). Err: the errno (EOPNOTSUPP where the
/// driver has none, as veth).
pub fn ethtool_pause(ifname: &str) -> Result<PauseParam, i32> {
    let mut p = EthtoolPause {
        cmd: ETHTOOL_GPAUSEPARAM,
        ..Default::default()
    };
    // SAFETY: the kernel writes one struct ethtool_pauseparam, which `p` is.
    unsafe { ethtool_ioctl(ifname, (&mut p as *mut EthtoolPause).cast())? };
    Ok(PauseParam {
        autoneg: p.autoneg != 0,
        rx: p.rx_pause != 0,
        tx: p.tx_pause != 0,
    })
}

/// The driver's statistics by name, in the driver's order (`ethtool -S`): the count
/// (`ETHTOOL_GSSET_INFO`), the names (`ETHTOOL_GSTRINGS`), the values (`ETHTOOL_GSTATS`).
/// Err: the errno; EOPNOTSUPP also where the driver reports no statistics set.
pub fn ethtool_stats(ifname: &str) -> Result<Vec<(String, u64)>, i32> {
    let mut tries = 0;
    loop {
        match ethtool_stats_once(ifname) {
            Err(libc::EAGAIN) if tries < 3 => tries += 1,
            other => return other,
        }
    }
}

fn ethtool_stats_once(ifname: &str) -> Result<Vec<(String, u64)>, i32> {
    let mut info = SsetInfo {
        cmd: ETHTOOL_GSSET_INFO,
        reserved: 0,
        sset_mask: 1 << ETH_SS_STATS,
        data: 0,
    };
    // SAFETY: with one bit in sset_mask the kernel writes the header and at most one u32.
    unsafe { ethtool_ioctl(ifname, (&mut info as *mut SsetInfo).cast())? };
    // The kernel clears the bits of the sets the driver does not have.
    if info.sset_mask & (1 << ETH_SS_STATS) == 0 {
        return Err(libc::EOPNOTSUPP);
    }
    let n = info.data as usize;
    if n == 0 {
        return Ok(Vec::new());
    }
    // GSTRINGS and GSTATS write as many entries as the driver counts at that moment, not
    // as many as asked for: a count that grows between the calls (channels added) would
    // overrun an exact buffer, so each has room for twice the count, and what came back
    // is checked against that room.
    let room = 2 * n + 64;

    // struct ethtool_gstrings: cmd, string_set, len (u32 each), then len * 32 bytes.
    let mut strings = vec![0u8; 12 + room * ETH_GSTRING_LEN];
    strings[0..4].copy_from_slice(&ETHTOOL_GSTRINGS.to_ne_bytes());
    strings[4..8].copy_from_slice(&ETH_SS_STATS.to_ne_bytes());
    strings[8..12].copy_from_slice(&(n as u32).to_ne_bytes());
    // SAFETY: the buffer holds the header and `room` strings, more than the kernel writes
    // unless the count more than doubled since GSSET_INFO.
    unsafe { ethtool_ioctl(ifname, strings.as_mut_ptr().cast())? };
    let got_names = u32::from_ne_bytes([strings[8], strings[9], strings[10], strings[11]]) as usize;

    // struct ethtool_stats: cmd, n_stats (u32 each), then n_stats u64s; u64 storage keeps
    // the values aligned.
    let mut stats = vec![0u64; 1 + room];
    let mut head = [0u8; 8];
    head[..4].copy_from_slice(&ETHTOOL_GSTATS.to_ne_bytes());
    head[4..].copy_from_slice(&(n as u32).to_ne_bytes());
    stats[0] = u64::from_ne_bytes(head);
    // SAFETY: as for GSTRINGS: the header and `room` values.
    unsafe { ethtool_ioctl(ifname, stats.as_mut_ptr().cast())? };
    let h = stats[0].to_ne_bytes();
    let got_values = u32::from_ne_bytes([h[4], h[5], h[6], h[7]]) as usize;

    if got_names > room || got_values > room {
        // The kernel wrote past the room: nothing after this is trustworthy.
        std::process::abort();
    }
    // Names and values from two moments: a count that changed in between is retried
    // rather than guessing which name goes with which value.
    if got_names != got_values {
        return Err(libc::EAGAIN);
    }
    Ok(strings[12..12 + got_names * ETH_GSTRING_LEN]
        .chunks_exact(ETH_GSTRING_LEN)
        .zip(&stats[1..=got_values])
        .map(|(name, value)| {
            let end = name.iter().position(|b| *b == 0).unwrap_or(name.len());
            (String::from_utf8_lossy(&name[..end]).into_owned(), *value)
        })
        .collect())
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

    #[test]
    fn ethtool_on_loopback_and_on_no_interface() {
        // lo has neither statistics nor pause settings; the kernel clears the stats bit.
        assert_eq!(ethtool_stats("lo"), Err(libc::EOPNOTSUPP));
        assert_eq!(ethtool_pause("lo"), Err(libc::EOPNOTSUPP));
        for name in [
            "rdmactl-none0",
            "",
            "a-name-far-too-long-for-ifnamsiz",
            "a\0b",
        ] {
            assert_eq!(ethtool_stats(name), Err(libc::ENODEV), "{name:?}");
            assert_eq!(ethtool_pause(name), Err(libc::ENODEV), "{name:?}");
        }
    }

    /// Every interface of this namespace against `ethtool -S` and `ethtool -a` (a missing
    /// ethtool fails): the same names in the same order, the same values where ours did
    /// not move around ethtool's read, and the same pause settings or the same refusal.
    #[test]
    #[ignore = "needs ethtool (package ethtool); scripts/test runs it"]
    fn ethtool_matches_the_ethtool_tool() {
        use crate::gather::qos::{parse_ethtool_pause, parse_ethtool_stats};
        let run = |args: &[&str]| std::process::Command::new("ethtool").args(args).output();
        if let Err(e) = run(&["--version"]) {
            panic!("ethtool: {e}; install Debian's ethtool package (scripts/setup does)");
        }
        let names: Vec<String> = std::fs::read_dir("/sys/class/net")
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        for name in &names {
            let before = ethtool_stats(name);
            let out = run(&["-S", name]).unwrap();
            let after = ethtool_stats(name);
            if !out.status.success() {
                assert!(
                    before.is_err(),
                    "{name}: ethtool -S failed, we read {before:?}"
                );
                continue;
            }
            let theirs = parse_ethtool_stats(&String::from_utf8_lossy(&out.stdout)).unwrap();
            let (before, after) = (before.unwrap(), after.unwrap());
            let names_of =
                |v: &[(String, u64)]| v.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
            assert_eq!(names_of(&before), names_of(&theirs), "{name}");
            for ((n, b), ((_, a), (_, t))) in before.iter().zip(after.iter().zip(&theirs)) {
                if a == b {
                    assert_eq!(t, b, "{name} {n}");
                }
            }
            let out = run(&["-a", name]).unwrap();
            let ours = ethtool_pause(name);
            if out.status.success() {
                let theirs = parse_ethtool_pause(&String::from_utf8_lossy(&out.stdout));
                assert_eq!(ours.ok(), theirs, "{name}");
            } else {
                assert!(ours.is_err(), "{name}: ethtool -a failed, we read {ours:?}");
            }
        }
    }
}
