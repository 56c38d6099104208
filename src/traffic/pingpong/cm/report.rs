//! The report of a `--cm` run, as printed and as JSON.

use serde::Serialize;

use crate::cli::PingpongArgs;
use crate::error::Result;
use crate::gather::verbs::cm::{ConnInfo, Resolution};
use crate::model::diagnostic::FailureReport;
use crate::model::results::{OpResult, OpResults};
use crate::render;

/// The TCP exchange's report shape (role, exchange, device, port, gid_index, peer, size,
/// path_mtu, `ops`, a single op's figures repeated at the top level, ok, failure), plus
/// what the CM set up and, on the client, what the kernel chose.
#[derive(Debug, Serialize)]
pub struct CmPingpongReport {
    pub(super) role: &'static str,
    pub(super) exchange: &'static str,
    pub(super) device: String,
    pub(super) port: u32,
    pub(super) gid_index: Option<u8>,
    pub(super) peer: Option<String>,
    pub(super) size: u32,
    pub(super) path_mtu: Option<u32>,
    pub(super) ops: OpResults,
    #[serde(flatten)]
    pub(super) single: Option<OpResult>,
    /// Server: messages answered, and whether the client was a stock tool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) echoed: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) stock_client: Option<bool>,
    pub(super) connection: Option<ConnInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) kernel_choice: Option<Resolution>,
    /// What moved on this end's port over the transfer (the client's; the CM exchange
    /// carries no counters between the ends).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) counters: Option<crate::model::results::RunCounters>,
    pub(super) ok: bool,
    pub(super) failure: Option<FailureReport>,
}

/// Where a finished report goes (the command prints it; in text, only once connected).
pub type CmShow<'a> = dyn FnMut(&CmPingpongReport) -> Result<()> + 'a;

impl CmPingpongReport {
    pub(super) fn new(role: &'static str, args: &PingpongArgs) -> CmPingpongReport {
        CmPingpongReport {
            role,
            exchange: "cm",
            device: args.on.device.clone().unwrap_or_default(),
            port: args.on.port,
            gid_index: None,
            peer: None,
            size: args.size(),
            path_mtu: None,
            ops: OpResults::default(),
            single: None,
            echoed: None,
            stock_client: None,
            connection: None,
            kernel_choice: None,
            counters: None,
            ok: false,
            failure: None,
        }
    }

    /// Whether the CM connected (a run that did not has no addresses to show).
    pub fn is_connected(&self) -> bool {
        self.connection.is_some()
    }

