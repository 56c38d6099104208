//! `rdmactl res`: the processes holding RDMA resources (command, state, cgroup, counts,
//! pinned bytes), their QPs as `rdma res show qp` lists them, their rdma_cm IDs, then the
//! findings through the one diagnostic renderer; and the `-j` object (docs/json.md).

use serde::Serialize;

use crate::model::diagnostic::Diagnostic;
use crate::model::res::{by_owner, port_space_label, Owner, ResFacts};
use crate::output::Style;
use crate::render::diagnostic::{self as render, Evidence};
use crate::render::table::{or_dash, render as table, Cell, Tone};

/// Which owners a report lists: every one, or only the processes the user named.
fn shown(facts: &ResFacts, owner: &Owner) -> bool {
    facts.named.is_empty() && facts.comm.is_none()
        || owner.pid().is_some_and(|p| facts.named.contains(&p))
}

fn owner_label(owner: &Owner) -> String {
    match owner {
        Owner::Pid(p) => p.to_string(),
        Owner::Kernel(name) => format!("[{name}]"),
        Owner::Unseen => "-".to_string(),
    }
}

fn comm(facts: &ResFacts, owner: &Owner) -> String {
    match owner {
        Owner::Pid(p) => or_dash(facts.processes.get(p).and_then(|i| i.comm.clone())),
        Owner::Kernel(name) => format!("[{name}]"),
        Owner::Unseen => "(not visible from this PID namespace, or exited)".to_string(),
    }
}

fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

pub fn text(facts: &ResFacts, findings: &[Diagnostic], style: Style) -> String {
    let s = facts.latest();
    let mut out = String::new();
    if let Some(secs) = facts.seconds {
        out.push_str(&format!(
            "two readings {secs:.1} s apart; the second shown\n"
        ));
    }
    let owners = by_owner(s);
    let mut rows = Vec::new();
    let mut listed: Vec<Owner> = owners.keys().filter(|o| shown(facts, o)).cloned().collect();
    for pid in &facts.named {
        if !owners.contains_key(&Owner::Pid(*pid)) {
            listed.push(Owner::Pid(*pid));
        }
    }
    for o in &listed {
        let h = owners.get(o).cloned().unwrap_or_default();
        let info = o.pid().and_then(|p| facts.processes.get(&p));
        rows.push(vec![
            Cell::from(owner_label(o)),
            Cell::from(comm(facts, o)),
            Cell::from(or_dash(info.and_then(|i| i.state).map(|st| st.letter()))),
            Cell::new(
                h.qps.to_string(),
                if h.qps == 0 && h.mrs == 0 {
                    Tone::Warn
                } else {
                    Tone::Plain
                },
            ),
            Cell::from(h.cm_ids.to_string()),
            Cell::from(h.mrs.to_string()),
            Cell::from(bytes(h.mr_bytes)),
            Cell::from(h.cqs.to_string()),
            Cell::from(h.pds.to_string()),
            Cell::from(or_dash(info.and_then(|i| {
                i.container
                    .as_ref()
                    .map(|c| format!("container {c}"))
                    .or_else(|| i.cgroup.clone())
            }))),
        ]);
    }
    if rows.is_empty() {
        out.push_str(&format!(
            "no RDMA resources on {}\n",
            if s.devices.is_empty() {
                "any device (none in this network namespace)".to_string()
            } else {
                s.devices.join(", ")
            }
        ));
    } else {
        out.push_str(&table(
            &[
                "PID", "COMM", "STATE", "QPS", "CM_IDS", "MRS", "PINNED", "CQS", "PDS", "CGROUP",
            ],
            &rows,
            style,
        ));
    }
    let qps: Vec<Vec<Cell>> = s
        .qps
        .iter()
        .filter(|q| shown(facts, &q.owner))
        .map(|q| {
            let state = q.state.map(|st| st.label());
            let tone = match state.as_deref() {
                Some("ERR" | "SQE") => Tone::Bad,
                Some("RTS") => Tone::Good,
                _ => Tone::Plain,
            };
            vec![
                Cell::from(format!(
                    "{}{}",
                    q.device,
                    q.port.map(|p| format!("/{p}")).unwrap_or_default()
                )),
                Cell::from(q.lqpn.to_string()),
                Cell::from(or_dash(q.qp_type.map(|t| t.label()))),
                Cell::new(or_dash(state), tone),
                Cell::from(or_dash(q.rqpn)),
                Cell::from(or_dash(q.sq_psn.map(|p| format!("{p:#x}")))),
                Cell::from(or_dash(q.rq_psn.map(|p| format!("{p:#x}")))),
                Cell::from(owner_label(&q.owner)),
                Cell::from(comm(facts, &q.owner)),
            ]
        })
        .collect();
    if !qps.is_empty() {
        out.push('\n');
        out.push_str(&table(
            &[
                "LINK", "LQPN", "TYPE", "STATE", "RQPN", "SQ_PSN", "RQ_PSN", "PID", "COMM",
            ],
            &qps,
            style,
        ));
    }
    let cms: Vec<Vec<Cell>> = s
        .cm_ids
        .iter()
        .filter(|c| shown(facts, &c.owner))
        .map(|c| {
            vec![
                Cell::from(format!(
                    "{}{}",
                    c.device.as_deref().unwrap_or("-"),
                    c.port.map(|p| format!("/{p}")).unwrap_or_default()
                )),
                Cell::from(or_dash(c.id)),
                Cell::from(or_dash(c.lqpn)),
                Cell::from(or_dash(c.port_space.map(port_space_label))),
                Cell::from(or_dash(c.state.map(|st| st.label()))),
                Cell::from(or_dash(c.src)),
                Cell::from(or_dash(c.dst)),
                Cell::from(owner_label(&c.owner)),
                Cell::from(comm(facts, &c.owner)),
            ]
        })
        .collect();
    if !cms.is_empty() {
        out.push('\n');
        out.push_str(&table(
            &[
                "LINK", "CM_ID", "LQPN", "PS", "STATE", "SRC", "DST", "PID", "COMM",
            ],
            &cms,
            style,
        ));
        // Said once, so nobody reads a missing column as TOS 0.
        out.push_str("(the kernel does not report an rdma_cm ID's type of service)\n");
    }
    if !findings.is_empty() {
        out.push('\n');
        out.push_str(&render::lines(findings, style, Evidence::All));
    }
    out.push_str(&render::tally(findings));
    out
}

