//! A wait whose completion does not come: re-read what can have changed since the QP was
//! connected (port state and MTU, the QP's GID, the port counters, the out-of-band
//! connection, this process's own clock), trade the facts with the peer over the TCP
//! exchange, and keep them for the rules. A wait during which packets still arrive is not
//! a stall: it goes on.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::gather::verbs::qp::{ticks, Context};
use crate::model::counter::PortDelta;
use crate::model::device::GidType;
use crate::model::facts::{OobLink, Stall, StallFacts, STOPPED_MS};
use crate::model::failure::{Cause, Failure};
use crate::model::gid::Gid;
use crate::model::results::ns_per_tick;
use crate::traffic::counters::CounterWatch;
use crate::wire::exchange::{Conn, ProbeAnswer};

/// How long a stalled end waits for the peer's answer to its probe.
const PROBE_WAIT: Duration = Duration::from_secs(2);

/// How often the stop clock's thread wakes.
const STOP_CLOCK_TICK: Duration = Duration::from_millis(250);

/// The longest this process did not run since the run began, measured by a thread of its
/// own that wakes every [`STOP_CLOCK_TICK`]: a stop halts every thread, so the sleeper
/// oversleeps by the stop wherever the main thread was (in its busy loop, a sync with the
/// peer, setting up the next loop). Stamping the busy loop's polls instead missed a stop
/// that landed outside the loop's clock reads: the resumed client then relayed the peer's
/// "hung" as if it were about the peer.
struct StopClock {
    largest_ms: Arc<AtomicU64>,
    running: Arc<AtomicBool>,
}

impl StopClock {
    fn start() -> StopClock {
        let largest_ms = Arc::new(AtomicU64::new(0));
        let running = Arc::new(AtomicBool::new(true));
        let (largest, alive) = (largest_ms.clone(), running.clone());
        // A thread that cannot start leaves the measure at 0: no stop is claimed.
        let _ = std::thread::Builder::new()
            .name("stop-clock".into())
            .spawn(move || {
                let mut last = Instant::now();
                while alive.load(Ordering::Relaxed) {
                    std::thread::sleep(STOP_CLOCK_TICK);
                    let now = Instant::now();
                    let over = now.duration_since(last).saturating_sub(STOP_CLOCK_TICK);
                    largest.fetch_max(over.as_millis() as u64, Ordering::Relaxed);
                    last = now;
                }
            });
        StopClock {
            largest_ms,
            running,
        }
    }

    fn largest(&self) -> Duration {
        Duration::from_millis(self.largest_ms.load(Ordering::Relaxed))
    }
}

impl Drop for StopClock {
    fn drop(&mut self) {
        // The thread sees it within one tick and ends; nothing waits for it.
        self.running.store(false, Ordering::Relaxed);
    }
}

/// While packets still arrive a wait goes on, up to this many times --timeout.
const MOVING_WAIT_LIMIT: u32 = 20;

/// The error and retry counters a stall is decided by (rxe's and hardware's names).
const STALL_COUNTERS: &[&str] = &[
    "send_err",
    "retry_exceeded_err",
    "retry_rnr_exceeded_err",
    "completer_retry_err",
    "rcvd_seq_err",
    "rcvd_rnr_err",
    "send_rnr_err",
    "out_of_seq_request",
    "duplicate_request",
    "local_ack_timeout_err",
    "packet_seq_err",
    "implied_nak_seq_err",
    "req_transport_retries_exceeded",
    "rnr_nak_retry_err",
    "port_xmit_discards",
    "link_downed",
];

/// Packets in, and out, by the names rxe and hardware give them.
const RCVD_PACKETS: &[&str] = &["rcvd_pkts", "port_rcv_packets"];
const SENT_PACKETS: &[&str] = &["sent_pkts", "port_xmit_packets"];
/// RNR NAKs sent (a SEND came and no receive was posted here) and received (the peer had
/// none), as rxe counts them. A SEND answered with one placed no byte and is sent again,
/// forever with rnr_retry 7 (ibv_rc_pingpong's): the packets flow, yet no message is on
/// its way. Counting them as flow once kept a server that had posted no receive waiting
/// past --timeout for as long as the stock client resent (issue 36).
const RNR_NAKS: &[&str] = &["send_rnr_err", "rcvd_rnr_err"];

/// What a run keeps to look at a stall: the counters read at its start, this process's
/// clock, and how far the loops got.
pub(super) struct StallWatch {
    pub(super) sysfs: PathBuf,
    /// Read before the traffic; the run's counters block is its delta too.
    pub(super) counters: Option<CounterWatch>,
    pub(super) role: &'static str,
    pub(super) path_mtu: Option<u32>,
    pub(super) iterations: Option<u64>,
    pub(super) peer_knows_iterations: bool,
    start: Instant,
    start_tick: u64,
    last_completion_tick: u64,
    stop_clock: StopClock,
    /// Requests posted and completed, messages received, in the current loop.
    pub(super) posted: u64,
    pub(super) completed: u64,
    pub(super) received: u64,
    /// Packets counted at the last look while waiting, and when.
    packets_seen: Option<(Packets, Instant)>,
    message_needs: Option<Duration>,
    /// What the look found, for the rules.
    pub(super) found: Option<Stall>,
}

