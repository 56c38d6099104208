use super::codec::NativeMsg;
use crate::model::device::LinkLayer;
use crate::model::failure::{Endpoint, Mismatch};
use crate::model::gid::GidKind;

/// Everything that would make RTR fail or the traffic hang, from the two messages alone.
pub fn compare(local: &NativeMsg, remote: &NativeMsg) -> Vec<Mismatch> {
    let (l, r) = (&local.endpoint, &remote.endpoint);
    let mut out = Vec::new();
    if l.link_layer != r.link_layer {
        out.push(Mismatch::LinkLayer {
            local: l.link_layer.clone(),
            remote: r.link_layer.clone(),
        });
    }
    let ib = |e: &Endpoint| e.link_layer == LinkLayer::InfiniBand;
    if ib(l) && l.lid == 0 || ib(r) && r.lid == 0 {
        out.push(Mismatch::LidZero {
            local: ib(l) && l.lid == 0,
            remote: ib(r) && r.lid == 0,
        });
    }
    let roce = |e: &Endpoint| e.link_layer == LinkLayer::Ethernet;
    let (l_nogid, r_nogid) = (
        roce(l) && l.gid_index.is_none(),
        roce(r) && r.gid_index.is_none(),
    );
    if l_nogid || r_nogid {
        out.push(Mismatch::NoGid {
            local: l_nogid,
            remote: r_nogid,
        });
    }
    if l.gid_index.is_some() && r.gid_index.is_some() {
        if l.gid_type.is_some() && r.gid_type.is_some() && l.gid_type != r.gid_type {
            out.push(Mismatch::GidType {
                local: l.gid_type.clone(),
                remote: r.gid_type.clone(),
            });
        }
        let family = |k: GidKind| match k {
            GidKind::Global | GidKind::Multicast | GidKind::Loopback => GidKind::Global,
            other => other,
        };
        let (lk, rk) = (family(l.gid.kind()), family(r.gid.kind()));
        if lk != rk {
            out.push(Mismatch::GidFamily {
                local: l.gid.kind(),
                remote: r.gid.kind(),
            });
        }
    }
    if local.size != remote.size {
        out.push(Mismatch::Size {
            local: local.size,
            remote: remote.size,
        });
    }
    // A server that follows has taken the client's length already (see `NativeMsg::follow`).
    let same_length = (local.iters, local.duration_ms, local.lat)
        == (remote.iters, remote.duration_ms, remote.lat);
    if local.follows || remote.follows || same_length {
    } else if local.duration_ms == 0 && remote.duration_ms == 0 && local.lat == remote.lat {
        out.push(Mismatch::Iters {
            local: local.iters,
            remote: remote.iters,
        });
    } else {
        out.push(Mismatch::Length {
            local: local.length(),
            remote: remote.length(),
        });
    }
    if local.ops != remote.ops {
        out.push(Mismatch::Ops {
            local: local.ops.bits(),
            remote: remote.ops.bits(),
        });
    }
    out
}

/// The path MTU: the smaller active MTU, or the requested one if both ports can carry it.
pub fn path_mtu(
    local_active: u32,
    remote_active: u32,
    requested: Option<u32>,
) -> Result<u32, String> {
    let common = match (local_active, remote_active) {
        (0, r) => r,
        (l, 0) => l,
        (l, r) => l.min(r),
    };
    match requested {
        None => Ok(common),
        Some(m) if !matches!(m, 256 | 512 | 1024 | 2048 | 4096) => {
            Err(format!("-m {m} is not a path MTU; use 256, 512, 1024, 2048 or 4096"))
        }
        Some(m) if common != 0 && m > common => Err(format!(
            "-m {m} exceeds the active MTU of the path (this port {local_active}, peer {}); use -m {common} or less",
            if remote_active == 0 { "unknown".to_string() } else { remote_active.to_string() }
        )),
        Some(m) => Ok(m),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::device::GidType;
    use crate::model::gid::Gid;
    use crate::wire::exchange::codec::tests::sample;

    /// A server given no run length takes the client's; one given a length keeps the
    /// strict check, which names the flags on both ends.
    #[test]
    fn a_server_that_follows_is_not_held_to_its_own_length() {
        let client = NativeMsg {
            iters: 0,
            duration_ms: 2500,
            lat: true,
            ..sample()
        };
        let mut server = NativeMsg {
            follows: true,
            ..sample()
        };
        // A server's message that says it follows compares clean, from either side.
        assert!(compare(&client, &server).is_empty());
        assert!(compare(&server, &client).is_empty());
        server.follows = false;
        assert_eq!(compare(&server, &client).len(), 1);
        let strict = sample();
        assert_eq!(
            compare(&strict, &client),
            vec![Mismatch::Length {
                local: "-n 1000".into(),
                remote: "--duration 2.5 --lat".into()
            }]
        );
        let fewer = NativeMsg {
            iters: 200,
            ..sample()
        };
        assert_eq!(
            compare(&strict, &fewer),
            vec![Mismatch::Iters {
                local: 1000,
                remote: 200
            }]
        );
    }

    #[test]
    fn compare_finds_what_would_break_rtr() {
        let a = sample();
        assert!(compare(&a, &a).is_empty());
        let mut b = sample();
        b.endpoint.gid = Gid::parse("fe80::5054:ff:fe12:3456").unwrap();
        b.endpoint.gid_index = Some(0);
        b.endpoint.gid_type = Some(GidType::RoceV1);
        let found = compare(&a, &b);
        assert!(
            found
                .iter()
                .any(|m| matches!(m, Mismatch::GidFamily { .. })),
            "{found:?}"
        );
        assert!(
            found.iter().any(|m| matches!(m, Mismatch::GidType { .. })),
            "{found:?}"
        );
        let mut ib = sample();
        ib.endpoint.link_layer = LinkLayer::InfiniBand;
        let found = compare(&ib, &ib);
        assert_eq!(
            found,
            vec![Mismatch::LidZero {
                local: true,
                remote: true
            }]
        );
        let mut nogid = sample();
        nogid.endpoint.gid_index = None;
        nogid.size = 8;
        let found = compare(&a, &nogid);
        assert!(
            found.contains(&Mismatch::NoGid {
                local: false,
                remote: true
            }),
            "{found:?}"
        );
        assert!(
            found.contains(&Mismatch::Size {
                local: 4096,
                remote: 8
            }),
            "{found:?}"
        );
        assert!(found.iter().all(|m| !m.to_string().is_empty()));
    }

    #[test]
    fn path_mtu_is_the_smaller_or_a_valid_request() {
        assert_eq!(path_mtu(1024, 4096, None), Ok(1024));
        assert_eq!(path_mtu(4096, 0, None), Ok(4096));
        assert_eq!(path_mtu(4096, 4096, Some(2048)), Ok(2048));
        assert!(path_mtu(1024, 1024, Some(4096))
            .unwrap_err()
            .contains("use -m 1024"));
        assert!(path_mtu(1024, 1024, Some(1500))
            .unwrap_err()
            .contains("not a path MTU"));
    }
}
