//! `rdmactl exporter --listen`: the HTTP endpoint, on std's TCP sockets (one page, one
//! method: no HTTP library needed, and none bounded its threads: tiny_http gave every
//! connection a thread with no timeout, so 1,000 idle connections made 1,003 threads).
//! `GET /metrics` answers what the caller's closure returns; `/` points there; anything
//! else is 404. The accepting thread hands connections to a fixed pool of `WORKERS`
//! through a queue of `QUEUE`; a connection that finds the queue full is answered 503 at
//! once, and one that has not sent its request head within `IDLE` is closed. Every answer
//! closes its connection (Prometheus reconnects per scrape at no cost worth a thread).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// The exposition format's media type, as Prometheus asks for it.
const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Connections served at once: a few Prometheus servers (an HA pair, a curl) scraping
/// together; each scrape's reads have their own deadline (`gather::deadline`).
const WORKERS: usize = 4;
/// Connections accepted and waiting for a worker; past it, 503 at once.
const QUEUE: usize = 16;
/// Time a client has to send its request head after a worker takes its connection.
const IDLE: Duration = Duration::from_secs(5);
/// Time an answer may take to leave (a client that stops reading).
const WRITE: Duration = Duration::from_secs(10);
/// The longest request head read: a GET of /metrics is a few hundred bytes.
const HEAD_MAX: usize = 8192;

/// A listening endpoint, bound (so a port 0 has its real number) but not yet serving.
pub struct MetricsEndpoint {
    listener: TcpListener,
}

impl MetricsEndpoint {
    /// Binds `addr`: `HOST:PORT`, `[V6]:PORT`, a bare `V6:PORT` (`::1:19181`), or `:PORT`
    /// for every address, IPv6 and IPv4 (IPv4 alone where the host has no IPv6).
    pub fn bind(addr: &str) -> Result<MetricsEndpoint> {
        let fail = |shown: &str, e: &dyn std::fmt::Display| {
            Error::Usage(format!(
                "--listen {shown}: cannot listen there: {e}; give a free port (`ss -ltnp` shows \
                 who holds it) or an address of this host"
            ))
        };
        let listener = match listen_addr(addr) {
            Listen::Any(port) => TcpListener::bind(SocketAddr::from(([0u16; 8], port)))
                .or_else(|_| TcpListener::bind(SocketAddr::from(([0u8; 4], port))))
                .map_err(|e| fail(addr, &e))?,
            Listen::At(sa) => TcpListener::bind(sa).map_err(|e| fail(addr, &e))?,
            Listen::Name(name) => TcpListener::bind(name).map_err(|e| fail(addr, &e))?,
        };
        Ok(MetricsEndpoint { listener })
    }

    /// The address actually bound.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.listener.local_addr().ok()
    }

    /// Serves until the process is stopped. `scrape` builds the body of each `/metrics`
    /// answer, on up to `WORKERS` threads at once; its error is a 500 with the error's
    /// text, which Prometheus shows as the target's last error (and `up` 0).
    pub fn serve(self, scrape: impl Fn() -> Result<String> + Sync) -> Result<()> {
        let (tx, rx) = mpsc::sync_channel::<TcpStream>(QUEUE);
        let rx = Mutex::new(rx);
        std::thread::scope(|s| {
            for _ in 0..WORKERS {
                s.spawn(|| loop {
                    // The lock is held only to take the next connection.
                    let next = rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
                    let Ok(stream) = next else { return };
                    answer(stream, &scrape);
                });
            }
            for stream in self.listener.incoming() {
                // A connection reset before it was accepted is the client's problem.
                let Ok(stream) = stream else { continue };
                if let Err(mpsc::TrySendError::Full(stream)) = tx.try_send(stream) {
                    busy(stream);
                }
            }
            drop(tx);
        });
        Ok(())
    }
}

/// A connection that found every worker and the queue taken: 503 and closed, written by
/// the accepting thread with a short write limit so a stalled client cannot hold it.
fn busy(mut stream: TcpStream) {
    let _ = stream.set_write_timeout(Some(Duration::from_millis(200)));
    let _ = stream.write_all(&response(
        503,
        "text/plain",
        b"rdmactl exporter: busy (every worker is answering); try again\n",
        true,
    ));
}

