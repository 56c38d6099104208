//! `check`'s report: the GID index asked about, `auto`'s reasons, the findings, and what
//! the kernel's CM would pick, as text and as JSON.

use std::fmt::Write as _;
use std::net::IpAddr;

use serde::Serialize;

use crate::diagnose::gidselect::{Selection, Verdict};
use crate::diagnose::kernel_choice::KernelChoice;
use crate::model::diagnostic::{Diagnostic, Severity};
use crate::output::Style;
use crate::render::diagnostic::{self as render_findings, Evidence};

#[derive(Debug, Serialize)]
pub struct CheckReport {
    pub device: String,
    pub port: u32,
    pub gid_index: Option<u32>,
    pub requested: String,
    pub peer: Option<IpAddr>,
    /// The interface of `--peer ADDR%IFNAME`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peer_scope: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selection: Option<Selection>,
    /// `findings`, as doctor calls its list.
    #[serde(serialize_with = "crate::model::diagnostic::json::findings")]
    pub findings: Vec<Diagnostic>,
    /// With --peer on a live host: what the kernel's CM would pick.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel_choice: Option<KernelChoice>,
    pub result: Severity,
}

/// `check`'s text: the target, `auto`'s reasons, then the findings and their tally.
pub fn render(report: &CheckReport, style: Style) -> String {
    let mut s = String::new();
    let target = format!("{}/{}", report.device, report.port);
    let peer = report
        .peer
        .map(|p| match &report.peer_scope {
            Some(scope) => format!(" toward {p}%{scope}"),
            None => format!(" toward {p}"),
        })
        .unwrap_or_default();
    let index = report
        .gid_index
        .map_or(report.requested.clone(), |i| i.to_string());
    let _ = writeln!(s, "check {target} GID index {index}{peer}");
    if let Some(sel) = &report.selection {
        let _ = writeln!(
            s,
            "auto: {}",
            sel.chosen
                .map(|i| format!("chose index {i}"))
                .unwrap_or_else(|| "no index qualifies".into())
        );
        for r in &sel.reasons {
            let verdict = match r.verdict {
                Verdict::Chosen => "chosen",
                Verdict::Usable => "usable",
                Verdict::Rejected => "rejected",
            };
            let _ = writeln!(s, "  index {:<3} {verdict:<8} {}", r.index, r.why);
        }
    }
    s.push_str(&render_findings::lines(
        &report.findings,
        style,
        Evidence::All,
    ));
    s.push_str(&render_findings::tally(&report.findings));
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ctx::Ctx;
    use crate::diagnose::check::{evaluate, want_for};
    use crate::diagnose::gidselect;
    use crate::gather::check::load_port_facts;
    use crate::output;

    fn fixture(name: &str) -> Ctx {
        Ctx::fixture(name)
    }

    use crate::diagnose::check::tests::vm_net;

    #[test]
    fn render_lists_reasons_and_checks() {
        let ctx = fixture("rxe-veth-basic");
        let port = load_port_facts(&ctx, "rxe0", 1).unwrap();
        let peer: IpAddr = "192.168.77.2".parse().unwrap();
        let net = vm_net(true);
        let auto =
            gidselect::select_gid(port.gids(), &port.link_layer, &want_for(Some(peer), &net));
        let checks = evaluate(&port, 1, Some(peer), &net, &auto);
        let report = CheckReport {
            device: "rxe0".into(),
            port: 1,
            gid_index: auto.chosen,
            requested: "auto".into(),
            peer: Some(peer),
            peer_scope: None,
            selection: Some(auto),
            findings: checks,
            kernel_choice: None,
            result: Severity::Ok,
        };
        let out = render(&report, Style::plain());
        assert!(out.contains("auto: chose index 1"), "{out}");
        assert!(out.contains("index 0   rejected"), "{out}");
        assert!(out.contains("\nok    gid-slot "), "{out}");
        assert!(out.contains("        evidence: gids/1 = "), "{out}");
        assert!(
            out.ends_with("6 ok, 2 info, 0 warning(s), 0 failure(s)"),
            "{out}"
        );
        let json: serde_json::Value = serde_json::from_str(&output::json(&report)).unwrap();
        assert_eq!(json["selection"]["chosen"], 1);
        assert_eq!(json["findings"][0]["severity"], "ok");
    }
}
