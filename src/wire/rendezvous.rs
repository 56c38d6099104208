//! `rdmactl fabric`'s control channel: each rank's TCP connection to rank 0. Frames are
//! `RDFB`, a 4-byte big-endian length and one JSON message of a known kind, parsed
//! strictly (unknown kinds and fields refused, a size limit, read deadlines): the port is
//! reachable from the network, and only ranks of the same run (the same token) are let in.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::model::fabric::{PairEnd, RankInfo};

pub const MAGIC: [u8; 4] = *b"RDFB";
/// A rank's report with a failure explanation and counters is a few KiB.
pub const MAX_BODY: usize = 1 << 20;
/// How often a rank says it is alive.
pub const HEARTBEAT: Duration = Duration::from_secs(2);
/// A rank silent this long, its connection open, is hung: a stalled emulator or a busy
/// host delays a heartbeat by a second or two, never by seven of them.
pub const HUNG_AFTER: Duration = Duration::from_secs(15);

/// What a rank sends rank 0.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub enum ToLeader {
    Join {
        token: String,
        size: u32,
        info: Box<RankInfo>,
    },
    /// The server end of a pair listens on `port` (its pair port, or the next free one when
    /// another process, such as another fabric run on this host, holds that): its partner
    /// may connect there.
    Ready {
        round: u32,
        a: u32,
        b: u32,
        port: u16,
    },
    /// Sent every `HEARTBEAT`, during pair tests too: a rank whose connection stays open
    /// but that sends nothing for `HUNG_AFTER` is hung, not gone.
    Alive,
    /// This rank caught SIGINT (2) or SIGTERM (15): rank 0 stops the run and reports.
    Interrupted { signal: i32 },
    Result {
        round: u32,
        a: u32,
        b: u32,
        /// Which end reports: the client's report carries both ends' counters.
        client: bool,
        end: Box<PairEnd>,
    },
}

/// What rank 0 sends a rank.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub enum ToRank {
    Welcome,
    Refused {
        reason: String,
    },
    /// Be the server of pair (a, b) on your pair port.
    Serve {
        round: u32,
        a: u32,
        b: u32,
        test: PairTest,
    },
    /// Connect to your partner's pair server.
    Connect {
        round: u32,
        a: u32,
        b: u32,
        host: String,
        port: u16,
        test: PairTest,
    },
    /// Stop the pair test (a, b) of `round` now: its partner is hung or gone.
    Stop {
        round: u32,
        a: u32,
        b: u32,
    },
    /// The run is over; `exit` is its status, so every rank exits alike under srun.
    Done {
        exit: u8,
    },
    /// Rank 0 is alive, sent every `HEARTBEAT` from the moment a rank is welcomed: a rank
    /// that hears nothing from rank 0 for `HUNG_AFTER` names rank 0 hung and exits.
    Alive,
}

/// One pair test's parameters, the same for both ends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PairTest {
    pub size: u32,
    pub iters: u32,
    /// pingpong's per-step --timeout.
    pub step_timeout: f64,
    /// The whole test: the pingpong is killed after it.
    pub deadline: f64,
    /// `-g`: a number or `auto`.
    pub gid_index: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireError(pub String);

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

pub fn encode<T: Serialize>(msg: &T) -> Vec<u8> {
    let body = serde_json::to_vec(msg).unwrap_or_default();
    let mut out = Vec::with_capacity(8 + body.len());
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&(body.len() as u32).to_be_bytes());
    out.extend_from_slice(&body);
    out
}

/// The body length a frame header announces, checked.
pub fn header(bytes: &[u8; 8]) -> Result<usize, WireError> {
    if bytes[..4] != MAGIC {
        return Err(WireError(format!(
            "not an rdmactl fabric frame (starts {:02x?}): another program on this port, or a rank of another rdmactl version",
            &bytes[..4]
        )));
    }
    let len = u32::from_be_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]) as usize;
    if len > MAX_BODY {
        return Err(WireError(format!(
            "frame of {len} bytes is above the {MAX_BODY}-byte limit"
        )));
    }
    Ok(len)
}