impl StallWatch {
    pub(super) fn new(sysfs: &Path, role: &'static str) -> StallWatch {
        StallWatch {
            sysfs: sysfs.to_path_buf(),
            counters: None,
            role,
            path_mtu: None,
            iterations: None,
            peer_knows_iterations: true,
            start: Instant::now(),
            start_tick: ticks(),
            last_completion_tick: 0,
            stop_clock: StopClock::start(),
            posted: 0,
            completed: 0,
            received: 0,
            packets_seen: None,
            message_needs: None,
            found: None,
        }
    }

    /// A loop starts: its waits are measured from here.
    pub(super) fn begin(&mut self) {
        self.last_completion_tick = ticks();
        self.posted = 0;
        self.completed = 0;
        self.received = 0;
        self.packets_seen = None;
    }

    /// A completion came at tick `now`.
    pub(super) fn completion(&mut self, now: u64) {
        self.last_completion_tick = now;
        // The next wait's looks compare with each other, not with an earlier message.
        self.packets_seen = None;
    }

    fn ticks_to(&self, t: u64) -> Duration {
        let scale = ns_per_tick(self.start_tick, ticks(), self.start.elapsed());
        Duration::from_nanos((t as f64 * scale) as u64)
    }

    /// The longest this process did not run since the run began.
    pub(super) fn stopped_for(&self) -> Duration {
        self.stop_clock.largest()
    }

    fn since_last_completion(&self) -> Duration {
        self.ticks_to(ticks().saturating_sub(self.last_completion_tick))
    }

    /// A wait ran out (`waited` so far in all): are packets still arriving and leaving
    /// since the last look? Then one large message is still on its way, the wait goes on,
    /// and what one message needs at that rate is measured.
    pub(super) fn flow(&mut self, waited: Duration, timeout: Duration, size: u32) -> Flow {
        let Some(delta) = self.counters.as_ref().and_then(CounterWatch::stop) else {
            return Flow::Still;
        };
        let count = |names: &[&str]| names.iter().map(|n| delta.at_least(n)).sum::<u64>();
        let seen = Packets {
            rcvd: count(RCVD_PACKETS),
            sent: count(SENT_PACKETS),
            rnr_naks: count(RNR_NAKS),
        };
        let now = Instant::now();
        let Some((before, at)) = self.packets_seen.replace((seen, now)) else {
            return Flow::FirstLook;
        };
        if !seen.moved_since(&before) || waited >= timeout * MOVING_WAIT_LIMIT {
            return Flow::Still;
        }
        let (dr, ds) = (
            seen.rcvd.saturating_sub(before.rcvd),
            seen.sent.saturating_sub(before.sent),
        );
        let secs = now.duration_since(at).as_secs_f64();
        if let (Some(mtu), true) = (self.path_mtu, secs > 0.0) {
            let bytes_per_s = dr.max(ds) as f64 * f64::from(mtu) / secs;
            self.message_needs = Some(Duration::from_secs_f64(f64::from(size) / bytes_per_s));
        }
        Flow::Moving
    }

    /// What this end re-reads now, on `end`'s device and port.
    fn facts(&self, end: &StalledEnd, timeout: Duration) -> StallFacts {
        let now = end.ctx.port_now(end.port, end.gid.map(|g| (g.0, g.1)));
        let delta: Option<PortDelta> = self.counters.as_ref().and_then(CounterWatch::stop);
        let counters = delta
            .iter()
            .flat_map(|d| {
                STALL_COUNTERS
                    .iter()
                    .map(|n| (n.to_string(), d.at_least(n)))
                    .filter(|(_, v)| *v > 0)
            })
            .collect();
        let netdev = crate::gather::sysfs::SysfsRoot::new(&self.sysfs)
            .port(end.ctx.name(), end.port)
            .ok()
            .and_then(|p| p.netdev.map(|n| n.name));
        StallFacts {
            role: self.role.to_string(),
            device: end.ctx.name().to_string(),
            port: end.port,
            netdev,
            now,
            path_mtu: self.path_mtu,
            gid_index: end.gid.map(|g| g.0),
            gid: end.gid.map(|g| g.1.ipv6().to_string()),
            counters,
            own_requests_acked: Some(self.completed >= self.posted),
            completed: self.completed,
            received: self.received,
            iterations: self.iterations,
            peer_knows_iterations: self.peer_knows_iterations,
            since_last_completion_ms: self.since_last_completion().as_millis() as u64,
            stopped_ms: self.stopped_for().as_millis() as u64,
            message_bytes: end.size,
            timeout_ms: timeout.as_millis() as u64,
            message_needs_ms: self.message_needs.map(|d| d.as_millis() as u64),
        }
    }
}

