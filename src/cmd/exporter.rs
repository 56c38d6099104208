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
use crate::model::exporter::StateWatch;
use crate::render::exporter as render;

/// How often the poller reads each port's state: a flap shorter than this can be missed,
/// which `link_downed` (a counter the hardware keeps) still shows.
const POLL: Duration = Duration::from_secs(1);

/// The textfile's name: node_exporter reads every `*.prom` of its directory.
const TEXTFILE: &str = "rdmactl.prom";

pub fn run(ctx: &Ctx, args: &ExporterArgs) -> Result<u8> {
    if let Some(dir) = &args.textfile {
        let facts = gather::scrape(ctx)?;
        let findings = crate::diagnose::doctor::findings(&facts.doctor);
        write_atomic(dir, &render::exposition(&facts, &findings))?;
        return Ok(exit::OK);
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
    endpoint.serve(|| {
        let start = Instant::now();
        let mut facts = gather::scrape(ctx)?;
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
        let findings = crate::diagnose::doctor::findings(&facts.doctor);
        let mut text = render::exposition(&facts, &findings);
        text.push_str(&render::scrape_duration(start.elapsed().as_secs_f64()));
        Ok(text)
    })?;
    Ok(exit::OK)
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