pub fn body<T: for<'de> Deserialize<'de>>(body: &[u8]) -> Result<T, WireError> {
    serde_json::from_slice(body).map_err(|e| WireError(format!("malformed message: {e}")))
}

/// One whole frame from a byte slice: the message and the bytes it used (the reader's
/// `header` and `body` in one call, for the parser's tests).
#[cfg(test)]
pub fn decode<T: for<'de> Deserialize<'de>>(bytes: &[u8]) -> Result<(T, usize), WireError> {
    let head: &[u8; 8] = bytes
        .get(..8)
        .and_then(|h| h.try_into().ok())
        .ok_or_else(|| WireError("short frame header".into()))?;
    let len = header(head)?;
    let b = bytes
        .get(8..8 + len)
        .ok_or_else(|| WireError(format!("frame body cut short: {len} bytes announced")))?;
    Ok((body(b)?, 8 + len))
}

/// What one wait on the control channel gave.
#[derive(Debug, Clone, PartialEq)]
pub enum Polled<T> {
    Msg(T),
    /// The peer closed the connection.
    Closed,
    /// Nothing arrived within the wait (the connection is open).
    Idle,
}

/// One end of the control channel. Reads are buffered (one `read` takes every frame that
/// has arrived) and the socket's timeouts are set only when they change: rank 0 of a
/// 4096-rank run handles tens of millions of frames, and a system call saved per frame is
/// minutes saved.
pub struct ControlChannel {
    stream: TcpStream,
    pub peer: SocketAddr,
    /// Bytes read but not yet taken as frames, from `rpos` on.
    rbuf: Vec<u8>,
    rpos: usize,
    /// The timeouts last set on the socket (None: never set).
    read_timeout: Option<Option<Duration>>,
    write_timeout: Option<Duration>,
}

impl ControlChannel {
    pub fn new(stream: TcpStream) -> std::io::Result<ControlChannel> {
        let peer = stream.peer_addr()?;
        let _ = stream.set_nodelay(true);
        Ok(ControlChannel {
            stream,
            peer,
            rbuf: Vec::new(),
            rpos: 0,
            read_timeout: None,
            write_timeout: None,
        })
    }

    /// A second handle on the same connection (one thread reads, another writes); the
    /// bytes this one read ahead go with it, so no frame is lost between the two.
    pub fn try_clone(&self) -> std::io::Result<ControlChannel> {
        Ok(ControlChannel {
            stream: self.stream.try_clone()?,
            peer: self.peer,
            rbuf: self.rbuf[self.rpos..].to_vec(),
            rpos: 0,
            read_timeout: None,
            write_timeout: None,
        })
    }

    pub fn send<T: Serialize>(&mut self, msg: &T, timeout: Duration) -> Result<(), WireError> {
        let timeout = timeout.max(Duration::from_millis(1));
        if self.write_timeout != Some(timeout) {
            let _ = self.stream.set_write_timeout(Some(timeout));
            self.write_timeout = Some(timeout);
        }
        self.stream
            .write_all(&encode(msg))
            .map_err(|e| WireError(format!("sending to {}: {e}", self.peer)))
    }

    /// Reads one message; `None` as the timeout waits for ever. A peer that closes the
    /// connection is `Ok(None)`.
    pub fn recv<T: for<'de> Deserialize<'de>>(
        &mut self,
        timeout: Option<Duration>,
    ) -> Result<Option<T>, WireError> {
        match self.poll(timeout)? {
            Polled::Msg(m) => Ok(Some(m)),
            Polled::Closed => Ok(None),
            Polled::Idle => Err(WireError(format!(
                "{} sent nothing for {:.0} s",
                self.peer,
                timeout.unwrap_or_default().as_secs_f64()
            ))),
        }
    }

