//! PCI facts for doctor's GPU path: the PCI functions of the RDMA devices and GPUs with the
//! bridges above them, their PCIe links, ACS, IOMMU group and NUMA node, and the host's
//! GPUDirect RDMA pieces (peer-memory module, NCCL). Also the pure decoder of a function's
//! configuration space (`ConfigSpace`), written from the PCI and PCIe base specifications:
//! it reads a file that may be truncated (64 bytes without root) or malformed (capability
//! loops, pointers past the end, all-ones from a device that fell off the bus) and never
//! panics; what it cannot read it reports as unreadable instead of guessing.

use std::collections::BTreeSet;
use std::fmt;

/// Capability ID of the PCI Express capability (PCI Local Bus spec, capability list).
pub const CAP_ID_PCIE: u8 = 0x10;
/// Extended capability ID of Access Control Services (PCIe base spec 7.7.11).
pub const ECAP_ID_ACS: u16 = 0x000d;
/// Where the standard header ends and the capability list may start.
const HEADER_END: usize = 0x40;
/// Where the extended configuration space (PCIe only) starts.
pub const EXT_START: usize = 0x100;

/// A PCIe link rate, by generation (Link Capabilities' "Supported Link Speeds" encoding:
/// 1 = 2.5 GT/s … 6 = 64 GT/s).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct LinkSpeed(pub u8);

impl LinkSpeed {
    /// GT/s in tenths (25 = 2.5 GT/s); None for an encoding the spec does not define.
    pub fn tenths_gts(self) -> Option<u32> {
        match self.0 {
            1 => Some(25),
            2 => Some(50),
            3 => Some(80),
            4 => Some(160),
            5 => Some(320),
            6 => Some(640),
            _ => None,
        }
    }

    /// sysfs's `current_link_speed`/`max_link_speed`: "8.0 GT/s PCIe" (kernel ≥ 5.x) or
    /// "8 GT/s" (older); None for "Unknown" or anything else.
    pub fn from_sysfs(text: &str) -> Option<LinkSpeed> {
        let mut words = text.split_whitespace();
        let number = words.next()?;
        let unit = words.next()?;
        if unit != "GT/s" {
            return None;
        }
        let gts: f64 = number.parse().ok()?;
        let tenths = (gts * 10.0).round() as u32;
        (1..=6)
            .map(LinkSpeed)
            .find(|s| s.tenths_gts() == Some(tenths))
    }
}

impl fmt::Display for LinkSpeed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.tenths_gts() {
            Some(t) if t % 10 == 0 => write!(f, "{} GT/s", t / 10),
            Some(t) => write!(f, "{}.{} GT/s", t / 10, t % 10),
            None => write!(f, "speed code {}", self.0),
        }
    }
}

/// One side of a link: its speed and width (lanes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PcieLink {
    pub speed: Option<LinkSpeed>,
    pub width: u8,
}

impl fmt::Display for PcieLink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.speed {
            Some(s) => write!(f, "{s} x{}", self.width),
            None => write!(f, "unknown speed x{}", self.width),
        }
    }
}

impl PcieLink {
    /// From a Link Capabilities or Link Status register: speed in bits 3:0, width in 9:4.
    pub fn from_register(value: u32) -> PcieLink {
        let code = (value & 0xf) as u8;
        PcieLink {
            speed: (code != 0).then_some(LinkSpeed(code)),
            width: ((value >> 4) & 0x3f) as u8,
        }
    }
}

/// The PCIe capability's Device/Port Type (bits 7:4 of its capabilities register).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortType {
    Endpoint,
    LegacyEndpoint,
    RootPort,
    SwitchUpstream,
    SwitchDownstream,
    PcieToPciBridge,
    PciToPcieBridge,
    RootComplexIntegrated,
    RootComplexEventCollector,
    Other(u8),
}

