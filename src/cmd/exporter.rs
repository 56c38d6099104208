//! `rdmactl exporter`: Prometheus series of every port, counter and doctor finding.
//! `--textfile DIR` gathers once and writes `DIR/rdmactl.prom` for node_exporter's textfile
//! collector; `--listen ADDR` serves `/metrics`, gathering on each scrape, while a poller
//! counts port state changes between scrapes.

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::cli::ExporterArgs;
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::exit;
use crate::gather::exporter as gather;
use crate::model::diagnostic::Diagnostic;
use crate::model::expect::Manifest;
use crate::model::exporter::{ScrapeFacts, ScrapeProblem, StateWatch};
use crate::render::exporter as render;

/// How often the poller reads each port's state: a flap shorter than this can be missed,
/// which `link_downed` (a counter the hardware keeps) still shows.
const POLL: Duration = Duration::from_secs(1);

/// The textfile's name: node_exporter reads every `*.prom` of its directory.
const TEXTFILE: &str = "rdmactl.prom";

pub fn run(ctx: &Ctx, args: &ExporterArgs) -> Result<u8> {
    let limit = Duration::from_secs_f64(args.scrape_timeout);
    // Read once: a manifest that does not parse stops the exporter at its start, where the
    // error is seen, not at every scrape.
    let manifest = args
        .expect
        .as_deref()
        .map(crate::gather::expect::read)
        .transpose()?;
    let manifest = manifest.as_ref();
    let modules = manifest.map(|m| m.modules.clone()).unwrap_or_default();
    let collect = crate::render::metrics::Collect {
        only: args.collect.clone(),
        not: args.no_collect.clone(),
    };
    if let Some(dir) = &args.textfile {
        return textfile(ctx, dir, limit, manifest, &collect);
    }
    let endpoint = crate::serve::MetricsEndpoint::bind(&args.listen)?;
    let shown = endpoint
        .local_addr()
        .map_or_else(|| args.listen.clone(), |a| a.to_string());
    crate::output::note(&format!(
        "rdmactl exporter: serving http://{shown}/metrics\n"
    ));
    let watch = Arc::new(Mutex::new(StateWatch::default()));
    lock(&watch).observe(gather::port_states(ctx));
    {
        let (watch, ctx) = (Arc::clone(&watch), ctx.clone());
        std::thread::spawn(move || loop {
            std::thread::sleep(POLL);
            let states = gather::port_states(&ctx);
            lock(&watch).observe(states);
        });
    }
    let succeeded: Mutex<Option<f64>> = Mutex::new(None);
    endpoint.serve(|| {
        let start = Instant::now();
        let mut text = match gather::scrape_within(ctx, limit, &modules)? {
            Ok(mut facts) => {
                let states = facts
                    .doctor
                    .devices
                    .iter()
                    .flat_map(|d| &d.ports)
                    .map(|p| (p.device.clone(), p.number, p.state.clone()));
                let mut w = lock(&watch);
                w.observe(states.collect::<Vec<_>>());
                facts.state_changes = Some(w.changes());
                drop(w);
                *succeeded.lock().unwrap_or_else(|e| e.into_inner()) = Some(now());
                let findings = judge(&facts, manifest);
                render::exposition(&facts, &findings, &collect)
            }
            Err(late) => render::unread(&late.stuck),
        };
        text.push_str(&render::scrape_duration(start.elapsed().as_secs_f64()));
        if let Some(t) = *succeeded.lock().unwrap_or_else(|e| e.into_inner()) {
            text.push_str(&render::last_success(t));
        }
        Ok(text)
    })?;
    Ok(exit::OK)
}

/// `--textfile DIR`: one scrape written whole. A run that cannot read is written too (its
/// scrape errors and the previous run's success time), so node_exporter never goes on
/// serving the last good file as if it were fresh; the run then fails.
fn textfile(
    ctx: &Ctx,
    dir: &Path,
    limit: Duration,
    manifest: Option<&Manifest>,
    collect: &crate::render::metrics::Collect,
) -> Result<u8> {
    let target = dir.join(TEXTFILE);
    let modules = manifest.map(|m| m.modules.clone()).unwrap_or_default();
    let (text, failed) = match gather::scrape_within(ctx, limit, &modules) {
        Ok(Ok(facts)) => {
            let findings = judge(&facts, manifest);
            let mut text = render::exposition(&facts, &findings, collect);
            text.push_str(&render::last_success(now()));
            (text, None)
        }
        Ok(Err(late)) => {
            let paths = late.stuck.iter().filter_map(|p| p.path.clone()).collect();
            let e = Error::Overdue {
                paths,
                secs: late.limit_secs,
            };
            (render::unread(&late.stuck), Some(e))
        }
        Err(e) => {
            let whole = ScrapeProblem {
                path: None,
                error: e.to_string(),
            };
            (render::unread(&[whole]), Some(e))
        }
    };
    let Some(e) = failed else {
        write_atomic(dir, &text)?;
        return Ok(exit::OK);
    };
    let mut text = text;
    if let Some(t) = gather::previous_sample(&target, crate::render::metrics::LAST_SUCCESS.name) {
        text.push_str(&render::last_success(t));
    }
    write_atomic(dir, &text)?;
    Err(e)
}

/// Doctor's findings on one scrape, and with `--expect` the manifest's, judged as
/// `doctor --expect` judges them.
fn judge(facts: &ScrapeFacts, manifest: Option<&Manifest>) -> Vec<Diagnostic> {
    let mut findings = crate::diagnose::exporter::findings(&facts.doctor);
    if let Some(manifest) = manifest {
        crate::diagnose::expect::judge(&facts.doctor, &facts.modules, manifest, &mut findings);
    }
    findings
}

/// Now as Unix seconds: what the last-success series holds.
fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The watch survives a panic in the poller: its counts are plain numbers, never half-set.
fn lock(watch: &Mutex<StateWatch>) -> std::sync::MutexGuard<'_, StateWatch> {
    watch.lock().unwrap_or_else(|e| e.into_inner())
}

/// Writes `DIR/rdmactl.prom` whole or not at all: a temporary file in the same directory,
/// renamed over the old one, so node_exporter never reads half a file.
fn write_atomic(dir: &Path, text: &str) -> Result<()> {
    let target = dir.join(TEXTFILE);
    let tmp = dir.join(format!(".{TEXTFILE}.{}.tmp", std::process::id()));
    let fail = |path: &Path, error| Error::Write {
        path: path.to_path_buf(),
        flag: "--textfile",
        error,
    };
    let written = std::fs::File::create(&tmp).and_then(|mut f| {
        f.write_all(text.as_bytes())?;
        f.sync_all()
    });
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(fail(&tmp, e));
    }
    std::fs::rename(&tmp, &target).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        fail(&target, e)
    })
}
