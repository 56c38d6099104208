//! `res`: the RDMA resources the kernel tracks for running processes (its restrack, as
//! the RDMA netlink's `RDMA_NLDEV_CMD_RES_*_GET` dumps list them and `rdma res show`
//! prints them): QPs, rdma_cm IDs, MRs, CQs and PDs, each with the process that made it,
//! and what /proc says about that process. Every field a kernel may leave out is an
//! `Option`; every kernel enum keeps an `Other` catch-all.

use std::collections::BTreeMap;
use std::net::SocketAddr;

/// Who made a resource: a user process (its PID as this PID namespace numbers it), a
/// kernel user (ib_core, rdma_cm, a ULP such as ib_srp), or neither (the process is gone
/// or lives outside this PID namespace, so the kernel sends no PID).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Owner {
    Pid(u32),
    Kernel(String),
    Unseen,
}

impl Owner {
    pub fn pid(&self) -> Option<u32> {
        match self {
            Owner::Pid(p) => Some(*p),
            _ => None,
        }
    }
}

/// `enum ib_qp_state` (include/rdma/ib_verbs.h), as `RDMA_NLDEV_ATTR_RES_STATE` carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QpState {
    Reset,
    Init,
    Rtr,
    Rts,
    Sqd,
    Sqe,
    Err,
    Other(u8),
}

impl QpState {
    pub fn from_kernel(v: u8) -> QpState {
        match v {
            0 => QpState::Reset,
            1 => QpState::Init,
            2 => QpState::Rtr,
            3 => QpState::Rts,
            4 => QpState::Sqd,
            5 => QpState::Sqe,
            6 => QpState::Err,
            other => QpState::Other(other),
        }
    }

    /// As `rdma res show qp` prints it.
    pub fn label(self) -> String {
        match self {
            QpState::Reset => "RESET".into(),
            QpState::Init => "INIT".into(),
            QpState::Rtr => "RTR".into(),
            QpState::Rts => "RTS".into(),
            QpState::Sqd => "SQD".into(),
            QpState::Sqe => "SQE".into(),
            QpState::Err => "ERR".into(),
            QpState::Other(v) => format!("state {v}"),
        }
    }
}

/// `enum ib_qp_type`, as `RDMA_NLDEV_ATTR_RES_TYPE` carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QpType {
    Smi,
    Gsi,
    Rc,
    Uc,
    Ud,
    RawIpv6,
    RawEthertype,
    RawPacket,
    XrcIni,
    XrcTgt,
    Driver,
    Other(u8),
}

impl QpType {
    pub fn from_kernel(v: u8) -> QpType {
        match v {
            0 => QpType::Smi,
            1 => QpType::Gsi,
            2 => QpType::Rc,
            3 => QpType::Uc,
            4 => QpType::Ud,
            5 => QpType::RawIpv6,
            6 => QpType::RawEthertype,
            8 => QpType::RawPacket,
            9 => QpType::XrcIni,
            10 => QpType::XrcTgt,
            0xff => QpType::Driver,
            other => QpType::Other(other),
        }
    }

    pub fn label(self) -> String {
        match self {
            QpType::Smi => "SMI".into(),
            QpType::Gsi => "GSI".into(),
            QpType::Rc => "RC".into(),
            QpType::Uc => "UC".into(),
            QpType::Ud => "UD".into(),
            QpType::RawIpv6 => "RAW_IPV6".into(),
            QpType::RawEthertype => "RAW_ETHERTYPE".into(),
            QpType::RawPacket => "RAW_PACKET".into(),
            QpType::XrcIni => "XRC_INI".into(),
            QpType::XrcTgt => "XRC_TGT".into(),
            QpType::Driver => "DRIVER".into(),
            QpType::Other(v) => format!("type {v}"),
        }
    }

    /// A connected QP: one peer, whose PSNs move with every message (RC, UC).
    pub fn connected(self) -> bool {
        matches!(self, QpType::Rc | QpType::Uc)
    }
}

/// `enum rdma_cm_state` (drivers/infiniband/core/cma_priv.h), as a CM ID's
/// `RDMA_NLDEV_ATTR_RES_STATE` carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmState {
    Idle,
    AddrQuery,
    AddrResolved,
    RouteQuery,
    RouteResolved,
    Connect,
    Disconnect,
    AddrBound,
    Listen,
    DeviceRemoval,
    Destroying,
    Other(u8),
}

