use crate::app::Ctx;
use crate::cli::PingpongArgs;
use crate::error::{Error, Result};

pub fn run(ctx: &Ctx, args: &PingpongArgs) -> Result<u8> {
    if args.cm {
        return super::pingpong_cm::run(ctx, args);
    }
    Err(Error::System("'pingpong' is not implemented yet".into()))
}
