//! `res`'s rules over one or two readings of the kernel's RDMA resources and what /proc
//! says of their processes: a QP in error in a live process (`qp-error-live`), an RTS QP
//! whose PSNs did not move under a stopped process (`qp-stalled`) or a running one
//! (`qp-no-progress`: idle or stalled, not decided), and a named process holding no QP or
//! MR (`no-rdma-resources`).

use crate::model::codes;
use crate::model::diagnostic::{Diagnostic, Severity, Subject};
use crate::model::res::{by_owner, CmId, Owner, ProcState, ProcessInfo, QpState, ResFacts, ResQp};

/// Every finding, in the order a person acts on them: dead connections, stalls, idle
/// QPs, named processes without resources.
pub fn findings(facts: &ResFacts) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let latest = facts.latest();
    for qp in &latest.qps {
        if let Some(d) = error_live(facts, qp) {
            out.push(d);
        }
    }
    if let Some(after) = &facts.after {
        for qp in &after.qps {
            if let Some(d) = no_progress(facts, qp) {
                out.push(d);
            }
        }
    }
    out.sort_by_key(|d| std::cmp::Reverse(d.severity));
    out.extend(unused(facts));
    out
}

/// `pid 4242 (ibv_rc_pingpong)`, or `pid 4242` when /proc had no command.
pub fn process_label(facts: &ResFacts, pid: u32) -> String {
    match facts.processes.get(&pid).and_then(|p| p.comm.as_deref()) {
        Some(comm) => format!("pid {pid} ({comm})"),
        None => format!("pid {pid}"),
    }
}

fn state_words(state: Option<ProcState>) -> String {
    let Some(s) = state else {
        return "state not read".to_string();
    };
    let words = match s {
        ProcState::Running => "running",
        ProcState::Sleeping => "sleeping",
        ProcState::DiskSleep => "in an uninterruptible wait",
        ProcState::Stopped => "stopped by a signal",
        ProcState::TracingStop => "stopped by a debugger",
        ProcState::Zombie => "a zombie: exited, not yet reaped",
        ProcState::Dead => "dead",
        ProcState::Idle => "an idle kernel thread",
        ProcState::Other(_) => "in an unknown state",
    };
    format!("state {} ({words})", s.letter())
}

fn subject(qp: &ResQp) -> Subject {
    match qp.port {
        Some(p) => Subject::Port(qp.device.clone(), p),
        None => Subject::Device(qp.device.clone()),
    }
}

/// `QP 17 RC RTS rqpn 18 sq-psn 0x1a rq-psn 0x2b`, as `rdma res show qp` words them.
pub fn qp_line(qp: &ResQp) -> String {
    let mut s = format!(
        "QP {} on {}{}",
        qp.lqpn,
        qp.device,
        qp.port.map(|p| format!("/{p}")).unwrap_or_default()
    );
    if let Some(t) = qp.qp_type {
        s.push_str(&format!(" {}", t.label()));
    }
    if let Some(st) = qp.state {
        s.push_str(&format!(" {}", st.label()));
    }
    if let Some(r) = qp.rqpn {
        s.push_str(&format!(" rqpn {r}"));
    }
    if let Some(p) = qp.sq_psn {
        s.push_str(&format!(" sq-psn {p:#x}"));
    }
    if let Some(p) = qp.rq_psn {
        s.push_str(&format!(" rq-psn {p:#x}"));
    }
    s
}

/// The rdma_cm ID that holds a QP, in the reading the QP came from.
pub fn cm_of<'a>(ids: &'a [CmId], qp: &ResQp) -> Option<&'a CmId> {
    ids.iter()
        .find(|c| c.lqpn == Some(qp.lqpn) && c.device.as_deref() == Some(qp.device.as_str()))
}

fn live(facts: &ResFacts, pid: u32) -> Option<&ProcessInfo> {
    facts
        .processes
        .get(&pid)
        .filter(|p| p.state.map_or(true, ProcState::alive))
}

