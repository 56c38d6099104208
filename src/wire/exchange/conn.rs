use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use super::codec::{
    encode_native, encode_rc_pingpong, encode_rdmactl_offer, garbage, json_frame, native_header,
    parse_hello, quote, Hello, NativeMsg, RcDest, COUNTERS_MAGIC, FRAME_MAX_LEN, NOTICE_MAGIC,
    PROBE_MAGIC, PROBE_MAX_LEN, RC_PINGPONG_DONE, RC_PINGPONG_LEN, SYNC_MAGIC,
};
use crate::model::counter::WireDelta;
use crate::model::facts::StallFacts;
use crate::model::failure::{Cause, Failure, FailureContext, PeerNotice, Step};

pub struct Conn {
    stream: TcpStream,
    pub peer: SocketAddr,
    timeout: Duration,
    /// The peer's stall probe, read by `peer_stopped` before this end sent its own.
    peer_probe: Option<Box<StallFacts>>,
}

/// What came back for a stall probe.
#[derive(Debug)]
pub enum ProbeAnswer {
    /// The peer's own facts: its process is alive and waiting too.
    Answered(Box<StallFacts>),
    /// Nothing within the wait, and the connection still open.
    Silent,
    /// The peer closed the connection.
    Closed,
    /// The peer said why it stopped instead (or sent something that is not an answer).
    Failed(Failure),
}

fn oob_failure(step: Step, cause: Cause, peer: Option<String>) -> Failure {
    Failure::new(
        step,
        cause,
        FailureContext {
            peer_addr: peer,
            ..Default::default()
        },
    )
}

fn io_cause(e: &std::io::Error, waited: Duration) -> Cause {
    match e.kind() {
        ErrorKind::WouldBlock | ErrorKind::TimedOut => Cause::Timeout {
            waited_ms: waited.as_millis() as u64,
            waiting_for: None,
        },
        ErrorKind::UnexpectedEof | ErrorKind::ConnectionReset | ErrorKind::BrokenPipe => {
            Cause::PeerClosed
        }
        _ => Cause::errno(e.raw_os_error().unwrap_or(libc::EIO)),
    }
}

/// Connects to one address already resolved (a link-local one with its scope id), with a
/// deadline.
pub fn connect_addr(addr: SocketAddr, timeout: Duration) -> Result<Conn, Failure> {
    connect_any(vec![addr], addr.to_string(), timeout)
}

fn connect_any(addrs: Vec<SocketAddr>, shown: String, timeout: Duration) -> Result<Conn, Failure> {
    let start = Instant::now();
    let mut last = Cause::Invalid {
        what: format!("'{shown}' resolved to no address"),
    };
    for addr in addrs {
        let left = timeout.saturating_sub(start.elapsed());
        if left.is_zero() {
            last = Cause::Timeout {
                waited_ms: start.elapsed().as_millis() as u64,
                waiting_for: None,
            };
            break;
        }
        match TcpStream::connect_timeout(&addr, left) {
            Ok(stream) => {
                let _ = stream.set_nodelay(true);
                return Ok(Conn {
                    stream,
                    peer: addr,
                    timeout,
                    peer_probe: None,
                });
            }
            Err(e) => last = io_cause(&e, start.elapsed()),
        }
    }
    Err(oob_failure(Step::Connect, last, Some(shown)))
}

/// Listens on `bind` (default: every address, IPv6 and IPv4). SO_REUSEADDR is std's default.
pub fn listen(bind: Option<IpAddr>, port: u16) -> Result<TcpListener, Failure> {
    let addr = SocketAddr::new(bind.unwrap_or(IpAddr::V6(Ipv6Addr::UNSPECIFIED)), port);
    let no_ipv6 = |e: &std::io::Error| {
        matches!(
            e.raw_os_error(),
            Some(libc::EAFNOSUPPORT) | Some(libc::EADDRNOTAVAIL)
        )
    };
    TcpListener::bind(addr)
        .or_else(|e| match bind {
            // Only a host without IPv6 is a reason to fall back to IPv4 any: a port held
            // by another process stays that error.
            None if no_ipv6(&e) => {
                TcpListener::bind(SocketAddr::new(IpAddr::from([0, 0, 0, 0]), port))
            }
            _ => Err(e),
        })
        .map_err(|e| {
            let mut f = oob_failure(Step::Listen, io_cause(&e, Duration::ZERO), None);
            f.context.bind_addr = Some(addr.to_string());
            f
        })
}

