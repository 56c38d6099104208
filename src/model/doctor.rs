//! What `doctor` reads about a host: the devices and their ports, the uverbs nodes, the
//! libibverbs library and providers, the locked-memory limit, the network namespace and
//! addresses. `gather::doctor` fills it; `diagnose::doctor` judges it.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::model::counter::PortCounters;
use crate::model::device::Device;
use crate::model::facts::RoceNetdev;

/// Everything `doctor` judges, read once.
#[derive(Debug, Clone, Default)]
pub struct DoctorFacts {
    /// `class/infiniband` under the sysfs root, as the evidence names it.
    pub class_dir: String,
    /// The `class/infiniband` that does not exist (no RDMA core): nothing else was read.
    pub no_rdma: Option<PathBuf>,
    /// Every device sysfs lists: the kernel finding names them all.
    pub listed: Vec<Device>,
    /// The devices judged (only `-d`'s when given), with their GID tables and active MTUs.
    pub devices: Vec<Device>,
    /// What the fix for "no device" builds on; read only when no device is listed.
    pub no_device_hint: NoDeviceHint,
    /// One per port of `devices`, in their order.
    pub ports: Vec<PortExtras>,
    /// This host's /dev, libraries, limits and network; None for a captured tree, which is
    /// another host's.
    pub host: Option<HostFacts>,
    /// The PCI side of the devices judged: links, the path to each GPU, ACS, IOMMU,
    /// GPUDirect RDMA; empty when no device is a PCI function.
    pub pci: crate::model::pci::PciFacts,
    /// The container or pod this process may run in (`model::container`); None for a
    /// captured tree.
    pub container: Option<crate::model::container::ContainerFacts>,
    /// What a captured tree's host gave (`--sysfs`, `--procfs`); None on a live host.
    pub capture: Option<CaptureFacts>,
    /// The RoCE ports' QoS chain (`qos`), with the job's variables from the environment.
    pub qos: crate::model::qos::QosFacts,
    /// `doctor --state FILE` (or a health-check format's default): the counters of the
    /// previous run, so the counters check judges what changed since. None: no state was
    /// asked for (a person's run, a captured tree), and the totals are only shown.
    pub counter_state: Option<CounterState>,
}

/// The state file of a health check's counters, as read before this run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CounterState {
    pub path: String,
    /// Seconds since the Unix epoch, now.
    pub now: u64,
    /// The previous run's record; None on the first run (no file yet) or an unusable one.
    pub previous: Option<crate::model::counter::CounterRecord>,
    /// Why an existing file was not used: its errno, or what did not parse. This run
    /// records a new baseline.
    pub unusable: Option<String>,
}

/// What doctor read of a captured host beyond its sysfs: the captured /proc when
/// `--procfs` names one. Its /dev, libraries, verbs answers and network are not captured.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CaptureFacts {
    /// `--sysfs`'s directory, as given.
    pub sysfs: String,
    /// `--procfs`'s directory, as given; None when only sysfs was captured.
    pub procfs: Option<String>,
    /// From the captured `self/limits`: the capturing process's soft `Max locked memory`
    /// (None when the capture has no such line, Some(None) unlimited).
    pub memlock_soft: Option<Option<u64>>,
    /// From the captured `self/status`: whether CapEff holds CAP_IPC_LOCK.
    pub cap_ipc_lock: Option<bool>,
    /// From the captured `self/status`: whether the effective UID was 0.
    pub root: Option<bool>,
}

/// What doctor reads about a port beyond the device model.
#[derive(Debug, Clone, Default)]
pub struct PortExtras {
    /// Slots in the GID table (0 when unreadable).
    pub gid_table_len: usize,
    /// The counters since the last reset; None when unreadable.
    pub counters: Option<PortCounters>,
    /// A Soft-RoCE port's RoCE v2 paths through this host's firewall (live only).
    pub firewall: Option<crate::model::netfilter::FirewallFacts>,
}

/// What doctor reads about the host it runs on.
#[derive(Debug, Clone)]
pub struct HostFacts {
    /// One per device of `DoctorFacts::devices`.
    pub node_access: Vec<NodeAccess>,
    /// Whether libibverbs.so.1 loads, else why not.
    pub library: Result<(), String>,
    /// `ibv_get_device_list`'s names, or its failure; None when the library did not load.
    pub verbs_devices: Option<Result<Vec<String>, String>>,
    /// One per device when `verbs_devices` listed names, else empty.
    pub provider_files: Vec<ProviderFiles>,
    /// The soft `Max locked memory`: None when unreadable, Some(None) unlimited.
    pub memlock_soft: Option<Option<u64>>,
    /// Whether CapEff holds CAP_IPC_LOCK; None when unreadable.
    pub cap_ipc_lock: Option<bool>,
    /// The effective UID is 0.
    pub root: bool,
    pub net: HostNet,
    /// The RoCE netdevs of the devices, for the same-subnet and ARP flux rules.
    pub roce_netdevs: Vec<RoceNetdev>,
}

