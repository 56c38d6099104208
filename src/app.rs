//! One thin entry per subcommand: resolve the global context, then hand over.

use std::path::PathBuf;

use crate::cli::{Cli, Command};
use crate::cmd;
use crate::ctx::Ctx;
use crate::output::Style;

pub fn run(cli: Cli) -> anyhow::Result<u8> {
    let ctx = Ctx {
        json: cli.global.json,
        style: Style::resolve(cli.global.color),
        captured: cli.global.sysfs.is_some(),
        sysfs: cli.global.sysfs.unwrap_or_else(|| PathBuf::from("/sys")),
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
        Command::Generate(args) => crate::generate::run(&args)?,
    };
    Ok(code)
}