impl PortType {
    pub fn from_code(code: u8) -> PortType {
        match code {
            0 => PortType::Endpoint,
            1 => PortType::LegacyEndpoint,
            4 => PortType::RootPort,
            5 => PortType::SwitchUpstream,
            6 => PortType::SwitchDownstream,
            7 => PortType::PcieToPciBridge,
            8 => PortType::PciToPcieBridge,
            9 => PortType::RootComplexIntegrated,
            10 => PortType::RootComplexEventCollector,
            other => PortType::Other(other),
        }
    }

    /// A function whose Link registers describe the link above it (toward the root).
    pub fn is_upstream_end(self) -> bool {
        matches!(
            self,
            PortType::Endpoint
                | PortType::LegacyEndpoint
                | PortType::SwitchUpstream
                | PortType::PcieToPciBridge
        )
    }
}

/// The ACS Control register's bits (PCIe base spec, ACS Control Register).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AcsControl(pub u16);

impl AcsControl {
    const NAMES: [&'static str; 7] = [
        "SrcValid",
        "TransBlk",
        "ReqRedir",
        "CmpltRedir",
        "UpstreamFwd",
        "EgressCtrl",
        "DirectTrans",
    ];

    /// P2P Request Redirect, Completion Redirect and Egress Control: any of them sends
    /// peer-to-peer traffic up to the root complex instead of across the switch.
    pub fn redirects_p2p(self) -> bool {
        self.0 & 0b10_1100 != 0
    }

    /// The enabled bits as lspci names them (`ReqRedir+`), only those that are on.
    pub fn enabled(self) -> Vec<&'static str> {
        Self::NAMES
            .iter()
            .enumerate()
            .filter(|(bit, _)| self.0 & (1 << bit) != 0)
            .map(|(_, n)| *n)
            .collect()
    }
}

/// What the ACS extended capability says, or why it cannot be said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acs {
    /// The file ends before the extended space: without root, the kernel returns only the
    /// first 64 bytes.
    Unreadable,
    /// The extended space was read and has no ACS capability.
    Absent,
    Present {
        offset: usize,
        capability: u16,
        control: AcsControl,
    },
}

/// A capability found in the list: its ID and where it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cap {
    pub id: u8,
    pub offset: usize,
}

/// An extended capability: 16-bit ID, 4-bit version, where it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExtCap {
    pub id: u16,
    pub version: u8,
    pub offset: usize,
}

/// A configuration space file as read (any length).
#[derive(Debug, Clone, Copy)]
pub struct ConfigSpace<'a> {
    bytes: &'a [u8],
}