impl CmState {
    pub fn from_kernel(v: u8) -> CmState {
        match v {
            0 => CmState::Idle,
            1 => CmState::AddrQuery,
            2 => CmState::AddrResolved,
            3 => CmState::RouteQuery,
            4 => CmState::RouteResolved,
            5 => CmState::Connect,
            6 => CmState::Disconnect,
            7 => CmState::AddrBound,
            8 => CmState::Listen,
            9 => CmState::DeviceRemoval,
            10 => CmState::Destroying,
            other => CmState::Other(other),
        }
    }

    pub fn label(self) -> String {
        match self {
            CmState::Idle => "IDLE".into(),
            CmState::AddrQuery => "ADDR_QUERY".into(),
            CmState::AddrResolved => "ADDR_RESOLVED".into(),
            CmState::RouteQuery => "ROUTE_QUERY".into(),
            CmState::RouteResolved => "ROUTE_RESOLVED".into(),
            CmState::Connect => "CONNECT".into(),
            CmState::Disconnect => "DISCONNECT".into(),
            CmState::AddrBound => "ADDR_BOUND".into(),
            CmState::Listen => "LISTEN".into(),
            CmState::DeviceRemoval => "DEVICE_REMOVAL".into(),
            CmState::Destroying => "DESTROYING".into(),
            CmState::Other(v) => format!("state {v}"),
        }
    }
}

/// rdma_cm's port space (`enum rdma_ucm_port_space`): the name `rdma res show cm_id` gives.
pub fn port_space_label(ps: u32) -> String {
    match ps {
        0x0002 => "IPOIB".into(),
        0x0106 => "TCP".into(),
        0x0111 => "UDP".into(),
        0x013f => "IB".into(),
        other => format!("{other:#x}"),
    }
}

/// One QP (`RDMA_NLDEV_ATTR_RES_QP_ENTRY`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResQp {
    pub device: String,
    /// Absent before the QP's first transition to INIT names a port.
    pub port: Option<u32>,
    pub lqpn: u32,
    /// RC and UC only.
    pub rqpn: Option<u32>,
    pub rq_psn: Option<u32>,
    pub sq_psn: Option<u32>,
    pub qp_type: Option<QpType>,
    pub state: Option<QpState>,
    pub owner: Owner,
}

/// One rdma_cm ID (`RDMA_NLDEV_ATTR_RES_CM_ID_ENTRY`). Its type of service is not among
/// the attributes the kernel sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CmId {
    pub device: Option<String>,
    pub port: Option<u32>,
    /// The QP bound to the ID, when one is.
    pub lqpn: Option<u32>,
    pub port_space: Option<u32>,
    pub state: Option<CmState>,
    pub src: Option<SocketAddr>,
    pub dst: Option<SocketAddr>,
    pub id: Option<u32>,
    pub owner: Owner,
}

/// One memory region: its length is the memory it pins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResMr {
    pub device: String,
    pub length: Option<u64>,
    pub mrn: Option<u32>,
    pub owner: Owner,
}

/// A CQ or a PD: counted per process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counted {
    pub device: String,
    pub id: Option<u32>,
    pub owner: Owner,
}

/// One reading of every device's resources.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub devices: Vec<String>,
    pub qps: Vec<ResQp>,
    pub cm_ids: Vec<CmId>,
    pub mrs: Vec<ResMr>,
    pub cqs: Vec<Counted>,
    pub pds: Vec<Counted>,
}

/// A process's state letter in /proc/PID/stat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcState {
    Running,
    Sleeping,
    DiskSleep,
    /// `T`: stopped by a signal (SIGSTOP, SIGTSTP).
    Stopped,
    /// `t`: stopped by a debugger.
    TracingStop,
    Zombie,
    Dead,
    Idle,
    Other(char),
}

impl ProcState {
    pub fn from_letter(c: char) -> ProcState {
        match c {
            'R' => ProcState::Running,
            'S' => ProcState::Sleeping,
            'D' => ProcState::DiskSleep,
            'T' => ProcState::Stopped,
            't' => ProcState::TracingStop,
            'Z' => ProcState::Zombie,
            'X' | 'x' => ProcState::Dead,
            'I' => ProcState::Idle,
            other => ProcState::Other(other),
        }
    }

    pub fn letter(self) -> char {
        match self {
            ProcState::Running => 'R',
            ProcState::Sleeping => 'S',
            ProcState::DiskSleep => 'D',
            ProcState::Stopped => 'T',
            ProcState::TracingStop => 't',
            ProcState::Zombie => 'Z',
            ProcState::Dead => 'X',
            ProcState::Idle => 'I',
            ProcState::Other(c) => c,
        }
    }

