//! Creating and driving the QP: INIT and RTS attributes, capacities, inline size, full queues.

use crate::model::codes;
use crate::model::diagnostic::{Diagnostic, Seen, Source};
use crate::model::facts::Facts;
use crate::model::failure::Failure;

use super::Builder;

pub(super) fn init_einval(b: Builder) -> Diagnostic {
    let local = &b.ctx.local;
    let ev = vec![Seen::new(Source::Local, format!("port {}", local.port))];
    b.done(
        codes::INIT_INVALID,
        format!("the kernel rejected the INIT attributes for {}: the port number, the P_Key index or the access flags", local.name()),
        ev,
        "use a port that exists (rdmactl ports), pkey_index 0, and only the access flags the device supports".into(),
        false,
    )
}

/// INIT refused with a P_Key index the port's table does not have.
pub(super) fn pkey_past_table(ctx: &Facts) -> Option<Diagnostic> {
    let qp = ctx.qp.as_ref()?;
    let (index, len) = (qp.pkey_index?, qp.pkey_table_len?);
    if index < len {
        return None;
    }
    let mut x = Diagnostic::explanation(
        codes::PKEY_INDEX_PAST_TABLE,
        format!(
            "the P_Key index {index} is past the end of {}'s P_Key table ({len} entries, indices 0 to {}): the kernel refuses it at INIT",
            ctx.local.name(),
            len.saturating_sub(1)
        ),
        "use the index of the P_Key you mean (the default, 0xffff, is usually at 0); `rdmactl ports -v` lists the table",
    );
    x.evidence.push(Seen::new(
        Source::Qp,
        format!("pkey_index {index} given at INIT"),
    ));
    x.evidence.push(Seen::new(
        Source::Local,
        format!("{} pkey_tbl_len {len}", ctx.local.name()),
    ));
    Some(x)
}

/// An inline post larger than the QP's max_inline_data: (bytes, max).
pub(super) fn inline_over(ctx: &Facts) -> Option<(u32, u32)> {
    let qp = ctx.qp.as_ref()?;
    let (bytes, max) = (qp.inline_bytes?, qp.max_inline_data?);
    (bytes > max).then_some((bytes, max))
}

pub(super) fn inline_too_large(failure: &Failure, ctx: &Facts) -> Diagnostic {
    let (bytes, max) = inline_over(ctx).expect("checked by the caller");
    let mut x = Diagnostic::explanation(
        codes::INLINE_TOO_LARGE,
        format!(
            "an inline send of {bytes} bytes is more than the QP's max_inline_data ({max}): the provider refuses it at post ({})",
            crate::model::errno::errno_name(failure.cause.errno_value().unwrap_or(0))
        ),
        format!(
            "send at most {max} bytes with IBV_SEND_INLINE and larger ones without it (from a registered buffer), or create the QP with a larger cap.max_inline_data if the device grants it"
        ),
    );
    x.evidence.push(Seen::new(
        Source::Qp,
        format!("max_inline_data {max} granted at QP create"),
    ));
    x.evidence.push(Seen::new(
        Source::Failure,
        format!(
            "{bytes} bytes posted with IBV_SEND_INLINE: {}",
            failure.cause
        ),
    ));
    x
}

pub(super) fn qp_caps(b: Builder) -> Diagnostic {
    b.done(
        codes::QP_CAPS,
        "the QP's requested capacities exceed the device's limits (max_qp_wr, max_sge, max_inline_data)".into(),
        vec![],
        "lower the queue depth (rx depth), SGEs or inline size to what rdmactl devices -v reports".into(),
        false,
    )
}

pub(super) fn queue_full(b: Builder) -> Diagnostic {
    let step = b.failure.step.name();
    b.done(
        codes::QUEUE_FULL,
        format!("{step}: the work queue is full (more requests outstanding than max_send_wr/max_recv_wr)"),
        vec![],
        "poll completions before posting more, or create the QP with a deeper queue".into(),
        false,
    )
}

pub(super) fn rts_einval(b: Builder) -> Diagnostic {
    let qp = b.ctx.qp.clone().unwrap_or_default();
    let mut ev = Vec::new();
    if let Some(r) = qp.retry_cnt {
        ev.push(Seen::new(Source::Qp, format!("retry_cnt {r}")));
    }
    if let Some(r) = qp.rnr_retry {
        ev.push(Seen::new(Source::Qp, format!("rnr_retry {r}")));
    }
    b.done(
        codes::RTS_INVALID,
        "the kernel rejected the RTS attributes (timeout, retry_cnt 0..7, rnr_retry 0..7, max_rd_atomic)".into(),
        ev,
        "use timeout 14, retry_cnt 6, rnr_retry 7, max_rd_atomic within the device's max_qp_rd_atom".into(),
        false,
    )
}
