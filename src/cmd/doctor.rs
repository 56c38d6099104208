//! `rdmactl doctor`: gather the host's facts (sysfs, /dev/infiniband, libibverbs,
//! providers, limits, namespaces) with `gather::doctor`, let `diagnose::doctor`'s rules
//! judge them (and `diagnose::expect` against `--expect`'s manifest), print with
//! `render::doctor`, or `render::health` for `--format nagios|nhc|junit`.

use crate::cli::{DoctorArgs, HealthFormat};
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::exit;
use crate::render::doctor::{self as render, DoctorReport};
use crate::render::health;

/// How long a health-check format waits for the host's facts: under NHC's 30 s default
/// timeout and Nagios' 60 s service check timeout, so they get rdmactl's answer.
const HEALTH_DEADLINE: std::time::Duration = std::time::Duration::from_secs(20);

pub fn run(ctx: &Ctx, args: &DoctorArgs) -> Result<u8> {
    if ctx.json && args.format != HealthFormat::Text {
        return Err(Error::Usage(format!(
            "-j and --format {}: give one",
            format!("{:?}", args.format).to_lowercase()
        )));
    }
    match (judge(ctx, args), args.format) {
        (Ok(done), _) => Ok(done),
        // A check that could not run is UNKNOWN to Nagios, and a failure to NHC and Slurm:
        // a node whose check is broken must not pass as healthy.
        (Err(e), HealthFormat::Nagios) => {
            crate::output::print(&health::nagios_unknown(&e.to_string()))?;
            Ok(exit::nagios::UNKNOWN)
        }
        (Err(e), HealthFormat::Nhc) => {
            crate::output::note(&format!("rdmactl: {e}\n"));
            crate::output::print(health::NOT_RUN)?;
            Ok(exit::FAILED)
        }
        // A CI gate reads the XML: the reason is an <error> testcase there, and on stderr.
        (Err(e), HealthFormat::Junit) => {
            crate::output::note(&format!("rdmactl: {e}\n"));
            crate::output::print(&health::junit_error(&e.to_string(), &junit_run(ctx)))?;
            Ok(e.exit_code())
        }
        (Err(e), _) => Err(e),
    }
}

fn judge(ctx: &Ctx, args: &DoctorArgs) -> Result<u8> {
    let manifest = args
        .expect
        .as_deref()
        .map(crate::gather::expect::read)
        .transpose()?;
    let device = args.filter.device.as_deref();
    let mut facts = match args.format {
        HealthFormat::Text => crate::gather::doctor::gather(ctx, device)?,
        // A health check answers within its deadline: a blocked read is UNKNOWN to Nagios
        // and a failure to NHC, never a check that its runner has to kill.
        _ => crate::gather::doctor::gather_within(ctx, device, HEALTH_DEADLINE)?,
    };
    let state_path = state_path(ctx, args);
    let now = unix_now();
    if let Some(path) = &state_path {
        facts.counter_state = Some(crate::gather::state::read_counter_state(path, now));
    }
    let mut findings = crate::diagnose::doctor::findings(&facts);
    if let (Some(path), Some(state)) = (&state_path, &facts.counter_state) {
        let read: Vec<_> = facts
            .ports
            .iter()
            .filter_map(|p| p.counters.as_ref())
            .collect();
        let record = crate::model::counter::CounterRecord::of(state.previous.as_ref(), &read, now);
        // Saving is not the check: a failure is one finding, and the run goes on.
        if let Err(e) = crate::output::replace_file(path, &crate::output::json(&record)) {
            findings.push(crate::diagnose::counters::state_not_saved(
                &path.display().to_string(),
                &crate::gather::state::io_error_text(&e),
                args.state.is_some(),
            ));
        }
    }
    if let Some(manifest) = &manifest {
        let modules = crate::gather::expect::modules(ctx, &manifest.modules);
        crate::diagnose::expect::judge(&facts, &modules, manifest, &mut findings);
    }
    if let Some(path) = &args.save_expect {
        let modules =
            crate::gather::expect::modules(ctx, &crate::diagnose::expect::known_modules());
        let manifest = crate::diagnose::expect::manifest_of(&facts, &modules);
        let json = crate::model::expect::is_json(&path.display().to_string(), "");
        let text = crate::render::expect::manifest(&manifest, json);
        crate::output::write_file(path, "--save-expect", &text)?;
        crate::output::note(&crate::render::expect::saved(
            &path.display().to_string(),
            &manifest,
        ));
    }
    let report = DoctorReport::from(findings);
    // No RDMA device is exit 4, as every other command says it (the findings say why).
    let no_devices = crate::diagnose::doctor::no_rdma_device(&report.findings);
    let code = if no_devices {
        exit::NO_RDMA
    } else if report.fail > 0 {
        exit::FAILED
    } else {
        exit::OK
    };
    let (text, code) = match args.format {
        HealthFormat::Text if ctx.json => (crate::output::json(&report), code),
        HealthFormat::Text => (render::text(&report, ctx.style), code),
        HealthFormat::Nagios => (
            health::nagios(&report, &facts),
            health::nagios_state(&report).1,
        ),
        // NHC drains on any non-zero status: no device is a failure like any other.
        HealthFormat::Nhc => (
            health::nhc(&report),
            if report.fail > 0 {
                exit::FAILED
            } else {
                exit::OK
            },
        ),
        HealthFormat::Junit => (health::junit(&report, &junit_run(ctx)), code),
    };
    if !text.is_empty() {
        crate::output::print(&text)?;
    }
    Ok(code)
}

/// The host and time a JUnit report names: this host's name, or a captured host's from its
/// --procfs (a capture without one names no host).
fn junit_run(ctx: &Ctx) -> health::JunitRun {
    let hostname = match (&ctx.procfs, ctx.captured) {
        (Some(root), _) => std::fs::read_to_string(root.join("sys/kernel/hostname"))
            .ok()
            .map(|h| h.trim().to_string())
            .filter(|h| !h.is_empty()),
        (None, false) => crate::gather::procfs::hostname(),
        (None, true) => None,
    };
    health::JunitRun {
        hostname,
        unix_secs: unix_now(),
    }
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// `--state FILE`; else, for a health-check format on a live host, one file per format under
/// `/var/lib/rdmactl`: a check that runs every few minutes judges what changed since its
/// previous run. None for a person's run, a captured tree (not this host's counters) and
/// `--no-state`.
fn state_path(ctx: &Ctx, args: &DoctorArgs) -> Option<std::path::PathBuf> {
    if args.no_state {
        return None;
    }
    if let Some(path) = &args.state {
        return Some(path.clone());
    }
    let format = match args.format {
        HealthFormat::Text => return None,
        HealthFormat::Nagios => "nagios",
        HealthFormat::Nhc => "nhc",
        HealthFormat::Junit => "junit",
    };
    (!ctx.captured).then(|| {
        std::path::Path::new(crate::gather::state::STATE_DIR).join(format!("doctor-{format}.json"))
    })
}
