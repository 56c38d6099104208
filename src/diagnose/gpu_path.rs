//! doctor's GPU path rules: the PCIe links of each RDMA device and the bridges above it,
//! the path class from each GPU to each HCA (NCCL's and `nvidia-smi topo -m`'s PIX, PXB,
//! PHB, NODE, SYS) with the best HCA per GPU, ACS on the bridges of those paths, the IOMMU
//! mode, and GPUDirect RDMA (peer-memory module, its registration, NCCL's name for it).
//! Each is a silent slowdown on a GPU cluster: nothing fails, all-reduce runs at a fraction.

use std::fmt;

use crate::model::codes;
use crate::model::diagnostic::{Diagnostic, Severity, Subject};
use crate::model::pci::{Acs, HcaPath, PciFacts, PciFunction, PciPath, PcieLink, EXT_START};

/// How far a GPU is from an HCA, best first, as NCCL and `nvidia-smi topo -m` name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum PathClass {
    /// Within one PCIe switch (or one bridge).
    Pix,
    /// Through several bridges, not the host bridge.
    Pxb,
    /// Through the host bridge (the root complex).
    Phb,
    /// Different root complexes of one NUMA node.
    Node,
    /// Across NUMA nodes (the CPU interconnect).
    Sys,
}

impl fmt::Display for PathClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PathClass::Pix => "PIX (one PCIe switch)",
            PathClass::Pxb => "PXB (several PCIe bridges)",
            PathClass::Phb => "PHB (through the root complex)",
            PathClass::Node => "NODE (another root complex of the same NUMA node)",
            PathClass::Sys => "SYS (across NUMA nodes)",
        })
    }
}

/// The class of the path between two functions, from their sysfs paths: the bridges they
/// share, else their root complexes and NUMA nodes. A NUMA node that is not reported
/// (-1, a one-node host) counts as the same node.
pub fn classify(a: &PciPath, b: &PciPath) -> PathClass {
    if a.root != b.root {
        return match (a.function.numa_node, b.function.numa_node) {
            (Some(x), Some(y)) if x != y => PathClass::Sys,
            _ => PathClass::Node,
        };
    }
    let shared = shared_bridges(a, b);
    if shared == 0 {
        return PathClass::Phb;
    }
    // Below the lowest shared bridge, a switch's downstream port on each side at most.
    if a.bridges.len() - shared <= 1 && b.bridges.len() - shared <= 1 {
        PathClass::Pix
    } else {
        PathClass::Pxb
    }
}

fn shared_bridges(a: &PciPath, b: &PciPath) -> usize {
    a.bridges
        .iter()
        .zip(&b.bridges)
        .take_while(|(x, y)| x.bdf == y.bdf)
        .count()
}

/// Every finding of the GPU path, in the order a person debugs it: the links, then (with
/// GPUs) the paths, ACS, the IOMMU and GPUDirect RDMA. None without a PCI RDMA device.
pub fn findings(pci: &PciFacts) -> Vec<Diagnostic> {
    let mut found: Vec<Diagnostic> = pci.hcas.iter().map(link_finding).collect();
    if pci.gpus.is_empty() {
        return found;
    }
    for gpu in &pci.gpus {
        let Some((best, class)) = best_hca(&pci.hcas, gpu) else {
            continue;
        };
        found.push(path_finding(&pci.hcas, gpu, best, class));
        if class <= PathClass::Pxb {
            found.push(acs_finding(gpu, best));
        }
    }
    found.push(iommu_finding(pci));
    if pci.gpus.iter().any(|g| g.function.vendor == Some(0x10de)) {
        found.extend(gpudirect_findings(pci));
    }
    found
}

/// A link between `below` (the function whose Link Status describes it) and `above`.
struct LinkEnds<'a> {
    below: &'a PciFunction,
    above: &'a PciFunction,
}

/// The links on a path: each function that is the upstream end of a link (an endpoint or
/// a switch's upstream port, from the PCIe capability when config space was readable; else
/// by position, as root port, upstream, downstream, … alternate) with the one above it.
fn links(path: &PciPath) -> Vec<LinkEnds<'_>> {
    // A function right on the host bridge (a VM's passed-through HCA on bus 0) has no
    // port above it in sysfs: its own registers are all there is to judge.
    if path.bridges.is_empty() {
        return vec![LinkEnds {
            below: &path.function,
            above: &path.function,
        }];
    }
    let chain: Vec<&PciFunction> = path.bridges.iter().chain([&path.function]).collect();
    (1..chain.len())
        .filter(
            |&i| match chain[i].config.as_ref().and_then(|c| c.port_type) {
                Some(t) => t.is_upstream_end(),
                None => i % 2 == 1,
            },
        )
        .map(|i| LinkEnds {
            below: chain[i],
            above: chain[i - 1],
        })
        .collect()
}

