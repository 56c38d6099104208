#![deny(unsafe_code)]

mod app;
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
