//! Device listing, opening and the read-only queries (device, port, GID).
//!
//! This is the one device opener: qp.rs's data-path `Context` is built on an [`OpenDevice`].
//! sideway gives the device list and the context (whose Drop closes the device). The
//! queries go straight to
//! rdma-mummy-sys with zeroed structs, because sideway's wrappers leave the extended
//! fields uninitialised when the provider falls back to the legacy call, read errno from
//! the wrong place for `ibv_query_gid`, and panic on transport or GID type values they do
//! not know.

use std::ffi::{CStr, CString};
use std::mem::MaybeUninit;
use std::path::PathBuf;
use std::sync::Arc;

use rdma_mummy_sys::{
    ibv_context, ibv_device, ibv_device_attr_ex, ibv_gid, ibv_gid_entry, ibv_gid_type_sysfs,
    ibv_port_attr, ibv_query_device_ex, ibv_query_gid, ibv_query_gid_table, ibv_query_gid_type,
    ibv_query_port, IBV_GID_TYPE_SYSFS_IB_ROCE_V1, IBV_GID_TYPE_SYSFS_ROCE_V2,
    IBV_LINK_LAYER_INFINIBAND,
};
use sideway::ibverbs::device::{
    Device, DeviceInfo, DeviceList, GetDeviceListErrorKind, OpenDeviceErrorKind,
};
use sideway::ibverbs::device_context::DeviceContext;

use super::{errno_of, VerbsError};
use crate::model::device::{GidType, PortState};
use crate::model::facts::{GidNow, PortNow};
use crate::model::gid::Gid;

const LIBIBVERBS: &str = "libibverbs.so.1";

/// Is libibverbs loaded? rdma-mummy-sys dlopens it from a constructor before `main` and
/// afterwards only answers EOPNOTSUPP, so ask the dynamic loader directly; on failure load
/// it once more to get dlerror()'s reason ("cannot open shared object file", "file too
/// short", ...).
pub fn library_status() -> Result<(), VerbsError> {
    let name = CString::new(LIBIBVERBS).expect("no NUL in a constant");
    // SAFETY: dlopen/dlerror/dlclose with a valid C string; a NOLOAD handle only bumps the
    // reference count of the already loaded library, and we drop it again.
    unsafe {
        let handle = libc::dlopen(name.as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD);
        if !handle.is_null() {
            libc::dlclose(handle);
            return Ok(());
        }
        let handle = libc::dlopen(name.as_ptr(), libc::RTLD_LAZY | libc::RTLD_LOCAL);
        if !handle.is_null() {
            // Loadable now but not at start-up (a race with a package install): the
            // wrappers are still unbound, so report it as missing for this run.
            libc::dlclose(handle);
            return Err(VerbsError::LibraryMissing {
                reason: "it was not loadable when rdmactl started; run it again".into(),
            });
        }
        let err = libc::dlerror();
        let reason = if err.is_null() {
            "dlopen failed without a reason".to_string()
        } else {
            CStr::from_ptr(err).to_string_lossy().into_owned()
        };
        Err(VerbsError::LibraryMissing { reason })
    }
}

fn device_list() -> Result<DeviceList, VerbsError> {
    library_status()?;
    preload_providers();
    DeviceList::new().map_err(|e| {
        let errno = match e.0 {
            GetDeviceListErrorKind::Ibverbs(io) => io.raw_os_error(),
            _ => None,
        };
        VerbsError::DeviceList {
            errno: errno.unwrap_or(libc::EIO),
        }
    })
}

/// libibverbs (and librdmacm, through it) first matches devices against the providers
/// already registered, and only when one is left unmatched does it dlopen every provider
/// that /etc/libibverbs.d names (17 on Debian 12): most of its start-up, and on its own
/// twice the time of `rdma link` under emulation. So the providers this host's devices
/// need are loaded first, named from each device's kernel driver; their constructors
/// register them. A wrong or missing guess costs only the old way, as libibverbs then
/// loads the rest itself.
pub(super) fn preload_providers() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let Some(dir) = provider_dir() else { return };
        let Ok(files) = std::fs::read_dir(&dir) else {
            return;
        };
        let files: Vec<String> = files
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .collect();
        let class = std::path::Path::new("/sys/class/infiniband");
        let mut wanted: Vec<&str> = std::fs::read_dir(class)
            .into_iter()
            .flatten()
            .filter_map(|e| provider_for(&e.ok()?.path()))
            .collect();
        wanted.sort_unstable();
        wanted.dedup();
        for provider in wanted {
            // lib<provider>-rdmav<ABI>.so: the ABI number moves with rdma-core releases.
            let prefix = format!("lib{provider}-rdmav");
            let Some(file) = files
                .iter()
                .find(|f| f.starts_with(&prefix) && f.ends_with(".so"))
            else {
                continue;
            };
            let Ok(path) = CString::new(dir.join(file).as_os_str().as_encoded_bytes()) else {
                continue;
            };
            // SAFETY: dlopen with a valid path, as libibverbs' own loader does (RTLD_NOW);
            // the handle is kept for the life of the process, as libibverbs keeps its own.
            unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW) };
        }
    });
}