/// Accepts exactly one client. Waiting for a client has no deadline (a server waits, as
/// ibv_rc_pingpong does); everything after the accept does.
pub fn accept_one(listener: &TcpListener, timeout: Duration) -> Result<Conn, Failure> {
    let (stream, peer) = listener
        .accept()
        .map_err(|e| oob_failure(Step::Connect, io_cause(&e, Duration::ZERO), None))?;
    let _ = stream.set_nodelay(true);
    Ok(Conn {
        stream,
        peer,
        timeout,
        peer_probe: None,
    })
}

/// `accept_one`, but a caught SIGINT/SIGTERM ends the wait (a `--persist` server between
/// clients, after the first one made signals caught): None then.
pub fn accept_watching(listener: &TcpListener, timeout: Duration) -> Result<Option<Conn>, Failure> {
    accept_within(listener, timeout, None)
}

/// `accept_watching`, giving up after `wait` when one is given (a sweeping server whose
/// client did not come back): None then too; `interrupt::caught` tells the two apart.
pub fn accept_within(
    listener: &TcpListener,
    timeout: Duration,
    wait: Option<Duration>,
) -> Result<Option<Conn>, Failure> {
    let failed = |e: &std::io::Error| oob_failure(Step::Connect, io_cause(e, Duration::ZERO), None);
    let deadline = wait.map(|w| Instant::now() + w);
    listener.set_nonblocking(true).map_err(|e| failed(&e))?;
    let accepted = loop {
        match listener.accept() {
            Ok(pair) => break Ok(Some(pair)),
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => {
                if crate::interrupt::caught().is_some()
                    || deadline.is_some_and(|d| Instant::now() >= d)
                {
                    break Ok(None);
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => break Err(failed(&e)),
        }
    };
    listener.set_nonblocking(false).map_err(|e| failed(&e))?;
    let Some((stream, peer)) = accepted? else {
        return Ok(None);
    };
    stream.set_nonblocking(false).map_err(|e| failed(&e))?;
    let _ = stream.set_nodelay(true);
    Ok(Some(Conn {
        stream,
        peer,
        timeout,
        peer_probe: None,
    }))
}

/// How long a busy server waits for an extra client's first message before it closes the
/// connection anyway (an rdmactl client sends it right after its connect).
const BUSY_HELLO_WAIT: Duration = Duration::from_secs(2);

/// While a server runs one client's test, its listener stays open and every other client
/// that connects is answered at once, by a thread, and closed: an rdmactl client (its first
/// message is rdmactl's offer or native message) gets `notice`, which it reads as its
/// server's failure notice and prints; a stock ibv_rc_pingpong client only sees the close
/// (it could not read a notice, and would take one for a garbled address), which makes it
/// exit. Without this the second client waited out its --timeout on the listen backlog
/// and could only guess why. Dropping it stops the thread and leaves the listener as it was.
pub struct BusyAnswer {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl BusyAnswer {
    /// None when the listener cannot be shared with a thread (the run goes on without).
    pub fn start(listener: &TcpListener, notice: PeerNotice) -> Option<BusyAnswer> {
        use std::sync::atomic::{AtomicBool, Ordering};
        let listener = listener.try_clone().ok()?;
        listener.set_nonblocking(true).ok()?;
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let stopping = std::sync::Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("busy-answer".into())
            .spawn(move || {
                while !stopping.load(Ordering::Relaxed) {
                    match listener.accept() {
                        Ok((stream, peer)) => answer_busy(stream, peer, &notice),
                        // Nobody waiting (or an error such as EMFILE, which passes): look
                        // again soon, and for the stop.
                        Err(_) => std::thread::sleep(Duration::from_millis(50)),
                    }
                }
                let _ = listener.set_nonblocking(false);
            })
            .ok()?;
        Some(BusyAnswer {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for BusyAnswer {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// One extra client: its first message says whether it can read a notice.
fn answer_busy(stream: TcpStream, peer: SocketAddr, notice: &PeerNotice) {
    if stream.set_nonblocking(false).is_err() {
        return;
    }
    let _ = stream.set_nodelay(true);
    let mut conn = Conn {
        stream,
        peer,
        timeout: BUSY_HELLO_WAIT,
        peer_probe: None,
    };
    if let Ok(Hello::Native(_) | Hello::RdmactlOffer(_)) = conn.read_hello() {
        conn.send_notice(notice);
    }
}

impl Conn {
    fn fail(&self, cause: Cause) -> Failure {
        oob_failure(Step::Exchange, cause, Some(self.peer.to_string()))
    }

    /// Fills `buf` before the deadline. Err carries how many bytes did arrive.
    fn read_full(&mut self, buf: &mut [u8], deadline: Instant) -> Result<(), (usize, Failure)> {
        let start = Instant::now();
        let mut got = 0;
        while got < buf.len() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err((
                    got,
                    self.fail(Cause::Timeout {
                        waited_ms: start.elapsed().as_millis() as u64,
                        waiting_for: None,
                    }),
                ));
            }
            let _ = self.stream.set_read_timeout(Some(left));
            match self.stream.read(&mut buf[got..]) {
                Ok(0) => return Err((got, self.fail(Cause::PeerClosed))),
                Ok(n) => got += n,
                // A caught Ctrl-C interrupts a read with a timeout (no SA_RESTART there).
                Err(e) if e.kind() == ErrorKind::Interrupted => {
                    if let Some(signal) = crate::interrupt::caught() {
                        return Err((got, self.fail(Cause::Interrupted { signal })));
                    }
                }
                Err(e) => return Err((got, self.fail(io_cause(&e, start.elapsed())))),
            }
        }
        Ok(())
    }

    fn read_exact(&mut self, buf: &mut [u8]) -> Result<(), Failure> {
        let deadline = Instant::now() + self.timeout;
        self.read_full(buf, deadline).map_err(|(_, f)| f)
    }

    pub fn write_all(&mut self, data: &[u8]) -> Result<(), Failure> {
        let _ = self.stream.set_write_timeout(Some(self.timeout));
        let start = Instant::now();
        self.stream
            .write_all(data)
            .map_err(|e| self.fail(io_cause(&e, start.elapsed())))
    }

    /// Reads the first message and detects its format (server side).
    pub fn read_hello(&mut self) -> Result<Hello, Failure> {
        let deadline = Instant::now() + self.timeout;
        let mut buf = vec![0u8; 8];
        let truncated = |got: usize, buf: &[u8], f: Failure| match f.cause {
            Cause::PeerClosed | Cause::Timeout { .. } if got > 0 => Failure {
                cause: Cause::Invalid {
                    what: format!(
                        "{} after {}: {}",
                        f.cause,
                        quote(&buf[..got]),
                        garbage(&buf[..got]).0
                    ),
                },
                ..f
            },
            _ => f,
        };
        // One byte first: a short garbage line must not wait for eight.
        if let Err((got, f)) = self.read_full(&mut buf[..1], deadline) {
            return Err(truncated(got, &buf, f));
        }
        match buf[0] {
            b'R' => {
                if let Err((got, f)) = self.read_full(&mut buf[1..8], deadline) {
                    return Err(truncated(got + 1, &buf, f));
                }
                if buf[..4] == NOTICE_MAGIC {
                    let len_head = buf[4..8].to_vec();
                    return Err(self.read_notice(&len_head, deadline));
                }
                let len =
                    native_header(&buf).map_err(|e| self.fail(Cause::Invalid { what: e.0 }))?;
                buf.resize(8 + len, 0);
                if let Err((_, f)) = self.read_full(&mut buf[8..], deadline) {
                    return Err(f);
                }
            }
            b if b.is_ascii_hexdigit() => {
                buf.resize(RC_PINGPONG_LEN, 0);
                if let Err((got, f)) = self.read_full(&mut buf[1..], deadline) {
                    return Err(truncated(got + 1, &buf, f));
                }
            }
            _ => {
                // Collect what else is there right away, to quote it.
                let _ = self
                    .stream
                    .set_read_timeout(Some(Duration::from_millis(100)));
                let mut more = [0u8; 23];
                if let Ok(n) = self.stream.read(&mut more) {
                    buf.truncate(1);
                    buf.extend_from_slice(&more[..n]);
                } else {
                    buf.truncate(1);
                }
                return Err(self.fail(Cause::Invalid {
                    what: garbage(&buf).0,
                }));
            }
        }
        parse_hello(&buf).map_err(|e| self.fail(Cause::Invalid { what: e.0 }))
    }

    pub fn send_native(&mut self, msg: &NativeMsg) -> Result<(), Failure> {
        self.write_all(&encode_native(msg))
    }

    /// Reads the peer's native message (after the offer was taken up).
    pub fn read_native(&mut self) -> Result<NativeMsg, Failure> {
        match self.read_hello()? {
            Hello::Native(m) => Ok(m),
            Hello::RcPingpong(_) | Hello::RdmactlOffer(_) => Err(self.fail(Cause::Invalid {
                what: "the peer answered in ibv_rc_pingpong's format where rdmactl's was due"
                    .into(),
            })),
        }
    }

    pub fn send_rc(&mut self, dest: &RcDest) -> Result<(), Failure> {
        self.write_all(&encode_rc_pingpong(dest))
    }

    pub fn send_offer(&mut self, dest: &RcDest) -> Result<(), Failure> {
        self.write_all(&encode_rdmactl_offer(dest))
    }

    /// The rc_pingpong client's last word; the server accepts it or a plain close.
    pub fn read_done(&mut self) -> Result<(), Failure> {
        let mut buf = [0u8; RC_PINGPONG_DONE.len()];
        match self.read_exact(&mut buf) {
            Ok(()) if &buf == RC_PINGPONG_DONE => Ok(()),
            Ok(()) => Err(self.fail(Cause::Invalid {
                what: format!("expected \"done\", got {}", quote(&buf)),
            })),
            Err(f) if f.cause == Cause::PeerClosed => Ok(()),
            Err(f) => Err(f),
        }
    }

    /// Tells the peer why this end stops (best effort: the peer may be gone already).
    pub fn send_notice(&mut self, notice: &PeerNotice) {
        let Some(frame) = json_frame(NOTICE_MAGIC, serde_json::to_vec(notice)) else {
            return;
        };
        let _ = self.stream.set_write_timeout(Some(Duration::from_secs(1)));
        let _ = self.stream.write_all(&frame);
    }

    /// The body of a JSON frame whose magic has been read; `len_head` holds the length
    /// bytes already read with it.
    fn read_frame_body(
        &mut self,
        len_head: &[u8],
        deadline: Instant,
        what: &str,
    ) -> Result<Vec<u8>, Failure> {
        let mut len_bytes = [0u8; 4];
        len_bytes[..len_head.len()].copy_from_slice(len_head);
        self.read_full(&mut len_bytes[len_head.len()..], deadline)
            .map_err(|(_, f)| f)?;
        let len = u32::from_be_bytes(len_bytes) as usize;
        if len > FRAME_MAX_LEN {
            return Err(self.fail(Cause::Invalid {
                what: format!("the peer's {what} claims {len} bytes"),
            }));
        }
        let mut body = vec![0u8; len];
        self.read_full(&mut body, deadline).map_err(|(_, f)| f)?;
        Ok(body)
    }

    /// The rest of a notice whose magic has been read, as the failure it reports.
    fn read_notice(&mut self, len_head: &[u8], deadline: Instant) -> Failure {
        let body = match self.read_frame_body(len_head, deadline, "failure notice") {
            Ok(body) => body,
            Err(f) => return f,
        };
        match serde_json::from_slice::<PeerNotice>(&body) {
            Ok(notice) => self.fail(Cause::PeerReported {
                notice: Box::new(notice),
            }),
            Err(e) => self.fail(Cause::Invalid {
                what: format!("the peer's failure notice does not parse: {e}"),
            }),
        }
    }

    /// Without waiting: has the peer gone away, or said why it stopped? A sync or any
    /// other data waiting is not a failure.
    pub fn peer_stopped(&mut self) -> Option<Failure> {
        let mut head = [0u8; 4];
        if self.stream.set_nonblocking(true).is_err() {
            return None;
        }
        let peeked = self.stream.peek(&mut head);
        let _ = self.stream.set_nonblocking(false);
        match peeked {
            Ok(0) => Some(self.fail(Cause::PeerClosed)),
            Ok(4) if head == NOTICE_MAGIC => {
                let mut magic = [0u8; 4];
                let deadline = Instant::now() + Duration::from_secs(1);
                if let Err((_, f)) = self.read_full(&mut magic, deadline) {
                    return Some(f);
                }
                Some(self.read_notice(&[], deadline))
            }
            Ok(4) if head == PROBE_MAGIC => {
                // The peer found a stall: keep its facts for this end's own look, which
                // answers it. The wait ends as a stall here too.
                let deadline = Instant::now() + Duration::from_secs(1);
                match self.read_probe(deadline) {
                    Ok(facts) => {
                        self.peer_probe = Some(Box::new(facts));
                        Some(self.fail(Cause::Timeout {
                            waited_ms: 0,
                            waiting_for: None,
                        }))
                    }
                    Err(f) => Some(f),
                }
            }
            Err(e) if e.kind() == ErrorKind::ConnectionReset => Some(self.fail(Cause::PeerClosed)),
            _ => None,
        }
    }

    /// After this end failed on its own: the peer's own failure notice, when it comes
    /// within `wait` (both ends often fail at once, e.g. on retries that ran out, and each
    /// notice then arrives after its reader stopped looking). None: closed, silent, or
    /// anything else.
    pub fn late_notice(&mut self, wait: Duration) -> Option<PeerNotice> {
        let deadline = Instant::now() + wait;
        while Instant::now() < deadline {
            match self.peer_stopped().map(|f| f.cause) {
                Some(Cause::PeerReported { notice }) => return Some(*notice),
                Some(Cause::PeerClosed) => return None,
                _ => std::thread::sleep(Duration::from_millis(20)),
            }
        }
        None
    }

    /// The peer's stall probe arrived while this end waited (it found the stall first).
    pub fn was_probed(&self) -> bool {
        self.peer_probe.is_some()
    }

    /// The socket, for TCP_INFO (is the peer's kernel acknowledging?).
    pub fn raw_fd(&self) -> std::os::fd::RawFd {
        std::os::fd::AsRawFd::as_raw_fd(&self.stream)
    }

    /// A whole probe frame (magic included) before `deadline`, strictly parsed.
    fn read_probe(&mut self, deadline: Instant) -> Result<StallFacts, Failure> {
        let mut head = [0u8; 8];
        self.read_full(&mut head, deadline).map_err(|(_, f)| f)?;
        if head[..4] != PROBE_MAGIC {
            return Err(self.fail(Cause::Invalid {
                what: format!("expected a stall probe, got {}", quote(&head[..4])),
            }));
        }
        self.probe_body(&head[4..], deadline)
    }

    fn probe_body(&mut self, len_head: &[u8], deadline: Instant) -> Result<StallFacts, Failure> {
        let len = u32::from_be_bytes(len_head.try_into().unwrap_or([0xff; 4])) as usize;
        if len > PROBE_MAX_LEN {
            return Err(self.fail(Cause::Invalid {
                what: format!(
                    "the peer's stall probe claims {len} bytes (at most {PROBE_MAX_LEN})"
                ),
            }));
        }
        let mut body = vec![0u8; len];
        self.read_full(&mut body, deadline).map_err(|(_, f)| f)?;
        serde_json::from_slice::<StallFacts>(&body).map_err(|e| {
            self.fail(Cause::Invalid {
                what: format!("the peer's stall probe does not parse: {e}"),
            })
        })
    }

    /// A stall: sends this end's facts and waits up to `wait` for the peer's (at once when
    /// its probe came first). A live rdmactl peer answers from its wait loop; syncs and
    /// counters on the way are passed over.
    pub fn probe(&mut self, mine: &StallFacts, wait: Duration) -> ProbeAnswer {
        let frame = json_frame(PROBE_MAGIC, serde_json::to_vec(mine)).unwrap_or_default();
        let _ = self.stream.set_write_timeout(Some(Duration::from_secs(1)));
        let sent = self.stream.write_all(&frame);
        if let Some(facts) = self.peer_probe.take() {
            return ProbeAnswer::Answered(facts);
        }
        if let Err(e) = sent {
            if matches!(io_cause(&e, Duration::ZERO), Cause::PeerClosed) {
                return ProbeAnswer::Closed;
            }
        }
        let deadline = Instant::now() + wait;
        loop {
            let mut head = [0u8; 4];
            match self.read_full(&mut head, deadline) {
                Ok(()) => {}
                Err((_, f)) => {
                    return match f.cause {
                        Cause::PeerClosed => ProbeAnswer::Closed,
                        Cause::Timeout { .. } => ProbeAnswer::Silent,
                        _ => ProbeAnswer::Failed(f),
                    }
                }
            }
            let mut len = [0u8; 4];
            let step = match head {
                PROBE_MAGIC => self
                    .read_full(&mut len, deadline)
                    .map_err(|(_, f)| f)
                    .and_then(|()| self.probe_body(&len, deadline))
                    .map(|facts| Some(ProbeAnswer::Answered(Box::new(facts)))),
                NOTICE_MAGIC => Ok(Some(ProbeAnswer::Failed(self.read_notice(&[], deadline)))),
                SYNC_MAGIC => self
                    .read_full(&mut len[..1], deadline)
                    .map(|()| None)
                    .map_err(|(_, f)| f),
                COUNTERS_MAGIC => self
                    .read_frame_body(&[], deadline, "counters")
                    .map(|_| None),
                _ => Err(self.fail(Cause::Invalid {
                    what: format!(
                        "out of step with the peer: expected a stall probe, got {}",
                        quote(&head)
                    ),
                })),
            };
            match step {
                Ok(Some(answer)) => return answer,
                Ok(None) => continue,
                Err(f) if f.cause == Cause::PeerClosed => return ProbeAnswer::Closed,
                Err(f) if matches!(f.cause, Cause::Timeout { .. }) => return ProbeAnswer::Silent,
                Err(f) => return ProbeAnswer::Failed(f),
            }
        }
    }

    /// This end's counter changes for the peer (`None`: this end could not read its own).
    pub fn send_counters(&mut self, delta: Option<&WireDelta>) -> Result<(), Failure> {
        let frame = json_frame(COUNTERS_MAGIC, serde_json::to_vec(&delta))
            .or_else(|| json_frame(COUNTERS_MAGIC, Ok(b"null".to_vec())))
            .unwrap_or_default();
        self.write_all(&frame)
    }

    /// The peer's counter changes; a peer that sends none, or a malformed frame, is None
    /// (the run itself succeeded; only the peer's side of the counters is missing).
    pub fn read_counters(&mut self) -> Option<WireDelta> {
        let deadline = Instant::now() + self.timeout;
        let mut head = [0u8; 8];
        self.read_full(&mut head, deadline).ok()?;
        if head[..4] != COUNTERS_MAGIC {
            return None;
        }
        let body = self
            .read_frame_body(&head[4..], deadline, "counters")
            .ok()?;
        serde_json::from_slice::<Option<WireDelta>>(&body)
            .ok()
            .flatten()
    }

    /// Both ends say they reached `tag`, and wait for the other. A peer that failed has
    /// closed the socket, which shows up here as PeerClosed.
    pub fn sync(&mut self, tag: u8) -> Result<(), Failure> {
        self.sync_for(tag, self.timeout)
    }

    pub fn sync_for(&mut self, tag: u8, timeout: Duration) -> Result<(), Failure> {
        let mut frame = [0u8; 5];
        frame[..4].copy_from_slice(&SYNC_MAGIC);
        frame[4] = tag;
        self.write_all(&frame)?;
        let mut got = [0u8; 5];
        let deadline = Instant::now() + timeout;
        self.read_full(&mut got, deadline).map_err(|(_, f)| f)?;
        if got[..4] == NOTICE_MAGIC {
            return Err(self.read_notice(&got[4..], deadline));
        }
        if got[..4] != SYNC_MAGIC || got[4] != tag {
            return Err(self.fail(Cause::Invalid {
                what: format!(
                    "out of step with the peer: expected sync {tag}, got {}",
                    quote(&got)
                ),
            }));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_over_tcp_is_reported_quickly() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let client = std::thread::spawn(move || {
            let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
            s.write_all(b"garbage\n").unwrap();
            std::thread::sleep(Duration::from_millis(300));
        });
        let start = Instant::now();
        let mut conn = accept_one(&listener, Duration::from_secs(5)).unwrap();
        let err = conn.read_hello().unwrap_err();
        client.join().unwrap();
        assert!(start.elapsed() < Duration::from_secs(2));
        assert_eq!(err.step, Step::Exchange);
        assert!(err.to_string().contains("\"garbage\\n\""), "{err}");
    }

    #[test]
    fn silent_client_times_out() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let client = std::thread::spawn(move || {
            let _s = TcpStream::connect(("127.0.0.1", port)).unwrap();
            std::thread::sleep(Duration::from_millis(800));
        });
        let mut conn = accept_one(&listener, Duration::from_millis(200)).unwrap();
        let err = conn.read_hello().unwrap_err();
        assert!(matches!(err.cause, Cause::Timeout { .. }), "{err}");
        client.join().unwrap();
    }

    fn pair() -> (Conn, Conn) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let client = connect_addr(
            SocketAddr::from(([127, 0, 0, 1], port)),
            Duration::from_secs(2),
        )
        .unwrap();
        let server = accept_one(&listener, Duration::from_secs(2)).unwrap();
        (client, server)
    }

    fn facts(role: &str) -> StallFacts {
        StallFacts {
            role: role.into(),
            device: "rxe0".into(),
            port: 1,
            ..StallFacts::default()
        }
    }

    /// A stalled end's probe ends the peer's wait; the peer's own look answers it.
    #[test]
    fn a_probe_is_answered_from_the_peers_wait() {
        let (mut client, mut server) = pair();
        let peer = std::thread::spawn(move || {
            let stopped = loop {
                if let Some(f) = server.peer_stopped() {
                    break f;
                }
                std::thread::sleep(Duration::from_millis(5));
            };
            assert!(matches!(stopped.cause, Cause::Timeout { .. }), "{stopped}");
            assert!(server.was_probed());
            match server.probe(&facts("server"), Duration::from_secs(2)) {
                ProbeAnswer::Answered(f) => assert_eq!(f.role, "client"),
                other => panic!("{other:?}"),
            }
        });
        match client.probe(&facts("client"), Duration::from_secs(2)) {
            ProbeAnswer::Answered(f) => assert_eq!(f.role, "server"),
            other => panic!("{other:?}"),
        }
        peer.join().unwrap();
    }

    /// A peer that reads nothing: silence within the wait, then a close.
    #[test]
    fn a_silent_or_closed_peer_is_told_apart() {
        let (mut client, server) = pair();
        let start = Instant::now();
        assert!(matches!(
            client.probe(&facts("client"), Duration::from_millis(200)),
            ProbeAnswer::Silent
        ));
        assert!(start.elapsed() < Duration::from_secs(1));
        drop(server);
        assert!(matches!(
            client.probe(&facts("client"), Duration::from_millis(500)),
            ProbeAnswer::Closed
        ));
    }

    /// A probe frame claiming more than a probe holds is refused before it is read.
    #[test]
    fn an_oversized_probe_is_refused() {
        let (mut client, mut server) = pair();
        let mut frame = PROBE_MAGIC.to_vec();
        frame.extend_from_slice(&(1u32 << 20).to_be_bytes());
        client.write_all(&frame).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        let f = server.peer_stopped().expect("the probe is seen");
        assert!(f.to_string().contains("claims 1048576 bytes"), "{f}");
    }

    #[test]
    fn connect_to_nothing_fails_fast() {
        let port = {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let err = connect_addr(
            SocketAddr::from(([127, 0, 0, 1], port)),
            Duration::from_secs(2),
        )
        .err()
        .expect("nothing listens");
        assert_eq!(err.step, Step::Connect);
        assert_eq!(err.cause, Cause::errno(libc::ECONNREFUSED));
    }

    fn busy_notice() -> PeerNotice {
        PeerNotice {
            role: "server".into(),
            message: "busy with a client from 192.168.77.2:41000".into(),
            code: crate::model::codes::SERVER_BUSY.clone(),
            summary: "the server is busy with a client from 192.168.77.2:41000".into(),
            evidence: Vec::new(),
            fix: String::new(),
            counters: None,
        }
    }

    /// While a run goes on, a second rdmactl client gets the busy notice at once (not its
    /// --timeout on the backlog); a client in ibv_rc_pingpong's format only the close.
    #[test]
    fn a_busy_server_answers_other_clients() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let busy = BusyAnswer::start(&listener, busy_notice()).expect("started");
        let dest = RcDest {
            lid: 0,
            qpn: 0x11,
            psn: 0x22,
            gid: crate::model::gid::Gid::ZERO,
        };
        let started = Instant::now();
        let mut rdmactl = connect_addr(
            SocketAddr::from(([127, 0, 0, 1], port)),
            Duration::from_secs(5),
        )
        .unwrap();
        rdmactl.send_offer(&dest).unwrap();
        let f = rdmactl.read_hello().unwrap_err();
        let Cause::PeerReported { notice } = f.cause else {
            panic!("{f:?}");
        };
        assert_eq!(notice.code, "server-busy");
        assert!(started.elapsed() < Duration::from_secs(2));
        let mut stock = connect_addr(
            SocketAddr::from(([127, 0, 0, 1], port)),
            Duration::from_secs(5),
        )
        .unwrap();
        stock.send_rc(&dest).unwrap();
        assert_eq!(stock.read_hello().unwrap_err().cause, Cause::PeerClosed);
        drop(busy);
        // Back to blocking accepts for the next run.
        let _c = connect_addr(
            SocketAddr::from(([127, 0, 0, 1], port)),
            Duration::from_secs(2),
        )
        .unwrap();
        accept_one(&listener, Duration::from_secs(2)).unwrap();
    }
}
