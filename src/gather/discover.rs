//! The subnet walk: directed-route SMPs from the local port (NodeInfo, NodeDescription,
//! SmpPortInfo, SwitchInfo), then SMInfo from the subnet managers and PMA PmaCounters from
//! both ends of every link. Many MADs are in flight at once; each has its own timeout and
//! is resent a number of times before it counts as unanswered. A node that never answers
//! is recorded and the walk goes on. A gatherer: it speaks through any `MadTransport` (the
//! umad device, or a test's fake fabric) and returns a `topology::Subnet`.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::io;
use std::time::{Duration, Instant};

use crate::model::mad::{
    self as mad, DrPath, Header, MadNodeType, MadTransport, NodeInfo, SmpPortInfo, MAD_SIZE,
};
use crate::model::topology::{
    CounterValues, End, Link, MadStats, Node, SmSeen, Subnet, SubnetPort, Unanswered,
};

/// The walk's settings; `subnet`'s flags hold the defaults.
#[derive(Debug, Clone)]
pub struct WalkOptions {
    /// MADs outstanding at once.
    pub in_flight: usize,
    /// Resends of an unanswered MAD before it is given up.
    pub retries: u32,
    /// How long one send waits for its answer.
    pub timeout: Duration,
    /// Read PMA PmaCounters on both ends of every link.
    pub counters: bool,
}

/// What an answer is for.
#[derive(Debug, Clone)]
enum Asked {
    /// The node at the end of a route, reached out of `from` (None: the local node).
    NodeInfo {
        from: Option<End>,
    },
    NodeDesc(u64),
    SmpPortInfo(u64, u8),
    SwitchInfo(u64),
    SmInfo(u64),
    Counters(End),
    /// The PMA's ClassPortInfo of a node, asked by one of its link ends' LID.
    PmaClass(u64),
    CountersExt(End),
    Clear(End),
}

impl Asked {
    fn what(&self) -> String {
        match self {
            Asked::NodeInfo { .. } => "NodeInfo".into(),
            Asked::NodeDesc(_) => "NodeDescription".into(),
            Asked::SmpPortInfo(_, p) => format!("SmpPortInfo port {p}"),
            Asked::SwitchInfo(_) => "SwitchInfo".into(),
            Asked::SmInfo(_) => "SMInfo".into(),
            Asked::Counters(e) => format!("PmaCounters port {}", e.port),
            Asked::PmaClass(_) => "PMA ClassPortInfo".into(),
            Asked::CountersExt(e) => format!("PortCountersExtended port {}", e.port),
            Asked::Clear(e) => format!("PmaCounters Set (clear) port {}", e.port),
        }
    }
}

struct Job {
    want: Asked,
    route: DrPath,
    class: u8,
    method: u8,
    attr: u16,
    attr_mod: u32,
    data: Vec<u8>,
}

impl Job {
    fn smp(want: Asked, route: &[u8], attr: u16, attr_mod: u32) -> Job {
        Job {
            want,
            route: DrPath::Directed(route.to_vec()),
            class: mad::CLASS_SMP_DR,
            method: mad::METHOD_GET,
            attr,
            attr_mod,
            data: Vec::new(),
        }
    }
}

struct Pending {
    job: Job,
    mad: [u8; MAD_SIZE],
    sends: u32,
    deadline: Instant,
}

/// Why a request has no answer.
enum Miss {
    /// No answer after every resend.
    Lost,
    /// An answer with this MAD status.
    Status(u16),
}

