//! A failed job's log read as typed facts, for `rdmactl triage`: the RDMA error lines of
//! the libraries and tools a job runs (NCCL, UCX and Open MPI through it, libfabric's verbs
//! provider and `ofi_rxm` over it, NVSHMEM's ibrc and ibgda transports, Mooncake's transfer
//! engine, perftest, rdma-core's `ibv_rc_pingpong`, librdmacm's `rping`, rdmactl itself, the
//! mlx5 and rdma_rxe kernel drivers), behind the prefixes launchers and loggers put on them (`srun -l`, `mpirun
//! --tag-output`, pdsh, syslog/journald, dmesg). Pure: one line of text in, a fact out; the
//! reader (`gather::joblog`) streams the file. Never panics on any input.
//!
//! Every format is taken from the tool's own format string, cited where it is parsed; no
//! line here was copied from a log someone posted.
//!
//! NIXL (ai-dynamo/nixl v1.3) prints no work-completion line of its own: its RDMA backends
//! are UCX, libfabric and Mooncake, whose lines are read here.

use std::net::IpAddr;

use serde::Serialize;

use crate::model::errno::{wc_status_name, wc_status_text};
use crate::model::gid::Gid;

/// Which program wrote the line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LogLibrary {
    Nccl,
    Ucx,
    Perftest,
    /// rdma-core's libibverbs examples (`ibv_rc_pingpong` and its siblings).
    IbvPingpong,
    Rping,
    Rdmactl,
    /// The kernel's RDMA drivers (dmesg, journald's kernel lines).
    Kernel,
    /// libfabric's verbs provider (and `ofi_rxm` over it).
    Libfabric,
    Nvshmem,
    /// Mooncake's transfer engine (also under NIXL's Mooncake backend).
    Mooncake,
}

impl LogLibrary {
    pub fn name(self) -> &'static str {
        match self {
            LogLibrary::Nccl => "NCCL",
            LogLibrary::Ucx => "UCX",
            LogLibrary::Perftest => "perftest",
            LogLibrary::IbvPingpong => "ibv_rc_pingpong",
            LogLibrary::Rping => "rping",
            LogLibrary::Rdmactl => "rdmactl",
            LogLibrary::Kernel => "kernel",
            LogLibrary::Libfabric => "libfabric",
            LogLibrary::Nvshmem => "NVSHMEM",
            LogLibrary::Mooncake => "Mooncake",
        }
    }
}

/// Where a line came from, as its prefixes say.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LogOrigin {
    /// pdsh's or syslog's host, or the host a library prints in its own prefix.
    pub host: Option<String>,
    /// `srun -l`'s task number, or `mpirun --tag-output`'s rank.
    pub rank: Option<u32>,
    /// The timestamp as the log wrote it (syslog, dmesg, UCX).
    pub time: Option<String>,
    pub pid: Option<u32>,
}

impl LogOrigin {
    /// Who reported: the host, else the rank, else nothing.
    pub fn reporter(&self) -> Option<String> {
        match (&self.host, self.rank) {
            (Some(h), _) => Some(h.clone()),
            (None, Some(r)) => Some(format!("rank {r}")),
            (None, None) => None,
        }
    }
}

/// What failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum LogFailure {
    /// A work completion with an error status (`IBV_WC_*`).
    Completion {
        status: u32,
        opcode: Option<u32>,
        vendor_err: Option<u32>,
        /// The HCA's CQE syndrome, where the library prints it apart (UCX on mlx5).
        syndrome: Option<u32>,
        wr_id: Option<u64>,
    },
    /// A QP state transition (`ibv_modify_qp`) that failed.
    Transition {
        errno: Option<i32>,
        from: Option<String>,
        to: String,
    },
    /// The two ends' GIDs are of different address families (one IPv4-mapped, the other
    /// not), as perftest's handshake found them before any QP was connected.
    GidFamily,
}

/// One RDMA error line, decoded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LogEvent {
    /// Which input it came from (the index into the files read).
    pub file: usize,
    /// 1-based line number in its file.
    pub line: u64,
    pub library: LogLibrary,
    pub origin: LogOrigin,
    pub failure: LogFailure,
    pub device: Option<String>,
    pub port: Option<u32>,
    pub gid_index: Option<u32>,
    pub local_gid: Option<Gid>,
    pub remote_gid: Option<Gid>,
    /// The peer's address, as the line names it or as its remote GID encodes it.
    pub peer: Option<IpAddr>,
    pub qpn: Option<u32>,
    pub remote_qpn: Option<u32>,
    /// The traffic class of the QP, where the line says it (UCX's peer info).
    pub traffic_class: Option<u32>,
    /// What the line itself says the refused attribute was, where it says it (rdma_rxe's
    /// `invalid sgid index`, `invalid network type`).
    #[serde(skip)]
    pub detail: Option<RefusedAttr>,
}

/// An attribute a driver's log line names as the one it refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusedAttr {
    /// The GID index is beyond the port's GID table.
    SgidIndexOutOfRange,
    /// The GID is not RoCE v2 (IPv4 or IPv6): rdma_rxe speaks RoCE v2 only.
    NotRoceV2(u32),
}

impl LogEvent {
    fn new(line: u64, library: LogLibrary, failure: LogFailure) -> LogEvent {
        LogEvent {
            file: 0,
            line,
            library,
            origin: LogOrigin::default(),
            failure,
            device: None,
            port: None,
            gid_index: None,
            local_gid: None,
            remote_gid: None,
            peer: None,
            qpn: None,
            remote_qpn: None,
            traffic_class: None,
            detail: None,
        }
    }

    pub fn status(&self) -> Option<u32> {
        match self.failure {
            LogFailure::Completion { status, .. } => Some(status),
            LogFailure::Transition { .. } | LogFailure::GidFamily => None,
        }
    }

    /// The peer: the address the line names, else the one its remote GID encodes (never
    /// the all-zero GID).
    pub fn peer_ip(&self) -> Option<IpAddr> {
        self.peer.or_else(|| {
            self.remote_gid
                .filter(|g| !g.is_zero())
                .map(|g| g.ip().to_canonical())
        })
    }
}

/// The work completion status with both names people grep for.
pub fn status_words(status: u32) -> String {
    format!(
        "{} ({status}, {})",
        wc_status_name(status),
        wc_status_text(status)
    )
}

// ---------------------------------------------------------------------------------------
// Prefixes

/// The prefixes of one line, taken off in the order launchers stack them, and the rest.
fn strip_prefixes(mut text: &str) -> (LogOrigin, &str) {
    let mut origin = LogOrigin::default();
    for _ in 0..6 {
        let before = text;
        text = text.trim_start_matches(['\r', ' ', '\t']);
        if let Some(rest) = mpirun_tag(text, &mut origin) {
            text = rest;
        } else if let Some(rest) = srun_label(text, &mut origin) {
            text = rest;
        } else if let Some(rest) = syslog(text, &mut origin) {
            text = rest;
        } else if let Some(rest) = dmesg_time(text, &mut origin) {
            text = rest;
        } else if let Some(rest) = pdsh_host(text, &mut origin) {
            text = rest;
        }
        if text.len() == before.len() {
            break;
        }
    }
    (origin, text)
}

/// `mpirun --tag-output` (Open MPI 4.1, orte/mca/iof/base/iof_base_output.c):
/// `[%s,%d]<%s>:` with the job id, the rank and stdout/stderr/stddiag.
fn mpirun_tag<'a>(text: &'a str, origin: &mut LogOrigin) -> Option<&'a str> {
    let inner = text.strip_prefix('[')?;
    let close = inner.find("]<")?;
    let (job, rank) = inner[..close].split_once(',')?;
    if job.is_empty() || !job.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let rank: u32 = rank.parse().ok()?;
    let after = &inner[close + 2..];
    let end = after.find(">:")?;
    if !["stdout", "stderr", "stddiag"].contains(&&after[..end]) {
        return None;
    }
    origin.rank = Some(rank);
    Some(&after[end + 2..])
}

/// `srun -l` (Slurm, src/srun/libsrun/... `--label`): the task number, a colon and a space,
/// right-aligned to the width of the largest task number.
fn srun_label<'a>(text: &'a str, origin: &mut LogOrigin) -> Option<&'a str> {
    let end = text.find(": ")?;
    let digits = &text[..end];
    if digits.is_empty() || digits.len() > 7 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    origin.rank.get_or_insert(digits.parse().ok()?);
    Some(&text[end + 2..])
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// syslog and `journalctl`'s default output (RFC 3164): `Mon DD HH:MM:SS host prog[pid]: `,
/// or `host kernel: ` for the kernel.
fn syslog<'a>(text: &'a str, origin: &mut LogOrigin) -> Option<&'a str> {
    let month = text.get(..3)?;
    if !MONTHS.contains(&month) || text.as_bytes().get(3) != Some(&b' ') {
        return None;
    }
    let mut rest = text[4..].trim_start();
    let (day, r) = rest.split_once(' ')?;
    if day.is_empty() || day.len() > 2 || !day.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    rest = r;
    let (clock, r) = rest.split_once(' ')?;
    if clock.len() != 8 || clock.bytes().filter(|b| *b == b':').count() != 2 {
        return None;
    }
    let (host, r) = r.split_once(' ')?;
    let (prog, r) = r.split_once(": ")?;
    if prog.contains(' ') || host.is_empty() {
        return None;
    }
    origin.time = Some(format!("{month} {day} {clock}"));
    origin.host = Some(host.to_string());
    if let Some((_, pid)) = prog.split_once('[') {
        origin.pid = pid.trim_end_matches(']').parse().ok();
    }
    Some(r)
}

/// dmesg's `[ 1234.567890] `.
fn dmesg_time<'a>(text: &'a str, origin: &mut LogOrigin) -> Option<&'a str> {
    let inner = text.strip_prefix('[')?;
    let close = inner.find("] ")?;
    let stamp = inner[..close].trim();
    let (secs, frac) = stamp.split_once('.')?;
    if secs.is_empty()
        || frac.is_empty()
        || !secs.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    origin.time.get_or_insert_with(|| stamp.to_string());
    Some(&inner[close + 2..])
}

/// pdsh (pdsh 2.x, its `-N`-less default): `host: `. A host name is one token of letters,
/// digits, dots, dashes and underscores that is not all digits (that is `srun -l`), and
/// never rdmactl's own `rdmactl: `.
fn pdsh_host<'a>(text: &'a str, origin: &mut LogOrigin) -> Option<&'a str> {
    let end = text.find(": ")?;
    let host = &text[..end];
    let ok = !host.is_empty()
        && host.len() <= 64
        && host.as_bytes()[0].is_ascii_alphanumeric()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
        && !host.bytes().all(|b| b.is_ascii_digit())
        && ![
            "rdmactl",
            "infiniband",
            "error",
            "warning",
            "warn",
            "info",
            "debug",
            "note",
            "fatal",
        ]
        .iter()
        .any(|w| host.eq_ignore_ascii_case(w));
    // A kernel line of an RDMA device without a parent device reads `DEV: ...` too:
    // rdma_rxe's `rxe0: qp#17 FUNC: ` and `rxe0: rxe_FUNC: ` are the device, not a host.
    let rest = &text[end + 2..];
    if !ok || rest.starts_with("qp#") || rest.starts_with("rxe_") {
        return None;
    }
    origin.host.get_or_insert_with(|| host.to_string());
    Some(rest)
}