fn error_live(facts: &ResFacts, qp: &ResQp) -> Option<Diagnostic> {
    let state = qp.state?;
    if !matches!(state, QpState::Err | QpState::Sqe) {
        return None;
    }
    let pid = qp.owner.pid()?;
    let proc = live(facts, pid)?;
    let who = process_label(facts, pid);
    let cm = cm_of(&facts.latest().cm_ids, qp);
    let peer = cm.and_then(|c| c.dst);
    let what = if state == QpState::Err {
        "a dead connection"
    } else {
        "its send queue failed (SQE): sends are dead, receives still work"
    };
    let mut d = Diagnostic::finding(
        Severity::Fail,
        codes::QP_ERROR_LIVE,
        format!(
            "QP {} of {who} is in {} while the process lives: {what}{}",
            qp.lqpn,
            state.label(),
            match peer {
                Some(p) => format!(" (peer {})", p.ip()),
                None => String::new(),
            }
        ),
    )
    .about(subject(qp))
    .evidence(qp_line(qp))
    .evidence(format!("{who}: {}", state_words(proc.state)));
    d = match cm {
        Some(c) => d.evidence(cm_line(c)),
        None => d.evidence(format!(
            "no rdma_cm ID holds QP {}: it was connected over the application's own exchange; its peer is QP {} on the other host",
            qp.lqpn,
            qp.rqpn.map(|r| r.to_string()).unwrap_or_else(|| "unknown".into())
        )),
    };
    Some(d.fix(format!(
        "a QP in {} never recovers: the process must destroy it and reconnect. Find why it broke: the job's log (`rdmactl triage LOG`); the peer{} (is its process alive? `rdmactl res` there); the port's retransmissions (`rdmactl counters -d {} --interval 5`)",
        state.label(),
        peer.map(|p| format!(" {}", p.ip())).unwrap_or_default(),
        qp.device
    )))
}

/// `rdma_cm ID 4 CONNECT 192.168.77.1:18515 -> 192.168.77.2:40000 (TCP port space)`.
pub fn cm_line(c: &CmId) -> String {
    format!(
        "rdma_cm ID{} {} {} -> {}{}",
        c.id.map(|i| format!(" {i}")).unwrap_or_default(),
        c.state
            .map(|s| s.label())
            .unwrap_or_else(|| "state unknown".into()),
        c.src.map(|a| a.to_string()).unwrap_or_else(|| "-".into()),
        c.dst.map(|a| a.to_string()).unwrap_or_else(|| "-".into()),
        c.port_space
            .map(|p| format!(" ({} port space)", crate::model::res::port_space_label(p)))
            .unwrap_or_default()
    )
}

/// An RTS RC/UC QP present in both readings, owned by the same live process, whose PSNs
/// did not move.
fn no_progress(facts: &ResFacts, qp: &ResQp) -> Option<Diagnostic> {
    if qp.state != Some(QpState::Rts) || !qp.qp_type.is_some_and(|t| t.connected()) {
        return None;
    }
    let pid = qp.owner.pid()?;
    let before = facts
        .before
        .qps
        .iter()
        .find(|b| b.device == qp.device && b.lqpn == qp.lqpn && b.owner == qp.owner)?;
    if before.state != Some(QpState::Rts)
        || before.sq_psn != qp.sq_psn
        || before.rq_psn != qp.rq_psn
        || qp.sq_psn.is_none()
    {
        return None;
    }
    let proc = live(facts, pid)?;
    let who = process_label(facts, pid);
    let secs = facts.seconds.unwrap_or(0.0);
    let psns = format!(
        "sq-psn {} and rq-psn {} the same in both readings, {secs:.1} s apart",
        qp.sq_psn
            .map(|p| format!("{p:#x}"))
            .unwrap_or_else(|| "-".into()),
        qp.rq_psn
            .map(|p| format!("{p:#x}"))
            .unwrap_or_else(|| "-".into()),
    );
    let stopped = proc.state.is_some_and(ProcState::stopped);
    let d = if stopped {
        Diagnostic::finding(
            Severity::Warn,
            codes::QP_STALLED,
            format!(
                "QP {} of {who} is stalled: its process is stopped, so its PSNs did not move in {secs:.1} s",
                qp.lqpn
            ),
        )
        .fix(format!(
            "continue it (`kill -CONT {pid}`) or find who stopped it (a debugger, a scheduler's suspend, a shell's Ctrl-Z); its peer{} waits meanwhile and, with sends in flight, runs out of retries",
            qp.rqpn.map(|r| format!(" (QP {r})")).unwrap_or_default()
        ))
    } else {
        Diagnostic::finding(
            Severity::Info,
            codes::QP_NO_PROGRESS,
            format!(
                "QP {} of {who} moved no packet in {secs:.1} s: idle or stalled, not decided (the process is not stopped; the dump has no per-QP counters to tell an idle QP from a stuck one)",
                qp.lqpn
            ),
        )
        .fix(format!(
            "look at the other end{}: `rdmactl res` on the peer's host (is its process stopped, its QP in ERR?), the job's log, or a longer --interval",
            qp.rqpn.map(|r| format!(" (QP {r})")).unwrap_or_default()
        ))
    };
    Some(
        d.about(subject(qp))
            .evidence(qp_line(qp))
            .evidence(psns)
            .evidence(format!("{who}: {}", state_words(proc.state))),
    )
}

