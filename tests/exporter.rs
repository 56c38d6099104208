//! `rdmactl exporter` on the fixture trees: the textfile matches tests/golden/exporter/
//! (`UPDATE_GOLDEN=1 cargo test --test exporter` rewrites them) and passes `promtool check
//! metrics` (Debian's `prometheus` package, installed by scripts/setup: those tests are
//! ignored by a plain `cargo test`, scripts/test runs them with `--include-ignored`, and a
//! missing promtool fails, never skips); `--listen` serves the same series over HTTP on 127.0.0.1 and counts
//! a port state change made to a copied tree while it runs.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const FIXTURES: &str = "tests/fixtures/sysfs";

/// Every tree with devices, the two the exporter exists for (a driver with no counters/,
/// a VF whose counters/ read "N/A (no PMA)"), and one with none.
const TREES: &[&str] = &[
    "rxe-veth-basic",
    "rxe-veth-vlan-ipv6-down",
    "procfs-testdata",
    "mlx5-roce-vlan",
    "ib-hca",
    "ibsim",
    "pod-gid-holes",
    "ipv6-only",
    "port-down",
    "unreadable",
    "rxe-counters",
    "siw-ens3",
    "bnxt-re-hw-only",
    "sriov-vf-no-pma",
    "no-devices",
    "qos-good",
    "qos-pfc-wrong-priority",
    "qos-pause-storm",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn rdmactl() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rdmactl"));
    cmd.current_dir(root()).env_remove("NO_COLOR");
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("RDMACTL_") {
            cmd.env_remove(key);
        }
    }
    cmd
}

/// `rdmactl --sysfs TREE exporter --textfile DIR` → the file's text.
fn textfile(sysfs: &Path) -> String {
    let dir = tempfile::tempdir().unwrap();
    let out = rdmactl()
        .arg("--sysfs")
        .arg(sysfs)
        .args(["exporter", "--textfile"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.is_empty() && out.stderr.is_empty(), "{out:?}");
    // Only the renamed file is left: no temporary one beside it.
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, ["rdmactl.prom"]);
    without_success_time(&std::fs::read_to_string(dir.path().join("rdmactl.prom")).unwrap())
}

const LAST_SUCCESS: &str = "rdmactl_last_success_timestamp_seconds";

/// `text` without its last-success series (the clock's, different each run), which must be
/// there and recent: the golden files and the served text compare the rest.
fn without_success_time(text: &str) -> String {
    let at = text
        .lines()
        .find_map(|l| l.strip_prefix(LAST_SUCCESS)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no {LAST_SUCCESS} sample:\n{text}"));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let at: f64 = at.parse().unwrap();
    assert!((now - at).abs() < 120.0, "{LAST_SUCCESS} {at}, now {now}");
    text.lines()
        .filter(|l| !l.contains(LAST_SUCCESS))
        .map(|l| format!("{l}\n"))
        .collect()
}

fn golden(name: &str, actual: &str) {
    let path = root().join("tests/golden/exporter").join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; run UPDATE_GOLDEN=1 cargo test --test exporter",
            path.display()
        )
    });
    if want != actual {
        let first = want.lines().zip(actual.lines()).position(|(a, b)| a != b);
        panic!(
            "{} differs (first differing line: {first:?})\n--- got ---\n{actual}",
            path.display()
        );
    }
}

/// `promtool check metrics` (format and naming lint) on `text`; its complaints, if any.
fn promtool(text: &str) -> String {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("promtool: {e}; install Debian's prometheus package (scripts/setup does)")
        });
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() {
        String::new()
    } else {
        said
    }
}

#[test]
fn every_tree_matches_its_golden() {
    for tree in TREES {
        let text = textfile(&root().join(FIXTURES).join(tree));
        golden(&format!("{tree}.prom"), &text);
    }
}

#[test]
#[ignore = "needs prometheus (promtool); scripts/test runs it"]
fn every_tree_passes_promtool() {
    for tree in TREES {
        let text = textfile(&root().join(FIXTURES).join(tree));
        assert_eq!(promtool(&text), "", "{tree}:\n{text}");
    }
}

