#![deny(unsafe_code)]

mod app;
mod ask;
mod cli;
mod cmd;
mod ctx;
mod diagnose;
mod error;
mod exit;
mod gather;
mod generate;
mod interrupt;
mod model;
mod output;
mod render;
mod serve;
mod traffic;
mod wire;

/// tests/json-schema.txt's checker, for the unit tests of reports that need a device.
#[cfg(test)]
#[path = "../tests/schema/mod.rs"]
mod json_schema;

use std::process::ExitCode;

use clap::parser::ValueSource;
use clap::{CommandFactory, FromArgMatches};

fn main() -> ExitCode {
    let matches = cli::Cli::command().get_matches();
    // A refusal of --sysfs names the environment variable when that is where it came from.
    let sysfs_from_env = matches.value_source("sysfs") == Some(ValueSource::EnvVariable);
    let cli = cli::Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    match app::run(cli, sysfs_from_env) {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            if is_broken_pipe(&err) {
                return ExitCode::SUCCESS;
            }
            let known = err.downcast_ref::<error::Error>();
            let code = known.map_or(exit::SYSTEM, error::Error::exit_code);
            match known {
                // The -j report already carries it; stderr stays quiet.
                Some(error::Error::Reported(_)) => {}
                Some(error::Error::Explained(report)) => eprint!("rdmactl: {}", explained(report)),
                Some(error::Error::Failure(failure)) => {
                    let facts = model::facts::Facts::default();
                    let report = model::diagnostic::FailureReport::new(
                        failure,
                        diagnose::explain(failure, &facts),
                    );
                    eprint!("rdmactl: {}", explained(&report));
                }
                // No device: what is loaded and what is plugged in decide the words, as
                // doctor's kernel finding words them.
                Some(error::Error::NoDevices { path }) => {
                    eprint!("rdmactl: {}", no_devices(path, true))
                }
                Some(error::Error::NoRdma { path }) => {
                    eprint!("rdmactl: {}", no_devices(path, false))
                }
                // Failed means the findings are already on stdout; repeat only the summary.
                _ => eprintln!("rdmactl: {err:#}"),
            }
            ExitCode::from(code)
        }
    }
}

/// The one-line summary, then why, seen and fix.
fn explained(report: &model::diagnostic::FailureReport) -> String {
    format!(
        "{}\n{}",
        report.message,
        render::diagnostic::body(&report.explanation, "")
    )
}

/// "no RDMA devices" with the RDMA modules loaded and the NICs present under the same
/// sysfs root (`PATH` is its `class/infiniband`), worded by doctor's rule.
fn no_devices(class_dir: &std::path::Path, core_loaded: bool) -> String {
    let root = class_dir
        .parent()
        .and_then(std::path::Path::parent)
        .unwrap_or(std::path::Path::new("/sys"));
    let captured = root != std::path::Path::new("/sys");
    let hint = gather::doctor::no_device_hint_at(root, captured, None);
    let d = diagnose::doctor::no_devices_explanation(
        &class_dir.display().to_string(),
        core_loaded,
        &hint,
    );
    // The message is the summary line; the body's own "why" would repeat it.
    let body = render::diagnostic::body(&d, "");
    let rest: String = body.lines().skip(1).map(|l| format!("{l}\n")).collect();
    format!("{}\n{rest}", d.message)
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
            || matches!(
                cause.downcast_ref::<error::Error>(),
                Some(error::Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::BrokenPipe
            )
    })
}
