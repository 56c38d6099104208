use crate::cli::GidsArgs;
use crate::ctx::Ctx;
use crate::error::Result;
use crate::exit;
use crate::gather::inventory::target;
use crate::gather::sysfs::SysfsRoot;
use crate::model::device::GidEntry;
use crate::output::print;
use crate::render::inventory::{self, GidRow};

pub fn run(ctx: &Ctx, args: &GidsArgs) -> Result<u8> {
    let (device, port) = target(&args.select)?;
    let sysfs = SysfsRoot::new(&ctx.sysfs);
    // One ibv_query_gid_table per device where verbs answer, else the sysfs table.
    let mut devices = crate::gather::inventory::inventory_with_verbs(
        ctx,
        device.as_deref(),
        false,
        true,
        || {
            sysfs
                .clone()
                .link_layer_only()
                .select(device.as_deref(), port)
        },
    )?;
    if args.all {
        // The inventory holds only populated slots; --all rereads each table whole.
        for d in &mut devices {
            for p in &mut d.ports {
                p.gids = sysfs.gid_table(&d.name, p.number, true)?;
            }
        }
    }
    let rows: Vec<GidRow> = devices
        .iter()
        .flat_map(|d| {
            let iwarp = d.node_type.as_ref().is_some_and(|t| t.is_iwarp());
            d.ports.iter().map(move |p| (p, iwarp))
        })
        .flat_map(|(p, iwarp)| {
            p.gids
                .iter()
                .map(move |g: &GidEntry| GidRow::new(p, g, iwarp))
        })
        .collect();
    let text = if ctx.json {
        inventory::gids_json(&rows)
    } else {
        crate::output::note(&inventory::unreadable_warnings(&devices));
        crate::output::note(&inventory::no_gids_note(&rows));
        inventory::gids_table(&rows, args.ip, ctx.style)
    };
    print(&text)?;
    Ok(exit::OK)
}
