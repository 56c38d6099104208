//! Port counters: what each counter in `ports/N/counters/` (the IB PMA set) and
//! `ports/N/hw_counters/` (the driver's own) counts, how wide it is, what happens at its top
//! (PMA counters saturate at all ones; hardware counters wrap), and the wrap-aware
//! difference of two snapshots. A leaf: the sysfs gatherer fills `PortCounters`, the rules
//! (`diagnose::counters`) and the `counters` command read `PortDelta`s.
//!
//! Widths are the kernel's, not guesses: `drivers/infiniband/core/sysfs.c` reads the PMA
//! counters from PortCounters (4 to 32 bits) or, where the HCA has them,
//! PortCountersExtended (64 bits, for data and packets); mlx5's per-queue counters are
//! 32-bit fields of QUERY_Q_COUNTER and its congestion counters 64-bit; rxe keeps 64-bit
//! counters. Unknown counters are kept by name with the width sysfs prints them at (u64).

use std::time::Instant;

use serde::Serialize;

use crate::model::device::ReadProblem;

/// Which directory a counter lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CounterSource {
    /// `counters/`: the IB Performance Management Agent's PortCounters(Extended).
    Counters,
    /// `hw_counters/`: the driver's own statistics.
    HwCounters,
}

impl CounterSource {
    pub fn dir(self) -> &'static str {
        match self {
            CounterSource::Counters => "counters",
            CounterSource::HwCounters => "hw_counters",
        }
    }
}

/// What a counter indicates, in the order `counters` prints the groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Group {
    /// Physical layer: symbol errors, link recovery, link downed.
    Link,
    /// Operations that failed: bad packets, discards, access and completion errors.
    Errors,
    /// Loss and retransmission: duplicates, sequence errors, ACK timeouts.
    Loss,
    /// Receiver not ready: no receive posted in time.
    Rnr,
    /// ECN marks, congestion notification packets, transmit waits.
    Congestion,
    /// Packets, bytes and operations moved.
    Traffic,
    /// Counters rdmactl has no meaning for (shown by name, never dropped).
    Other,
}

impl Group {
    pub const ALL: [Group; 7] = [
        Group::Link,
        Group::Errors,
        Group::Loss,
        Group::Rnr,
        Group::Congestion,
        Group::Traffic,
        Group::Other,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Group::Link => "physical link errors",
            Group::Errors => "errors",
            Group::Loss => "loss and retransmission",
            Group::Rnr => "receiver not ready (RNR)",
            Group::Congestion => "congestion",
            Group::Traffic => "traffic",
            Group::Other => "other",
        }
    }

    /// Groups whose non-zero value is a problem to look at (doctor warns on them).
    pub fn is_problem(self) -> bool {
        matches!(self, Group::Link | Group::Errors | Group::Loss | Group::Rnr)
    }
}

/// What one unit of a counter's value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    Events,
    Packets,
    /// 4-octet words: `port_xmit_data` and `port_rcv_data` (IBA PortXmitData), shown as
    /// bytes (× 4).
    Words,
    /// PortXmitWait's ticks: sampling periods in which the port had data but could not send.
    Ticks,
}

/// The device's driver, as far as the counter set depends on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Flavor {
    Rxe,
    Mlx5,
    Other,
}

impl Flavor {
    /// From the parent device's driver, else the device name; Soft-RoCE as
    /// `model::device::is_soft_roce` decided it (`soft_roce`), or by its hw_counters' own
    /// names (`rcvd_seq_err` is rxe's alone).
    pub fn of(device: &str, driver: Option<&str>, soft_roce: bool, hw_names: &[String]) -> Flavor {
        if driver.is_some_and(|d| d.contains("mlx5")) || device.starts_with("mlx5") {
            Flavor::Mlx5
        } else if soft_roce || hw_names.iter().any(|n| n == "rcvd_seq_err") {
            Flavor::Rxe
        } else {
            Flavor::Other
        }
    }
}

/// One counter as read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Counter {
    pub name: String,
    pub source: CounterSource,
    pub value: u64,
    /// Bits: the value cannot go past 2^width - 1.
    pub width: u8,
    /// True: stops at all ones (PMA); false: wraps to zero (hardware counters).
    pub saturates: bool,
    pub unit: Unit,
    pub group: Group,
    /// One line of meaning; None for a counter rdmactl does not know.
    pub meaning: Option<&'static str>,
}

