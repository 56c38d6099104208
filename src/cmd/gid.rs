use crate::app::Ctx;
use crate::cli::GidCommand;
use crate::error::{Error, Result};

pub fn run(_ctx: &Ctx, _args: &GidCommand) -> Result<u8> {
    Err(Error::System("'gid' is not implemented yet".into()))
}
