//! Pure parsers for sysfs attribute text. No I/O here, so every format is tested from a
//! table of real strings. Each parser takes the file's text with the newline trimmed and
//! returns None (or an `Other` catch-all) rather than failing on something unexpected.

use std::cmp::Ordering;

use crate::model::device::{GidType, Guid, LinkLayer, NodeType, PhysState, PortState, Rate};

/// "4: ACTIVE" → (Some(4), "ACTIVE"). Text without a number gives (None, text).
pub fn numbered(text: &str) -> (Option<u32>, &str) {
    match text.split_once(':') {
        Some((num, label)) => match num.trim().parse::<u32>() {
            Ok(n) => (Some(n), label.trim()),
            Err(_) => (None, text.trim()),
        },
        None => (None, text.trim()),
    }
}

/// `ports/N/state`; the number decides (the label differs between drivers and kernels).
pub fn port_state(text: &str) -> PortState {
    PortState::from_sysfs(text)
}

/// `ports/N/phys_state`: "5: LinkUp", "2: Polling", "3: Disabled".
pub fn phys_state(text: &str) -> PhysState {
    numbered(text)
        .0
        .and_then(PhysState::from_number)
        .unwrap_or_else(|| PhysState::Other(text.trim().to_string()))
}

/// `class/net/NETDEV/flags` ("0x1003") → IFF_UP.
pub fn admin_up(text: &str) -> Option<bool> {
    hex_u32(text).map(|f| f & 0x1 != 0)
}

/// `node_type`: "1: CA". Numbers are the kernel's `enum rdma_node_type`.
pub fn node_type(text: &str) -> NodeType {
    match numbered(text).0 {
        Some(1) => NodeType::Ca,
        Some(2) => NodeType::Switch,
        Some(3) => NodeType::Router,
        Some(4) => NodeType::Rnic,
        Some(5) => NodeType::Usnic,
        Some(6) => NodeType::UsnicUdp,
        Some(7) => NodeType::Unspecified,
        _ => NodeType::Other(text.trim().to_string()),
    }
}

pub fn link_layer(text: &str) -> LinkLayer {
    match text.trim() {
        "InfiniBand" => LinkLayer::InfiniBand,
        "Ethernet" => LinkLayer::Ethernet,
        other => LinkLayer::Other(other.to_string()),
    }
}

/// `ports/N/rate`: "100 Gb/sec (4X EDR)", "10 Gb/sec (1X FDR10)", "2.5 Gb/sec (1X SDR)",
/// "10 Gb/sec (4X)" (SDR, as older kernels write it), or a bare "40 Gb/sec". The text is kept whole; the parts are best effort.
pub fn rate(text: &str) -> Rate {
    let text = text.trim();
    let (head, paren) = match text.split_once('(') {
        Some((h, rest)) => (h.trim(), rest.strip_suffix(')').map(str::trim)),
        None => (text, None),
    };
    let gbps = head
        .strip_suffix("Gb/sec")
        .and_then(|n| n.trim().parse::<f64>().ok())
        .filter(|g| g.is_finite() && *g >= 0.0);
    let mut words = paren.unwrap_or("").split_whitespace();
    let width = words
        .next()
        .filter(|w| w.ends_with('X'))
        .map(str::to_string);
    // Kernels before 5.10 (and ibsim) write no name for SDR: "10 Gb/sec (4X)" is 4X SDR,
    // 2.5 Gb/s per lane; every faster speed carries its name.
    let speed = if width.is_some() {
        Some(words.next().unwrap_or("SDR").to_string())
    } else {
        None
    };
    Rate {
        text: text.to_string(),
        gbps,
        width,
        speed,
    }
}

/// LIDs and masks are hex in sysfs: "0x2bc" is 700. A missing prefix is accepted too.
pub fn hex_u32(text: &str) -> Option<u32> {
    let t = text.trim();
    let digits = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    if digits.is_empty() {
        return None;
    }
    u32::from_str_radix(digits, 16).ok()
}

/// A P_Key as sysfs writes it (`0xffff`).
pub fn pkey(text: &str) -> Option<u16> {
    let hex = text.trim().strip_prefix("0x")?;
    u16::from_str_radix(hex, 16).ok()
}

pub fn dec_u32(text: &str) -> Option<u32> {
    text.trim().parse().ok()
}