impl Counter {
    /// Classifies a counter read from `source` of a `flavor` device. `extended`: the PMA
    /// data and packet counters come from PortCountersExtended (64-bit).
    pub fn new(
        name: &str,
        source: CounterSource,
        flavor: Flavor,
        value: u64,
        extended: bool,
    ) -> Counter {
        let spec = spec(name, source, flavor);
        let width = match (source, spec.width) {
            (CounterSource::Counters, Width::Data) if extended => 64,
            (CounterSource::Counters, Width::Data) => 32,
            (_, Width::Data) => 64,
            (_, Width::Bits(b)) => b,
        };
        Counter {
            name: name.to_string(),
            source,
            value,
            width,
            saturates: source == CounterSource::Counters,
            unit: spec.unit,
            group: spec.group,
            meaning: spec.meaning,
        }
    }

    /// The largest value the counter can hold.
    pub fn max(&self) -> u64 {
        max_of(self.width)
    }

    /// A saturating counter at all ones: the real count is higher than shown.
    pub fn is_saturated(&self) -> bool {
        self.saturates && self.value == self.max()
    }

    /// A driver statistic that is a level, not a count (a gauge to Prometheus): bnxt_re's
    /// and irdma's `active_*` resources in use and their `watermark_*` highs.
    pub fn is_level(&self) -> bool {
        self.source == CounterSource::HwCounters
            && (self.name.starts_with("active_") || self.name.starts_with("watermark_"))
    }

    /// The value in bytes for a 4-octet-word counter.
    pub fn bytes(&self) -> Option<u64> {
        (self.unit == Unit::Words).then(|| self.value.saturating_mul(4))
    }
}

fn max_of(width: u8) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

/// Every counter of one port, as one pass over its two directories read them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PortCounters {
    pub device: String,
    pub port: u32,
    pub flavor: Flavor,
    /// Whether `counters/` exists: Soft-RoCE has no PMA, so none.
    pub has_counters_dir: bool,
    pub has_hw_counters_dir: bool,
    /// `counters/` first, then `hw_counters/`, each by name.
    pub counters: Vec<Counter>,
    #[serde(skip)]
    pub problems: Vec<ReadProblem>,
}

/// How a counter changed between two reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum Change {
    /// Counted up by `delta`; `wrapped`: it went past its width (once) on the way.
    Counted { delta: u64, wrapped: bool },
    /// A PMA counter at all ones: it stopped counting. The increase is at least
    /// `at_least`; the real one is unknown until it is reset (`perfquery -R`).
    Saturated { at_least: u64 },
    /// Went down where it cannot wrap: something reset it between the reads (perfquery -R,
    /// a driver reload, the device re-added). The increase is at least the new value.
    Reset { at_least: u64 },
}

impl Change {
    /// The increase, or its lower bound when it is not known exactly.
    pub fn at_least(self) -> u64 {
        match self {
            Change::Counted { delta, .. } => delta,
            Change::Saturated { at_least } | Change::Reset { at_least } => at_least,
        }
    }

    /// Whether the increase is exact.
    pub fn is_exact(self) -> bool {
        matches!(self, Change::Counted { .. })
    }
}

/// The change of one counter from `before` to `after` (same counter, later read). Never a
/// negative or invented number:
/// - a saturating counter at all ones is `Saturated`, however it got there;
/// - a wrapping counter narrower than 64 bits that went down wrapped once (mlx5's 32-bit
///   per-queue counters wrap in seconds at line rate);
/// - a 64-bit counter that went down was reset: 2^64 events would take centuries at any
///   link speed, so a wrap is not the explanation; likewise a saturating one below its top.
pub fn change(before: &Counter, after: &Counter) -> Change {
    let (b, a) = (before.value, after.value);
    if after.saturates {
        if a == after.max() {
            return Change::Saturated {
                at_least: a.saturating_sub(b),
            };
        }
        return if a >= b {
            Change::Counted {
                delta: a - b,
                wrapped: false,
            }
        } else {
            Change::Reset { at_least: a }
        };
    }
    if a >= b {
        Change::Counted {
            delta: a - b,
            wrapped: false,
        }
    } else if after.width < 64 && b <= after.max() {
        Change::Counted {
            delta: (after.max() - b) + a + 1,
            wrapped: true,
        }
    } else {
        Change::Reset { at_least: a }
    }
}