/// The provider directory beside the loaded libibverbs (`.../libibverbs/`), as its own
/// loader looks there first.
fn provider_dir() -> Option<PathBuf> {
    let name = CString::new(LIBIBVERBS).ok()?;
    let symbol = CString::new("ibv_get_device_list").ok()?;
    // SAFETY: a NOLOAD handle to the loaded library, a symbol lookup in it, and dladdr on
    // the address found; the file name dladdr returns is copied before dlclose.
    let library = unsafe {
        let handle = libc::dlopen(name.as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD);
        if handle.is_null() {
            return None;
        }
        let address = libc::dlsym(handle, symbol.as_ptr());
        let mut info: libc::Dl_info = std::mem::zeroed();
        let found = !address.is_null()
            && libc::dladdr(address, &mut info) != 0
            && !info.dli_fname.is_null();
        let path = found.then(|| {
            use std::os::unix::ffi::OsStrExt;
            PathBuf::from(std::ffi::OsStr::from_bytes(
                CStr::from_ptr(info.dli_fname).to_bytes(),
            ))
        });
        libc::dlclose(handle);
        path?
    };
    Some(library.parent()?.join("libibverbs"))
}

/// The rdma-core provider for a device under /sys/class/infiniband, from the driver of its
/// parent device. Soft-RoCE and soft-iWARP have no parent device; rxe shows its netdev in
/// a `parent` attribute.
fn provider_for(device_dir: &std::path::Path) -> Option<&'static str> {
    let Ok(driver) = std::fs::read_link(device_dir.join("device/driver")) else {
        let name = device_dir.file_name()?.to_str()?;
        let node_desc = std::fs::read_to_string(device_dir.join("node_desc")).ok();
        let parent = device_dir.join("parent").exists();
        return Some(
            if crate::model::device::is_soft_roce(name, false, parent, node_desc.as_deref()) {
                "rxe"
            } else {
                "siw"
            },
        );
    };
    Some(match driver.file_name()?.to_str()? {
        "mlx5_core" => "mlx5",
        "mlx4_core" => "mlx4",
        "irdma" => "irdma",
        "bnxt_re" | "bnxt_en" => "bnxt_re",
        "efa" => "efa",
        "hns3" | "hns_roce_hw_v2" => "hns",
        "qede" | "qedr" => "qedr",
        "cxgb4" => "cxgb4",
        "vmw_pvrdma" => "vmw_pvrdma",
        "mana" | "mana_ib" => "mana",
        "erdma" => "erdma",
        "hfi1" => "hfi1verbs",
        "ib_qib" => "ipathverbs",
        "ib_mthca" => "mthca",
        "be2net" | "ocrdma" => "ocrdma",
        _ => return None,
    })
}

/// The names `ibv_get_device_list` returns, in its order. A device in sysfs but not here
/// has no usable provider library (or an inaccessible uverbs node).
pub fn device_names() -> Result<Vec<String>, VerbsError> {
    let list = device_list()?;
    Ok(list.iter().map(|d| d.name()).collect())
}

