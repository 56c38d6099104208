//! The walk that connects the two ends: open, PD, MR, CQ, QP, INIT, RTR, RTS; then the
//! basic walk and the semantic steps on what it built.

use super::{psn, StepResult, Tester};
use crate::cli::SelftestStep;
use crate::error::Error;
use crate::gather::verbs::qp::{Access, Context, Cq, Mr, Pd, Qp, QpCaps, RtrParams};
use crate::model::device::GidType;
use crate::model::failure::{Cause, Failure, FailureContext, Step};
use crate::traffic::failure::{self};

impl Tester {
    /// Every step: the connecting walk, the basic walk (unless `--steps` leaves it out),
    /// then the semantic steps.
    pub(super) fn run_all(&mut self, names: [Option<&str>; 2]) {
        self.step("open", |t| Self::open_ends(t, names));
        self.step("pd", |t| {
            for end in &mut t.ends {
                end.pd = Some(Pd::alloc(end.ctx.as_ref().expect("opened"))?);
            }
            Ok(String::new())
        });
        self.step("mr", |t| {
            let access = Access {
                remote_write: true,
                remote_read: true,
                remote_atomic: true,
            };
            let len = 2 * t.size as usize;
            let pinned = 2 * len as u64;
            if let Some(cause) =
                failure::pin_check(pinned, format!("4 × the {}-byte message size", t.size))
            {
                let mut f = Failure::new(Step::Mr, cause, FailureContext::default());
                f.context.device = t.ends[0]
                    .ctx
                    .as_ref()
                    .map(|c| c.name().to_string())
                    .unwrap_or_default();
                f.context.port = t.port;
                f.context.bytes = Some(pinned);
                return Err(f);
            }
            for end in &mut t.ends {
                end.mr = Some(Mr::register(end.pd.as_ref().expect("pd"), len, access)?);
            }
            Ok(format!(
                "{len} bytes each, local write + remote write/read/atomic"
            ))
        });
        self.step("cq", |t| {
            for end in &mut t.ends {
                end.cq = Some(Cq::create(end.ctx.as_ref().expect("opened"), 16)?);
            }
            Ok(String::new())
        });
        self.step("qp create", |t| {
            let (port, gid_index) = (t.port, t.gid_index);
            for (end, gid_index) in t.ends.iter_mut().zip(gid_index) {
                let caps = QpCaps {
                    max_send_wr: 4,
                    max_recv_wr: 4,
                };
                end.qp = Some(Qp::create_rc(
                    end.pd.as_ref().expect("pd"),
                    end.cq.as_ref().expect("cq"),
                    caps,
                    port,
                    Some(gid_index),
                )?);
            }
            Ok(format!(
                "QPN 0x{:06x} and 0x{:06x}",
                t.qp(0).qpn(),
                t.qp(1).qpn()
            ))
        });
        self.step("init", |t| {
            let access = Access {
                remote_write: true,
                remote_read: true,
                remote_atomic: true,
            };
            for i in 0..2 {
                t.qp(i).to_init(access)?;
            }
            Ok(String::new())
        });
        let mtu = self.path_mtu();
        self.step("rtr", |t| {
            for i in 0..2 {
                let peer = 1 - i;
                let p = RtrParams {
                    path_mtu: mtu,
                    dest_qpn: t.qp(peer).qpn(),
                    dest_psn: psn(peer),
                    dest_lid: t.ends[peer].port.as_ref().map_or(0, |p| p.lid),
                    grh: Some((t.ends[peer].gid.as_ref().expect("gid").0, t.gid_index[i])),
                    max_dest_rd_atomic: 1,
                };
                t.qp(i).to_rtr(&p)?;
            }
            Ok(format!("path MTU {mtu}"))
        });
        self.step("rts", |t| {
            for i in 0..2 {
                t.qp(i).to_rts(psn(i), 1)?;
            }
            Ok(String::new())
        });
        if self.wants(SelftestStep::Basic) {
            self.run_basic();
        }
        // The semantic steps build their own QPs and buffers: unpin the basic walk's first
        // (4 × the message size), so they fit under the same memlock limit.
        for end in &mut self.ends {
            end.qp.take();
            end.cq.take();
            end.mr.take();
        }
        self.run_semantics();
    }

    /// Opens both devices, checks their ports, chooses and reads their GIDs.
    fn open_ends(t: &mut Tester, names: [Option<&str>; 2]) -> StepResult {
        let mut detail = Vec::new();
        for (i, name) in names.iter().enumerate() {
            let c = match Context::open(*name) {
                Ok(c) => c,
                Err((f, avail)) => {
                    if matches!(f.cause, Cause::Errno { errno, .. } if errno == libc::ENODEV) {
                        let removing =
                            crate::traffic::failure::removing_device(&t.sysfs, &f.context.device);
                        t.open_error = Some(match removing {
                            Some(e) => e,
                            None if avail.is_empty() => Error::NoRdma {
                                path: "/sys/class/infiniband".into(),
                            },
                            None => Error::NoSuchDevice {
                                name: f.context.device.clone(),
                                available: avail,
                            },
                        });
                    }
                    return Err(f);
                }
            };
            let port = c.query_port(t.port)?;
            if !port.is_active() {
                return Err(Failure::new(
                    Step::QueryPort,
                    Cause::Invalid {
                        what: format!("port state {} is not ACTIVE (4)", port.state),
                    },
                    FailureContext {
                        device: c.name().into(),
                        port: t.port,
                        ..Default::default()
                    },
                ));
            }
            let index = match t.fixed_index {
                Some(i) => i,
                None => match failure::choose_loopback_gid(&t.sysfs, c.name(), t.port) {
                    Ok(choice) => {
                        let chosen = choice.selection.chosen;
                        if chosen.is_none() {
                            t.open_error = Some(Error::Failed(choice.none_fits()));
                        }
                        if !(i == 1 && names[0] == names[1]) {
                            t.choices.push(choice);
                        }
                        chosen.unwrap_or(0)
                    }
                    Err(e) => {
                        t.open_error = Some(e);
                        0
                    }
                },
            };
            if t.open_error.is_some() {
                return Err(Failure::new(
                    Step::QueryGid,
                    Cause::Invalid {
                        what: "-g auto found no GID".into(),
                    },
                    FailureContext {
                        device: c.name().into(),
                        port: t.port,
                        ..Default::default()
                    },
                ));
            }
            t.gid_index[i] = index;
            let gid = c.query_gid(t.port, index).inspect_err(|f| {
                if crate::diagnose::setup::is_bad_gid_slot(&f.cause) {
                    t.open_error = Some(Error::NoSuchGid {
                        device: c.name().into(),
                        port: t.port,
                        index,
                        hint: format!("{}; list them with `rdmactl gids {}`", f.cause, c.name()),
                    });
                }
            })?;
            detail.push(format!(
                "{}/{} GID[{}] {} {}, MTU {}",
                c.name(),
                t.port,
                index,
                gid.0,
                match &gid.1 {
                    Some(GidType::RoceV2) => "RoCE v2",
                    Some(GidType::RoceV1) => "RoCE v1",
                    Some(GidType::Ib) => "IB",
                    _ => "",
                },
                port.active_mtu
            ));
            if i == 1 && names[0] == names[1] {
                detail.pop();
            }
            let end = &mut t.ends[i];
            end.ctx = Some(c);
            end.port = Some(port);
            end.gid = Some(gid);
        }
        Ok(detail.join("; "))
    }
}
