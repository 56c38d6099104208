//! `mtu-mismatch`: two ends that do not carry the same MTU. doctor sees it before any run
//! (two RoCE netdevs of one subnet with different MTUs), a failed run sees it after (the
//! path MTU set at RTR above the smaller active MTU of the two ports, so the receiver's
//! length check fails). One file emits the code, so its cause and fix stay one.

use crate::diagnose::doctor::roce_mtu_for_netdev;
use crate::model::codes::{self, Code};
use crate::model::diagnostic::{Diagnostic, Seen, Severity, Source, Subject};
use crate::model::facts::RoceNetdev;

/// doctor: `a` and `b` share `subnet` with different netdev MTUs (`pair` names them).
pub fn subnet_pair(a: &RoceNetdev, b: &RoceNetdev, pair: &str, subnet: &str) -> Option<Diagnostic> {
    let (ma, mb) = (a.mtu?, b.mtu?);
    if ma == mb {
        return None;
    }
    let (ra, rb) = (roce_mtu_for_netdev(ma), roce_mtu_for_netdev(mb));
    Some(
        Diagnostic::finding(
            Severity::Warn,
            codes::MTU_MISMATCH,
            format!(
                "{pair} share {subnet} with netdev MTUs {ma} and {mb}: frames above {} are dropped by the smaller end, and the RoCE MTUs they allow differ ({} and {})",
                ma.min(mb),
                ra.map_or("none".into(), |m| m.to_string()),
                rb.map_or("none".into(), |m| m.to_string())
            ),
        )
        .about(Subject::Host)
        .evidence(format!("{} MTU {ma}", a.netdev))
        .evidence(format!("{} MTU {mb}", b.netdev))
        .fix(format!(
            "give every port on {subnet} the same MTU (ip link set DEV mtu {})",
            ma.max(mb)
        )),
    )
}

/// A failed run: the path MTU `path` set at RTR, while one port runs `min`. The code,
/// summary, its seen line and the fix, for the data path's builder.
pub fn run_path(path: u32, min: u32) -> (Code, String, Seen, String) {
    (
        codes::MTU_MISMATCH,
        format!("path MTU mismatch: {path} set at RTR, but one port runs {min}"),
        Seen::new(
            Source::Qp,
            format!("path MTU {path}, smaller active MTU {min}"),
        ),
        format!("use -m {min}, the smaller active MTU of the two ports"),
    )
}
