use crate::app::Ctx;
use crate::cli::DoctorArgs;
use crate::error::{Error, Result};

pub fn run(_ctx: &Ctx, _args: &DoctorArgs) -> Result<u8> {
    Err(Error::System("'doctor' is not implemented yet".into()))
}