/// Keeps up to `in_flight` requests outstanding, resends on timeout, and hands each answer
/// (or loss) to `on`, which may queue more requests.
fn pump<T: MadTransport>(
    t: &mut T,
    opts: &WalkOptions,
    tid: &mut u32,
    stats: &mut MadStats,
    mut jobs: VecDeque<Job>,
    mut on: impl FnMut(&Job, Result<Vec<u8>, Miss>, &mut VecDeque<Job>),
) -> io::Result<()> {
    let mut pending: HashMap<u32, Pending> = HashMap::new();
    let in_flight = opts.in_flight.max(1);
    loop {
        while pending.len() < in_flight {
            let Some(job) = jobs.pop_front() else { break };
            *tid = tid.wrapping_add(1).max(1);
            let Some(m) = mad::encode_request(
                job.class,
                job.method,
                u64::from(*tid),
                job.attr,
                job.attr_mod,
                &job.route,
                &job.data,
            ) else {
                // A route past 63 hops: the walk never builds one, but a loss is the truth.
                stats.unanswered += 1;
                on(&job, Err(Miss::Lost), &mut jobs);
                continue;
            };
            t.send(&m, &job.route)?;
            stats.requests += 1;
            pending.insert(
                *tid,
                Pending {
                    job,
                    mad: m,
                    sends: 1,
                    deadline: Instant::now() + opts.timeout,
                },
            );
            stats.in_flight_max = stats.in_flight_max.max(pending.len());
        }
        if pending.is_empty() {
            return Ok(());
        }
        let now = Instant::now();
        let first = pending.values().map(|p| p.deadline).min().unwrap_or(now);
        if let Some(reply) = t.recv(first.saturating_duration_since(now))? {
            // The transport owns the upper 32 TID bits (the kernel's agent id). An answer
            // to nothing pending (a late duplicate) is dropped.
            let answered =
                Header::decode(&reply).and_then(|h| Some((pending.remove(&(h.tid as u32))?, h)));
            if let Some((p, h)) = answered {
                if h.method != mad::METHOD_GET_RESP || h.status_code() != 0 {
                    stats.errors += 1;
                    on(&p.job, Err(Miss::Status(h.status_code())), &mut jobs);
                } else {
                    on(&p.job, Ok(reply), &mut jobs);
                }
            }
        }
        // Checked after every answer too: a steady stream of answers must not hold back
        // the resends of the ones that were lost.
        let now = Instant::now();
        let expired: Vec<u32> = pending
            .iter()
            .filter(|(_, p)| p.deadline <= now)
            .map(|(k, _)| *k)
            .collect();
        for key in expired {
            let Some(p) = pending.get_mut(&key) else {
                continue;
            };
            if p.sends <= opts.retries {
                // The same TID: a late answer to an earlier send is just as good.
                t.send(&p.mad, &p.job.route)?;
                p.sends += 1;
                p.deadline = now + opts.timeout;
                stats.resent += 1;
            } else if let Some(p) = pending.remove(&key) {
                stats.unanswered += 1;
                on(&p.job, Err(Miss::Lost), &mut jobs);
            }
        }
    }
}

/// Walks the subnet from the local port and reads SMInfo and (with `opts.counters`)
/// PmaCounters. An I/O error of the transport ends it; an unanswered node does not.
pub fn walk<T: MadTransport>(t: &mut T, opts: &WalkOptions) -> io::Result<Subnet> {
    let started = Instant::now();
    let mut tid = 0u32;
    let mut stats = MadStats::default();
    let mut found = Found::default();

    let first = VecDeque::from([Job::smp(
        Asked::NodeInfo { from: None },
        &[],
        mad::ATTR_NODE_INFO,
        0,
    )]);
    pump(t, opts, &mut tid, &mut stats, first, |job, answer, jobs| {
        found.on_smp_reply(job, answer, jobs)
    })?;
    found.apply_port0_masks();

    let local = found.local.ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "the local port did not answer NodeInfo after {} sends of {} ms",
                opts.retries + 1,
                opts.timeout.as_millis()
            ),
        )
    })?;
    let local_node = found.nodes.iter().find(|n| n.guid == local.guid);
    let local_port = local_node.and_then(|n| n.port(local.port).or_else(|| n.port(0)));
    let local_sm_lid = local_port.map(|p| p.sm_lid).unwrap_or(0);

    let second = second_pass(&found.nodes, &found.links, local_sm_lid, opts.counters);
    pump(
        t,
        opts,
        &mut tid,
        &mut stats,
        second,
        |job, answer, jobs| found.on_second_reply(job, answer, jobs),
    )?;
    found.apply_extended_counters();

    let Found {
        nodes,
        links,
        unanswered,
        sms,
        ..
    } = found;
    let local_port = nodes
        .iter()
        .find(|n| n.guid == local.guid)
        .and_then(|n| n.port(local.port).or_else(|| n.port(0)));
    Ok(Subnet {
        local,
        local_lid: local_port.map(|p| p.lid).unwrap_or(0),
        local_sm_lid,
        local_state: local_port.map(|p| p.state).unwrap_or("UNKNOWN"),
        nodes,
        links: links.into_iter().collect(),
        sms,
        unanswered,
        mads: stats,
        mads_by_node: Vec::new(),
        counters_skipped: Vec::new(),
        elapsed_ms: started.elapsed().as_millis() as u64,
        interval_s: None,
    })
}

