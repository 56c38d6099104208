use crate::cli::GidCommand;
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::exit;
use crate::model::gid::Gid;
use crate::output::print;
use crate::render::gid::{self, Decoded, Encoded};

pub fn run(ctx: &Ctx, args: &GidCommand) -> Result<u8> {
    let text = match args {
        GidCommand::Decode { gids } => {
            // Check every argument before printing anything, so a typo in the third GID
            // does not leave half a table behind.
            let rows = gids
                .iter()
                .map(|text| {
                    Gid::parse(text)
                        .map(|g| Decoded::new(text, g))
                        .map_err(|e| Error::Usage(with_encode_hint(text, e.to_string())))
                })
                .collect::<Result<Vec<_>>>()?;
            if ctx.json {
                gid::decode_json(&rows)
            } else {
                gid::decode_table(&rows, ctx.style)
            }
        }
        GidCommand::Encode { ips } => {
            let rows: Vec<Encoded> = ips.iter().map(|ip| Encoded::new(ip.0)).collect();
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

/// An IP address given to `decode` (`10.0.0.1`, or `fe80::1/64` from `ip addr`) wants
/// `encode`: say so after the accepted forms.
fn with_encode_hint(text: &str, message: String) -> String {
    match text.parse::<crate::cli::IpArg>() {
        Ok(ip) => format!(
            "{message}; '{}' is an IP address: `rdmactl gid encode {}` gives its GID",
            text.trim(),
            ip.0
        ),
        Err(_) => message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ip_address_to_decode_suggests_encode() {
        let hint = |t: &str| with_encode_hint(t, "not a GID".into());
        assert_eq!(
            hint("10.0.0.1"),
            "not a GID; '10.0.0.1' is an IP address: `rdmactl gid encode 10.0.0.1` gives its GID"
        );
        assert!(hint("fe80::1/64").contains("`rdmactl gid encode fe80::1`"));
        assert_eq!(hint("hello"), "not a GID");
    }
}