// ---------------------------------------------------------------------------------------
// Small readers

/// The decimal number at the start of `text` (a leading minus allowed).
fn number(text: &str) -> Option<i64> {
    let t = text.trim_start();
    let neg = t.starts_with('-');
    let digits: &str = {
        let body = if neg { &t[1..] } else { t };
        let end = body
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(body.len());
        &body[..end]
    };
    let v: i64 = digits.get(..digits.len().min(18))?.parse().ok()?;
    Some(if neg { -v } else { v })
}

/// The hexadecimal number after an optional `0x` at the start of `text`.
fn hex(text: &str) -> Option<u64> {
    let t = text.trim_start();
    let t = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    let end = t.find(|c: char| !c.is_ascii_hexdigit()).unwrap_or(t.len());
    u64::from_str_radix(t.get(..end.min(16))?, 16).ok()
}

/// The text after the first `key`.
fn after<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.find(key).map(|i| &text[i + key.len()..])
}

/// The token (up to whitespace, a comma or `]`) after the first `key`.
fn token_after<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let rest = after(text, key)?.trim_start();
    let end = rest
        .find(|c: char| c.is_whitespace() || c == ',' || c == ']')
        .unwrap_or(rest.len());
    Some(&rest[..end]).filter(|t| !t.is_empty())
}

fn u32_after(text: &str, key: &str) -> Option<u32> {
    number(after(text, key)?).and_then(|v| u32::try_from(v).ok())
}

fn hex_after(text: &str, key: &str) -> Option<u64> {
    hex(after(text, key)?)
}

/// A GID as libraries print it (`inet_ntop`'s IPv6 form, or sysfs's); `N/A` and garbage
/// are None.
fn gid(text: &str) -> Option<Gid> {
    Gid::parse(text.trim_end_matches([',', '.', ')'])).ok()
}

/// `DEV:PORT`, optionally followed by `/LINK_LAYER`.
fn dev_port(text: &str) -> Option<(String, Option<u32>)> {
    let text = text.split('/').next()?;
    let (dev, port) = text.rsplit_once(':').unwrap_or((text, ""));
    let ok = !dev.is_empty()
        && dev
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    ok.then(|| (dev.to_string(), port.parse().ok()))
}

/// A peer address as NCCL's `ncclSocketToString` writes it (`10.0.0.7<41322>`, or an
/// IPv6 address in brackets), or `ADDR:PORT`.
fn peer_addr(text: &str) -> Option<IpAddr> {
    let host = text.split('<').next()?.trim();
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Some(ip.to_canonical());
    }
    if let Ok(sa) = text.parse::<std::net::SocketAddr>() {
        return Some(sa.ip().to_canonical());
    }
    let (h, _) = host.rsplit_once(':')?;
    h.parse::<IpAddr>().ok().map(|ip| ip.to_canonical())
}

/// A completion status from `ibv_wc_status_str`'s text or an `IBV_WC_*` name.
fn status_from_words(text: &str) -> Option<u32> {
    let t = text.trim();
    (0..24u32).find(|s| {
        wc_status_text(*s).eq_ignore_ascii_case(t) || wc_status_name(*s).eq_ignore_ascii_case(t)
    })
}

/// An errno from the C library's `strerror` text (Linux glibc's wording).
fn errno_from_words(text: &str) -> Option<i32> {
    const TEXTS: [(&str, i32); 12] = [
        ("Operation not permitted", 1),
        ("No such file or directory", 2),
        ("Input/output error", 5),
        ("Cannot allocate memory", 12),
        ("Permission denied", 13),
        ("Device or resource busy", 16),
        ("No such device", 19),
        ("Invalid argument", 22),
        ("No data available", 61),
        ("Network is unreachable", 101),
        ("Connection timed out", 110),
        ("No route to host", 113),
    ];
    let t = text.trim();
    TEXTS
        .iter()
        .find(|(words, _)| t.starts_with(words))
        .map(|(_, e)| *e)
}

// ---------------------------------------------------------------------------------------
// Formats

/// NCCL's WARN and INFO lines (src/include/debug.h, src/debug.cc, every 2.x release):
/// `%s:%d:%d [%d] %s:%d NCCL WARN ` with host, pid, tid, CUDA device, file and line.
fn nccl_header(text: &str, origin: &mut LogOrigin) {
    let Some(at) = text
        .find(" NCCL WARN ")
        .or_else(|| text.find(" NCCL INFO "))
    else {
        return;
    };
    let head = text[..at].trim_start();
    let mut parts = head.splitn(3, ':');
    let (Some(host), Some(pid)) = (parts.next(), parts.next()) else {
        return;
    };
    if !host.is_empty() && !host.contains(' ') {
        origin.host.get_or_insert_with(|| host.to_string());
        origin.pid = origin.pid.or(pid.parse().ok());
    }
}

/// NCCL's failed completion, src/transport/net_ib.cc (`ncclIbTest`):
/// v2.19–v2.26: `NET/IB : Got completion from peer %s with status=%d opcode=%d len=%d vendor
/// err %d (%s)%s%s%s%s` (the four: ` localGid `, the GID, ` remoteGids`, the GID; 2.20+
/// adds ` hca %s`); v2.27+ (src/transport/net_ib/...): `NET/IB: Got completion from peer %s
/// with status=%s(%d) opcode=%s(%d) vendor_err=%u %s%s%s%s hca %s`. The peer is
/// `ncclSocketToString`'s `ADDR<PORT>`.
fn nccl_completion(text: &str, line: u64) -> Option<LogEvent> {
    let rest = after(text, "Got completion from peer ")?;
    let (peer, rest) = rest.split_once(" with status=")?;
    // `12` (older) or `IBV_WC_RETRY_EXC_ERR(12)` (2.27+).
    let status_field = rest.split_whitespace().next()?;
    let status = match status_field.split_once('(') {
        Some((_, n)) => number(n)?,
        None => number(status_field)?,
    };
    let opcode = token_after(rest, "opcode=").and_then(|t| match t.split_once('(') {
        Some((_, n)) => number(n),
        None => number(t),
    });
    let vendor_err = after(rest, "vendor err ")
        .or_else(|| after(rest, "vendor_err="))
        .and_then(number);
    let mut e = LogEvent::new(
        line,
        LogLibrary::Nccl,
        LogFailure::Completion {
            status: u32::try_from(status).ok()?,
            opcode: opcode.and_then(|v| u32::try_from(v).ok()),
            vendor_err: vendor_err.and_then(|v| u32::try_from(v).ok()),
            syndrome: None,
            wr_id: None,
        },
    );
    e.peer = peer_addr(peer);
    e.local_gid = token_after(rest, "localGid").and_then(gid);
    e.remote_gid = token_after(rest, "remoteGids").and_then(gid);
    e.device = token_after(rest, " hca ").map(str::to_string);
    Some(e)
}

/// NCCL's failed QP transition, src/misc/ibvwrap.cc (`wrap_ibv_modify_qp`, 2.21+):
/// `Call to ibv_modify_qp failed with %d %s, on dev %s:%d, curr state %s, next state %s,
/// local GID index %d, local GID %s, remote GID %s`; before 2.21: `Call to ibv_modify_qp
/// failed with error %s` (strerror only).
fn nccl_modify_qp(text: &str, line: u64) -> Option<LogEvent> {
    let rest = after(text, "ibv_modify_qp failed with ")?;
    let errno = match rest.strip_prefix("error ") {
        Some(words) => errno_from_words(words),
        None => number(rest).and_then(|v| i32::try_from(v).ok()),
    };
    let to = token_after(rest, "next state ").unwrap_or("?").to_string();
    let mut e = LogEvent::new(
        line,
        LogLibrary::Nccl,
        LogFailure::Transition {
            errno,
            from: token_after(rest, "curr state ").map(str::to_string),
            to,
        },
    );
    if let Some((dev, port)) = token_after(rest, "on dev ").and_then(dev_port) {
        e.device = Some(dev);
        e.port = port;
    }
    e.gid_index = u32_after(rest, "local GID index ");
    e.local_gid = rest
        .match_indices("local GID ")
        .map(|(i, k)| &rest[i + k.len()..])
        .find(|r| !r.starts_with("index"))
        .and_then(|r| token_after(r, ""))
        .and_then(gid);
    e.remote_gid = token_after(rest, "remote GID ").and_then(gid);
    Some(e)
}

/// UCX's log line header (UCX 1.13, src/ucs/debug/log.c `ucs_log_default_handler`):
/// `[%lu.%06lu] [%s:%-5d:%s] %17s:%-4u %-4s %-5s %*s%s`: time, host, pid, thread, file,
/// line, `UCX`, the level, the message.
fn ucx_header<'a>(text: &'a str, origin: &mut LogOrigin) -> Option<&'a str> {
    let at = text.find("UCX  ")?;
    // The bracketed groups before `UCX`: the time (dmesg-like, maybe taken off already as
    // a prefix) and `host:pid:thread`.
    let mut head = &text[..at];
    while let Some(open) = head.find('[') {
        let Some(close) = head[open..].find(']') else {
            break;
        };
        let group = &head[open + 1..open + close];
        if group.contains(':') {
            let mut parts = group.split(':');
            if let Some(host) = parts.next().filter(|h| !h.is_empty()) {
                origin.host.get_or_insert_with(|| host.to_string());
            }
            origin.pid = origin
                .pid
                .or(parts.next().and_then(|p| p.trim().parse().ok()));
        } else if group.contains('.') && group.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
            origin.time.get_or_insert_with(|| group.to_string());
        }
        head = &head[open + close + 1..];
    }
    let msg = text[at + 5..].trim_start();
    let msg = msg
        .split_once(' ')
        .map_or(msg, |(_level, m)| m)
        .trim_start();
    Some(msg)
}

