//! `pingpong`'s text: the report of a TCP-exchange or `--cm` run (ibv_rc_pingpong's
//! address and result lines, the counters block), and the lines a run writes to stderr
//! while it goes (waiting, following, progress). Only the address types of `std::net`
//! are used here, as values to print.

use std::net::SocketAddr;

use crate::model::device::GidType;
use crate::model::diagnostic::FailureReport;
use crate::model::failure::Endpoint;
use crate::model::gid::Gid;
use crate::model::results::{Latency, OpResults, Qos, RunCounters};
use crate::output::Style;

/// What the text report of a TCP-exchange run shows.
pub struct ExchangeView<'a> {
    pub role: &'a str,
    pub exchange: &'a str,
    pub device: &'a str,
    pub port: u32,
    pub size: u32,
    pub path_mtu: Option<u32>,
    pub qos: Qos,
    /// Completions were waited for asleep (-e).
    pub events: bool,
    pub local: Option<&'a Endpoint>,
    pub remote: Option<&'a Endpoint>,
    pub ops: &'a OpResults,
    pub counters: Option<&'a RunCounters>,
    pub ok: bool,
    /// --report-gbits
    pub rate: BandwidthUnit,
}

/// The text report of a TCP-exchange run.
pub fn exchange(r: &ExchangeView, style: Style) -> String {
    let mut out = String::new();
    if let Some(l) = r.local {
        out.push_str(&format!("  local address:  {}\n", endpoint(l)));
    }
    if let Some(rem) = r.remote {
        out.push_str(&format!("  remote address: {}\n", endpoint(rem)));
    }
    if let Some(m) = r.path_mtu {
        out.push_str(&format!(
            "  {} {}/{} ({} exchange), path MTU {m}, {} B messages{}\n",
            r.role,
            r.device,
            r.port,
            r.exchange,
            r.size,
            qos(&r.qos, r.events)
        ));
    }
    out.push_str(&ops(r.ops, r.rate));
    if let Some(c) = r.counters {
        out.push_str(&counters(c, style));
    }
    if r.ok {
        out.push_str("ok\n");
    }
    out
}

/// "LID 0x0000, QPN 0x000011, PSN 0x001234, GID ... (index 1, RoCE v2)".
fn endpoint(e: &Endpoint) -> String {
    let mut s = format!(
        "LID 0x{:04x}, QPN 0x{:06x}, PSN 0x{:06x}, GID {}",
        e.lid, e.qpn, e.psn, e.gid
    );
    if let Some(i) = e.gid_index {
        s.push_str(&format!(" (index {i}"));
        match &e.gid_type {
            Some(GidType::RoceV2) => s.push_str(", RoCE v2"),
            Some(GidType::RoceV1) => s.push_str(", RoCE v1"),
            Some(GidType::Ib) => s.push_str(", IB"),
            _ => {}
        }
        s.push(')');
    }
    s
}

/// ", SL 3, traffic class 96 (DSCP 24), completion events": what was not the default.
fn qos(q: &Qos, events: bool) -> String {
    let mut s = String::new();
    if q.sl != 0 {
        s.push_str(&format!(", SL {}", q.sl));
    }
    if q.tclass != 0 {
        s.push_str(&format!(
            ", traffic class {} (DSCP {})",
            q.tclass,
            q.tclass >> 2
        ));
    }
    if q.pkey_index != 0 {
        s.push_str(&format!(", P_Key index {}", q.pkey_index));
    }
    if events {
        s.push_str(", completion events");
    }
    s
}

/// The connection the CM set up, as a `--cm` report shows it.
pub struct CmConnectionView<'a> {
    pub device: &'a str,
    pub port: u8,
    pub local: Option<SocketAddr>,
    pub peer: SocketAddr,
    pub qpn: u32,
    pub remote_qpn: u32,
    pub sgid_index: u8,
    pub sgid: Option<Gid>,
    pub gid_type: Option<&'a GidType>,
    /// The netdev the kernel routed through (client only).
    pub netdev: Option<&'a str>,
    pub path_mtu: u32,
}

