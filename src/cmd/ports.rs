use crate::cli::PortsArgs;
use crate::ctx::Ctx;
use crate::error::Result;
use crate::exit;
use crate::gather::inventory::target;
use crate::gather::sysfs::SysfsRoot;
use crate::model::device::Port;
use crate::output::print;
use crate::render::inventory;

pub fn run(ctx: &Ctx, args: &PortsArgs) -> Result<u8> {
    let (device, port) = target(&args.select)?;
    // The GID tables (for gid_netdevs) come from one verbs call per device where it
    // answers: reading 1024 gids/N files per port is most of the time on a big host.
    let devices = crate::gather::inventory::inventory_with_verbs(
        ctx,
        device.as_deref(),
        false,
        true,
        || {
            SysfsRoot::new(&ctx.sysfs)
                .netdev_only()
                .ports_only()
                .select(device.as_deref(), port)
        },
    )?;
    let ports: Vec<&Port> = devices.iter().flat_map(|d| d.ports.iter()).collect();
    let pkeys = if args.verbose {
        let root = SysfsRoot::new(&ctx.sysfs);
        let tables: Result<Vec<_>> = ports
            .iter()
            .map(|p| root.pkey_table(&p.device, p.number))
            .collect();
        Some(tables?)
    } else {
        None
    };
    let text = if ctx.json {
        match &pkeys {
            Some(k) => inventory::ports_json_verbose(&ports, k),
            None => inventory::ports_json(&ports),
        }
    } else {
        crate::output::note(&inventory::unreadable_warnings(&devices));
        crate::output::note(&inventory::unknown_mtu_notes(&devices));
        crate::output::note(&crate::diagnose::removal::notes(&devices));
        if !ctx.captured {
            let hidden = crate::gather::inventory::netdevs_outside_namespace(&ctx.sysfs, &ports);
            crate::output::note(&inventory::hidden_netdevs_note(&hidden));
        }
        match &pkeys {
            Some(k) => inventory::ports_table_verbose(&ports, k, ctx.style),
            None => inventory::ports_table(&ports, ctx.style),
        }
    };
    print(&text)?;
    Ok(exit::OK)
}