#[derive(Serialize)]
pub struct ResJson<'a> {
    interval_s: Option<f64>,
    devices: &'a [String],
    processes: Vec<ProcessJson>,
    qps: Vec<QpJson>,
    cm_ids: Vec<CmJson>,
    #[serde(serialize_with = "crate::model::diagnostic::json::findings")]
    findings: &'a [Diagnostic],
}

#[derive(Serialize)]
struct ProcessJson {
    pid: Option<u32>,
    kernel: Option<String>,
    comm: Option<String>,
    state: Option<String>,
    cgroup: Option<String>,
    container: Option<String>,
    holds_uverbs: Option<bool>,
    qps: usize,
    cm_ids: usize,
    mrs: usize,
    mr_bytes: u64,
    cqs: usize,
    pds: usize,
}

#[derive(Serialize)]
struct QpJson {
    device: String,
    port: Option<u32>,
    lqpn: u32,
    rqpn: Option<u32>,
    #[serde(rename = "type")]
    qp_type: Option<String>,
    state: Option<String>,
    sq_psn: Option<u32>,
    rq_psn: Option<u32>,
    pid: Option<u32>,
    kernel: Option<String>,
    /// With --interval: whether a PSN changed between the readings (null when the QP was
    /// not in the first one).
    psn_moved: Option<bool>,
}

#[derive(Serialize)]
struct CmJson {
    device: Option<String>,
    port: Option<u32>,
    id: Option<u32>,
    lqpn: Option<u32>,
    port_space: Option<String>,
    state: Option<String>,
    src: Option<String>,
    dst: Option<String>,
    pid: Option<u32>,
    kernel: Option<String>,
}

fn kernel_of(o: &Owner) -> Option<String> {
    match o {
        Owner::Kernel(n) => Some(n.clone()),
        _ => None,
    }
}