/// "fcc2:10ff:fefe:2b7e": four groups of up to four hex digits.
pub fn guid(text: &str) -> Option<Guid> {
    let groups: Vec<&str> = text.trim().split(':').collect();
    if groups.len() != 4 {
        return None;
    }
    let mut v: u64 = 0;
    for g in groups {
        if g.is_empty() || g.len() > 4 || !g.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        v = (v << 16) | u64::from(u16::from_str_radix(g, 16).ok()?);
    }
    Some(Guid(v))
}

/// `gid_attrs/types/N`. The kernel writes "IB/RoCE v1" for both IB and RoCE v1; the
/// port's link layer tells them apart.
pub fn gid_type(text: &str, ethernet: bool) -> GidType {
    match text.trim() {
        "IB/RoCE v1" if ethernet => GidType::RoceV1,
        "IB/RoCE v1" | "IB" => GidType::Ib,
        "RoCE v1" => GidType::RoceV1,
        "RoCE v2" => GidType::RoceV2,
        other => GidType::Other(other.to_string()),
    }
}

/// Text attribute: trimmed, and None when empty (rxe's fw_ver is an empty line).
pub fn text(raw: &str) -> Option<String> {
    let t = raw.trim();
    (!t.is_empty()).then(|| t.to_string())
}

/// Order device names as people count: mlx5_2 before mlx5_10.
pub fn natural_cmp(a: &str, b: &str) -> Ordering {
    let (mut a, mut b) = (a.as_bytes(), b.as_bytes());
    loop {
        match (a.first(), b.first()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(x), Some(y)) if x.is_ascii_digit() && y.is_ascii_digit() => {
                let na = a.iter().take_while(|c| c.is_ascii_digit()).count();
                let nb = b.iter().take_while(|c| c.is_ascii_digit()).count();
                let (da, db) = (trim_zeros(&a[..na]), trim_zeros(&b[..nb]));
                let ord = da.len().cmp(&db.len()).then_with(|| da.cmp(db));
                if ord != Ordering::Equal {
                    return ord;
                }
                a = &a[na..];
                b = &b[nb..];
            }
            (Some(x), Some(y)) => {
                if x != y {
                    return x.cmp(y);
                }
                a = &a[1..];
                b = &b[1..];
            }
        }
    }
}

