//! Judging one GID index against the port and the peer, and UCX_IB_GID_INDEX.

use super::numbers::c_sscanf_lu;
use super::{code_of, EnvTarget};
use crate::diagnose::gidselect::{describe, is_link_local, suggestion, Selection, Verdict};
use crate::model::diagnostic::{Diagnostic, Seen, Severity};

/// How GID `index` of the port fares toward the peer (or, without one, in general), as a
/// finding for variable `name`. `subject` leads the message: `NCCL_IB_GID_INDEX=3` or
/// `with NCCL_IB_GID_INDEX=-1, NCCL 2.21+`, followed by "selects ...".
pub(super) fn judge_index(
    name: &str,
    subject: &str,
    index: u32,
    sel: &Selection,
    target: &EnvTarget,
) -> Diagnostic {
    let code = code_of(name);
    let Some(entry) = target
        .table
        .iter()
        .find(|e| e.index == index && !e.gid.is_zero())
    else {
        return Diagnostic::finding(
            Severity::Fail,
            code.clone(),
            format!(
                "{subject} names GID index {index}, which {} does not have",
                target.name()
            ),
        )
        .evidence(format!("populated indices: {}", populated(target)))
        .fix(fix_to(name, sel, target));
    };
    if sel.chosen == Some(index) {
        let mut f = Diagnostic::finding(
            Severity::Ok,
            code.clone(),
            format!("{subject} selects {}", describe(entry)),
        );
        if let Some(r) = sel.reason(index) {
            f = f.evidence(r.why.clone());
        }
        return f;
    }
    let reason = sel.reason(index);
    let rejected = reason.is_some_and(|r| r.verdict == Verdict::Rejected);
    // Without a peer, a rejection is the default family's (IPv4, as perftest and NCCL)
    // or link-local's: right for some peers, so a warning; a peer makes it certain.
    let severity = if rejected && target.want.peer.is_some() {
        Severity::Fail
    } else {
        Severity::Warn
    };
    let mut f = Diagnostic::finding(
        severity,
        code.clone(),
        format!("{subject} selects {}", describe(entry)),
    );
    if let Some(r) = reason {
        f = f.evidence(format!("index {index}: {}", r.why));
    }
    if target.ethernet() && is_link_local(&entry.gid) {
        f = f.evidence("a link-local GID works only within one L2 segment, toward peers that use a link-local GID too");
    }
    f.fix(fix_to(name, sel, target))
}

pub(super) fn populated(target: &EnvTarget) -> String {
    target
        .table
        .iter()
        .filter(|e| !e.gid.is_zero())
        .map(|e| e.index.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn fix_to(name: &str, sel: &Selection, target: &EnvTarget) -> String {
    match (suggestion(target.table, sel), sel.chosen) {
        (Some(s), Some(i)) => format!("set {name}={i}: {s}"),
        _ => "no GID on this port qualifies; check the port's addresses (rdmactl gids)".into(),
    }
}

/// On InfiniBand both libraries address a peer in the subnet by its LID; a GID is used
/// only for routed (global) traffic, and recent NCCL picks that one itself.
pub(super) fn infiniband_index(
    name: &str,
    prefix: &str,
    index: Option<u32>,
    target: &EnvTarget,
) -> Diagnostic {
    let code = code_of(name);
    let why = "on InfiniBand peers in one subnet are addressed by LID: the GID index matters only for routed (global) traffic";
    let Some(index) = index else {
        return Diagnostic::finding(
            Severity::Ok,
            code.clone(),
            format!("{prefix} lets the library choose; {why}"),
        );
    };
    let entry = target
        .table
        .iter()
        .find(|e| e.index == index && !e.gid.is_zero());
    match entry {
        Some(e) => Diagnostic::finding(
            Severity::Ok,
            code.clone(),
            format!("{prefix} names {}; {why}", describe(e)),
        ),
        None => Diagnostic::finding(
            Severity::Warn,
            code.clone(),
            format!(
                "{prefix}, but {} has no GID at index {index}; {why}",
                target.name()
            ),
        )
        .evidence(format!("populated indices: {}", populated(target)))
        .fix(format!("unset {name}, or give an index that exists")),
    }
    .evidence(if name.starts_with("NCCL") {
        "NCCL 2.21 and later ignore NCCL_IB_GID_INDEX on InfiniBand: they take index 0, or NCCL_IB_ROUTABLE_FLID_GID_INDEX when that GID carries a FLID"
    } else {
        "UCX uses the GID only when the path is global (UCX_IB_IS_GLOBAL, or a routed subnet)"
    })
}

pub(super) fn check_ucx_gid_index(value: &str, target: &EnvTarget) -> Diagnostic {
    const NAME: &str = "UCX_IB_GID_INDEX";
    let code = code_of(NAME);
    let shown = format!("{NAME}={value}");
    if value.eq_ignore_ascii_case("auto") {
        let mut f = Diagnostic::finding(
            Severity::Ok,
            code.clone(),
            format!("{shown} lets UCX choose"),
        );
        if let Some(s) = suggestion(target.table, target.auto) {
            f = f.evidence(format!("rdmactl's own choice: {s}"));
        }
        return f;
    }
    let Some((index, rest)) = c_sscanf_lu(value) else {
        return Diagnostic::finding(
            Severity::Fail,
            code.clone(),
            format!("{shown} is neither a number nor 'auto': UCX refuses it and does not start"),
        )
        .fix(
            match (suggestion(target.table, target.auto), target.auto.chosen) {
                (Some(s), Some(i)) => format!("unset it (auto), or set {NAME}={i}: {s}"),
                _ => format!("unset {NAME} (auto)"),
            },
        );
    };
    let index32 = u32::try_from(index).unwrap_or(u32::MAX);
    let mut f = if target.ethernet() {
        judge_index(NAME, &shown, index32, target.auto, target)
    } else {
        infiniband_index(NAME, &shown, Some(index32), target)
    };
    f.evidence.insert(0, Seen::gathered(shown.clone()));
    if !rest.trim().is_empty() || value.trim() != index.to_string() {
        f.evidence.insert(
            1,
            Seen::gathered(format!(
                "UCX reads it with sscanf(\"%lu\"): '{}' is {index}",
                value.trim()
            )),
        );
        f.severity = f.severity.max(Severity::Warn);
    }
    f
}
