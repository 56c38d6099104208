//! `--simulate-ranks N`: N ranks as threads of one process, for control-plane scale tests
//! (tests/fabric_scale.rs).

use std::time::Instant;

use crate::cli::FabricArgs;
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::model::fabric::Placement;

use super::agent::agent;
use super::rank_info::rank_info;

/// Control-plane scale tests: ranks `place.rank ..` (n of them) as threads of this process.
pub fn simulate_many(
    ctx: &Ctx,
    args: &FabricArgs,
    place: &Placement,
    token: &str,
    n: u32,
    connect_to: &(String, u16),
    join_deadline: Instant,
) -> Result<u8> {
    let last = place.rank.saturating_add(n).min(place.size);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (place.rank..last)
            .map(|rank| {
                scope.spawn(move || {
                    let me = Placement {
                        rank,
                        ..place.clone()
                    };
                    let info = rank_info(ctx, args, &me, args.port_base.wrapping_add(rank as u16));
                    agent(args, &me, token, info, connect_to, join_deadline)
                })
            })
            .collect();
        let mut code = 0;
        for h in handles {
            match h.join() {
                Ok(Ok(c)) => code = code.max(c),
                Ok(Err(e)) => return Err(e),
                Err(_) => return Err(Error::Failed("a simulated rank panicked".into())),
            }
        }
        Ok(code)
    })
}
