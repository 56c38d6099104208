//! The report of a TCP-exchange run, as printed and as JSON.

use serde::Serialize;

use crate::model::results::Qos;

use super::plan::Plan;
use crate::cli::PingpongArgs;
use crate::error::Result;
use crate::model::diagnostic::FailureReport;
use crate::model::failure::Endpoint;
use crate::model::results::{OpResult, OpResults};
use crate::traffic::failure::GidChoice;

#[derive(Debug, Serialize)]
pub struct PingpongReport {
    pub(super) role: &'static str,
    pub(super) exchange: &'static str,
    /// -m, or the client's when a server follows it.
    #[serde(skip)]
    pub(super) requested_mtu: Option<u32>,
    pub(super) device: String,
    pub(super) port: u32,
    pub(super) gid_index: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) peer: Option<String>,
    pub(super) size: u32,
    pub(super) run: Run,
    pub(super) qos: Qos,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) path_mtu: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) local: Option<Endpoint>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) remote: Option<Endpoint>,
    /// What `-g auto` chose, and why it turned the other indices down.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) gid_selection: Option<GidChoice>,
    pub(super) ops: OpResults,
    /// With a single operation its figures are also at the top level.
    #[serde(flatten)]
    pub(super) single: Option<OpResult>,
    /// What moved on each end's port over the traffic, and the counter rules' findings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) counters: Option<crate::model::results::RunCounters>,
    pub(super) ok: bool,
    pub(super) failure: Option<FailureReport>,
}

/// A `-a` sweep's `-j` output: each size's report as `pingpong -j` prints one, in the
/// order run (tests/json-schema.txt's `pingpong_sweep`).
#[derive(Debug, Serialize)]
pub struct SweepReport {
    pub role: &'static str,
    pub sweep: Vec<serde_json::Value>,
    pub ok: bool,
}

/// Where a finished report goes (the command prints it).
pub type Show<'a> = dyn FnMut(&PingpongReport) -> Result<()> + 'a;

impl PingpongReport {
    /// What the text report shows.
    pub fn view(&self) -> crate::render::pingpong::ExchangeView<'_> {
        crate::render::pingpong::ExchangeView {
            role: self.role,
            exchange: self.exchange,
            device: &self.device,
            port: self.port,
            size: self.size,
            path_mtu: self.path_mtu,
            qos: self.qos,
            events: self.run.events,
            local: self.local.as_ref(),
            remote: self.remote.as_ref(),
            ops: &self.ops,
            counters: self.counters.as_ref(),
            ok: self.ok,
            rate: crate::render::pingpong::BandwidthUnit::default(),
        }
    }

    /// "client" or "server".
    pub fn role(&self) -> &'static str {
        self.role
    }

    /// This run as one line of a `-a` sweep's table.
    pub fn sweep_row(&self) -> crate::render::pingpong::SweepRow {
        crate::render::pingpong::SweepRow {
            size: self.size,
            ops: self.ops.clone(),
            ok: self.ok,
        }
    }
}

/// How the run was measured (`run` in -j; the top level holds a single operation's figures).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub(super) struct Run {
    /// -n; absent for a --duration run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) iters: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) duration_sec: Option<f64>,
    /// WRITE and READ were measured one at a time (--lat).
    pub(super) lat: bool,
    /// Completions were waited for asleep (-e).
    pub(super) events: bool,
    /// A server that took the client's -n, --duration and --lat.
    pub(super) follows_client: bool,
}