/// What node_exporter's infiniband collector cannot do: a port without counters/ and one
/// whose counters/ read "N/A (no PMA)" still export their state and driver counters, and
/// nothing on the other ports is lost.
#[test]
fn ports_without_pma_counters_keep_every_other_series() {
    let bnxt = textfile(&root().join(FIXTURES).join("bnxt-re-hw-only"));
    for line in [
        "rdmactl_port_has_pma{device=\"bnxt_re0\",port=\"1\"} 0",
        "rdmactl_port_state{device=\"bnxt_re0\",port=\"1\"} 4",
        "rdmactl_scrape_error{device=\"bnxt_re0\"} 0",
        "rdmactl_hw_rx_bytes_total{device=\"bnxt_re0\",port=\"1\"} 412004501760",
        // A level, not a count: a gauge without _total.
        "# TYPE rdmactl_hw_active_qps gauge",
        "rdmactl_port_roce_v2_ipv4_gid_index{device=\"bnxt_re0\",port=\"1\"} 3",
    ] {
        assert!(bnxt.lines().any(|l| l == line), "{line}\n{bnxt}");
    }
    let vf = textfile(&root().join(FIXTURES).join("sriov-vf-no-pma"));
    for line in [
        "rdmactl_port_has_pma{device=\"mlx5_2\",port=\"1\"} 0",
        "rdmactl_scrape_error{device=\"mlx5_2\"} 0",
        "rdmactl_hw_rx_read_requests_total{device=\"mlx5_2\",port=\"1\"} 1200",
        // The PF's PMA data counter, in bytes (4 × the 4-byte words sysfs shows).
        "rdmactl_pma_port_rcv_data_bytes_total{device=\"mlx5_0\",port=\"1\"} 20049324",
    ] {
        assert!(vf.lines().any(|l| l == line), "{line}\n{vf}");
    }
    assert!(!vf.contains("N/A"), "{vf}");
    assert!(
        !vf.contains("rdmactl_pma_symbol_error_total{device=\"mlx5_2\""),
        "{vf}"
    );
}

/// One unreadable device is its own `rdmactl_scrape_error`, and doctor's finding on it is
/// a series an alert can link to `rdmactl explain`.
#[test]
fn an_unreadable_device_is_a_scrape_error_and_a_finding() {
    let text = textfile(&root().join(FIXTURES).join("unreadable"));
    assert!(
        text.contains(
            "rdmactl_scrape_error{device=\"irdma0\",path=\"class/infiniband/irdma0/ports/1/state\"} 1\n"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "rdmactl_finding{code=\"port-state\",severity=\"fail\",device=\"irdma0\",port=\"1\"} 1\n"
        ),
        "{text}"
    );
    let explain = rdmactl().args(["explain", "port-state"]).output().unwrap();
    assert_eq!(explain.status.code(), Some(0));
}

