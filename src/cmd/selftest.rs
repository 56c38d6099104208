use crate::app::Ctx;
use crate::cli::SelftestArgs;
use crate::error::{Error, Result};

pub fn run(_ctx: &Ctx, _args: &SelftestArgs) -> Result<u8> {
    Err(Error::System("'selftest' is not implemented yet".into()))
}