/// One counter's change over an interval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CounterDelta {
    pub counter: Counter,
    /// The value at the first read (0 for a counter that appeared in between).
    pub before: u64,
    pub change: Change,
}

impl CounterDelta {
    pub fn name(&self) -> &str {
        &self.counter.name
    }
}

/// Every counter's change on one port over `seconds`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PortDelta {
    pub device: String,
    pub port: u32,
    pub flavor: Flavor,
    pub has_counters_dir: bool,
    pub seconds: f64,
    pub counters: Vec<CounterDelta>,
}

impl PortDelta {
    pub fn get(&self, name: &str) -> Option<&CounterDelta> {
        self.counters.iter().find(|c| c.counter.name == name)
    }

    /// The increase of `name` (its lower bound when saturated or reset); 0 when absent.
    pub fn at_least(&self, name: &str) -> u64 {
        self.get(name).map_or(0, |c| c.change.at_least())
    }

    /// `DEV/PORT`.
    pub fn label(&self) -> String {
        format!("{}/{}", self.device, self.port)
    }
}

/// The change of every counter of a port between two snapshots taken `seconds` apart. A
/// counter only in `after` counts from 0; one only in `before` (gone) is left out.
pub fn port_delta(before: &PortCounters, after: &PortCounters, seconds: f64) -> PortDelta {
    let counters = after
        .counters
        .iter()
        .map(|a| {
            let b = before
                .counters
                .iter()
                .find(|b| b.name == a.name && b.source == a.source);
            let zero;
            let b = match b {
                Some(b) => b,
                None => {
                    zero = Counter {
                        value: 0,
                        ..a.clone()
                    };
                    &zero
                }
            };
            CounterDelta {
                counter: a.clone(),
                before: b.value,
                change: change(b, a),
            }
        })
        .collect();
    PortDelta {
        device: after.device.clone(),
        port: after.port,
        flavor: after.flavor,
        has_counters_dir: after.has_counters_dir,
        seconds,
        counters,
    }
}

#[derive(Debug, Clone, Copy)]
enum Width {
    Bits(u8),
    /// The PMA data and packet counters: 32 bits in PortCounters, 64 in the extended set.
    Data,
}

struct Spec {
    width: Width,
    unit: Unit,
    group: Group,
    meaning: Option<&'static str>,
}

/// The PMA set: (name, width, unit, group, meaning). Widths from the IBA PortCounters
/// attribute as the kernel's sysfs.c lays it out.
#[rustfmt::skip]
const PMA: &[(&str, Width, Unit, Group, &str)] = &[
    ("symbol_error", Width::Bits(16), Unit::Events, Group::Link, "minor link errors (bad symbols) on this port's receiver: a marginal cable, transceiver or connector"),
    ("link_error_recovery", Width::Bits(8), Unit::Events, Group::Link, "the link retrained after errors (link error recovery): a marginal cable or transceiver"),
    ("link_downed", Width::Bits(8), Unit::Events, Group::Link, "the link went down (after failing recovery): a cable pulled, a transceiver or a peer port reset"),
    ("port_rcv_errors", Width::Bits(16), Unit::Packets, Group::Link, "packets received with errors (bad CRC, length, VL): bad signal on the link"),
    ("port_rcv_remote_physical_errors", Width::Bits(16), Unit::Packets, Group::Link, "packets marked bad by an earlier hop (EBP): a link upstream has physical errors"),
    ("port_rcv_switch_relay_errors", Width::Bits(16), Unit::Packets, Group::Errors, "packets a switch could not relay (no route, bad DLID)"),
    ("port_xmit_discards", Width::Bits(16), Unit::Packets, Group::Errors, "outbound packets discarded: port down, congestion timeout or no route"),
    ("port_xmit_constraint_errors", Width::Bits(8), Unit::Packets, Group::Errors, "outbound packets dropped by partition or raw-packet constraints"),
    ("port_rcv_constraint_errors", Width::Bits(8), Unit::Packets, Group::Errors, "inbound packets dropped by partition (P_Key) or raw-packet constraints"),
    ("local_link_integrity_errors", Width::Bits(4), Unit::Events, Group::Link, "the physical error rate passed the local link integrity threshold: a cable to check"),
    ("excessive_buffer_overrun_errors", Width::Bits(4), Unit::Events, Group::Link, "receive buffer overruns past the threshold: flow control between the ports is broken"),
    ("VL15_dropped", Width::Bits(16), Unit::Packets, Group::Errors, "subnet-management packets (VL15) dropped for lack of buffers"),
    ("port_xmit_wait", Width::Bits(32), Unit::Ticks, Group::Congestion, "ticks with data to send but no credit to send it: the link or the next hop is backpressuring"),
    ("port_xmit_data", Width::Data, Unit::Words, Group::Traffic, "data sent (counted in 4-octet words, shown as bytes)"),
    ("port_rcv_data", Width::Data, Unit::Words, Group::Traffic, "data received (counted in 4-octet words, shown as bytes)"),
    ("port_xmit_packets", Width::Data, Unit::Packets, Group::Traffic, "packets sent"),
    ("port_rcv_packets", Width::Data, Unit::Packets, Group::Traffic, "packets received"),
    ("unicast_xmit_packets", Width::Bits(64), Unit::Packets, Group::Traffic, "unicast packets sent"),
    ("unicast_rcv_packets", Width::Bits(64), Unit::Packets, Group::Traffic, "unicast packets received"),
    ("multicast_xmit_packets", Width::Bits(64), Unit::Packets, Group::Traffic, "multicast packets sent"),
    ("multicast_rcv_packets", Width::Bits(64), Unit::Packets, Group::Traffic, "multicast packets received"),
];