/// What the text report of a `--cm` run shows.
pub struct CmView<'a> {
    pub role: &'a str,
    pub size: u32,
    pub connection: Option<CmConnectionView<'a>>,
    pub ops: &'a OpResults,
    pub counters: Option<&'a RunCounters>,
    /// Server: messages answered, and whether the client was a stock tool.
    pub echoed: Option<u64>,
    pub stock_client: Option<bool>,
    pub ok: bool,
    /// --report-gbits
    pub rate: BandwidthUnit,
}

/// The text report of a `--cm` run: the TCP exchange's lines, with the CM's addresses.
pub fn cm(r: &CmView, style: Style) -> String {
    let mut out = String::new();
    if let Some(c) = &r.connection {
        let at = |a: Option<SocketAddr>| a.map_or("?".to_string(), |a| a.to_string());
        let mut what = vec![format!("index {}", c.sgid_index)];
        what.extend(c.gid_type.map(ToString::to_string));
        what.extend(c.netdev.map(str::to_string));
        let gid = match c.sgid {
            Some(g) => format!(", GID {g} ({})", what.join(", ")),
            None => format!(", GID {}", what.join(", ")),
        };
        out.push_str(&format!(
            "  local address:  {}, QPN 0x{:06x}{gid}\n",
            at(c.local),
            c.qpn
        ));
        out.push_str(&format!(
            "  remote address: {}, QPN 0x{:06x}\n",
            c.peer, c.remote_qpn
        ));
        out.push_str(&format!(
            "  {} {}/{} (cm exchange), path MTU {}, {} B messages\n",
            r.role, c.device, c.port, c.path_mtu, r.size
        ));
    }
    out.push_str(&ops(r.ops, r.rate));
    if let Some(c) = r.counters {
        out.push_str(&counters(c, style));
    }
    if let Some(echoed) = r.echoed {
        let who = if r.stock_client == Some(true) {
            "a stock client (rping/rdma_client)"
        } else {
            "an rdmactl client"
        };
        out.push_str(&format!("served {who}: {echoed} messages answered\n"));
    }
    if r.ok {
        out.push_str("ok\n");
    }
    out
}

/// The unit bandwidth is printed in: ibv_rc_pingpong's Mbit/sec, or Gbit/sec as perftest's
/// --report-gbits asks (10^9 bits either way).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum BandwidthUnit {
    #[default]
    Mbit,
    Gbit,
}

impl BandwidthUnit {
    fn of(self, mbit_per_sec: f64) -> f64 {
        match self {
            BandwidthUnit::Mbit => mbit_per_sec,
            BandwidthUnit::Gbit => mbit_per_sec / 1000.0,
        }
    }

    fn unit(self) -> &'static str {
        match self {
            BandwidthUnit::Mbit => "Mbit/sec",
            BandwidthUnit::Gbit => "Gbit/sec",
        }
    }
}

/// One size of a `-a` sweep, as its table shows it.
#[derive(Debug, Clone)]
pub struct SweepRow {
    pub size: u32,
    pub ops: OpResults,
    pub ok: bool,
}

