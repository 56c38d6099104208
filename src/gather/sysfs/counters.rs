//! `ports/N/counters/` and `ports/N/hw_counters/`: one pass, one read per file, no process
//! spawned. Classifying a counter (width, unit, group) is `crate::model::counter`'s; this file only
//! decides which files to read.

use std::io;
use std::path::Path;

use super::{list_dir, parse, read_driver, read_small, SysfsRoot};
use crate::error::{Error, Result};
use crate::model::counter::{Counter, CounterSource, Flavor, PortCounters};
use crate::model::device::ReadProblem;

/// In `hw_counters/` but not a counter: how long (ms) the kernel caches the values it
/// shows, a writable setting.
const NOT_COUNTERS: &[&str] = &["lifespan"];

impl SysfsRoot {
    /// Every counter of one port. A port without `counters/` (Soft-RoCE has no PMA) or
    /// without `hw_counters/` is not an error: `has_counters_dir` says which exist.
    pub fn port_counters(&self, device: &str, port: u32) -> Result<PortCounters> {
        self.check_port(device, port)?;
        Ok(self.read_counters(device, port))
    }

    /// `port_counters` of a port known to exist: a whole-host pass checks each name once.
    fn read_counters(&self, device: &str, port: u32) -> PortCounters {
        let mut problems = Vec::new();
        let driver = read_driver(&self.device_dir(device), &mut problems);
        let soft_roce = super::soft_roce_in(&self.device_dir(device), device);
        read_port_counters(
            &self.port_dir(device, port),
            device,
            soft_roce,
            port,
            driver.as_deref(),
            problems,
        )
    }

    /// The counters of the selected ports (`DEV[/PORT]`, or every port of every device),
    /// in device and port order. Errors as `select`'s: `NoRdma`, `NoDevices`,
    /// `NoSuchDevice`, `NoSuchPort`.
    pub fn counters(&self, device: Option<&str>, port: Option<u32>) -> Result<Vec<PortCounters>> {
        let names = match device {
            Some(name) => {
                self.check_device(name)?;
                vec![name.to_string()]
            }
            None => self.device_names()?,
        };
        if names.is_empty() {
            return Err(Error::NoDevices {
                path: self.class_infiniband(),
            });
        }
        let mut out = Vec::new();
        let mut available = Vec::new();
        for name in &names {
            let ports = self.list_ports(name);
            available.extend(ports.iter().copied());
            for p in ports
                .into_iter()
                .filter(|p| port.map_or(true, |want| want == *p))
            {
                out.push(self.read_counters(name, p));
            }
        }
        if out.is_empty() {
            if let Some(port) = port {
                available.sort_unstable();
                available.dedup();
                return Err(Error::NoSuchPort {
                    device: device.unwrap_or("any device").to_string(),
                    port,
                    available: available.iter().map(u32::to_string).collect(),
                });
            }
        }
        Ok(out)
    }
}

fn read_port_counters(
    port_dir: &Path,
    device: &str,
    soft_roce: bool,
    port: u32,
    driver: Option<&str>,
    mut problems: Vec<ReadProblem>,
) -> PortCounters {
    let pma = read_dir_values(&port_dir.join("counters"), &mut problems);
    let hw = read_dir_values(&port_dir.join("hw_counters"), &mut problems);
    let hw_names: Vec<String> = hw.iter().flatten().map(|(n, _)| n.clone()).collect();
    let flavor = Flavor::of(device, driver, soft_roce, &hw_names);
    // The kernel shows the 64-bit PortCountersExtended data counters when the HCA has
    // them; the unicast/multicast files come only with that set, and a value past 32 bits
    // can only come from it. Otherwise the 32-bit PortCounters set is assumed, so a
    // value at 2^32-1 reads as saturated rather than as a count.
    let extended = pma.as_ref().is_some_and(|v| {
        v.iter().any(|(n, value)| {
            n == "unicast_xmit_packets"
                || (matches!(
                    n.as_str(),
                    "port_xmit_data" | "port_rcv_data" | "port_xmit_packets" | "port_rcv_packets"
                ) && *value > u64::from(u32::MAX))
        })
    });
    let mut counters = Vec::new();
    for (source, values) in [
        (CounterSource::Counters, &pma),
        (CounterSource::HwCounters, &hw),
    ] {
        for (name, value) in values.iter().flatten() {
            counters.push(Counter::new(name, source, flavor, *value, extended));
        }
    }
    PortCounters {
        device: device.to_string(),
        port,
        flavor,
        has_counters_dir: pma.is_some(),
        has_hw_counters_dir: hw.is_some(),
        counters,
        problems,
    }
}

/// What kernels before 5.14 print in every `counters/` file of a device without a PMA
/// (rxe, siw): the directory is there, the counters are not.
pub const NO_PMA: &str = "N/A (no PMA)";