/// Hardware counters with a meaning, by name: (name, group, unit, meaning). The names are
/// the kernel's (rxe: rxe_hw_counters.c; mlx5: mlx5 counters.c); where rxe and mlx5 share a
/// name the meaning is the same.
#[rustfmt::skip]
const HW: &[(&str, Group, Unit, &str)] = &[
    // Loss and retransmission, responder side.
    ("duplicate_request", Group::Loss, Unit::Packets, "responder: requests received again (the requester retransmitted: an ACK or the request was lost)"),
    ("out_of_seq_request", Group::Loss, Unit::Events, "responder (rxe): gaps in the requests' PSNs (counted once per gap, which is NAKed): packets lost on the way in"),
    ("out_of_sequence", Group::Loss, Unit::Packets, "responder (mlx5): packets with a PSN ahead of the expected one: packets lost on the way in"),
    // Requester side.
    ("rcvd_seq_err", Group::Loss, Unit::Events, "requester (rxe): NAK sequence errors received: the responder saw a gap and asked for a resend"),
    ("packet_seq_err", Group::Loss, Unit::Events, "requester (mlx5): NAK sequence errors received: the responder saw a gap and asked for a resend"),
    ("implied_nak_seq_err", Group::Loss, Unit::Events, "requester (mlx5): a read or atomic response skipped a PSN: earlier responses were lost"),
    ("local_ack_timeout_err", Group::Loss, Unit::Events, "requester (mlx5): no ACK within the QP's timeout: the request or its ACK was lost, resent"),
    ("completer_retry_err", Group::Loss, Unit::Events, "requester (rxe): resends started (after an ACK timeout or a sequence NAK; the NAKs are also in rcvd_seq_err)"),
    ("retry_exceeded_err", Group::Loss, Unit::Events, "requester (rxe): retry count exhausted: a QP gave up (IBV_WC_RETRY_EXC_ERR)"),
    ("req_transport_retries_exceeded", Group::Loss, Unit::Events, "requester (mlx5): retry count exhausted: a QP gave up (IBV_WC_RETRY_EXC_ERR)"),
    ("roce_adp_retrans", Group::Loss, Unit::Events, "mlx5 adaptive retransmissions (resends sooner than the QP timeout)"),
    ("roce_adp_retrans_to", Group::Loss, Unit::Events, "mlx5 adaptive retransmission timeouts"),
    ("roce_slow_restart", Group::Loss, Unit::Events, "mlx5 slow restarts after retransmission timeouts"),
    ("roce_slow_restart_cnps", Group::Congestion, Unit::Packets, "CNPs received that triggered a slow restart (mlx5)"),
    ("roce_slow_restart_trans", Group::Loss, Unit::Events, "transitions into slow-restart state (mlx5)"),
    // Receiver not ready.
    ("rcvd_rnr_err", Group::Rnr, Unit::Events, "requester (rxe): RNR NAKs received: the peer had no receive posted"),
    ("send_rnr_err", Group::Rnr, Unit::Events, "responder (rxe): RNR NAKs sent: a SEND arrived before a receive was posted here, or a READ response could not be built or sent"),
    ("retry_rnr_exceeded_err", Group::Rnr, Unit::Events, "requester (rxe): RNR retry count exhausted (IBV_WC_RNR_RETRY_EXC_ERR)"),
    ("rnr_nak_retry_err", Group::Rnr, Unit::Events, "requester (mlx5): RNR retry count exhausted (IBV_WC_RNR_RETRY_EXC_ERR)"),
    ("req_rnr_retries_exceeded", Group::Rnr, Unit::Events, "requester (mlx5): RNR retry count exhausted"),
    ("out_of_buffer", Group::Rnr, Unit::Packets, "responder (mlx5): packets dropped for lack of a posted receive (shared receive queue empty)"),
    // Errors.
    ("send_err", Group::Errors, Unit::Events, "rxe: packets the netdev refused to send (larger than its MTU, netdev down or no route, a queue drop)"),
    ("link_downed", Group::Link, Unit::Events, "rxe: the netdev under the device went down"),
    ("req_cqe_error", Group::Errors, Unit::Events, "requester completions with an error status"),
    ("resp_cqe_error", Group::Errors, Unit::Events, "responder completions with an error status"),
    ("req_cqe_flush_error", Group::Errors, Unit::Events, "requester work requests flushed: a QP entered the error state with work outstanding"),
    ("resp_cqe_flush_error", Group::Errors, Unit::Events, "responder work requests flushed: a QP entered the error state with receives posted"),
    ("req_remote_access_errors", Group::Errors, Unit::Events, "requester: the peer refused an RDMA access (rkey, bounds or permissions)"),
    ("req_remote_invalid_request", Group::Errors, Unit::Events, "requester: the peer judged a request invalid (opcode, length)"),
    ("resp_remote_access_errors", Group::Errors, Unit::Events, "responder: refused an incoming RDMA access (rkey, bounds or permissions)"),
    ("resp_local_length_error", Group::Errors, Unit::Events, "responder: an incoming message was longer than the posted receive"),
    ("rx_icrc_encapsulated", Group::Errors, Unit::Packets, "RoCE packets received with a bad ICRC"),
    // Congestion (DCQCN).
    ("np_ecn_marked_roce_packets", Group::Congestion, Unit::Packets, "notification point: RoCE packets received with ECN marks (a switch queue was filling)"),
    ("np_cnp_sent", Group::Congestion, Unit::Packets, "notification point: CNPs sent back to senders of ECN-marked packets"),
    ("rp_cnp_handled", Group::Congestion, Unit::Packets, "reaction point: CNPs received and acted on (this sender slowed down)"),
    ("rp_cnp_ignored", Group::Congestion, Unit::Packets, "reaction point: CNPs received and ignored"),
    // Traffic.
    ("sent_pkts", Group::Traffic, Unit::Packets, "packets sent"),
    ("rcvd_pkts", Group::Traffic, Unit::Packets, "packets received"),
    ("rdma_sends", Group::Traffic, Unit::Events, "rxe: send operations"),
    ("rdma_recvs", Group::Traffic, Unit::Events, "rxe: receive operations"),
    ("ack_deferred", Group::Traffic, Unit::Events, "rxe responder: ACKs coalesced (deferred)"),
    ("rx_write_requests", Group::Traffic, Unit::Events, "RDMA writes received"),
    ("rx_read_requests", Group::Traffic, Unit::Events, "RDMA reads received"),
    ("rx_atomic_requests", Group::Traffic, Unit::Events, "atomics received"),
    ("rx_dct_connect", Group::Traffic, Unit::Events, "DCT connections received"),
];

