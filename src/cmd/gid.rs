use crate::cli::GidCommand;
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::exit;
use crate::gid::Gid;
use crate::output::print;
use crate::render::gid::{self, Decoded, Encoded};

pub fn run(ctx: &Ctx, args: &GidCommand) -> Result<u8> {
    let text = match args {
        GidCommand::Decode { gids } => {
            // Check every argument before printing anything, so a typo in the third GID
            // does not leave half a table behind.
            let rows = gids
                .iter()
                .map(|text| Gid::parse(text).map(|g| Decoded::new(text, g)))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| Error::Usage(e.to_string()))?;
            if ctx.json {
                gid::decode_json(&rows)
            } else {
                gid::decode_table(&rows, ctx.style)
            }
        }
        GidCommand::Encode { ips } => {
            let rows: Vec<Encoded> = ips.iter().map(|ip| Encoded::new(*ip)).collect();
            if ctx.json {
                gid::encode_json(&rows)
            } else {
                gid::encode_table(&rows, ctx.style)
            }
        }
    };
    print(&text)?;
    Ok(exit::OK)
}
