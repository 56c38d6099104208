use crate::app::Ctx;
use crate::cli::PingpongArgs;
use crate::error::{Error, Result};

pub fn run(_ctx: &Ctx, _args: &PingpongArgs) -> Result<u8> {
    Err(Error::System("'pingpong' is not implemented yet".into()))
}