fn current(f: &PciFunction) -> Option<PcieLink> {
    f.current_link
        .or_else(|| f.config.as_ref().and_then(|c| c.link_status))
}

fn maximum(f: &PciFunction) -> Option<PcieLink> {
    f.max_link
        .or_else(|| f.config.as_ref().and_then(|c| c.link_capabilities))
}

/// The most both ends allow: the lower speed and the narrower width.
fn capable(a: Option<PcieLink>, b: Option<PcieLink>) -> Option<PcieLink> {
    match (a, b) {
        (Some(a), Some(b)) => Some(PcieLink {
            speed: match (a.speed, b.speed) {
                (Some(x), Some(y)) => Some(x.min(y)),
                (x, y) => x.or(y),
            },
            width: a.width.min(b.width),
        }),
        (a, b) => a.or(b),
    }
}

fn downtrained(now: PcieLink, most: PcieLink) -> bool {
    let slower = matches!((now.speed, most.speed), (Some(n), Some(m)) if n < m);
    slower || now.width < most.width
}

fn link_finding(hca: &HcaPath) -> Diagnostic {
    let subject = Subject::Device(hca.name.clone());
    let f = &hca.path.function;
    let mut evidence = Vec::new();
    let mut slow = Vec::new();
    for link in links(&hca.path) {
        let (Some(now), Some(most)) = (
            current(link.below),
            capable(maximum(link.below), maximum(link.above)),
        ) else {
            continue;
        };
        // A link that reports no width (0: some virtual functions and VMs) is not judged.
        if now.width == 0 || most.width == 0 {
            continue;
        }
        let can = |f: &PciFunction| maximum(f).map_or("?".into(), |l| l.to_string());
        evidence.push(if std::ptr::eq(link.below, link.above) {
            format!("{}: runs at {now}; it can do {most}", link.below.bdf)
        } else {
            format!(
                "{} (below {}): runs at {now}; {} can do {}, {} can do {}",
                link.below.bdf,
                link.above.bdf,
                link.below.bdf,
                can(link.below),
                link.above.bdf,
                can(link.above),
            )
        });
        if downtrained(now, most) {
            slow.push((link.below, now, most));
        }
    }
    if evidence.is_empty() {
        return Diagnostic::finding(
            Severity::Info,
            codes::PCIE_LINK,
            format!("{}: no PCIe link speed or width readable", f.bdf),
        )
        .about(subject)
        .evidence(format!(
            "{}: no current_link_speed/width in sysfs and no Link Status in config",
            f.bdf
        ));
    }
    let Some(&(first, now, most)) = slow.first() else {
        let now = current(f).map_or("its maximum".to_string(), |l| l.to_string());
        return Diagnostic::finding(
            Severity::Ok,
            codes::PCIE_LINK,
            format!(
                "{} ({}) runs at {now}, the most its links allow",
                hca.name, f.bdf
            ),
        )
        .about(subject);
    };
    let message = if first.bdf == f.bdf {
        format!(
            "{} runs at {now} of {most}: reseat, or check the slot",
            hca.name
        )
    } else {
        format!(
            "the link of {} above {} runs at {now} of {most}: every byte of {} crosses it",
            first.bdf, hca.name, hca.name
        )
    };
    let mut d = Diagnostic::finding(Severity::Warn, codes::PCIE_LINK, message).about(subject);
    for line in evidence {
        d = d.evidence(line);
    }
    d.fix(format!(
        "reseat the card (or the switch's cable/riser) and check the slot is wired x{} in the \
         platform's setup (bifurcation, Gen speed); `lspci -vvv -s {}` shows LnkCap and LnkSta",
        most.width, first.bdf
    ))
}

/// The HCA closest to the GPU; ties go to the faster link, then to the name.
fn best_hca<'a>(hcas: &'a [HcaPath], gpu: &PciPath) -> Option<(&'a HcaPath, PathClass)> {
    hcas.iter()
        .map(|h| (h, classify(&h.path, gpu)))
        .min_by_key(|(h, class)| {
            let bw = current(&h.path.function).map_or(0, |l| {
                l.speed.and_then(|s| s.tenths_gts()).unwrap_or(0) * u32::from(l.width)
            });
            (*class, std::cmp::Reverse(bw), h.name.clone())
        })
}

fn gpu_subject(gpu: &PciPath) -> Subject {
    Subject::Other(format!("gpu {}", gpu.function.bdf))
}