/// What the walk has found so far, filled in by the answers of both passes.
#[derive(Default)]
struct Found {
    nodes: Vec<Node>,
    index: HashMap<u64, usize>,
    /// The port each node was first entered by: a switch does not walk back out of it.
    entry_port: HashMap<u64, u8>,
    links: BTreeSet<Link>,
    local: Option<End>,
    unanswered: Vec<Unanswered>,
    /// Switch ports as read, kept to be judged against their port 0 after the walk.
    switch_ports: Vec<(u64, u8, SmpPortInfo)>,
    sms: Vec<SmSeen>,
    /// PortCountersExtended as read, merged into the ports' counters after the second pass.
    extended: Vec<(End, Vec<(&'static str, u64)>)>,
}

impl Found {
    /// A request that got no answer (or an error status): recorded, and the walk goes on.
    fn lost(&mut self, job: &Job, miss: Miss) {
        let from = match &job.want {
            Asked::NodeInfo { from: Some(f) } => Some(*f),
            _ => None,
        };
        self.unanswered.push(Unanswered {
            route: job.route.to_string(),
            what: match miss {
                Miss::Lost => job.want.what(),
                Miss::Status(s) => format!("{} (MAD status {s:#06x})", job.want.what()),
            },
            via: from.map(|f| format!("{:#018x} port {}", f.guid, f.port)),
            from,
        });
    }

    /// The first pass: NodeInfo, NodeDescription, SwitchInfo and SmpPortInfo by directed
    /// route, each NodeInfo queueing the reads of its node and each live port the next hop.
    fn on_smp_reply(&mut self, job: &Job, answer: Result<Vec<u8>, Miss>, jobs: &mut VecDeque<Job>) {
        let reply = match answer {
            Ok(r) => r,
            Err(miss) => return self.lost(job, miss),
        };
        let Some(data) = mad::data(&reply) else {
            return;
        };
        let DrPath::Directed(route) = &job.route else {
            return;
        };
        match &job.want {
            Asked::NodeInfo { from } => self.node_info(data, route, *from, jobs),
            Asked::NodeDesc(g) => {
                if let (Some(&i), Some(d)) = (self.index.get(g), mad::node_description(data)) {
                    self.nodes[i].description = d;
                }
            }
            Asked::SwitchInfo(g) => {
                if let (Some(&i), Some(si)) = (self.index.get(g), mad::SwitchInfo::decode(data)) {
                    self.nodes[i].enhanced_port0 = si.enhanced_port0;
                }
            }
            Asked::SmpPortInfo(g, p) => self.port_info(data, route, *g, *p, jobs),
            _ => {}
        }
    }

    /// The node at the end of `route`: a new node is recorded and its description, switch
    /// info and ports are asked for; a known one gains the port it was reached by.
    fn node_info(
        &mut self,
        data: &[u8],
        route: &[u8],
        from: Option<End>,
        jobs: &mut VecDeque<Job>,
    ) {
        let Some(ni) = NodeInfo::decode(data) else {
            return;
        };
        let here = End {
            guid: ni.node_guid,
            port: ni.local_port,
        };
        if route.is_empty() {
            self.local = Some(here);
        }
        if let Some(f) = from {
            self.links.insert(Link::new(f, here));
        }
        if let Some(&i) = self.index.get(&ni.node_guid) {
            if !self.nodes[i]
                .port_guids
                .iter()
                .any(|(p, _)| *p == ni.local_port)
            {
                self.nodes[i].port_guids.push((ni.local_port, ni.port_guid));
            }
            // Another port of a known CA: its SmpPortInfo is still to read.
            let n = &self.nodes[i];
            if !n.is_switch() && n.port(ni.local_port).is_none() {
                jobs.push_back(Job::smp(
                    Asked::SmpPortInfo(ni.node_guid, ni.local_port),
                    route,
                    mad::ATTR_PORT_INFO,
                    u32::from(ni.local_port),
                ));
            }
            return;
        }
        self.index.insert(ni.node_guid, self.nodes.len());
        self.entry_port.insert(ni.node_guid, ni.local_port);
        self.nodes.push(Node {
            guid: ni.node_guid,
            node_type: ni.node_type,
            description: String::new(),
            lid: 0,
            num_ports: ni.num_ports,
            system_image_guid: ni.system_image_guid,
            vendor_id: ni.vendor_id,
            device_id: ni.device_id,
            enhanced_port0: false,
            port_guids: vec![(ni.local_port, ni.port_guid)],
            route: route.to_vec(),
            ports: Vec::new(),
        });
        let g = ni.node_guid;
        jobs.push_back(Job::smp(Asked::NodeDesc(g), route, mad::ATTR_NODE_DESC, 0));
        if ni.node_type == MadNodeType::Switch {
            jobs.push_back(Job::smp(
                Asked::SwitchInfo(g),
                route,
                mad::ATTR_SWITCH_INFO,
                0,
            ));
            for p in 0..=ni.num_ports {
                jobs.push_back(Job::smp(
                    Asked::SmpPortInfo(g, p),
                    route,
                    mad::ATTR_PORT_INFO,
                    u32::from(p),
                ));
            }
        } else {
            jobs.push_back(Job::smp(
                Asked::SmpPortInfo(g, ni.local_port),
                route,
                mad::ATTR_PORT_INFO,
                u32::from(ni.local_port),
            ));
        }
    }

    /// Port `p` of node `g`: recorded, and when its link is up and it leads on, the node
    /// behind it is asked for.
    fn port_info(&mut self, data: &[u8], route: &[u8], g: u64, p: u8, jobs: &mut VecDeque<Job>) {
        let (Some(&i), Some(pi)) = (self.index.get(&g), SmpPortInfo::decode(data)) else {
            return;
        };
        let node = &mut self.nodes[i];
        if node.is_switch() {
            self.switch_ports.push((g, p, pi.clone()));
        }
        let port = subnet_port(p, &pi);
        if node.lid == 0 && (p == 0 || !node.is_switch()) {
            node.lid = pi.lid;
        }
        node.ports.retain(|x| x.port != p);
        node.ports.push(port);
        node.ports.sort_by_key(|x| x.port);
        let up = pi.phys_state == mad::PHYS_LINK_UP;
        let walk_on = if node.is_switch() {
            // A switch's physical ports lead on, except the one we came in by.
            p >= 1 && (route.is_empty() || self.entry_port.get(&g) != Some(&p))
        } else {
            // Only the local CA's own port leads out; a CA does not forward.
            route.is_empty()
        };
        if up && walk_on && route.len() < mad::MAX_HOPS {
            let mut next = route.to_vec();
            next.push(p);
            jobs.push_back(Job::smp(
                Asked::NodeInfo {
                    from: Some(End { guid: g, port: p }),
                },
                &next,
                mad::ATTR_NODE_INFO,
                0,
            ));
        }
    }

    /// A switch's external ports carry no capability mask of their own: port 0's says
    /// whether the LinkSpeedExt fields hold (as libibnetdisc reads them).
    fn apply_port0_masks(&mut self) {
        for (guid, num, pi) in &self.switch_ports {
            let Some(node) = self.nodes.iter_mut().find(|n| n.guid == *guid) else {
                continue;
            };
            let port0_mask = self
                .switch_ports
                .iter()
                .find(|(g, n, _)| g == guid && *n == 0)
                .map(|(_, _, p)| p.capability_mask);
            let (Some(mask), Some(slot)) =
                (port0_mask, node.ports.iter_mut().find(|x| x.port == *num))
            else {
                continue;
            };
            if *num != 0 {
                let mut with_mask = pi.clone();
                with_mask.capability_mask |= mask & mad::CAP_EXT_SPEEDS;
                let counters = slot.counters.take();
                *slot = subnet_port(slot.port, &with_mask);
                slot.counters = counters;
            }
        }
    }

    /// The second pass: SMInfo, PmaCounters, the PMA's ClassPortInfo and, where it has
    /// them, the extended counters.
    fn on_second_reply(
        &mut self,
        job: &Job,
        answer: Result<Vec<u8>, Miss>,
        jobs: &mut VecDeque<Job>,
    ) {
        let reply = match answer {
            Ok(r) => r,
            Err(miss) => return self.lost(job, miss),
        };
        let Some(data) = mad::data(&reply) else {
            return;
        };
        match &job.want {
            Asked::SmInfo(g) => {
                if let Some(si) = mad::SmInfo::decode(data) {
                    let lid = self
                        .nodes
                        .iter()
                        .find(|n| n.guid == *g)
                        .map(|n| n.lid)
                        .unwrap_or(0);
                    self.sms.push(SmSeen {
                        guid: si.guid,
                        lid,
                        priority: si.priority,
                        state: mad::sm_state_name(si.state),
                        act_count: si.act_count,
                    });
                }
            }
            Asked::Counters(end) => {
                if let (Some(c), Some(n)) = (
                    mad::PmaCounters::decode(data),
                    self.nodes.iter_mut().find(|n| n.guid == end.guid),
                ) {
                    if let Some(p) = n.ports.iter_mut().find(|p| p.port == end.port) {
                        p.counters = Some(c.values);
                    }
                }
            }
            Asked::PmaClass(guid) => {
                let has_ext =
                    mad::class_port_info_capmask(data).is_some_and(|m| m & mad::PM_EXT_WIDTH != 0);
                if has_ext {
                    for end in self.links.iter().flat_map(|l| [l.a, l.b]) {
                        if end.guid == *guid {
                            jobs.push_back(pma_job(
                                Asked::CountersExt(end),
                                job.route.clone(),
                                mad::ATTR_PORT_COUNTERS_EXT,
                                end.port,
                            ));
                        }
                    }
                }
            }
            Asked::CountersExt(end) => {
                if let Some(values) = mad::port_counters_ext(data) {
                    self.extended.push((*end, values));
                }
            }
            _ => {}
        }
    }

    /// The 64-bit data and packet counters replace PmaCounters' 32-bit ones, which
    /// saturate within seconds on a busy link.
    fn apply_extended_counters(&mut self) {
        for (end, values) in std::mem::take(&mut self.extended) {
            let port = self
                .nodes
                .iter_mut()
                .find(|n| n.guid == end.guid)
                .and_then(|n| n.ports.iter_mut().find(|p| p.port == end.port));
            let Some(counters) = port.and_then(|p| p.counters.as_mut()) else {
                continue;
            };
            for (name, value) in values {
                counters.retain(|(n, _, _)| *n != name);
                counters.push((name, value, 64));
            }
        }
    }
}

/// The second pass's requests. SMInfo: from the node holding the local port's SM LID, and
/// from every node with a port that says it is an SM. With `counters`, PmaCounters of
/// both ends of every link and the PMA's ClassPortInfo of each node once.
fn second_pass(
    nodes: &[Node],
    links: &BTreeSet<Link>,
    local_sm_lid: u16,
    counters: bool,
) -> VecDeque<Job> {
    let mut sm_nodes: Vec<u64> = Vec::new();
    for n in nodes {
        let holds_sm_lid =
            local_sm_lid != 0 && n.ports.iter().any(|p| p.lid == local_sm_lid && p.lid != 0);
        if (holds_sm_lid || n.ports.iter().any(|p| p.is_sm)) && !sm_nodes.contains(&n.guid) {
            sm_nodes.push(n.guid);
        }
    }
    let mut second: VecDeque<Job> = VecDeque::new();
    for g in &sm_nodes {
        if let Some(n) = nodes.iter().find(|n| n.guid == *g) {
            second.push_back(Job::smp(Asked::SmInfo(*g), &n.route, mad::ATTR_SM_INFO, 0));
        }
    }
    if counters {
        let mut asked: Vec<u64> = Vec::new();
        for end in links.iter().flat_map(|l| [l.a, l.b]) {
            if let Some(mut job) = counters_job(nodes, end, false) {
                second.push_back(pma_job(
                    Asked::Counters(end),
                    job.route.clone(),
                    mad::ATTR_PORT_COUNTERS,
                    end.port,
                ));
                if !asked.contains(&end.guid) {
                    asked.push(end.guid);
                    job.want = Asked::PmaClass(end.guid);
                    job.attr = mad::ATTR_CLASS_PORT_INFO;
                    job.data = Vec::new();
                    second.push_back(job);
                }
            }
        }
    }
    second
}

/// A PMA request for one link end, LID-routed (the PMA is a GSI class: no directed
/// routes). None when the end's node has no LID yet (no SM has assigned one).
fn counters_job(nodes: &[Node], end: End, clear: bool) -> Option<Job> {
    let node = nodes.iter().find(|n| n.guid == end.guid)?;
    let lid = if node.is_switch() {
        node.lid
    } else {
        node.port(end.port)?.lid
    };
    if lid == 0 {
        return None;
    }
    Some(Job {
        want: if clear {
            Asked::Clear(end)
        } else {
            Asked::Counters(end)
        },
        route: DrPath::Lid(lid),
        class: mad::CLASS_PERF,
        method: if clear {
            mad::METHOD_SET
        } else {
            mad::METHOD_GET
        },
        attr: mad::ATTR_PORT_COUNTERS,
        attr_mod: 0,
        data: if clear {
            mad::port_counters_clear(end.port).to_vec()
        } else {
            mad::port_counters_select(end.port).to_vec()
        },
    })
}

/// Reads PmaCounters of every link end again after `interval`: the first reading moves to
/// `counters_before`, so the rules judge what changed in between.
pub fn reread_counters<T: MadTransport>(
    t: &mut T,
    opts: &WalkOptions,
    subnet: &mut Subnet,
    interval: Duration,
) -> io::Result<()> {
    std::thread::sleep(interval);
    let jobs: VecDeque<Job> = subnet
        .links
        .iter()
        .flat_map(|l| [l.a, l.b])
        .filter_map(|e| counters_job(&subnet.nodes, e, false))
        .collect();
    let mut tid = 0x2000_0000u32;
    let mut readings: Vec<(End, CounterValues)> = Vec::new();
    pump(
        t,
        opts,
        &mut tid,
        &mut subnet.mads,
        jobs,
        |job, answer, _| {
            let (Asked::Counters(end), Ok(reply)) = (&job.want, answer) else {
                return;
            };
            if let Some(c) = mad::data(&reply).and_then(mad::PmaCounters::decode) {
                readings.push((*end, c.values));
            }
        },
    )?;
    for (end, values) in readings {
        let port = subnet
            .nodes
            .iter_mut()
            .find(|n| n.guid == end.guid)
            .and_then(|n| n.ports.iter_mut().find(|p| p.port == end.port));
        if let Some(p) = port {
            p.counters_before = p.counters.take();
            p.counters = Some(values);
        }
    }
    subnet.interval_s = Some(interval.as_secs_f64());
    Ok(())
}

/// A PMA Get of `attr` for one port, to the route (LID) the port's node answers on.
fn pma_job(want: Asked, route: DrPath, attr: u16, port: u8) -> Job {
    Job {
        want,
        route,
        class: mad::CLASS_PERF,
        method: mad::METHOD_GET,
        attr,
        attr_mod: 0,
        data: mad::port_counters_select(port).to_vec(),
    }
}

/// Clears PmaCounters on every end of every link (a PMA Set; only on
/// `--reset-counters`). Returns the ends that did not confirm.
pub fn clear_counters<T: MadTransport>(
    t: &mut T,
    opts: &WalkOptions,
    subnet: &Subnet,
) -> io::Result<Vec<End>> {
    let jobs: VecDeque<Job> = subnet
        .links
        .iter()
        .flat_map(|l| [l.a, l.b])
        .filter_map(|e| counters_job(&subnet.nodes, e, true))
        .collect();
    let mut failed = Vec::new();
    let mut tid = 0x4000_0000u32;
    let mut stats = MadStats::default();
    pump(t, opts, &mut tid, &mut stats, jobs, |job, answer, _| {
        if let (Asked::Clear(e), Err(_)) = (&job.want, answer) {
            failed.push(*e);
        }
    })?;
    Ok(failed)
}

fn subnet_port(num: u8, pi: &SmpPortInfo) -> SubnetPort {
    SubnetPort {
        port: num,
        lid: pi.lid,
        state: mad::port_state_name(pi.state),
        phys_state: mad::phys_state_name(pi.phys_state),
        width: mad::width_lanes(pi.width_active),
        max_width: pi.max_width_lanes(),
        speed: pi.speed(),
        max_speed: pi.max_speed(),
        supported_width: pi.supported_width_lanes(),
        supported_speed: pi.supported_speed(),
        mtu_cap: mad::mtu_bytes(pi.mtu_cap),
        active_mtu: mad::mtu_bytes(pi.neighbor_mtu),
        vl_cap: mad::data_vls(pi.vl_cap),
        operational_vls: mad::data_vls(pi.operational_vls),
        sm_lid: pi.sm_lid,
        is_sm: pi.capability_mask & mad::CAP_IS_SM != 0,
        counters: None,
        counters_before: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// A fabric in memory: node 0 is the local CA. `links[(node, port)] = (node, port)`.
    struct Fake {
        kinds: Vec<u8>,
        ports: Vec<u8>,
        links: HashMap<(usize, u8), (usize, u8)>,
        dead: HashSet<usize>,
        /// Every `drop_every`-th request is lost the first time it is sent.
        drop_every: u64,
        sent: u64,
        dropped_once: HashSet<u64>,
        queue: VecDeque<Vec<u8>>,
    }

    impl Fake {
        fn guid(node: usize) -> u64 {
            0x1000 + node as u64
        }

        fn resolve(&self, path: &[u8]) -> Option<(usize, u8)> {
            let (mut node, mut port) = (0usize, 1u8);
            for hop in path {
                (node, port) = *self.links.get(&(node, *hop))?;
            }
            Some((node, port))
        }
    }

    impl MadTransport for Fake {
        fn send(&mut self, m: &[u8; MAD_SIZE], to: &DrPath) -> io::Result<()> {
            self.sent += 1;
            let tid = u64::from_be_bytes(m[8..16].try_into().unwrap());
            if self.drop_every > 0
                && self.sent % self.drop_every == 0
                && self.dropped_once.insert(tid)
            {
                return Ok(());
            }
            let DrPath::Directed(path) = to else {
                return Ok(()); // no PMA in this fabric: counters go unanswered
            };
            let Some((node, entry)) = self.resolve(path) else {
                return Ok(());
            };
            if self.dead.contains(&node) {
                return Ok(());
            }
            let mut r = m.to_vec();
            r[3] = mad::METHOD_GET_RESP;
            r[4] = 0x80;
            let d = &mut r[64..];
            let attr = u16::from_be_bytes([m[16], m[17]]);
            let attr_mod = u32::from_be_bytes(m[20..24].try_into().unwrap()) as u8;
            match attr {
                mad::ATTR_NODE_INFO => {
                    d[2] = self.kinds[node];
                    d[3] = self.ports[node];
                    d[12..20].copy_from_slice(&Self::guid(node).to_be_bytes());
                    d[20..28].copy_from_slice(&(Self::guid(node) + 0x100).to_be_bytes());
                    d[36] = entry;
                }
                mad::ATTR_NODE_DESC => {
                    d[..6].copy_from_slice(format!("node{node:02}").as_bytes());
                }
                mad::ATTR_PORT_INFO => {
                    let linked = self.links.contains_key(&(node, attr_mod)) || attr_mod == 0;
                    d[16..18].copy_from_slice(&(node as u16 + 1).to_be_bytes());
                    d[18..20].copy_from_slice(&1u16.to_be_bytes());
                    d[29] = 3;
                    d[30] = 3;
                    d[31] = 2;
                    d[32] = (1 << 4) | if linked { 4 } else { 1 };
                    d[33] = if linked { 5 << 4 } else { 2 << 4 };
                    d[35] = (1 << 4) | 1;
                }
                _ => {}
            }
            self.queue.push_back(r);
            Ok(())
        }

        fn recv(&mut self, _timeout: Duration) -> io::Result<Option<Vec<u8>>> {
            Ok(self.queue.pop_front())
        }
    }

    /// CA 0 on switch 1 port 1; switch 1 port 2 to switch 2 port 5; CAs 3 and 4 on switch
    /// 2 ports 1 and 2; CA 5 (dead) on switch 2 port 3.
    fn fabric(drop_every: u64) -> Fake {
        let mut links = HashMap::new();
        for (a, b) in [
            ((0, 1), (1, 1)),
            ((1, 2), (2, 5)),
            ((3, 1), (2, 1)),
            ((4, 1), (2, 2)),
            ((5, 1), (2, 3)),
        ] {
            links.insert(a, b);
            links.insert(b, a);
        }
        Fake {
            kinds: vec![1, 2, 2, 1, 1, 1],
            ports: vec![1, 8, 8, 1, 1, 1],
            links,
            dead: HashSet::from([5]),
            drop_every,
            sent: 0,
            dropped_once: HashSet::new(),
            queue: VecDeque::new(),
        }
    }

    fn opts() -> WalkOptions {
        WalkOptions {
            in_flight: 4,
            retries: 2,
            timeout: Duration::from_millis(1),
            counters: true,
        }
    }

    #[test]
    fn the_walk_finds_every_node_and_link_and_reports_the_dead_one() {
        let s = walk(&mut fabric(0), &opts()).unwrap();
        let guids: BTreeSet<u64> = s.nodes.iter().map(|n| n.guid).collect();
        assert_eq!(guids, (0..5).map(Fake::guid).collect());
        assert_eq!(
            s.local,
            End {
                guid: Fake::guid(0),
                port: 1
            }
        );
        assert_eq!(s.links.len(), 4, "{:?}", s.links);
        assert!(s.links.contains(&Link::new(
            End {
                guid: Fake::guid(1),
                port: 2
            },
            End {
                guid: Fake::guid(2),
                port: 5
            }
        )));
        let dead: Vec<_> = s
            .unanswered
            .iter()
            .filter(|u| u.what == "NodeInfo")
            .collect();
        assert_eq!(dead.len(), 1);
        assert_eq!(dead[0].route, "DR path 0,1,2,3");
        assert_eq!(
            dead[0].from,
            Some(End {
                guid: Fake::guid(2),
                port: 3
            })
        );
        assert_eq!(s.nodes[2].description, "node02");
        assert!(s.mads.in_flight_max <= 4);
        // The fake has no PMA: every PmaCounters request is reported unanswered, and the
        // walk's result stands.
        assert_eq!(s.local_sm_lid, 1);
        assert!(s
            .unanswered
            .iter()
            .any(|u| u.what.starts_with("PmaCounters") && u.route.starts_with("LID ")));
    }

    #[test]
    fn lost_mads_are_resent_and_the_walk_is_the_same() {
        let clean = walk(&mut fabric(0), &opts()).unwrap();
        let lossy = walk(&mut fabric(3), &opts()).unwrap();
        assert!(lossy.mads.resent > 0);
        assert_eq!(lossy.links, clean.links);
        assert_eq!(lossy.nodes.len(), clean.nodes.len());
        assert_eq!(
            lossy
                .unanswered
                .iter()
                .filter(|u| u.what == "NodeInfo")
                .count(),
            1,
            "only the dead node"
        );
    }

    #[test]
    fn a_local_port_that_never_answers_is_an_error_naming_the_retries() {
        let mut f = fabric(0);
        f.dead.insert(0);
        let err = walk(&mut f, &opts()).unwrap_err();
        assert!(
            err.to_string()
                .contains("did not answer NodeInfo after 3 sends"),
            "{err}"
        );
    }
}
