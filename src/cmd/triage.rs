//! `rdmactl triage [FILE...]`: read the job's logs (standard input when none), judge them,
//! add this host's evidence where it is one end of a failure (`check` on its port and GID
//! toward the other end; not with `--no-host`), print the findings; exit 1 when an RDMA
//! error was found.

use std::io::IsTerminal;

use crate::cli::GidIndexArg;
use crate::cli::TriageArgs;
use crate::ctx::Ctx;
use crate::diagnose::triage::{self as diagnose, HostGid, HostLook};
use crate::error::Result;
use crate::exit;
use crate::gather::joblog;
use crate::gather::procfs;
use crate::gather::sysfs::SysfsRoot;
use crate::model::diagnostic::Diagnostic;
use crate::model::joblog::Progress;
use crate::output::{json, print};
use crate::render::triage as render;

pub fn run(ctx: &Ctx, args: &TriageArgs) -> Result<u8> {
    let paths = if args.files.is_empty() {
        vec!["-".to_string()]
    } else {
        args.files.clone()
    };
    // A multi-GB log takes a while: a progress line every few seconds on a terminal.
    let mut tell = |p: &Progress| crate::output::note(&render::progress(p));
    let progress = (std::io::stderr().is_terminal() && !ctx.json)
        .then_some((&mut tell as &mut dyn FnMut(&Progress), PROGRESS_EVERY));
    let digest = joblog::read_logs(&paths, progress)?;
    let names: Vec<String> = paths
        .iter()
        .map(|p| {
            if p == "-" {
                "stdin".to_string()
            } else {
                p.clone()
            }
        })
        .collect();
    let mut triage = diagnose::judge(&digest, &names);
    if !args.no_host {
        look_here(ctx, &mut triage);
    }
    print(&if ctx.json {
        json(&render::json(&triage, &digest, &names))
    } else {
        render::text(&triage, &digest, &names, ctx.style)
    })?;
    Ok(if triage.failed() {
        exit::FAILED
    } else {
        exit::OK
    })
}

/// How often a long read says how far it is.
const PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_secs(3);

/// Findings this host is asked about (the first ones: a log of a thousand failures toward
/// one peer is one finding already).
const HOST_LOOKS: usize = 8;

/// This host's evidence for each finding it is an end of: `check`'s rules on the port and
/// GID index the log ties to it, toward the other end.
fn look_here(ctx: &Ctx, triage: &mut diagnose::Triage) {
    let sysfs = SysfsRoot::new(&ctx.sysfs);
    let devices = match sysfs.devices() {
        Ok(d) => d,
        Err(e) => {
            for f in triage.findings.iter_mut().take(HOST_LOOKS) {
                f.host = HostLook::Skipped(format!("this host's RDMA devices were not read: {e}"));
            }
            return;
        }
    };
    let gids: Vec<HostGid> = devices
        .iter()
        .flat_map(|d| d.ports.iter())
        .flat_map(|p| {
            p.gids.iter().map(|g| HostGid {
                device: p.device.clone(),
                port: p.number,
                index: g.index,
                gid: g.gid,
            })
        })
        .collect();
    let names: Vec<String> = devices.iter().map(|d| d.name.clone()).collect();
    let hostname = procfs::hostname().unwrap_or_default();
    for f in triage.findings.iter_mut().take(HOST_LOOKS) {
        if f.local_gid.is_none() && f.remote_gid.is_none() && f.device.is_none() {
            continue;
        }
        f.host = match diagnose::end_here(f, &gids, &hostname, &names) {
            Ok(end) => match check_here(ctx, &end) {
                Ok(found) => HostLook::Here(end, found),
                Err(e) => HostLook::Skipped(format!("{}: {e}", end.why)),
            },
            Err(why) => HostLook::Skipped(why),
        };
    }
}

