//! The config space decoder against `lspci -vvv` (pciutils) on every PCI function of the
//! host the tests run on: capability offsets and IDs, extended capability offsets and
//! versions, LnkCap and LnkSta speed and width, and ACS Control. Run as root, config space is
//! whole and both read everything; without root lspci prints `<access denied>` and the
//! decoder must say the list is truncated. Ignored by a plain `cargo test`; scripts/test runs
//! it (`--include-ignored`), as does tests/vm/pci-parity's guest. A host without lspci fails
//! the test: install pciutils (scripts/setup does).

use std::fs;
use std::process::Command;

use crate::model::pci::{Acs, ConfigSpace};

/// lspci's names of the capability IDs, where rdmactl's assertion is the name's start.
const CAP_NAMES: &[(u8, &str)] = &[
    (0x01, "Power Management"),
    (0x03, "Vital Product Data"),
    (0x05, "MSI:"),
    (0x09, "Vendor Specific Information"),
    (0x0d, "Subsystem"),
    (0x10, "Express"),
    (0x11, "MSI-X"),
    (0x13, "PCI Advanced Features"),
];
const EXT_NAMES: &[(u16, &str)] = &[
    (0x0001, "Advanced Error Reporting"),
    (0x0003, "Device Serial Number"),
    (0x000d, "Access Control Services"),
    (0x000e, "Alternative Routing-ID Interpretation"),
    (0x0010, "Single Root I/O Virtualization"),
];

/// `Speed 8GT/s` and `Width x16` out of an LnkCap/LnkSta line: ("8GT/s", 16).
fn lspci_link(line: &str) -> Option<(String, u8)> {
    let speed = line.split("Speed ").nth(1)?.split([',', ' ']).next()?;
    let width = line.split("Width x").nth(1)?;
    let width: String = width.chars().take_while(|c| c.is_ascii_digit()).collect();
    Some((speed.to_string(), width.parse().ok()?))
}

#[test]
#[ignore = "needs pciutils (lspci); scripts/test runs it"]
fn decoder_matches_lspci_on_this_host() {
    let functions: Vec<String> = fs::read_dir("/sys/bus/pci/devices")
        .expect("/sys/bus/pci/devices: this host has PCI devices, even a VM")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        !functions.is_empty(),
        "no PCI function in /sys/bus/pci/devices"
    );
    let (mut caps, mut ext, mut links, mut acs, mut denied) = (0, 0, 0, 0, 0);
    for bdf in &functions {
        let out = Command::new("lspci")
            .args(["-D", "-vvv", "-s", bdf])
            .output()
            .expect("lspci not found: install pciutils (scripts/setup)");
        assert!(out.status.success(), "lspci -s {bdf}: {out:?}");
        let text = String::from_utf8_lossy(&out.stdout);
        let bytes = fs::read(format!("/sys/bus/pci/devices/{bdf}/config")).unwrap();
        let cfg = ConfigSpace::new(&bytes);
        let (ours, truncated) = cfg.capabilities();
        if text.contains("Capabilities: <access denied>") {
            assert!(
                truncated,
                "{bdf}: lspci was denied, the decoder read {ours:?}"
            );
            denied += 1;
            continue;
        }
        // `Capabilities: [40] Power Management …` (standard) and `[100 v2] …` (extended).
        let mut theirs_std = Vec::new();
        let mut theirs_ext = Vec::new();
        for line in text.lines() {
            let Some(rest) = line.trim().strip_prefix("Capabilities: [") else {
                continue;
            };
            let (at, name) = rest.split_once("] ").unwrap_or((rest, ""));
            match at.split_once(" v") {
                Some((off, ver)) => theirs_ext.push((
                    usize::from_str_radix(off, 16).unwrap(),
                    ver.parse::<u8>().unwrap(),
                    name.to_string(),
                )),
                None => theirs_std.push((usize::from_str_radix(at, 16).unwrap(), name.to_string())),
            }
        }
        assert_eq!(
            ours.iter().map(|c| c.offset).collect::<Vec<_>>(),
            theirs_std.iter().map(|t| t.0).collect::<Vec<_>>(),
            "{bdf}: capability offsets\n{text}"
        );
        for (cap, (_, name)) in ours.iter().zip(&theirs_std) {
            if let Some((_, want)) = CAP_NAMES.iter().find(|(id, _)| *id == cap.id) {
                assert!(
                    name.starts_with(want),
                    "{bdf}: ID {:#04x} is {name}",
                    cap.id
                );
            }
            caps += 1;
        }
        let our_ext = cfg.extended_capabilities().unwrap_or_default();
        assert_eq!(
            our_ext
                .iter()
                .map(|c| (c.offset, c.version))
                .collect::<Vec<_>>(),
            theirs_ext.iter().map(|t| (t.0, t.1)).collect::<Vec<_>>(),
            "{bdf}: extended capabilities\n{text}"
        );
        for (cap, (_, _, name)) in our_ext.iter().zip(&theirs_ext) {
            if let Some((_, want)) = EXT_NAMES.iter().find(|(id, _)| *id == cap.id) {
                assert!(
                    name.starts_with(want),
                    "{bdf}: ID {:#06x} is {name}",
                    cap.id
                );
            }
            ext += 1;
        }
        let line_of = |key: &str| {
            text.lines()
                .find(|l| l.trim().starts_with(key))
                .map(str::to_string)
        };
        for (key, ours) in [
            ("LnkCap:", cfg.link_capabilities()),
            ("LnkSta:", cfg.link_status()),
        ] {
            let theirs = line_of(key).and_then(|l| lspci_link(&l));
            match (ours, theirs) {
                (Some(o), Some((speed, width))) => {
                    if speed.ends_with("GT/s") {
                        let o_speed = o.speed.map(|s| s.to_string().replace(' ', ""));
                        assert_eq!(o_speed.as_deref(), Some(speed.as_str()), "{bdf} {key}");
                    }
                    assert_eq!(o.width, width, "{bdf} {key}");
                    links += 1;
                }
                (None, None) => {}
                (o, t) => panic!("{bdf} {key}: decoder {o:?}, lspci {t:?}\n{text}"),
            }
        }
        if let Some(line) = line_of("ACSCtl:") {
            let Acs::Present { control, .. } = cfg.acs() else {
                panic!("{bdf}: lspci shows ACSCtl, the decoder {:?}", cfg.acs());
            };
            let plus: Vec<&str> = line
                .split_whitespace()
                .filter_map(|w| w.strip_suffix('+'))
                .collect();
            assert_eq!(control.enabled(), plus, "{bdf}: {line}");
            acs += 1;
        }
    }
    // The figures of this host, for the record (`cargo test -- --nocapture`).
    eprintln!(
        "lspci parity: {} functions, {caps} capabilities, {ext} extended, {links} link registers, \
         {acs} ACS controls, {denied} denied",
        functions.len()
    );
}
