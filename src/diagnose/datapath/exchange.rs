//! The TCP exchange before the QP: the listening port, the connect and the exchange itself.

use crate::diagnose::gidselect::type_name;
use crate::model::codes;
use crate::model::diagnostic::{Diagnostic, Seen, Source};
use crate::model::errno::errno_name;
use crate::model::facts::Facts;
use crate::model::failure::{Cause, Failure};

use super::gid::{gid_family_word, local_gid_words};
use super::{generic, peer_ip, seconds, Builder};

/// The server's TCP port is taken. Nothing about GIDs or the peer applies: no device was
/// needed to find this out.
pub(super) fn port_in_use(failure: &Failure, ctx: &Facts) -> Diagnostic {
    let bind = failure.context.bind_addr.as_deref();
    let port = bind
        .and_then(|a| a.parse::<std::net::SocketAddr>().ok())
        .map(|a| a.port());
    let which = port.map_or("the TCP port".to_string(), |p| format!("TCP port {p}"));
    let holders: Vec<String> = ctx
        .port_holders
        .iter()
        .map(|(pid, name)| format!("{name} (pid {pid})"))
        .collect();
    let who = if holders.is_empty() {
        "another process".to_string()
    } else {
        holders.join(" and ")
    };
    let mut x = Diagnostic::explanation(
        codes::PORT_IN_USE,
        format!("{who} already listens on {which}: a server still running, or another tool on that port"),
        format!(
            "stop {}, or give both ends another port with -p{}",
            if holders.is_empty() { "the other server" } else { "it" },
            match (port, holders.is_empty()) {
                (Some(p), true) => format!(" (`ss -ltnp 'sport = :{p}'` names the process)"),
                _ => String::new(),
            }
        ),
    );
    x.evidence.push(Seen::new(
        Source::Failure,
        format!("bind {}: EADDRINUSE", bind.unwrap_or("?")),
    ));
    for (pid, name) in &ctx.port_holders {
        x.evidence.push(Seen::new(
            Source::Host,
            format!(
                "/proc/{pid}/fd holds the listening socket of {} ({name})",
                which
            ),
        ));
    }
    x
}

/// The TCP connection of the out-of-band exchange.
pub(super) fn oob_connect(b: Builder, cause: &Cause) -> Diagnostic {
    let peer = peer_ip(b.ctx)
        .map(|p| p.to_string())
        .unwrap_or_else(|| "the server".into());
    let seconds = |ms: &u64| seconds(*ms);
    match cause {
        Cause::Errno { errno: e, .. } if *e == libc::ECONNREFUSED => b.done(
            codes::NO_LISTENER,
            format!("nothing listens on {peer} at that TCP port: the server is not running (yet), already finished, or uses another -p"),
            vec![Seen::new(Source::Failure, format!("{peer} answered the TCP connection with a reset (ECONNREFUSED)"))],
            "start the server first (rdmactl pingpong -d DEV -g N, or ibv_rc_pingpong and --compat rc_pingpong here), and give both ends the same -p".into(),
            false,
        ),
        Cause::Timeout { waited_ms, .. } => {
            let mut ev = vec![Seen::new(Source::Failure, format!(
                "no answer to the TCP connection within {} s",
                seconds(waited_ms)
            ))];
            if let Some(s) = b.ctx.route.as_ref().and_then(|r| r.neighbour_state.clone()) {
                ev.push(Seen::new(Source::Route, format!("neighbour {peer}: {s}")));
            }
            b.done(
                codes::PEER_SILENT,
                format!("{peer} does not answer: the host is down, the address is wrong, or a firewall drops the port"),
                ev,
                format!("check the address and that the server runs there (ping {peer}; ss -ltn on the server)"),
                false,
            )
        }
        Cause::Errno { errno: e, .. } if *e == libc::ENETUNREACH || *e == libc::EHOSTUNREACH => {
            let seen = Seen::new(Source::Failure, format!("connect: {}", errno_name(*e)));
            super::route::no_route(b, &peer.to_string(), None, vec![seen], false)
        }
        _ => generic(b),
    }
}

