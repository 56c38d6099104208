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
    /// Binds `addr` (`HOST:PORT`, `[V6]:PORT`; `:PORT` is every IPv4 address).
    pub fn bind(addr: &str) -> Result<MetricsEndpoint> {
        let addr = match addr.strip_prefix(':') {
            Some(port) => format!("0.0.0.0:{port}"),
            None => addr.to_string(),
        };
        let server = tiny_http::Server::http(&addr).map_err(|e| {
            Error::Usage(format!(
                "--listen {addr}: cannot listen there: {e}; give a free port (`ss -ltnp` shows \
                 who holds it) or an address of this host"
            ))
        })?;
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
