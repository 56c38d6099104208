//! One thin entry per subcommand: resolve the global context, then hand over.

use std::path::PathBuf;

use crate::cli::{Cli, Command};
use crate::cmd;
use crate::output::Style;

/// What every command needs to know about how it was invoked.
#[derive(Debug, Clone)]
pub struct Ctx {
    pub json: bool,
    pub style: Style,
    /// The sysfs root; `/sys` unless `--sysfs` points at a captured tree.
    pub sysfs: PathBuf,
    /// True when `--sysfs` was given: the tree is not this host's, so skip verbs.
    pub captured: bool,
}

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
