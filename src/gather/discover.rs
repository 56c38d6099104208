//! The subnet walk: directed-route SMPs from the local port (NodeInfo, NodeDescription,
//! SmpPortInfo, SwitchInfo), then SMInfo from the subnet managers and PMA PmaCounters from
//! both ends of every link. Many MADs are in flight at once; each has its own timeout and
//! is resent a number of times before it counts as unanswered. A node that never answers
//! is recorded and the walk goes on. A gatherer: it speaks through any `MadTransport` (the
//! umad device, or a test's fake fabric) and returns a `topology::Subnet`.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::io;
use std::time::{Duration, Instant};

use crate::model::mad::{
    self as mad, DrPath, Header, MadNodeType, MadTransport, NodeInfo, Received, SmpPortInfo,
    MAD_SIZE,
};
use crate::model::topology::{
    CounterValues, End, Link, MadStats, Node, NodeMads, SmSeen, Subnet, SubnetPort, Unanswered,
};

/// The walk's settings; `subnet`'s flags hold the defaults.
#[derive(Debug, Clone)]
pub struct WalkOptions {
    /// MADs outstanding at once.
    pub in_flight: usize,
    /// Resends of an unanswered MAD before it is given up.
    pub retries: u32,
    /// The longest one send waits for its answer, and how long a node may stay silent
    /// while its requests are out before it is given up.
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
    /// The directed route of the node the request is for (a PMA request's too, though it
    /// goes by LID): a node silent for a --timeout is given up with every request whose
    /// key starts with its route, the ones for nodes behind it.
    key: Vec<u8>,
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
            key: route.to_vec(),
            class: mad::CLASS_SMP_DR,
            method: mad::METHOD_GET,
            attr,
            attr_mod,
            data: Vec::new(),
        }
    }

    /// The node whose MAD count this request adds to: the node it is for, or for the
    /// NodeInfo of a node not known yet, the switch it was sent out of.
    fn counted_for(&self) -> Option<u64> {
        match &self.want {
            Asked::NodeInfo { from } => from.map(|f| f.guid),
            Asked::NodeDesc(g)
            | Asked::SmpPortInfo(g, _)
            | Asked::SwitchInfo(g)
            | Asked::SmInfo(g)
            | Asked::PmaClass(g) => Some(*g),
            Asked::Counters(e) | Asked::CountersExt(e) | Asked::Clear(e) => Some(e.guid),
        }
    }
}

struct Pending {
    job: Job,
    mad: [u8; MAD_SIZE],
    sends: u32,
    /// Sends of this TID neither answered nor given back by the transport.
    out: u32,
    first_sent: Instant,
    deadline: Instant,
}

/// Why a request has no answer.
enum Miss {
    /// No answer after every resend, or its node was given up.
    Lost,
    /// An answer with this MAD status.
    Status(u16),
}

/// The resend timer's floor: below it, a busy host's scheduling (not the fabric) delays
/// answers, and an early resend would be reported as loss on a healthy fabric.
const MIN_TIMER: Duration = Duration::from_millis(50);

/// The resend timer. A first send waits the whole --timeout: the transports that matter
/// report a lost send themselves (ibsim at once, the kernel when that timeout passes), and
/// a shorter timer on a loaded host resends MADs that were never lost, which the report
/// would call loss on a healthy fabric (measured: 17 to 108 spurious resends of 7,689 on
/// a 474-node ibsim fabric with a timer from the answer times). A request already lost
/// once is on a lossy path: its resends wait twice the slowest answer measured yet (Karn's
/// rule: only answers to requests sent once), at least `MIN_TIMER`, doubling per resend.
#[derive(Default)]
struct Clock {
    slowest: Option<Duration>,
}

impl Clock {
    fn sample(&mut self, took: Duration) {
        self.slowest = Some(self.slowest.map_or(took, |s| s.max(took)));
    }

    /// How long send number `sends` (1 = the first) waits, never more than `cap`
    /// (--timeout).
    fn timer(&self, sends: u32, cap: Duration) -> Duration {
        let (Some(slowest), true) = (self.slowest, sends >= 2) else {
            return cap;
        };
        let base = slowest.saturating_mul(2).max(MIN_TIMER);
        base.saturating_mul(1 << (sends - 2).min(16)).min(cap)
    }
}

/// What the pumps of one command share: the counts, per node too, and the answer clock.
#[derive(Default)]
struct Tally {
    stats: MadStats,
    /// guid → (requests, retried).
    by_node: BTreeMap<u64, (u64, u64)>,
    clock: Clock,
}