/// mlx5 hardware counters read 64 bits wide (the congestion and PPCNT groups); every other
/// named mlx5 counter is a 32-bit per-queue (Q counter) field.
const MLX5_WIDE: &[&str] = &[
    "np_ecn_marked_roce_packets",
    "np_cnp_sent",
    "rp_cnp_handled",
    "rp_cnp_ignored",
    "rx_icrc_encapsulated",
];

fn spec(name: &str, source: CounterSource, flavor: Flavor) -> Spec {
    match source {
        CounterSource::Counters => match PMA.iter().find(|e| e.0 == name) {
            Some(&(_, width, unit, group, meaning)) => Spec {
                width,
                unit,
                group,
                meaning: Some(meaning),
            },
            // An extension's counter (hfi1, newer kernels): sysfs prints u64.
            None => Spec {
                width: Width::Bits(64),
                unit: Unit::Events,
                group: Group::Other,
                meaning: None,
            },
        },
        CounterSource::HwCounters => {
            let known = HW.iter().find(|e| e.0 == name);
            let width = match flavor {
                Flavor::Mlx5 if known.is_some() && !MLX5_WIDE.contains(&name) => 32,
                _ => 64,
            };
            match known {
                Some(&(_, group, unit, meaning)) => Spec {
                    width: Width::Bits(width),
                    unit,
                    group,
                    meaning: Some(meaning),
                },
                None => Spec {
                    width: Width::Bits(64),
                    unit: Unit::Events,
                    group: Group::Other,
                    meaning: None,
                },
            }
        }
    }
}

