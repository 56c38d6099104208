use crate::cli::DevicesArgs;
use crate::ctx::Ctx;
use crate::error::Result;
use crate::exit;
use crate::gather::sysfs::SysfsRoot;
use crate::model::device::Device;
use crate::output;
use crate::render::{devinfo, inventory};

pub fn run(ctx: &Ctx, args: &DevicesArgs) -> Result<u8> {
    if args.verbose {
        return run_verbose(ctx, args.filter.device.as_deref());
    }
    let text = if ctx.json {
        inventory::devices_json(&gather(ctx, args.filter.device.as_deref())?)
    } else {
        // The table shows each port's netdev, not its GID table.
        let devices = crate::gather::inventory::inventory_with_verbs(
            ctx,
            args.filter.device.as_deref(),
            true,
            false,
            || {
                SysfsRoot::new(&ctx.sysfs)
                    .netdev_only()
                    .select(args.filter.device.as_deref(), None)
            },
        )?;
        output::note(&inventory::unreadable_warnings(&devices));
        output::note(&crate::diagnose::removal::notes(&devices));
        inventory::devices_table(&devices, ctx.style)
    };
    output::print(&text)?;
    Ok(exit::OK)
}

/// The devices as sysfs lists them, with the firmware version and port MTUs verbs add.
fn gather(ctx: &Ctx, device: Option<&str>) -> Result<Vec<Device>> {
    crate::gather::inventory::inventory_with_verbs(ctx, device, true, false, || {
        SysfsRoot::new(&ctx.sysfs).select(device, None)
    })
}

/// `rdmactl devices -v [-d DEV]`. Exit 0 whenever a device was shown: without verbs the
/// sysfs values are still real, and the note says what is missing.
fn run_verbose(ctx: &Ctx, device: Option<&str>) -> Result<u8> {
    let (sysfs, views) = crate::gather::devinfo::gather(ctx, device)?;
    let text = if ctx.json {
        devinfo::json(&views)
    } else {
        devinfo::text(&views)
    };
    if !ctx.json {
        output::note(&inventory::unreadable_warnings(&sysfs));
        output::note(&devinfo::missing_notes_text(&views, ctx.captured));
    }
    output::print(&text)?;
    Ok(exit::OK)
}
