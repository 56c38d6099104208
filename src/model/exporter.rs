//! What one scrape of `rdmactl exporter` knows: doctor's facts (devices, ports, GID tables,
//! counters, and on a live host its limits), the devices that could not be read, the
//! counter files that said "N/A (no PMA)", and the port state changes counted since the
//! exporter started. `gather::exporter` fills it; `render::exporter` writes the series.

use std::collections::BTreeMap;

use crate::model::device::PortState;
use crate::model::doctor::DoctorFacts;
use crate::model::expect::ModulesSeen;

/// Everything one scrape exports.
#[derive(Debug, Clone, Default)]
pub struct ScrapeFacts {
    pub doctor: DoctorFacts,
    /// Every device sysfs lists, by name: whether something of it could not be read.
    pub devices: BTreeMap<String, DeviceScrape>,
    /// (device, port) → state changes seen since the exporter started; None for a one-shot
    /// run (`--textfile`), which has nothing to compare with.
    pub state_changes: Option<BTreeMap<(String, u32), u64>>,
    /// The manifest's kernel modules as seen loaded (`--expect`); default without one.
    pub modules: ModulesSeen,
}

/// What went wrong reading one device; empty when nothing did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeviceScrape {
    /// A read that failed the whole device (its facts are missing), or files of it that
    /// could not be read (its facts are partial).
    pub errors: Vec<ScrapeProblem>,
    /// (port, counter files) that read "N/A (no PMA)": skipped, not errors, but counted so
    /// a dashboard can tell "no such counter" from "counter not exported".
    pub no_pma: BTreeMap<u32, u64>,
}

/// One thing a scrape could not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScrapeProblem {
    /// The file, relative to the sysfs root (`class/infiniband/mlx5_0/ports/1/state`), or
    /// absolute when it lies outside it; None when the error names no one file.
    pub path: Option<String>,
    pub error: String,
}

/// A scrape whose reads had not returned by its deadline: what was still being read. The
/// scrape answers with these alone; stale or half-read series would pass for healthy ones.
#[derive(Debug, Clone, PartialEq)]
pub struct Overdue {
    /// The reads in progress, as `ScrapeProblem`s with their paths (none when the gather
    /// was inside a netlink or verbs query, not a file).
    pub stuck: Vec<ScrapeProblem>,
    pub limit_secs: f64,
}

impl ScrapeProblem {
    /// The device a path under `class/infiniband/DEV/` belongs to.
    pub fn device(&self) -> Option<&str> {
        let rest = self.path.as_deref()?.strip_prefix("class/infiniband/")?;
        rest.split('/').next().filter(|d| !d.is_empty())
    }
}

/// Port states as a poller sees them, and how often each changed since the first look.
/// A state that cannot be read (`None`) is a state too: a port that vanishes with its
/// device and comes back is two changes.
#[derive(Debug, Clone, Default)]
pub struct StateWatch {
    last: BTreeMap<(String, u32), Option<PortState>>,
    changes: BTreeMap<(String, u32), u64>,
}

impl StateWatch {
    /// One look at every port: (device, port, state name). A port seen for the first time
    /// starts at zero changes; ports not in `states` keep their count and are compared as
    /// unreadable the next time they appear.
    pub fn observe(&mut self, states: impl IntoIterator<Item = (String, u32, Option<PortState>)>) {
        let mut seen = Vec::new();
        for (device, port, state) in states {
            let key = (device, port);
            self.changes.entry(key.clone()).or_insert(0);
            match self.last.get(&key) {
                Some(before) if *before != state => {
                    *self.changes.get_mut(&key).expect("inserted above") += 1;
                }
                _ => {}
            }
            seen.push(key.clone());
            self.last.insert(key, state);
        }
        // A port that disappeared (its device removed) changed state: to "not there".
        for (key, state) in self.last.iter_mut() {
            if !seen.contains(key) && state.is_some() {
                *state = None;
                *self.changes.entry(key.clone()).or_insert(0) += 1;
            }
        }
    }

    /// (device, port) → changes since the first look.
    pub fn changes(&self) -> BTreeMap<(String, u32), u64> {
        self.changes.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn look(w: &mut StateWatch, states: &[(&str, u32, Option<PortState>)]) {
        w.observe(
            states
                .iter()
                .map(|(d, p, s)| (d.to_string(), *p, s.clone())),
        );
    }

    #[test]
    fn counts_each_transition_once_and_a_vanished_port_as_one() {
        let mut w = StateWatch::default();
        look(
            &mut w,
            &[
                ("rxe0", 1, Some(PortState::Active)),
                ("rxe1", 1, Some(PortState::Active)),
            ],
        );
        look(
            &mut w,
            &[
                ("rxe0", 1, Some(PortState::Active)),
                ("rxe1", 1, Some(PortState::Active)),
            ],
        );
        assert_eq!(w.changes()[&("rxe0".to_string(), 1)], 0);
        look(
            &mut w,
            &[
                ("rxe0", 1, Some(PortState::Down)),
                ("rxe1", 1, Some(PortState::Active)),
            ],
        );
        look(
            &mut w,
            &[
                ("rxe0", 1, Some(PortState::Down)),
                ("rxe1", 1, Some(PortState::Active)),
            ],
        );
        look(
            &mut w,
            &[
                ("rxe0", 1, Some(PortState::Active)),
                ("rxe1", 1, Some(PortState::Active)),
            ],
        );
        assert_eq!(w.changes()[&("rxe0".to_string(), 1)], 2);
        assert_eq!(w.changes()[&("rxe1".to_string(), 1)], 0);
        // rxe1 removed, then added back: gone is one change, back another.
        look(&mut w, &[("rxe0", 1, Some(PortState::Active))]);
        look(&mut w, &[("rxe0", 1, Some(PortState::Active))]);
        assert_eq!(w.changes()[&("rxe1".to_string(), 1)], 1);
        look(
            &mut w,
            &[
                ("rxe0", 1, Some(PortState::Active)),
                ("rxe1", 1, Some(PortState::Active)),
            ],
        );
        assert_eq!(w.changes()[&("rxe1".to_string(), 1)], 2);
    }
}