impl Tally {
    fn from_subnet(s: &Subnet) -> Tally {
        Tally {
            stats: s.mads.clone(),
            by_node: s
                .mads_by_node
                .iter()
                .map(|n| (n.guid, (n.requests, n.retried)))
                .collect(),
            clock: Clock::default(),
        }
    }

    fn node_mads(&self) -> Vec<NodeMads> {
        self.by_node
            .iter()
            .map(|(guid, (requests, retried))| NodeMads {
                guid: *guid,
                requests: *requests,
                retried: *retried,
            })
            .collect()
    }

    /// A request done, answered or not: counted as retried when it took more than one send.
    fn done(&mut self, p: &Pending) {
        if p.sends > 1 {
            self.stats.retried += 1;
            if let Some(g) = p.job.counted_for() {
                self.by_node.entry(g).or_default().1 += 1;
            }
        }
    }
}

/// Keeps up to `in_flight` requests outstanding and hands each answer (or loss) to `on`,
/// which may queue more requests. A send the transport gives back is resent at once; a
/// send without news is resent when its timer (from the measured answer times, doubling
/// per resend, at most --timeout) runs out, up to --retries times. A request whose node
/// has answered nothing for a --timeout while it was out (and through at least one
/// resend) is given up with every request for that node and behind it, so a dead region
/// costs about one --timeout, not one per MAD.
fn pump<T: MadTransport>(
    t: &mut T,
    opts: &WalkOptions,
    tid: &mut u32,
    tally: &mut Tally,
    jobs: VecDeque<Job>,
    on: impl FnMut(&Job, Result<Vec<u8>, Miss>, &mut VecDeque<Job>),
) -> io::Result<()> {
    let mut pump = Pump {
        t,
        opts,
        tid,
        tally,
        jobs,
        on,
        pending: HashMap::new(),
        heard: HashMap::new(),
        dead: Vec::new(),
    };
    loop {
        pump.send_queued()?;
        if pump.pending.is_empty() {
            return Ok(());
        }
        pump.receive()?;
        // Checked after every answer too: a steady stream of answers must not hold back
        // the resends of the ones that were lost.
        for domain in pump.resend_or_give_up()? {
            pump.give_up(domain);
        }
    }
}

/// Where a request goes: (PMA or not, its directed route).
type Domain = (bool, Vec<u8>);

/// One `pump`'s state, its steps as methods.
struct Pump<'a, T, F> {
    t: &'a mut T,
    opts: &'a WalkOptions,
    tid: &'a mut u32,
    tally: &'a mut Tally,
    jobs: VecDeque<Job>,
    on: F,
    pending: HashMap<u32, Pending>,
    /// When each node last proved alive. An SMP's answer proves the node and every switch
    /// on its directed route; a PMA's (LID-routed, perhaps another way) only that node's
    /// PMA, whose silence says nothing of the SMPs.
    heard: HashMap<Domain, Instant>,
    /// Given up: later requests for them are not sent, nor, for SMPs, those behind them.
    dead: Vec<Domain>,
}

