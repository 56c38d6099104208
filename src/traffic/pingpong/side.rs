//! One end of a TCP-exchange run: the device opened, the QP built, and `-g auto`'s choice.

use std::net::IpAddr;
use std::rc::Rc;

use super::plan::{random_psn, Plan, RX_DEPTH, WINDOW, WRID_RECV};
use super::report::PingpongReport;
use super::stall::StallWatch;
use crate::cli::PingpongArgs;
use crate::ctx::Ctx;
use crate::diagnose::setup::{setup_verdict, SetupVerdict};
use crate::error::Error;
use crate::gather::verbs::qp::{Context, Cq, Mr, Pd, Qp, QpCaps, QpPortAttrs};
use crate::model::device::{GidType, LinkLayer};
use crate::model::failure::{Cause, Endpoint, Failure, FailureContext, Segment, Step};
use crate::model::gid::Gid;
use crate::traffic::failure::{self, GidChoice};

/// Everything one end owns, in drop order (QP before CQ before MR before PD).
pub(super) struct Side {
    pub(super) qp: Qp,
    pub(super) cq: Cq,
    pub(super) mr: Mr,
    pub(super) _pd: Rc<Pd>,
    pub(super) ctx: Rc<Context>,
    pub(super) port: u32,
    pub(super) port_info: QpPortAttrs,
    pub(super) gid: Option<(u32, Gid, Option<GidType>)>,
    /// The GID's VLAN and prefix, sent in the native exchange.
    pub(super) segment: Option<Segment>,
    pub(super) psn: u32,
    pub(super) max_rd_atomic: u8,
    pub(super) size: u32,
    /// Receives posted on the QP so far, set up and by the SEND ping-pong, which keeps
    /// count to repost in batches (never past `max_recv_wr`).
    pub(super) recvs_posted: u64,
    /// What a stalled wait re-reads and compares against.
    pub(super) stall: StallWatch,
}

impl Side {
    pub(super) fn endpoint(&self) -> Endpoint {
        Endpoint {
            lid: self.port_info.lid,
            qpn: self.qp.qpn(),
            psn: self.psn,
            gid: self.gid.as_ref().map(|g| g.1).unwrap_or(Gid::ZERO),
            gid_index: self.gid.as_ref().map(|g| g.0),
            gid_type: self.gid.as_ref().and_then(|g| g.2.clone()),
            link_layer: self.port_info.link_layer.clone(),
            active_mtu: self.port_info.active_mtu,
            rkey: self.mr.rkey(),
            addr: self.mr.addr() + u64::from(self.size),
            len: self.size,
            segment: self.segment,
        }
    }

    /// The peer's GID is one of this port's own: both ends run on this port.
    pub(super) fn shares_port_with(&self, remote: &Option<Endpoint>) -> bool {
        let Some(r) = remote.as_ref().filter(|r| !r.gid.is_zero()) else {
            return false;
        };
        // The same GID needs no read; another index of this port needs its table only.
        Some(r.gid) == self.gid.as_ref().map(|g| g.1)
            || crate::gather::sysfs::SysfsRoot::new(&self.stall.sysfs)
                .gid_table(self.ctx.name(), self.port, false)
                .is_ok_and(|table| table.iter().any(|e| e.gid == r.gid))
    }

    pub(super) fn target(&self) -> usize {
        self.size as usize
    }

    pub(super) fn fail(&self, step: Step, cause: Cause) -> Failure {
        self.qp.failure(step, cause)
    }
}

/// Why opening the local side stopped: a usage or lookup error, or a verbs step to explain.
pub(super) enum Setup {
    Error(Error),
    Failure(Failure),
}

impl From<Error> for Setup {
    fn from(e: Error) -> Setup {
        Setup::Error(e)
    }
}

impl From<Failure> for Setup {
    fn from(f: Failure) -> Setup {
        Setup::Failure(f)
    }
}

/// Turns a local setup failure into the error (and exit code) it deserves.
pub(super) fn setup_error(f: Failure, avail: Vec<String>) -> Error {
    let no_rdma = || Error::NoRdma {
        path: "/sys/class/infiniband".into(),
    };
    let c = &f.context;
    match setup_verdict(&f, !avail.is_empty()) {
        SetupVerdict::NoRdma => no_rdma(),
        SetupVerdict::NoSuchDevice => Error::NoSuchDevice {
            name: c.device.clone(),
            available: avail,
        },
        SetupVerdict::NoSuchPort => Error::NoSuchPort {
            device: c.device.clone(),
            port: c.port,
            available: Vec::new(),
        },
        SetupVerdict::NoSuchGid { hint } => Error::NoSuchGid {
            device: c.device.clone(),
            port: c.port,
            index: c.gid_index.unwrap_or(0),
            hint: hint.into(),
        },
        SetupVerdict::Other => Error::Failed(f.to_string()),
    }
}