    /// Stopped, so it posts nothing and polls nothing: its QPs cannot move.
    pub fn stopped(self) -> bool {
        matches!(self, ProcState::Stopped | ProcState::TracingStop)
    }

    /// Alive as a process that can still run code (a zombie's resources are being freed).
    pub fn alive(self) -> bool {
        !matches!(self, ProcState::Zombie | ProcState::Dead)
    }
}

/// What /proc says about one process. `None` fields could not be read (the process ended
/// between the dump and the read, or /proc hides it).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProcessInfo {
    pub pid: u32,
    pub comm: Option<String>,
    pub state: Option<ProcState>,
    /// The cgroup v2 path (`0::PATH`), else the first hierarchy's path.
    pub cgroup: Option<String>,
    /// A container ID found in the cgroup path (docker, podman, containerd, CRI-O).
    pub container: Option<String>,
    /// Whether it holds a `/dev/infiniband/uverbs*` open; `None` when its fd directory is
    /// not readable (another user's process without CAP_SYS_PTRACE).
    pub holds_uverbs: Option<bool>,
}

/// What `res` read: the snapshot(s) and the processes they and the user name.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ResFacts {
    pub before: Snapshot,
    /// The second reading of `--interval`.
    pub after: Option<Snapshot>,
    pub seconds: Option<f64>,
    /// Every process that owns a resource or that the user named, by PID (read after
    /// the last snapshot).
    pub processes: BTreeMap<u32, ProcessInfo>,
    /// The processes the user named (`--pid`, or each match of `--comm`).
    pub named: Vec<u32>,
    /// `--comm`, when given.
    pub comm: Option<String>,
}

impl ResFacts {
    /// The snapshot judged last: the second with `--interval`, else the only one.
    pub fn latest(&self) -> &Snapshot {
        self.after.as_ref().unwrap_or(&self.before)
    }
}

/// One owner's resources, counted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Holdings {
    pub qps: usize,
    pub cm_ids: usize,
    pub mrs: usize,
    pub mr_bytes: u64,
    pub cqs: usize,
    pub pds: usize,
}

/// Each owner's resources in one snapshot, by owner.
pub fn by_owner(s: &Snapshot) -> BTreeMap<Owner, Holdings> {
    let mut all: BTreeMap<Owner, Holdings> = BTreeMap::new();
    for q in &s.qps {
        all.entry(q.owner.clone()).or_default().qps += 1;
    }
    for c in &s.cm_ids {
        all.entry(c.owner.clone()).or_default().cm_ids += 1;
    }
    for m in &s.mrs {
        let h = all.entry(m.owner.clone()).or_default();
        h.mrs += 1;
        h.mr_bytes = h.mr_bytes.saturating_add(m.length.unwrap_or(0));
    }
    for c in &s.cqs {
        all.entry(c.owner.clone()).or_default().cqs += 1;
    }
    for p in &s.pds {
        all.entry(p.owner.clone()).or_default().pds += 1;
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_numbers_map_and_unknown_ones_are_kept() {
        assert_eq!(QpState::from_kernel(3), QpState::Rts);
        assert_eq!(QpState::from_kernel(6).label(), "ERR");
        assert_eq!(QpState::from_kernel(9), QpState::Other(9));
        assert_eq!(QpType::from_kernel(2), QpType::Rc);
        assert_eq!(QpType::from_kernel(7), QpType::Other(7));
        assert!(QpType::Uc.connected() && !QpType::Ud.connected());
        assert_eq!(CmState::from_kernel(5).label(), "CONNECT");
        assert_eq!(CmState::from_kernel(42), CmState::Other(42));
        assert_eq!(port_space_label(0x106), "TCP");
        assert!(ProcState::from_letter('T').stopped());
        assert!(!ProcState::from_letter('Z').alive());
    }

    #[test]
    fn holdings_sum_pinned_bytes_per_owner() {
        let mr = |pid, len| ResMr {
            device: "rxe0".into(),
            length: Some(len),
            mrn: None,
            owner: Owner::Pid(pid),
        };
        let s = Snapshot {
            mrs: vec![mr(7, 4096), mr(7, 8192), mr(8, 1)],
            ..Default::default()
        };
        let all = by_owner(&s);
        assert_eq!(all[&Owner::Pid(7)].mr_bytes, 12288);
        assert_eq!(all[&Owner::Pid(7)].mrs, 2);
        assert_eq!(all[&Owner::Pid(8)].qps, 0);
        assert!(!all.contains_key(&Owner::Pid(9)));
    }
}