fn numa(f: &PciFunction) -> String {
    let node = f
        .numa_node
        .map_or("NUMA node -".to_string(), |n| format!("NUMA node {n}"));
    match &f.local_cpulist {
        Some(cpus) => format!("{node}, cpus {cpus}"),
        None => node,
    }
}

fn path_finding(hcas: &[HcaPath], gpu: &PciPath, best: &HcaPath, class: PathClass) -> Diagnostic {
    // NCCL_IB_HCA matches by prefix: `=` asks for the exact name when another HCA's name
    // starts with this one (mlx5_1 and mlx5_10).
    let exact = if hcas
        .iter()
        .any(|h| h.name != best.name && h.name.starts_with(&best.name))
    {
        "="
    } else {
        ""
    };
    let setting = format!(
        "NCCL_IB_HCA={exact}{} UCX_NET_DEVICES={}:{}",
        best.name, best.name, best.port
    );
    let severity = if class <= PathClass::Pxb {
        Severity::Ok
    } else {
        Severity::Warn
    };
    let mut d = Diagnostic::finding(
        severity,
        codes::GPU_PATH,
        format!("closest HCA {}, {class}: {setting}", best.name),
    )
    .about(gpu_subject(gpu))
    .evidence(format!(
        "GPU {} ({})",
        gpu.function.bdf,
        numa(&gpu.function)
    ));
    for h in hcas {
        d = d.evidence(format!(
            "{} {} ({}): {}",
            h.name,
            h.path.function.bdf,
            numa(&h.path.function),
            classify(&h.path, gpu)
        ));
    }
    if severity == Severity::Ok {
        return d;
    }
    d.fix(format!(
        "NCCL uses GPUDirect RDMA only up to PXB by default (NCCL_NET_GDR_LEVEL): put an HCA \
         in a slot under the GPU's PCIe switch, or at least its NUMA node; run the GPU's \
         process with {setting} and bound to the GPU's cpus"
    ))
}

/// ACS on the bridges peer-to-peer traffic between the GPU and the HCA enters: each side's
/// bridges below the lowest one they share (there the traffic turns; a switch's ACS acts
/// on its downstream ports' ingress).
fn acs_finding(gpu: &PciPath, hca: &HcaPath) -> Diagnostic {
    let shared = shared_bridges(gpu, &hca.path);
    let mut bridges: Vec<&PciFunction> = gpu.bridges[shared..].iter().collect();
    bridges.extend(hca.path.bridges[shared..].iter());
    let mut evidence = Vec::new();
    let mut redirect = Vec::new();
    let mut unreadable = Vec::new();
    for b in &bridges {
        match b.config.as_ref() {
            None => {
                unreadable.push(b.bdf.clone());
                evidence.push(format!("{}: config not readable", b.bdf));
            }
            Some(c) if c.len < EXT_START => {
                unreadable.push(b.bdf.clone());
                evidence.push(format!(
                    "{}: config read as {} bytes, the extended capabilities start at 0x100",
                    b.bdf, c.len
                ));
            }
            Some(c) => match c.acs {
                Acs::Present {
                    offset, control, ..
                } => {
                    let on = control.enabled();
                    evidence.push(format!(
                        "{}: ACS at 0x{offset:03x}, ACSCtl 0x{:04x} ({})",
                        b.bdf,
                        control.0,
                        if on.is_empty() {
                            "all off".to_string()
                        } else {
                            on.iter()
                                .map(|n| format!("{n}+"))
                                .collect::<Vec<_>>()
                                .join(" ")
                        }
                    ));
                    if control.redirects_p2p() {
                        redirect.push(b.bdf.clone());
                    }
                }
                Acs::Absent | Acs::Unreadable => {
                    evidence.push(format!("{}: no ACS capability", b.bdf));
                }
            },
        }
    }
    let between = format!("{} and GPU {}", hca.name, gpu.function.bdf);
    let mut d = if !redirect.is_empty() {
        Diagnostic::finding(
            Severity::Warn,
            codes::PCIE_ACS,
            format!(
                "ACS redirects peer-to-peer traffic on {} between {between}: it goes up \
                 through the root complex (hangs, or a fraction of the bandwidth)",
                redirect.join(", ")
            ),
        )
        .fix(format!(
            "{} (until reboot; as root), or disable ACS in the platform's setup, or boot with \
             `pci=noacs`; this gives up the isolation ACS gives VMs with passed-through devices",
            redirect
                .iter()
                .map(|b| format!("`setpci -s {b} ECAP_ACS+6.w=0000`"))
                .collect::<Vec<_>>()
                .join(", ")
        ))
    } else if !unreadable.is_empty() {
        Diagnostic::finding(
            Severity::Info,
            codes::PCIE_ACS,
            format!(
                "ACS of {} not readable without root: run as root",
                unreadable.join(", ")
            ),
        )
        .fix("run `sudo rdmactl doctor`: without root the kernel returns only the first 64 bytes of config space")
    } else {
        Diagnostic::finding(
            Severity::Ok,
            codes::PCIE_ACS,
            format!("no ACS redirect on the bridges between {between}"),
        )
    };
    d = d.about(gpu_subject(gpu));
    for line in evidence {
        d = d.evidence(line);
    }
    d
}