fn raw_device(device: Device<'_>) -> *mut ibv_device {
    // SAFETY: sideway's Device is #[repr(transparent)] over `*mut ibv_device` (plus a
    // zero-sized lifetime marker), so the two have the same layout. We need the raw
    // pointer because sideway's transport_type() panics on values it does not know.
    unsafe { std::mem::transmute::<Device<'_>, *mut ibv_device>(device) }
}

fn c_chars_to_string(chars: &[libc::c_char]) -> String {
    let bytes: Vec<u8> = chars
        .iter()
        .take_while(|c| **c != 0)
        .map(|c| *c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// An opened device. Dropping it closes the device.
pub struct OpenDevice {
    name: String,
    transport: i32,
    ibdev_path: PathBuf,
    context: Arc<DeviceContext>,
}

impl std::fmt::Debug for OpenDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenDevice")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// Open a device by name; the error lists the devices libibverbs does see.
pub fn open_device(name: &str) -> Result<OpenDevice, VerbsError> {
    let mut devices = open_devices(Some(name))?;
    Ok(devices.remove(0))
}

/// Open every device libibverbs lists (or only `only`), from one device list: each
/// `ibv_get_device_list` rescans sysfs, which is slow under emulation and on big hosts.
/// The first device that does not open is the error.
pub fn open_devices(only: Option<&str>) -> Result<Vec<OpenDevice>, VerbsError> {
    let each = open_each(only)?;
    if let Some(name) = only {
        if each.is_empty() {
            return Err(VerbsError::NoSuchDevice {
                device: name.to_string(),
                available: device_names()?,
            });
        }
    }
    each.into_iter().map(|(_, opened)| opened).collect()
}

/// Each device libibverbs lists, by name, opened or with the reason it did not open.
pub type EachDevice = Vec<(String, Result<OpenDevice, VerbsError>)>;

/// Like `open_devices`, but one device that fails to open (EACCES on its uverbs node)
/// does not hide the others: each listed device comes with its own result. The outer
/// error is for the list itself (no libibverbs, no kernel support).
pub fn open_each(only: Option<&str>) -> Result<EachDevice, VerbsError> {
    let list = device_list()?;
    let mut out = Vec::new();
    for device in list.iter() {
        let name = device.name();
        if only.is_some_and(|wanted| wanted != name) {
            continue;
        }
        let raw = raw_device(device);
        // SAFETY: `raw` comes from the live device list, which outlives these reads.
        let (transport, ibdev_path, node_name) = unsafe {
            (
                (*raw).transport_type,
                PathBuf::from(c_chars_to_string(&(*raw).ibdev_path)),
                c_chars_to_string(&(*raw).dev_name),
            )
        };
        let opened = device
            .open()
            .map(|context| OpenDevice {
                name: name.clone(),
                transport,
                ibdev_path,
                context,
            })
            .map_err(|e| {
                let errno = match e.0 {
                    OpenDeviceErrorKind::Ibverbs(io) => io.raw_os_error(),
                    _ => None,
                }
                .unwrap_or(libc::EIO);
                VerbsError::Open {
                    device: name.clone(),
                    errno: node_errno(&node_name, errno),
                }
            });
        out.push((name, opened));
    }
    // libibverbs keeps its own reference to an opened device, so the list may go now.
    drop(list);
    Ok(out)
}

/// libibverbs reports ENOENT when /dev/infiniband/uverbsN exists but this user may not
/// open it (after the node, it tries /dev/char/MAJ:MIN, which is missing), so the reader
/// would be told to load ib_uverbs. Ask the node itself whether it is a permission problem.
fn node_errno(node_name: &str, errno: i32) -> i32 {
    if errno != libc::ENOENT || node_name.is_empty() || node_name.contains('/') {
        return errno;
    }
    let Ok(path) = CString::new(format!("/dev/infiniband/{node_name}")) else {
        return errno;
    };
    // SAFETY: access() with a valid C string.
    let ret = unsafe { libc::access(path.as_ptr(), libc::R_OK | libc::W_OK) };
    if ret == 0 {
        return errno;
    }
    match std::io::Error::last_os_error().raw_os_error() {
        Some(real @ (libc::EACCES | libc::EPERM)) => real,
        _ => errno,
    }
}

impl OpenDevice {
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `enum ibv_transport_type`: 0 InfiniBand, 1 iWARP, 2 usNIC, 3 usNIC UDP, 4 unspecified.
    pub fn transport(&self) -> i32 {
        self.transport
    }

    /// The raw context, for the data path (qp.rs) built on this device.
    pub(super) fn raw(&self) -> *mut ibv_context {
        // SAFETY: the pointer lives as long as self.context, which we hold.
        unsafe { self.context.context().as_ptr() }
    }

    /// Completion vectors of the opened context (ibv_devinfo prints them too).
    pub fn num_comp_vectors(&self) -> i32 {
        // SAFETY: the context is open for as long as self lives.
        unsafe { (*self.raw()).num_comp_vectors }
    }

    /// `board_id` from sysfs, as ibv_devinfo reads it: absent or empty means none.
    pub fn board_id(&self) -> Option<String> {
        let text = std::fs::read_to_string(self.ibdev_path.join("board_id")).ok()?;
        let text = text.trim_end_matches('\n').to_string();
        (!text.is_empty()).then_some(text)
    }

    pub fn query_device(&self) -> Result<DeviceAttrs, VerbsError> {
        // SAFETY: the context is open for as long as self lives.
        unsafe { device_attrs(self.raw()) }.map_err(|errno| VerbsError::QueryDevice {
            device: self.name.clone(),
            errno,
        })
    }

    pub fn query_port(&self, port: u8) -> Result<PortAttrs, VerbsError> {
        // SAFETY: the context is open for as long as self lives.
        unsafe { port_attrs(self.raw(), port) }.map_err(|errno| VerbsError::QueryPort {
            device: self.name.clone(),
            port,
            errno,
        })
    }

    /// One GID table slot. An empty slot reads as the zero GID (libibverbs maps ENODATA).
    pub fn query_gid(&self, port: u8, index: u32) -> Result<Gid, VerbsError> {
        // SAFETY: the context is open for as long as self lives.
        unsafe { gid(self.raw(), port, index) }.map_err(|errno| VerbsError::QueryGid {
            device: self.name.clone(),
            port,
            index,
            errno,
        })
    }

    /// The GID's type (see [`gid_type`]); None when libibverbs cannot tell.
    pub fn query_gid_type(&self, port: u8, index: u32, link_layer: u8) -> Option<GidType> {
        // SAFETY: the context is open for as long as self lives.
        unsafe { gid_type(self.raw(), port, index, link_layer) }
    }

    /// Every populated GID of every port in one call (`ibv_query_gid_table`): a 1024-slot
    /// table costs one ioctl, where sysfs costs a file read per slot (seconds for a
    /// dozen devices under emulation). `slots` is the sum of the ports' `gid_tbl_len`.
    /// An error (an old kernel without the ioctl) sends the caller back to sysfs.
    pub fn gid_table(&self, slots: usize) -> Result<Vec<TableGid>, VerbsError> {
        let mut entries: Vec<ibv_gid_entry> = Vec::with_capacity(slots.max(1));
        // SAFETY: the context is open; the buffer holds `capacity` entries and the call
        // writes at most `max_entries` of them, returning how many.
        let n =
            unsafe { ibv_query_gid_table(self.raw(), entries.as_mut_ptr(), entries.capacity(), 0) };
        if n < 0 {
            return Err(VerbsError::QueryGid {
                device: self.name.clone(),
                port: 0,
                index: 0,
                errno: i32::try_from(-n).unwrap_or(libc::EIO),
            });
        }
        // SAFETY: the call initialised the first n entries, n <= capacity.
        unsafe { entries.set_len((n as usize).min(entries.capacity())) };
        Ok(entries
            .iter()
            .map(|e| TableGid {
                port: e.port_num,
                index: e.gid_index,
                // SAFETY: every bit pattern of the union is a valid [u8; 16].
                gid: Gid(unsafe { e.gid.raw }),
                // enum ibv_gid_type in verbs.h: IB 0, RoCE v1 1, RoCE v2 2.
                gid_type: match e.gid_type {
                    0 => GidType::Ib,
                    1 => GidType::RoceV1,
                    2 => GidType::RoceV2,
                    other => GidType::Other(format!("unknown type {other}")),
                },
                ndev_ifindex: e.ndev_ifindex,
            })
            .collect())
    }

    /// Every non-zero GID of a port, queried one index at a time (never the table call,
    /// which some libibverbs versions reject and sideway unwraps).
    pub fn port_gids(&self, port: u8, attrs: &PortAttrs) -> Result<Vec<VerbsGid>, VerbsError> {
        let len = u32::try_from(attrs.gid_tbl_len).unwrap_or(0);
        let mut gids = Vec::new();
        for index in 0..len {
            let gid = self.query_gid(port, index)?;
            if gid.is_zero() {
                continue;
            }
            let gid_type = self.query_gid_type(port, index, attrs.link_layer);
            gids.push(VerbsGid {
                index,
                gid,
                gid_type,
            });
        }
        Ok(gids)
    }
}

// The queries on any open context: one opened here, or the one librdmacm opened for a
// cm_id (cm.rs). Errors are the bare errno; each caller adds its own context.

/// `ibv_query_device_ex`. Safety: `ctx` is an open context.
pub(super) unsafe fn device_attrs(ctx: *mut ibv_context) -> Result<DeviceAttrs, i32> {
    // Zeroed, not uninit: when the provider has no query_device_ex, the fallback fills
    // only the legacy part and the extended fields must read as "not supported" (0).
    let mut attr = MaybeUninit::<ibv_device_attr_ex>::zeroed();
    // SAFETY: open context (the caller's promise) and a writable, correctly sized struct.
    let ret = unsafe { ibv_query_device_ex(ctx, std::ptr::null(), attr.as_mut_ptr()) };
    if ret != 0 {
        return Err(errno_of(ret));
    }
    // SAFETY: all-zero is a valid value of this plain C struct, and the call succeeded.
    Ok(DeviceAttrs::from_raw(unsafe { &attr.assume_init() }))
}

/// `ibv_query_port`. Safety: `ctx` is an open context.
pub(super) unsafe fn port_attrs(ctx: *mut ibv_context, port: u8) -> Result<PortAttrs, i32> {
    let mut attr = MaybeUninit::<ibv_port_attr>::zeroed();
    // SAFETY: open context (the caller's promise) and a writable, correctly sized struct.
    let ret = unsafe { ibv_query_port(ctx, port, attr.as_mut_ptr()) };
    if ret != 0 {
        return Err(errno_of(ret));
    }
    // SAFETY: all-zero is a valid value of this plain C struct, and the call succeeded.
    Ok(PortAttrs::from_raw(unsafe { &attr.assume_init() }))
}

/// `ibv_query_gid`: one slot, the zero GID when empty. Safety: `ctx` is an open context.
pub(super) unsafe fn gid(ctx: *mut ibv_context, port: u8, index: u32) -> Result<Gid, i32> {
    let c_index = libc::c_int::try_from(index).map_err(|_| libc::EINVAL)?;
    let mut gid = ibv_gid { raw: [0; 16] };
    // SAFETY: open context (the caller's promise) and a writable 16-byte union.
    let ret = unsafe { ibv_query_gid(ctx, port, c_index, &mut gid) };
    if ret != 0 {
        return Err(errno_of(ret));
    }
    // SAFETY: every bit pattern of the union is a valid [u8; 16].
    Ok(Gid(unsafe { gid.raw }))
}

/// A port re-read mid-run against what its QP was connected with (`sgid`: the QP's source
/// GID index and GID): the one read both exchanges make when a completion does not come.
/// An empty slot reads as the zero GID or ENODATA, depending on the libibverbs version.
/// Safety: `ctx` is an open context.
pub(super) unsafe fn port_now(
    ctx: *mut ibv_context,
    port: u8,
    sgid: Option<(u32, Gid)>,
) -> PortNow {
    // SAFETY: the caller's promise.
    let attrs = unsafe { port_attrs(ctx, port) }.ok();
    let gid_now = match sgid {
        // SAFETY: the caller's promise.
        Some((index, then)) => match unsafe { gid(ctx, port, index) } {
            Ok(now) if now.is_zero() => GidNow::Gone,
            Ok(now) if now == then => GidNow::Same,
            Ok(now) => GidNow::Changed(now.ipv6().to_string()),
            Err(libc::ENODATA) => GidNow::Gone,
            Err(_) => GidNow::Unknown,
        },
        None => GidNow::Unknown,
    };
    PortNow {
        port_state: attrs.as_ref().map(|a| {
            PortState::from_number(a.state).unwrap_or_else(|| PortState::Other(a.state.to_string()))
        }),
        active_mtu: attrs.as_ref().and_then(PortAttrs::active_mtu_bytes),
        gid_now,
    }
}

/// The GID's type as libibverbs reads it from sysfs (`gid_attrs/types/N`), refined by
/// the link layer: the kernel's "IB/RoCE v1" is IB on an InfiniBand port and RoCE v1
/// on Ethernet. None when the kernel gives no type (an empty slot) or the query fails;
/// ibv_devinfo then prints nothing for that slot. Safety: `ctx` is an open context.
pub(super) unsafe fn gid_type(
    ctx: *mut ibv_context,
    port: u8,
    index: u32,
    link_layer: u8,
) -> Option<GidType> {
    let mut sysfs_type: ibv_gid_type_sysfs = 0;
    // SAFETY: open context (the caller's promise) and a writable enum-sized integer.
    let ret = unsafe { ibv_query_gid_type(ctx, port, index, &mut sysfs_type) };
    if ret != 0 {
        return None;
    }
    match sysfs_type {
        IBV_GID_TYPE_SYSFS_IB_ROCE_V1 if link_layer == IBV_LINK_LAYER_INFINIBAND => {
            Some(GidType::Ib)
        }
        IBV_GID_TYPE_SYSFS_IB_ROCE_V1 => Some(GidType::RoceV1),
        IBV_GID_TYPE_SYSFS_ROCE_V2 => Some(GidType::RoceV2),
        other => Some(GidType::Other(format!("unknown type {other}"))),
    }
}

/// One populated GID slot as `ibv_query_gid_table` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableGid {
    pub port: u32,
    pub index: u32,
    pub gid: Gid,
    pub gid_type: GidType,
    /// The netdev's ifindex (0 on InfiniBand).
    pub ndev_ifindex: u32,
}

/// One populated GID slot as verbs reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerbsGid {
    pub index: u32,
    pub gid: Gid,
    /// None when libibverbs cannot tell the type.
    pub gid_type: Option<GidType>,
}

/// `struct ibv_device_attr_ex`, copied into plain fields with ibv_devinfo's names.
/// GUIDs are in host byte order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeviceAttrs {
    pub fw_ver: String,
    pub node_guid: u64,
    pub sys_image_guid: u64,
    pub max_mr_size: u64,
    pub page_size_cap: u64,
    pub vendor_id: u32,
    pub vendor_part_id: u32,
    pub hw_ver: u32,
    pub max_qp: i32,
    pub max_qp_wr: i32,
    pub device_cap_flags: u32,
    pub max_sge: i32,
    pub max_sge_rd: i32,
    pub max_cq: i32,
    pub max_cqe: i32,
    pub max_mr: i32,
    pub max_pd: i32,
    pub max_qp_rd_atom: i32,
    pub max_ee_rd_atom: i32,
    pub max_res_rd_atom: i32,
    pub max_qp_init_rd_atom: i32,
    pub max_ee_init_rd_atom: i32,
    pub atomic_cap: u32,
    pub max_ee: i32,
    pub max_rdd: i32,
    pub max_mw: i32,
    pub max_raw_ipv6_qp: i32,
    pub max_raw_ethy_qp: i32,
    pub max_mcast_grp: i32,
    pub max_mcast_qp_attach: i32,
    pub max_total_mcast_qp_attach: i32,
    pub max_ah: i32,
    pub max_fmr: i32,
    pub max_map_per_fmr: i32,
    pub max_srq: i32,
    pub max_srq_wr: i32,
    pub max_srq_sge: i32,
    pub max_pkeys: u16,
    pub local_ca_ack_delay: u8,
    pub phys_port_cnt: u8,
    pub general_odp_caps: u64,
    pub rc_odp_caps: u32,
    pub uc_odp_caps: u32,
    pub ud_odp_caps: u32,
    pub xrc_odp_caps: u32,
    pub completion_timestamp_mask: u64,
    /// kHz.
    pub hca_core_clock: u64,
    pub device_cap_flags_ex: u64,
    pub max_tso: u32,
    pub tso_supported_qpts: u32,
    pub rss_supported_qpts: u32,
    pub max_rwq_indirection_tables: u32,
    pub max_rwq_indirection_table_size: u32,
    pub rx_hash_fields_mask: u64,
    pub rx_hash_function: u8,
    pub max_wq_type_rq: u32,
    /// kbps.
    pub qp_rate_limit_min: u32,
    pub qp_rate_limit_max: u32,
    pub packet_pacing_supported_qpts: u32,
    pub raw_packet_caps: u32,
    pub tm_max_rndv_hdr_size: u32,
    pub tm_max_num_tags: u32,
    pub tm_flags: u32,
    pub tm_max_ops: u32,
    pub tm_max_sge: u32,
    pub max_cq_count: u16,
    /// Microseconds.
    pub max_cq_period: u16,
    /// Bytes.
    pub max_dm_size: u64,
}

