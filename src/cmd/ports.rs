use crate::app::Ctx;
use crate::cli::PortsArgs;
use crate::error::{Error, Result};

pub fn run(_ctx: &Ctx, _args: &PortsArgs) -> Result<u8> {
    Err(Error::System("'ports' is not implemented yet".into()))
}