/// What the fix for "no device" builds on, gathered where the devices are listed: which
/// RDMA modules are loaded and which network functions exist, so the fix names a module
/// only where a NIC of its vendor is there without it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NoDeviceHint {
    /// Where rdma_rxe was seen loaded (`module/rdma_rxe` under the sysfs root, or
    /// /proc/modules on a live host); None when it is not loaded.
    pub rxe_loaded: Option<String>,
    /// A netdev that is up (not lo), to name in `rdma link add`; else `<if>`.
    pub netdev: Option<String>,
    /// The modules of `RDMA_MODULES` seen under `module/` of the sysfs root, in the table's
    /// order; None when the tree has no `module/` (a capture without it: unknown).
    pub rdma_modules: Option<Vec<String>>,
    /// The PCI network and InfiniBand functions of `bus/pci/devices`; None when the tree
    /// has no `bus/pci/devices` (unknown, not "none").
    pub net_functions: Option<Vec<NetFunction>>,
    /// Where the two above were read, as the evidence names them.
    pub module_dir: String,
    pub pci_dir: String,
}

/// A PCI function of class 02 (network: Ethernet 0200, InfiniBand 0207, ...) or 0c06
/// (InfiniBand controllers of old), the kind that can carry RDMA.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetFunction {
    pub bdf: String,
    pub class: u32,
    pub vendor: u16,
    pub device: u16,
    /// The bound driver (`driver` link); None when unbound.
    pub driver: Option<String>,
    /// The netdevs it carries (`net/` below it, or below a virtio child).
    pub netdevs: Vec<String>,
}

/// One RDMA provider kernel module: the PCI vendors whose functions it drives and the
/// net (or PCI) drivers those functions are bound to when it applies. Software devices
/// (rdma_rxe, siw) have no vendor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RdmaModule {
    pub module: &'static str,
    pub vendors: &'static [u16],
    pub pci_drivers: &'static [&'static str],
    pub vendor_name: &'static str,
}

const fn m(
    module: &'static str,
    vendors: &'static [u16],
    pci_drivers: &'static [&'static str],
    vendor_name: &'static str,
) -> RdmaModule {
    RdmaModule {
        module,
        vendors,
        pci_drivers,
        vendor_name,
    }
}

/// Which RDMA module drives which vendor's functions: the one table (doctor's "no
/// device" rule and the device-list error both read it). From each driver's
/// `pci_device_id` table or auxiliary bus parent in the kernel (drivers/infiniband/hw/*).
pub const RDMA_MODULES: &[RdmaModule] = &[
    m("mlx5_ib", &[0x15b3], &["mlx5_core"], "Mellanox/NVIDIA"),
    m("mlx4_ib", &[0x15b3], &["mlx4_core"], "Mellanox/NVIDIA"),
    m("irdma", &[0x8086], &["ice", "i40e"], "Intel"),
    m("bnxt_re", &[0x14e4], &["bnxt_en"], "Broadcom"),
    m("efa", &[0x1d0f], &["efa"], "Amazon"),
    m("hns_roce_hw_v2", &[0x19e5], &["hns3"], "Huawei"),
    m("qedr", &[0x1077], &["qede"], "QLogic/Marvell"),
    m("erdma", &[0x1ded], &["erdma"], "Alibaba"),
    m("mana_ib", &[0x1414], &["mana"], "Microsoft"),
    m("ionic_rdma", &[0x1dd8], &["ionic"], "AMD Pensando"),
    m("iw_cxgb4", &[0x1425], &["cxgb4"], "Chelsio"),
    m("vmw_pvrdma", &[0x15ad], &["vmw_pvrdma"], "VMware"),
    m("ocrdma", &[0x10df], &["be2net"], "Emulex"),
    m("hfi1", &[0x8086], &["hfi1"], "Intel Omni-Path"),
    m("rdma_rxe", &[], &[], "software (Soft-RoCE)"),
    m("siw", &[], &[], "software (Soft-iWARP)"),
];

/// The table's entries that could drive `f`: its vendor, and its bound driver where one
/// is bound (an Intel function bound to igb is no irdma NIC).
pub fn modules_for(f: &NetFunction) -> Vec<&'static RdmaModule> {
    RDMA_MODULES
        .iter()
        .filter(|m| m.vendors.contains(&f.vendor))
        .filter(|m| match f.driver.as_deref() {
            Some(d) => m.pci_drivers.contains(&d) || d == m.module,
            None => true,
        })
        .collect()
}