impl DeviceAttrs {
    fn from_raw(a: &ibv_device_attr_ex) -> DeviceAttrs {
        let o = &a.orig_attr;
        DeviceAttrs {
            fw_ver: c_chars_to_string(&o.fw_ver),
            node_guid: u64::from_be(o.node_guid),
            sys_image_guid: u64::from_be(o.sys_image_guid),
            max_mr_size: o.max_mr_size,
            page_size_cap: o.page_size_cap,
            vendor_id: o.vendor_id,
            vendor_part_id: o.vendor_part_id,
            hw_ver: o.hw_ver,
            max_qp: o.max_qp,
            max_qp_wr: o.max_qp_wr,
            device_cap_flags: o.device_cap_flags,
            max_sge: o.max_sge,
            max_sge_rd: o.max_sge_rd,
            max_cq: o.max_cq,
            max_cqe: o.max_cqe,
            max_mr: o.max_mr,
            max_pd: o.max_pd,
            max_qp_rd_atom: o.max_qp_rd_atom,
            max_ee_rd_atom: o.max_ee_rd_atom,
            max_res_rd_atom: o.max_res_rd_atom,
            max_qp_init_rd_atom: o.max_qp_init_rd_atom,
            max_ee_init_rd_atom: o.max_ee_init_rd_atom,
            atomic_cap: o.atomic_cap,
            max_ee: o.max_ee,
            max_rdd: o.max_rdd,
            max_mw: o.max_mw,
            max_raw_ipv6_qp: o.max_raw_ipv6_qp,
            max_raw_ethy_qp: o.max_raw_ethy_qp,
            max_mcast_grp: o.max_mcast_grp,
            max_mcast_qp_attach: o.max_mcast_qp_attach,
            max_total_mcast_qp_attach: o.max_total_mcast_qp_attach,
            max_ah: o.max_ah,
            max_fmr: o.max_fmr,
            max_map_per_fmr: o.max_map_per_fmr,
            max_srq: o.max_srq,
            max_srq_wr: o.max_srq_wr,
            max_srq_sge: o.max_srq_sge,
            max_pkeys: o.max_pkeys,
            local_ca_ack_delay: o.local_ca_ack_delay,
            phys_port_cnt: o.phys_port_cnt,
            general_odp_caps: a.odp_caps.general_caps,
            rc_odp_caps: a.odp_caps.per_transport_caps.rc_odp_caps,
            uc_odp_caps: a.odp_caps.per_transport_caps.uc_odp_caps,
            ud_odp_caps: a.odp_caps.per_transport_caps.ud_odp_caps,
            xrc_odp_caps: a.xrc_odp_caps,
            completion_timestamp_mask: a.completion_timestamp_mask,
            hca_core_clock: a.hca_core_clock,
            device_cap_flags_ex: a.device_cap_flags_ex,
            max_tso: a.tso_caps.max_tso,
            tso_supported_qpts: a.tso_caps.supported_qpts,
            rss_supported_qpts: a.rss_caps.supported_qpts,
            max_rwq_indirection_tables: a.rss_caps.max_rwq_indirection_tables,
            max_rwq_indirection_table_size: a.rss_caps.max_rwq_indirection_table_size,
            rx_hash_fields_mask: a.rss_caps.rx_hash_fields_mask,
            rx_hash_function: a.rss_caps.rx_hash_function,
            max_wq_type_rq: a.max_wq_type_rq,
            qp_rate_limit_min: a.packet_pacing_caps.qp_rate_limit_min,
            qp_rate_limit_max: a.packet_pacing_caps.qp_rate_limit_max,
            packet_pacing_supported_qpts: a.packet_pacing_caps.supported_qpts,
            raw_packet_caps: a.raw_packet_caps,
            tm_max_rndv_hdr_size: a.tm_caps.max_rndv_hdr_size,
            tm_max_num_tags: a.tm_caps.max_num_tags,
            tm_flags: a.tm_caps.flags,
            tm_max_ops: a.tm_caps.max_ops,
            tm_max_sge: a.tm_caps.max_sge,
            max_cq_count: a.cq_mod_caps.max_cq_count,
            max_cq_period: a.cq_mod_caps.max_cq_period,
            max_dm_size: a.max_dm_size,
        }
    }
}