/// Each process the user named that holds no QP and no MR in the latest reading.
fn unused(facts: &ResFacts) -> Vec<Diagnostic> {
    let latest = facts.latest();
    let held = by_owner(latest);
    facts
        .named
        .iter()
        .filter_map(|&pid| {
            let h = held.get(&Owner::Pid(pid)).cloned().unwrap_or_default();
            if h.qps > 0 || h.mrs > 0 {
                return None;
            }
            let proc = facts.processes.get(&pid);
            let who = process_label(facts, pid);
            let devices = if latest.devices.is_empty() {
                "no RDMA device in this network namespace".to_string()
            } else {
                format!("dumped {}", latest.devices.join(", "))
            };
            let mut d = Diagnostic::finding(
                Severity::Warn,
                codes::NO_RDMA_RESOURCES,
                format!("{who} holds no QP and no MR: it is not using RDMA"),
            )
            .about(Subject::Other(format!("pid {pid}")))
            .evidence(format!(
                "{who}: {}; {} QPs, {} MRs, {} CQs, {} PDs, {} rdma_cm IDs ({devices})",
                state_words(proc.and_then(|p| p.state)),
                h.qps,
                h.mrs,
                h.cqs,
                h.pds,
                h.cm_ids
            ));
            d = match proc.and_then(|p| p.holds_uverbs) {
                Some(true) => d.evidence(format!(
                    "{who} holds a /dev/infiniband/uverbs device open: it opened a device but made no QP (a setup that failed, or a phase not reached yet)"
                )),
                Some(false) => d.evidence(format!(
                    "{who} holds no /dev/infiniband/uverbs device open: it never opened one"
                )),
                None => d.evidence(format!(
                    "whether {who} holds a uverbs device open was not read (/proc/{pid}/fd is not readable by this user)"
                )),
            };
            Some(d.fix(
                "confirm what the job's library chose: with NCCL_DEBUG=INFO, NCCL prints `Using network IB` when it uses RDMA and `Using network Socket` when it fell back to TCP; UCX_LOG_LEVEL=info and `ucx_info -d` show UCX's transports; `rdmactl doctor` inside the job's container says whether the devices are usable there",
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::model::res::{CmState, QpType, ResMr, Snapshot};

    fn qp(lqpn: u32, state: QpState, psn: (u32, u32), pid: u32) -> ResQp {
        ResQp {
            device: "rxe0".into(),
            port: Some(1),
            lqpn,
            rqpn: Some(lqpn + 1),
            rq_psn: Some(psn.0),
            sq_psn: Some(psn.1),
            qp_type: Some(QpType::Rc),
            state: Some(state),
            owner: Owner::Pid(pid),
        }
    }

    fn proc(pid: u32, comm: &str, state: char) -> (u32, ProcessInfo) {
        (
            pid,
            ProcessInfo {
                pid,
                comm: Some(comm.into()),
                state: Some(ProcState::from_letter(state)),
                ..Default::default()
            },
        )
    }

    fn facts(
        before: Vec<ResQp>,
        after: Option<Vec<ResQp>>,
        procs: &[(u32, &str, char)],
    ) -> ResFacts {
        let snap = |qps| Snapshot {
            devices: vec!["rxe0".into()],
            qps,
            ..Default::default()
        };
        ResFacts {
            before: snap(before),
            after: after.map(snap),
            seconds: Some(1.0),
            processes: procs
                .iter()
                .map(|(p, c, s)| proc(*p, c, *s))
                .collect::<BTreeMap<_, _>>(),
            named: Vec::new(),
            comm: None,
        }
    }

    fn codes_of(ds: &[Diagnostic]) -> Vec<&str> {
        ds.iter().map(|d| d.code.as_str()).collect()
    }

    #[test]
    fn a_stopped_process_qp_is_stalled_and_its_running_peer_only_not_moving() {
        let before = vec![
            qp(17, QpState::Rts, (5, 9), 100),
            qp(18, QpState::Rts, (9, 5), 200),
        ];
        let f = facts(
            before.clone(),
            Some(before),
            &[(100, "ibv_rc_pingpong", 'T'), (200, "ibv_rc_pingpong", 'S')],
        );
        let ds = findings(&f);
        assert_eq!(codes_of(&ds), ["qp-stalled", "qp-no-progress"]);
        assert_eq!(ds[0].severity, Severity::Warn);
        assert!(ds[0].message.contains("pid 100 (ibv_rc_pingpong)"));
        assert!(ds[0].message.contains("process is stopped"));
        let seen: Vec<_> = ds[0].evidence.iter().map(|s| s.text.as_str()).collect();
        assert!(
            seen.iter()
                .any(|s| s.contains("state T (stopped by a signal)")),
            "{seen:?}"
        );
        assert!(ds[0].fix_text().contains("kill -CONT 100"));
        // The running one: not called stalled, and what decides it is said.
        assert_eq!(ds[1].severity, Severity::Info);
        assert!(ds[1].message.contains("idle or stalled, not decided"));
        assert!(!ds[1].message.contains("is stalled"));
    }

    #[test]
    fn moving_psns_or_one_reading_judge_nothing() {
        let f = facts(
            vec![qp(17, QpState::Rts, (5, 9), 100)],
            Some(vec![qp(17, QpState::Rts, (5, 10), 100)]),
            &[(100, "x", 'T')],
        );
        assert!(findings(&f).is_empty());
        let f = facts(
            vec![qp(17, QpState::Rts, (5, 9), 100)],
            None,
            &[(100, "x", 'T')],
        );
        assert!(findings(&f).is_empty());
        // A QP that is new in the second reading (same QPN, other process) is not compared.
        let f = facts(
            vec![qp(17, QpState::Rts, (5, 9), 100)],
            Some(vec![qp(17, QpState::Rts, (5, 9), 101)]),
            &[(101, "x", 'T')],
        );
        assert!(findings(&f).is_empty());
    }

    #[test]
    fn an_err_qp_in_a_live_process_names_its_cm_peer() {
        let mut f = facts(
            vec![qp(19, QpState::Err, (1, 2), 300)],
            None,
            &[(300, "rping", 'S')],
        );
        f.before.cm_ids.push(CmId {
            device: Some("rxe0".into()),
            port: Some(1),
            lqpn: Some(19),
            port_space: Some(0x106),
            state: Some(CmState::Connect),
            src: Some("192.168.77.1:7174".parse().unwrap()),
            dst: Some("192.168.77.2:41000".parse().unwrap()),
            id: Some(3),
            owner: Owner::Pid(300),
        });
        let ds = findings(&f);
        assert_eq!(codes_of(&ds), ["qp-error-live"]);
        assert_eq!(ds[0].severity, Severity::Fail);
        assert!(ds[0]
            .message
            .contains("dead connection (peer 192.168.77.2)"));
        assert!(ds[0]
            .evidence
            .iter()
            .any(|s| s.text.contains("192.168.77.1:7174 -> 192.168.77.2:41000")));
        assert_eq!(ds[0].label(), "rxe0/1");
        // Without a CM ID: the remote QPN is the only name of the peer.
        let f = facts(
            vec![qp(19, QpState::Err, (1, 2), 300)],
            None,
            &[(300, "x", 'R')],
        );
        let ds = findings(&f);
        assert!(ds[0]
            .evidence
            .iter()
            .any(|s| s.text.contains("its peer is QP 20 on the other host")));
        assert!(!ds[0].message.contains("peer 1"));
    }

    #[test]
    fn an_err_qp_of_a_zombie_or_unknown_process_is_not_live() {
        let f = facts(
            vec![qp(19, QpState::Err, (1, 2), 300)],
            None,
            &[(300, "x", 'Z')],
        );
        assert!(findings(&f).is_empty());
        let f = facts(vec![qp(19, QpState::Err, (1, 2), 300)], None, &[]);
        assert!(findings(&f).is_empty());
    }

    #[test]
    fn a_named_process_without_qp_or_mr_is_called_out() {
        let mut f = facts(
            vec![qp(17, QpState::Rts, (5, 9), 100)],
            None,
            &[(100, "a", 'S'), (555, "sleep", 'S')],
        );
        f.named = vec![555, 100];
        f.processes.get_mut(&555).unwrap().holds_uverbs = Some(false);
        let ds = findings(&f);
        assert_eq!(codes_of(&ds), ["no-rdma-resources"]);
        assert!(ds[0]
            .message
            .contains("pid 555 (sleep) holds no QP and no MR"));
        assert!(ds[0].fix_text().contains("Using network Socket"));
        assert!(ds[0]
            .evidence
            .iter()
            .any(|s| s.text.contains("never opened one")));
        // An MR alone is RDMA in use.
        f.before.mrs.push(ResMr {
            device: "rxe0".into(),
            length: Some(4096),
            mrn: None,
            owner: Owner::Pid(555),
        });
        assert!(findings(&f).is_empty());
    }
}
