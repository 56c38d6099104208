use crate::cli::DevicesArgs;
use crate::ctx::Ctx;
use crate::error::Result;
use crate::exit;
use crate::model::Device;
use crate::output;
use crate::render::inventory;
use crate::sysfs::SysfsRoot;

pub fn run(ctx: &Ctx, args: &DevicesArgs) -> Result<u8> {
    if args.verbose {
        return crate::cmd::devinfo::run_verbose(ctx, args.device.as_deref());
    }
    let text = if ctx.json {
        inventory::devices_json(&gather(ctx, args.device.as_deref())?)
    } else {
        // The table shows each port's netdev, not its GID table.
        let devices = SysfsRoot::new(&ctx.sysfs)
            .netdev_only()
            .select(args.device.as_deref(), None)?;
        super::warn_unreadable(&devices);
        inventory::devices_table(&devices, ctx.style)
    };
    output::print(&text)?;
    Ok(exit::OK)
}

/// The sysfs side of `devices`; the verbs layer adds its attributes on top for `-v`.
pub fn gather(ctx: &Ctx, device: Option<&str>) -> Result<Vec<Device>> {
    SysfsRoot::new(&ctx.sysfs).select(device, None)
}