pub fn json<'a>(facts: &'a ResFacts, findings: &'a [Diagnostic]) -> ResJson<'a> {
    let s = facts.latest();
    let owners = by_owner(s);
    let mut listed: Vec<Owner> = owners.keys().filter(|o| shown(facts, o)).cloned().collect();
    for pid in &facts.named {
        if !owners.contains_key(&Owner::Pid(*pid)) {
            listed.push(Owner::Pid(*pid));
        }
    }
    let processes = listed
        .iter()
        .map(|o| {
            let h = owners.get(o).cloned().unwrap_or_default();
            let info = o.pid().and_then(|p| facts.processes.get(&p));
            ProcessJson {
                pid: o.pid(),
                kernel: kernel_of(o),
                comm: info.and_then(|i| i.comm.clone()),
                state: info.and_then(|i| i.state).map(|st| st.letter().to_string()),
                cgroup: info.and_then(|i| i.cgroup.clone()),
                container: info.and_then(|i| i.container.clone()),
                holds_uverbs: info.and_then(|i| i.holds_uverbs),
                qps: h.qps,
                cm_ids: h.cm_ids,
                mrs: h.mrs,
                mr_bytes: h.mr_bytes,
                cqs: h.cqs,
                pds: h.pds,
            }
        })
        .collect();
    let qps = s
        .qps
        .iter()
        .filter(|q| shown(facts, &q.owner))
        .map(|q| QpJson {
            device: q.device.clone(),
            port: q.port,
            lqpn: q.lqpn,
            rqpn: q.rqpn,
            qp_type: q.qp_type.map(|t| t.label()),
            state: q.state.map(|st| st.label()),
            sq_psn: q.sq_psn,
            rq_psn: q.rq_psn,
            pid: q.owner.pid(),
            kernel: kernel_of(&q.owner),
            psn_moved: facts.after.as_ref().and_then(|_| {
                facts
                    .before
                    .qps
                    .iter()
                    .find(|b| b.device == q.device && b.lqpn == q.lqpn && b.owner == q.owner)
                    .map(|b| b.sq_psn != q.sq_psn || b.rq_psn != q.rq_psn)
            }),
        })
        .collect();
    let cm_ids = s
        .cm_ids
        .iter()
        .filter(|c| shown(facts, &c.owner))
        .map(|c| CmJson {
            device: c.device.clone(),
            port: c.port,
            id: c.id,
            lqpn: c.lqpn,
            port_space: c.port_space.map(port_space_label),
            state: c.state.map(|st| st.label()),
            src: c.src.map(|a| a.to_string()),
            dst: c.dst.map(|a| a.to_string()),
            pid: c.owner.pid(),
            kernel: kernel_of(&c.owner),
        })
        .collect();
    ResJson {
        interval_s: facts.seconds,
        devices: &s.devices,
        processes,
        qps,
        cm_ids,
        findings,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::model::res::{
        CmId, CmState, ProcState, ProcessInfo, QpState, QpType, ResMr, ResQp, Snapshot,
    };

    fn facts() -> ResFacts {
        let qp = |lqpn, state, pid| ResQp {
            device: "rxe0".into(),
            port: Some(1),
            lqpn,
            rqpn: Some(lqpn + 1),
            rq_psn: Some(0x10),
            sq_psn: Some(0x20),
            qp_type: Some(QpType::Rc),
            state: Some(state),
            owner: Owner::Pid(pid),
        };
        let snap = Snapshot {
            devices: vec!["rxe0".into(), "rxe1".into()],
            qps: vec![qp(17, QpState::Rts, 100), qp(19, QpState::Err, 101)],
            cm_ids: vec![CmId {
                device: Some("rxe0".into()),
                port: Some(1),
                lqpn: Some(19),
                port_space: Some(0x106),
                state: Some(CmState::Connect),
                src: Some("192.168.77.1:7174".parse().unwrap()),
                dst: Some("192.168.77.2:40000".parse().unwrap()),
                id: Some(2),
                owner: Owner::Pid(101),
            }],
            mrs: vec![ResMr {
                device: "rxe0".into(),
                length: Some(3 << 20),
                mrn: Some(1),
                owner: Owner::Pid(100),
            }],
            ..Default::default()
        };
        let info = |pid, comm: &str, st| ProcessInfo {
            pid,
            comm: Some(comm.into()),
            state: Some(ProcState::from_letter(st)),
            cgroup: Some("/job".into()),
            ..Default::default()
        };
        ResFacts {
            before: snap,
            after: None,
            seconds: None,
            processes: BTreeMap::from([
                (100, info(100, "ibv_rc_pingpong", 'S')),
                (101, info(101, "rping", 'S')),
            ]),
            named: vec![],
            comm: None,
        }
    }

    #[test]
    fn text_lists_processes_qps_and_cm_ids() {
        let f = facts();
        let ds = crate::diagnose::res::findings(&f);
        let t = text(&f, &ds, Style::plain());
        assert!(t.contains("PID  COMM"), "{t}");
        assert!(
            t.lines().any(|l| l.starts_with("100")
                && l.contains("ibv_rc_pingpong")
                && l.contains("3.0 MiB")),
            "{t}"
        );
        assert!(
            t.lines().any(|l| l.starts_with("rxe0/1")
                && l.contains(" 17 ")
                && l.contains("RTS")
                && l.contains("0x20")),
            "{t}"
        );
        assert!(
            t.contains("192.168.77.1:7174") && t.contains("192.168.77.2:40000"),
            "{t}"
        );
        assert!(t.contains("does not report an rdma_cm ID's type of service"));
        assert!(
            t.lines()
                .any(|l| l.starts_with("FAIL") && l.contains("qp-error-live")),
            "{t}"
        );
    }

    #[test]
    fn named_filter_shows_only_them_and_one_without_resources() {
        let mut f = facts();
        f.named = vec![101, 555];
        f.processes.insert(
            555,
            ProcessInfo {
                pid: 555,
                comm: Some("sleep".into()),
                ..Default::default()
            },
        );
        let t = text(&f, &[], Style::plain());
        assert!(!t.contains("ibv_rc_pingpong"), "{t}");
        assert!(
            t.lines()
                .any(|l| l.starts_with("555") && l.contains("sleep")),
            "{t}"
        );
    }

    #[test]
    fn json_has_its_documented_shape() {
        let mut f = facts();
        f.after = Some(f.before.clone());
        f.seconds = Some(1.0);
        let ds = crate::diagnose::res::findings(&f);
        let json = serde_json::to_value(json(&f, &ds)).unwrap();
        let shape = crate::json_schema::mismatches("res", &json);
        assert!(shape.is_empty(), "{shape:#?}\n{json}");
        assert_eq!(json["qps"][0]["psn_moved"], false);
        assert_eq!(json["processes"][0]["mr_bytes"], 3 << 20);
        assert_eq!(json["cm_ids"][0]["dst"], "192.168.77.2:40000");
    }
}
