//! A link-local GID (fe80::/10) toward a peer: it reaches only peers on its own L2
//! segment, and never one behind a router (NVIDIA/nccl#769). One rule for `check` (before
//! the run) and a failed run (RTR timed out), so the same GID toward the same routed peer
//! gets the same code, cause and fix; `--cm` never asks, since the CM picks the GID from
//! the addresses itself.

use crate::model::codes;
use crate::model::diagnostic::{Diagnostic, Seen, Severity, Source};
use crate::model::facts::RouteFacts;
use crate::model::gid::{is_link_local, Gid};

/// The fix's first words; the GID that fits is appended by the asker (check's
/// `with_better`, the data path's GID suggestion), both as "FIX; use GID index N (...)".
pub const FIX: &str = "use a GID with a routable address";

/// `link-local-routed-peer`: `gid` (slot `index` when known) is link-local and the route to
/// `peer` goes through a gateway. None otherwise (on-link, a local peer, no route).
pub fn routed_peer(
    gid: &Gid,
    index: Option<u32>,
    peer: &str,
    route: &RouteFacts,
) -> Option<Diagnostic> {
    let gw = route.gateway?;
    if !is_link_local(gid) || route.peer_is_local || route.on_link() != Some(false) {
        return None;
    }
    let which = index.map_or("the local GID".to_string(), |i| format!("GID index {i}"));
    Some(
        Diagnostic::explanation(
            codes::LINK_LOCAL_ROUTED_PEER,
            format!("{which} is link-local and {peer} is behind a router ({gw}): a link-local GID never crosses one (NVIDIA/nccl#769)"),
            FIX,
        )
        .seen(Seen::new(
            Source::Route,
            format!("ip route get {peer}: via {gw}"),
        )),
    )
}

/// `link-local`, a warning: a link-local GID toward an on-link peer works only against a
/// peer that uses its link-local GID too. `fix` is the asker's GID suggestion.
pub fn on_link(index: u32, fix: String) -> Diagnostic {
    Diagnostic::finding(
        Severity::Warn,
        codes::LINK_LOCAL,
        format!("index {index} is link-local: it reaches only peers on this L2 segment, using link-local GIDs too"),
    )
    .fix(fix)
}
