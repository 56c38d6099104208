use crate::app::Ctx;
use crate::cli::GidsArgs;
use crate::error::{Error, Result};

pub fn run(_ctx: &Ctx, _args: &GidsArgs) -> Result<u8> {
    Err(Error::System("'gids' is not implemented yet".into()))
}