/// The previous snapshot and its time; each new snapshot gives the deltas of the ports
/// present in both (a port that appeared waits for its second read).
pub struct Sampler {
    previous: Vec<PortCounters>,
    at: Instant,
}

impl Sampler {
    pub fn new(first: Vec<PortCounters>, at: Instant) -> Sampler {
        Sampler {
            previous: first,
            at,
        }
    }

    pub fn next(&mut self, now: Vec<PortCounters>, at: Instant) -> Vec<PortDelta> {
        let seconds = at.duration_since(self.at).as_secs_f64();
        let deltas = now
            .iter()
            .filter_map(|after| {
                let before = self
                    .previous
                    .iter()
                    .find(|b| b.device == after.device && b.port == after.port)?;
                Some(port_delta(before, after, seconds))
            })
            .collect();
        self.previous = now;
        self.at = at;
        deltas
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(name: &str, source: CounterSource, flavor: Flavor, value: u64) -> Counter {
        Counter::new(name, source, flavor, value, true)
    }

    #[test]
    fn widths_are_the_kernels() {
        let pma = |n| c(n, CounterSource::Counters, Flavor::Other, 0);
        assert_eq!(pma("symbol_error").width, 16);
        assert_eq!(pma("link_downed").width, 8);
        assert_eq!(pma("local_link_integrity_errors").width, 4);
        assert_eq!(pma("port_xmit_wait").width, 32);
        assert_eq!(pma("port_xmit_data").width, 64);
        assert_eq!(
            Counter::new(
                "port_xmit_data",
                CounterSource::Counters,
                Flavor::Other,
                0,
                false
            )
            .width,
            32
        );
        assert!(pma("symbol_error").saturates);
        let mlx5 = |n| c(n, CounterSource::HwCounters, Flavor::Mlx5, 0);
        assert_eq!(mlx5("out_of_sequence").width, 32);
        assert_eq!(mlx5("np_cnp_sent").width, 64);
        assert!(!mlx5("out_of_sequence").saturates);
        assert_eq!(
            c("rcvd_seq_err", CounterSource::HwCounters, Flavor::Rxe, 0).width,
            64
        );
    }

    #[test]
    fn unknown_counters_keep_their_name() {
        let u = c(
            "brand_new_thing",
            CounterSource::HwCounters,
            Flavor::Mlx5,
            7,
        );
        assert_eq!((u.group, u.width, u.meaning), (Group::Other, 64, None));
        assert_eq!(u.name, "brand_new_thing");
    }

    #[test]
    fn words_are_four_bytes() {
        let d = c("port_rcv_data", CounterSource::Counters, Flavor::Other, 10);
        assert_eq!(d.bytes(), Some(40));
        assert_eq!(
            c("symbol_error", CounterSource::Counters, Flavor::Other, 1).bytes(),
            None
        );
    }

    #[test]
    fn a_32_bit_counter_that_went_down_wrapped() {
        let b = c(
            "out_of_sequence",
            CounterSource::HwCounters,
            Flavor::Mlx5,
            u32::MAX as u64 - 5,
        );
        let a = c(
            "out_of_sequence",
            CounterSource::HwCounters,
            Flavor::Mlx5,
            4,
        );
        assert_eq!(
            change(&b, &a),
            Change::Counted {
                delta: 10,
                wrapped: true
            }
        );
    }

    #[test]
    fn a_64_bit_counter_that_went_down_was_reset() {
        let b = c("sent_pkts", CounterSource::HwCounters, Flavor::Rxe, 1000);
        let a = c("sent_pkts", CounterSource::HwCounters, Flavor::Rxe, 30);
        assert_eq!(change(&b, &a), Change::Reset { at_least: 30 });
        let a = c("sent_pkts", CounterSource::HwCounters, Flavor::Rxe, 1500);
        assert_eq!(
            change(&b, &a),
            Change::Counted {
                delta: 500,
                wrapped: false
            }
        );
    }

    #[test]
    fn a_pma_counter_at_all_ones_is_saturated_never_negative() {
        let b = c(
            "symbol_error",
            CounterSource::Counters,
            Flavor::Other,
            65_530,
        );
        let a = c(
            "symbol_error",
            CounterSource::Counters,
            Flavor::Other,
            65_535,
        );
        assert!(a.is_saturated());
        assert_eq!(change(&b, &a), Change::Saturated { at_least: 5 });
        // Stuck at the top: nothing is known about the interval.
        assert_eq!(change(&a, &a), Change::Saturated { at_least: 0 });
        // Went down: reset (perfquery -R) in between, never a negative delta.
        let r = c("symbol_error", CounterSource::Counters, Flavor::Other, 3);
        assert_eq!(change(&a, &r), Change::Reset { at_least: 3 });
        assert!(!Change::Reset { at_least: 3 }.is_exact());
    }

    #[test]
    fn flavor_from_driver_name_or_counters() {
        assert_eq!(Flavor::of("mlx5_0", None, false, &[]), Flavor::Mlx5);
        assert_eq!(
            Flavor::of("roce0", Some("mlx5_core"), false, &[]),
            Flavor::Mlx5
        );
        assert_eq!(Flavor::of("rxe0", None, true, &[]), Flavor::Rxe);
        assert_eq!(
            Flavor::of("eth0_rdma", None, false, &["rcvd_seq_err".to_string()]),
            Flavor::Rxe
        );
        assert_eq!(
            Flavor::of("hfi1_0", Some("hfi1"), false, &[]),
            Flavor::Other
        );
    }

    #[test]
    fn port_delta_matches_by_name_and_counts_new_ones_from_zero() {
        let snap = |v: u64, extra: bool| {
            let mut counters = vec![c("sent_pkts", CounterSource::HwCounters, Flavor::Rxe, v)];
            if extra {
                counters.push(c("rcvd_pkts", CounterSource::HwCounters, Flavor::Rxe, 9));
            }
            PortCounters {
                device: "rxe0".into(),
                port: 1,
                flavor: Flavor::Rxe,
                has_counters_dir: false,
                has_hw_counters_dir: true,
                counters,
                problems: Vec::new(),
            }
        };
        let d = port_delta(&snap(10, false), &snap(25, true), 1.0);
        assert_eq!(d.at_least("sent_pkts"), 15);
        assert_eq!(d.at_least("rcvd_pkts"), 9);
        assert_eq!(d.at_least("absent"), 0);
        assert_eq!(d.label(), "rxe0/1");
    }
}

/// What moved over a run, as far as the counter rules need to know it: a counter that means
/// "a receive was late" only means it when SENDs ran, and rxe counts RNR NAKs for READ
/// responses it could not send too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TrafficMix {
    /// SEND messages over the run, both directions together (0: no SEND ran).
    pub sends: u64,
    /// Whether RDMA READs ran.
    pub reads: bool,
    /// The run held a SEND on RNR NAKs on purpose (selftest's flush step): RNR NAKs are
    /// not a receiver falling behind.
    pub rnr_on_purpose: bool,
}

