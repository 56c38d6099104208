//! rank 0 of `rdmactl fabric` at scale: 1024 simulated ranks on 127.0.0.1 (the rendezvous,
//! the rounds and the result collection; pair tests answer at once, no RDMA). Every pair
//! must be scheduled exactly once in N-1 rounds. `RDMACTL_FABRIC_RANKS` changes N,
//! `RDMACTL_BIN` the binary (the release build runs it about three times faster).

use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::time::Instant;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// An odd count: every rank sits out one of the N rounds.
#[test]
fn rank_0_schedules_every_pair_of_33_ranks_once() {
    scale(33);
}

/// Minutes with a debug build: scripts/test runs it with the release build after the VM
/// suite built it (`RDMACTL_BIN=target/release/rdmactl cargo test --test fabric_scale -- --ignored`).
#[test]
#[ignore = "slow; scripts/test runs it with the release build"]
fn rank_0_schedules_every_pair_of_1024_ranks_once_in_n_minus_1_rounds() {
    let n: u32 = std::env::var("RDMACTL_FABRIC_RANKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1024);
    scale(n);
}

fn scale(n: u32) {
    let bin = std::env::var("RDMACTL_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_rdmactl").into());
    let port = free_port().to_string();
    let rendezvous = format!("127.0.0.1:{port}");
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("pairs.csv");
    let common = |c: &mut Command| {
        c.args([
            "fabric",
            "--simulate",
            "--size",
            &n.to_string(),
            "--token",
            "scale-test",
        ])
        .args(["--rendezvous", &rendezvous, "--join-timeout", "120"])
        .env_remove("SLURM_PROCID")
        .env_remove("OMPI_COMM_WORLD_RANK")
        .env_remove("PMIX_RANK")
        .env_remove("PMI_RANK");
    };
    let mut rest = Command::new(&bin);
    common(&mut rest);
    rest.args(["--rank", "1", "--simulate-ranks", &(n - 1).to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let start = Instant::now();
    let mut rank0 = Command::new(&bin);
    common(&mut rank0);
    rank0.args(["--rank", "0", "--csv"]).arg(&csv);
    let mut others = rest.spawn().expect("start the simulated ranks");
    let out = rank0.output().expect("run rank 0");
    let elapsed = start.elapsed();
    let others_status = others.wait().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "rank 0 exited {:?}\n{text}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        others_status.success(),
        "the simulated ranks exited {others_status:?}"
    );
    let pairs = u64::from(n) * u64::from(n - 1) / 2;
    let rounds = if n % 2 == 0 { n - 1 } else { n };
    let header = text.lines().next().unwrap_or_default();
    assert!(
        header.starts_with(&format!(
            "fabric: {n} of {n} ranks joined (--rank/--size), pattern all: {rounds} round(s), {pairs} pair(s);"
        )),
        "{header}"
    );
    assert!(text.contains("verdict: clean"), "{text}");
    let listed = std::fs::read_to_string(&csv).unwrap();
    let mut seen = BTreeSet::new();
    let mut per_round = std::collections::BTreeMap::<u32, BTreeSet<u32>>::new();
    for line in listed.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let (a, b, round): (u32, u32, u32) = (
            f[0].parse().unwrap(),
            f[3].parse().unwrap(),
            f[6].parse().unwrap(),
        );
        assert!(a < b && b < n, "{line}");
        assert!(seen.insert((a, b)), "pair {a}-{b} scheduled twice");
        let busy = per_round.entry(round).or_default();
        assert!(
            busy.insert(a) && busy.insert(b),
            "a rank twice in round {round}: {line}"
        );
    }
    assert_eq!(seen.len() as u64, pairs);
    assert_eq!(per_round.len() as u32, rounds);
    let rss = String::from_utf8_lossy(&out.stderr).to_string();
    eprintln!(
        "fabric scale: {n} ranks, {pairs} pairs in {rounds} rounds: rank 0 took {:.1} s{}",
        elapsed.as_secs_f64(),
        rss.lines()
            .find(|l| l.contains("Maximum resident"))
            .map(|l| format!(", {}", l.trim()))
            .unwrap_or_default()
    );
}
