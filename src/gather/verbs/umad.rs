//! The kernel's user MAD interface, `/dev/infiniband/umadN`, through plain libc calls:
//! open, the agent-registration ioctls, write, poll and read. Every call goes through
//! libc's `open`/`ioctl`/`read`/`write`/`poll` symbols, so ibsim's umad2sim (LD_PRELOAD)
//! carries them; Rust's `std::fs` opens with `open64`, which umad2sim does not see, so the
//! sysfs files of a umad port are read here with `libc::open` too.

use std::ffi::CString;
use std::io;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::model::mad::{self as mad, DrPath, MadTransport, Received, MAD_SIZE};

const UMAD_SYSFS: &str = "/sys/class/infiniband_mad";
const IB_SYSFS: &str = "/sys/class/infiniband";
const UMAD_DEV_DIR: &str = "/dev/infiniband";

/// struct ib_user_mad_hdr_old: the kernel's header while IB_USER_MAD_ENABLE_PKEY has not
/// been asked for, and the size libibumad's umad_size() (and so umad2sim) uses: 56 bytes.
const HDR_SIZE: usize = 56;
/// _IOWR(0x1b, 1, struct ib_user_mad_reg_req) (28 bytes).
const IB_USER_MAD_REGISTER_AGENT: libc::c_ulong = 0xc01c_1b01;

/// One umad port as sysfs lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UmadPort {
    /// `umad0` → 0.
    pub index: u32,
    pub device: String,
    pub port: u32,
    /// `InfiniBand`, `Ethernet`; None when sysfs has no link_layer file (umad2sim writes none).
    pub link_layer: Option<String>,
    /// `4: ACTIVE` as sysfs writes it.
    pub state: Option<crate::model::device::PortState>,
}

/// Reads a small sysfs file through libc's `open`, so umad2sim can redirect it.
fn read_small(path: &str) -> Option<String> {
    let c = CString::new(path).ok()?;
    // SAFETY: a valid NUL-terminated path; the fd is closed below.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDONLY) };
    if fd < 0 {
        return None;
    }
    let mut buf = [0u8; 256];
    // SAFETY: buf is writable for its length.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    // SAFETY: fd came from open above.
    unsafe { libc::close(fd) };
    if n < 0 {
        return None;
    }
    Some(
        String::from_utf8_lossy(&buf[..n as usize])
            .trim()
            .to_string(),
    )
}

/// Every umad port, in umadN order. An absent class directory is an empty list (no
/// ib_umad module, or no IB device).
pub fn umad_ports() -> io::Result<Vec<UmadPort>> {
    // read_dir goes through opendir, which umad2sim redirects (and which starts it).
    let entries = match std::fs::read_dir(UMAD_SYSFS) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut ports = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(index) = name
            .strip_prefix("umad")
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let dir = format!("{UMAD_SYSFS}/{name}");
        let (Some(device), Some(port)) = (
            read_small(&format!("{dir}/ibdev")),
            read_small(&format!("{dir}/port")).and_then(|p| p.parse::<u32>().ok()),
        ) else {
            continue;
        };
        let port_dir = format!("{IB_SYSFS}/{device}/ports/{port}");
        ports.push(UmadPort {
            index,
            link_layer: read_small(&format!("{port_dir}/link_layer")),
            state: read_small(&format!("{port_dir}/state"))
                .map(|t| crate::model::device::PortState::from_sysfs(&t)),
            device,
            port,
        });
    }
    ports.sort_by_key(|p| p.index);
    Ok(ports)
}

/// Why a umad port could not be opened, with the path and errno.
#[derive(Debug)]
pub struct OpenError {
    pub path: PathBuf,
    pub step: &'static str,
    pub source: io::Error,
}

/// An open umad port with agents for directed-route SMPs and the PMA.
pub struct Umad {
    fd: libc::c_int,
    smp_agent: u32,
    perf_agent: u32,
    /// Sends not yet answered or given back: each send comes back exactly once, as an
    /// answer or with a status, from the kernel and from umad2sim alike.
    outstanding: u64,
    /// When the last of them is due back at the latest (its send plus its timeout).
    due_by: Option<Instant>,
}

/// How long past a send's own timeout Drop still waits for it to come back.
const DRAIN_SLACK: Duration = Duration::from_millis(250);

impl Umad {
    /// Opens `/dev/infiniband/umad<index>` and registers the two agents.
    pub fn open(index: u32) -> Result<Umad, OpenError> {
        let path = format!("{UMAD_DEV_DIR}/umad{index}");
        let fail = |step, source| OpenError {
            path: PathBuf::from(&path),
            step,
            source,
        };
        let c = CString::new(path.clone()).map_err(|e| fail("open", io::Error::other(e)))?;
        // SAFETY: a valid path; the fd is owned by Umad and closed in Drop.
        let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDWR) };
        if fd < 0 {
            return Err(fail("open", io::Error::last_os_error()));
        }
        let mut umad = Umad {
            fd,
            smp_agent: 0,
            perf_agent: 0,
            outstanding: 0,
            due_by: None,
        };
        umad.smp_agent = umad
            .register(0, mad::CLASS_SMP_DR)
            .map_err(|e| fail("register the directed-route SMP agent (QP0)", e))?;
        umad.perf_agent = umad
            .register(1, mad::CLASS_PERF)
            .map_err(|e| fail("register the PMA agent (QP1)", e))?;
        Ok(umad)
    }

    fn register(&self, qpn: u8, class: u8) -> io::Result<u32> {
        // struct ib_user_mad_reg_req: id, method_mask[4], qpn, mgmt_class,
        // mgmt_class_version, oui[3], rmpp_version; 28 bytes with padding.
        let mut req = [0u8; 28];
        req[20] = qpn;
        req[21] = class;
        req[22] = 1;
        // SAFETY: req is a writable buffer of the struct's size; the kernel writes the id.
        let rc = unsafe { libc::ioctl(self.fd, IB_USER_MAD_REGISTER_AGENT, req.as_mut_ptr()) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(u32::from_ne_bytes(req[0..4].try_into().unwrap_or([0; 4])))
    }
}