/// The counters one look at a waiting end's port reads.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Packets {
    rcvd: u64,
    sent: u64,
    rnr_naks: u64,
}

impl Packets {
    /// A message is on its way: packets came in and went out since `before`, and none of
    /// them was an RNR NAK (the resends an RNR NAK answers carry nothing that completes).
    fn moved_since(&self, before: &Packets) -> bool {
        self.rcvd > before.rcvd && self.sent > before.sent && self.rnr_naks == before.rnr_naks
    }
}

/// Whether packets flow while a wait runs out.
pub(super) enum Flow {
    /// Nothing to compare with yet: look again after a short wait.
    FirstLook,
    /// Packets came and went since the last look: a message is still on its way.
    Moving,
    /// Nothing moved (or no counter tells): a stall.
    Still,
}

/// A short wait between the first two looks at the counters, so a stall is not reported a
/// whole --timeout later than it was seen.
pub(super) const SECOND_LOOK: Duration = Duration::from_secs(1);

/// The device end a stall look re-reads: the open device, its port, the QP's GID and the
/// message size.
pub(super) struct StalledEnd<'a> {
    pub(super) ctx: &'a Context,
    pub(super) port: u32,
    pub(super) gid: Option<&'a (u32, Gid, Option<GidType>)>,
    pub(super) size: u32,
}

/// A wait ended in `f`: when it is a stall (no completion in time, the peer's probe, or
/// anything after this process was itself stopped), look, trade facts with the peer, and
/// keep them in `watch.found`. The failure returned is `f`, or the peer's notice that
/// came instead of its answer.
pub(super) fn look(
    watch: &mut StallWatch,
    end: &StalledEnd,
    timeout: Duration,
    conn: &mut Option<&mut Conn>,
    mut f: Failure,
) -> Failure {
    let stopped_here = watch.stopped_for() >= Duration::from_millis(STOPPED_MS);
    let timed_out = matches!(f.cause, Cause::Timeout { .. });
    if matches!(f.cause, Cause::Interrupted { .. }) || !(timed_out || stopped_here) {
        return f;
    }
    let local = watch.facts(end, timeout);
    if let Cause::Timeout { waited_ms, .. } = &mut f.cause {
        // The peer's probe ended this wait: it waited as long as since the last completion.
        *waited_ms = (*waited_ms).max(local.since_last_completion_ms);
    }
    let mut stall = Stall {
        local,
        ..Stall::default()
    };
    match conn.as_deref_mut() {
        None => stall.link = OobLink::None,
        Some(_) if f.cause == Cause::PeerClosed => stall.link = OobLink::Closed,
        Some(c) => {
            let started = Instant::now();
            let answer = c.probe(&stall.local, PROBE_WAIT);
            // Read before the wait is measured: an ACK's age is never more than the wait.
            let acks = crate::gather::verbs::sys::tcp_acks(c.raw_fd()).ok();
            stall.probe_waited_ms = Some(started.elapsed().as_millis() as u64);
            stall.link = OobLink::Open {
                unacked: acks.map(|a| a.unacked),
                last_ack_ms: acks.map(|a| a.last_ack_ms),
            };
            match answer {
                ProbeAnswer::Answered(peer) => stall.peer = Some(*peer),
                ProbeAnswer::Silent => {}
                ProbeAnswer::Closed => stall.link = OobLink::Closed,
                ProbeAnswer::Failed(notice) => {
                    if matches!(notice.cause, Cause::PeerReported { .. }) {
                        f = notice;
                    }
                }
            }
        }
    }
    watch.found = Some(stall);
    f
}

#[cfg(test)]
mod tests {
    use super::Packets;

    fn at(rcvd: u64, sent: u64, rnr_naks: u64) -> Packets {
        Packets {
            rcvd,
            sent,
            rnr_naks,
        }
    }

    /// A large message on its way: packets both ways, no RNR NAK. The wait goes on.
    #[test]
    fn data_both_ways_is_a_message_on_its_way() {
        assert!(at(900, 450, 0).moved_since(&at(100, 50, 0)));
    }

    /// Issue 36: a stock client's SENDs into a QP with no receive posted, each answered
    /// with an RNR NAK and sent again forever: packets both ways, yet a stall.
    #[test]
    fn rnr_naks_both_ways_are_no_message_on_its_way() {
        assert!(!at(900, 900, 800).moved_since(&at(100, 100, 0)));
    }

    /// Nothing in, or nothing out: a stall, as before.
    #[test]
    fn one_way_or_no_traffic_is_a_stall() {
        assert!(!at(100, 900, 0).moved_since(&at(100, 50, 0)));
        assert!(!at(900, 50, 0).moved_since(&at(100, 50, 0)));
        assert!(!at(100, 50, 0).moved_since(&at(100, 50, 0)));
    }
}
