//! The path MTU against the two ends' active MTUs.

use crate::model::facts::Facts;

pub(super) fn mtu_min(ctx: &Facts) -> Option<u32> {
    let local = ctx.local.active_mtu?;
    Some(
        ctx.peer
            .as_ref()
            .and_then(|p| p.active_mtu)
            .map_or(local, |p| p.min(local)),
    )
}

/// (path MTU in use, the smaller active MTU) when the path MTU is too large.
pub(super) fn mtu_mismatch(ctx: &Facts) -> Option<(u32, u32)> {
    let path = ctx
        .qp
        .as_ref()
        .and_then(|q| q.path_mtu)
        .or(ctx.requested_mtu)?;
    let min = mtu_min(ctx)?;
    (path > min).then_some((path, min))
}