/// `struct ibv_port_attr`, copied into plain fields (`lid` is ibv_devinfo's `port_lid`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PortAttrs {
    pub state: u32,
    pub max_mtu: u32,
    pub active_mtu: u32,
    pub gid_tbl_len: i32,
    pub port_cap_flags: u32,
    pub max_msg_sz: u32,
    pub bad_pkey_cntr: u32,
    pub qkey_viol_cntr: u32,
    pub pkey_tbl_len: u16,
    pub lid: u16,
    pub sm_lid: u16,
    pub lmc: u8,
    pub max_vl_num: u8,
    pub sm_sl: u8,
    pub subnet_timeout: u8,
    pub init_type_reply: u8,
    pub active_width: u8,
    pub active_speed: u8,
    pub phys_state: u8,
    pub link_layer: u8,
    pub flags: u8,
    pub port_cap_flags2: u16,
    /// Set only by libibverbs versions that know XDR-era speeds; 0 otherwise.
    pub active_speed_ex: u32,
}

/// `enum ibv_mtu` in bytes: 1 is 256, each step doubles up to 5 (4096); None for a value
/// outside the enum, so a provider's garbage never shows as a size.
pub fn mtu_bytes(mtu: u32) -> Option<u32> {
    (1..=5).contains(&mtu).then(|| 128u32 << mtu)
}

