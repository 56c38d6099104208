//! One thin entry per subcommand: resolve the global context, then hand over.

use std::path::PathBuf;

use crate::cli::{Cli, Command};
use crate::cmd;
use crate::ctx::Ctx;
use crate::error::Error;
use crate::output::Style;

pub fn run(cli: Cli, sysfs_from_env: bool) -> anyhow::Result<u8> {
    refuse_sysfs(&cli, sysfs_from_env)?;
    // A captured /proc beside the live /sys would judge one host's limits against another's
    // devices: --procfs describes the host --sysfs does.
    if let (Some(dir), None) = (&cli.global.procfs, &cli.global.sysfs) {
        return Err(Error::Usage(format!(
            "--procfs {}: give the same host's captured sysfs with --sysfs (a sosreport's sys/)",
            dir.display()
        ))
        .into());
    }
    // A mistyped capture path must not read as a capture without limits.
    if let Some(dir) = cli.global.procfs.as_ref().filter(|d| !d.is_dir()) {
        return Err(Error::Usage(format!(
            "--procfs {}: not a directory (a captured /proc, such as a sosreport's proc/)",
            dir.display()
        ))
        .into());
    }
    let ctx = Ctx {
        json: cli.global.json,
        style: Style::resolve(cli.global.color),
        captured: cli.global.sysfs.is_some(),
        sysfs: cli.global.sysfs.unwrap_or_else(|| PathBuf::from("/sys")),
        procfs: cli.global.procfs,
    };
    let code = match cli.command {
        Command::Devices(args) => cmd::devices::run(&ctx, &args)?,
        Command::Ports(args) => cmd::ports::run(&ctx, &args)?,
        Command::Gids(args) => cmd::gids::run(&ctx, &args)?,
        Command::Gid(args) => cmd::gid::run(&ctx, &args)?,
        Command::Check(args) => cmd::check::run(&ctx, &args)?,
        Command::Pingpong(args) => cmd::pingpong::run(&ctx, &args)?,
        Command::Selftest(args) => cmd::selftest::run(&ctx, &args)?,
        Command::Doctor(args) => cmd::doctor::run(&ctx, &args)?,
        Command::Wait(args) => cmd::wait::run(&ctx, &args)?,
        Command::Counters(args) => cmd::counters::run(&ctx, &args)?,
        Command::Fabric(args) => cmd::fabric::run(&ctx, &args)?,
        Command::Subnet(args) => cmd::subnet::run(&ctx, &args)?,
        Command::Qos(args) => cmd::qos::run(&ctx, &args)?,
        Command::Exporter(args) => cmd::exporter::run(&ctx, &args)?,
        Command::Triage(args) => cmd::triage::run(&ctx, &args)?,
        Command::Res(args) => cmd::res::run(&ctx, &args)?,
        Command::Explain(args) => cmd::explain::run(&ctx, &args)?,
        Command::Generate(args) => crate::generate::run(&args)?,
    };
    Ok(code)
}

/// `pingpong` and `selftest` open this host's devices through libibverbs and move real
/// traffic; a captured tree describes another host, so mixing the two would choose GIDs
/// and explain failures from the wrong machine. They refuse it with a usage error instead
/// of quietly reading one and running on the other.
fn refuse_sysfs(cli: &Cli, from_env: bool) -> Result<(), Error> {
    let name = match cli.command {
        Command::Pingpong(_) => "pingpong",
        Command::Selftest(_) => "selftest",
        Command::Fabric(_) => "fabric",
        _ => return Ok(()),
    };
    let Some(dir) = &cli.global.sysfs else {
        return Ok(());
    };
    let given = if from_env {
        format!("RDMACTL_SYSFS={}", dir.display())
    } else {
        format!("--sysfs {}", dir.display())
    };
    Err(Error::Usage(format!(
        "{given}: {name} does not read a captured tree: it opens this host's devices through \
         libibverbs and sends real traffic{}",
        if from_env {
            "; unset RDMACTL_SYSFS to run it"
        } else {
            ""
        }
    )))
}