/// `check -d DEV -i PORT -g INDEX --peer PEER`, asked as `check` asks it (one answer for
/// one port, whichever command asks).
fn check_here(ctx: &Ctx, end: &diagnose::HereEnd) -> Result<Vec<Diagnostic>> {
    let gid = end.gid_index.map_or(GidIndexArg::Auto, GidIndexArg::Index);
    Ok(crate::ask::check(ctx, &end.device, end.port, gid, end.peer, None)?.findings)
}

#[cfg(test)]
mod tests {
    //! Fuzzing the whole path a log takes: bytes → `gather::joblog::read_one` (line splitting,
    //! UTF-8 and binary sniffing, the line parser, the digest) → `judge` → text and JSON.
    //! Inputs: random bytes, and mutations of one line of every format triage reads (each
    //! built from its tool's format string, as in model/joblog.rs): truncations, huge and
    //! negative numbers, invalid UTF-8, separators only, splices of two formats, stacked
    //! launcher prefixes, long repeats. A small deterministic PRNG with a fixed seed: a failure
    //! names the seed and the batch, and the input that broke it.

    use super::*;
    use crate::model::joblog::LogDigest;

    const SEED: u64 = 0x5eed_7a1a_9e37_79b9;
    const BATCH: usize = 1_000;

    /// One line of every format triage reads.
    const FORMATS: &[&str] = &[
        " 3: node7:4242:4300 [2] NCCL WARN NET/IB : Got completion from peer 10.0.3.7<41322> \
         with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:10.0.3.6 \
         remoteGids::ffff:10.0.3.7",
        "gpu3:77:90 [0] NCCL WARN NET/IB: Got completion from peer 10.1.0.9<5000> with \
         status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_SEND(0) vendor_err=129  localGid \
         ::ffff:10.1.0.3 remoteGids::ffff:10.1.0.9 hca mlx5_4",
        "[1,4]<stderr>:node2:10:11 [1] misc/ibvwrap.cc:300 NCCL WARN Call to ibv_modify_qp \
         failed with 61 No data available, on dev mlx5_2:1, curr state INIT, next state RTR, \
         local GID index 5, local GID ::, remote GID ::ffff:10.0.2.2",
        "n1:1:2 [0] NCCL WARN Call to ibv_modify_qp failed with error Connection timed out",
        "0: node1:1:1 [0] NCCL INFO NCCL version 2.19.3+cuda12.2",
        "[1700000000.123456] [node5:31337:0]     ib_mlx5_log.c:171  UCX  ERROR Transport \
         retry count exceeded on mlx5_0:1/RoCE (synd 0x15 vend 0x81 hw_synd 0/0)",
        "[1700000001.000001] [vm1:900  :0]  rc_verbs_iface.c:69   UCX  ERROR send completion \
         with error: transport retry counter exceeded [qpn 0x11 wrid 0x5vendor_err 0x0]",
        "[rqpn 0x12 dlid=0 sl=0 port=1 src_path_bits=0 dgid=::ffff:192.168.77.2 sgid_index=1 \
         traffic_class=0]",
        "mlx5_0 QP 0x1a2b wqe[3]: SEND s-e [inl] [va 0x7f00 len 64]",
        " Completion with error at client",
        " Failed status 12: wr_id 0 syndrom 0x81",
        "scnt=128, ccnt=0",
        "Failed status transport retry counter exceeded (12) for wr_id 2",
        "Failed to modify QP to RTR",
        "Failed to modify QP 1234 to RTR",
        "  local address:  LID 0x0000, QPN 0x000012, PSN 0x0a0b0d, GID ::",
        "cq completion failed status 12",
        "recv wc error: 5",
        "rdmactl: work completion failed (rxe1/1, GID index 1, dest GID ::ffff:192.168.77.1, \
         dest QPN 0x000011, peer 192.168.77.1:18515): SEND: IBV_WC_RETRY_EXC_ERR (status 12: \
         transport retry counter exceeded) after 3.10 s",
        "rdmactl: modify QP to RTR failed (rxe0/1, GID index 3, dest GID ::ffff:10.9.9.9, peer \
         10.9.9.9:18515): ETIMEDOUT (110: Connection timed out)",
        "Nov 28 04:20:16 node3 kernel: infiniband mlx5_1: dump_cqe:272:(pid 0): WC error: 10, \
         Message: remote access error",
        "[ 1234.567890] infiniband mlx5_0: dump_cqe:272:(pid 0): WC error: 5, Message: x",
        "libfabric:4711:1764300000::ofi_rxm:cq:rxm_handle_comp_error():1770<warn> \
         fi_cq_readerr: err: Input/output error (5), prov_err: transport retry counter \
         exceeded (12)",
        "libfabric:4711:1764300001:job7:verbs:ep_ctrl:vrb_create_dgram_ep():805<warn> \
         ibv_modify_qp: Invalid argument (22)",
        "/build/nvshmem/src/modules/transport/ibrc/ibrc.cpp:1072: non-zero status: 12 \
         ibv_poll_cq failed, status: 12",
        "src/modules/transport/ibrc/ibrc.cpp:401: non-zero status: 110 ibv_modify_qp failed ",
        "ibgda_poll_cq failed with error=21.",
        "E1128 04:20:16.123456 31337 worker_pool.cpp:654] Worker: Process failed for slice \
         (opcode: 1, source_addr: 0x7f0000001000, length: 65536, dest_addr: 0x7f1000002000, \
         local_nic: mlx5_0, peer_nic: 10.0.5.2:12345@mlx5_1, dest_rkey: 2048, retry_cnt: 0, \
         max_retry_cnt: 8): transport retry counter exceeded",
        "I1128 04:20:17.000001 31338 workers.cpp:672] Detected error WQE for slice 0x55aa \
         (opcode: 0, source_addr: 0x1, dest_addr: 0x2, length: 8, local_nic: mlx5_3): remote \
         access error",
        " Dual-port       : OFF\t\tDevice         : mlx5_2",
        " GID index       : 1",
        " Found Incompatibility issue with GID types.",
        "[  812.125000] rdma_rxe: invalid sgid index = 300",
        "Nov 28 04:20:16 vm1 kernel: rxe1: qp#17 rxe_av_chk_attrs: invalid sgid index = 300",
        "virtio_net virtio0 rxe0: rxe_av_chk_attr: invalid network type for rdma_rxe = 1",
    ];

