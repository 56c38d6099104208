use crate::app::Ctx;
use crate::cli::SelftestArgs;
use crate::error::{Error, Result};

pub fn run(ctx: &Ctx, args: &SelftestArgs) -> Result<u8> {
    if args.cm {
        return super::pingpong_cm::selftest_cm(ctx, args);
    }
    Err(Error::System("'selftest' is not implemented yet".into()))
}
