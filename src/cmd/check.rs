use crate::app::Ctx;
use crate::cli::CheckArgs;
use crate::error::{Error, Result};

pub fn run(ctx: &Ctx, args: &CheckArgs) -> Result<u8> {
    if args.peer.is_some() {
        return super::pingpong_cm::check_peer(ctx, args);
    }
    Err(Error::System("'check' is not implemented yet".into()))
}
