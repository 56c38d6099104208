//! What a TCP-exchange run will do: sizes, operations, length, windows, QoS, and the
//! parameters it offers its peer.

use std::time::Duration;

use crate::cli::{GidIndexArg, Op, PingpongArgs};
use crate::error::{Error, Result};
use crate::gather::verbs::qp::{Access, PathQos};
use crate::model::failure::{Endpoint, Ops};
use crate::traffic::meter::Meter;
use crate::wire::exchange::{self as oob, NativeMsg};

/// Receives posted ahead, as ibv_rc_pingpong's default rx depth.
pub(super) const RX_DEPTH: u32 = 500;
/// RDMA WRITE/READ work requests in flight at once. 128 (perftest's tx depth) once made
/// rxe in the 6.1 kernel NAK a 64 KiB WRITE stream with REM_INV_REQ_ERR; 32 never did.
pub(super) const WINDOW: u32 = 32;
pub(super) const MAX_SIZE: u32 = 1 << 30;

pub(super) const WRID_RECV: u64 = 1;
pub(super) const WRID_SEND: u64 = 2;

/// The first byte of a --duration client's last SEND: the server answers it and stops.
pub(super) const LAST_MESSAGE: u8 = 0xff;
/// A --duration run may last 30 days (the exchange carries milliseconds in 32 bits).
pub(super) const MAX_DURATION_SECS: f64 = 30.0 * 86400.0;
/// Progress lines on a terminal when --interval is not given.
pub(super) const DEFAULT_INTERVAL: Duration = Duration::from_secs(5);
/// How long a run is: a count, a duration, and whether WRITE and READ go one at a time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Length {
    pub(super) iters: Option<u32>,
    pub(super) duration: Option<Duration>,
    pub(super) lat: bool,
}

impl Length {
    pub(super) fn of(msg: &NativeMsg) -> Length {
        Length {
            iters: (msg.iters > 0).then_some(msg.iters),
            duration: (msg.duration_ms > 0)
                .then(|| Duration::from_millis(u64::from(msg.duration_ms))),
            lat: msg.lat,
        }
    }

    /// How long an end that waits for the other's turn may wait: per iteration a generous
    /// 20 ms and the message at 8 MB/s (a quarter of what Soft-RoCE under emulation moves:
    /// 20 WRITEs of 8 MiB took 6 s there, past the 5.4 s the 20 ms alone allowed), or the
    /// duration and a margin.
    pub(super) fn passive_wait(&self, timeout: Duration, size: u32) -> Duration {
        const FLOOR_BYTES_PER_SEC: u64 = 8_000_000;
        let per_iter = Duration::from_millis(20)
            + Duration::from_micros(u64::from(size) * 1_000_000 / FLOOR_BYTES_PER_SEC);
        timeout
            + match (self.iters, self.duration) {
                (Some(n), _) => per_iter * n,
                (None, Some(d)) => d + d / 10,
                (None, None) => Duration::ZERO,
            }
    }
}
/// A random 24-bit PSN, as ibv_rc_pingpong's lrand48() & 0xffffff.
pub(super) fn random_psn() -> u32 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let mut x = t.as_nanos() as u64 ^ (u64::from(std::process::id()) << 32);
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    // 20 bits: the offer to an rdmactl server writes the PSN as five hex digits.
    (x & 0xf_ffff) as u32
}

#[derive(Clone)]
pub(super) struct Plan {
    pub(super) ops: Ops,
    pub(super) access: Access,
    pub(super) size: u32,
    /// -m
    pub(super) mtu: Option<u32>,
    pub(super) length: Length,
    /// A server given none of -n, --duration and --lat takes the client's.
    pub(super) follows: bool,
    /// What a server was not given and takes from the client: -s, --op, -m.
    pub(super) follows_size: bool,
    pub(super) follows_ops: bool,
    pub(super) follows_mtu: bool,
    pub(super) progress: Option<Duration>,
    pub(super) events: bool,
    pub(super) qos: PathQos,
    pub(super) pkey_index: u16,
    pub(super) timeout: Duration,
    pub(super) gid_index: Option<u32>,
    /// `-g auto`: a client chooses before it connects, a server once it knows the client.
    pub(super) auto: bool,
}

