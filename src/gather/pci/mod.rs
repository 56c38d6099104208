//! What doctor's GPU path reads: each RDMA device's PCI function (`class/infiniband/DEV/device`
//! resolved) and the bridges above it (the directories of its sysfs path up to the host
//! bridge), the GPUs of `bus/pci/devices`, each function's link, NUMA node, IOMMU group and
//! configuration space, and the GPUDirect RDMA pieces (peer-memory modules and
//! `kernel/mm/memory_peers` under the sysfs root, so a captured tree answers for its host;
//! /proc/cmdline, /etc/modules-load.d, the kernel release and libnccl only on a live host).

use std::fs;
use std::path::{Path, PathBuf};

use crate::gather::procfs;
use crate::gather::sysfs::SysfsRoot;
use crate::model::device::Device;
use crate::model::pci::{
    ConfigSpace, GpuDirect, HcaPath, LinkSpeed, PciFacts, PciFunction, PciPath, PcieLink,
};

/// The peer-memory modules: NVIDIA's current name and the old Mellanox one NCCL ≤ 2.22.3
/// looked for.
pub const PEER_MODULES: [&str; 2] = ["nvidia_peermem", "nv_peer_mem"];

const LIB_DIRS: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/usr/local/lib",
    "/usr/local/cuda/lib64",
];
const MODULES_LOAD_DIRS: &[&str] = &["/etc/modules-load.d", "/usr/lib/modules-load.d"];

/// Read the PCI facts of `devices`; empty when none is a PCI function (software devices,
/// trees captured without `devices/`). `live`: this host's /proc, /etc and libraries too;
/// `cmdline`: the kernel command line, where it was read (live, or `--procfs`'s capture).
pub fn gather(
    sysfs: &SysfsRoot,
    devices: &[Device],
    live: bool,
    cmdline: Option<String>,
) -> PciFacts {
    let root = sysfs.path();
    let hcas: Vec<HcaPath> = devices
        .iter()
        .filter_map(|d| {
            let path = pci_path(&root.join("class/infiniband").join(&d.name).join("device"))?;
            Some(HcaPath {
                name: d.name.clone(),
                port: d.ports.first().map_or(1, |p| p.number),
                path,
            })
        })
        .collect();
    if hcas.is_empty() {
        return PciFacts::default();
    }
    // Class and vendor first: a host has hundreds of functions and a handful of GPUs, and
    // only a GPU's path (every bridge's attributes and config space) is worth reading.
    let bus = root.join("bus/pci/devices");
    let gpus = list(&bus)
        .into_iter()
        .filter(|name| {
            let hex = |attr: &str| {
                crate::gather::sysfs::read_text(&bus.join(name).join(attr))
                    .ok()
                    .and_then(|s| u32::from_str_radix(s.trim().trim_start_matches("0x"), 16).ok())
            };
            PciFunction {
                class: hex("class"),
                vendor: hex("vendor").and_then(|v| u16::try_from(v).ok()),
                ..PciFunction::default()
            }
            .is_gpu()
        })
        .filter_map(|name| pci_path(&bus.join(name)))
        .collect();
    PciFacts {
        hcas,
        gpus,
        gpudirect: GpuDirect {
            cmdline,
            ..gpudirect(root, live)
        },
    }
}

/// A function's sysfs directory resolved, cut into its host bridge and the PCI functions
/// below it; None when the path is not a PCI function's.
pub fn pci_path(link: &Path) -> Option<PciPath> {
    let real = fs::canonicalize(link).ok()?;
    let parts: Vec<String> = real
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let host = parts
        .iter()
        .rposition(|p| p.starts_with("pci") && p.contains(':'))?;
    let bdfs = &parts[host + 1..];
    if bdfs.is_empty() || !bdfs.iter().all(|p| is_bdf(p)) {
        return None;
    }
    let mut dir: PathBuf = parts[..=host].iter().collect();
    let mut functions = Vec::new();
    for bdf in bdfs {
        dir.push(bdf);
        functions.push(function(&dir, bdf));
    }
    let function = functions.pop()?;
    Some(PciPath {
        root: parts[host].clone(),
        bridges: functions,
        function,
    })
}