pub(super) fn new_report(args: &PingpongArgs, plan: &Plan, device: &str) -> PingpongReport {
    PingpongReport {
        role: if args.server.is_some() {
            "client"
        } else {
            "server"
        },
        exchange: "native",
        requested_mtu: plan.mtu,
        device: device.to_string(),
        port: args.on.port,
        gid_index: plan.gid_index,
        peer: None,
        size: plan.size,
        run: Run {
            iters: plan.length.iters,
            duration_sec: args.duration,
            lat: args.lat,
            events: args.events,
            follows_client: false,
        },
        qos: Qos {
            sl: plan.qos.sl,
            tclass: plan.qos.traffic_class,
            pkey_index: plan.pkey_index,
        },
        path_mtu: None,
        local: None,
        remote: None,
        gid_selection: None,
        ops: OpResults::default(),
        single: None,
        ok: false,
        counters: None,
        failure: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::device::{GidType, LinkLayer};
    use crate::model::failure::{Cause, Failure, FailureContext, Step};
    use crate::model::gid::Gid;
    use crate::traffic::failure;
    use std::time::Duration;

    fn endpoint(qpn: u32) -> Endpoint {
        Endpoint {
            lid: 0,
            qpn,
            psn: 0x1234,
            gid: Gid::parse("::ffff:192.168.77.1").unwrap(),
            gid_index: Some(1),
            gid_type: Some(GidType::RoceV2),
            link_layer: LinkLayer::Ethernet,
            active_mtu: 1024,
            rkey: 7,
            addr: 0x5555_0000,
            len: 4096,
            segment: None,
        }
    }

    /// The report as a run that got to its single SEND test and then failed prints it:
    /// the documented shape (tests/json-schema.txt), figures rounded.
    #[test]
    fn report_has_the_documented_shape() {
        let sysfs = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/sysfs/rxe-veth-basic");
        let mut ops = OpResults::default();
        ops.insert(
            "send",
            crate::model::results::op_result(3, 24_576, Duration::from_nanos(3_066_150_123), 1, {
                let mut r = crate::model::results::LatencyRecorder::new();
                r.record(1_022_050);
                r.latency(1.0)
            }),
        );
        let mut context = FailureContext {
            device: "rxe1".into(),
            port: 1,
            gid_index: Some(1),
            local: Some(endpoint(0x11)),
            remote: Some(endpoint(0x12)),
            qp: Some(crate::model::failure::QP_PARAMS),
            ..FailureContext::default()
        };
        context.note = Some("after 3/1000 sends and 2/1000 receives".into());
        let f = Failure::new(
            Step::Completion,
            Cause::WcStatus {
                status: 12,
                vendor_err: 0,
                opcode: 0,
                op: None,
            },
            context,
        );
        let report = PingpongReport {
            role: "client",
            exchange: "native",
            requested_mtu: None,
            device: "rxe1".into(),
            port: 1,
            gid_index: Some(1),
            peer: Some("192.168.77.1:18515".into()),
            size: 4096,
            run: Run {
                iters: None,
                duration_sec: Some(3.5),
                lat: true,
                events: true,
                follows_client: false,
            },
            qos: Qos {
                sl: 3,
                tclass: 106,
                pkey_index: 0,
            },
            path_mtu: Some(1024),
            local: Some(endpoint(0x11)),
            remote: Some(endpoint(0x12)),
            gid_selection: Some(
                failure::choose_gid(&sysfs, "rxe1", 1, None).expect("fixture choice"),
            ),
            single: ops.single(),
            ops,
            counters: crate::traffic::counters::judge(
                Some(
                    crate::model::counter::WireDelta {
                        device: "rxe1".into(),
                        port: 1,
                        flavor: crate::model::counter::Flavor::Rxe,
                        has_counters_dir: false,
                        seconds: 0.5,
                        counters: vec![
                            crate::model::counter::WireCount {
                                name: "sent_pkts".into(),
                                source: crate::model::counter::CounterSource::HwCounters,
                                at_least: 2000,
                                exact: true,
                            },
                            crate::model::counter::WireCount {
                                name: "duplicate_request".into(),
                                source: crate::model::counter::CounterSource::HwCounters,
                                at_least: 12,
                                exact: true,
                            },
                        ],
                    }
                    .to_delta(),
                ),
                None,
                crate::model::counter::TrafficMix {
                    sends: 6,
                    reads: false,
                    rnr_on_purpose: false,
                },
            ),
            ok: false,
            failure: Some(FailureReport::new(
                &f,
                crate::model::diagnostic::Diagnostic::explanation(
                    "retry-exceeded".into(),
                    "why",
                    "fix",
                ),
            )),
        };
        let json = serde_json::to_value(&report).unwrap();
        let shape = crate::json_schema::mismatches("pingpong", &json);
        assert!(shape.is_empty(), "{shape:#?}\n{json}");
        let sweep = serde_json::to_value(SweepReport {
            role: "client",
            sweep: vec![json.clone(), json.clone()],
            ok: false,
        })
        .unwrap();
        let shape = crate::json_schema::mismatches("pingpong_sweep", &sweep);
        assert!(shape.is_empty(), "{shape:#?}\n{sweep}");
        assert_eq!(json["latency_usec"]["min"], 1021.952);
        assert_eq!(json["run"]["duration_sec"], 3.5);
        assert_eq!(json["qos"]["tclass"], 106);
        assert_eq!(json["msgs_per_sec"], 0.978);
        // The counters block: the moved ones, and a retransmission finding for the
        // duplicates the responder saw.
        assert_eq!(
            json["counters"]["local"]["counters"][1]["name"],
            "duplicate_request"
        );
        assert!(
            json["counters"]["findings"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f["code"] == "counters-retransmission"),
            "{json}"
        );
    }
}
