use crate::app::Ctx;
use crate::cli::CheckArgs;
use crate::error::{Error, Result};

pub fn run(_ctx: &Ctx, _args: &CheckArgs) -> Result<u8> {
    Err(Error::System("'check' is not implemented yet".into()))
}
