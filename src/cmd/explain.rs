//! `rdmactl explain [CODE]`: the catalogue entry of a diagnostic code (cause, evidence,
//! fix), as `rustc --explain` prints one; with no code, every code.

use crate::cli::ExplainArgs;
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::exit;
use crate::model::catalogue;
use crate::output::{json, print};
use crate::render::catalogue as render;

pub fn run(ctx: &Ctx, args: &ExplainArgs) -> Result<u8> {
    let Some(code) = args.code.as_deref() else {
        let all = catalogue::entries();
        print(&if ctx.json {
            json(&render::list(&all))
        } else {
            render::list_text(&all)
        })?;
        return Ok(exit::OK);
    };
    let entries = catalogue::lookup(code);
    if entries.is_empty() {
        return Err(Error::Usage(unknown(code)));
    }
    print(&if ctx.json {
        json(&render::explained(code, &entries))
    } else {
        render::entries_text(&entries)
    })?;
    Ok(exit::OK)
}

/// One line: what was not found, what was probably meant, and how to list the codes.
fn unknown(code: &str) -> String {
    let near = catalogue::close_matches(code);
    let meant = match near.as_slice() {
        [] => String::new(),
        [one] => format!("; did you mean {one}?"),
        more => format!("; did you mean one of {}?", more.join(", ")),
    };
    format!("no diagnostic code '{code}'{meant} (`rdmactl explain` lists every code)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_code_names_close_matches() {
        assert_eq!(
            unknown("retry-exeeded"),
            "no diagnostic code 'retry-exeeded'; did you mean retry-exceeded? \
             (`rdmactl explain` lists every code)"
        );
        assert!(unknown("qqqqqqqqqqqqqqqq")
            .ends_with("'qqqqqqqqqqqqqqqq' (`rdmactl explain` lists every code)"));
    }
}
