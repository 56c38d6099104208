//! What the two ends of a `--cm` run say to each other besides the measured messages, as
//! bytes: the in-band notice (a short SEND: the client's end of a finished run, or a caught
//! signal, either way), and a port as a stall probe and its answer carry it in a CM
//! connect request's and reject's private data. Pure; `traffic::pingpong::cm::notice`
//! sends and receives them.

use crate::model::device::PortState;
use crate::model::facts::{GidNow, PortNow, StallFacts};

/// An in-band message: magic, version, kind, signal, padding.
const MAGIC: [u8; 4] = *b"RDCN";
const VERSION: u8 = 1;
pub(crate) const LEN: usize = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum InBand {
    /// The client ran every operation; its disconnect that follows ends a good run.
    Done,
    /// A SIGINT or SIGTERM stopped the sender.
    Interrupted { signal: i32 },
}

impl InBand {
    pub(crate) fn encode(self) -> [u8; LEN] {
        let mut out = [0u8; LEN];
        out[0..4].copy_from_slice(&MAGIC);
        out[4] = VERSION;
        match self {
            InBand::Done => out[5] = b'D',
            InBand::Interrupted { signal } => {
                out[5] = b'I';
                out[6] = signal.clamp(0, 255) as u8;
            }
        }
        out
    }

    /// A received message as a notice; None for a measured message (its bytes are the
    /// test pattern, which never starts with the magic).
    pub(crate) fn decode(msg: &[u8]) -> Option<InBand> {
        if msg.len() != LEN || msg[0..4] != MAGIC || msg[4] != VERSION {
            return None;
        }
        match msg[5] {
            b'D' => Some(InBand::Done),
            b'I' => Some(InBand::Interrupted {
                signal: i32::from(msg[6]),
            }),
            _ => None,
        }
    }
}

/// A port as a probe or its answer carries it: `ACTIVE 512 1024 1+ rxe1/1` (state, active
/// MTU or `?`, path MTU, GID index with `+` still in the table or `-` gone, the port).
/// 40 bytes at most fit a reject: the port name goes first when space runs out.
pub(crate) fn encode_port(p: &StallFacts) -> String {
    let slot_kept = !matches!(p.now.gid_now, GidNow::Gone | GidNow::Changed(_));
    let head = format!(
        "{} {} {} {}{}",
        p.now
            .port_state
            .as_ref()
            .map_or("?".to_string(), ToString::to_string),
        p.now.active_mtu.map_or("?".to_string(), |m| m.to_string()),
        p.path_mtu.unwrap_or(0),
        p.gid_index.unwrap_or(0),
        if slot_kept { '+' } else { '-' }
    );
    let full = format!("{head} {}", p.name());
    if full.len() <= 40 {
        full
    } else {
        head
    }
}

/// A port the peer sent (`role`: the peer's), read back as the port part of its stall
/// facts. None for text that is not a port (an older peer's, or "?": it could not read).
pub(crate) fn decode_port(text: &str, role: &str) -> Option<StallFacts> {
    let mut words = text.split_whitespace();
    let port_state = match words.next()? {
        "?" => None,
        name => Some(PortState::from_name(name)),
    };
    let active_mtu = words.next()?.parse().ok();
    let path_mtu = words.next()?.parse().ok()?;
    let gid = words.next()?;
    let (index, mark) = gid.split_at(gid.len().checked_sub(1)?);
    let (device, port) = words
        .next()
        .and_then(|name| name.rsplit_once('/'))
        .and_then(|(d, p)| Some((d.to_string(), p.parse().ok()?)))
        .unwrap_or_default();
    Some(StallFacts {
        role: role.to_string(),
        device,
        port,
        now: PortNow {
            port_state,
            active_mtu,
            gid_now: if mark == "+" {
                GidNow::Same
            } else {
                GidNow::Gone
            },
        },
        path_mtu: Some(path_mtu),
        gid_index: Some(index.parse().ok()?),
        ..StallFacts::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_band_notices_round_trip_and_never_match_the_pattern() {
        for n in [InBand::Done, InBand::Interrupted { signal: 15 }] {
            assert_eq!(InBand::decode(&n.encode()), Some(n));
        }
        // A measured message of the notice's length carries the test pattern.
        let pattern: Vec<u8> = (0..LEN)
            .map(crate::traffic::pingpong::cm::pattern)
            .collect();
        assert_eq!(InBand::decode(&pattern), None);
        assert_eq!(InBand::decode(&InBand::Done.encode()[..7]), None);
    }

    #[test]
    fn a_port_fits_a_reject_and_reads_back() {
        let p = StallFacts {
            role: "server".into(),
            device: "rxe1".into(),
            port: 1,
            now: PortNow {
                port_state: Some(PortState::Active),
                active_mtu: Some(512),
                gid_now: GidNow::Same,
            },
            path_mtu: Some(1024),
            gid_index: Some(1),
            ..StallFacts::default()
        };
        let text = encode_port(&p);
        // The format the previous release sends and reads.
        assert_eq!(text, "ACTIVE 512 1024 1+ rxe1/1");
        assert_eq!(decode_port(&text, "server"), Some(p.clone()));
        // A long device name is left out rather than cut.
        let long = StallFacts {
            device: "mlx5_bond_0_with_a_very_long_name".into(),
            now: PortNow {
                gid_now: GidNow::Gone,
                active_mtu: None,
                ..p.now.clone()
            },
            ..p
        };
        let text = encode_port(&long);
        assert_eq!(text, "ACTIVE ? 1024 1-");
        let back = decode_port(&text, "client").unwrap();
        assert_eq!(back.now.active_mtu, None);
        assert_eq!(back.now.gid_now, GidNow::Gone);
        assert_eq!(back.name(), "its port");
        assert_eq!(back.role, "client");
        assert_eq!(decode_port("no run", "client"), None);
        assert_eq!(decode_port("?", "client"), None);
    }
}
