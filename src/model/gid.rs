//! The 128-bit GID and the text forms people paste: sysfs (`fe80:0000:...`), IPv6
//! (`::ffff:10.11.11.251`), colon-separated bytes (`00:00:...:0a:0b`), and the 32 hex
//! digits that ibv_rc_pingpong puts on the wire.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use serde::{Serialize, Serializer};

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Gid(pub [u8; 16]);

/// Why a text is not a GID; the message lists the accepted forms.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "'{text}' is not a GID; accepted forms: sysfs 'fe80:0000:0000:0000:0202:c9ff:fe00:0001', \
     IPv6 '::ffff:10.11.11.251', bytes '00:00:...:0a:0b:0b:fb' (16 pairs), \
     or 32 hex digits '00000000000000000000ffff0a0b0bfb'"
)]
pub struct GidParseError {
    pub text: String,
}

/// What kind of address a GID holds, in the order a reader cares about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum GidKind {
    Zero,
    Ipv4Mapped,
    LinkLocal,
    /// `::1`: no port carries it.
    Loopback,
    Multicast,
    Global,
}

impl Gid {
    pub const ZERO: Gid = Gid([0; 16]);

    pub fn parse(text: &str) -> Result<Gid, GidParseError> {
        let t = text.trim();
        let err = || GidParseError {
            text: text.to_string(),
        };
        // 32 hex digits, the ibv_rc_pingpong wire form.
        if t.len() == 32 && t.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Ok(Gid(u128::from_str_radix(t, 16)
                .map_err(|_| err())?
                .to_be_bytes()));
        }
        let parts: Vec<&str> = t.split(':').collect();
        // 16 colon-separated bytes, as ibv demos log them.
        if parts.len() == 16 {
            let mut raw = [0u8; 16];
            for (slot, part) in raw.iter_mut().zip(&parts) {
                if part.is_empty() || part.len() > 2 || !part.bytes().all(|b| b.is_ascii_hexdigit())
                {
                    return Err(err());
                }
                *slot = u8::from_str_radix(part, 16).map_err(|_| err())?;
            }
            return Ok(Gid(raw));
        }
        // sysfs form and every IPv6 spelling (the sysfs form is a full IPv6 address).
        t.parse::<Ipv6Addr>()
            .map(|a| Gid(a.octets()))
            .map_err(|_| err())
    }

    /// The GID a RoCE v2 port gets for this address.
    pub fn from_ip(ip: IpAddr) -> Gid {
        match ip {
            IpAddr::V4(v4) => Gid(v4.to_ipv6_mapped().octets()),
            IpAddr::V6(v6) => Gid(v6.octets()),
        }
    }

    pub fn is_zero(&self) -> bool {
        self.0 == [0; 16]
    }

    /// `::ffff:0:0/96`, checked over all 96 prefix bits (show_gids only looks at one group).
    pub fn ipv4(&self) -> Option<Ipv4Addr> {
        let b = &self.0;
        (b[..10] == [0; 10] && b[10] == 0xff && b[11] == 0xff)
            .then(|| Ipv4Addr::new(b[12], b[13], b[14], b[15]))
    }

    pub fn ipv6(&self) -> Ipv6Addr {
        Ipv6Addr::from(self.0)
    }

    /// The address the GID encodes: IPv4 when mapped, else IPv6.
    pub fn ip(&self) -> IpAddr {
        match self.ipv4() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(self.ipv6()),
        }
    }

    /// fe80::/10, the whole link-local range: a port derives fe80::/64 from its MAC (and
    /// it is IB's default GID prefix), but `fe80:0:0:1::` never leaves the link either.
    pub fn is_link_local(&self) -> bool {
        self.0[0] == 0xfe && self.0[1] & 0xc0 == 0x80
    }

    pub fn kind(&self) -> GidKind {
        if self.is_zero() {
            GidKind::Zero
        } else if self.ipv4().is_some() {
            GidKind::Ipv4Mapped
        } else if self.is_link_local() {
            GidKind::LinkLocal
        } else if self.ipv6() == Ipv6Addr::LOCALHOST {
            GidKind::Loopback
        } else if self.0[0] == 0xff {
            GidKind::Multicast
        } else {
            GidKind::Global
        }
    }

    /// The MAC address of an EUI-64 interface id (`xx:xx:xx:ff:fe:xx:xx:xx`, U/L bit flipped).
    pub fn eui64_mac(&self) -> Option<[u8; 6]> {
        let id = &self.0[8..];
        (id[3] == 0xff && id[4] == 0xfe).then(|| [id[0] ^ 0x02, id[1], id[2], id[5], id[6], id[7]])
    }

    /// The sysfs spelling: eight groups of four hex digits.
    pub fn sysfs_form(&self) -> String {
        self.to_string()
    }

    /// ibv_rc_pingpong's wire form: 32 hex digits.
    pub fn wire_form(&self) -> String {
        format!("{:032x}", u128::from_be_bytes(self.0))
    }
}

