//! The report of the verbs loopback, as printed and as JSON.

use std::net::IpAddr;

use serde::Serialize;

use crate::model::results::StepLine;
use crate::traffic::failure::GidChoice;

/// What `selftest` found, on either exchange: each step, the counters over the test, and
/// the verdict.
#[derive(Debug, Serialize)]
pub struct SelftestReport {
    /// `verbs` here; `cm` for `selftest --cm`.
    pub mode: &'static str,
    /// The first end's device, once opened; `peer_device` is the second end's (the same
    /// name on one device). `device`, as in every command, not a list.
    pub device: Option<String>,
    pub peer_device: Option<String>,
    pub port: u32,
    /// `--cm` only: the addresses the devices stand for (the server listens on one, the
    /// client connects from the other); null where a device has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_address: Option<Option<IpAddr>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_address: Option<Option<IpAddr>>,
    /// The index given or chosen; with `--cm` the one the kernel chose for the client.
    pub gid_index: Option<u32>,
    /// `-g auto`: per device, what was chosen and why the other indices were not.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gid_selection: Vec<GidChoice>,
    pub size: u32,
    pub steps: Vec<StepLine>,
    /// What moved on the two ports' counters over the test (`peer`: the second device's,
    /// when it is another one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counters: Option<crate::model::results::RunCounters>,
    /// The SIGINT (2) or SIGTERM (15) that stopped the test; the exit status is 128 + it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    pub ok: bool,
}

impl SelftestReport {
    /// What the text report shows.
    pub fn view(&self) -> crate::render::selftest::SelftestView<'_> {
        crate::render::selftest::SelftestView {
            device: self.device.as_deref(),
            peer_device: self.peer_device.as_deref(),
            port: self.port,
            addresses: self
                .server_address
                .map(|server| (server, self.client_address.flatten())),
            gid_index: self.gid_index,
            size: self.size,
            steps: &self.steps,
            counters: self.counters.as_ref(),
            signal: self.signal,
            ok: self.ok,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::diagnostic::FailureReport;
    use crate::model::failure::{Cause, Failure, FailureContext, Step};
    use crate::traffic::failure;

    /// The report of a run that stopped at RTR: the documented shape
    /// (tests/json-schema.txt), with `device`/`peer_device` and a rounded `elapsed_us`.
    #[test]
    fn report_has_the_documented_shape() {
        let sysfs = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/sysfs/rxe-veth-basic");
        let f = Failure::new(
            Step::Rtr,
            Cause::errno(libc::ETIMEDOUT),
            FailureContext {
                device: "rxe0".into(),
                port: 1,
                gid_index: Some(1),
                path_mtu: Some(1024),
                ..FailureContext::default()
            },
        );
        let report = SelftestReport {
            mode: "verbs",
            device: Some("rxe0".into()),
            peer_device: Some("rxe1".into()),
            port: 1,
            server_address: None,
            client_address: None,
            gid_index: Some(1),
            gid_selection: vec![failure::choose_gid(&sysfs, "rxe0", 1, None).unwrap()],
            size: 4096,
            steps: vec![
                StepLine {
                    side: None,
                    step: "open".into(),
                    ok: true,
                    elapsed_us: 1022.0500000000001,
                    detail: "rxe0/1".into(),
                    failure: None,
                },
                StepLine {
                    side: None,
                    step: "rtr".into(),
                    ok: false,
                    elapsed_us: 5.0,
                    detail: String::new(),
                    failure: Some(FailureReport::new(
                        &f,
                        crate::model::diagnostic::Diagnostic::explanation(
                            "rtr-timeout".into(),
                            "why",
                            "fix",
                        ),
                    )),
                },
            ],
            counters: None,
            // Stopped by a Ctrl-C as well: `signal` is documented too.
            signal: Some(libc::SIGINT),
            ok: false,
        };
        let json = serde_json::to_value(&report).unwrap();
        let shape = crate::json_schema::mismatches("selftest", &json);
        assert!(shape.is_empty(), "{shape:#?}\n{json}");
        assert!(serde_json::to_string(&report)
            .unwrap()
            .contains(r#""elapsed_us":1022.05,"#));
        assert!(json["signal"] == 2, "{json}");
        assert!(
            crate::render::selftest::text(&report.view(), crate::output::Style::plain())
                .starts_with("selftest rxe0 <-> rxe1 port 1 GID index 1")
        );
    }
}