/// Reads one request head and answers it; a client that sends nothing within `IDLE`, or
/// more than `HEAD_MAX` before the head ends, is closed unanswered.
fn answer(mut stream: TcpStream, scrape: &(impl Fn() -> Result<String> + Sync)) {
    let Some(head) = read_head(&mut stream) else {
        return;
    };
    let mut words = head.split(|b| *b == b' ');
    let method = words.next().unwrap_or_default();
    let target = words.next().unwrap_or_default();
    let path = target.split(|b| *b == b'?').next().unwrap_or_default();
    let get = method == b"GET" || method == b"HEAD";
    let (code, kind, body) = match (get, path) {
        (true, b"/metrics") => match scrape() {
            Ok(body) => (200, CONTENT_TYPE, body),
            Err(e) => (500, "text/plain", format!("rdmactl exporter: {e}\n")),
        },
        (true, b"/") => (
            200,
            "text/plain",
            "rdmactl exporter: the series are at /metrics\n".to_string(),
        ),
        (false, _) => (405, "text/plain", "only GET\n".to_string()),
        _ => (404, "text/plain", "not found: try /metrics\n".to_string()),
    };
    let _ = stream.set_write_timeout(Some(WRITE));
    // A client that went away is its own problem, not the exporter's.
    let _ = stream.write_all(&response(code, kind, body.as_bytes(), method != b"HEAD"));
    let _ = stream.flush();
}

/// The request line of a request whose head arrived whole within `IDLE`.
fn read_head(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let start = Instant::now();
    let mut head = Vec::with_capacity(512);
    let mut chunk = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && !head.windows(2).any(|w| w == b"\n\n") {
        // The limit is on the whole head, so a client trickling a byte at a time is closed
        // as surely as a silent one.
        let left = IDLE.checked_sub(start.elapsed()).filter(|d| !d.is_zero())?;
        stream.set_read_timeout(Some(left)).ok()?;
        let n = stream.read(&mut chunk).ok()?;
        if n == 0 || head.len() + n > HEAD_MAX {
            return None;
        }
        head.extend_from_slice(&chunk[..n]);
    }
    let line_end = head.iter().position(|b| *b == b'\n').unwrap_or(head.len());
    let mut line = head[..line_end].to_vec();
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    Some(line)
}

/// An HTTP/1.1 answer that closes its connection.
fn response(code: u16, content_type: &str, body: &[u8], with_body: bool) -> Vec<u8> {
    let reason = match code {
        200 => "OK",
        404 => "Not Found",
        405 => "Method Not Allowed",
        500 => "Internal Server Error",
        _ => "Service Unavailable",
    };
    let mut out = format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if with_body {
        out.extend_from_slice(body);
    }
    out
}

/// Where `--listen` asks to listen.
#[derive(Debug, PartialEq, Eq)]
enum Listen<'a> {
    /// `:PORT`: every address.
    Any(u16),
    At(SocketAddr),
    /// A host name and port, for the resolver.
    Name(&'a str),
}

/// `--listen`'s text, read as an address: a bare IPv6 address before the last `:` is
/// taken whole (`::1:19181` is `[::1]:19181`), never cut at its first colon.
fn listen_addr(addr: &str) -> Listen<'_> {
    if let Ok(sa) = addr.parse::<SocketAddr>() {
        return Listen::At(sa);
    }
    if let Some(port) = addr.strip_prefix(':').and_then(|p| p.parse().ok()) {
        return Listen::Any(port);
    }
    if let Some((host, port)) = addr.rsplit_once(':') {
        if let (Ok(ip), Ok(port)) = (host.parse::<std::net::IpAddr>(), port.parse::<u16>()) {
            return Listen::At(SocketAddr::new(ip, port));
        }
    }
    Listen::Name(addr)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `::1:19181` was cut at its first colon into `0.0.0.0::1:19181` (issue 39).
    #[test]
    fn listen_addresses_read_whole() {
        assert_eq!(listen_addr(":19181"), Listen::Any(19181));
        assert_eq!(
            listen_addr("::1:19181"),
            Listen::At("[::1]:19181".parse().unwrap())
        );
        assert_eq!(
            listen_addr("[::1]:19181"),
            Listen::At("[::1]:19181".parse().unwrap())
        );
        assert_eq!(
            listen_addr("127.0.0.1:9"),
            Listen::At("127.0.0.1:9".parse().unwrap())
        );
        assert_eq!(listen_addr("localhost:9"), Listen::Name("localhost:9"));
    }
}
