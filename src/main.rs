#![deny(unsafe_code)]

mod app;
mod cli;
mod cmd;
mod cmexplain;
mod doctor;
mod error;
mod explain;
mod generate;
mod gid;
mod gidselect;
mod model;
mod net;
mod oob;
mod output;
mod render;
mod sysfs;
mod verbs;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match app::run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            if is_broken_pipe(&err) {
                return ExitCode::SUCCESS;
            }
            let code = err
                .downcast_ref::<error::Error>()
                .map_or(error::exit::SYSTEM, error::Error::exit_code);
            // Failed means the findings are already on stdout; repeat only the summary.
            eprintln!("rdmactl: {err:#}");
            ExitCode::from(code)
        }
    }
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