/// Reading or writing the out-of-band messages.
pub(super) fn oob_exchange(b: Builder, cause: &Cause) -> Diagnostic {
    let seconds = |ms: &u64| seconds(*ms);
    match cause {
        Cause::PeerClosed => {
            let local = &b.ctx.local;
            let fix = match local.gid_now().filter(|g| !g.is_zero()) {
                Some(g) => format!(
                    "look at the peer's output. An ibv_rc_pingpong server moves its QP to RTR before it answers, so one whose GID does not fit this end's ({}) stops there: run it with the index of its {} {} GID (`rdmactl gids` there lists them)",
                    local_gid_words(local),
                    gid_family_word(&g),
                    type_name(local.type_now().as_ref())
                ),
                None => "look at the peer's output and rerun it".into(),
            };
            b.done(
                codes::PEER_CLOSED,
                "the peer closed the out-of-band connection: it failed on its side (its output says why), or its process was killed".into(),
                vec![],
                fix,
                true,
            )
        }
        Cause::Timeout { waited_ms, .. } => b.done(
            codes::PEER_STOPPED,
            format!("the peer sent nothing for {} s: it is stuck or gone, or it is not rdmactl or ibv_rc_pingpong", seconds(waited_ms)),
            vec![],
            "check the peer process; give both ends the same --timeout".into(),
            false,
        ),
        Cause::Invalid { what } => b.done(
            codes::BAD_HANDSHAKE,
            format!("the peer's handshake is not one rdmactl understands: {what}"),
            vec![],
            "point it at an rdmactl pingpong or ibv_rc_pingpong on this port; against a stock ibv_rc_pingpong server use --compat rc_pingpong".into(),
            false,
        ),
        _ => generic(b),
    }
}

/// What a server running one client's test tells another rdmactl client that connects
/// (`client`: the address of the one it serves): the second client reads it as its
/// server's notice, so it names the true cause at once instead of waiting for an answer.
pub fn server_busy(client: &str) -> Diagnostic {
    Diagnostic::explanation(
        codes::SERVER_BUSY,
        format!("the server is busy with a client from {client}: it runs one client's test at a time"),
        "wait for that run to end and run this client again, or start a second server on another -p",
    )
}

#[cfg(test)]
mod tests {
    use crate::diagnose::datapath::explain;
    use crate::diagnose::datapath::tests::rxe_ctx;
    use crate::model::failure::{Cause, Failure, Step};

    /// A busy TCP port is about the port, not the GID: no GID claim, and the fix is -p.
    #[test]
    fn listen_port_in_use() {
        let failure = Failure::new(
            Step::Listen,
            Cause::errno(libc::EADDRINUSE),
            crate::model::failure::FailureContext {
                bind_addr: Some("[::]:18515".into()),
                ..Default::default()
            },
        );
        assert_eq!(
            failure.to_string(),
            "listen (TCP) failed (on [::]:18515): EADDRINUSE (98: Address already in use)"
        );
        let mut facts = rxe_ctx(Some(1), "::ffff:192.168.77.2");
        let x = explain(&failure, &facts);
        assert_eq!(x.code, "port-in-use");
        assert!(x.message.contains("TCP port 18515"), "{x:?}");
        assert!(x.fix_text().contains("-p"), "{x:?}");
        assert!(x.evidence.iter().all(|e| !e.contains("GID")), "{x:?}");
        assert_eq!(x.suggested_gid_index, None);
        // Named when /proc tells, as `ss -p` does.
        facts.port_holders = vec![(4242, "rdmactl".into())];
        let x = explain(&failure, &facts);
        assert!(
            x.message
                .starts_with("rdmactl (pid 4242) already listens on TCP port 18515"),
            "{x:?}"
        );
        assert!(
            x.evidence.iter().any(|e| e.contains("/proc/4242/fd")),
            "{x:?}"
        );
    }

    /// The notice a busy server sends its extra clients names the client it serves.
    #[test]
    fn a_busy_server_names_its_client() {
        let x = super::server_busy("192.168.77.2:41000");
        assert_eq!(x.code, "server-busy");
        assert!(
            x.message
                .starts_with("the server is busy with a client from 192.168.77.2:41000"),
            "{x:?}"
        );
        assert!(x.fix_text().contains("another -p"), "{x:?}");
    }
}