/// (name, value) of every counter file in `dir`, by name; None when `dir` does not exist,
/// or when every file in it reads "N/A (no PMA)" (the kernel's own word that the port has
/// no PMA, the same fact as a missing directory on newer kernels). A file that cannot be
/// read or holds no number is a `ReadProblem`, not a zero.
fn read_dir_values(dir: &Path, problems: &mut Vec<ReadProblem>) -> Option<Vec<(String, u64)>> {
    let mut names = match list_dir(dir) {
        Ok(n) => n,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return None,
        Err(e) => {
            problems.push(ReadProblem {
                path: dir.to_path_buf(),
                error: e.to_string(),
            });
            return None;
        }
    };
    names.retain(|n| !NOT_COUNTERS.contains(&n.as_str()));
    names.sort_by(|a, b| parse::natural_cmp(a, b));
    let mut buf = String::with_capacity(32);
    let mut path = dir.to_path_buf();
    let mut out = Vec::with_capacity(names.len());
    let mut no_pma = Vec::new();
    let files = names.len();
    for name in names {
        path.push(&name);
        match read_small(&path, &mut buf) {
            Ok(text) => match text.trim().parse::<u64>() {
                Ok(v) => out.push((name, v)),
                Err(_) if text.trim() == NO_PMA => no_pma.push(ReadProblem {
                    path: path.clone(),
                    error: format!("not a counter value: {NO_PMA:?}"),
                }),
                Err(_) => problems.push(ReadProblem {
                    path: path.clone(),
                    error: format!("not a counter value: {:?}", text.trim()),
                }),
            },
            Err(e) => problems.push(ReadProblem {
                path: path.clone(),
                error: e.to_string(),
            }),
        }
        path.pop();
    }
    if files > 0 && no_pma.len() == files {
        return None;
    }
    // Some files answered and some said "no PMA": the odd ones are worth a word.
    problems.extend(no_pma);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::counter::{Change, Group};
    use std::fs;

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    /// Kernels before 5.14 show counters/ for a device without a PMA (siw, rxe), every
    /// file reading "N/A (no PMA)": the same fact as no directory, said once, not as a
    /// warning per file.
    #[test]
    fn a_counters_dir_that_reads_no_pma_is_no_pma() {
        let t = tempfile::tempdir().unwrap();
        let p = "class/infiniband/siw0/ports/1";
        write(t.path(), &format!("{p}/state"), "4: ACTIVE\n");
        for name in ["port_rcv_data", "port_xmit_data", "symbol_error"] {
            write(t.path(), &format!("{p}/counters/{name}"), "N/A (no PMA)\n");
        }
        let c = SysfsRoot::new(t.path()).port_counters("siw0", 1).unwrap();
        assert!(!c.has_counters_dir && !c.has_hw_counters_dir);
        assert!(
            c.counters.is_empty() && c.problems.is_empty(),
            "{:?}",
            c.problems
        );
        // One file with a number: the others are odd, and said.
        write(t.path(), &format!("{p}/counters/symbol_error"), "0\n");
        let c = SysfsRoot::new(t.path()).port_counters("siw0", 1).unwrap();
        assert!(c.has_counters_dir);
        assert_eq!(c.counters.len(), 1);
        assert_eq!(c.problems.len(), 2, "{:?}", c.problems);
    }

    #[test]
    fn soft_roce_has_hw_counters_and_no_counters_dir() {
        let t = tempfile::tempdir().unwrap();
        let p = "class/infiniband/rxe0/ports/1";
        write(t.path(), &format!("{p}/state"), "4: ACTIVE\n");
        write(t.path(), &format!("{p}/hw_counters/sent_pkts"), "12\n");
        write(t.path(), &format!("{p}/hw_counters/lifespan"), "10\n");
        write(t.path(), &format!("{p}/hw_counters/new_one"), "3\n");
        write(
            t.path(),
            &format!("{p}/hw_counters/broken"),
            "N/A (no PMA)\n",
        );
        let c = SysfsRoot::new(t.path()).port_counters("rxe0", 1).unwrap();
        assert!(!c.has_counters_dir && c.has_hw_counters_dir);
        assert_eq!(c.flavor, Flavor::Rxe);
        let names: Vec<&str> = c.counters.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["new_one", "sent_pkts"]);
        assert_eq!(c.counters[0].group, Group::Other);
        assert_eq!(c.problems.len(), 1, "{:?}", c.problems);
        assert!(c.problems[0].path.ends_with("broken"));
    }

    #[test]
    fn rereading_a_changed_tree_gives_wrap_aware_deltas() {
        let t = tempfile::tempdir().unwrap();
        let p = "class/infiniband/mlx5_0/ports/1";
        write(t.path(), &format!("{p}/state"), "4: ACTIVE\n");
        write(t.path(), &format!("{p}/counters/symbol_error"), "65530\n");
        write(t.path(), &format!("{p}/counters/port_rcv_data"), "100\n");
        write(
            t.path(),
            &format!("{p}/hw_counters/out_of_sequence"),
            "4294967290\n",
        );
        let sysfs = SysfsRoot::new(t.path());
        let before = sysfs.counters(None, None).unwrap();
        write(t.path(), &format!("{p}/counters/symbol_error"), "65535\n");
        write(t.path(), &format!("{p}/counters/port_rcv_data"), "150\n");
        write(t.path(), &format!("{p}/hw_counters/out_of_sequence"), "5\n");
        let after = sysfs.counters(Some("mlx5_0"), Some(1)).unwrap();
        let d = crate::model::counter::port_delta(&before[0], &after[0], 0.2);
        assert_eq!(
            d.get("out_of_sequence").unwrap().change,
            Change::Counted {
                delta: 11,
                wrapped: true
            }
        );
        assert_eq!(
            d.get("symbol_error").unwrap().change,
            Change::Saturated { at_least: 5 }
        );
        assert_eq!(d.at_least("port_rcv_data"), 50);
        assert!(matches!(
            sysfs.counters(Some("mlx5_0"), Some(2)),
            Err(Error::NoSuchPort { .. })
        ));
    }
}
