//! A server busy with one client answers the others (`wire::exchange::BusyAnswer`) with
//! the notice the rules word.

use std::net::{SocketAddr, TcpListener};

use crate::model::failure::{show_addr, PeerNotice};
use crate::wire::exchange::BusyAnswer;

/// Starts answering the clients that connect while `client`'s run goes on; the answer
/// stops when the returned guard is dropped.
pub(super) fn answer_while_busy(listener: &TcpListener, client: SocketAddr) -> Option<BusyAnswer> {
    let client = show_addr(client);
    let x = crate::diagnose::datapath::server_busy(&client);
    let notice = PeerNotice {
        role: "server".into(),
        message: format!("busy with a client from {client}"),
        code: x.code.clone(),
        summary: x.message.clone(),
        evidence: x.evidence.iter().map(|e| e.text.clone()).collect(),
        fix: x.fix_text().to_string(),
        counters: None,
    };
    BusyAnswer::start(listener, notice)
}