/// Translated IOMMU mode on the HCAs or GPUs: every peer-to-peer and DMA access is
/// translated (and, with ACS, redirected to the root complex).
fn iommu_finding(pci: &PciFacts) -> Diagnostic {
    let functions: Vec<(String, &PciFunction)> = pci
        .hcas
        .iter()
        .map(|h| (h.name.clone(), &h.path.function))
        .chain(
            pci.gpus
                .iter()
                .map(|g| (format!("GPU {}", g.function.bdf), &g.function)),
        )
        .collect();
    let mut evidence = Vec::new();
    if let Some(cmdline) = &pci.gpudirect.cmdline {
        evidence.push(format!("/proc/cmdline: {cmdline}"));
    }
    evidence.push(if pci.gpudirect.iommus.is_empty() {
        "class/iommu: empty".to_string()
    } else {
        format!("class/iommu: {}", pci.gpudirect.iommus.join(", "))
    });
    let mut translated = Vec::new();
    for (name, f) in &functions {
        if let (Some(group), Some(kind)) = (&f.iommu_group, &f.iommu_type) {
            evidence.push(format!("{name}: iommu_group {group}, type {kind}"));
            if kind.starts_with("DMA") {
                translated.push(name.clone());
            }
        }
    }
    // Kernels before 5.11 have no group `type`: with an IOMMU on, the command line says
    // which mode the kernel chose (translated, unless passthrough was asked for).
    let typed = functions.iter().any(|(_, f)| f.iommu_type.is_some());
    let passthrough = |c: &str| {
        c.split_whitespace()
            .any(|w| w == "iommu=pt" || w == "iommu.passthrough=1")
    };
    // Without the functions' own types, every group's `type` under kernel/iommu_groups
    // says the kernel's default domain: iommu=pt makes them all identity, a translated
    // default makes them DMA or DMA-FQ. Only a mix (a group changed by hand, a VFIO group)
    // leaves the HCAs' own mode unknown.
    let groups = &pci.gpudirect.group_types;
    let kinds: std::collections::BTreeSet<&str> = groups.iter().map(|(_, t)| t.as_str()).collect();
    if !typed && !groups.is_empty() {
        evidence.push(format!(
            "kernel/iommu_groups/*/type: {}",
            kinds
                .iter()
                .map(|k| format!("{} {k}", groups.iter().filter(|(_, t)| t == k).count()))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let d = if !typed && !pci.gpudirect.iommus.is_empty() && !groups.is_empty() {
        let translated_default = kinds.iter().all(|k| k.starts_with("DMA"));
        if kinds.iter().all(|k| *k == "identity") {
            Diagnostic::finding(
                Severity::Ok,
                codes::IOMMU,
                "the IOMMU passes DMA through: every IOMMU group is identity",
            )
        } else if translated_default {
            Diagnostic::finding(
                Severity::Warn,
                codes::IOMMU,
                format!(
                    "the IOMMU translates DMA: every IOMMU group ({}) is {}, so the HCAs' and GPUs' DMA is translated",
                    groups.len(),
                    kinds.iter().copied().collect::<Vec<_>>().join(" or ")
                ),
            )
            .fix("boot with `iommu=pt` (with `intel_iommu=on` or `amd_iommu=on` where the IOMMU is wanted for VMs), then check `cat /sys/bus/pci/devices/BDF/iommu_group/type` says identity")
        } else {
            Diagnostic::finding(
                Severity::Info,
                codes::IOMMU,
                "the IOMMU groups differ in mode and the HCAs' and GPUs' own groups are not linked here: their mode is not known",
            )
            .fix("read the HCA's group: `cat /sys/bus/pci/devices/BDF/iommu_group/type` (identity is passthrough)")
        }
    } else if !typed && !pci.gpudirect.iommus.is_empty() {
        match pci.gpudirect.cmdline.as_deref() {
            Some(c) if passthrough(c) => Diagnostic::finding(
                Severity::Ok,
                codes::IOMMU,
                "the IOMMU passes DMA through (the kernel command line asks for it)",
            ),
            Some(_) => Diagnostic::finding(
                Severity::Warn,
                codes::IOMMU,
                "the IOMMU is on and the kernel command line does not ask for passthrough: \
                 DMA of the HCAs and GPUs is translated",
            )
            .fix("boot with `iommu=pt`"),
            None => Diagnostic::finding(
                Severity::Info,
                codes::IOMMU,
                "the IOMMU is on; its mode is not known: no iommu_group/type on the HCAs and GPUs, no kernel/iommu_groups/*/type, and no kernel command line read",
            )
            .fix("on the host: `cat /sys/kernel/iommu_groups/*/type` and /proc/cmdline; for a captured tree, capture /proc too and pass it with --procfs"),
        }
    } else if translated.is_empty() {
        Diagnostic::finding(
            Severity::Ok,
            codes::IOMMU,
            if pci.gpudirect.iommus.is_empty() {
                "no IOMMU translates DMA".to_string()
            } else {
                "the IOMMU passes DMA through (identity) for the HCAs and GPUs".to_string()
            },
        )
    } else {
        Diagnostic::finding(
            Severity::Warn,
            codes::IOMMU,
            format!(
                "the IOMMU translates DMA of {}: GPUDirect traffic pays a translation per \
                 access, and may not reach its peer at all",
                translated.join(", ")
            ),
        )
        .fix(
            "boot with `iommu=pt` (with `intel_iommu=on` or `amd_iommu=on` where the IOMMU is \
             wanted for VMs), then check `cat /sys/bus/pci/devices/BDF/iommu_group/type` \
             says identity",
        )
    };
    let mut d = d.about(Subject::Host);
    for line in evidence {
        d = d.evidence(line);
    }
    d
}

/// NCCL up to this version looked for the peer-memory module under its old name only.
const NCCL_OLD_NAME_UNTIL: (u32, u32, u32) = (2, 22, 3);
/// The first kernel with DMA-BUF import in RDMA (ib_umem_dmabuf).
const DMABUF_KERNEL: (u32, u32) = (5, 12);

fn kernel_version(release: &str) -> Option<(u32, u32)> {
    let mut parts = release.split(|c: char| !c.is_ascii_digit());
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

fn gpudirect_findings(pci: &PciFacts) -> Vec<Diagnostic> {
    let g = &pci.gpudirect;
    let peers = match &g.memory_peers {
        Some(list) if list.is_empty() => "kernel/mm/memory_peers: empty".to_string(),
        Some(list) => format!("kernel/mm/memory_peers: {}", list.join(", ")),
        None => "kernel/mm/memory_peers: absent (a kernel without the peer-memory API)".into(),
    };
    let modules = if g.peer_modules.is_empty() {
        "module/: neither nvidia_peermem nor nv_peer_mem".to_string()
    } else {
        format!("module/: {}", g.peer_modules.join(", "))
    };
    let mut found = Vec::new();
    let Some(module) = g.peer_modules.first() else {
        // DMA-BUF needs a kernel that has it (5.12) built with it (when its config is
        // readable); else nothing is left for GPUDirect RDMA.
        let dmabuf = g
            .kernel
            .as_deref()
            .and_then(kernel_version)
            .filter(|v| *v >= DMABUF_KERNEL && g.dmabuf_config != Some(false));
        let d = match (dmabuf, &g.kernel) {
            (Some(_), Some(kernel)) => Diagnostic::finding(
                Severity::Warn,
                codes::GPUDIRECT,
                format!(
                    "no peer-memory module: GPUDirect RDMA works only through DMA-BUF (kernel \
                     {kernel} has it; NCCL ≥ 2.13 and NVIDIA's open kernel modules are needed)"
                ),
            ),
            _ => Diagnostic::finding(
                Severity::Fail,
                codes::GPUDIRECT,
                "nvidia_peermem is not loaded: GPUDirect RDMA is off, NCCL stages every \
                 transfer through host memory",
            ),
        };
        let mut d = d
            .about(Subject::Host)
            .evidence(modules)
            .evidence(peers)
            .fix(
                "`modprobe nvidia_peermem` (after the HCA driver), and `echo nvidia_peermem > \
                 /etc/modules-load.d/nvidia-peermem.conf` so it loads at boot",
            );
        if let Some(kernel) = &g.kernel {
            d = d.evidence(format!("kernel {kernel}"));
        }
        if let (Some(kernel), Some(on)) = (&g.kernel, g.dmabuf_config) {
            d = d.evidence(format!(
                "/boot/config-{kernel}: CONFIG_DMA_SHARED_BUFFER {}",
                if on { "set" } else { "not set" }
            ));
        }
        found.push(d);
        return found;
    };
    let registered = g
        .memory_peers
        .as_ref()
        .map(|list| list.iter().any(|p| p.starts_with("nv")));
    found.push(match registered {
        Some(false) => Diagnostic::finding(
            Severity::Fail,
            codes::GPUDIRECT,
            format!(
                "{module} is loaded but not registered in kernel/mm/memory_peers: \
                 GPUDirect RDMA is off"
            ),
        )
        .about(Subject::Host)
        .evidence(modules.clone())
        .evidence(peers.clone())
        .fix(format!(
            "reload it after the HCA driver: `modprobe -r {module}; modprobe {module}`, and \
             read `dmesg` for its registration error"
        )),
        _ => Diagnostic::finding(
            Severity::Ok,
            codes::GPUDIRECT,
            format!(
                "{module} is loaded{}",
                if registered == Some(true) {
                    " and registered"
                } else {
                    ""
                }
            ),
        )
        .about(Subject::Host)
        .evidence(modules.clone())
        .evidence(peers.clone()),
    });
    if let Some(files) = &g.modules_load {
        if files.is_empty() {
            found.push(
                Diagnostic::finding(
                    Severity::Warn,
                    codes::GPUDIRECT,
                    format!(
                        "{module} is loaded now, but no modules-load.d file loads it: after \
                         a reboot GPUDirect RDMA is off"
                    ),
                )
                .about(Subject::Host)
                .evidence("/etc/modules-load.d, /usr/lib/modules-load.d: no file names it")
                .fix(format!(
                    "`echo {module} > /etc/modules-load.d/{module}.conf`"
                )),
            );
        }
    }
    if let Some((v, path)) = &g.nccl {
        if *v <= NCCL_OLD_NAME_UNTIL && !g.peer_modules.iter().any(|m| m == "nv_peer_mem") {
            found.push(
                Diagnostic::finding(
                    Severity::Warn,
                    codes::GPUDIRECT,
                    format!(
                        "NCCL {}.{}.{} looks for nv_peer_mem, and only {module} is loaded: \
                         it runs without GPUDirect RDMA",
                        v.0, v.1, v.2
                    ),
                )
                .about(Subject::Host)
                .evidence(path.clone())
                .evidence(modules)
                .fix("upgrade NCCL past 2.22.3, which also looks for nvidia_peermem"),
            );
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::pci::{AcsControl, ConfigFacts, LinkSpeed};

    fn func(bdf: &str, numa: Option<u32>) -> PciFunction {
        PciFunction {
            bdf: bdf.into(),
            numa_node: numa,
            ..PciFunction::default()
        }
    }

    fn path(root: &str, bridges: &[&str], function: &str, numa: Option<u32>) -> PciPath {
        PciPath {
            root: root.into(),
            bridges: bridges.iter().map(|b| func(b, numa)).collect(),
            function: func(function, numa),
        }
    }

    #[test]
    fn path_classes_follow_the_tree() {
        let hca = path(
            "pci0000:00",
            &["0000:00:01.0", "0000:01:00.0", "0000:02:08.0"],
            "0000:03:00.0",
            Some(0),
        );
        let same_switch = path(
            "pci0000:00",
            &["0000:00:01.0", "0000:01:00.0", "0000:02:10.0"],
            "0000:04:00.0",
            Some(0),
        );
        let nested = path(
            "pci0000:00",
            &[
                "0000:00:01.0",
                "0000:01:00.0",
                "0000:02:10.0",
                "0000:05:00.0",
                "0000:06:00.0",
            ],
            "0000:07:00.0",
            Some(0),
        );
        let other_port = path("pci0000:00", &["0000:00:02.0"], "0000:08:00.0", Some(0));
        let other_rc = path("pci0000:40", &["0000:40:01.0"], "0000:41:00.0", Some(0));
        let other_node = path("pci0000:80", &["0000:80:01.0"], "0000:81:00.0", Some(1));
        assert_eq!(classify(&hca, &same_switch), PathClass::Pix);
        assert_eq!(classify(&hca, &nested), PathClass::Pxb);
        assert_eq!(classify(&hca, &other_port), PathClass::Phb);
        assert_eq!(classify(&hca, &other_rc), PathClass::Node);
        assert_eq!(classify(&hca, &other_node), PathClass::Sys);
        assert_eq!(classify(&other_node, &hca), PathClass::Sys);
    }

    fn link(gen: u8, width: u8) -> Option<PcieLink> {
        Some(PcieLink {
            speed: Some(LinkSpeed(gen)),
            width,
        })
    }

    #[test]
    fn a_downtrained_link_is_named_with_both_figures() {
        let mut hca = HcaPath {
            name: "mlx5_2".into(),
            port: 1,
            path: path("pci0000:00", &["0000:00:01.0"], "0000:01:00.0", Some(0)),
        };
        hca.path.bridges[0].max_link = link(4, 16);
        hca.path.function.max_link = link(4, 16);
        hca.path.function.current_link = link(3, 8);
        let d = link_finding(&hca);
        assert_eq!(d.severity, Severity::Warn);
        assert_eq!(
            d.message,
            "mlx5_2 runs at 8 GT/s x8 of 16 GT/s x16: reseat, or check the slot"
        );
        // A x8 card in a x16 slot runs at what both ends allow: no finding.
        hca.path.function.max_link = link(3, 8);
        let d = link_finding(&hca);
        assert_eq!(d.severity, Severity::Ok, "{d:?}");
        assert!(d.message.contains("8 GT/s x8"), "{}", d.message);
    }

    #[test]
    fn a_function_on_the_host_bridge_is_judged_by_its_own_registers() {
        let mut hca = HcaPath {
            name: "mlx5_0".into(),
            port: 1,
            path: path("pci0000:00", &[], "0000:00:05.0", None),
        };
        hca.path.function.max_link = link(4, 16);
        hca.path.function.current_link = link(4, 8);
        let d = link_finding(&hca);
        assert_eq!(d.severity, Severity::Warn);
        assert_eq!(
            d.evidence,
            ["0000:00:05.0: runs at 16 GT/s x8; it can do 16 GT/s x16"]
        );
    }

    #[test]
    fn acs_redirect_is_a_warning_with_setpci() {
        let mut gpu = path(
            "pci0000:00",
            &["0000:00:01.0", "0000:01:00.0", "0000:02:10.0"],
            "0000:04:00.0",
            Some(0),
        );
        let hca = HcaPath {
            name: "mlx5_0".into(),
            port: 1,
            path: path(
                "pci0000:00",
                &["0000:00:01.0", "0000:01:00.0", "0000:02:08.0"],
                "0000:03:00.0",
                Some(0),
            ),
        };
        let acs = |control| ConfigFacts {
            len: 4096,
            caps: vec![0x10],
            caps_truncated: false,
            port_type: None,
            link_capabilities: None,
            link_status: None,
            acs: Acs::Present {
                offset: 0x148,
                capability: 0x5f,
                control: AcsControl(control),
            },
        };
        gpu.bridges[2].config = Some(acs(0x001d));
        let d = acs_finding(&gpu, &hca);
        assert_eq!(d.severity, Severity::Warn);
        assert!(d.message.contains("0000:02:10.0"), "{}", d.message);
        assert!(d
            .fix_text()
            .contains("setpci -s 0000:02:10.0 ECAP_ACS+6.w=0000"));
        // Short config (no root) on the HCA's side: said, never guessed.
        gpu.bridges[2].config = Some(acs(0));
        let mut hca = hca;
        hca.path.bridges[2].config = Some(ConfigFacts {
            len: 64,
            acs: Acs::Unreadable,
            ..acs(0)
        });
        let d = acs_finding(&gpu, &hca);
        assert_eq!(d.severity, Severity::Info);
        assert_eq!(
            d.message,
            "ACS of 0000:02:08.0 not readable without root: run as root"
        );
    }

    #[test]
    fn kernels_and_dmabuf() {
        assert_eq!(kernel_version("6.1.0-18-amd64"), Some((6, 1)));
        assert_eq!(kernel_version("5.4.0"), Some((5, 4)));
        assert!(kernel_version("5.4.0").unwrap() < DMABUF_KERNEL);
    }
}

#[cfg(test)]
mod iommu_tests {
    use super::*;
    use crate::model::pci::GpuDirect;

    /// An IOMMU whose groups have no `type` (kernels before 5.11): the command line decides.
    fn untyped(cmdline: Option<&str>) -> Diagnostic {
        iommu_finding(&PciFacts {
            gpudirect: GpuDirect {
                iommus: vec!["dmar0".into()],
                cmdline: cmdline.map(String::from),
                ..GpuDirect::default()
            },
            ..PciFacts::default()
        })
    }

    #[test]
    fn without_group_types_the_command_line_decides() {
        let on = untyped(Some("BOOT_IMAGE=/vmlinuz root=/dev/sda1 intel_iommu=on"));
        assert_eq!(on.severity, Severity::Warn);
        assert!(on.message.contains("does not ask for passthrough"));
        assert!(on
            .evidence
            .iter()
            .any(|e| e.ends_with("intel_iommu=on") && e.starts_with("/proc/cmdline:")));
        assert_eq!(
            untyped(Some("intel_iommu=on iommu=pt")).severity,
            Severity::Ok
        );
        // `iommu=ptx` is not passthrough.
        assert_eq!(untyped(Some("iommu=ptx")).severity, Severity::Warn);
        assert_eq!(untyped(None).severity, Severity::Info);
    }

    fn grouped(types: &[&str]) -> Diagnostic {
        iommu_finding(&PciFacts {
            gpudirect: GpuDirect {
                iommus: vec!["dmar0".into()],
                group_types: types
                    .iter()
                    .enumerate()
                    .map(|(i, t)| (i.to_string(), t.to_string()))
                    .collect(),
                ..GpuDirect::default()
            },
            ..PciFacts::default()
        })
    }

    /// The functions' own groups not linked, no command line: the groups' types under
    /// kernel/iommu_groups decide, never "not readable".
    #[test]
    fn without_the_functions_groups_the_iommu_groups_decide() {
        let all_dma = grouped(&["DMA-FQ", "DMA-FQ", "DMA"]);
        assert_eq!(all_dma.severity, Severity::Warn);
        assert!(
            all_dma
                .message
                .contains("every IOMMU group (3) is DMA or DMA-FQ"),
            "{}",
            all_dma.message
        );
        assert!(
            all_dma
                .evidence
                .iter()
                .any(|e| e == "kernel/iommu_groups/*/type: 1 DMA, 2 DMA-FQ"),
            "{:?}",
            all_dma.evidence
        );
        assert!(!all_dma.message.contains("not readable"));
        assert_eq!(grouped(&["identity", "identity"]).severity, Severity::Ok);
        let mixed = grouped(&["identity", "DMA"]);
        assert_eq!(mixed.severity, Severity::Info);
        assert!(mixed.fix.as_deref().unwrap().contains("iommu_group/type"));
    }
}

#[cfg(test)]
mod gpudirect_tests {
    use super::*;
    use crate::model::pci::GpuDirect;

    fn facts(g: GpuDirect) -> PciFacts {
        PciFacts {
            gpudirect: g,
            ..PciFacts::default()
        }
    }

    fn judged(g: GpuDirect) -> Vec<(Severity, String)> {
        gpudirect_findings(&facts(g))
            .into_iter()
            .map(|d| (d.severity, d.message))
            .collect()
    }

    #[test]
    fn no_module_is_dmabuf_on_new_kernels_and_a_failure_on_old_ones() {
        let new = judged(GpuDirect {
            kernel: Some("6.8.0-45-generic".into()),
            ..GpuDirect::default()
        });
        assert_eq!(new.len(), 1);
        assert_eq!(new[0].0, Severity::Warn);
        assert!(new[0]
            .1
            .contains("only through DMA-BUF (kernel 6.8.0-45-generic"));
        let old = judged(GpuDirect {
            kernel: Some("5.4.0-150-generic".into()),
            ..GpuDirect::default()
        });
        assert_eq!(old[0].0, Severity::Fail);
        assert!(old[0].1.starts_with("nvidia_peermem is not loaded"));
        // A new kernel built without DMA-BUF has nothing left either.
        let without = gpudirect_findings(&facts(GpuDirect {
            kernel: Some("6.1.0-18-amd64".into()),
            dmabuf_config: Some(false),
            ..GpuDirect::default()
        }));
        assert_eq!(without[0].severity, Severity::Fail);
        assert!(without[0]
            .evidence
            .iter()
            .any(|e| e == "/boot/config-6.1.0-18-amd64: CONFIG_DMA_SHARED_BUFFER not set"));
    }

    #[test]
    fn an_old_nccl_with_the_new_module_name_is_a_warning() {
        let base = GpuDirect {
            peer_modules: vec!["nvidia_peermem".into()],
            memory_peers: None,
            modules_load: Some(vec!["/etc/modules-load.d/nvidia-peermem.conf".into()]),
            nccl: Some((
                (2, 18, 1),
                "/usr/lib/x86_64-linux-gnu/libnccl.so.2.18.1".into(),
            )),
            ..GpuDirect::default()
        };
        let found = judged(base.clone());
        assert_eq!(found[0], (Severity::Ok, "nvidia_peermem is loaded".into()));
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[1].0, Severity::Warn);
        assert!(found[1].1.starts_with("NCCL 2.18.1 looks for nv_peer_mem"));
        // 2.23 and later look for both names: nothing to say.
        let newer = judged(GpuDirect {
            nccl: Some(((2, 23, 4), "libnccl.so.2.23.4".into())),
            ..base.clone()
        });
        assert_eq!(newer.len(), 1, "{newer:?}");
        // Loaded now, but nothing loads it at boot.
        let fragile = judged(GpuDirect {
            modules_load: Some(Vec::new()),
            nccl: None,
            ..base
        });
        assert_eq!(fragile.len(), 2);
        assert!(fragile[1]
            .1
            .contains("after a reboot GPUDirect RDMA is off"));
    }
}