/// UCX on mlx5 (1.13, src/uct/ib/mlx5/ib_mlx5_log.c `uct_ib_mlx5_completion_with_err`):
/// `%s on %s:%d/%s (synd 0x%x vend 0x%x hw_synd %d/%d)`: the syndrome's words, the device,
/// port and link layer, the CQE syndrome and vendor syndrome.
fn ucx_mlx5(msg: &str, line: u64) -> Option<LogEvent> {
    let paren = msg.find(" (synd 0x")?;
    let head = &msg[..paren];
    let on = head.rfind(" on ")?;
    let words = head[..on].trim();
    let (dev, port) = dev_port(&head[on + 4..])?;
    // The words of each MLX5_CQE_SYNDROME_* in the same file, and the IBV_WC_* status the
    // kernel and rdma-core's mlx5 provider map it to (providers/mlx5/cq.c).
    const WORDS: [(&str, u32); 13] = [
        ("Local length", 1),
        ("Local QP operation", 2),
        ("Local protection", 4),
        ("WR flushed because QP in error state", 5),
        ("Memory window bind", 6),
        ("Bad response", 7),
        ("Local access", 8),
        ("Invalid request", 9),
        ("Remote access", 10),
        ("Remote QP", 11),
        ("Transport retry count exceeded", 12),
        ("Receive-no-ready retry count exceeded", 13),
        ("Remote side aborted", 16),
    ];
    let status = WORDS.iter().find(|(w, _)| words.ends_with(w))?.1;
    let tail = &msg[paren..];
    let mut e = LogEvent::new(
        line,
        LogLibrary::Ucx,
        LogFailure::Completion {
            status,
            opcode: None,
            vendor_err: hex_after(tail, "vend ").and_then(|v| u32::try_from(v).ok()),
            syndrome: hex_after(tail, "synd ").and_then(|v| u32::try_from(v).ok()),
            wr_id: None,
        },
    );
    e.device = Some(dev);
    e.port = port;
    Some(e)
}

/// UCX's RC verbs transport (1.13, src/uct/ib/rc/verbs/rc_verbs_iface.c
/// `uct_rc_verbs_handle_failure`): `send completion with error: %s [qpn 0x%x wrid
/// 0x%lxvendor_err 0x%x]` (no space before vendor_err in the source), then the peer info on
/// the next line.
fn ucx_verbs(msg: &str, line: u64) -> Option<LogEvent> {
    let rest = after(msg, "send completion with error: ")?;
    let words = rest.split(" [").next()?;
    let status = status_from_words(words)?;
    let mut e = LogEvent::new(
        line,
        LogLibrary::Ucx,
        LogFailure::Completion {
            status,
            opcode: None,
            vendor_err: hex_after(rest, "vendor_err ").and_then(|v| u32::try_from(v).ok()),
            syndrome: None,
            wr_id: hex_after(rest, "wrid "),
        },
    );
    e.qpn = hex_after(rest, "[qpn ").and_then(|v| u32::try_from(v).ok());
    Some(e)
}

/// UCX's peer info under a failed completion (1.13, src/uct/ib/base/ib_log.c
/// `uct_ib_log_dump_qp_peer_info` / `uct_ib_ah_attr_str`): `[rqpn 0x%x dlid=%d sl=%d
/// port=%d src_path_bits=%d dgid=%s sgid_index=%d traffic_class=%d]`, and on mlx5 `%s QP
/// 0x%x wqe[%d]: ...` (ib_mlx5_log.c). Folded into the event above it.
fn ucx_peer_info(text: &str, e: &mut LogEvent) -> bool {
    let mut any = false;
    if let Some(v) = hex_after(text, "rqpn ").and_then(|v| u32::try_from(v).ok()) {
        e.remote_qpn = Some(v);
        any = true;
    }
    if let Some(g) = token_after(text, "dgid=").and_then(gid) {
        e.remote_gid = Some(g);
        any = true;
    }
    if let Some(i) = u32_after(text, "sgid_index=") {
        e.gid_index = Some(i);
        any = true;
    }
    if let Some(tc) = u32_after(text, "traffic_class=") {
        e.traffic_class = Some(tc);
    }
    if any {
        if let Some(p) = u32_after(text, " port=") {
            e.port = e.port.or(Some(p));
        }
    }
    if let Some(q) = text
        .find(" QP 0x")
        .filter(|_| text.contains(" wqe["))
        .and_then(|i| hex(&text[i + 4..]))
        .and_then(|v| u32::try_from(v).ok())
    {
        e.qpn = Some(q);
        any = true;
    }
    any
}

/// perftest (4.5, src/perftest_resources.h `NOTIFY_COMP_ERROR_SEND`/`_RECV` and
/// perftest_resources.c): ` Completion with error at client|server`, then ` Failed status
/// %d: wr_id %d syndrom 0x%x` (the syndrome is `wc.vendor_err`).
fn perftest(text: &str, line: u64) -> Option<LogEvent> {
    let rest = after(text, "Failed status ")?;
    let (status, rest) = rest.split_once(": wr_id ")?;
    let status = u32::try_from(number(status)?).ok()?;
    Some(LogEvent::new(
        line,
        LogLibrary::Perftest,
        LogFailure::Completion {
            status,
            opcode: None,
            vendor_err: hex_after(rest, "syndrom ").and_then(|v| u32::try_from(v).ok()),
            syndrome: None,
            wr_id: number(rest).and_then(|v| u64::try_from(v).ok()),
        },
    ))
}

/// rdma-core's examples (v44, libibverbs/examples/rc_pingpong.c and its siblings): `Failed
/// status %s (%d) for wr_id %d` with `ibv_wc_status_str`.
fn ibv_pingpong(text: &str, line: u64) -> Option<LogEvent> {
    let rest = after(text, "Failed status ")?;
    let (words, rest) = rest.split_once(" (")?;
    let status = u32::try_from(number(rest)?).ok()?;
    if !rest.contains(") for wr_id ") {
        return None;
    }
    // The words and the number must agree, or it is another tool's line.
    if status_from_words(words).is_some_and(|s| s != status) {
        return None;
    }
    Some(LogEvent::new(
        line,
        LogLibrary::IbvPingpong,
        LogFailure::Completion {
            status,
            opcode: None,
            vendor_err: None,
            syndrome: None,
            wr_id: after(rest, "for wr_id ")
                .and_then(number)
                .and_then(|v| u64::try_from(v).ok()),
        },
    ))
}

/// The QP transitions of rdma-core's examples (v44, rc_pingpong.c: `Failed to modify QP to
/// RTR`, `... to RTS`, `... to INIT`) and perftest's (4.5, perftest_resources.c: `Failed to
/// modify QP %d to RTR`, `Failed to modify QP to INIT, ret=%d`). Neither prints the errno.
fn modify_qp_plain(text: &str, line: u64) -> Option<LogEvent> {
    let rest = after(text, "Failed to modify QP ")?;
    let (library, to_part) = match rest.strip_prefix("to ") {
        Some(t) => (
            if t.contains("ret=") {
                LogLibrary::Perftest
            } else {
                LogLibrary::IbvPingpong
            },
            t,
        ),
        None => (LogLibrary::Perftest, after(rest, " to ")?),
    };
    let to: String = to_part
        .chars()
        .take_while(|c| c.is_ascii_alphabetic())
        .collect();
    if !["INIT", "RTR", "RTS"].contains(&to.as_str()) {
        return None;
    }
    Some(LogEvent::new(
        line,
        library,
        LogFailure::Transition {
            errno: None,
            from: None,
            to,
        },
    ))
}

/// librdmacm's rping (rdma-core v44, librdmacm/examples/rping.c): `cq completion failed
/// status %d` and `recv wc error: %d`.
fn rping(text: &str, line: u64) -> Option<LogEvent> {
    let n =
        after(text, "cq completion failed status ").or_else(|| after(text, "recv wc error: "))?;
    let status = u32::try_from(number(n)?).ok()?;
    Some(LogEvent::new(
        line,
        LogLibrary::Rping,
        LogFailure::Completion {
            status,
            opcode: None,
            vendor_err: None,
            syndrome: None,
            wr_id: None,
        },
    ))
}

/// rdmactl's own failure line (src/model/failure.rs, `impl Display for Failure`, printed
/// as `rdmactl: ` by src/main.rs; a peer's failure is quoted after `the server failed: `
/// or `the client said: `): `STEP failed (DEV/PORT, GID index N, dest GID G, dest QPN 0xQ,
/// ..., peer ADDR): CAUSE`, where a completion's cause is `[OP: ]IBV_WC_NAME (status N:
/// words[, vendor err 0xV])` and a transition's `ENAME (N: words)`.
fn rdmactl(text: &str, line: u64) -> Option<LogEvent> {
    let (step, rest) = if let Some(r) = after(text, "work completion failed") {
        ("completion", r)
    } else if let Some(r) = after(text, "modify QP to ") {
        let to: String = r.chars().take_while(|c| c.is_ascii_alphabetic()).collect();
        let r = r[to.len()..].strip_prefix(" failed")?;
        return rdmactl_transition(&to, r, line);
    } else {
        return None;
    };
    let _ = step;
    let (attrs, cause) = attrs_and_cause(rest);
    let status = u32_after(cause, "(status ")?;
    let mut e = LogEvent::new(
        line,
        LogLibrary::Rdmactl,
        LogFailure::Completion {
            status,
            opcode: None,
            vendor_err: hex_after(cause, "vendor err ").and_then(|v| u32::try_from(v).ok()),
            syndrome: None,
            wr_id: None,
        },
    );
    rdmactl_attrs(attrs, &mut e);
    Some(e)
}

fn rdmactl_transition(to: &str, rest: &str, line: u64) -> Option<LogEvent> {
    if !["INIT", "RTR", "RTS"].contains(&to) {
        return None;
    }
    let (attrs, cause) = attrs_and_cause(rest);
    let errno = cause
        .find(" (")
        .and_then(|i| number(&cause[i + 2..]))
        .and_then(|v| i32::try_from(v).ok());
    let mut e = LogEvent::new(
        line,
        LogLibrary::Rdmactl,
        LogFailure::Transition {
            errno,
            from: None,
            to: to.to_string(),
        },
    );
    rdmactl_attrs(attrs, &mut e);
    Some(e)
}

/// `(attrs): cause` after the step's `failed`.
fn attrs_and_cause(rest: &str) -> (&str, &str) {
    let rest = rest.trim_start();
    match rest.strip_prefix('(').and_then(|r| r.split_once("): ")) {
        Some((attrs, cause)) => (attrs, cause),
        None => ("", rest.trim_start_matches(':').trim_start()),
    }
}

fn rdmactl_attrs(attrs: &str, e: &mut LogEvent) {
    for (i, a) in attrs.split(", ").enumerate() {
        let a = a.trim();
        if let Some(v) = a.strip_prefix("GID index ") {
            e.gid_index = number(v).and_then(|v| u32::try_from(v).ok());
        } else if let Some(v) = a.strip_prefix("dest GID ") {
            e.remote_gid = gid(v);
        } else if let Some(v) = a.strip_prefix("dest QPN ") {
            e.remote_qpn = hex(v).and_then(|v| u32::try_from(v).ok());
        } else if let Some(v) = a.strip_prefix("peer ") {
            e.peer = peer_addr(v);
        } else if i == 0 && !a.contains(' ') {
            let (dev, port) = a.split_once('/').unwrap_or((a, ""));
            e.device = Some(dev.to_string());
            e.port = port.parse().ok();
        }
    }
}