/// What doctor learned about one device's `/dev/infiniband/uverbsN` node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeAccess {
    /// `class/infiniband_verbs/*/ibdev` names no node for the device.
    NoMapping,
    /// No node because the kernel is removing the device while a process holds it.
    Removing(Box<crate::model::device::DeviceRemoval>),
    Missing {
        path: String,
    },
    /// It exists and this process's read-write open failed: the node as it was found (its
    /// mode and owner, this process's ids, the errno).
    Denied(Box<crate::model::facts::DeviceNodeFacts>),
    Usable {
        path: String,
    },
}

/// Where the provider's files were found, if anywhere.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProviderFiles {
    pub library: Option<String>,
    pub driver_file: Option<String>,
}

/// What doctor learned about the host's network, where it looked (not for a captured tree).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostNet {
    /// rxe (kernel 6.1) works only in the initial network namespace.
    pub in_init_netns: Option<bool>,
    /// netdev name → its addresses as `ip addr` prints them (`192.168.77.1/24`); None when
    /// not looked up (a captured tree, or rtnetlink failed).
    pub addresses: Option<BTreeMap<String, Vec<String>>>,
    /// The netdevs this process's network namespace shows; None when not looked up.
    pub visible_netdevs: Option<Vec<String>>,
}

/// The libibverbs provider that serves a device, from the kernel driver bound to its
/// parent (PCI) device, or, for software devices without one: rxe when
/// [`is_soft_roce`](crate::model::device::is_soft_roce) says so (the one rule: a renamed rxe
/// keeps node_desc "rxe"), else siw by its node_desc, else the device name.
/// The provider name is what `/etc/libibverbs.d/<name>.driver` and
/// `lib<name>-rdmav*.so` use.
pub fn provider_for(
    kernel_driver: Option<&str>,
    node_desc: Option<&str>,
    device: &str,
) -> Option<&'static str> {
    const BY_DRIVER: &[(&str, &str)] = &[
        ("mlx5_core", "mlx5"),
        ("mlx4_core", "mlx4"),
        ("ib_mthca", "mthca"),
        ("irdma", "irdma"),
        ("i40e", "irdma"),
        ("ice", "irdma"),
        ("bnxt_en", "bnxt_re"),
        ("bnxt_re", "bnxt_re"),
        ("qede", "qedr"),
        ("qedr", "qedr"),
        ("hfi1", "hfi1verbs"),
        ("ib_qib", "ipathverbs"),
        ("efa", "efa"),
        ("cxgb4", "cxgb4"),
        ("hns3", "hns"),
        ("hns_roce_hw_v2", "hns"),
        ("vmw_pvrdma", "vmw_pvrdma"),
        ("ocrdma", "ocrdma"),
        ("be2net", "ocrdma"),
        ("mana", "mana"),
        ("erdma", "erdma"),
    ];
    const BY_NAME_PREFIX: &[(&str, &str)] = &[
        ("siw", "siw"),
        ("mlx5_", "mlx5"),
        ("mlx4_", "mlx4"),
        ("mthca", "mthca"),
        ("irdma", "irdma"),
        ("bnxt_re", "bnxt_re"),
        ("qedr", "qedr"),
        ("hfi1_", "hfi1verbs"),
        ("qib", "ipathverbs"),
        ("efa_", "efa"),
        ("cxgb4_", "cxgb4"),
        ("hns_", "hns"),
        ("vmw_pvrdma", "vmw_pvrdma"),
        ("ocrdma", "ocrdma"),
        ("mana_", "mana"),
        ("erdma_", "erdma"),
    ];
    // Software devices have no driver link. Whether one is rxe is the one rule's (a
    // `parent` attribute is not known here); siw keeps node_desc "siw" when renamed, so it
    // outranks the name.
    let soft_roce =
        || crate::model::device::is_soft_roce(device, kernel_driver.is_some(), false, node_desc);
    kernel_driver
        .and_then(|d| BY_DRIVER.iter().find(|(k, _)| *k == d))
        .map(|(_, provider)| *provider)
        .or_else(|| soft_roce().then_some("rxe"))
        .or_else(|| (node_desc.map(str::trim) == Some("siw")).then_some("siw"))
        .or_else(|| {
            BY_NAME_PREFIX
                .iter()
                .find(|(p, _)| device.starts_with(p))
                .map(|(_, provider)| *provider)
        })
}