/// `0000:41:00.0`: domain, bus, device, function in hex. The domain has four digits, or
/// more behind Intel VMD (`10000:e1:00.0`).
fn is_bdf(name: &str) -> bool {
    let hex = |s: &str, len: std::ops::RangeInclusive<usize>| {
        len.contains(&s.len()) && s.chars().all(|c| c.is_ascii_hexdigit())
    };
    let mut parts = name.split(':');
    let (Some(domain), Some(bus), Some(devfn), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let Some((dev, func)) = devfn.split_once('.') else {
        return false;
    };
    hex(domain, 4..=8) && hex(bus, 2..=2) && hex(dev, 2..=2) && hex(func, 1..=1)
}

fn function(dir: &Path, bdf: &str) -> PciFunction {
    let attr = |name: &str| {
        crate::gather::sysfs::read_text(&dir.join(name))
            .ok()
            .map(|s| s.trim().to_string())
    };
    let hex = |name: &str| {
        attr(name).and_then(|s| u32::from_str_radix(s.trim_start_matches("0x"), 16).ok())
    };
    let link = |speed: &str, width: &str| {
        let width: u8 = attr(width)?.parse().ok()?;
        Some(PcieLink {
            speed: attr(speed).and_then(|s| LinkSpeed::from_sysfs(&s)),
            width,
        })
    };
    let link_name = |name: &str| {
        fs::read_link(dir.join(name))
            .ok()
            .and_then(|l| l.file_name().map(|n| n.to_string_lossy().into_owned()))
    };
    PciFunction {
        bdf: bdf.to_string(),
        class: hex("class"),
        vendor: hex("vendor").and_then(|v| u16::try_from(v).ok()),
        device: hex("device").and_then(|v| u16::try_from(v).ok()),
        numa_node: attr("numa_node").and_then(|n| n.parse().ok()),
        local_cpulist: attr("local_cpulist"),
        current_link: link("current_link_speed", "current_link_width"),
        max_link: link("max_link_speed", "max_link_width"),
        config: crate::gather::sysfs::read_bytes(&dir.join("config"))
            .ok()
            .map(|bytes| ConfigSpace::new(&bytes).decode()),
        iommu_group: link_name("iommu_group"),
        iommu_type: attr("iommu_group/type"),
        driver: link_name("driver"),
    }
}

/// A directory's entries, sorted. Dot-files are skipped: sysfs has none, and a captured
/// tree keeps an empty directory (which git cannot store) with a `.keep` file.
pub(crate) fn list(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| !n.starts_with('.'))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

fn gpudirect(root: &Path, live: bool) -> GpuDirect {
    let peer_modules = PEER_MODULES
        .iter()
        .filter(|m| root.join("module").join(m).is_dir() || (live && procfs::module_loaded(m)))
        .map(|m| m.to_string())
        .collect();
    let peers_dir = root.join("kernel/mm/memory_peers");
    GpuDirect {
        iommus: list(&root.join("class/iommu")),
        cmdline: None,
        group_types: group_types(&root.join("kernel/iommu_groups")),
        peer_modules,
        memory_peers: peers_dir.is_dir().then(|| list(&peers_dir)),
        modules_load: live.then(modules_load),
        kernel: live.then(procfs::kernel_release).flatten(),
        dmabuf_config: if live { dmabuf_config() } else { None },
        nccl: if live { nccl() } else { None },
    }
}

/// Each `kernel/iommu_groups/N/type` (identity, DMA, DMA-FQ, ...), by group number in
/// numeric order; groups without a readable `type` (kernels before 5.11) are left out.
fn group_types(dir: &Path) -> Vec<(String, String)> {
    let mut groups: Vec<(String, String)> = list(dir)
        .into_iter()
        .filter_map(|g| {
            let t = fs::read_to_string(dir.join(&g).join("type")).ok()?;
            Some((g, t.trim().to_string()))
        })
        .filter(|(_, t)| !t.is_empty())
        .collect();
    groups.sort_by_key(|(g, _)| g.parse::<u64>().unwrap_or(u64::MAX));
    groups
}

/// Whether the running kernel's build configuration enables DMA-BUF.
fn dmabuf_config() -> Option<bool> {
    let release = procfs::kernel_release()?;
    let config = fs::read_to_string(format!("/boot/config-{release}")).ok()?;
    Some(
        config
            .lines()
            .any(|l| l == "CONFIG_DMA_SHARED_BUFFER=y" || l == "CONFIG_DMA_SHARED_BUFFER=m"),
    )
}

/// The modules-load.d files that load a peer-memory module at boot.
fn modules_load() -> Vec<String> {
    MODULES_LOAD_DIRS
        .iter()
        .flat_map(|dir| {
            list(Path::new(dir))
                .into_iter()
                .map(move |f| Path::new(dir).join(f))
        })
        .filter(|path| {
            fs::read_to_string(path).is_ok_and(|text| {
                text.lines()
                    .map(|l| l.split('#').next().unwrap_or("").trim())
                    .any(|l| PEER_MODULES.contains(&l))
            })
        })
        .map(|p| p.display().to_string())
        .collect()
}

/// The newest `libnccl.so.2.X.Y` in the standard library directories: NCCL's packages
/// install the library under its full version.
fn nccl() -> Option<((u32, u32, u32), String)> {
    LIB_DIRS
        .iter()
        .flat_map(|dir| {
            list(Path::new(dir)).into_iter().filter_map(move |f| {
                let version = nccl_version(&f)?;
                Some((version, Path::new(dir).join(f).display().to_string()))
            })
        })
        .max()
}

/// `libnccl.so.2.21.5` → (2, 21, 5).
pub fn nccl_version(file: &str) -> Option<(u32, u32, u32)> {
    let mut parts = file.strip_prefix("libnccl.so.")?.split('.');
    let v = (
        parts.next()?.parse().ok()?,
        parts.next()?.parse().ok()?,
        parts.next()?.parse().ok()?,
    );
    parts.next().is_none().then_some(v)
}

#[cfg(test)]
mod lspci_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bdf_names_and_nccl_versions() {
        assert!(is_bdf("0000:41:00.0"));
        assert!(is_bdf("10000:e1:00.0"), "behind VMD");
        assert!(!is_bdf("0000:41:00"));
        assert!(!is_bdf("0000:41:00.0.1"));
        assert!(!is_bdf("pci0000:00"));
        assert!(!is_bdf("0000:41:00.g"));
        assert_eq!(nccl_version("libnccl.so.2.21.5"), Some((2, 21, 5)));
        assert_eq!(nccl_version("libnccl.so.2"), None);
        assert_eq!(nccl_version("libnccl.so.2.21.5.bak"), None);
        assert_eq!(nccl_version("libnccl-net.so"), None);
    }
}
