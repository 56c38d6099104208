//! Where rank 0 is: `--rendezvous HOST:PORT`, a file in `--rendezvous-dir` that rank 0
//! writes once it listens, or the launcher's default; and rank 0's listener.

use std::net::TcpListener;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::cli::FabricArgs;
use crate::error::{Error, Result};
use crate::gather::endpoint::hostname;
use crate::wire::rendezvous as wire;

/// The port rank 0 listens on when only its host is known.
pub const DEFAULT_RENDEZVOUS_PORT: u16 = 18514;

/// Rank 0 binds before it opens anything, so the others can start connecting: its
/// listener and the address its own agent connects to.
pub fn listen(
    args: &FabricArgs,
    token: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(TcpListener, (String, u16))> {
    let (listener, port) = match (&args.rendezvous, &args.rendezvous_dir) {
        (Some(r), _) => {
            let (_, port) = split_host_port(r)?;
            let l = wire::listen(port).map_err(|e| {
                Error::Usage(format!(
                    "rank 0 cannot listen on TCP port {port} (--rendezvous {r}): {e}{}",
                    holder(port)
                ))
            })?;
            (l, port)
        }
        (None, Some(dir)) => {
            let l = wire::listen(0)
                .map_err(|e| Error::Usage(format!("rank 0 cannot listen on a TCP port: {e}")))?;
            let port = l.local_addr().map(|a| a.port()).unwrap_or(0);
            publish_address(dir, token, port)?;
            (l, port)
        }
        (None, None) => {
            let (_, port) = default_rendezvous(env)?;
            let l = wire::listen(port).map_err(|e| {
                Error::Usage(format!(
                    "rank 0 cannot listen on TCP port {port}: {e}{}",
                    holder(port)
                ))
            })?;
            (l, port)
        }
    };
    Ok((listener, ("127.0.0.1".to_string(), port)))
}

/// Where the other ranks find rank 0.
pub fn rank0(
    args: &FabricArgs,
    token: &str,
    env: &dyn Fn(&str) -> Option<String>,
    deadline: Instant,
) -> Result<(String, u16)> {
    match (&args.rendezvous, &args.rendezvous_dir) {
        (Some(r), _) => split_host_port(r),
        (None, Some(dir)) => read_address(dir, token, deadline),
        (None, None) => default_rendezvous(env),
    }
}

fn holder(port: u16) -> String {
    match crate::gather::procfs::port_holders(port).first() {
        Some((pid, name)) => format!(" ({name}, pid {pid}, listens there)"),
        None => String::new(),
    }
}

fn split_host_port(s: &str) -> Result<(String, u16)> {
    let bad = || {
        Error::Usage(format!(
            "--rendezvous '{s}': give HOST:PORT (IPv6: [ADDR]:PORT)"
        ))
    };
    let (host, port) = s.rsplit_once(':').ok_or_else(bad)?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let port: u16 = port.parse().map_err(|_| bad())?;
    if host.is_empty() || port == 0 {
        return Err(bad());
    }
    Ok((host.to_string(), port))
}

fn default_rendezvous(env: &dyn Fn(&str) -> Option<String>) -> Result<(String, u16)> {
    crate::gather::placement::default_rendezvous(env, DEFAULT_RENDEZVOUS_PORT).ok_or_else(|| {
        Error::Usage(
            "no rendezvous: give --rendezvous HOST:PORT (rank 0's host) or --rendezvous-dir DIR, or set MASTER_ADDR (and MASTER_PORT); under Slurm the first host of the job is the default"
                .into(),
        )
    })
}

fn address_file(dir: &Path, token: &str) -> std::path::PathBuf {
    let safe: String = token
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    dir.join(format!("rdmactl-fabric-{safe}.addr"))
}

/// Rank 0's host name and port, written whole (a rename) so no rank reads half a file.
fn publish_address(dir: &Path, token: &str, port: u16) -> Result<()> {
    let file = address_file(dir, token);
    let tmp = file.with_extension("tmp");
    let host = hostname();
    std::fs::write(&tmp, format!("{host} {port}\n"))
        .and_then(|_| std::fs::rename(&tmp, &file))
        .map_err(|e| Error::Io {
            path: file.clone(),
            source: e,
        })
}

fn read_address(dir: &Path, token: &str, deadline: Instant) -> Result<(String, u16)> {
    let file = address_file(dir, token);
    loop {
        if let Ok(text) = std::fs::read_to_string(&file) {
            let mut parts = text.split_whitespace();
            if let (Some(h), Some(p)) = (parts.next(), parts.next().and_then(|p| p.parse().ok())) {
                return Ok((h.to_string(), p));
            }
        }
        if Instant::now() >= deadline || crate::interrupt::caught().is_some() {
            return Err(Error::Failed(format!(
                "rank 0 never wrote {} (--join-timeout): is rank 0 running, with the same --token and --rendezvous-dir?",
                file.display()
            )));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rendezvous_addresses_parse() {
        assert_eq!(split_host_port("h0:18514").unwrap(), ("h0".into(), 18514));
        assert_eq!(
            split_host_port("[fd00::1]:5").unwrap(),
            ("fd00::1".into(), 5)
        );
        assert!(split_host_port("h0").is_err());
        assert!(split_host_port("h0:0").is_err());
        assert!(split_host_port(":5").is_err());
    }
}
