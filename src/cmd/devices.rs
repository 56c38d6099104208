use crate::app::Ctx;
use crate::cli::DevicesArgs;
use crate::cmd::devinfo;
use crate::error::{Error, Result};

pub fn run(ctx: &Ctx, args: &DevicesArgs) -> Result<u8> {
    if args.verbose {
        return devinfo::run_verbose(ctx, args.device.as_deref());
    }
    Err(Error::System("'devices' is not implemented yet".into()))
}