impl<T: MadTransport, F: FnMut(&Job, Result<Vec<u8>, Miss>, &mut VecDeque<Job>)> Pump<'_, T, F> {
    fn gone(&self, job: &Job) -> bool {
        let pma = job.class == mad::CLASS_PERF;
        self.dead.iter().any(|(p, route)| {
            *p == pma && (job.key == *route || (!pma && job.key.starts_with(route)))
        })
    }

    /// `job` will have no answer.
    fn lost(&mut self, job: &Job) {
        self.tally.stats.unanswered += 1;
        (self.on)(job, Err(Miss::Lost), &mut self.jobs);
    }

    /// Sends queued requests until `in_flight` are out or none is queued.
    fn send_queued(&mut self) -> io::Result<()> {
        let opts = self.opts;
        while self.pending.len() < opts.in_flight.max(1) {
            let Some(job) = self.jobs.pop_front() else {
                break;
            };
            if self.gone(&job) {
                self.lost(&job);
                continue;
            }
            *self.tid = self.tid.wrapping_add(1).max(1);
            let Some(m) = mad::encode_request(
                job.class,
                job.method,
                u64::from(*self.tid),
                job.attr,
                job.attr_mod,
                &job.route,
                &job.data,
            ) else {
                // A route past 63 hops: the walk never builds one, but a loss is the truth.
                self.lost(&job);
                continue;
            };
            let timer = self.tally.clock.timer(1, opts.timeout);
            self.t.send(&m, &job.route, timer)?;
            self.tally.stats.requests += 1;
            if let Some(g) = job.counted_for() {
                self.tally.by_node.entry(g).or_default().0 += 1;
            }
            let now = Instant::now();
            self.pending.insert(
                *self.tid,
                Pending {
                    job,
                    mad: m,
                    sends: 1,
                    out: 1,
                    first_sent: now,
                    deadline: now + timer,
                },
            );
            let stats = &mut self.tally.stats;
            stats.in_flight_max = stats.in_flight_max.max(self.pending.len());
        }
        Ok(())
    }

    /// Waits for one answer or give-back until the first deadline, and hands an answer on.
    fn receive(&mut self) -> io::Result<()> {
        let now = Instant::now();
        let first = self
            .pending
            .values()
            .map(|p| p.deadline)
            .min()
            .unwrap_or(now);
        match self.t.recv(first.saturating_duration_since(now))? {
            Some(Received::Mad(reply)) => {
                // The transport owns the upper 32 TID bits (the kernel's agent id). An
                // answer to nothing pending (a late duplicate) is dropped.
                let answered = Header::decode(&reply)
                    .and_then(|h| Some((self.pending.remove(&(h.tid as u32))?, h)));
                if let Some((p, h)) = answered {
                    self.answered(p, h, reply);
                }
            }
            Some(Received::Returned { tid, .. }) => {
                // Every send of this TID came back undelivered: lost for sure, so it is
                // due now rather than when its timer runs out.
                if let Some(p) = self.pending.get_mut(&tid) {
                    p.out = p.out.saturating_sub(1);
                    if p.out == 0 {
                        p.deadline = Instant::now();
                    }
                }
            }
            None => {}
        }
        Ok(())
    }

    fn answered(&mut self, p: Pending, h: Header, reply: Vec<u8>) {
        let now = Instant::now();
        if p.sends == 1 {
            self.tally.clock.sample(now - p.first_sent);
        }
        if p.job.class == mad::CLASS_PERF {
            self.heard.insert((true, p.job.key.clone()), now);
        } else {
            for n in 0..=p.job.key.len() {
                self.heard.insert((false, p.job.key[..n].to_vec()), now);
            }
        }
        self.tally.done(&p);
        if h.method != mad::METHOD_GET_RESP || h.status_code() != 0 {
            self.tally.stats.errors += 1;
            (self.on)(&p.job, Err(Miss::Status(h.status_code())), &mut self.jobs);
        } else {
            (self.on)(&p.job, Ok(reply), &mut self.jobs);
        }
    }

    /// Each request past its deadline: resent, lost after its last resend, or (its node
    /// silent for a --timeout) the node's domain returned to be given up.
    fn resend_or_give_up(&mut self) -> io::Result<Vec<Domain>> {
        let opts = self.opts;
        let now = Instant::now();
        let expired: Vec<u32> = self
            .pending
            .iter()
            .filter(|(_, p)| p.deadline <= now)
            .map(|(k, _)| *k)
            .collect();
        let mut give_up: Vec<Domain> = Vec::new();
        for key in expired {
            let Some(p) = self.pending.get_mut(&key) else {
                continue;
            };
            let domain = (p.job.class == mad::CLASS_PERF, p.job.key.clone());
            let silent_for = self
                .heard
                .get(&domain)
                .map_or(now - p.first_sent, |h| now.saturating_duration_since(*h))
                .min(now - p.first_sent);
            // A resend must have gone unanswered too: with a timer as long as --timeout
            // (before the first answer is measured, or with a short --timeout) the first
            // loss alone would otherwise give a lossy node up unretried.
            if silent_for >= opts.timeout && p.sends >= 2 {
                give_up.push(domain);
            } else if p.sends <= opts.retries {
                // The same TID: a late answer to an earlier send is just as good.
                let timer = self.tally.clock.timer(p.sends + 1, opts.timeout);
                self.t.send(&p.mad, &p.job.route, timer)?;
                p.sends += 1;
                p.out += 1;
                // Woken at the node's --timeout too, to give it up on time.
                let give_up_at = p.first_sent + opts.timeout;
                p.deadline = if give_up_at > now {
                    (now + timer).min(give_up_at)
                } else {
                    now + timer
                };
                self.tally.stats.resent += 1;
            } else if let Some(p) = self.pending.remove(&key) {
                self.tally.done(&p);
                self.lost(&p.job);
            }
        }
        Ok(give_up)
    }

    /// Gives `domain` up with every request out for it (and, for SMPs, behind it).
    fn give_up(&mut self, domain: Domain) {
        if self.dead.contains(&domain) {
            return;
        }
        self.dead.push(domain);
        let mut lost: Vec<u32> = self
            .pending
            .iter()
            .filter(|(_, p)| self.gone(&p.job))
            .map(|(k, _)| *k)
            .collect();
        lost.sort_unstable();
        for key in lost {
            if let Some(p) = self.pending.remove(&key) {
                self.tally.done(&p);
                self.lost(&p.job);
            }
        }
        // Queued ones are skipped as they come up (`gone` in `send_queued`): answers
        // handled meanwhile may still queue requests behind this route.
    }
}