/// The mlx5 kernel driver (Linux 5.10+, drivers/infiniband/hw/mlx5/cq.c `dump_cqe`, with
/// `mlx5_ib_log`'s `%s:%d:(pid %d): ` under `dev_printk`'s `infiniband DEV: `): `WC error:
/// %d, Message: %s`.
fn kernel_mlx5(text: &str, line: u64) -> Option<LogEvent> {
    let rest = after(text, "WC error: ")?;
    let status = u32::try_from(number(rest)?).ok()?;
    if !rest.contains(", Message: ") {
        return None;
    }
    let mut e = LogEvent::new(
        line,
        LogLibrary::Kernel,
        LogFailure::Completion {
            status,
            opcode: None,
            vendor_err: None,
            syndrome: None,
            wr_id: None,
        },
    );
    // `infiniband mlx5_0: dump_cqe:...` (dev_printk) or `mlx5_0:dump_cqe:...` (older).
    let head = &text[..text.len() - rest.len()];
    e.device = after(head, "infiniband ")
        .and_then(|r| r.split(':').next())
        .or_else(|| head.find(":dump_cqe").map(|i| head[..i].trim()))
        .map(|d| d.rsplit(' ').next().unwrap_or(d).to_string())
        .filter(|d| !d.is_empty());
    Some(e)
}

/// libfabric's log line header (libfabric v1.18–v2.6, src/log.c `ofi_log`/`fi_log`:
/// `%s:%d:%ld:%s:%s:%s:%s():%d<%s> %s`: `libfabric`, the pid, the time in seconds, the
/// `log_prefix` (src/common.c, empty by default), the provider, the subsystem, the function,
/// the line, the level and the message). The origin gets the pid and time; the provider and
/// the message are returned.
fn libfabric_header<'a>(text: &'a str, origin: &mut LogOrigin) -> Option<(&'a str, &'a str)> {
    let start = text.find("libfabric:")?;
    let text = &text[start..];
    let func_end = text.find("():")?;
    let mut head = text[..func_end].rsplitn(4, ':');
    let (_func, _subsys, prov, front) = (head.next()?, head.next()?, head.next()?, head.next()?);
    let mut front = front.splitn(4, ':');
    let (_pkg, pid, time) = (front.next()?, front.next()?, front.next()?);
    let after_func = &text[func_end + 3..];
    let close = after_func.find("> ")?;
    let level = after_func[..close].split_once('<')?.1;
    if !["warn", "trace", "info", "debug"].contains(&level) {
        return None;
    }
    origin.pid = origin.pid.or(pid.parse().ok());
    if !time.is_empty() && time.len() <= 20 && time.bytes().all(|b| b.is_ascii_digit()) {
        origin.time.get_or_insert_with(|| time.to_string());
    }
    Some((prov, &after_func[close + 2..]))
}

/// libfabric's verbs provider and the `ofi_rxm` provider layered on it.
///
/// The verbs provider logs no completion error itself: `vrb_report_wc` (prov/verbs/src/
/// verbs_cq.c) hands the status to `fi_cq_readerr` as `prov_errno`, and `vrb_cq_strerror`
/// words it with `ibv_wc_status_str`. `ofi_rxm` over verbs prints it (v1.15–v2.6,
/// prov/rxm/src/rxm_cq.c `rxm_handle_comp_error`): `fi_cq_readerr: err: %s (%d), prov_err:
/// %s (%d)`, the last two the status's words and number. The verbs provider's own failed
/// QP transition (prov/verbs/src/verbs_ofi.h `VRB_WARN_ERRNO`, `fn ": %s (%d)\n"` with
/// strerror and errno; verbs_ep.c `vrb_create_dgram_ep`) is `ibv_modify_qp: %s (%d)`, which
/// names no state.
fn libfabric(prov: &str, msg: &str, line: u64) -> Option<LogEvent> {
    if !(prov.contains("verbs") || prov.contains("rxm")) {
        return None;
    }
    if let Some(rest) = after(msg, "fi_cq_readerr: err: ") {
        let prov_err = after(rest, "prov_err: ")?;
        let (words, n) = prov_err.rsplit_once(" (")?;
        let status = u32::try_from(number(n)?).ok()?;
        // The words and the number must agree: another provider's `prov_err` is its own.
        if status_from_words(words) != Some(status) {
            return None;
        }
        return Some(LogEvent::new(
            line,
            LogLibrary::Libfabric,
            LogFailure::Completion {
                status,
                opcode: None,
                vendor_err: None,
                syndrome: None,
                wr_id: None,
            },
        ));
    }
    let rest = msg.trim_start().strip_prefix("ibv_modify_qp: ")?;
    let (_words, n) = rest.rsplit_once(" (")?;
    Some(LogEvent::new(
        line,
        LogLibrary::Libfabric,
        LogFailure::Transition {
            errno: number(n).and_then(|v| i32::try_from(v).ok()),
            from: None,
            to: UNNAMED_STATE.to_string(),
        },
    ))
}

/// The target state of a QP transition whose line does not name it.
pub const UNNAMED_STATE: &str = "?";

/// The IBV_WC_* status rdma-core's mlx5 provider gives an mlx5 CQE syndrome
/// (providers/mlx5/mlx5dv.h `MLX5_CQE_SYNDROME_*`, providers/mlx5/cq.c
/// `mlx5_handle_error_cqe`, rdma-core v44); any other syndrome is IBV_WC_GENERAL_ERR (21).
fn mlx5_syndrome_status(syndrome: u32) -> u32 {
    match syndrome {
        0x01 => 1,
        0x02 => 2,
        0x04 => 4,
        0x05 => 5,
        0x06 => 6,
        0x10 => 7,
        0x11 => 8,
        0x12 => 9,
        0x13 => 10,
        0x14 => 11,
        0x15 => 12,
        0x16 => 13,
        0x22 => 16,
        _ => 21,
    }
}

/// NVSHMEM's IB transports (NVSHMEM 3.4.5, src/include/non_abi/nvshmemx_error.h
/// `NVSHMEMI_NZ_ERROR_JMP`: `%s:%d: non-zero status: %d ` with the source file, line and
/// status, then the message):
/// - ibrc (src/modules/transport/ibrc/ibrc.cpp, `progress_send`): `ibv_poll_cq failed,
///   status: %d` with the work completion's status;
/// - ibrc's `ibv_modify_qp failed ` (the status is ibv_modify_qp's errno; no state named);
/// - ibgda's device code (src/include/non_abi/device/pt-to-pt/ibgda_device.cuh, `printf`):
///   `ibgda_poll_cq failed with error=%d.`, the error the mlx5 CQE syndrome, or `-ETIME`
///   when the poll timed out (no completion: not read).
fn nvshmem(text: &str, line: u64) -> Option<LogEvent> {
    if let Some(rest) = after(text, "ibgda_poll_cq failed with error=") {
        let err = number(rest)?;
        let syndrome = u32::try_from(err).ok()?;
        return Some(LogEvent::new(
            line,
            LogLibrary::Nvshmem,
            LogFailure::Completion {
                status: mlx5_syndrome_status(syndrome),
                opcode: None,
                vendor_err: None,
                syndrome: Some(syndrome),
                wr_id: None,
            },
        ));
    }
    let rest = after(text, "non-zero status: ")?;
    let status = number(rest)?;
    if let Some(wc) = after(rest, "ibv_poll_cq failed, status: ") {
        return Some(LogEvent::new(
            line,
            LogLibrary::Nvshmem,
            LogFailure::Completion {
                status: u32::try_from(number(wc)?).ok()?,
                opcode: None,
                vendor_err: None,
                syndrome: None,
                wr_id: None,
            },
        ));
    }
    if rest.contains(" ibv_modify_qp failed") {
        return Some(LogEvent::new(
            line,
            LogLibrary::Nvshmem,
            LogFailure::Transition {
                errno: i32::try_from(status).ok(),
                from: None,
                to: UNNAMED_STATE.to_string(),
            },
        ));
    }
    None
}

/// Mooncake's transfer engine, RDMA transport (v0.3.0–v0.3.12, mooncake-transfer-engine/src/
/// transport/rdma_transport/worker_pool.cpp `performPollCq`, glog `LOG(ERROR)`): `Worker:
/// Process failed for slice (opcode: %d, source_addr: %p, length: %zu, dest_addr: %p,
/// local_nic: %s, peer_nic: %s, dest_rkey: %u, retry_cnt: %d[, max_retry_cnt: %d]): %s`,
/// the last `ibv_wc_status_str`; `peer_nic` is `SERVER@DEVICE` (include/common.h
/// `MakeNicPath`), the server often `IP:PORT`. The opcode is Mooncake's (READ or WRITE), not
/// a verbs one. Its successor (tent/src/transport/rdma/workers.cpp) logs `Detected error WQE
/// for slice %p (opcode: %d, source_addr: %p, dest_addr: %p, length: %zu, local_nic: %s):
/// %s` at INFO.
fn mooncake(text: &str, line: u64) -> Option<LogEvent> {
    let rest = after(text, "Process failed for slice (")
        .or_else(|| after(text, "Detected error WQE for slice "))?;
    let (fields, words) = rest.rsplit_once("): ")?;
    let status = status_from_words(words)?;
    let mut e = LogEvent::new(
        line,
        LogLibrary::Mooncake,
        LogFailure::Completion {
            status,
            opcode: None,
            vendor_err: None,
            syndrome: None,
            wr_id: None,
        },
    );
    e.device = token_after(fields, "local_nic: ").map(str::to_string);
    if let Some(peer) = token_after(fields, "peer_nic: ") {
        let server = peer.rsplit_once('@').map_or(peer, |(s, _)| s);
        e.peer = peer_addr(server);
    }
    Some(e)
}