impl Drop for Umad {
    fn drop(&mut self) {
        // Sends still out are waited for before the close: umad2sim's receiver thread
        // crashes or hangs when an answer arrives for a device already closed (the kernel
        // would just drop it). Each comes back within its own timeout, so this is bounded.
        while self.outstanding > 0 {
            let Some(due) = self.due_by else { break };
            let left = (due + DRAIN_SLACK).saturating_duration_since(Instant::now());
            if left.is_zero() || !matches!(self.recv(left), Ok(Some(_))) {
                break;
            }
        }
        // SAFETY: our own fd, closed once.
        unsafe { libc::close(self.fd) };
    }
}

impl MadTransport for Umad {
    fn send(&mut self, m: &[u8; MAD_SIZE], to: &DrPath, timeout: Duration) -> io::Result<()> {
        let mut buf = [0u8; HDR_SIZE + MAD_SIZE];
        let smp = m[1] == mad::CLASS_SMP_DR || m[1] == mad::CLASS_SMP_LID;
        let agent = if smp { self.smp_agent } else { self.perf_agent };
        buf[0..4].copy_from_slice(&agent.to_ne_bytes());
        // The kernel holds the send this long to match its answer, then gives it back with
        // ETIMEDOUT: the engine's resend timer, so that status is news when it comes.
        let timeout_ms = timeout.as_millis().clamp(1, u32::MAX as u128) as u32;
        buf[8..12].copy_from_slice(&timeout_ms.to_ne_bytes());
        // struct ib_mad_addr at 20: qpn, qkey (big-endian), lid (big-endian), sl, ...
        let (qpn, qkey, lid) = match to {
            DrPath::Directed(_) => (0u32, 0u32, mad::PERMISSIVE_LID),
            DrPath::Lid(lid) if smp => (0, 0, *lid),
            DrPath::Lid(lid) => (1, mad::GSI_QKEY, *lid),
        };
        buf[20..24].copy_from_slice(&qpn.to_be_bytes());
        buf[24..28].copy_from_slice(&qkey.to_be_bytes());
        buf[28..30].copy_from_slice(&lid.to_be_bytes());
        buf[HDR_SIZE..].copy_from_slice(m);
        // SAFETY: buf is readable for its length.
        let n = unsafe { libc::write(self.fd, buf.as_ptr().cast(), buf.len()) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        self.outstanding += 1;
        let due = Instant::now() + Duration::from_millis(u64::from(timeout_ms));
        self.due_by = Some(self.due_by.map_or(due, |d| d.max(due)));
        Ok(())
    }

    fn recv(&mut self, timeout: Duration) -> io::Result<Option<Received>> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let mut pfd = libc::pollfd {
                fd: self.fd,
                events: libc::POLLIN,
                revents: 0,
            };
            let ms = left.as_millis().min(i32::MAX as u128) as i32;
            // SAFETY: one valid pollfd.
            let rc = unsafe { libc::poll(&mut pfd, 1, ms) };
            if rc < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if rc == 0 {
                return Ok(None);
            }
            let mut buf = [0u8; HDR_SIZE + MAD_SIZE];
            // SAFETY: buf is writable for its length.
            let n = unsafe { libc::read(self.fd, buf.as_mut_ptr().cast(), buf.len()) };
            // umad2sim answers an empty queue with a negative count rather than -1/errno.
            if n < 0 {
                if left.is_zero() {
                    return Ok(None);
                }
                continue;
            }
            let n = (n as usize).min(buf.len());
            let status = u32::from_ne_bytes(buf[4..8].try_into().unwrap_or([0; 4]));
            let m = &buf[HDR_SIZE.min(n)..n];
            if status != 0 {
                // One of our sends given back (the kernel's timeout or a send error;
                // umad2sim's EAGAIN for a short read carries no MAD and is skipped): its
                // MAD is the request, whose TID's low 32 bits are the engine's.
                if let Some(h) = mad::Header::decode(m) {
                    self.outstanding = self.outstanding.saturating_sub(1);
                    return Ok(Some(Received::Returned {
                        tid: h.tid as u32,
                        status,
                    }));
                }
            } else if !m.is_empty() {
                if m.get(3).is_some_and(|method| method & 0x80 != 0) {
                    self.outstanding = self.outstanding.saturating_sub(1);
                }
                return Ok(Some(Received::Mad(m.to_vec())));
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
        }
    }
}