/// A device that would not open: a missing device or stack is an error naming what
/// exists; one that refused (EACCES on its uverbs node, ...) is a failed step, explained
/// as selftest and doctor explain it, not one bare line.
fn open_refused(sysfs: &std::path::Path, f: Failure, avail: Vec<String>) -> Setup {
    match setup_verdict(&f, !avail.is_empty()) {
        SetupVerdict::Other => Setup::Failure(f),
        // sysfs may still list it: a device being removed is named as such.
        SetupVerdict::NoSuchDevice | SetupVerdict::NoRdma => Setup::Error(
            crate::traffic::failure::removing_device(sysfs, &f.context.device)
                .unwrap_or_else(|| setup_error(f, avail)),
        ),
        _ => Setup::Error(setup_error(f, avail)),
    }
}

/// Opens the device and builds the QP. With `-g auto` a client chooses its GID here (it
/// knows the server's address); a server leaves `gid` empty until a client connects.
pub(super) fn open_side(
    ctx: &Ctx,
    args: &PingpongArgs,
    plan: &Plan,
    device: &str,
    peer: Option<IpAddr>,
    report: &mut PingpongReport,
) -> std::result::Result<Side, Setup> {
    let vctx =
        Context::open(Some(device)).map_err(|(f, avail)| open_refused(&ctx.sysfs, f, avail))?;
    report.device = vctx.name().to_string();
    let port = args.on.port;
    let port_info = vctx
        .query_port(port)
        .map_err(|f| setup_error(f, Vec::new()))?;
    if !port_info.is_active() {
        return Err(Setup::Failure(Failure::new(
            Step::QueryPort,
            Cause::Invalid {
                what: format!(
                    "port state {} is not ACTIVE (4): no link, or no subnet manager on InfiniBand",
                    port_info.state
                ),
            },
            FailureContext {
                device: vctx.name().to_string(),
                port,
                link_layer: Some(port_info.link_layer.clone()),
                ..Default::default()
            },
        )));
    }
    // rxe reports a max_msg_sz it does not enforce; hardware refuses a larger message.
    if let Some(warning) = crate::diagnose::datapath::message_over_max(
        vctx.name(),
        port,
        plan.size,
        port_info.max_msg_sz,
    ) {
        if !ctx.json {
            crate::output::note(&warning);
        }
    }
    let mut gid_index = plan.gid_index;
    if plan.auto && args.server.is_some() {
        let choice = failure::choose_gid(&ctx.sysfs, vctx.name(), port, peer)?;
        gid_index = Some(
            choice
                .selection
                .chosen
                .ok_or_else(|| Error::Failed(choice.none_fits()))?,
        );
        announce(ctx, &choice);
        report.gid_selection = Some(choice);
    }
    report.gid_index = gid_index;
    if port_info.link_layer == LinkLayer::Ethernet && gid_index.is_none() && !plan.auto {
        // ibv_rc_pingpong without -g sends no GRH, which RoCE rejects at RTR: refuse now.
        let pick = failure::choose_gid(&ctx.sysfs, vctx.name(), port, peer)
            .ok()
            .and_then(|c| {
                let i = c.selection.chosen?;
                Some(format!(
                    "; -g auto would pick {} ({})",
                    i,
                    c.selection
                        .reason(i)
                        .map(|r| r.why.clone())
                        .unwrap_or_default()
                ))
            })
            .unwrap_or_default();
        return Err(Setup::Error(Error::Usage(format!(
            "{}/{port} is RoCE (Ethernet link layer), which needs a GRH: give a GID index with -g N or -g auto{pick} \
             (`rdmactl gids {}` lists them)",
            vctx.name(),
            vctx.name()
        ))));
    }
    let gid = match gid_index {
        Some(i) => {
            let (g, t) = vctx.query_gid(port, i)?;
            Some((i, g, t))
        }
        None => None,
    };
    let (rd_atom, init_rd_atom) = vctx.rd_atomic_limits()?;
    let max_rd_atomic = rd_atom.min(init_rd_atom).clamp(1, 16) as u8;
    let pinned = 2 * u64::from(plan.size);
    if let Some(cause) =
        failure::pin_check(pinned, format!("2 × the {}-byte message size: a buffer to send from and one for the peer's SENDs, WRITEs and READs, where ibv_rc_pingpong shares one", plan.size))
    {
        let mut f = Failure::new(Step::Mr, cause, FailureContext::default());
        f.context.device = vctx.name().to_string();
        f.context.port = port;
        f.context.bytes = Some(pinned);
        return Err(Setup::Failure(f));
    }
    let pd = Pd::alloc(&vctx)?;
    let mr = Mr::register(&pd, 2 * plan.size as usize, plan.access)?;
    let cq = if plan.events {
        Cq::create_notifying(&vctx, RX_DEPTH + WINDOW + 8)?
    } else {
        Cq::create(&vctx, RX_DEPTH + WINDOW + 8)?
    };
    let qp = Qp::create_rc(
        &pd,
        &cq,
        QpCaps {
            max_send_wr: WINDOW,
            max_recv_wr: RX_DEPTH,
        },
        port,
        gid_index,
    )?;
    qp.to_init_pkey(plan.access, plan.pkey_index)?;
    let mut side = Side {
        qp,
        cq,
        mr,
        _pd: pd,
        ctx: vctx,
        port,
        port_info,
        segment: gid_index
            .and_then(|i| crate::gather::failure::gid_segment(&ctx.sysfs, device, port, i)),
        gid,
        psn: random_psn(),
        max_rd_atomic,
        size: plan.size,
        recvs_posted: 0,
        stall: StallWatch::new(
            &ctx.sysfs,
            if args.server.is_some() {
                "client"
            } else {
                "server"
            },
        ),
    };
    // Receives go up before RTR, so the peer's first SEND always finds one.
    if plan.ops.send {
        let wanted = match (plan.follows, plan.length.iters) {
            (false, Some(n)) => n.saturating_add(1),
            _ => RX_DEPTH,
        };
        for _ in 0..RX_DEPTH.min(wanted) {
            side.qp
                .post_recv(&side.mr, side.target(), side.size, WRID_RECV)?;
            side.recvs_posted += 1;
        }
    }
    Ok(side)
}