/// Soft-RoCE (rdma_rxe) refusing a QP's address vector (drivers/infiniband/sw/rxe/rxe_av.c
/// `rxe_av_chk_attr`, called by rxe_qp.c `rxe_qp_chk_attr` for `IB_QP_AV`, which the move to
/// RTR sets): `invalid sgid index = %d` (the index beyond the port's GID table) and `invalid
/// network type for rdma_rxe = %d` (a GID that is not RoCE v2: `enum rdma_network_type`, 1
/// is RoCE v1, 0 InfiniBand). Linux 4.14–6.2 print them with `pr_warn` under `rdma_rxe: `
/// (no device); 6.3–6.4 with `rxe_dbg_qp` (`ibdev_dbg`: `DEV: qp#%d %s: `); 6.5+ with
/// `rxe_dbg_dev` (`DEV: %s: `), both at debug level (dynamic debug on). The modify fails
/// with EINVAL.
fn kernel_rxe(text: &str, line: u64) -> Option<LogEvent> {
    let (at, detail) = if let Some(i) = text.find("invalid sgid index = ") {
        (i, RefusedAttr::SgidIndexOutOfRange)
    } else {
        let i = text.find("invalid network type for rdma_rxe = ")?;
        let n = u32::try_from(number(
            &text[i + "invalid network type for rdma_rxe = ".len()..],
        )?)
        .ok()?;
        (i, RefusedAttr::NotRoceV2(n))
    };
    let mut e = LogEvent::new(
        line,
        LogLibrary::Kernel,
        LogFailure::Transition {
            errno: Some(libc::EINVAL),
            from: None,
            to: "RTR".to_string(),
        },
    );
    if detail == RefusedAttr::SgidIndexOutOfRange {
        e.gid_index = u32_after(&text[at..], "invalid sgid index = ");
    }
    e.detail = Some(detail);
    // The device: the word before `: qp#N FUNC: ` (6.3–6.4) or before `: FUNC: ` (6.5+).
    let head = text[..at].trim_end();
    let head = head.strip_suffix(':').unwrap_or(head);
    let dev_end = match head.rfind(": qp#") {
        Some(i) => Some(i),
        None => head
            .rfind(": ")
            .filter(|_| head.contains("rxe_av_chk_attr")),
    };
    e.device = dev_end
        .map(|i| head[..i].rsplit(' ').next().unwrap_or(""))
        .filter(|d| {
            !d.is_empty()
                && *d != "rdma_rxe"
                && d.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
        })
        .map(str::to_string);
    Some(e)
}

// ---------------------------------------------------------------------------------------
// The reader

/// What one line was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogLine {
    /// An RDMA error, decoded.
    Event(Box<LogEvent>),
    /// A line that belongs to the event above it, or announces the next (UCX's peer info,
    /// perftest's `Completion with error at`), or a library's line that is no error.
    Context,
    /// A library's version, as its own line states it (NCCL's `NCCL version X`).
    Version(LogLibrary, String),
    /// An end's own address as a verbs example prints it before connecting, with
    /// the all-zero GID: that end's GID index names an empty slot.
    ZeroLocalGid,
    /// perftest's banner, of this reporter: its device or GID index. A stdout written to a
    /// file is flushed at exit, after stderr's error lines, so the banner may follow the
    /// events it belongs to: the digest adds it to this reporter's latest perftest events.
    Banner(Option<String>, BannerFact),
    /// Not understood: counted and skipped.
    Unknown,
}

/// Add a banner's fact to a perftest event of the same reporter that lacks it.
fn backfill(e: &mut LogEvent, reporter: &Option<String>, fact: &BannerFact) {
    if e.library != LogLibrary::Perftest || e.origin.reporter() != *reporter {
        return;
    }
    match fact {
        BannerFact::Device(d) => {
            e.device.get_or_insert_with(|| d.clone());
        }
        BannerFact::GidIndex(i) => {
            e.gid_index.get_or_insert(*i);
        }
    }
}

/// Reads lines in order, keeping the little state two-line formats need.
#[derive(Debug, Default)]
pub struct LogParser {
    /// The last event, while the next line may still add to it (UCX's peer info).
    pending: Option<LogEvent>,
    file: usize,
    /// perftest's banner of each reporter: the device and GID index it ran with, for its
    /// later error lines (which name neither). At most `MAX_BANNERS`, the oldest replaced.
    banners: Vec<PerftestBanner>,
}

/// What perftest's banner said, per reporter.
#[derive(Debug, Default, Clone)]
struct PerftestBanner {
    reporter: Option<String>,
    device: Option<String>,
    gid_index: Option<u32>,
}

const MAX_BANNERS: usize = 64;

impl LogParser {
    /// A parser for the `file`th input: its events carry that index.
    pub fn for_file(file: usize) -> LogParser {
        LogParser {
            pending: None,
            file,
            banners: Vec::new(),
        }
    }

    /// Feed one line (without its newline). Returns the event that is complete now, if any:
    /// an event is held back one line so that a continuation can add to it.
    pub fn feed(&mut self, line_no: u64, text: &str) -> (LogLine, Option<LogEvent>) {
        let (mut origin, body) = strip_prefixes(text);
        if let Some(p) = self.pending.as_mut() {
            if p.library == LogLibrary::Ucx && ucx_peer_info(body, p) {
                finish(p);
                return (LogLine::Context, None);
            }
        }
        let released = self.pending.take();
        if let Some(v) = nccl_version(body) {
            return (LogLine::Version(LogLibrary::Nccl, v), released);
        }
        if let Some(gid) = local_address_gid(body) {
            return (
                if gid.is_zero() {
                    LogLine::ZeroLocalGid
                } else {
                    LogLine::Context
                },
                released,
            );
        }
        if let Some(fact) = perftest_banner(body) {
            let reporter = origin.reporter();
            self.note_banner(reporter.clone(), fact.clone());
            // The event still held is this reporter's too when the banner follows it.
            let mut released = released;
            if let Some(e) = released.as_mut().or(self.pending.as_mut()) {
                backfill(e, &reporter, &fact);
            }
            return (LogLine::Banner(reporter, fact), released);
        }
        let parsed = parse_body(body, line_no, &mut origin);
        let kind = match parsed {
            Some(mut e) => {
                if e.library == LogLibrary::Perftest {
                    if let Some(b) = self.banner_of(&origin.reporter()) {
                        e.device = e.device.take().or_else(|| b.device.clone());
                        e.gid_index = e.gid_index.or(b.gid_index);
                    }
                }
                e.origin = origin;
                e.file = self.file;
                finish(&mut e);
                let shown = LogLine::Event(Box::new(e.clone()));
                self.pending = Some(e);
                shown
            }
            None if is_context(body) => LogLine::Context,
            None => LogLine::Unknown,
        };
        (kind, released)
    }

    fn banner_of(&self, reporter: &Option<String>) -> Option<&PerftestBanner> {
        self.banners.iter().find(|b| b.reporter == *reporter)
    }

    fn note_banner(&mut self, reporter: Option<String>, fact: BannerFact) {
        let at = match self.banners.iter().position(|b| b.reporter == reporter) {
            Some(i) => i,
            None => {
                if self.banners.len() >= MAX_BANNERS {
                    self.banners.remove(0);
                }
                self.banners.push(PerftestBanner {
                    reporter,
                    ..PerftestBanner::default()
                });
                self.banners.len() - 1
            }
        };
        let b = &mut self.banners[at];
        match fact {
            // A new banner starts a new run: its GID index is said again, or is the default.
            BannerFact::Device(d) => {
                b.device = Some(d);
                b.gid_index = None;
            }
            BannerFact::GidIndex(i) => b.gid_index = Some(i),
        }
    }

    /// The event still held at the end of the input.
    pub fn finish(&mut self) -> Option<LogEvent> {
        self.pending.take()
    }
}

/// The peer from the remote GID when the line named no address.
fn finish(e: &mut LogEvent) {
    if e.peer.is_none() {
        e.peer = e
            .remote_gid
            .filter(|g| !g.is_zero() && !g.is_link_local())
            .map(|g| g.ip().to_canonical());
    }
}

fn parse_body(body: &str, line: u64, origin: &mut LogOrigin) -> Option<LogEvent> {
    if body.contains("libfabric:") {
        if let Some((prov, msg)) = libfabric_header(body, origin) {
            return libfabric(prov, msg, line);
        }
    }
    if body.contains("ibv_poll_cq failed")
        || body.contains("ibgda_poll_cq failed")
        || (body.contains("non-zero status: ") && body.contains("ibv_modify_qp failed"))
    {
        if let Some(e) = nvshmem(body, line) {
            return Some(e);
        }
    }
    if body.contains("invalid sgid index = ") || body.contains("invalid network type for rdma_rxe")
    {
        return kernel_rxe(body, line);
    }
    if body.contains("Found Incompatibility issue with GID types") {
        return perftest_gid_types(body, line);
    }
    if body.contains("Process failed for slice (") || body.contains("Detected error WQE") {
        return mooncake(body, line);
    }
    if body.contains("Got completion from peer ") {
        nccl_header(body, origin);
        return nccl_completion(body, line);
    }
    if body.contains("ibv_modify_qp failed with ") {
        nccl_header(body, origin);
        return nccl_modify_qp(body, line);
    }
    if body.contains("UCX  ") {
        let msg = ucx_header(body, origin)?;
        return ucx_mlx5(msg, line).or_else(|| ucx_verbs(msg, line));
    }
    if body.contains(" (synd 0x") {
        return ucx_mlx5(body, line);
    }
    if body.contains("send completion with error: ") {
        return ucx_verbs(body, line);
    }
    if body.contains("WC error: ") {
        return kernel_mlx5(body, line);
    }
    if body.contains("failed (") || body.contains("failed: ") {
        if let Some(e) = rdmactl(body, line) {
            return Some(e);
        }
    }
    if body.contains("Failed status ") {
        return if body.contains(": wr_id ") {
            perftest(body, line)
        } else {
            ibv_pingpong(body, line)
        };
    }
    if body.contains("Failed to modify QP ") {
        return modify_qp_plain(body, line);
    }
    if body.contains("cq completion failed status ") || body.contains("recv wc error: ") {
        return rping(body, line);
    }
    None
}

/// NCCL's version line (src/init.cc `showVersion`, every 2.x: `VERSION_STRING`, "NCCL version
/// %d.%d.%d%s+cuda%d.%d", as an INFO line or alone at NCCL_DEBUG=VERSION).
fn nccl_version(body: &str) -> Option<String> {
    let rest = after(body, "NCCL version ")?;
    let v = rest.split_whitespace().next()?;
    (v.as_bytes().first()?.is_ascii_digit() && v.len() <= 40).then(|| v.to_string())
}

/// The local end's address line of rdma-core's examples (v44, libibverbs/examples/
/// rc_pingpong.c: `  local address:  LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s`, the GID by
/// `inet_ntop`): the GID.
fn local_address_gid(body: &str) -> Option<Gid> {
    let rest = body.trim_start().strip_prefix("local address:")?;
    let g = after(rest, "GID ")?;
    gid(g.split_whitespace().next()?)
}

/// One fact of perftest's banner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BannerFact {
    Device(String),
    GidIndex(u32),
}