    /// Waits up to `timeout` (None: for ever) for one message.
    pub fn poll<T: for<'de> Deserialize<'de>>(
        &mut self,
        timeout: Option<Duration>,
    ) -> Result<Polled<T>, WireError> {
        match self.fill(8, timeout.map(|t| t.max(Duration::from_millis(1))))? {
            Filled::Enough => {}
            Filled::Closed => return Ok(Polled::Closed),
            Filled::Idle => return Ok(Polled::Idle),
        }
        let head: [u8; 8] = self.rbuf[self.rpos..self.rpos + 8]
            .try_into()
            .expect("8 bytes");
        let len = header(&head)?;
        // The body follows its header at once: a stalled one is cut off.
        match self.fill(8 + len, Some(Duration::from_secs(10))) {
            Ok(Filled::Enough) => {}
            Ok(_) => {
                return Err(WireError(format!(
                    "reading a {len}-byte message from {}: cut short",
                    self.peer
                )))
            }
            Err(e) => {
                return Err(WireError(format!(
                    "reading a {len}-byte message from {}: {e}",
                    self.peer
                )))
            }
        }
        let start = self.rpos + 8;
        let msg = body(&self.rbuf[start..start + len]);
        self.rpos = start + len;
        if self.rpos == self.rbuf.len() {
            self.rbuf.clear();
            self.rpos = 0;
        }
        msg.map(Polled::Msg)
    }

    /// Reads until `want` unread bytes are buffered.
    fn fill(&mut self, want: usize, timeout: Option<Duration>) -> Result<Filled, WireError> {
        if self.rpos > 0 && self.rbuf.len() - self.rpos < want {
            self.rbuf.drain(..self.rpos);
            self.rpos = 0;
        }
        while self.rbuf.len() - self.rpos < want {
            if self.read_timeout != Some(timeout) {
                let _ = self.stream.set_read_timeout(timeout);
                self.read_timeout = Some(timeout);
            }
            let mut chunk = [0u8; 2048];
            match self.stream.read(&mut chunk) {
                Ok(0) => return Ok(Filled::Closed),
                Ok(n) => self.rbuf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                    return Ok(Filled::Closed)
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    return Ok(Filled::Idle)
                }
                Err(e) => return Err(WireError(format!("reading from {}: {e}", self.peer))),
            }
        }
        Ok(Filled::Enough)
    }

    pub fn shutdown(&self) {
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
    }
}

enum Filled {
    Enough,
    Closed,
    Idle,
}

/// Rank 0's listener on every address (IPv6 and IPv4 where the host has both).
pub fn listen(port: u16) -> std::io::Result<TcpListener> {
    TcpListener::bind(("::", port)).or_else(|_| TcpListener::bind(("0.0.0.0", port)))
}

