//! What this rank publishes about itself: the gathered facts of its endpoint, with the GID
//! `-g auto` picks there, the address partners connect to, and the host's ARP flux.

use crate::cli::{FabricArgs, GidIndexArg};
use crate::ctx::Ctx;
use crate::gather::endpoint as gather;
use crate::model::device::{LinkLayer, Port, PortState};
use crate::model::fabric::{Placement, RankInfo};

pub fn rank_info(ctx: &Ctx, args: &FabricArgs, place: &Placement, pair_port: u16) -> RankInfo {
    let mut info = RankInfo {
        rank: place.rank,
        local_rank: place.local_rank,
        host: gather::hostname(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        kernel: gather::kernel_release(),
        memlock: gather::memlock_soft_limit()
            .map(|l| l.map_or("unlimited".to_string(), |b| b.to_string())),
        pair_port,
        ..RankInfo::default()
    };
    if args.simulate {
        info.device = format!("sim{}", place.rank);
        info.port = 1;
        info.tcp_host = "127.0.0.1".into();
        return info;
    }
    let tested = match gather::tested_port(ctx, args, place.local_rank, &info.host) {
        Ok(t) => t,
        Err(problem) => {
            info.problem = Some(problem);
            return info;
        }
    };
    info.device = tested.device.clone();
    info.port = tested.port;
    info.arp_flux = crate::diagnose::fabric::arp_flux(&tested.roce_netdevs);
    info.firmware = tested.firmware;
    if let Some(p) = &tested.facts {
        port_facts(&mut info, p, args.on.gid_index);
    }
    info
}

/// The port's state and sizes, the GID this rank offers and where partners connect.
fn port_facts(info: &mut RankInfo, p: &Port, gid_index: GidIndexArg) {
    info.link_layer = p.link_layer.as_ref().map(|l| l.to_string());
    info.state = p.state.as_ref().map(|s| s.name().to_string());
    if p.state != Some(PortState::Active) {
        info.problem = Some(format!(
            "{}/{} is {}, not ACTIVE",
            info.device,
            info.port,
            p.state.as_ref().map_or("in an unknown state", |s| s.name())
        ));
    }
    info.active_mtu = p.active_mtu;
    info.netdev = p.netdev.as_ref().map(|n| n.name.clone());
    info.netdev_mtu = p.netdev.as_ref().and_then(|n| n.mtu);
    info.rate = p.rate.as_ref().map(|r| r.text.clone());
    info.gids = p.gids.len() as u32;
    let link_layer = p.link_layer.clone().unwrap_or(LinkLayer::Ethernet);
    let chosen = match gid_index {
        GidIndexArg::Index(i) => Some(i),
        GidIndexArg::Auto => {
            crate::diagnose::gidselect::select_gid(&p.gids, &link_layer, &Default::default()).chosen
        }
    };
    if let Some(entry) = chosen.and_then(|i| p.gids.iter().find(|g| g.index == i)) {
        info.gid_index = Some(entry.index);
        info.gid = Some(entry.gid.to_string());
        info.gid_type = Some(crate::diagnose::gidselect::type_name(
            entry.gid_type.as_ref(),
        ));
    }
    // Partners connect to the GID's own address where it has one (RoCE), so `-g auto` on
    // their side faces this endpoint; else (InfiniBand) this host's name.
    info.tcp_host = info
        .gid
        .as_ref()
        .and_then(|g| g.parse::<crate::model::gid::Gid>().ok())
        .filter(|g| {
            !g.is_zero()
                && !crate::model::gid::is_link_local(g)
                && link_layer == LinkLayer::Ethernet
        })
        .map(|g| g.ip().to_string())
        .unwrap_or_else(|| info.host.clone());
}