pub(super) fn plan(args: &PingpongArgs) -> Result<Plan> {
    if args.cm {
        return Err(Error::Usage(
            "--cm (librdmacm) is not implemented yet; use the TCP exchange".into(),
        ));
    }
    let gid_index = match args.gid_index {
        Some(GidIndexArg::Index(i)) => Some(i),
        Some(GidIndexArg::Auto) | None => None,
    };
    if args.size() == 0 || args.size() > MAX_SIZE {
        return Err(Error::Usage(format!(
            "-s {}: the message size must be 1 to {MAX_SIZE} bytes",
            args.size()
        )));
    }
    if args.iters == Some(0) {
        return Err(Error::Usage("-n 0: give at least one iteration".into()));
    }
    if let Some(d) = args.duration {
        if !(0.001..=MAX_DURATION_SECS).contains(&d) {
            return Err(Error::Usage(format!(
                "--duration {d}: give 0.001 <= SECS <= {MAX_DURATION_SECS} (30 days)"
            )));
        }
    }
    if let Some(i) = args.interval {
        if !(0.1..=3600.0).contains(&i) {
            return Err(Error::Usage(format!(
                "--interval {i}: give 0.1 <= SECS <= 3600"
            )));
        }
    }
    if args.persist && args.server.is_some() {
        return Err(Error::Usage(
            "--persist is for the server (without SERVER): it serves one client after another"
                .into(),
        ));
    }
    if args.compat.is_some() && (args.duration.is_some() || args.lat) {
        return Err(Error::Usage(
            "--compat rc_pingpong runs -n SEND iterations, as the stock tool: drop --duration and --lat".into(),
        ));
    }
    if args.server.is_some() && args.tcp_port == 0 {
        return Err(Error::Usage(
            "-p 0: a client needs the server's TCP port (a server started with -p 0 prints the one it got)".into(),
        ));
    }
    if !(args.timeout.is_finite() && args.timeout > 0.0 && args.timeout <= 3600.0) {
        return Err(Error::Usage(format!(
            "--timeout {}: give 0 < SECS <= 3600",
            args.timeout
        )));
    }
    if let Some(m) = args.mtu {
        oob::path_mtu(0, 0, Some(m)).map_err(Error::Usage)?;
    }
    let op = args.op.unwrap_or(Op::All);
    if args.compat.is_some() && op != Op::Send && op != Op::All {
        return Err(Error::Usage(
            "--compat rc_pingpong does SEND/RECV only; drop --op or use --op send".into(),
        ));
    }
    if args.bind.is_some() && args.server.is_some() {
        return Err(Error::Usage(
            "--bind is for the server (without SERVER)".into(),
        ));
    }
    let ops = match (args.compat, op) {
        (Some(_), _) | (None, Op::Send) => Ops {
            send: true,
            write: false,
            read: false,
        },
        (None, Op::Write) => Ops {
            send: false,
            write: true,
            read: false,
        },
        (None, Op::Read) => Ops {
            send: false,
            write: false,
            read: true,
        },
        (None, Op::All) => Ops {
            send: true,
            write: true,
            read: true,
        },
    };
    let access = access_for(ops);
    use std::io::IsTerminal;
    let progress = match args.interval {
        Some(i) => Some(Duration::from_secs_f64(i)),
        None => std::io::stderr().is_terminal().then_some(DEFAULT_INTERVAL),
    };
    let server = args.server.is_none();
    Ok(Plan {
        ops,
        access,
        size: args.size(),
        mtu: args.mtu,
        follows_size: server && args.size_given.is_none(),
        // A stock client's exchange carries no parameters: the server's own apply.
        follows_ops: server && args.op.is_none(),
        follows_mtu: server && args.mtu.is_none(),
        length: Length {
            iters: args.iterations(),
            duration: args.duration.map(Duration::from_secs_f64),
            lat: args.lat,
        },
        follows: args.server.is_none()
            && args.iters.is_none()
            && args.duration.is_none()
            && !args.lat,
        progress,
        events: args.events,
        qos: PathQos {
            sl: args.sl.unwrap_or(0),
            traffic_class: args.tclass.unwrap_or(0),
        },
        pkey_index: args.pkey_index.unwrap_or(0),
        timeout: Duration::from_secs_f64(args.timeout),
        gid_index,
        auto: args.gid_index == Some(GidIndexArg::Auto),
    })
}

/// The peer may only write or read what the chosen operations need.
pub(super) fn access_for(ops: Ops) -> Access {
    Access {
        remote_write: ops.write,
        remote_read: ops.read,
        remote_atomic: false,
    }
}

pub(super) fn native_msg(plan: &Plan, local: &Endpoint) -> NativeMsg {
    let l = &plan.length;
    NativeMsg {
        endpoint: local.clone(),
        ops: plan.ops,
        size: plan.size,
        mtu: plan.mtu.unwrap_or(0) as u16,
        iters: l.iters.unwrap_or(0),
        duration_ms: l.duration.map_or(0, |d| d.as_millis() as u32),
        lat: l.lat,
        follows: plan.follows,
    }
}

/// A meter for the exchanges where both ends know -n (ibv_rc_pingpong's).
pub(super) fn counted_meter(name: &'static str, plan: &Plan, window: u32) -> Meter {
    Meter::start(
        name,
        Some(u64::from(plan.length.iters.unwrap_or(1000))),
        None,
        plan.progress,
        window,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The passive end of 20 WRITEs of 8 MiB waits long enough for emulated Soft-RoCE (6 s
    /// measured) and small messages keep the old 20 ms per iteration.
    #[test]
    fn the_passive_wait_grows_with_the_message() {
        let l = Length {
            iters: Some(20),
            duration: None,
            lat: false,
        };
        let t = Duration::from_secs(5);
        assert_eq!(l.passive_wait(t, 64), Duration::from_micros(5_400_160));
        let big = l.passive_wait(t, 8 << 20);
        assert!(big >= Duration::from_secs(25), "{big:?}");
        assert!(big <= Duration::from_secs(30), "{big:?}");
    }
}