    const PREFIXES: &[&str] = &[
        "[1,0]<stderr>:",
        "[12,345]<stdout>:",
        "17: ",
        "gpu-a.cluster: ",
        "Nov  1 00:00:00 h kernel: ",
        "Jan 31 23:59:59 host prog[4294967296]: ",
        "[ 99999999999999999999.1] ",
        "[0.0] ",
    ];

    const HUGE: &[&str] = &[
        "99999999999999999999999999",
        "18446744073709551616",
        "4294967296",
        "-2147483649",
        "-0",
        "0xffffffffffffffffffff",
        "-",
        "",
    ];

    const SEPARATORS: &[u8] = b" :[]<>(),=@/.\t-_x0";

    /// xorshift64*: small, fast, and the same on every host.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n.max(1) as u64) as usize
        }
    }

    /// One generated line (no newline in it).
    fn input(r: &mut Rng) -> Vec<u8> {
        let seed = FORMATS[r.below(FORMATS.len())].as_bytes();
        let mut v = match r.below(8) {
            // Random bytes, any value (invalid UTF-8 included; NUL rarely, as one NUL makes
            // the whole batch a binary file and no line of it would reach the reader's
            // parser).
            0 => (0..r.below(300))
                .map(|_| match r.next() as u8 {
                    0 if r.below(4000) != 0 => 1,
                    b => b,
                })
                .collect(),
            // A truncated format line.
            1 => seed[..r.below(seed.len() + 1)].to_vec(),
            // Huge, negative or empty numbers in place of one run of digits.
            2 => {
                let s = String::from_utf8_lossy(seed).into_owned();
                let starts: Vec<usize> = s
                    .char_indices()
                    .filter(|(i, c)| {
                        c.is_ascii_digit() && !s[..*i].ends_with(|p: char| p.is_ascii_digit())
                    })
                    .map(|(i, _)| i)
                    .collect();
                match starts.get(r.below(starts.len())) {
                    Some(&at) => {
                        let end = s[at..]
                            .find(|c: char| !c.is_ascii_digit())
                            .map_or(s.len(), |e| at + e);
                        let mut out = s[..at].to_string();
                        out.push_str(HUGE[r.below(HUGE.len())]);
                        out.push_str(&s[end..]);
                        out.into_bytes()
                    }
                    None => seed.to_vec(),
                }
            }
            // Invalid UTF-8 bytes dropped into a format line.
            3 => {
                let mut v = seed.to_vec();
                for _ in 0..=r.below(4) {
                    let at = r.below(v.len() + 1);
                    let bad: &[u8] =
                        [&b"\xff"[..], b"\xc3", b"\xe2\x82", b"\xf0\x9f\x98"][r.below(4)];
                    v.splice(at..at, bad.iter().copied());
                }
                v
            }
            // Separators only.
            4 => (0..r.below(200))
                .map(|_| SEPARATORS[r.below(SEPARATORS.len())])
                .collect(),
            // The head of one format on the tail of another.
            5 => {
                let other = FORMATS[r.below(FORMATS.len())].as_bytes();
                let mut v = seed[..r.below(seed.len() + 1)].to_vec();
                v.extend_from_slice(&other[r.below(other.len() + 1)..]);
                v
            }
            // Launcher and logger prefixes stacked deep.
            6 => {
                let mut v = Vec::new();
                for _ in 0..r.below(12) {
                    v.extend_from_slice(PREFIXES[r.below(PREFIXES.len())].as_bytes());
                }
                v.extend_from_slice(seed);
                v
            }
            // A long line: one format repeated (past MAX_LINE now and then).
            _ => {
                let most = if r.below(50) == 0 { 700 } else { 20 };
                seed.repeat(1 + r.below(most))
            }
        };
        // A few random byte flips on top of any of them.
        for _ in 0..r.below(3) {
            if !v.is_empty() {
                let at = r.below(v.len());
                v[at] = SEPARATORS[r.below(SEPARATORS.len())];
            }
        }
        v.retain(|b| *b != b'\n');
        v
    }

    /// One batch: read, judge, render; every bound checked. Returns the events decoded and
    /// whether the reader refused the batch as binary.
    fn one_batch(lines: &[Vec<u8>], batch: usize) -> (u64, bool) {
        let mut bytes = Vec::new();
        for l in lines {
            bytes.extend_from_slice(l);
            bytes.push(b'\n');
        }
        let names = vec![format!("fuzz-{batch}.log")];
        let mut digest = LogDigest::default();
        let refused = match joblog::read_one(&bytes[..], &names[0], None, 0, &mut digest, None) {
            Ok(()) => {
                assert_eq!(digest.lines, lines.len() as u64);
                false
            }
            // A NUL byte or mostly invalid UTF-8 is a binary file: a one-line error naming
            // the file, never a panic. Its lines still go through the parser, lossily.
            Err(e) => {
                let msg = e.to_string();
                assert!(
                    msg.contains(&names[0]) && msg.len() < 400 && !msg.contains('\n'),
                    "{msg}"
                );
                digest = LogDigest::default();
                let mut parser = crate::model::joblog::LogParser::for_file(0);
                for (i, l) in lines.iter().enumerate() {
                    let (kind, done) = parser.feed(i as u64 + 1, &String::from_utf8_lossy(l));
                    if let Some(e) = done {
                        digest.add(e);
                    }
                    digest.count(&kind);
                }
                if let Some(e) = parser.finish() {
                    digest.add(e);
                }
                true
            }
        };
        assert_eq!(digest.understood + digest.skipped, digest.lines);
        assert!(digest.events.len() <= LogDigest::MAX_EVENTS);
        let error_lines = digest.events.len() as u64
            + digest.events_dropped
            + digest.flushes.iter().map(|f| f.count).sum::<u64>();
        assert!(error_lines <= digest.lines + 1);
        let longest = lines
            .iter()
            .map(Vec::len)
            .max()
            .unwrap_or(0)
            .min(joblog::MAX_LINE);
        for e in &digest.events {
            assert!(e.line >= 1 && e.line <= lines.len() as u64);
            for s in [&e.device, &e.origin.host, &e.origin.time]
                .into_iter()
                .flatten()
            {
                assert!(s.len() <= longest, "a field longer than its line");
            }
        }
        let triage = diagnose::judge(&digest, &names);
        assert!(triage.findings.len() as u64 <= error_lines * 2 + 1);
        let text = render::text(&triage, &digest, &names, crate::output::Style::plain());
        let json = json(&render::json(&triage, &digest, &names));
        // Output grows with the findings, each bounded by a few lines' worth of its input.
        let bound = 4096 + triage.findings.len() * (8192 + 40 * longest);
        assert!(text.len() <= bound, "text of {} bytes", text.len());
        assert!(
            json.len() <= 2 * bound + 1024 * digest.events.len(),
            "json too long"
        );
        assert!(serde_json::from_str::<serde_json::Value>(&json).is_ok());
        (error_lines, refused)
    }

    fn fuzz(inputs: usize) {
        let started = std::time::Instant::now();
        let mut r = Rng(SEED);
        let mut batch_no = 0;
        let mut done = 0;
        let (mut events, mut refused) = (0u64, 0u64);
        while done < inputs {
            let n = BATCH.min(inputs - done);
            let mut lines: Vec<Vec<u8>> = (0..n).map(|_| input(&mut r)).collect();
            // Every 16th batch a binary file: a NUL in its first line.
            if batch_no % 16 == 15 {
                let at = r.below(lines[0].len() + 1);
                lines[0].insert(at, 0);
            }
            let run = std::panic::catch_unwind(|| one_batch(&lines, batch_no));
            if let Ok((n_events, was_refused)) = run {
                events += n_events;
                refused += u64::from(was_refused);
            }
            if let Err(cause) = run {
                // Name the seed and the batch, and the shortest failing line where one alone
                // fails.
                let alone = lines.iter().find(|l| {
                    std::panic::catch_unwind(|| one_batch(std::slice::from_ref(*l), batch_no))
                        .is_err()
                });
                let why = cause
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| cause.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                panic!(
                    "triage fuzz: seed {SEED:#x}, batch {batch_no} ({n} lines): {why}; a line \
                     that fails alone: {:?}",
                    alone.map(|l| String::from_utf8_lossy(l).into_owned())
                );
            }
            done += n;
            batch_no += 1;
        }
        eprintln!(
            "triage fuzz: {inputs} inputs (seed {SEED:#x}) in {:.1} s: {events} error lines, \
             {refused} of {batch_no} batches refused as binary",
            started.elapsed().as_secs_f64()
        );
        // The generator reaches the parsers and the binary check both, or it tests nothing.
        assert!(
            events * 20 > inputs as u64,
            "only {events} error lines decoded"
        );
        assert!(
            refused > 0 && refused < batch_no as u64 / 2,
            "{refused} batches refused"
        );
    }

    #[test]
    fn a_hundred_thousand_generated_lines_never_panic_and_stay_bounded() {
        fuzz(100_000);
    }

    #[test]
    #[ignore = "10⁶ inputs take 85-150 s in a debug build on this 2-core host; scripts/test runs it"]
    fn a_million_generated_lines_never_panic_and_stay_bounded() {
        fuzz(1_000_000);
    }
}