#[test]
fn a_textfile_directory_that_does_not_exist_is_a_write_error() {
    let out = rdmactl()
        .arg("--sysfs")
        .arg(root().join(FIXTURES).join("rxe-counters"))
        .args(["exporter", "--textfile", "/nonexistent/rdmactl-textfile"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("cannot write /nonexistent/rdmactl-textfile/.rdmactl.prom.")
            && stderr.contains("(--textfile)"),
        "{stderr}"
    );
}

/// A running `rdmactl exporter --listen 127.0.0.1:0`, killed on drop.
struct Exporter {
    child: Child,
    addr: SocketAddr,
}

impl Exporter {
    fn start(sysfs: &Path) -> Exporter {
        let mut child = rdmactl()
            .arg("--sysfs")
            .arg(sysfs)
            .args(["exporter", "--listen", "127.0.0.1:0"])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The first stderr line names the port the kernel gave.
        let mut line = String::new();
        BufReader::new(child.stderr.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .trim()
            .strip_prefix("rdmactl exporter: serving http://")
            .and_then(|s| s.strip_suffix("/metrics"))
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .parse()
            .unwrap();
        Exporter { child, addr }
    }

    /// GET `path` over HTTP/1.0 (the server closes after answering): (status line,
    /// headers, body).
    fn get(&self, path: &str) -> (String, String, String) {
        let mut s = TcpStream::connect_timeout(&self.addr, Duration::from_secs(5)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
        let mut reply = String::new();
        s.read_to_string(&mut reply).unwrap();
        let (head, body) = reply.split_once("\r\n\r\n").expect("headers end");
        let (status, headers) = head.split_once("\r\n").unwrap_or((head, ""));
        (status.to_string(), headers.to_lowercase(), body.to_string())
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

#[test]
fn listen_serves_metrics_over_http_and_counts_state_changes() {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(&root().join(FIXTURES).join("rxe-counters"), tmp.path());
    let exporter = Exporter::start(tmp.path());

    let (status, headers, body) = exporter.get("/metrics");
    assert_eq!(status.split_whitespace().nth(1), Some("200"), "{status}");
    assert!(
        headers.contains("content-type: text/plain; version=0.0.4"),
        "{headers}"
    );
    assert!(
        body.contains("rdmactl_port_state{device=\"rxe0\",port=\"1\"} 4\n"),
        "{body}"
    );
    assert!(
        body.contains("rdmactl_port_state_changes_total{device=\"rxe0\",port=\"1\"} 0\n"),
        "{body}"
    );
    assert!(
        body.contains("\nrdmactl_scrape_duration_seconds "),
        "{body}"
    );
    // The file's series and the endpoint's are the same, but for the two only a running
    // exporter knows.
    let file = textfile(tmp.path());
    let served: String = body
        .lines()
        .filter(|l| {
            !l.contains("state_changes")
                && !l.contains("scrape_duration")
                && !l.contains(LAST_SUCCESS)
        })
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(served, file);

    // The port goes down behind the exporter's back; the poller sees it within a second.
    let state = tmp.path().join("class/infiniband/rxe0/ports/1/state");
    std::fs::write(&state, "1: DOWN\n").unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let down = loop {
        let (_, _, body) = exporter.get("/metrics");
        if body.contains("rdmactl_port_state_changes_total{device=\"rxe0\",port=\"1\"} 1\n") {
            break body;
        }
        assert!(
            Instant::now() < deadline,
            "no state change counted:\n{body}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(
        down.contains(
            "rdmactl_finding{code=\"port-state\",severity=\"fail\",device=\"rxe0\",port=\"1\"} 1\n"
        ),
        "{down}"
    );
    std::fs::write(&state, "4: ACTIVE\n").unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let (_, _, up) = exporter.get("/metrics");
    assert!(
        up.contains("rdmactl_port_state_changes_total{device=\"rxe0\",port=\"1\"} 2\n"),
        "{up}"
    );

    let (status, _, _) = exporter.get("/nothing-here");
    assert_eq!(status.split_whitespace().nth(1), Some("404"), "{status}");
}

/// What `--listen` serves (with the two series only a running exporter has) passes
/// promtool as the textfile does.
#[test]
#[ignore = "needs prometheus (promtool); scripts/test runs it"]
fn the_served_metrics_pass_promtool() {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(&root().join(FIXTURES).join("rxe-counters"), tmp.path());
    let exporter = Exporter::start(tmp.path());
    let (status, _, body) = exporter.get("/metrics");
    assert_eq!(status.split_whitespace().nth(1), Some("200"), "{status}");
    assert!(body.contains("rdmactl_scrape_duration_seconds "), "{body}");
    assert_eq!(promtool(&body), "", "{body}");
}

#[test]
fn a_port_taken_is_refused_with_the_address() {
    let holder = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = holder.local_addr().unwrap().to_string();
    let out = rdmactl()
        .arg("--sysfs")
        .arg(root().join(FIXTURES).join("rxe-counters"))
        .args(["exporter", "--listen", &addr])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("--listen {addr}: cannot listen there")),
        "{stderr}"
    );
}

/// `mkfifo PATH`, replacing the file there.
fn plant_fifo(path: &Path) {
    let _ = std::fs::remove_file(path);
    let made = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(made.success(), "mkfifo {}", path.display());
}

/// Runs `cmd`, killing it past `limit`: (exit code, stderr), or a failure naming the hang.
fn run_within(mut cmd: Command, limit: Duration) -> (Option<i32>, String) {
    let mut child = cmd.stderr(Stdio::piped()).spawn().unwrap();
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            return (status.code(), err);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("still running after {limit:?}: a read blocked it");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A FIFO where a counter file belongs (issue 39: 3 of 3 scrapes timed out) is never
/// opened blocking: both a textfile run and a served scrape answer at once, with the FIFO
/// as that device's scrape error and every other series of it still there.
#[test]
fn a_fifo_in_sysfs_is_a_scrape_error_with_its_path_not_a_hang() {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(&root().join(FIXTURES).join("rxe-counters"), tmp.path());
    let rel = "class/infiniband/rxe0/ports/1/hw_counters/rcvd_pkts";
    plant_fifo(&tmp.path().join(rel));
    let error_line = format!("rdmactl_scrape_error{{device=\"rxe0\",path=\"{rel}\"}} 1\n");

    let dir = tempfile::tempdir().unwrap();
    let mut cmd = rdmactl();
    cmd.arg("--sysfs")
        .arg(tmp.path())
        .args(["exporter", "--textfile"])
        .arg(dir.path());
    let (code, stderr) = run_within(cmd, Duration::from_secs(20));
    assert_eq!(code, Some(0), "{stderr}");
    let text = std::fs::read_to_string(dir.path().join("rdmactl.prom")).unwrap();
    assert!(text.contains(&error_line), "{text}");
    assert!(
        text.contains("rdmactl_port_state{device=\"rxe0\",port=\"1\"} 4\n")
            && text.contains("rdmactl_hw_rdma_sends_total{device=\"rxe0\",port=\"1\"}"),
        "{text}"
    );
    assert!(!text.contains("rdmactl_hw_rcvd_pkts_total"), "{text}");

    let exporter = Exporter::start(tmp.path());
    let start = Instant::now();
    let (status, _, body) = exporter.get("/metrics");
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(status.split_whitespace().nth(1), Some("200"), "{status}");
    assert!(body.contains(&error_line), "{body}");
}

/// Threads of a running process, from /proc/PID/task.
fn threads(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .count()
}

/// Idle connections take no thread each (issue 39: 1,000 of them made 1,003 threads): a
/// fixed pool serves them, the overflow is answered 503 at once, an idle one is closed
/// after the request-head deadline, and scrapes are served again once they are gone.
#[test]
fn idle_connections_do_not_make_threads_and_are_closed() {
    let exporter = Exporter::start(&root().join(FIXTURES).join("rxe-counters"));
    let pid = exporter.child.id();
    let idle: Vec<TcpStream> = (0..300)
        .map(|_| TcpStream::connect_timeout(&exporter.addr, Duration::from_secs(5)).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let during = threads(pid);
    // The accepting thread, the pool, the state poller and a gather worker at most.
    assert!(during <= 12, "{during} threads with 300 idle connections");
    // The first connections sit with a worker: it closes them unanswered after its
    // request-head deadline; the overflow was answered 503.
    let mut first = idle[0].try_clone().unwrap();
    first
        .set_read_timeout(Some(Duration::from_secs(15)))
        .unwrap();
    let start = Instant::now();
    let mut got = Vec::new();
    let closed = first.read_to_end(&mut got);
    assert!(
        closed.is_ok() && got.is_empty() && start.elapsed() < Duration::from_secs(10),
        "{closed:?} {got:?} after {:?}",
        start.elapsed()
    );
    let mut last = idle.last().unwrap().try_clone().unwrap();
    last.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut busy = String::new();
    last.read_to_string(&mut busy).unwrap();
    assert!(busy.starts_with("HTTP/1.1 503"), "{busy:?}");
    drop(idle);
    // Once the idle connections are gone, a scrape is served again.
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let (status, _, body) = exporter.get("/metrics");
        if status.contains(" 200 ") {
            assert!(body.contains("rdmactl_port_state{"), "{body}");
            break;
        }
        assert!(Instant::now() < deadline, "{status}");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(threads(pid) <= 12);
}

/// Scrapes are served at once from the pool, not one at a time: four together all answer.
#[test]
fn concurrent_scrapes_are_all_answered() {
    let exporter = Exporter::start(&root().join(FIXTURES).join("mlx5-roce-vlan"));
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| s.spawn(|| exporter.get("/metrics")))
            .collect();
        for h in handles {
            let (status, _, body) = h.join().unwrap();
            assert!(status.contains(" 200 "), "{status}");
            assert!(body.contains("rdmactl_scrape_duration_seconds "), "{body}");
        }
    });
}

/// A `--textfile` run that cannot read replaces the last good file (node_exporter would go
/// on serving it as fresh: issue 39) with its scrape error, no healthy series, and the last
/// good run's success time, whose age the documented alert watches; the run fails.
#[test]
fn a_failed_textfile_run_replaces_the_good_file_and_keeps_the_success_time() {
    let dir = tempfile::tempdir().unwrap();
    let good = rdmactl()
        .arg("--sysfs")
        .arg(root().join(FIXTURES).join("rxe-counters"))
        .args(["exporter", "--textfile"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(good.status.code(), Some(0), "{good:?}");
    let file = dir.path().join("rdmactl.prom");
    let first = std::fs::read_to_string(&file).unwrap();
    let success = |text: &str| {
        text.lines()
            .find(|l| l.starts_with(LAST_SUCCESS))
            .map(str::to_string)
    };
    let was = success(&first).expect("a good run writes its success time");
    without_success_time(&first);

    // class/infiniband a file, not a directory: nothing can be read.
    let broken = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(broken.path().join("class")).unwrap();
    std::fs::write(broken.path().join("class/infiniband"), "x").unwrap();
    // The clock moves on, so a success time written anew would differ.
    std::thread::sleep(Duration::from_millis(1100));
    let bad = rdmactl()
        .arg("--sysfs")
        .arg(broken.path())
        .args(["exporter", "--textfile"])
        .arg(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert_ne!(bad.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("class/infiniband"), "{stderr}");
    let after = std::fs::read_to_string(&file).unwrap();
    assert!(after.contains("\nrdmactl_scrape_error 1\n"), "{after}");
    assert!(!after.contains("rdmactl_port_state"), "{after}");
    assert!(!after.contains("rdmactl_findings"), "{after}");
    assert_eq!(success(&after), Some(was), "{after}");
}

/// A device that disappears took its alerts with it (issue 39: its `port-state` series
/// resolved and `rdmactl_findings{severity="fail"}` read 0). With `--expect` the manifest's
/// findings are series: the missing device is a failing `expect-device`, and the device
/// count a rule can compare is 0, not an absent series.
#[test]
fn with_expect_a_device_that_disappears_keeps_failing() {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(&root().join(FIXTURES).join("rxe-counters"), tmp.path());
    let manifest = tmp.path().join("expect.toml");
    std::fs::write(&manifest, "devices = 1\n\n[[device]]\nname = \"rxe0\"\n").unwrap();
    let start = |sysfs: &Path| {
        let mut child = rdmactl()
            .arg("--sysfs")
            .arg(sysfs)
            .args(["exporter", "--listen", "127.0.0.1:0", "--expect"])
            .arg(&manifest)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stderr.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .trim()
            .strip_prefix("rdmactl exporter: serving http://")
            .and_then(|s| s.strip_suffix("/metrics"))
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .parse()
            .unwrap();
        Exporter { child, addr }
    };
    let exporter = start(tmp.path());
    let (_, _, body) = exporter.get("/metrics");
    assert!(body.contains("\nrdmactl_devices 1\n"), "{body}");
    assert!(!body.contains("code=\"expect-device\""), "{body}");

    std::fs::remove_dir_all(tmp.path().join("class/infiniband/rxe0")).unwrap();
    let (_, _, gone) = exporter.get("/metrics");
    assert!(gone.contains("\nrdmactl_devices 0\n"), "{gone}");
    assert!(
        // The count and the [[device]] entry: two findings under one label set.
        gone.contains("rdmactl_finding{code=\"expect-device\",severity=\"fail\"} 2\n"),
        "{gone}"
    );
    assert!(
        !gone.contains("rdmactl_findings{severity=\"fail\"} 0\n"),
        "{gone}"
    );

    // A manifest that does not parse stops the exporter at its start, naming the file.
    std::fs::write(&manifest, "devices = \"two\"\n").unwrap();
    let out = rdmactl()
        .arg("--sysfs")
        .arg(tmp.path())
        .args(["exporter", "--textfile"])
        .arg(tmp.path())
        .arg("--expect")
        .arg(&manifest)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("expect.toml"), "{stderr}");
}

/// A driver counter whose own name says `counter` (planted here, as `tx_roce_counter`)
/// is exported under a name `promtool check metrics`' lint accepts, its HELP naming the file.
#[test]
#[ignore = "needs prometheus (promtool); scripts/test runs it"]
fn a_counter_named_counter_passes_promtool() {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(&root().join(FIXTURES).join("rxe-counters"), tmp.path());
    let file = tmp
        .path()
        .join("class/infiniband/rxe0/ports/1/hw_counters/tx_roce_counter");
    std::fs::write(file, "17\n").unwrap();
    let text = textfile(tmp.path());
    assert!(
        text.contains("rdmactl_hw_tx_roce_count_total{device=\"rxe0\",port=\"1\"} 17\n"),
        "{text}"
    );
    assert!(text.contains("hw_counters/tx_roce_counter"), "{text}");
    assert_eq!(promtool(&text), "", "{text}");
}

/// The series names docs/exporter.md's table lists (generated from src/render/metrics.rs,
/// checked equal by a unit test): exact names, and patterns as (head, tail) around `<name>`.
fn documented_series() -> Vec<(String, String)> {
    let doc = std::fs::read_to_string(root().join("docs/exporter.md")).unwrap();
    let start = doc
        .find("<!-- series: generated")
        .expect("the series table");
    let end = doc.find("<!-- end of series -->").expect("its end");
    doc[start..end]
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .map(|l| {
            let name = l.split(['{', '`']).next().unwrap();
            match name.split_once("<name>") {
                Some((head, tail)) => (head.to_string(), tail.to_string()),
                None => (name.to_string(), String::new()),
            }
        })
        .collect()
}

/// Every `rdmactl_…` identifier in `expr`.
fn series_named(expr: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = expr;
    while let Some(at) = rest.find("rdmactl_") {
        let word: String = rest[at..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        rest = &rest[at + word.len()..];
        out.push(word);
    }
    out
}

fn is_documented(name: &str, table: &[(String, String)]) -> bool {
    table.iter().any(|(head, tail)| {
        if tail.is_empty() && !head.ends_with('_') {
            name == head
        } else {
            name.len() > head.len() + tail.len() && name.starts_with(head) && name.ends_with(tail)
        }
    })
}

/// Every expression of the shipped rules and dashboard names only series the exporter's
/// table defines: a renamed series fails here, not silently in a site's Prometheus.
#[test]
fn shipped_rules_and_dashboard_name_only_exported_series() {
    let table = documented_series();
    assert!(is_documented("rdmactl_pma_link_downed_total", &table));
    assert!(!is_documented("rdmactl_port_stray", &table));
    let mut exprs: Vec<(String, String)> = Vec::new();
    for file in [
        "contrib/prometheus/rules.yml",
        "contrib/prometheus/node-infiniband.rules.yml",
    ] {
        let text = std::fs::read_to_string(root().join(file)).unwrap();
        for line in text.lines().filter(|l| l.trim_start().starts_with("expr:")) {
            exprs.push((file.to_string(), line.to_string()));
        }
    }
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("contrib/grafana/rdmactl.json")).unwrap(),
    )
    .expect("contrib/grafana/rdmactl.json parses");
    fn walk(v: &serde_json::Value, out: &mut Vec<(String, String)>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, v) in m {
                    match (k.as_str(), v) {
                        ("expr" | "definition", serde_json::Value::String(s)) => {
                            out.push(("contrib/grafana/rdmactl.json".into(), s.clone()))
                        }
                        _ => walk(v, out),
                    }
                }
            }
            serde_json::Value::Array(a) => a.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let before = exprs.len();
    walk(&json, &mut exprs);
    assert!(exprs.len() - before >= 12, "the dashboard's queries");
    let mut unknown = Vec::new();
    let mut named = 0;
    for (file, expr) in &exprs {
        for name in series_named(expr) {
            named += 1;
            if !is_documented(&name, &table) {
                unknown.push(format!("{file}: {name} in {expr}"));
            }
        }
    }
    assert!(named > 40, "{named} series named");
    assert!(unknown.is_empty(), "{}", unknown.join("\n"));
}

/// `promtool check rules` on the shipped rule files and `promtool test rules` on their
/// tests: a device count below the last day's fires RdmaDeviceGone, the manifest's
/// finding RdmaFinding, a stale textfile RdmactlStale; node_exporter's names are recorded.
#[test]
#[ignore = "needs prometheus (promtool); scripts/test runs it"]
fn shipped_rules_pass_promtool_check_and_their_unit_tests() {
    let dir = root().join("contrib/prometheus");
    for args in [
        vec!["check", "rules", "rules.yml", "node-infiniband.rules.yml"],
        vec![
            "test",
            "rules",
            "rules.test.yml",
            "node-infiniband.rules.test.yml",
        ],
    ] {
        let out = Command::new("promtool")
            .args(&args)
            .current_dir(&dir)
            .output()
            .unwrap_or_else(|e| {
                panic!("promtool: {e}; install Debian's prometheus package (scripts/setup does)")
            });
        assert!(
            out.status.success(),
            "promtool {}:\n{}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// `--no-collect hw,qos` leaves those groups out and keeps the rest; `--collect findings`
/// keeps the findings and the series always exported, no counter.
#[test]
fn collect_and_no_collect_pick_groups() {
    let run = |flags: &[&str]| {
        let dir = tempfile::tempdir().unwrap();
        let out = rdmactl()
            .arg("--sysfs")
            .arg(root().join(FIXTURES).join("qos-good"))
            .args(["exporter", "--textfile"])
            .arg(dir.path())
            .args(flags)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        std::fs::read_to_string(dir.path().join("rdmactl.prom")).unwrap()
    };
    let all = run(&[]);
    assert!(
        all.contains("\nrdmactl_hw_") && all.contains("\nrdmactl_qos_"),
        "{all}"
    );
    let lean = run(&["--no-collect", "hw,qos"]);
    assert!(
        !lean.contains("rdmactl_hw_") && !lean.contains("rdmactl_qos_"),
        "{lean}"
    );
    assert!(lean.contains("\nrdmactl_pma_") && lean.contains("\nrdmactl_port_state{"));
    let health = run(&["--collect", "findings"]);
    assert!(!health.contains("rdmactl_pma_") && !health.contains("rdmactl_port_info"));
    assert!(health.contains("\nrdmactl_findings{") && health.contains("\nrdmactl_port_state{"));
    let bad = rdmactl()
        .args(["exporter", "--collect", "counters"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2), "{bad:?}");
}