impl PortAttrs {
    /// The active MTU in bytes (ibv_devinfo's `active_mtu`).
    pub fn active_mtu_bytes(&self) -> Option<u32> {
        mtu_bytes(self.active_mtu)
    }

    /// The largest MTU the port supports, in bytes (ibv_devinfo's `max_mtu`).
    pub fn max_mtu_bytes(&self) -> Option<u32> {
        mtu_bytes(self.max_mtu)
    }

    fn from_raw(a: &ibv_port_attr) -> PortAttrs {
        PortAttrs {
            state: a.state,
            max_mtu: a.max_mtu,
            active_mtu: a.active_mtu,
            gid_tbl_len: a.gid_tbl_len,
            port_cap_flags: a.port_cap_flags,
            max_msg_sz: a.max_msg_sz,
            bad_pkey_cntr: a.bad_pkey_cntr,
            qkey_viol_cntr: a.qkey_viol_cntr,
            pkey_tbl_len: a.pkey_tbl_len,
            lid: a.lid,
            sm_lid: a.sm_lid,
            lmc: a.lmc,
            max_vl_num: a.max_vl_num,
            sm_sl: a.sm_sl,
            subnet_timeout: a.subnet_timeout,
            init_type_reply: a.init_type_reply,
            active_width: a.active_width,
            active_speed: a.active_speed,
            phys_state: a.phys_state,
            link_layer: a.link_layer,
            flags: a.flags,
            port_cap_flags2: a.port_cap_flags2,
            active_speed_ex: a.active_speed_ex,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_strings_stop_at_nul_and_survive_bad_utf8() {
        let chars: Vec<libc::c_char> = b"0.0.0\0junk".iter().map(|b| *b as libc::c_char).collect();
        assert_eq!(c_chars_to_string(&chars), "0.0.0");
        let bad: Vec<libc::c_char> = [0xffu8, b'x', 0]
            .iter()
            .map(|b| *b as libc::c_char)
            .collect();
        assert_eq!(c_chars_to_string(&bad), "\u{fffd}x");
    }

    #[test]
    fn provider_comes_from_the_parent_driver_or_the_soft_device_kind() {
        let tree = tempfile::tempdir().unwrap();
        let device = |name: &str, driver: Option<&str>, parent: bool| {
            let dir = tree.path().join(name);
            std::fs::create_dir_all(&dir).unwrap();
            if let Some(driver) = driver {
                let drv = tree.path().join("drivers").join(driver);
                std::fs::create_dir_all(&drv).unwrap();
                std::fs::create_dir_all(dir.join("device")).unwrap();
                std::os::unix::fs::symlink(&drv, dir.join("device/driver")).unwrap();
            }
            if parent {
                std::fs::write(dir.join("parent"), "eth0\n").unwrap();
            }
            dir
        };
        assert_eq!(
            provider_for(&device("mlx5_0", Some("mlx5_core"), false)),
            Some("mlx5")
        );
        assert_eq!(
            provider_for(&device("bnxt_re0", Some("bnxt_en"), false)),
            Some("bnxt_re")
        );
        assert_eq!(
            provider_for(&device("efa_0", Some("efa"), false)),
            Some("efa")
        );
        assert_eq!(provider_for(&device("roce7", None, true)), Some("rxe"));
        assert_eq!(provider_for(&device("siw_eth0", None, false)), Some("siw"));
        // Unknown: libibverbs loads every provider itself, as before.
        assert_eq!(provider_for(&device("new0", Some("newnic"), false)), None);
    }

    #[test]
    fn mtu_enum_to_bytes() {
        assert_eq!(mtu_bytes(1), Some(256));
        assert_eq!(mtu_bytes(3), Some(1024));
        assert_eq!(mtu_bytes(5), Some(4096));
        assert_eq!(mtu_bytes(0), None);
        assert_eq!(mtu_bytes(6), None);
    }

    #[test]
    fn errno_from_negative_return_uses_errno_and_positive_is_the_errno() {
        assert_eq!(errno_of(libc::EINVAL), libc::EINVAL);
    }

    /// On a host without an RDMA stack the probe must answer, not panic; on one with it,
    /// the device list must be consistent with what open_device accepts.
    #[test]
    fn probe_answers_without_panicking() {
        match device_names() {
            Ok(names) => {
                for name in names {
                    open_device(&name).expect("a listed device opens");
                }
            }
            Err(e) => {
                let text = e.to_string();
                assert!(!text.is_empty());
                eprintln!("no verbs here (expected on a host without RDMA): {text}");
            }
        }
        let err = open_device("no-such-device-xyz").unwrap_err();
        assert!(
            matches!(
                err,
                VerbsError::NoSuchDevice { .. }
                    | VerbsError::LibraryMissing { .. }
                    | VerbsError::DeviceList { .. }
            ),
            "{err}"
        );
    }
}