/// A port's counter changes as one end sends them to the other after a ping-pong: names
/// and amounts only (the meanings are rebuilt from the names on arrival).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct WireDelta {
    pub device: String,
    pub port: u32,
    pub flavor: Flavor,
    pub has_counters_dir: bool,
    pub seconds: f64,
    pub counters: Vec<WireCount>,
}

// `seconds` is a measured interval, never NaN, so equality is an equivalence: a notice that
// carries the counters (`PeerNotice`) can stay `Eq`.
impl Eq for WireDelta {}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct WireCount {
    pub name: String,
    pub source: CounterSource,
    /// The increase, or its lower bound when not exact (saturated or reset).
    pub at_least: u64,
    pub exact: bool,
}

impl WireDelta {
    /// The counters that moved; the rest say nothing about the run.
    pub fn of(d: &PortDelta) -> WireDelta {
        WireDelta {
            device: d.device.clone(),
            port: d.port,
            flavor: d.flavor,
            has_counters_dir: d.has_counters_dir,
            seconds: d.seconds,
            counters: d
                .counters
                .iter()
                .filter(|c| c.change.at_least() > 0 || !c.change.is_exact())
                .map(|c| WireCount {
                    name: c.counter.name.clone(),
                    source: c.counter.source,
                    at_least: c.change.at_least(),
                    exact: c.change.is_exact(),
                })
                .collect(),
        }
    }