fn trim_zeros(d: &[u8]) -> &[u8] {
    let n = d.iter().take_while(|c| **c == b'0').count();
    &d[n..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbered_forms() {
        let cases = [
            ("4: ACTIVE", (Some(4), "ACTIVE")),
            ("5: LinkUp\n", (Some(5), "LinkUp")),
            ("1: CA", (Some(1), "CA")),
            ("ACTIVE", (None, "ACTIVE")),
            ("x: y", (None, "x: y")),
            ("", (None, "")),
        ];
        for (text, want) in cases {
            assert_eq!(numbered(text), want, "{text:?}");
        }
    }

    #[test]
    fn port_states() {
        let cases = [
            ("0: NOP", PortState::Nop),
            ("1: DOWN", PortState::Down),
            ("2: INIT", PortState::Init),
            ("3: ARMED", PortState::Armed),
            ("4: ACTIVE", PortState::Active),
            ("5: ACTIVE_DEFER", PortState::ActiveDefer),
            ("9: FUTURE", PortState::Other("9: FUTURE".into())),
            ("garbage", PortState::Other("garbage".into())),
        ];
        for (text, want) in cases {
            assert_eq!(port_state(text), want, "{text:?}");
        }
    }

    #[test]
    fn phys_states() {
        let cases = [
            ("1: Sleep", PhysState::Sleep),
            ("2: Polling", PhysState::Polling),
            ("3: Disabled", PhysState::Disabled),
            (
                "4: PortConfigurationTraining",
                PhysState::PortConfigurationTraining,
            ),
            // prometheus/procfs's mlx5 fixture: the number wins over the label.
            ("4: ACTIVE", PhysState::PortConfigurationTraining),
            ("5: LinkUp", PhysState::LinkUp),
            ("6: LinkErrorRecovery", PhysState::LinkErrorRecovery),
            ("7: Phy Test", PhysState::PhyTest),
            ("0: ???", PhysState::Other("0: ???".into())),
        ];
        for (text, want) in cases {
            assert_eq!(phys_state(text), want, "{text:?}");
        }
    }

    #[test]
    fn node_types() {
        let cases = [
            ("1: CA", NodeType::Ca, "InfiniBand"),
            ("2: SWITCH", NodeType::Switch, "InfiniBand"),
            ("4: RNIC", NodeType::Rnic, "iWARP"),
            ("6: usNIC UDP", NodeType::UsnicUdp, "usNIC"),
            ("42: NEW", NodeType::Other("42: NEW".into()), "unknown"),
        ];
        for (text, want, transport) in cases {
            let got = node_type(text);
            assert_eq!(got, want, "{text:?}");
            assert_eq!(got.transport(), transport, "{text:?}");
        }
    }

    /// (text, Gb/s, width, speed)
    type RateCase<'a> = (&'a str, Option<f64>, Option<&'a str>, Option<&'a str>);

    #[test]
    fn rates() {
        let cases: &[RateCase] = &[
            ("100 Gb/sec (4X EDR)", Some(100.0), Some("4X"), Some("EDR")),
            (
                "10 Gb/sec (1X FDR10)",
                Some(10.0),
                Some("1X"),
                Some("FDR10"),
            ),
            ("2.5 Gb/sec (1X SDR)", Some(2.5), Some("1X"), Some("SDR")),
            ("10 Gb/sec (4X)", Some(10.0), Some("4X"), Some("SDR")),
            ("2.5 Gb/sec (1X)\n", Some(2.5), Some("1X"), Some("SDR")),
            ("40 Gb/sec (4X QDR)\n", Some(40.0), Some("4X"), Some("QDR")),
            ("200 Gb/sec (2X HDR)", Some(200.0), Some("2X"), Some("HDR")),
            ("40 Gb/sec", Some(40.0), None, None),
            ("fast", None, None, None),
            ("", None, None, None),
        ];
        for (text, gbps, width, speed) in cases {
            let r = rate(text);
            assert_eq!(r.gbps, *gbps, "{text:?}");
            assert_eq!(r.width.as_deref(), *width, "{text:?}");
            assert_eq!(r.speed.as_deref(), *speed, "{text:?}");
            assert_eq!(r.text, text.trim());
        }
    }

    #[test]
    fn hex_numbers() {
        let cases = [
            ("0x2bc", Some(700)),
            ("0x0", Some(0)),
            ("0x1\n", Some(1)),
            ("0x00010000", Some(0x10000)),
            ("0xa651e84a", Some(0xa651_e84a)),
            ("2bc", Some(700)),
            ("0x", None),
            ("", None),
            ("0xzz", None),
            ("0x100000000", None),
        ];
        for (text, want) in cases {
            assert_eq!(hex_u32(text), want, "{text:?}");
        }
    }

    #[test]
    fn guids() {
        let cases = [
            ("fcc2:10ff:fefe:2b7e", Some(0xfcc2_10ff_fefe_2b7e)),
            ("0a7f:bc12:45ef:d23b\n", Some(0x0a7f_bc12_45ef_d23b)),
            ("0:0:0:1", Some(1)),
            ("fcc2:10ff:fefe", None),
            ("fcc2:10ff:fefe:2b7e:0000", None),
            ("fcc2:10ff:fefe:2b7g", None),
            ("fcc2:10ff:fefe:12345", None),
            ("", None),
        ];
        for (text, want) in cases {
            assert_eq!(guid(text).map(|g| g.0), want, "{text:?}");
        }
        assert_eq!(
            guid("0a7f:bc12:45ef:d23b").unwrap().to_string(),
            "0a7f:bc12:45ef:d23b"
        );
    }

    #[test]
    fn link_layers_and_gid_types() {
        assert_eq!(link_layer("InfiniBand\n"), LinkLayer::InfiniBand);
        assert_eq!(link_layer("Ethernet"), LinkLayer::Ethernet);
        assert_eq!(link_layer("OmniPath"), LinkLayer::Other("OmniPath".into()));
        let cases = [
            ("IB/RoCE v1", true, GidType::RoceV1),
            ("IB/RoCE v1", false, GidType::Ib),
            ("RoCE v2", true, GidType::RoceV2),
            ("RoCE v2\n", false, GidType::RoceV2),
            ("RoCE v3", true, GidType::Other("RoCE v3".into())),
        ];
        for (text, eth, want) in cases {
            assert_eq!(gid_type(text, eth), want, "{text:?} eth={eth}");
        }
    }

    #[test]
    fn text_and_ordering() {
        assert_eq!(text("\n"), None);
        assert_eq!(text(" 14.28.2006\n"), Some("14.28.2006".into()));
        let mut names = vec![
            "mlx5_10", "mlx5_2", "rxe1", "hfi1_0", "mlx5_1", "rxe0", "mlx4_0",
        ];
        names.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(
            names,
            ["hfi1_0", "mlx4_0", "mlx5_1", "mlx5_2", "mlx5_10", "rxe0", "rxe1"]
        );
    }
}