impl<'a> ConfigSpace<'a> {
    pub fn new(bytes: &'a [u8]) -> ConfigSpace<'a> {
        ConfigSpace { bytes }
    }

    fn u8_at(&self, at: usize) -> Option<u8> {
        self.bytes.get(at).copied()
    }

    fn u16_at(&self, at: usize) -> Option<u16> {
        let b = self.bytes.get(at..at.checked_add(2)?)?;
        Some(u16::from_le_bytes([b[0], b[1]]))
    }

    fn u32_at(&self, at: usize) -> Option<u32> {
        let b = self.bytes.get(at..at.checked_add(4)?)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// The capability list from the pointer at 0x34, and whether it ran past the end of the
    /// file (a short read: without root the rest is not readable). A pointer into the
    /// header, one seen before (a loop) or ID 0xff (all-ones) ends the walk.
    pub fn capabilities(&self) -> (Vec<Cap>, bool) {
        let mut caps = Vec::new();
        // Status register bit 4: the function has a capability list.
        match self.u16_at(0x06) {
            Some(status) if status != 0xffff && status & 0x10 != 0 => {}
            Some(_) => return (caps, false),
            None => return (caps, true),
        }
        let Some(mut at) = self.u8_at(0x34).map(|p| (p & 0xfc) as usize) else {
            return (caps, true);
        };
        let mut seen = BTreeSet::new();
        while at >= HEADER_END && seen.insert(at) {
            let (Some(id), Some(next)) = (self.u8_at(at), self.u8_at(at + 1)) else {
                return (caps, true);
            };
            if id == 0xff {
                break;
            }
            caps.push(Cap { id, offset: at });
            at = (next & 0xfc) as usize;
        }
        (caps, false)
    }

    /// The extended capabilities from 0x100, or None when the file ends before them. A
    /// header of 0 (no extended capability) or all-ones, ID 0xffff, a pointer back into
    /// the standard space or a loop ends the walk.
    pub fn extended_capabilities(&self) -> Option<Vec<ExtCap>> {
        let mut caps = Vec::new();
        let mut at = EXT_START;
        self.u32_at(EXT_START)?;
        let mut seen = BTreeSet::new();
        while at >= EXT_START && seen.insert(at) {
            let Some(header) = self.u32_at(at) else { break };
            let id = (header & 0xffff) as u16;
            if header == 0 || id == 0xffff {
                break;
            }
            caps.push(ExtCap {
                id,
                version: ((header >> 16) & 0xf) as u8,
                offset: at,
            });
            at = ((header >> 20) & 0xffc) as usize;
        }
        Some(caps)
    }

    fn pcie_cap(&self) -> Option<usize> {
        let (caps, _) = self.capabilities();
        caps.iter().find(|c| c.id == CAP_ID_PCIE).map(|c| c.offset)
    }

    pub fn port_type(&self) -> Option<PortType> {
        let at = self.pcie_cap()?;
        self.u16_at(at + 2)
            .map(|v| PortType::from_code(((v >> 4) & 0xf) as u8))
    }

    /// Link Capabilities (PCIe capability + 0x0c): the most the function supports.
    pub fn link_capabilities(&self) -> Option<PcieLink> {
        let at = self.pcie_cap()?;
        self.u32_at(at + 0x0c).map(PcieLink::from_register)
    }

    /// Link Status (PCIe capability + 0x12): what the link trained to.
    pub fn link_status(&self) -> Option<PcieLink> {
        let at = self.pcie_cap()?;
        self.u16_at(at + 0x12)
            .map(|v| PcieLink::from_register(u32::from(v)))
    }

    pub fn acs(&self) -> Acs {
        let Some(caps) = self.extended_capabilities() else {
            return Acs::Unreadable;
        };
        let Some(cap) = caps.iter().find(|c| c.id == ECAP_ID_ACS) else {
            return Acs::Absent;
        };
        match (self.u16_at(cap.offset + 4), self.u16_at(cap.offset + 6)) {
            (Some(capability), Some(control)) => Acs::Present {
                offset: cap.offset,
                capability,
                control: AcsControl(control),
            },
            _ => Acs::Unreadable,
        }
    }

    /// Everything doctor keeps of the file.
    pub fn decode(&self) -> ConfigFacts {
        let (caps, truncated) = self.capabilities();
        ConfigFacts {
            len: self.bytes.len(),
            caps: caps.iter().map(|c| c.id).collect(),
            caps_truncated: truncated,
            port_type: self.port_type(),
            link_capabilities: self.link_capabilities(),
            link_status: self.link_status(),
            acs: self.acs(),
        }
    }
}

/// What doctor keeps of a configuration space file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigFacts {
    /// Bytes the file gave: 64 without root, 256 conventional PCI, 4096 PCIe.
    pub len: usize,
    /// The capability IDs in list order.
    pub caps: Vec<u8>,
    /// The list pointed past what could be read.
    pub caps_truncated: bool,
    pub port_type: Option<PortType>,
    pub link_capabilities: Option<PcieLink>,
    pub link_status: Option<PcieLink>,
    pub acs: Acs,
}

/// One PCI function as sysfs shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PciFunction {
    /// `0000:41:00.0`.
    pub bdf: String,
    /// The 24-bit class code (`0x030200`).
    pub class: Option<u32>,
    pub vendor: Option<u16>,
    pub device: Option<u16>,
    /// `numa_node`; None when absent or -1 (no affinity reported).
    pub numa_node: Option<u32>,
    pub local_cpulist: Option<String>,
    /// sysfs `current_link_speed`/`current_link_width`.
    pub current_link: Option<PcieLink>,
    /// sysfs `max_link_speed`/`max_link_width`.
    pub max_link: Option<PcieLink>,
    /// The decoded `config` file; None when it could not be read at all.
    pub config: Option<ConfigFacts>,
    /// `iommu_group`'s number and its `type` (identity, DMA, DMA-FQ, unmanaged, blocked).
    pub iommu_group: Option<String>,
    pub iommu_type: Option<String>,
    /// The bound driver's name.
    pub driver: Option<String>,
}