    pub fn to_delta(&self) -> PortDelta {
        PortDelta {
            device: self.device.clone(),
            port: self.port,
            flavor: self.flavor,
            has_counters_dir: self.has_counters_dir,
            seconds: self.seconds,
            counters: self
                .counters
                .iter()
                .map(|c| CounterDelta {
                    counter: Counter::new(&c.name, c.source, self.flavor, c.at_least, false),
                    before: 0,
                    change: if c.exact {
                        Change::Counted {
                            delta: c.at_least,
                            wrapped: false,
                        }
                    } else {
                        Change::Saturated {
                            at_least: c.at_least,
                        }
                    },
                })
                .collect(),
        }
    }
}

/// What a health check (`doctor --state FILE`) keeps between its runs: every port's counter
/// values and when they were read, so the next run judges what changed since, not the
/// totals since the driver loaded (mlx5's `hw_counters/` never clear, and one repaired link
/// flap would warn until a reboot). JSON; `version` lets a later format refuse an old one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct CounterRecord {
    pub version: u32,
    /// Seconds since the Unix epoch when these values were read.
    pub taken: u64,
    pub ports: Vec<PortRecord>,
}

/// One port's values: `counters/NAME` or `hw_counters/NAME` to the value read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct PortRecord {
    pub device: String,
    pub port: u32,
    pub counters: std::collections::BTreeMap<String, u64>,
}

impl CounterRecord {
    pub const VERSION: u32 = 1;

    /// The record after this run: the ports read now with their values, and the ports of
    /// `previous` not read this time kept as they were (a `-d DEV` run, or a device that
    /// failed to read, does not erase another port's baseline).
    pub fn of(previous: Option<&CounterRecord>, now: &[&PortCounters], taken: u64) -> Self {
        let mut ports: Vec<PortRecord> = now
            .iter()
            .map(|pc| PortRecord {
                device: pc.device.clone(),
                port: pc.port,
                counters: pc
                    .counters
                    .iter()
                    .map(|c| (record_key(c), c.value))
                    .collect(),
            })
            .collect();
        for old in previous.map_or(&[][..], |p| &p.ports[..]) {
            if !ports
                .iter()
                .any(|p| p.device == old.device && p.port == old.port)
            {
                ports.push(old.clone());
            }
        }
        ports.sort_by(|a, b| (&a.device, a.port).cmp(&(&b.device, b.port)));
        CounterRecord {
            version: Self::VERSION,
            taken,
            ports,
        }
    }

    pub fn port(&self, device: &str, port: u32) -> Option<&PortRecord> {
        self.ports
            .iter()
            .find(|p| p.device == device && p.port == port)
    }
}

impl PortRecord {
    /// The value `c` had when the record was taken; None for a counter it does not hold.
    pub fn value_of(&self, c: &Counter) -> Option<u64> {
        self.counters.get(&record_key(c)).copied()
    }
}

/// `counters/link_downed`: a PMA counter and a driver counter may share a name.
fn record_key(c: &Counter) -> String {
    format!("{}/{}", c.source.dir(), c.name)
}