/// perftest's banner (perftest 4.5–26.04, src/perftest_parameters.c `ctx_print_test_info`):
/// ` Dual-port       : %s\t\tDevice         : %s` and ` GID index       : %d`.
fn perftest_banner(body: &str) -> Option<BannerFact> {
    let t = body.trim_start();
    if t.starts_with("Dual-port ") {
        let dev = after(t, "Device")?.trim_start().strip_prefix(':')?.trim();
        let ok = !dev.is_empty()
            && dev.len() <= 64
            && dev
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
        return ok.then(|| BannerFact::Device(dev.to_string()));
    }
    let rest = t
        .strip_prefix("GID index ")?
        .trim_start()
        .strip_prefix(':')?;
    let i = u32::try_from(number(rest)?).ok()?;
    Some(BannerFact::GidIndex(i))
}

/// perftest's refusal when the two ends' GIDs differ in family (perftest 2.3+, every
/// benchmark's main, e.g. src/write_bw.c: `\n Found Incompatibility issue with GID
/// types.\n` then ` Please Try to use a different IP version.\n\n`, after
/// src/perftest_communication.c `ctx_check_gid_compatibility` found one GID IPv4-mapped
/// and the other not).
fn perftest_gid_types(text: &str, line: u64) -> Option<LogEvent> {
    text.contains("Found Incompatibility issue with GID types")
        .then(|| LogEvent::new(line, LogLibrary::Perftest, LogFailure::GidFamily))
}

/// Lines of a known tool that carry no error of their own.
fn is_context(body: &str) -> bool {
    body.contains("Completion with error at ")
        || body.contains(" NCCL INFO ")
        || body.contains(" NCCL WARN ")
        || body.contains("UCX  ")
        || body.starts_with("libfabric:")
        || body.contains("Please Try to use a different IP version")
        || body.starts_with("scnt=")
        || body.trim_start().starts_with("rcnt=")
}

// ---------------------------------------------------------------------------------------
// What a whole log holds, in bounded memory

/// Flushed completions (`IBV_WC_WR_FLUSH_ERR`) of one reporter and device: counted, with
/// the first few line numbers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FlushGroup {
    pub file: usize,
    pub reporter: Option<String>,
    pub device: Option<String>,
    pub library: LogLibrary,
    pub count: u64,
    pub first_line: u64,
    pub lines: Vec<u64>,
}

/// How far a long read has gone, for a progress line.
#[derive(Debug, Clone, Copy)]
pub struct Progress<'a> {
    pub name: &'a str,
    /// Bytes read of this input, and its size when it is a file.
    pub bytes: u64,
    pub size: Option<u64>,
    /// Lines read so far, all inputs.
    pub lines: u64,
    pub understood: u64,
}

/// A log read: its events (at most `MAX_EVENTS`, the rest counted), flushes grouped, and
/// the tally of lines.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogDigest {
    pub events: Vec<LogEvent>,
    /// Events past `MAX_EVENTS`, counted only.
    pub events_dropped: u64,
    pub flushes: Vec<FlushGroup>,
    pub lines: u64,
    pub understood: u64,
    pub skipped: u64,
    /// The libraries' versions the log states, each once (at most 16).
    pub versions: Vec<LibraryVersion>,
    /// The first line (file, line) where an end printed its own GID as `::`.
    pub zero_local_gid: Option<(usize, u64)>,
    /// The input being read, and its lines so far (for `versions`' line numbers).
    file: usize,
    file_lines: u64,
}

/// A library's version, where the log states it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LibraryVersion {
    pub library: LogLibrary,
    pub version: String,
    pub file: usize,
    pub line: u64,
}

impl LogDigest {
    /// Events kept; a storm beyond this is counted, so memory stays flat on any log.
    pub const MAX_EVENTS: usize = 10_000;
    const FLUSH_LINES: usize = 8;
    const MAX_FLUSH_GROUPS: usize = 1_000;
    const BACKFILL: usize = 16;

    /// Count one line as read, by what it was.
    pub fn count(&mut self, kind: &LogLine) {
        self.lines += 1;
        self.file_lines += 1;
        match kind {
            LogLine::Unknown => self.skipped += 1,
            LogLine::Event(_) | LogLine::Context => self.understood += 1,
            LogLine::Banner(reporter, fact) => {
                self.understood += 1;
                // Only the last few events: a banner belongs to the run just before it, and
                // a log of many banners stays linear.
                let file = self.file;
                for e in self
                    .events
                    .iter_mut()
                    .rev()
                    .take(Self::BACKFILL)
                    .filter(|e| e.file == file)
                {
                    backfill(e, reporter, fact);
                }
            }
            LogLine::ZeroLocalGid => {
                self.understood += 1;
                self.zero_local_gid
                    .get_or_insert((self.file, self.file_lines));
            }
            LogLine::Version(library, version) => {
                self.understood += 1;
                if self.versions.len() < 16
                    && !self
                        .versions
                        .iter()
                        .any(|v| v.library == *library && v.version == *version)
                {
                    self.versions.push(LibraryVersion {
                        library: *library,
                        version: version.clone(),
                        file: self.file,
                        line: self.file_lines,
                    });
                }
            }
        }
    }

    /// Start counting the lines of the `file`th input.
    pub fn start_file(&mut self, file: usize) {
        self.file = file;
        self.file_lines = 0;
    }