impl fmt::Display for Gid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, pair) in self.0.chunks(2).enumerate() {
            if i > 0 {
                f.write_str(":")?;
            }
            write!(f, "{:02x}{:02x}", pair[0], pair[1])?;
        }
        Ok(())
    }
}

impl fmt::Debug for Gid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Gid({self})")
    }
}

impl Serialize for Gid {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl std::str::FromStr for Gid {
    type Err = GidParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Gid::parse(s)
    }
}

/// fe80::/10, and 169.254.0.0/16 when IPv4-mapped: addresses that never leave the link.
pub fn is_link_local(gid: &Gid) -> bool {
    match gid.ipv4() {
        Some(v4) => v4.octets()[..2] == [169, 254],
        None => gid.0[0] == 0xfe && gid.0[1] & 0xc0 == 0x80,
    }
}

/// Does `addr/prefix_len` contain `ip`? Host routes (/32, /128) hold only themselves.
pub fn prefix_holds(addr: IpAddr, prefix_len: u8, ip: IpAddr) -> bool {
    match (addr, ip) {
        (IpAddr::V4(a), IpAddr::V4(b)) => {
            let bits = u32::from(prefix_len.min(32));
            let mask = if bits == 0 {
                0
            } else {
                u32::MAX << (32 - bits)
            };
            u32::from(a) & mask == u32::from(b) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(b)) => {
            let bits = u32::from(prefix_len.min(128));
            let mask = if bits == 0 {
                0
            } else {
                u128::MAX << (128 - bits)
            };
            u128::from(a) & mask == u128::from(b) & mask
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEED: &str = "0000:0000:0000:0000:0000:ffff:0a0b:0bfb";

    #[test]
    fn seed_example_is_10_11_11_251() {
        let g = Gid::parse(SEED).unwrap();
        assert_eq!(g.ipv4(), Some(Ipv4Addr::new(10, 11, 11, 251)));
        assert_eq!(g.to_string(), SEED);
    }

    #[test]
    fn every_pasted_form_parses_to_the_same_gid() {
        let want = Gid::parse(SEED).unwrap();
        for text in [
            SEED,
            "::ffff:10.11.11.251",
            "::ffff:a0b:bfb",
            "00:00:00:00:00:00:00:00:00:00:ff:ff:0a:0b:0b:fb",
            "00000000000000000000ffff0a0b0bfb",
            "  0000:0000:0000:0000:0000:FFFF:0A0B:0BFB\n",
        ] {
            assert_eq!(Gid::parse(text), Ok(want), "{text:?}");
        }
    }

    #[test]
    fn garbage_is_rejected_with_the_accepted_forms() {
        for text in [
            "",
            "hello",
            "10.11.11.251",
            "0000:0000:0000:0000:0000:ffff:0a0b",
            "00000000000000000000ffff0a0b0bf",
            "00000000000000000000ffff0a0b0bfbb",
            "00:00:00:00:00:00:00:00:00:00:ff:ff:0a:0b:0b:xyz",
            "00:00:00:00:00:00:00:00:00:00:ff:ff:0a:0b:0b:",
            "g0000000000000000000ffff0a0b0bfb",
        ] {
            let err = Gid::parse(text).unwrap_err();
            assert!(err.to_string().contains("accepted forms"), "{text:?}");
        }
    }

    #[test]
    fn kinds() {
        let cases = [
            ("::", GidKind::Zero),
            ("::ffff:192.168.77.1", GidKind::Ipv4Mapped),
            ("fe80::5054:ff:fe12:3456", GidKind::LinkLocal),
            // All of fe80::/10 is link-local, not only fe80::/64.
            ("fe80:0:0:1::5", GidKind::LinkLocal),
            ("febf::1", GidKind::LinkLocal),
            ("fec0::1", GidKind::Global),
            ("::1", GidKind::Loopback),
            ("ff02::1", GidKind::Multicast),
            ("2001:db8:77::1", GidKind::Global),
            // ffff in the wrong group is not IPv4-mapped.
            ("0000:0000:0000:0001:0000:ffff:0a0b:0bfb", GidKind::Global),
        ];
        for (text, kind) in cases {
            assert_eq!(Gid::parse(text).unwrap().kind(), kind, "{text}");
        }
    }

    #[test]
    fn eui64_mac_and_wire_form() {
        let g = Gid::parse("fe80:0000:0000:0000:5054:00ff:fe12:3456").unwrap();
        assert_eq!(g.eui64_mac(), Some([0x52, 0x54, 0x00, 0x12, 0x34, 0x56]));
        assert_eq!(
            Gid::parse(SEED).unwrap().wire_form(),
            "00000000000000000000ffff0a0b0bfb"
        );
        assert_eq!(
            Gid::from_ip("10.11.11.251".parse().unwrap()).to_string(),
            SEED
        );
    }
}