/// Walks the subnet from the local port and reads SMInfo and (with `opts.counters`)
/// PmaCounters. An I/O error of the transport ends it; an unanswered node does not.
pub fn walk<T: MadTransport>(t: &mut T, opts: &WalkOptions) -> io::Result<Subnet> {
    let started = Instant::now();
    let mut tid = 0u32;
    let mut tally = Tally::default();
    let mut found = Found::default();

    let first = VecDeque::from([Job::smp(
        Asked::NodeInfo { from: None },
        &[],
        mad::ATTR_NODE_INFO,
        0,
    )]);
    pump(t, opts, &mut tid, &mut tally, first, |job, answer, jobs| {
        found.on_smp_reply(job, answer, jobs)
    })?;
    found.apply_port0_masks();

    let local = found.local.ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "the local port did not answer NodeInfo within {} ms ({} sends at most)",
                opts.timeout.as_millis(),
                opts.retries + 1
            ),
        )
    })?;
    let local_node = found.nodes.iter().find(|n| n.guid == local.guid);
    let local_port = local_node.and_then(|n| n.port(local.port).or_else(|| n.port(0)));
    let local_sm_lid = local_port.map(|p| p.sm_lid).unwrap_or(0);

    let reach = Reach::new(&found.nodes, &found.links, local);
    let (second, skipped) = second_pass(
        &found.nodes,
        &found.links,
        &reach,
        local_sm_lid,
        opts.counters,
    );
    found.reach = Some(reach);
    pump(
        t,
        opts,
        &mut tid,
        &mut tally,
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
        local_state: local_port.map(|p| p.state.clone()),
        nodes,
        links: links.into_iter().collect(),
        sms,
        unanswered,
        mads_by_node: tally.node_mads(),
        mads: tally.stats,
        counters_skipped: skipped,
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
    /// Which link ends PMA requests reach, once the first pass is done.
    reach: Option<Reach>,
}