/// `-g auto`'s choice goes to stderr in table mode (stdout is the result) and into the JSON.
pub(super) fn announce(ctx: &Ctx, choice: &GidChoice) {
    if !ctx.json {
        crate::output::note(&crate::render::pingpong::gid_choice(&choice.render()));
    }
}

/// A server with `-g auto` picks its GID once it knows the client's address.
pub(super) fn choose_for_client(
    ctx: &Ctx,
    side: &mut Side,
    report: &mut PingpongReport,
    client: IpAddr,
) -> std::result::Result<(), Failure> {
    let choice = failure::choose_gid(&ctx.sysfs, side.ctx.name(), side.port, Some(client))
        .map_err(|e| {
            side.fail(
                Step::QueryGid,
                Cause::Invalid {
                    what: e.to_string(),
                },
            )
        })?;
    let Some(i) = choice.selection.chosen else {
        return Err(side.fail(
            Step::QueryGid,
            Cause::Invalid {
                what: choice.none_fits(),
            },
        ));
    };
    let (g, t) = side.ctx.query_gid(side.port, i)?;
    side.gid = Some((i, g, t));
    side.segment = crate::gather::failure::gid_segment(&ctx.sysfs, side.ctx.name(), side.port, i);
    announce(ctx, &choice);
    report.gid_index = Some(i);
    report.gid_selection = Some(choice);
    report.local = Some(side.endpoint());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open_failed(errno: i32) -> Failure {
        Failure::new(
            Step::Open,
            Cause::errno(errno),
            FailureContext {
                device: "rxe0".into(),
                ..FailureContext::default()
            },
        )
    }

    /// EACCES on the uverbs node is a failed step, explained (why, seen, fix), not one
    /// bare "open device failed (rxe0): EACCES" line; a missing device stays an error
    /// naming what exists.
    #[test]
    fn a_refused_open_is_explained_a_missing_device_listed() {
        let avail = vec!["rxe0".to_string()];
        assert!(matches!(
            open_refused(
                std::path::Path::new("/nonexistent"),
                open_failed(libc::EACCES),
                avail.clone()
            ),
            Setup::Failure(_)
        ));
        assert!(matches!(
            open_refused(
                std::path::Path::new("/nonexistent"),
                open_failed(libc::ENODEV),
                avail
            ),
            Setup::Error(Error::NoSuchDevice { .. })
        ));
    }
}