/// Connects to rank 0, retrying until `deadline`: rank 0 may start after the others.
pub fn connect(host: &str, port: u16, deadline: Instant) -> Result<ControlChannel, WireError> {
    let mut last = String::from("no address");
    loop {
        match (host, port).to_socket_addrs() {
            Ok(addrs) => {
                for addr in addrs {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        break;
                    }
                    match TcpStream::connect_timeout(&addr, left.min(Duration::from_secs(5))) {
                        Ok(s) => {
                            return ControlChannel::new(s)
                                .map_err(|e| WireError(format!("{host}:{port}: {e}")))
                        }
                        Err(e) => last = format!("{addr}: {e}"),
                    }
                }
            }
            Err(e) => last = format!("cannot resolve '{host}': {e}"),
        }
        if Instant::now() >= deadline || crate::interrupt::caught().is_some() {
            return Err(WireError(format!("no rank 0 at {host}:{port} ({last})")));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fabric::child::Verbatim;

    fn info() -> RankInfo {
        RankInfo {
            rank: 3,
            host: "h3".into(),
            device: "rxe3".into(),
            port: 1,
            version: "0.1.0".into(),
            tcp_host: "10.0.0.3".into(),
            pair_port: 19003,
            ..RankInfo::default()
        }
    }

    fn samples() -> Vec<Vec<u8>> {
        let test = PairTest {
            size: 4096,
            iters: 200,
            step_timeout: 5.0,
            deadline: 30.0,
            gid_index: "auto".into(),
        };
        vec![
            encode(&ToLeader::Join {
                token: "slurm-42".into(),
                size: 4,
                info: Box::new(info()),
            }),
            encode(&ToLeader::Ready {
                round: 1,
                a: 0,
                b: 3,
                port: 19000,
            }),
            encode(&ToLeader::Alive),
            encode(&ToLeader::Interrupted { signal: 2 }),
            encode(&ToRank::Stop {
                round: 1,
                a: 0,
                b: 3,
            }),
            encode(&ToLeader::Result {
                round: 1,
                a: 0,
                b: 3,
                client: true,
                end: Box::new(PairEnd {
                    ok: false,
                    failure: Some(Verbatim::new(
                        serde_json::json!({"message": "x", "explanation": {"code": "retry-exceeded"}}),
                    )),
                    ..PairEnd::default()
                }),
            }),
            encode(&ToRank::Connect {
                round: 2,
                a: 1,
                b: 2,
                host: "10.0.0.1".into(),
                port: 19001,
                test: test.clone(),
            }),
            encode(&ToRank::Serve {
                round: 2,
                a: 1,
                b: 2,
                test,
            }),
            encode(&ToRank::Done { exit: 1 }),
            encode(&ToRank::Alive),
        ]
    }

    #[test]
    fn messages_round_trip() {
        let join = samples().remove(0);
        let (m, used): (ToLeader, usize) = decode(&join).unwrap();
        assert_eq!(used, join.len());
        assert!(
            matches!(m, ToLeader::Join { size: 4, ref info, .. } if **info == super::tests::info())
        );
    }

    #[test]
    fn strict_parsing() {
        // An unknown field, an unknown kind, a wrong magic, an oversized length.
        let frame = |body: &str| {
            let mut v = MAGIC.to_vec();
            v.extend_from_slice(&(body.len() as u32).to_be_bytes());
            v.extend_from_slice(body.as_bytes());
            v
        };
        assert!(decode::<ToRank>(&frame(r#"{"done":{"exit":0,"extra":1}}"#)).is_err());
        assert!(decode::<ToRank>(&frame(r#"{"reboot":{}}"#)).is_err());
        assert!(decode::<ToRank>(&frame(r#"{"done":{"exit":0}}"#)).is_ok());
        let mut bad = frame(r#"{"done":{"exit":0}}"#);
        bad[0] = b'X';
        assert!(decode::<ToRank>(&bad)
            .unwrap_err()
            .0
            .contains("not an rdmactl fabric frame"));
        let mut big = MAGIC.to_vec();
        big.extend_from_slice(&(MAX_BODY as u32 + 1).to_be_bytes());
        assert!(decode::<ToRank>(&big).unwrap_err().0.contains("limit"));
        // A rank message is not a rank-0 message.
        assert!(decode::<ToLeader>(&frame(r#"{"done":{"exit":0}}"#)).is_err());
    }

    /// A million random and mutated frames: never a panic, and every answer is prompt
    /// (the decoder is a pure function of the bytes: no loop waits on anything).
    #[test]
    fn a_million_mutated_frames_never_panic() {
        let seeds = samples();
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let start = Instant::now();
        let mut accepted = 0u32;
        for i in 0..1_000_000u32 {
            let mut bytes = if i % 4 == 0 {
                let len = (next() % 96) as usize;
                let mut v: Vec<u8> = (0..len).map(|_| next() as u8).collect();
                if i % 8 == 0 && v.len() >= 4 {
                    v[..4].copy_from_slice(&MAGIC);
                }
                v
            } else {
                seeds[(next() % seeds.len() as u64) as usize].clone()
            };
            let flips = 1 + next() % 4;
            for _ in 0..flips {
                if bytes.is_empty() {
                    break;
                }
                let at = (next() % bytes.len() as u64) as usize;
                match next() % 4 {
                    0 => bytes[at] = next() as u8,
                    1 => bytes.truncate(at),
                    2 => bytes.insert(at, next() as u8),
                    _ => bytes[at] ^= 1 << (next() % 8),
                }
            }
            if decode::<ToLeader>(&bytes).is_ok() {
                accepted += 1;
            }
            let _ = decode::<ToRank>(&bytes);
        }
        // Mutations that hit only string contents still parse: the parser is exercised
        // on both sides of the line.
        assert!(accepted > 0);
        assert!(start.elapsed() < Duration::from_secs(300));
    }

    #[test]
    fn channel_over_loopback() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let t = std::thread::spawn(move || {
            let (s, _) = l.accept().unwrap();
            let mut c = ControlChannel::new(s).unwrap();
            let m: Option<ToLeader> = c.recv(Some(Duration::from_secs(5))).unwrap();
            assert!(matches!(m, Some(ToLeader::Ready { round: 7, .. })));
            c.send(&ToRank::Done { exit: 0 }, Duration::from_secs(5))
                .unwrap();
            // Closing is an end, not an error.
        });
        let mut c = connect("127.0.0.1", port, Instant::now() + Duration::from_secs(5)).unwrap();
        c.send(
            &ToLeader::Ready {
                round: 7,
                a: 0,
                b: 1,
                port: 19000,
            },
            Duration::from_secs(5),
        )
        .unwrap();
        let m: Option<ToRank> = c.recv(Some(Duration::from_secs(5))).unwrap();
        assert_eq!(m, Some(ToRank::Done { exit: 0 }));
        t.join().unwrap();
        let m: Option<ToRank> = c.recv(Some(Duration::from_secs(5))).unwrap();
        assert_eq!(m, None);
    }

    /// Frames sent back to back arrive in one read: each is taken in turn, the bytes read
    /// ahead go with a clone (the join is read before the reader is split off), silence is
    /// `Idle` and a close is `Closed`.
    #[test]
    fn frames_read_ahead_are_kept_across_a_clone() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let mut c = connect("127.0.0.1", port, Instant::now() + Duration::from_secs(5)).unwrap();
        let (s, _) = l.accept().unwrap();
        let mut server = ControlChannel::new(s).unwrap();
        let mut burst = Vec::new();
        for round in 1..=3 {
            burst.extend(encode(&ToLeader::Ready {
                round,
                a: 0,
                b: 1,
                port: 19000,
            }));
        }
        burst.extend(encode(&ToLeader::Alive));
        c.stream.write_all(&burst).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let first: Polled<ToLeader> = server.poll(Some(Duration::from_secs(5))).unwrap();
        assert!(matches!(
            first,
            Polled::Msg(ToLeader::Ready { round: 1, .. })
        ));
        let mut reader = server.try_clone().unwrap();
        for round in 2..=3 {
            let m: Polled<ToLeader> = reader.poll(Some(Duration::from_secs(5))).unwrap();
            assert_eq!(
                m,
                Polled::Msg(ToLeader::Ready {
                    round,
                    a: 0,
                    b: 1,
                    port: 19000
                })
            );
        }
        let m: Polled<ToLeader> = reader.poll(Some(Duration::from_secs(5))).unwrap();
        assert_eq!(m, Polled::Msg(ToLeader::Alive));
        let m: Polled<ToLeader> = reader.poll(Some(Duration::from_millis(100))).unwrap();
        assert_eq!(m, Polled::Idle);
        c.shutdown();
        let m: Polled<ToLeader> = reader.poll(Some(Duration::from_secs(5))).unwrap();
        assert_eq!(m, Polled::Closed);
    }

    #[test]
    fn silence_is_an_error_with_the_peer_named() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let _keep = std::thread::spawn(move || {
            let (_s, _) = l.accept().unwrap();
            std::thread::sleep(Duration::from_secs(2));
        });
        let mut c = connect("127.0.0.1", port, Instant::now() + Duration::from_secs(5)).unwrap();
        let e = c
            .recv::<ToRank>(Some(Duration::from_millis(200)))
            .unwrap_err();
        assert!(e.0.contains("sent nothing"), "{e}");
    }
}