/// The `-a` table: one line per size, and per operation its bandwidth, message rate and
/// time per iteration (a SEND's is a round trip, as ibv_rc_pingpong's usec/iter; a
/// windowed WRITE's or READ's is its share of the window, not a latency). A size that
/// failed says so; its explanation follows on stderr.
pub fn sweep(role: &str, rows: &[SweepRow], rate: BandwidthUnit) -> String {
    let names: Vec<&str> = ["send", "write", "read"]
        .into_iter()
        .filter(|n| rows.iter().any(|r| r.ops.iter().any(|(m, _)| m == *n)))
        .collect();
    let mut head = vec!["bytes".to_string(), "iters".to_string()];
    for n in &names {
        head.push(format!("{n} {}", rate.unit()));
        head.push(format!("{n} msg/sec"));
        head.push(format!("{n} usec/iter"));
    }
    let mut table = vec![head];
    for r in rows {
        let mut line = vec![r.size.to_string()];
        let iters = r.ops.iter().map(|(_, o)| o.iters).max();
        line.push(iters.map_or("-".into(), |i| i.to_string()));
        for n in &names {
            match r.ops.iter().find(|(m, _)| m == n) {
                Some((_, o)) => {
                    line.push(format!("{:.2}", rate.of(o.mbit_per_sec)));
                    line.push(format!("{:.0}", o.msgs_per_sec));
                    line.push(format!("{:.2}", o.usec_per_iter));
                }
                None => line.extend(std::iter::repeat("-".to_string()).take(3)),
            }
        }
        if !r.ok {
            line.push("failed".into());
        }
        table.push(line);
    }
    let columns = table.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            table
                .iter()
                .filter_map(|l| l.get(c))
                .map(String::len)
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = format!("{role}, -a sweep: {} sizes\n", rows.len());
    for line in &table {
        let cells: Vec<String> = line
            .iter()
            .enumerate()
            .map(|(c, v)| format!("{v:>w$}", w = widths[c]))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// The stderr line after each size of a sweep (on a terminal, or with --interval).
pub fn sweep_progress(row: &SweepRow) -> String {
    let figures: Vec<String> = row
        .ops
        .iter()
        .map(|(n, o)| {
            format!(
                "{n} {:.2} usec/iter, {:.2} Mbit/sec",
                o.usec_per_iter, o.mbit_per_sec
            )
        })
        .collect();
    let state = if row.ok { "done" } else { "failed" };
    format!("{} B {state}: {}\n", row.size, figures.join("; "))
}

/// Why a sweeping server stopped before the last size: its client did not come back.
pub fn sweep_cut_short(served: &[u32], gap: std::time::Duration) -> String {
    let last = served
        .last()
        .map_or("none".to_string(), |s| format!("{s} B"));
    format!(
        "the -a sweep ended after {} size(s) (the last {last}): no client connected for the next size within {} s; give -a to the client too (without it a client runs one size)",
        served.len(),
        gap.as_secs()
    )
}

/// ibv_rc_pingpong's two lines per operation (bytes and Mbit/sec, iters and usec/iter),
/// with the message rate, the latency percentiles (operations measured one at a time) and
/// what was verified; both exchanges print this.
pub fn ops(ops: &OpResults, rate: BandwidthUnit) -> String {
    let mut out = String::new();
    for (name, o) in ops.iter() {
        out.push_str(&format!(
            "{name:<5} {} bytes in {:.2} seconds = {:.2} {}\n",
            o.bytes,
            o.seconds,
            rate.of(o.mbit_per_sec),
            rate.unit()
        ));
        out.push_str(&format!(
            "{name:<5} {} iters in {:.2} seconds = {:.2} usec/iter, {:.0} msg/sec",
            o.iters, o.seconds, o.usec_per_iter, o.msgs_per_sec
        ));
        match &o.latency_usec {
            // What a sample is, beside the figures: perftest's are not the same measure.
            Some(l) => out.push_str(&format!(
                "; latency usec ({}) {}\n",
                if name == "send" {
                    "round trip: 2 × ib_send_lat's one-way"
                } else {
                    "post to completion"
                },
                latency(l)
            )),
            // Say why there is no latency, so nobody reads usec/iter as one.
            None if o.window > 1 => out.push_str(&format!(
                "; {} in flight: bandwidth, not latency (--lat measures it)\n",
                o.window
            )),
            None => out.push('\n'),
        }
        if let Some(v) = &o.verified {
            out.push_str(&format!("{name:<5} verified: {v}\n"));
        }
    }
    out
}

/// "min 1.00, p50 2.00, p90 ..., max 9.00" (µs).
fn latency(l: &Latency) -> String {
    format!(
        "min {:.2}, p50 {:.2}, p90 {:.2}, p99 {:.2}, p99.9 {:.2}, max {:.2}",
        l.min, l.p50, l.p90, l.p99, l.p99_9, l.max
    )
}

/// A short block after the results: what moved on each end, then the findings.
pub fn counters(c: &RunCounters, style: Style) -> String {
    let ends = [("this end", &c.local), ("peer", &c.peer)];
    let mut out = String::from("counters (per port, so other traffic on the port counts too):\n");
    if c.shared_port {
        out.push_str(
            "  both ends ran on this port: its counters are the whole run, counted once\n",
        );
    }
    for (who, d) in ends {
        let Some(d) = d else { continue };
        let moved: Vec<String> = d
            .counters
            .iter()
            .map(|c| {
                format!(
                    "{} {}{}",
                    c.name,
                    if c.exact { "" } else { ">=" },
                    c.at_least
                )
            })
            .collect();
        out.push_str(&format!(
            "  {who} {}/{}: {}\n",
            d.device,
            d.port,
            if moved.is_empty() {
                "no counter moved".to_string()
            } else {
                moved.join(", ")
            }
        ));
    }
    if let Some(r) = c.resent_per_mille {
        let ends = if c.peer.is_some() {
            "both ends"
        } else {
            "this end"
        };
        out.push_str(&format!(
            "  resent: {r:.2} per thousand packets sent ({ends})\n"
        ));
    }
    if !c.findings.is_empty() {
        out.push_str(&crate::render::diagnostic::lines(
            &c.findings,
            style,
            crate::render::diagnostic::Evidence::All,
        ));
    }
    out
}

/// A server waiting for its client (`persist`: one client after another).
pub fn waiting(listening_on: &str, persist: bool) -> String {
    format!(
        "rdmactl: waiting for a client on {listening_on} (ibv_rc_pingpong clients welcome){}\n",
        if persist { " (--persist)" } else { "" }
    )
}

/// A `--persist` server's client failed: the failure, explained, and the server goes on.
pub fn client_failed(x: &FailureReport) -> String {
    format!(
        "rdmactl: {}\n{}",
        x.message,
        crate::render::diagnostic::body(&x.explanation, "")
    )
}

/// What `-g auto` chose (its own text), as a note on stderr.
pub fn gid_choice(choice: &str) -> String {
    format!("rdmactl: {choice}")
}

/// A server that took what it was not given from its client.
pub fn following(taken: &[String]) -> String {
    format!(
        "rdmactl: following the client: {} (give the server -n/--duration/--lat, -s, --op or -m to insist on its own)\n",
        taken.join(", ")
    )
}

/// A client that found a stock ibv_rc_pingpong server.
pub fn stock_server(size: u32, iters: u32) -> String {
    format!(
        "rdmactl: the server speaks ibv_rc_pingpong's exchange: SEND only, {size} B messages, {iters} iterations (give the server the same -s and -n)\n"
    )
}

/// A `--cm` client once connected: where, and what it will run.
pub fn cm_connected(
    peer: SocketAddr,
    device: &str,
    port: u8,
    gid_index: u8,
    ops: &[&str],
    iters: u32,
    size: u32,
) -> String {
    format!(
        "connected to {peer} on {device}/{port} (GID index {gid_index}); {} x {iters} iterations of {size} bytes\n",
        ops.join("+"),
    )
}

/// A `--cm` server once listening (`device`: None when bound to every device).
pub fn cm_listening(addr: SocketAddr, device: Option<&str>) -> String {
    format!(
        "listening on {addr} ({}) for an rdmactl pingpong --cm client\n",
        device.unwrap_or("every RDMA device")
    )
}

/// A `--cm` server turned a second client away.
pub fn turned_away(other: SocketAddr, reason: &str) -> String {
    format!("rdmactl: turned {other} away: {reason}\n")
}

/// "rdmactl: send 12000 iters in 3.0 s; last 1.0 s: 4012 msg/sec, latency usec p50 ..."
/// over the time since the last line; the latency only for operations measured one at a
/// time.
pub fn progress(
    name: &str,
    done: u64,
    total_secs: f64,
    secs: f64,
    rate: f64,
    latency: Option<&Latency>,
) -> String {
    let mut line = format!(
        "rdmactl: {name} {done} iters in {total_secs:.1} s; last {secs:.1} s: {rate:.0} msg/sec"
    );
    if let Some(l) = latency {
        line.push_str(&format!(
            ", latency usec p50 {:.2}, p90 {:.2}, p99 {:.2}, p99.9 {:.2}, max {:.2}",
            l.p50, l.p90, l.p99, l.p99_9, l.max
        ));
    }
    line.push('\n');
    line
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::model::results::{op_result, LatencyRecorder};

    /// A window in flight measures queueing: the text says why it shows no latency.
    #[test]
    fn windowed_operations_say_why_no_latency() {
        let mut rec = LatencyRecorder::new();
        rec.record(4_000_000);
        let lat = rec.latency(1.0);
        let windowed = op_result(500, 500 * 4096, Duration::from_millis(90), 32, lat);
        let one = op_result(500, 500 * 4096, Duration::from_millis(90), 1, lat);
        let mut results = OpResults::default();
        results.insert("send", one.clone());
        results.insert("write", windowed);
        let text = ops(&results, BandwidthUnit::Mbit);
        assert!(
            text.contains("send  500 iters in 0.09 seconds = 180.00 usec/iter, 5556 msg/sec; latency usec (round trip: 2 × ib_send_lat's one-way) min 3999."),
            "{text}"
        );
        let mut lat = OpResults::default();
        lat.insert("write", one);
        assert!(
            ops(&lat, BandwidthUnit::Mbit)
                .contains("5556 msg/sec; latency usec (post to completion) min 3999."),
            "{}",
            ops(&lat, BandwidthUnit::Mbit)
        );
        assert!(text.contains("p99.9 4001.79, max 4001.79"), "{text}");
        assert!(
            text.contains("write 500 iters in 0.09 seconds = 180.00 usec/iter, 5556 msg/sec; 32 in flight: bandwidth, not latency"),
            "{text}"
        );
    }

    /// The text report names the QoS that was asked for, and nothing when none was.
    #[test]
    fn qos_is_described_only_when_set() {
        assert_eq!(qos(&Qos::default(), false), "");
        let q = Qos {
            sl: 3,
            tclass: 96,
            pkey_index: 1,
        };
        assert_eq!(
            qos(&q, true),
            ", SL 3, traffic class 96 (DSCP 24), P_Key index 1, completion events"
        );
    }
}

#[cfg(test)]
mod sweep_tests {
    use std::time::Duration;

    use super::*;
    use crate::model::results::op_result;

    fn row(size: u32, ok: bool) -> SweepRow {
        let mut ops = OpResults::default();
        // 100 WRITEs of `size` bytes in 10 ms, a window of 32.
        ops.insert(
            "write",
            op_result(
                100,
                100 * u64::from(size),
                Duration::from_millis(10),
                32,
                None,
            ),
        );
        SweepRow { size, ops, ok }
    }

    /// One line per size under one header, the bandwidth in the unit asked for, and a size
    /// that failed marked so.
    #[test]
    fn the_sweep_table_has_a_line_per_size() {
        let rows = [row(2, true), row(8_388_608, true), row(16, false)];
        let text = sweep("client", &rows, BandwidthUnit::Mbit);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "client, -a sweep: 3 sizes", "{text}");
        assert!(
            lines[1].split_whitespace().collect::<Vec<_>>()
                == [
                    "bytes",
                    "iters",
                    "write",
                    "Mbit/sec",
                    "write",
                    "msg/sec",
                    "write",
                    "usec/iter"
                ],
            "{text}"
        );
        // 8 MiB × 100 in 10 ms = 671088.64 Mbit/s; 10 000 msg/s; 100 µs each.
        let big: Vec<&str> = lines[3].split_whitespace().collect();
        assert_eq!(
            big,
            ["8388608", "100", "671088.64", "10000", "100.00"],
            "{text}"
        );
        assert!(lines[4].ends_with("failed"), "{text}");
        assert!(!lines[2].contains("failed"), "{text}");
        assert!(!text.contains("send") && !text.contains("read"), "{text}");
        let gbits = sweep("server", &rows[1..2], BandwidthUnit::Gbit);
        assert!(gbits.contains("write Gbit/sec"), "{gbits}");
        assert!(gbits.contains(" 671.09 "), "{gbits}");
        assert!(ops(&rows[1].ops, BandwidthUnit::Gbit).contains("= 671.09 Gbit/sec"));
    }

    #[test]
    fn a_server_whose_client_did_not_come_back_says_what_to_do() {
        let text = sweep_cut_short(&[2, 4], Duration::from_secs(30));
        assert!(text.contains("after 2 size(s) (the last 4 B)"), "{text}");
        assert!(text.contains("within 30 s"), "{text}");
        assert!(text.contains("give -a to the client too"), "{text}");
    }
}
