use crate::app::Ctx;
use crate::cli::DevicesArgs;
use crate::error::{Error, Result};

pub fn run(_ctx: &Ctx, _args: &DevicesArgs) -> Result<u8> {
    Err(Error::System("'devices' is not implemented yet".into()))
}
