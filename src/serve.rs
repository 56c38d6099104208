//! `rdmactl exporter --listen`: the HTTP endpoint, on tiny_http (a small blocking server,
//! no async runtime: one scrape every few seconds needs no more). `GET /metrics` answers
//! what the caller's closure returns; `/` points there; anything else is 404. Requests are
//! answered one at a time, so two scrapes never read sysfs at once.

use std::net::SocketAddr;

use crate::error::{Error, Result};

/// The exposition format's media type, as Prometheus asks for it.
const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// A listening endpoint, bound (so a port 0 has its real number) but not yet serving.
pub struct MetricsEndpoint {
    server: tiny_http::Server,
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
        let server = match listen_addr(addr) {
            Listen::Any(port) => tiny_http::Server::http(SocketAddr::from(([0u16; 8], port)))
                .or_else(|_| tiny_http::Server::http(SocketAddr::from(([0u8; 4], port))))
                .map_err(|e| fail(addr, &e))?,
            Listen::At(sa) => tiny_http::Server::http(sa).map_err(|e| fail(addr, &e))?,
            Listen::Name(name) => tiny_http::Server::http(name).map_err(|e| fail(addr, &e))?,
        };
        Ok(MetricsEndpoint { server })
    }

    /// The address actually bound.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.server.server_addr().to_ip()
    }

    /// Serves until the process is stopped. `scrape` builds the body of each `/metrics`
    /// answer; its error is a 500 with the error's text, which Prometheus shows as the
    /// target's last error (and `up` 0).
    pub fn serve(self, mut scrape: impl FnMut() -> Result<String>) -> Result<()> {
        for request in self.server.incoming_requests() {
            let path = request.url().split('?').next().unwrap_or("");
            let get = matches!(
                request.method(),
                tiny_http::Method::Get | tiny_http::Method::Head
            );
            let response = match (get, path) {
                (true, "/metrics") => match scrape() {
                    Ok(body) => text(200, body, CONTENT_TYPE),
                    Err(e) => text(500, format!("rdmactl exporter: {e}\n"), "text/plain"),
                },
                (true, "/") => text(
                    200,
                    "rdmactl exporter: the series are at /metrics\n".to_string(),
                    "text/plain",
                ),
                (false, _) => text(405, "only GET\n".to_string(), "text/plain"),
                _ => text(404, "not found: try /metrics\n".to_string(), "text/plain"),
            };
            // A client that went away is its own problem, not the exporter's.
            let _ = request.respond(response);
        }
        Ok(())
    }
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

fn text(
    code: u16,
    body: String,
    content_type: &str,
) -> tiny_http::Response<std::io::Cursor<Vec<u8>>> {
    let header = tiny_http::Header::from_bytes("Content-Type", content_type)
        .expect("a constant header is valid");
    tiny_http::Response::from_string(body)
        .with_status_code(code)
        .with_header(header)
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