impl Found {
    /// A request that got no answer (or an error status): recorded, and the walk goes on.
    fn lost(&mut self, job: &Job, miss: Miss) {
        let from = match &job.want {
            Asked::NodeInfo { from: Some(f) } => Some(*f),
            _ => None,
        };
        let status = match miss {
            Miss::Lost => None,
            Miss::Status(s) => Some(s),
        };
        self.unanswered.push(Unanswered {
            route: job.route.to_string(),
            what: match status {
                None => job.want.what(),
                Some(s) => format!("{} (MAD status {s:#06x})", job.want.what()),
            },
            via: from.map(|f| format!("{:#018x} port {}", f.guid, f.port)),
            from,
            status,
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
        let up = port.is_link_up();
        if node.lid == 0 && (p == 0 || !node.is_switch()) {
            node.lid = pi.lid;
        }
        node.ports.retain(|x| x.port != p);
        node.ports.push(port);
        node.ports.sort_by_key(|x| x.port);
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
                        // Each end by its own LID: a CA's port 2 answers on port 2's LID,
                        // not on the one its ClassPortInfo was asked by.
                        let job = self
                            .reach
                            .as_ref()
                            .and_then(|r| r.pma_job(&self.nodes, end, Asked::CountersExt(end)));
                        if let (true, Some(mut job)) = (end.guid == *guid, job) {
                            job.attr = mad::ATTR_PORT_COUNTERS_EXT;
                            jobs.push_back(job);
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

/// The second pass's requests, and the link ends whose counters cannot be asked for.
/// SMInfo: from the node holding the local port's SM LID, and from every node with a port
/// that says it is an SM. With `counters`, PmaCounters of both ends of every link the PMA
/// can reach and the PMA's ClassPortInfo of each such node once.
fn second_pass(
    nodes: &[Node],
    links: &BTreeSet<Link>,
    reach: &Reach,
    local_sm_lid: u16,
    counters: bool,
) -> (VecDeque<Job>, Vec<End>) {
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
    let mut skipped = Vec::new();
    if counters {
        let mut asked: Vec<u64> = Vec::new();
        for end in links.iter().flat_map(|l| [l.a, l.b]) {
            let Some(job) = counters_job(nodes, reach, end, false) else {
                skipped.push(end);
                continue;
            };
            second.push_back(job);
            if !asked.contains(&end.guid) {
                asked.push(end.guid);
                if let Some(mut class) = reach.pma_job(nodes, end, Asked::PmaClass(end.guid)) {
                    class.attr = mad::ATTR_CLASS_PORT_INFO;
                    class.data = Vec::new();
                    second.push_back(class);
                }
            }
        }
    }
    (second, skipped)
}

/// Which link ends LID-routed (PMA) requests from the local port can reach. No SM, a port
/// in INIT or a link not ACTIVE on both ends leaves a port without a LID or a route: a
/// request to it could only time out, so none is sent.
struct Reach {
    /// Switches reached from the local port over links ACTIVE on both ends.
    switches: HashSet<u64>,
    local: End,
    local_active: bool,
    /// Each link end's peer.
    peer: HashMap<End, End>,
}

impl Reach {
    fn new(nodes: &[Node], links: &BTreeSet<Link>, local: End) -> Reach {
        let active = |e: End| {
            nodes
                .iter()
                .find(|n| n.guid == e.guid)
                .and_then(|n| n.port(e.port))
                .is_some_and(|p| p.state.is_active())
        };
        let mut peer = HashMap::new();
        for l in links {
            peer.insert(l.a, l.b);
            peer.insert(l.b, l.a);
        }
        let is_switch = |g: u64| nodes.iter().any(|n| n.guid == g && n.is_switch());
        let local_active = active(local);
        let mut switches = HashSet::new();
        let mut todo: Vec<u64> = Vec::new();
        if is_switch(local.guid) {
            todo.push(local.guid);
        } else if local_active {
            if let Some(&p) = peer.get(&local) {
                if active(p) && is_switch(p.guid) {
                    todo.push(p.guid);
                }
            }
        }
        while let Some(g) = todo.pop() {
            if !switches.insert(g) {
                continue;
            }
            for l in links {
                for (mine, theirs) in [(l.a, l.b), (l.b, l.a)] {
                    if mine.guid == g
                        && active(mine)
                        && active(theirs)
                        && is_switch(theirs.guid)
                        && !switches.contains(&theirs.guid)
                    {
                        todo.push(theirs.guid);
                    }
                }
            }
        }
        Reach {
            switches,
            local,
            local_active,
            peer,
        }
    }

    /// The LID a PMA request for `end` goes to: a switch's (its port 0's), a CA port's
    /// own. None when the request could not arrive.
    fn lid(&self, nodes: &[Node], end: End) -> Option<u16> {
        let node = nodes.iter().find(|n| n.guid == end.guid)?;
        if node.is_switch() {
            return (self.switches.contains(&node.guid) && node.lid != 0).then_some(node.lid);
        }
        let port = node.port(end.port)?;
        if port.lid == 0 || !port.state.is_active() {
            return None;
        }
        let arrives = if end == self.local {
            self.local_active
        } else {
            // A CA port is reached through the switch it is cabled to (or is the local
            // port's direct peer); a CA forwards nothing.
            self.peer.get(&end).is_some_and(|p| {
                let via = nodes.iter().find(|n| n.guid == p.guid);
                let up = via
                    .and_then(|n| n.port(p.port))
                    .is_some_and(|x| x.state.is_active());
                up && (self.switches.contains(&p.guid) || (*p == self.local && self.local_active))
            })
        };
        arrives.then_some(port.lid)
    }

    /// A PMA Get of PmaCounters for one link end, to that end's own LID (the PMA is a GSI
    /// class: no directed routes); the caller changes `want` and `attr` for the others.
    fn pma_job(&self, nodes: &[Node], end: End, want: Asked) -> Option<Job> {
        let lid = self.lid(nodes, end)?;
        let key = nodes
            .iter()
            .find(|n| n.guid == end.guid)
            .map(|n| n.route.clone())
            .unwrap_or_default();
        Some(Job {
            want,
            route: DrPath::Lid(lid),
            key,
            class: mad::CLASS_PERF,
            method: mad::METHOD_GET,
            attr: mad::ATTR_PORT_COUNTERS,
            attr_mod: 0,
            data: mad::port_counters_select(end.port).to_vec(),
        })
    }
}

/// A PMA PmaCounters Get (or, with `clear`, Set to zero) for one link end. None when the
/// PMA cannot be reached there (see `Reach`).
fn counters_job(nodes: &[Node], reach: &Reach, end: End, clear: bool) -> Option<Job> {
    let mut job = reach.pma_job(nodes, end, Asked::Counters(end))?;
    if clear {
        job.want = Asked::Clear(end);
        job.method = mad::METHOD_SET;
        job.data = mad::port_counters_clear(end.port).to_vec();
    }
    Some(job)
}

/// The link ends of a subnet already walked, each with its PMA job or None where it
/// cannot be reached.
fn counters_jobs(subnet: &Subnet, clear: bool) -> VecDeque<Job> {
    let links: BTreeSet<Link> = subnet.links.iter().copied().collect();
    let reach = Reach::new(&subnet.nodes, &links, subnet.local);
    subnet
        .links
        .iter()
        .flat_map(|l| [l.a, l.b])
        .filter_map(|e| counters_job(&subnet.nodes, &reach, e, clear))
        .collect()
}

/// Reads PmaCounters of every link end again after `interval`: the first reading moves to
/// `counters_before`, so the rules judge what changed in between. The ends the PMA cannot
/// reach are skipped as in the walk.
pub fn reread_counters<T: MadTransport>(
    t: &mut T,
    opts: &WalkOptions,
    subnet: &mut Subnet,
    interval: Duration,
) -> io::Result<()> {
    std::thread::sleep(interval);
    let jobs = counters_jobs(subnet, false);
    let mut tid = 0x2000_0000u32;
    let mut readings: Vec<(End, CounterValues)> = Vec::new();
    let mut tally = Tally::from_subnet(subnet);
    pump(t, opts, &mut tid, &mut tally, jobs, |job, answer, _| {
        let (Asked::Counters(end), Ok(reply)) = (&job.want, answer) else {
            return;
        };
        if let Some(c) = mad::data(&reply).and_then(mad::PmaCounters::decode) {
            readings.push((*end, c.values));
        }
    })?;
    subnet.mads_by_node = tally.node_mads();
    subnet.mads = tally.stats;
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

/// Clears PmaCounters on every end of every link the PMA can reach (a PMA Set; only on
/// `--reset-counters`). Returns the ends that were asked and did not confirm; the ones
/// not asked are the walk's `counters_skipped`.
pub fn clear_counters<T: MadTransport>(
    t: &mut T,
    opts: &WalkOptions,
    subnet: &Subnet,
) -> io::Result<Vec<End>> {
    let jobs = counters_jobs(subnet, true);
    let mut failed = Vec::new();
    let mut tid = 0x4000_0000u32;
    let mut tally = Tally::default();
    pump(t, opts, &mut tid, &mut tally, jobs, |job, answer, _| {
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
        state: pi.port_state(),
        phys_state: pi.phys_port_state(),
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
        /// Lost sends come back with a status (as ibsim and the kernel do), not silently.
        returns: bool,
        queue: VecDeque<Received>,
        /// Every send: its TID and where it went.
        log: Vec<(u32, DrPath)>,
        /// Linked ports that stay INIT (no SM brought them up).
        init: HashSet<(usize, u8)>,
        /// Every LID 0: no SM has run.
        no_lids: bool,
    }

    impl Fake {
        fn guid(node: usize) -> u64 {
            0x1000 + node as u64
        }

        /// A switch answers on one LID; a CA port has its own.
        fn lid(&self, node: usize, port: u8) -> u16 {
            match (self.no_lids, self.kinds[node]) {
                (true, _) => 0,
                (false, 2) => node as u16 + 1,
                (false, _) => (node as u16 + 1) * 16 + u16::from(port),
            }
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
        fn send(&mut self, m: &[u8; MAD_SIZE], to: &DrPath, _: Duration) -> io::Result<()> {
            self.sent += 1;
            let tid = u64::from_be_bytes(m[8..16].try_into().unwrap());
            self.log.push((tid as u32, to.clone()));
            let lost = Received::Returned {
                tid: tid as u32,
                status: 110,
            };
            if self.drop_every > 0
                && self.sent % self.drop_every == 0
                && self.dropped_once.insert(tid)
            {
                if self.returns {
                    self.queue.push_back(lost);
                }
                return Ok(());
            }
            let path = match to {
                DrPath::Directed(path) => path,
                DrPath::Lid(lid) => {
                    // The PMA answers ClassPortInfo (with the extended counters) at any
                    // LID it owns; the counters themselves go unanswered.
                    let owned = (0..self.kinds.len())
                        .any(|n| (0..=self.ports[n]).any(|p| self.lid(n, p) == *lid));
                    let attr = u16::from_be_bytes([m[16], m[17]]);
                    if owned && attr == mad::ATTR_CLASS_PORT_INFO {
                        let mut r = m.to_vec();
                        r[3] = mad::METHOD_GET_RESP;
                        r[66..68].copy_from_slice(&mad::PM_EXT_WIDTH.to_be_bytes());
                        self.queue.push_back(Received::Mad(r));
                    }
                    return Ok(());
                }
            };
            let Some((node, entry)) = self.resolve(path) else {
                return Ok(());
            };
            // A dead node's requests vanish, and so do those routed through it.
            let mut hops = (0usize, 1u8);
            let through_dead = path.iter().any(|hop| {
                hops = self.links[&(hops.0, *hop)];
                self.dead.contains(&hops.0)
            });
            if self.dead.contains(&node) || through_dead {
                if self.returns {
                    self.queue.push_back(lost);
                }
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
                    let state = if self.init.contains(&(node, attr_mod)) {
                        2
                    } else if linked {
                        4
                    } else {
                        1
                    };
                    d[16..18].copy_from_slice(&self.lid(node, attr_mod).to_be_bytes());
                    d[18..20].copy_from_slice(&1u16.to_be_bytes());
                    d[29] = 3;
                    d[30] = 3;
                    d[31] = 2;
                    d[32] = (1 << 4) | state;
                    d[33] = if linked { 5 << 4 } else { 2 << 4 };
                    d[35] = (1 << 4) | 1;
                }
                _ => {}
            }
            self.queue.push_back(Received::Mad(r));
            Ok(())
        }

        fn recv(&mut self, timeout: Duration) -> io::Result<Option<Received>> {
            let got = self.queue.pop_front();
            if got.is_none() {
                // Nothing will come: the engine's clock must still move.
                std::thread::sleep(timeout);
            }
            Ok(got)
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
            returns: false,
            queue: VecDeque::new(),
            log: Vec::new(),
            init: HashSet::new(),
            no_lids: false,
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
                .contains("did not answer NodeInfo within 1 ms (3 sends at most)"),
            "{err}"
        );
    }

    fn end(node: usize, port: u8) -> End {
        End {
            guid: Fake::guid(node),
            port,
        }
    }

    /// Every LID-routed send's destination.
    fn lid_sends(f: &Fake) -> Vec<DrPath> {
        f.log
            .iter()
            .filter(|(_, to)| matches!(to, DrPath::Lid(_)))
            .map(|(_, to)| to.clone())
            .collect()
    }

    /// A dual-port CA (node 6) cabled to switch 1 port 3 and switch 2 port 4.
    fn with_dual_port_ca(mut f: Fake) -> Fake {
        f.kinds.push(1);
        f.ports.push(2);
        for (a, b) in [((6, 1), (1, 3)), ((6, 2), (2, 4))] {
            f.links.insert(a, b);
            f.links.insert(b, a);
        }
        f
    }

    #[test]
    fn each_link_end_is_asked_for_its_counters_at_its_own_lid() {
        let mut f = with_dual_port_ca(fabric(0));
        let s = walk(&mut f, &opts()).unwrap();
        assert!(s.counters_skipped.is_empty(), "{:?}", s.counters_skipped);
        let sent = lid_sends(&f);
        // Port 2 of node 6 has LID 7*16+2; port 1, 7*16+1: both asked, each at its own.
        for lid in [7 * 16 + 1, 7 * 16 + 2] {
            assert!(sent.contains(&DrPath::Lid(lid)), "LID {lid}: {sent:?}");
        }
        // The extended counters too: the unanswered list names each end's own LID.
        for port in [1u8, 2] {
            let ext: Vec<&Unanswered> = s
                .unanswered
                .iter()
                .filter(|u| u.what == format!("PortCountersExtended port {port}"))
                .filter(|u| u.route == format!("LID {}", 7 * 16 + u16::from(port)))
                .collect();
            assert!(!ext.is_empty(), "port {port}: {:#?}", s.unanswered);
        }
        assert!(
            !s.unanswered
                .iter()
                .any(|u| u.what == "PortCountersExtended port 2" && u.route == "LID 113"),
            "port 2 asked over port 1's LID"
        );
    }

    #[test]
    fn without_lids_or_with_init_ports_no_pma_request_is_sent_and_the_ends_are_listed() {
        let mut f = fabric(0);
        f.no_lids = true;
        let s = walk(&mut f, &opts()).unwrap();
        assert!(f
            .log
            .iter()
            .all(|(_, to)| matches!(to, DrPath::Directed(_))));
        assert_eq!(s.counters_skipped.len(), 2 * s.links.len());
        assert_eq!(
            s.mads.unanswered, 1,
            "only the dead node: {:#?}",
            s.unanswered
        );

        // Switch 2's port 1 and CA 3's port stay INIT: CA 3's end is skipped (the switch's
        // end is not: its PMA answers on the switch's LID whatever that port's state).
        let mut f = fabric(0);
        f.init.insert((2, 1));
        f.init.insert((3, 1));
        let s = walk(&mut f, &opts()).unwrap();
        assert_eq!(
            s.counters_skipped,
            vec![end(3, 1)],
            "{:?}",
            s.counters_skipped
        );
        assert!(!lid_sends(&f).contains(&DrPath::Lid(4 * 16 + 1)));

        // The local port in INIT: nothing LID-routed can leave it.
        let mut f = fabric(0);
        f.init.insert((0, 1));
        let s = walk(&mut f, &opts()).unwrap();
        assert_eq!(s.counters_skipped.len(), 2 * s.links.len());
        assert!(f
            .log
            .iter()
            .all(|(_, to)| matches!(to, DrPath::Directed(_))));
    }

    #[test]
    fn a_returned_send_is_resent_at_once_not_when_its_timer_runs_out() {
        let clean = walk(&mut fabric(0), &opts()).unwrap();
        let mut f = fabric(3);
        f.returns = true;
        f.dead.clear();
        // A timer this long would make each silent loss cost 10 s.
        let slow = WalkOptions {
            timeout: Duration::from_secs(10),
            counters: false,
            ..opts()
        };
        let started = Instant::now();
        let s = walk(&mut f, &slow).unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
        assert!(s.mads.resent > 0);
        assert_eq!(s.mads.unanswered, 0, "{:#?}", s.unanswered);
        assert_eq!(s.nodes.len(), clean.nodes.len() + 1, "node 5 is alive here");
        // Each lost send was dropped once: every retried request took exactly one resend.
        assert_eq!(s.mads.retried, s.mads.resent);
        let per_node: u64 = s.mads_by_node.iter().map(|n| n.requests).sum();
        assert_eq!(per_node, s.mads.requests - 1, "all but the local NodeInfo");
        let retried: u64 = s.mads_by_node.iter().map(|n| n.retried).sum();
        assert_eq!(retried, s.mads.retried);
    }

    #[test]
    fn a_dead_switch_is_given_up_after_one_timeout_with_everything_behind_it() {
        // Switch 2 dies after the first pass: its requests and its CAs' are all silent.
        let mut f = fabric(0);
        let alive = walk(&mut f, &opts()).unwrap();
        f.dead.insert(2);
        let mut jobs = VecDeque::new();
        for n in &alive.nodes {
            jobs.push_back(Job::smp(
                Asked::NodeDesc(n.guid),
                &n.route,
                mad::ATTR_NODE_DESC,
                0,
            ));
        }
        let o = WalkOptions {
            in_flight: 1,
            retries: 15,
            timeout: Duration::from_millis(100),
            counters: false,
        };
        let mut tally = Tally::default();
        // A measured answer time, as the walk would have: the timer is the floor.
        tally.clock.sample(Duration::from_micros(50));
        let mut lost = Vec::new();
        let started = Instant::now();
        let log_before = f.log.len();
        pump(&mut f, &o, &mut 0, &mut tally, jobs, |job, answer, _| {
            if answer.is_err() {
                lost.push(job.key.clone());
            }
        })
        .unwrap();
        let took = started.elapsed();
        // Switch 2 (route 1,2) and CAs 3 and 4 behind it: 16 sends of 100 ms each before,
        // one after another. Now about one --timeout (and one timer) in all.
        lost.sort();
        assert_eq!(lost, vec![vec![1, 2], vec![1, 2, 1], vec![1, 2, 2]]);
        assert!(took < Duration::from_millis(400), "{took:?}");
        assert_eq!(tally.stats.unanswered, 3);
        // The CAs behind it were never sent to: they were queued behind the dead switch.
        let behind = f.log[log_before..]
            .iter()
            .filter(|(_, to)| matches!(to, DrPath::Directed(p) if p.len() == 3))
            .count();
        assert_eq!(behind, 0);
    }

    #[test]
    fn a_node_that_loses_many_sends_but_answers_is_not_given_up() {
        // Every second send is lost silently: the nodes keep answering, so the walk keeps
        // resending within --retries even past one --timeout of a single request.
        let clean = walk(&mut fabric(0), &opts()).unwrap();
        let o = WalkOptions {
            timeout: Duration::from_millis(30),
            counters: false,
            ..opts()
        };
        let s = walk(&mut fabric(2), &o).unwrap();
        assert_eq!(s.links, clean.links);
        assert!(s.mads.resent > 0);
    }
}