impl PciFunction {
    /// Class 0x03 (display) from NVIDIA or AMD, or 0x12 (processing accelerator).
    pub fn is_gpu(&self) -> bool {
        let Some(class) = self.class else {
            return false;
        };
        let base = class >> 16;
        (base == 0x03 && matches!(self.vendor, Some(0x10de) | Some(0x1002))) || base == 0x12
    }
}

/// A function and the bridges above it, from the root port down.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PciPath {
    /// The host bridge's directory (`pci0000:00`): one root complex.
    pub root: String,
    pub bridges: Vec<PciFunction>,
    pub function: PciFunction,
}

/// An RDMA device's PCI function and path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HcaPath {
    pub name: String,
    /// Its first port, for `UCX_NET_DEVICES=dev:port`.
    pub port: u32,
    pub path: PciPath,
}

/// The host's IOMMU and GPUDirect RDMA pieces.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GpuDirect {
    /// `class/iommu`'s entries (dmar0, ivhd0): an IOMMU the kernel drives.
    pub iommus: Vec<String>,
    /// /proc/cmdline (a captured tree's with `--procfs`); None when not read.
    pub cmdline: Option<String>,
    /// `kernel/iommu_groups/N/type` under the sysfs root, by group number: the mode of every
    /// group, which decides when the HCAs' and GPUs' own `iommu_group` links are missing.
    pub group_types: Vec<(String, String)>,
    /// Which of `nvidia_peermem` and `nv_peer_mem` `module/` lists.
    pub peer_modules: Vec<String>,
    /// `kernel/mm/memory_peers`' entries; None when the directory does not exist (a kernel
    /// without the peer-memory API).
    pub memory_peers: Option<Vec<String>>,
    /// Files of /etc/modules-load.d that name a peer-memory module; None for a captured
    /// tree.
    pub modules_load: Option<Vec<String>>,
    /// The running kernel's release; None for a captured tree.
    pub kernel: Option<String>,
    /// Whether /boot/config-RELEASE sets CONFIG_DMA_SHARED_BUFFER (DMA-BUF, which RDMA's
    /// dmabuf memory registration needs); None when that file is not readable.
    pub dmabuf_config: Option<bool>,
    /// A libnccl.so.2.X.Y found in the standard library directories: (version, path).
    pub nccl: Option<((u32, u32, u32), String)>,
}