    /// Keep one complete event.
    pub fn add(&mut self, e: LogEvent) {
        if e.status() == Some(crate::model::errno::WC_WR_FLUSH_ERR) {
            let reporter = e.origin.reporter();
            if let Some(g) = self
                .flushes
                .iter_mut()
                .find(|g| g.file == e.file && g.reporter == reporter && g.device == e.device)
            {
                g.count += 1;
                if g.lines.len() < Self::FLUSH_LINES {
                    g.lines.push(e.line);
                }
                return;
            }
            if self.flushes.len() < Self::MAX_FLUSH_GROUPS {
                self.flushes.push(FlushGroup {
                    file: e.file,
                    reporter,
                    device: e.device.clone(),
                    library: e.library,
                    count: 1,
                    first_line: e.line,
                    lines: vec![e.line],
                });
                return;
            }
        }
        if self.events.len() < Self::MAX_EVENTS {
            self.events.push(e);
        } else {
            self.events_dropped += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feed lines, return every event (the last one flushed at the end).
    fn events(lines: &[&str]) -> Vec<LogEvent> {
        let mut p = LogParser::default();
        let mut out = Vec::new();
        for (i, l) in lines.iter().enumerate() {
            if let (_, Some(e)) = p.feed(i as u64 + 1, l) {
                out.push(e);
            }
        }
        out.extend(p.finish());
        out
    }

    fn one(line: &str) -> LogEvent {
        let mut all = events(&[line]);
        assert_eq!(all.len(), 1, "{line}: {all:?}");
        all.remove(0)
    }

    fn completion(e: &LogEvent) -> (u32, Option<u32>, Option<u32>) {
        match e.failure {
            LogFailure::Completion {
                status,
                opcode,
                vendor_err,
                ..
            } => (status, opcode, vendor_err),
            _ => panic!("not a completion: {e:?}"),
        }
    }

    // Lines below are built from each tool's format string (file and version named on the
    // parser above each), with values of our choosing.

    #[test]
    fn nccl_completion_2_19_with_srun_label() {
        // net_ib.cc v2.19: "NET/IB : Got completion from peer %s with status=%d opcode=%d
        // len=%d vendor err %d (%s)%s%s%s%s", behind NCCL's WARN header and `srun -l`.
        let e = one(
            " 3: node7:4242:4300 [2] NCCL WARN NET/IB : Got completion from peer \
             10.0.3.7<41322> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid \
             ::ffff:10.0.3.6 remoteGids::ffff:10.0.3.7",
        );
        assert_eq!(e.library, LogLibrary::Nccl);
        assert_eq!(completion(&e), (12, Some(0), Some(129)));
        assert_eq!(e.peer, Some("10.0.3.7".parse().unwrap()));
        assert_eq!(
            e.local_gid.unwrap().ip(),
            "10.0.3.6".parse::<IpAddr>().unwrap()
        );
        assert_eq!(
            e.remote_gid.unwrap().ip(),
            "10.0.3.7".parse::<IpAddr>().unwrap()
        );
        assert_eq!(e.origin.rank, Some(3));
        assert_eq!(e.origin.host.as_deref(), Some("node7"));
        assert_eq!(e.origin.pid, Some(4242));
    }

    #[test]
    fn nccl_completion_2_27_names_status_and_hca() {
        // net_ib v2.27: "NET/IB: Got completion from peer %s with status=%s(%d)
        // opcode=%s(%d) vendor_err=%u %s%s%s%s hca %s".
        let e = one(
            "gpu3:77:90 [0] NCCL WARN NET/IB: Got completion from peer 10.1.0.9<5000> with \
             status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_SEND(0) vendor_err=129  localGid \
             ::ffff:10.1.0.3 remoteGids::ffff:10.1.0.9 hca mlx5_4",
        );
        assert_eq!(completion(&e), (12, Some(0), Some(129)));
        assert_eq!(e.device.as_deref(), Some("mlx5_4"));
        assert_eq!(e.peer, Some("10.1.0.9".parse().unwrap()));
    }

    #[test]
    fn nccl_modify_qp_with_its_transition_and_gids() {
        // ibvwrap.cc 2.21+: "Call to ibv_modify_qp failed with %d %s, on dev %s:%d, curr
        // state %s, next state %s, local GID index %d, local GID %s, remote GID %s".
        let e = one(
            "[1,4]<stderr>:node2:10:11 [1] misc/ibvwrap.cc:300 NCCL WARN Call to \
             ibv_modify_qp failed with 61 No data available, on dev mlx5_2:1, curr state \
             INIT, next state RTR, local GID index 5, local GID ::, remote GID \
             ::ffff:10.0.2.2",
        );
        assert_eq!(
            e.failure,
            LogFailure::Transition {
                errno: Some(61),
                from: Some("INIT".into()),
                to: "RTR".into()
            }
        );
        assert_eq!(e.device.as_deref(), Some("mlx5_2"));
        assert_eq!(e.port, Some(1));
        assert_eq!(e.gid_index, Some(5));
        assert!(e.local_gid.unwrap().is_zero());
        assert_eq!(e.peer, Some("10.0.2.2".parse().unwrap()));
        assert_eq!(e.origin.rank, Some(4));
        assert_eq!(e.origin.host.as_deref(), Some("node2"));
    }

    #[test]
    fn nccl_modify_qp_before_2_21_has_only_strerror() {
        // ibvwrap.cc 2.18: "Call to ibv_modify_qp failed with error %s".
        let e = one(
            "n1:1:2 [0] NCCL WARN Call to ibv_modify_qp failed with error Connection timed out",
        );
        assert!(matches!(
            e.failure,
            LogFailure::Transition {
                errno: Some(110),
                ..
            }
        ));
    }

    #[test]
    fn ucx_mlx5_retry_exceeded_with_its_header() {
        // ib_mlx5_log.c 1.13: "%s on %s:%d/%s (synd 0x%x vend 0x%x hw_synd %d/%d)" behind
        // log.c's "[%lu.%06lu] [%s:%-5d:%s] %17s:%-4u %-4s %-5s %*s%s".
        let e = one(
            "[1700000000.123456] [node5:31337:0]     ib_mlx5_log.c:171  UCX  ERROR Transport \
             retry count exceeded on mlx5_0:1/RoCE (synd 0x15 vend 0x81 hw_synd 0/0)",
        );
        assert_eq!(e.library, LogLibrary::Ucx);
        assert_eq!(completion(&e), (12, None, Some(0x81)));
        assert_eq!(e.device.as_deref(), Some("mlx5_0"));
        assert_eq!(e.port, Some(1));
        assert_eq!(e.origin.host.as_deref(), Some("node5"));
        assert_eq!(e.origin.pid, Some(31337));
        assert_eq!(e.origin.time.as_deref(), Some("1700000000.123456"));
    }

    #[test]
    fn ucx_verbs_completion_takes_the_peer_info_line() {
        // rc_verbs_iface.c 1.13: "send completion with error: %s [qpn 0x%x wrid
        // 0x%lxvendor_err 0x%x]\n%s", the second line from ib_log.c's peer info.
        let all = events(&[
            "[1700000001.000001] [vm1:900  :0]  rc_verbs_iface.c:69   UCX  ERROR send \
             completion with error: transport retry counter exceeded [qpn 0x11 wrid \
             0x5vendor_err 0x0]",
            "[rqpn 0x12 dlid=0 sl=0 port=1 src_path_bits=0 dgid=::ffff:192.168.77.2 \
             sgid_index=1 traffic_class=0]",
        ]);
        assert_eq!(all.len(), 1);
        let e = &all[0];
        assert_eq!(completion(e).0, 12);
        assert_eq!(e.qpn, Some(0x11));
        assert_eq!(e.remote_qpn, Some(0x12));
        assert_eq!(e.gid_index, Some(1));
        assert_eq!(e.port, Some(1));
        assert_eq!(e.peer, Some("192.168.77.2".parse().unwrap()));
        assert_eq!(e.origin.pid, Some(900));
    }

    #[test]
    fn perftest_completion_error() {
        // perftest_resources.h 4.5: " Completion with error at client", " Failed status %d:
        // wr_id %d syndrom 0x%x", "scnt=%d, ccnt=%d".
        let mut p = LogParser::default();
        assert_eq!(
            p.feed(1, " Completion with error at client").0,
            LogLine::Context
        );
        assert!(matches!(
            p.feed(2, " Failed status 12: wr_id 0 syndrom 0x81").0,
            LogLine::Event(_)
        ));
        let (kind, released) = p.feed(3, "scnt=128, ccnt=0");
        assert_eq!(kind, LogLine::Context);
        let e = released.unwrap();
        assert!(p.finish().is_none());
        assert_eq!(e.library, LogLibrary::Perftest);
        assert_eq!(completion(&e), (12, None, Some(0x81)));
    }

    #[test]
    fn ibv_rc_pingpong_completion_and_transition() {
        // rc_pingpong.c rdma-core v44: "Failed status %s (%d) for wr_id %d" and "Failed to
        // modify QP to RTR".
        let e = one("Failed status transport retry counter exceeded (12) for wr_id 2");
        assert_eq!(e.library, LogLibrary::IbvPingpong);
        assert_eq!(completion(&e).0, 12);
        let t = one("Failed to modify QP to RTR");
        assert_eq!(
            t.failure,
            LogFailure::Transition {
                errno: None,
                from: None,
                to: "RTR".into()
            }
        );
        // perftest 4.5's own: "Failed to modify QP %d to RTR".
        assert_eq!(
            one("Failed to modify QP 1234 to RTR").library,
            LogLibrary::Perftest
        );
    }

    #[test]
    fn rping_completion() {
        // rping.c rdma-core v44: "cq completion failed status %d".
        assert_eq!(completion(&one("cq completion failed status 12")).0, 12);
    }

    #[test]
    fn rdmactl_own_failure_lines() {
        // model/failure.rs `impl Display for Failure`, after main.rs's "rdmactl: ".
        let e = one(
            "rdmactl: work completion failed (rxe1/1, GID index 1, dest GID \
             ::ffff:192.168.77.1, dest QPN 0x000011, peer 192.168.77.1:18515): SEND: \
             IBV_WC_RETRY_EXC_ERR (status 12: transport retry counter exceeded) after 3.10 s",
        );
        assert_eq!(e.library, LogLibrary::Rdmactl);
        assert_eq!(completion(&e).0, 12);
        assert_eq!(e.device.as_deref(), Some("rxe1"));
        assert_eq!(e.port, Some(1));
        assert_eq!(e.gid_index, Some(1));
        assert_eq!(e.remote_qpn, Some(0x11));
        assert_eq!(e.peer, Some("192.168.77.1".parse().unwrap()));
        let t = one(
            "rdmactl: modify QP to RTR failed (rxe0/1, GID index 3, dest GID \
             ::ffff:10.9.9.9, peer 10.9.9.9:18515): ETIMEDOUT (110: Connection timed out)",
        );
        assert_eq!(
            t.failure,
            LogFailure::Transition {
                errno: Some(110),
                from: None,
                to: "RTR".into()
            }
        );
        assert_eq!(t.gid_index, Some(3));
    }

    #[test]
    fn kernel_mlx5_cqe_behind_syslog() {
        // drivers/infiniband/hw/mlx5/cq.c dump_cqe (Linux 5.10+): "WC error: %d, Message: %s"
        // under dev_printk's "infiniband DEV: " and mlx5_ib_log's "%s:%d:(pid %d): ".
        let e = one(
            "Nov 28 04:20:16 node3 kernel: infiniband mlx5_1: dump_cqe:272:(pid 0): WC \
             error: 10, Message: remote access error",
        );
        assert_eq!(e.library, LogLibrary::Kernel);
        assert_eq!(completion(&e).0, 10);
        assert_eq!(e.device.as_deref(), Some("mlx5_1"));
        assert_eq!(e.origin.host.as_deref(), Some("node3"));
        assert_eq!(e.origin.time.as_deref(), Some("Nov 28 04:20:16"));
    }

    #[test]
    fn libfabric_rxm_completion_error_over_verbs() {
        // src/log.c v2.6 "%s:%d:%ld:%s:%s:%s:%s():%d<%s> %s" (empty log_prefix), with
        // prov/rxm/src/rxm_cq.c "fi_cq_readerr: err: %s (%d), prov_err: %s (%d)\n", the
        // prov_err from verbs' ibv_wc_status_str.
        let e = one(
            "[1,2]<stderr>:libfabric:4711:1764300000::ofi_rxm:cq:rxm_handle_comp_error():1770\
             <warn> fi_cq_readerr: err: Input/output error (5), prov_err: transport retry \
             counter exceeded (12)",
        );
        assert_eq!(e.library, LogLibrary::Libfabric);
        assert_eq!(completion(&e), (12, None, None));
        assert_eq!(e.origin.pid, Some(4711));
        assert_eq!(e.origin.rank, Some(2));
        assert_eq!(e.origin.time.as_deref(), Some("1764300000"));
        // The words and number disagree: not read as a completion.
        assert!(events(&[
            "libfabric:1:2::ofi_rxm:cq:f():1<warn> fi_cq_readerr: err: Input/output error \
             (5), prov_err: local length error (12)"
        ])
        .is_empty());
        // Another provider's prov_err is its own, not a verbs status.
        assert!(events(&[
            "libfabric:1:2::efa:cq:f():1<warn> fi_cq_readerr: err: Input/output error (5), \
             prov_err: transport retry counter exceeded (12)"
        ])
        .is_empty());
    }

    #[test]
    fn libfabric_verbs_modify_qp_names_its_errno_not_its_state() {
        // prov/verbs/src/verbs_ofi.h VRB_WARN_ERRNO: fn ": %s (%d)\n" (strerror, errno),
        // from verbs_ep.c vrb_create_dgram_ep's ibv_modify_qp, with a log_prefix set.
        let e = one(
            "libfabric:4711:1764300001:job7:verbs:ep_ctrl:vrb_create_dgram_ep():805<warn> \
             ibv_modify_qp: Invalid argument (22)",
        );
        assert_eq!(e.library, LogLibrary::Libfabric);
        assert_eq!(
            e.failure,
            LogFailure::Transition {
                errno: Some(22),
                from: None,
                to: UNNAMED_STATE.into()
            }
        );
        // A libfabric line that is no error is understood, not an event.
        let mut p = LogParser::default();
        assert_eq!(
            p.feed(
                1,
                "libfabric:4711:1764300001::core:core:ofi_register_provider():476<info> \
                 registering provider: verbs (200.0)"
            )
            .0,
            LogLine::Context
        );
    }

    #[test]
    fn nvshmem_ibrc_and_ibgda_failures() {
        // nvshmemx_error.h NVSHMEMI_NZ_ERROR_JMP "%s:%d: non-zero status: %d " then
        // ibrc.cpp's "ibv_poll_cq failed, status: %d\n" (3.4.5).
        let e = one(
            "/build/nvshmem/src/modules/transport/ibrc/ibrc.cpp:1072: non-zero status: 12 \
             ibv_poll_cq failed, status: 12",
        );
        assert_eq!(e.library, LogLibrary::Nvshmem);
        assert_eq!(completion(&e).0, 12);
        // ibrc.cpp "ibv_modify_qp failed \n": the status is ibv_modify_qp's errno.
        let t = one(
            "src/modules/transport/ibrc/ibrc.cpp:401: non-zero status: 110 ibv_modify_qp \
             failed ",
        );
        assert_eq!(
            t.failure,
            LogFailure::Transition {
                errno: Some(110),
                from: None,
                to: UNNAMED_STATE.into()
            }
        );
        // ibgda_device.cuh "ibgda_poll_cq failed with error=%d.\n": the mlx5 CQE syndrome
        // (0x15, transport retry exceeded), mapped as rdma-core's mlx5 provider maps it.
        let g = one("ibgda_poll_cq failed with error=21.");
        assert_eq!(g.library, LogLibrary::Nvshmem);
        assert_eq!(completion(&g).0, 12);
        assert!(matches!(
            g.failure,
            LogFailure::Completion {
                syndrome: Some(0x15),
                ..
            }
        ));
        // -ETIME: the poll timed out, no completion to read.
        assert!(events(&["ibgda_poll_cq failed with error=-62."]).is_empty());
        assert_eq!(
            completion(&one("ibgda_poll_cq failed with error=99.")).0,
            21
        );
    }

    #[test]
    fn mooncake_failed_slice_names_both_nics() {
        // worker_pool.cpp (v0.3.x) LOG(ERROR) "Worker: Process failed for slice (opcode: ...,
        // local_nic: ..., peer_nic: ..., ...): " << ibv_wc_status_str, behind glog's
        // "Lmmdd hh:mm:ss.uuuuuu threadid file:line] ".
        let e = one(
            "E1128 04:20:16.123456 31337 worker_pool.cpp:654] Worker: Process failed for \
             slice (opcode: 1, source_addr: 0x7f0000001000, length: 65536, dest_addr: \
             0x7f1000002000, local_nic: mlx5_0, peer_nic: 10.0.5.2:12345@mlx5_1, dest_rkey: \
             2048, retry_cnt: 0, max_retry_cnt: 8): transport retry counter exceeded",
        );
        assert_eq!(e.library, LogLibrary::Mooncake);
        assert_eq!(completion(&e), (12, None, None));
        assert_eq!(e.device.as_deref(), Some("mlx5_0"));
        assert_eq!(e.peer, Some("10.0.5.2".parse().unwrap()));
        // tent/src/transport/rdma/workers.cpp: "Detected error WQE for slice %p (opcode:
        // ..., local_nic: %s): " << ibv_wc_status_str.
        let t = one(
            "I1128 04:20:17.000001 31338 workers.cpp:672] Detected error WQE for slice \
             0x55aa (opcode: 0, source_addr: 0x1, dest_addr: 0x2, length: 8, local_nic: \
             mlx5_3): remote access error",
        );
        assert_eq!(completion(&t).0, 10);
        assert_eq!(t.device.as_deref(), Some("mlx5_3"));
        assert_eq!(t.peer, None);
    }

    #[test]
    fn perftest_gid_types_refusal_takes_the_banners_device_and_index() {
        // perftest_parameters.c ctx_print_test_info " Dual-port       : %s\t\tDevice
        // : %s", " GID index       : %d"; write_bw.c "\n Found Incompatibility issue with GID
        // types.\n", " Please Try to use a different IP version.\n\n".
        let all = events(&[
            "cn1:  Dual-port       : OFF\t\tDevice         : mlx5_2",
            "cn1:  GID index       : 1",
            "cn2:  Dual-port       : OFF\t\tDevice         : mlx5_7",
            "cn2:  GID index       : 3",
            "cn1: ",
            "cn1:  Found Incompatibility issue with GID types.",
            "cn1:  Please Try to use a different IP version.",
        ]);
        assert_eq!(all.len(), 1);
        let e = &all[0];
        assert_eq!(e.library, LogLibrary::Perftest);
        assert_eq!(e.failure, LogFailure::GidFamily);
        assert_eq!(e.device.as_deref(), Some("mlx5_2"));
        assert_eq!(e.gid_index, Some(1));
        assert_eq!(e.origin.host.as_deref(), Some("cn1"));
        // A new run's banner without `-x` forgets the old index.
        let all = events(&[
            " Dual-port       : OFF\t\tDevice         : rxe0",
            " GID index       : 1",
            " Dual-port       : OFF\t\tDevice         : rxe1",
            " Found Incompatibility issue with GID types.",
        ]);
        assert_eq!(all[0].device.as_deref(), Some("rxe1"));
        assert_eq!(all[0].gid_index, None);
        // The banner lines are understood, not skipped.
        let mut p = LogParser::default();
        assert_eq!(
            p.feed(1, " GID index       : 3").0,
            LogLine::Banner(None, BannerFact::GidIndex(3))
        );
        // stdout to a file is flushed at exit: the banner after the refusal still names the
        // device and index, for that reporter only.
        let mut p = LogParser::default();
        let mut d = LogDigest::default();
        for (i, l) in [
            "a:  Found Incompatibility issue with GID types.",
            "a:  Please Try to use a different IP version.",
            "a: ",
            "b:  Dual-port       : OFF\t\tDevice         : mlx5_9",
            "a:  Dual-port       : OFF\t\tDevice         : rxe1",
            "a:  GID index       : 7",
        ]
        .iter()
        .enumerate()
        {
            let (kind, done) = p.feed(i as u64 + 1, l);
            if let Some(e) = done {
                d.add(e);
            }
            d.count(&kind);
        }
        d.events.extend(p.finish());
        assert_eq!(d.events.len(), 1);
        assert_eq!(d.events[0].device.as_deref(), Some("rxe1"));
        assert_eq!(d.events[0].gid_index, Some(7));
        assert_eq!(d.skipped, 1, "only the empty line");
    }

    #[test]
    fn rxe_refusing_a_qps_gid_in_three_kernels() {
        // rxe_av.c rxe_av_chk_attr "invalid sgid index = %d\n": pr_warn under pr_fmt's
        // "rdma_rxe: " (Linux 6.1), rxe_dbg_qp's "qp#%d %s: " under ibdev_printk's "DEV: "
        // (6.3), rxe_dbg_dev's "%s: " (6.5+) with a parent device's "DRIVER PARENT DEV: ".
        let old = one("[  812.125000] rdma_rxe: invalid sgid index = 300");
        assert_eq!(old.library, LogLibrary::Kernel);
        assert_eq!(
            old.failure,
            LogFailure::Transition {
                errno: Some(22),
                from: None,
                to: "RTR".into()
            }
        );
        assert_eq!(old.gid_index, Some(300));
        assert_eq!(old.device, None);
        assert_eq!(old.detail, Some(RefusedAttr::SgidIndexOutOfRange));
        let mid = one(
            "Nov 28 04:20:16 vm1 kernel: rxe1: qp#17 rxe_av_chk_attrs: invalid sgid index = 300",
        );
        assert_eq!(mid.device.as_deref(), Some("rxe1"));
        assert_eq!(mid.origin.host.as_deref(), Some("vm1"));
        let new = one(
            "[ 5.000001] virtio_net virtio0 rxe0: rxe_av_chk_attr: invalid network type for \
             rdma_rxe = 1",
        );
        assert_eq!(new.device.as_deref(), Some("rxe0"));
        assert_eq!(new.detail, Some(RefusedAttr::NotRoceV2(1)));
        assert_eq!(new.gid_index, None);
    }

    #[test]
    fn nccl_version_is_kept_once() {
        // src/init.cc showVersion: VERSION_STRING behind the INFO header.
        let mut p = LogParser::default();
        let mut d = LogDigest::default();
        for (i, l) in [
            "0: node1:1:1 [0] NCCL INFO NCCL version 2.19.3+cuda12.2",
            "1: node2:2:2 [0] NCCL INFO NCCL version 2.19.3+cuda12.2",
        ]
        .iter()
        .enumerate()
        {
            d.count(&p.feed(i as u64 + 1, l).0);
        }
        assert_eq!(d.versions.len(), 1);
        assert_eq!(d.versions[0].version, "2.19.3+cuda12.2");
        assert_eq!(d.versions[0].line, 1);
    }

    #[test]
    fn an_examples_zero_local_gid_is_noted() {
        // rc_pingpong.c v44: "  local address:  LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s".
        let mut p = LogParser::default();
        let mut d = LogDigest::default();
        for (i, l) in [
            "  local address:  LID 0x0000, QPN 0x000011, PSN 0x0a0b0c, GID ::ffff:10.1.1.1",
            "  local address:  LID 0x0000, QPN 0x000012, PSN 0x0a0b0d, GID ::",
        ]
        .iter()
        .enumerate()
        {
            d.count(&p.feed(i as u64 + 1, l).0);
        }
        assert_eq!(d.zero_local_gid, Some((0, 2)));
        assert_eq!(d.skipped, 0);
    }

    #[test]
    fn pdsh_prefix_names_the_host() {
        let e = one("gpu12: Failed status transport retry counter exceeded (12) for wr_id 2");
        assert_eq!(e.origin.host.as_deref(), Some("gpu12"));
        // A level word is no host.
        let e = one("ERROR: Failed status transport retry counter exceeded (12) for wr_id 2");
        assert_eq!(e.origin.host, None);
    }

    #[test]
    fn ordinary_lines_are_unknown_and_digest_counts_them() {
        let mut p = LogParser::default();
        let mut d = LogDigest::default();
        for (i, l) in [
            "hello",
            "",
            "epoch 3 loss 0.1",
            "Failed status 5: wr_id 1 syndrom 0x0",
        ]
        .iter()
        .enumerate()
        {
            let (kind, done) = p.feed(i as u64 + 1, l);
            d.count(&kind);
            if let Some(e) = done {
                d.add(e);
            }
        }
        if let Some(e) = p.finish() {
            d.add(e);
        }
        assert_eq!((d.lines, d.skipped, d.understood), (4, 3, 1));
        assert_eq!(d.flushes.len(), 1);
        assert_eq!(d.flushes[0].count, 1);
        assert!(d.events.is_empty());
    }

    /// A deterministic stream of random and mangled lines never panics the parser.
    #[test]
    fn random_lines_never_panic() {
        let seeds = [
            " 3: node7:4242:4300 [2] NCCL WARN NET/IB : Got completion from peer 10.0.3.7<1> \
             with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid :: remoteGids::",
            "[1,0]<stderr>:[1.2] [h:1:0] f.c:1 UCX  ERROR Remote access on mlx5_0:1/IB (synd \
             0x13 vend 0x88 hw_synd 0/0)",
            "Call to ibv_modify_qp failed with 22 Invalid argument, on dev x:1, curr state \
             INIT, next state RTR, local GID index 99, local GID N/A, remote GID N/A",
            "rdmactl: work completion failed (rxe0/1): IBV_WC_RETRY_EXC_ERR (status 12: x)",
            "Nov  1 00:00:00 h kernel: infiniband mlx5_0: dump_cqe:1:(pid 0): WC error: 5, \
             Message: x",
            "[rqpn 0x12 dlid=0 sl=0 port=1 src_path_bits=0 dgid=zz sgid_index=1 traffic_class=0]",
        ];
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let alphabet = b" :[]<>()=,.0123456789abcdefxX-/NCLUWARGIDstatusQPfailed\t\x00\xff";
        let mut p = LogParser::default();
        for i in 0..200_000u64 {
            let r = next();
            let line: Vec<u8> = if r % 3 == 0 {
                (0..(r >> 8) % 200)
                    .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                    .collect()
            } else {
                let seed = seeds[(r >> 4) as usize % seeds.len()].as_bytes();
                let cut = (next() as usize) % (seed.len() + 1);
                let mut v = seed[..cut].to_vec();
                for _ in 0..(r >> 12) % 4 {
                    if v.is_empty() {
                        break;
                    }
                    let at = (next() as usize) % v.len();
                    v[at] = alphabet[(next() % alphabet.len() as u64) as usize];
                }
                v
            };
            let text = String::from_utf8_lossy(&line);
            let _ = p.feed(i, &text);
        }
        let _ = p.finish();
    }
}