    /// What the text report shows.
    pub fn view(&self) -> render::pingpong::CmView<'_> {
        let connection = self
            .connection
            .as_ref()
            .map(|c| render::pingpong::CmConnectionView {
                device: &c.device,
                port: c.port,
                local: c.local,
                peer: c.peer,
                qpn: c.qpn,
                remote_qpn: c.remote_qpn,
                sgid_index: c.sgid_index,
                sgid: c.sgid,
                gid_type: c.gid_type.as_ref(),
                netdev: self
                    .kernel_choice
                    .as_ref()
                    .and_then(|k| k.netdev.as_deref()),
                path_mtu: c.path_mtu,
            });
        render::pingpong::CmView {
            role: self.role,
            size: self.size,
            connection,
            ops: &self.ops,
            counters: self.counters.as_ref(),
            echoed: self.echoed,
            stock_client: self.stock_client,
            ok: self.ok,
            rate: render::pingpong::BandwidthUnit::default(),
        }
    }

    pub(super) fn connected(&mut self, info: &ConnInfo) {
        self.device = info.device.clone();
        self.port = u32::from(info.port);
        self.gid_index = Some(info.sgid_index);
        self.peer = Some(info.peer.to_string());
        self.path_mtu = Some(info.path_mtu);
        self.connection = Some(info.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    use crate::model::device::GidType;
    use crate::model::failure::{Cause, EventKind, Failure, Step};
    use crate::model::results::{op_result, LatencyRecorder};
    use crate::traffic::pingpong::cm::plain_report;

    fn args(server: Option<&str>) -> PingpongArgs {
        use clap::Parser;
        let mut argv = vec!["rdmactl", "pingpong", "--cm"];
        argv.extend(server);
        match crate::cli::Cli::parse_from(argv).command {
            crate::cli::Command::Pingpong(a) => a,
            other => panic!("{other:?}"),
        }
    }

    fn conn_info() -> ConnInfo {
        ConnInfo {
            device: "rxe1".into(),
            port: 1,
            local: Some("192.168.77.2:40000".parse().unwrap()),
            peer: "192.168.77.1:18515".parse().unwrap(),
            qpn: 0x11,
            remote_qpn: 0x12,
            sgid_index: 1,
            sgid: crate::model::gid::Gid::parse("::ffff:192.168.77.2").ok(),
            gid_type: Some(GidType::RoceV2),
            path_mtu: 1024,
        }
    }

    /// `pingpong --cm -j` has the TCP exchange's keys, so one script reads both.
    #[test]
    fn client_report_has_the_tcp_shape() {
        let mut report = CmPingpongReport::new("client", &args(Some("192.168.77.1")));
        report.connected(&conn_info());
        report.kernel_choice = Some(Resolution {
            peer: "192.168.77.1".parse().unwrap(),
            source: Some("192.168.77.2".parse().unwrap()),
            device: "rxe1".into(),
            port: 1,
            link_layer: crate::model::device::LinkLayer::Ethernet,
            sgid: crate::model::gid::Gid::parse("::ffff:192.168.77.2").unwrap(),
            gid_index: Some(1),
            gid_type: Some(GidType::RoceV2),
            netdev: Some("veth1".into()),
            other_indices: vec![],
            default_roce_mode: Some(GidType::RoceV2),
            default_roce_mode_set: false,
        });
        report.ops.insert(
            "send",
            op_result(10, 81_920, Duration::from_millis(5), 1, {
                let mut r = LatencyRecorder::new();
                (0..10).for_each(|_| r.record(1000));
                r.latency(1.0)
            }),
        );
        report.single = report.ops.single();
        report.ok = true;
        let json = serde_json::to_value(&report).unwrap();
        for key in [
            "role",
            "exchange",
            "device",
            "port",
            "gid_index",
            "peer",
            "size",
            "path_mtu",
            "ops",
            "ok",
            "failure",
            "iters",
            "bytes",
            "seconds",
            "mbit_per_sec",
            "usec_per_iter",
            "latency_usec",
        ] {
            assert!(json.get(key).is_some(), "{key} missing in {json}");
        }
        assert_eq!(json["gid_index"], 1);
        assert_eq!(json["device"], "rxe1");
        assert_eq!(json["ops"]["send"]["iters"], 10);
        let shape = crate::json_schema::mismatches("pingpong_cm", &json);
        assert!(shape.is_empty(), "{shape:#?}");
        assert_eq!(json["ops"]["send"]["latency_usec"]["p50"], 1.0);
        assert!(json["ops"].get("write").is_none());
        assert!(json.get("echoed").is_none(), "server-only key: {json}");

        // The text: ibv_rc_pingpong's lines, as the TCP exchange prints them.
        let text = render::pingpong::cm(&report.view(), crate::output::Style::plain());
        assert!(
            text.starts_with(
                "  local address:  192.168.77.2:40000, QPN 0x000011, GID \
                 0000:0000:0000:0000:0000:ffff:c0a8:4d02 (index 1, RoCE v2, veth1)\n"
            ),
            "{text}"
        );
        assert!(text.contains("  client rxe1/1 (cm exchange), path MTU 1024, 4096 B messages\n"));
        assert!(
            text.contains("send  81920 bytes in 0.01 seconds = 131.07 Mbit/sec\n"),
            "{text}"
        );
        assert!(text.ends_with("ok\n"), "{text}");
    }

    /// A failed run still reports, with `ok: false` and the failure explained.
    #[test]
    fn failed_report_carries_the_explained_failure() {
        let mut report = CmPingpongReport::new("client", &args(Some("192.168.77.1")));
        report.peer = Some("192.168.77.1:18515".into());
        let err = Failure::toward_addr(
            Step::CmConnect,
            "192.168.77.1:18515".parse().ok(),
            Cause::cm_event(EventKind::Rejected, 8),
        );
        report.failure = Some(plain_report(&err));
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["ok"], false);
        assert_eq!(json["connection"], serde_json::Value::Null);
        assert_eq!(json["failure"]["step"], "cm_connect");
        assert_eq!(json["failure"]["explanation"]["code"], "cm-no-listener");
        let shape = crate::json_schema::mismatches("pingpong_cm", &json);
        assert!(shape.is_empty(), "{shape:#?}");
    }

    #[test]
    fn server_report_and_text() {
        let mut report = CmPingpongReport::new("server", &args(None));
        let mut info = conn_info();
        (info.local, info.peer) = (Some(info.peer), info.local.unwrap());
        info.sgid = crate::model::gid::Gid::parse("::ffff:192.168.77.1").ok();
        report.connected(&info);
        report.echoed = Some(6);
        report.stock_client = Some(true);
        report.ok = true;
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["role"], "server");
        assert_eq!(json["echoed"], 6);
        assert_eq!(json["stock_client"], true);
        assert!(json.get("kernel_choice").is_none(), "{json}");
        let shape = crate::json_schema::mismatches("pingpong_cm", &json);
        assert!(shape.is_empty(), "{shape:#?}");
        let text = render::pingpong::cm(&report.view(), crate::output::Style::plain());
        assert!(
            text.contains(
                "  local address:  192.168.77.1:18515, QPN 0x000011, GID \
                 0000:0000:0000:0000:0000:ffff:c0a8:4d01 (index 1, RoCE v2)\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("served a stock client (rping/rdma_client): 6 messages answered\nok\n"),
            "{text}"
        );
    }
}