/// doctor's PCI facts: empty (no finding) when no RDMA device is a PCI function.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PciFacts {
    pub hcas: Vec<HcaPath>,
    pub gpus: Vec<PciPath>,
    pub gpudirect: GpuDirect,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 4096-byte PCIe config space: status with the capability bit, the PCIe capability
    /// at 0x40 (type `port`, LnkCap and LnkSta as given), then the extended list.
    fn pcie_config(port: u8, lnkcap: u32, lnksta: u16) -> Vec<u8> {
        let mut c = vec![0u8; 4096];
        c[0..2].copy_from_slice(&0x15b3u16.to_le_bytes());
        c[0x06] = 0x10;
        c[0x34] = 0x40;
        // Power management at 0x40 → PCIe at 0x60 → MSI-X at 0x9c → end.
        c[0x40] = 0x01;
        c[0x41] = 0x60;
        c[0x60] = CAP_ID_PCIE;
        c[0x61] = 0x9c;
        c[0x62..0x64].copy_from_slice(&(u16::from(port) << 4 | 2).to_le_bytes());
        c[0x6c..0x70].copy_from_slice(&lnkcap.to_le_bytes());
        c[0x72..0x74].copy_from_slice(&lnksta.to_le_bytes());
        c[0x9c] = 0x11;
        c[0x9d] = 0x00;
        c
    }

    fn put_ext(c: &mut [u8], at: usize, id: u16, version: u8, next: usize) {
        let header = u32::from(id) | u32::from(version) << 16 | (next as u32) << 20;
        c[at..at + 4].copy_from_slice(&header.to_le_bytes());
    }

    #[test]
    fn link_registers_decode_as_lspci_prints_them() {
        // LnkCap: 16 GT/s x16; LnkSta: 8 GT/s x8.
        let c = pcie_config(0, 0x0000_0104, 0x1083);
        let cfg = ConfigSpace::new(&c);
        let cap = cfg.link_capabilities().unwrap();
        let sta = cfg.link_status().unwrap();
        assert_eq!(cap.to_string(), "16 GT/s x16");
        assert_eq!(sta.to_string(), "8 GT/s x8");
        assert_eq!(cfg.port_type(), Some(PortType::Endpoint));
        assert_eq!(
            cfg.capabilities()
                .0
                .iter()
                .map(|c| c.id)
                .collect::<Vec<_>>(),
            [0x01, 0x10, 0x11]
        );
        assert_eq!(LinkSpeed(1).to_string(), "2.5 GT/s");
    }

    #[test]
    fn acs_is_found_down_the_extended_list() {
        let mut c = pcie_config(6, 0x0000_0104, 0x0104);
        // AER at 0x100 → ACS at 0x148 → end.
        put_ext(&mut c, 0x100, 0x0001, 2, 0x148);
        put_ext(&mut c, 0x148, ECAP_ID_ACS, 1, 0);
        c[0x14c..0x14e].copy_from_slice(&0x005fu16.to_le_bytes());
        c[0x14e..0x150].copy_from_slice(&0x001du16.to_le_bytes());
        let cfg = ConfigSpace::new(&c);
        assert_eq!(cfg.port_type(), Some(PortType::SwitchDownstream));
        let ext = cfg.extended_capabilities().unwrap();
        assert_eq!(
            ext.iter().map(|e| (e.id, e.version)).collect::<Vec<_>>(),
            [(0x0001, 2), (ECAP_ID_ACS, 1)]
        );
        let Acs::Present {
            offset, control, ..
        } = cfg.acs()
        else {
            panic!("{:?}", cfg.acs())
        };
        assert_eq!(offset, 0x148);
        assert!(control.redirects_p2p());
        assert_eq!(
            control.enabled(),
            ["SrcValid", "ReqRedir", "CmpltRedir", "UpstreamFwd"]
        );
        // Control cleared (setpci ECAP_ACS+6.w=0000): nothing redirects.
        c[0x14e] = 0;
        let Acs::Present { control, .. } = ConfigSpace::new(&c).acs() else {
            panic!()
        };
        assert!(!control.redirects_p2p() && control.enabled().is_empty());
        // SrcValid alone (what some firmware leaves on) does not redirect P2P.
        assert!(!AcsControl(0x0001).redirects_p2p());
    }

    #[test]
    fn a_short_read_is_unreadable_not_absent() {
        let c = pcie_config(0, 0x0000_0104, 0x1083);
        // Without root the kernel returns 64 bytes: the list points past them.
        let cfg = ConfigSpace::new(&c[..64]);
        let (caps, truncated) = cfg.capabilities();
        assert!(caps.is_empty() && truncated);
        assert_eq!(cfg.link_status(), None);
        assert_eq!(cfg.acs(), Acs::Unreadable);
        // 256 bytes: the standard space is whole, and there is no extended space.
        let cfg = ConfigSpace::new(&c[..256]);
        assert_eq!(cfg.link_status().unwrap().to_string(), "8 GT/s x8");
        assert_eq!(cfg.acs(), Acs::Unreadable);
        assert_eq!(ConfigSpace::new(&c).acs(), Acs::Absent);
        assert_eq!(ConfigSpace::new(&[]).decode().caps, Vec::<u8>::new());
    }

    #[test]
    fn malformed_lists_end_instead_of_looping() {
        let mut c = pcie_config(0, 0x0000_0104, 0x1083);
        // The last capability points back at the first: a loop.
        c[0x9d] = 0x40;
        assert_eq!(ConfigSpace::new(&c).capabilities().0.len(), 3);
        // A pointer into the header ends the list.
        c[0x41] = 0x20;
        assert_eq!(ConfigSpace::new(&c).capabilities().0.len(), 1);
        // Extended: a self-loop, and an ID 0xffff (a device that fell off the bus).
        put_ext(&mut c, 0x100, 0x0001, 1, 0x100);
        assert_eq!(
            ConfigSpace::new(&c).extended_capabilities().unwrap().len(),
            1
        );
        put_ext(&mut c, 0x100, 0xffff, 0xf, 0xffc);
        assert_eq!(
            ConfigSpace::new(&c).extended_capabilities().unwrap().len(),
            0
        );
        // A next pointer past the end of a 260-byte file.
        let mut short = c[..0x104].to_vec();
        put_ext(&mut short, 0x100, 0x0001, 1, 0xffc);
        assert_eq!(ConfigSpace::new(&short).acs(), Acs::Absent);
        // All-ones: no capability list.
        let ones = vec![0xffu8; 4096];
        assert!(ConfigSpace::new(&ones).decode().caps.is_empty());
    }

    /// A small xorshift generator: the same buffers on every run.
    fn xorshift(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    #[test]
    fn random_bytes_never_panic() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for round in 0..3000 {
            let len = match round % 4 {
                0 => (xorshift(&mut state) % 64) as usize,
                1 => 64 + (xorshift(&mut state) % 200) as usize,
                2 => 256 + (xorshift(&mut state) % 64) as usize,
                _ => 4096,
            };
            let mut bytes: Vec<u8> = (0..len).map(|_| xorshift(&mut state) as u8).collect();
            // Half the time make the lists likely to be walked: capability bit, a pointer
            // past the header, a plausible extended header.
            if round % 2 == 0 && len > 0x104 {
                bytes[0x06] |= 0x10;
                bytes[0x34] |= 0x40;
                bytes[0x101] &= 0x7f;
            }
            let cfg = ConfigSpace::new(&bytes);
            let facts = cfg.decode();
            assert_eq!(facts.len, len);
            // The walks are bounded by the space they index.
            assert!(facts.caps.len() <= 48, "{}", facts.caps.len());
            if let Some(ext) = cfg.extended_capabilities() {
                assert!(ext.len() <= (4096 - 256) / 4);
            }
        }
    }

    #[test]
    fn sysfs_speeds_of_old_and_new_kernels() {
        assert_eq!(LinkSpeed::from_sysfs("8.0 GT/s PCIe"), Some(LinkSpeed(3)));
        assert_eq!(LinkSpeed::from_sysfs("2.5 GT/s"), Some(LinkSpeed(1)));
        assert_eq!(LinkSpeed::from_sysfs("16 GT/s"), Some(LinkSpeed(4)));
        assert_eq!(LinkSpeed::from_sysfs("Unknown"), None);
        assert_eq!(LinkSpeed::from_sysfs("3 GT/s"), None);
    }

    #[test]
    fn gpus_are_nvidia_or_amd_display_or_accelerators() {
        let f = |class, vendor| PciFunction {
            class: Some(class),
            vendor: Some(vendor),
            ..PciFunction::default()
        };
        assert!(f(0x030200, 0x10de).is_gpu());
        assert!(f(0x038000, 0x1002).is_gpu());
        assert!(f(0x120000, 0x1da3).is_gpu());
        assert!(!f(0x030000, 0x1234).is_gpu(), "qemu's VGA is no GPU");
        assert!(!f(0x020700, 0x15b3).is_gpu());
    }
}
