//! What one scrape of `rdmactl exporter` reads: doctor's facts (the same gatherer, so the
//! exported findings are doctor's), with a device that fails the whole read retried alone
//! so one bad device never blanks the others; and the port states the poller watches.

use crate::ctx::Ctx;
use crate::error::Result;
use crate::gather::sysfs::{SysfsRoot, NO_PMA};
use crate::model::device::ReadProblem;
use crate::model::doctor::DoctorFacts;
use crate::model::exporter::{Overdue, ScrapeFacts, ScrapeProblem};

/// One scrape. An error is what leaves nothing to export (class/infiniband unreadable);
/// a device that cannot be read is a `DeviceScrape` error and the others are still read.
pub fn scrape(ctx: &Ctx) -> Result<ScrapeFacts> {
    let mut facts = ScrapeFacts::default();
    facts.doctor = match crate::gather::doctor::gather(ctx, None) {
        Ok(d) => d,
        Err(whole) => {
            // Something of one device failed the whole read: read them one at a time.
            let names = SysfsRoot::new(&ctx.sysfs).device_names()?;
            let mut merged: Option<DoctorFacts> = None;
            for name in names {
                match crate::gather::doctor::gather(ctx, Some(&name)) {
                    Ok(one) => merge(&mut merged, one),
                    Err(e) => {
                        let entry = facts.devices.entry(name).or_default();
                        entry.errors.push(ScrapeProblem {
                            path: None,
                            error: e.to_string(),
                        });
                    }
                }
            }
            match merged {
                Some(m) => m,
                // No device could be read alone either: the whole read's error is the news.
                None if facts.devices.is_empty() => return Err(whole),
                None => DoctorFacts {
                    class_dir: ctx.sysfs.join("class/infiniband").display().to_string(),
                    ..DoctorFacts::default()
                },
            }
        }
    };
    for device in &facts.doctor.devices {
        let entry = facts.devices.entry(device.name.clone()).or_default();
        let mut problems: Vec<&ReadProblem> = device.read_problems.iter().collect();
        problems.extend(device.ports.iter().flat_map(|p| &p.read_problems));
        for counters in facts
            .doctor
            .ports
            .iter()
            .filter_map(|x| x.counters.as_ref())
            .filter(|c| c.device == device.name)
        {
            for p in &counters.problems {
                if p.error.contains(NO_PMA) {
                    *entry.no_pma.entry(counters.port).or_insert(0) += 1;
                } else {
                    problems.push(p);
                }
            }
        }
        entry
            .errors
            .extend(problems.into_iter().map(|p| ScrapeProblem {
                path: Some(relative(&ctx.sysfs, &p.path)),
                error: p.error.clone(),
            }));
    }
    Ok(facts)
}

/// One scrape with a deadline: a read that blocks (a stuck driver's show()) costs `limit`,
/// and the reads still in progress are the answer.
/// `modules`: the kernel modules an `--expect` manifest names, looked up too (none without
/// one).
pub fn scrape_within(
    ctx: &Ctx,
    limit: std::time::Duration,
    modules: &[String],
) -> Result<std::result::Result<ScrapeFacts, Overdue>> {
    let (worker_ctx, modules) = (ctx.clone(), modules.to_vec());
    let work = move || {
        let mut facts = scrape(&worker_ctx)?;
        if !modules.is_empty() {
            facts.modules = crate::gather::expect::modules(&worker_ctx, &modules);
        }
        Ok(facts)
    };
    match crate::gather::deadline::within(limit, work) {
        Ok(done) => done.map(Ok),
        Err(late) => Ok(Err(Overdue {
            stuck: late
                .paths
                .iter()
                .map(|p| ScrapeProblem {
                    path: Some(relative(&ctx.sysfs, p)),
                    error: if late.not_started {
                        "an earlier read of it is still blocked".to_string()
                    } else {
                        format!("no answer within {} s", late.limit.as_secs_f64())
                    },
                })
                .collect(),
            limit_secs: limit.as_secs_f64(),
        })),
    }
}

/// `path` under the sysfs root without the root (the same on every host and fixture),
/// or whole when it lies elsewhere.
fn relative(root: &std::path::Path, path: &std::path::Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// The unlabelled sample `name` of a previous `--textfile` run's `file` (its success time,
/// to be written again by a run that failed, so its age keeps growing); None when absent.
pub fn previous_sample(file: &std::path::Path, name: &str) -> Option<f64> {
    let text = std::fs::read_to_string(file).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

/// Every port's state, by name: what the poller compares between looks.
pub fn port_states(ctx: &Ctx) -> Vec<(String, u32, Option<crate::model::device::PortState>)> {
    SysfsRoot::new(&ctx.sysfs).port_states()
}

/// Adds one device's doctor facts to those of the devices read before it.
fn merge(into: &mut Option<DoctorFacts>, one: DoctorFacts) {
    let Some(all) = into else {
        *into = Some(one);
        return;
    };
    // `listed` is every device sysfs lists, the same in each one-device read.
    all.devices.extend(one.devices);
    all.ports.extend(one.ports);
    match (&mut all.host, one.host) {
        (Some(host), Some(more)) => {
            host.node_access.extend(more.node_access);
            host.provider_files.extend(more.provider_files);
            host.roce_netdevs.extend(more.roce_netdevs);
        }
        (host @ None, more) => *host = more,
        (Some(_), None) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::path::Path;

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    /// A counters/ file that reads "N/A (no PMA)" among ones with numbers is skipped and
    /// counted, not a scrape error; a file that cannot be read at all is one, of its
    /// device alone.
    #[test]
    fn no_pma_files_are_counted_and_unreadable_ones_are_errors() {
        let t = tempfile::tempdir().unwrap();
        for dev in ["mlx5_0", "mlx5_1"] {
            let p = format!("class/infiniband/{dev}/ports/1");
            write(t.path(), &format!("{p}/state"), "4: ACTIVE\n");
            write(t.path(), &format!("{p}/counters/symbol_error"), "0\n");
            write(
                t.path(),
                &format!("{p}/counters/port_xmit_wait"),
                "N/A (no PMA)\n",
            );
        }
        fs::create_dir_all(
            t.path()
                .join("class/infiniband/mlx5_1/ports/1/counters/link_downed"),
        )
        .unwrap();
        let ctx = Ctx {
            sysfs: t.path().to_path_buf(),
            ..Ctx::fixture("no-devices")
        };
        let facts = scrape(&ctx).unwrap();
        let good = &facts.devices["mlx5_0"];
        assert!(good.errors.is_empty(), "{:?}", good.errors);
        assert_eq!(good.no_pma.get(&1), Some(&1));
        let bad = &facts.devices["mlx5_1"];
        assert_eq!(bad.errors.len(), 1, "{:?}", bad.errors);
        assert_eq!(
            bad.errors[0].path.as_deref(),
            Some("class/infiniband/mlx5_1/ports/1/counters/link_downed"),
            "{:?}",
            bad.errors
        );
        assert_eq!(bad.errors[0].device(), Some("mlx5_1"));
    }
}
