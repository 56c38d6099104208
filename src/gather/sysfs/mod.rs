//! The sysfs reader: `class/infiniband`, `class/infiniband_verbs` and `class/net` under a
//! root that is `/sys` on a live host or a captured tree (`--sysfs DIR`).
//!
//! Real trees are incomplete: a missing file is recorded as absent, a file that exists but
//! cannot be read is recorded as absent plus a `ReadProblem` naming its path. Only the
//! things a command cannot go on without (the device list, a named device or port) are
//! errors. All parsing lives in `parse`, so this file is only about which files to read.

mod counters;
pub use counters::NO_PMA;
pub mod parse;
mod tables;

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::model::device::{
    is_soft_roce, Device, LinkLayer, Netdev, NetdevSource, OperState, Port, ReadProblem,
    VerbsStatus,
};

/// [`is_soft_roce`] on `class/infiniband/NAME`'s driver link, `parent` and `node_desc`.
pub fn soft_roce_in(device_dir: &Path, name: &str) -> bool {
    let mut buf = String::new();
    let node_desc = read_small(&device_dir.join("node_desc"), &mut buf)
        .ok()
        .map(str::to_string);
    is_soft_roce(
        name,
        device_dir.join("device/driver").exists(),
        device_dir.join("parent").exists(),
        node_desc.as_deref(),
    )
}

#[derive(Debug, Clone)]
pub struct SysfsRoot {
    root: PathBuf,
    /// False: read each Ethernet port's GID table only up to its first netdev (see
    /// `netdev_only`).
    full_gid_tables: bool,
    /// False: skip the device's own attributes (see `ports_only`).
    device_attrs: bool,
    /// False: of a port, read only its link layer (see `link_layer_only`).
    port_attrs: bool,
}

impl SysfsRoot {
    pub fn new(root: impl Into<PathBuf>) -> SysfsRoot {
        SysfsRoot {
            root: root.into(),
            full_gid_tables: true,
            device_attrs: true,
            port_attrs: true,
        }
    }

    /// For views that show a port's netdev but not its GID table (the `devices` table):
    /// a port's `gids` and `gid_netdevs` then stop at the first GID that names a netdev,
    /// index 0 on a healthy port, instead of costing a read per slot of a 1024-slot
    /// table, which is most of `devices`' time on a real host and far more under
    /// emulation.
    pub fn netdev_only(mut self) -> SysfsRoot {
        self.full_gid_tables = false;
        self
    }

    /// For views of ports alone (`ports`, `gids`): a device's GUIDs, firmware,
    /// description, board and hardware revision (seven files per device) and the uverbs
    /// map are left unread (None). Its node type and driver are still read: they explain a
    /// device that libibverbs does not list.
    pub fn ports_only(mut self) -> SysfsRoot {
        self.device_attrs = false;
        self
    }

    /// For `gids`, which shows each port's GID table and nothing else of it: a port is its
    /// number and link layer (whether its GIDs have IP addresses), and its state, rate,
    /// LIDs, netdev and GIDs are left unread. The caller adds the table (verbs, or
    /// `gid_table`). Implies `ports_only`.
    pub fn link_layer_only(mut self) -> SysfsRoot {
        self.device_attrs = false;
        self.port_attrs = false;
        self
    }

    pub fn path(&self) -> &Path {
        &self.root
    }

    fn class_infiniband(&self) -> PathBuf {
        self.root.join("class/infiniband")
    }

    fn device_dir(&self, name: &str) -> PathBuf {
        self.class_infiniband().join(name)
    }

    /// RDMA device names in natural order (mlx5_2 before mlx5_10). `NoRdma` when
    /// `class/infiniband` does not exist; an empty list when it exists but is empty.
    pub fn device_names(&self) -> Result<Vec<String>> {
        let dir = self.class_infiniband();
        let mut names = match list_dir(&dir) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(Error::NoRdma { path: dir })
            }
            Err(source) => return Err(Error::Io { path: dir, source }),
        };
        names.sort_by(|a, b| parse::natural_cmp(a, b));
        Ok(names)
    }

    /// Every device with its ports, each port with its populated GID table and netdev.
    pub fn devices(&self) -> Result<Vec<Device>> {
        let uverbs = self.wanted_uverbs_map();
        self.device_names()?
            .into_iter()
            .map(|name| self.read_device(&name, &uverbs))
            .collect()
    }

    /// What `devices -d`, `ports DEV/PORT` and `gids -i N` select: one device or all, and
    /// within them one port number or all. Errors: `NoRdma`, `NoDevices` (class/infiniband
    /// empty), `NoSuchDevice`, `NoSuchPort` (for `-i N` alone: when no device has port N).
    pub fn select(&self, device: Option<&str>, port: Option<u32>) -> Result<Vec<Device>> {
        let mut devices = match device {
            Some(name) => vec![self.device(name)?],
            None => self.devices()?,
        };
        if devices.is_empty() {
            return Err(Error::NoDevices {
                path: self.class_infiniband(),
            });
        }
        let Some(port) = port else { return Ok(devices) };
        let mut available: Vec<u32> = devices
            .iter()
            .flat_map(|d| d.ports.iter().map(|p| p.number))
            .collect();
        available.sort_unstable();
        available.dedup();
        for d in &mut devices {
            d.ports.retain(|p| p.number == port);
        }
        devices.retain(|d| !d.ports.is_empty());
        if devices.is_empty() {
            return Err(Error::NoSuchPort {
                device: device.unwrap_or("any device").to_string(),
                port,
                available: available.iter().map(u32::to_string).collect(),
            });
        }
        Ok(devices)
    }

    /// One device by name; `NoSuchDevice` lists the devices that do exist.
    pub fn device(&self, name: &str) -> Result<Device> {
        self.check_device(name)?;
        self.read_device(name, &self.wanted_uverbs_map())
    }

    fn wanted_uverbs_map(&self) -> BTreeMap<String, String> {
        if self.device_attrs {
            self.uverbs_map()
        } else {
            BTreeMap::new()
        }
    }

    /// One port of one device; `NoSuchPort` lists the device's ports.
    pub fn port(&self, device: &str, port: u32) -> Result<Port> {
        self.check_port(device, port)?;
        Ok(self.read_port(device, port))
    }

    /// Port numbers of a device, ascending.
    pub fn port_numbers(&self, device: &str) -> Result<Vec<u32>> {
        self.check_device(device)?;
        Ok(self.list_ports(device))
    }

    /// Every netdev in `class/net`, in natural order; empty when there is none.
    pub fn netdev_names(&self) -> Vec<String> {
        let mut names = list_dir(&self.root.join("class/net")).unwrap_or_default();
        names.sort_by(|a, b| parse::natural_cmp(a, b));
        names
    }

    /// `class/net/<name>/`; None when the interface is not there.
    pub fn netdev(&self, name: &str) -> Option<Netdev> {
        self.read_netdev(name, &mut Vec::new())
    }

    fn read_netdev(&self, name: &str, problems: &mut Vec<ReadProblem>) -> Option<Netdev> {
        if name.is_empty() || name.contains('/') {
            return None;
        }
        let dir = past_class_link(self.root.join("class/net").join(name));
        if !dir.is_dir() {
            return None;
        }
        let mut attr = |f: &str| read_attr(&dir.join(f), problems);
        Some(Netdev {
            name: name.to_string(),
            operstate: attr("operstate").map(|t| OperState::parse(&t)),
            admin_up: attr("flags").as_deref().and_then(parse::admin_up),
            mtu: attr("mtu").as_deref().and_then(parse::dec_u32),
            address: attr("address"),
        })
    }

    /// RDMA device name → `uverbsN`, from `class/infiniband_verbs/*/ibdev`.
    pub fn uverbs_map(&self) -> BTreeMap<String, String> {
        let dir = self.root.join("class/infiniband_verbs");
        let mut map = BTreeMap::new();
        for node in list_dir(&dir).unwrap_or_default() {
            if let Some(ibdev) = read_attr(&dir.join(&node).join("ibdev"), &mut Vec::new()) {
                map.insert(ibdev, node);
            }
        }
        map
    }

    fn check_device(&self, name: &str) -> Result<()> {
        let names = self.device_names()?;
        if names.iter().any(|n| n == name) {
            Ok(())
        } else {
            Err(Error::NoSuchDevice {
                name: name.to_string(),
                available: names,
            })
        }
    }

    /// `NoSuchDevice` listing the devices, or `NoSuchPort` listing the device's ports.
    pub fn check_port(&self, device: &str, port: u32) -> Result<()> {
        let ports = self.port_numbers(device)?;
        if ports.contains(&port) {
            Ok(())
        } else {
            Err(Error::NoSuchPort {
                device: device.to_string(),
                port,
                available: ports.iter().map(u32::to_string).collect(),
            })
        }
    }

    /// Every port's `state` (one small read per port, nothing else), for the exporter's
    /// poller that counts state changes between scrapes; None where it cannot be read.
    pub fn port_states(&self) -> Vec<(String, u32, Option<crate::model::device::PortState>)> {
        let mut out = Vec::new();
        let mut buf = String::with_capacity(32);
        for name in self.device_names().unwrap_or_default() {
            for port in self.list_ports(&name) {
                let path = self.port_dir(&name, port).join("state");
                let state = read_small(&path, &mut buf).ok().map(parse::port_state);
                out.push((name.clone(), port, state));
            }
        }
        out
    }

    fn list_ports(&self, device: &str) -> Vec<u32> {
        let mut ports: Vec<u32> = list_dir(&self.device_dir(device).join("ports"))
            .unwrap_or_default()
            .iter()
            .filter_map(|n| n.parse().ok())
            .collect();
        ports.sort_unstable();
        ports
    }

    fn port_dir(&self, device: &str, port: u32) -> PathBuf {
        self.device_dir(device).join("ports").join(port.to_string())
    }

    fn read_device(&self, name: &str, uverbs: &BTreeMap<String, String>) -> Result<Device> {
        let dir = past_class_link(self.device_dir(name));
        let mut problems = Vec::new();
        let wanted = self.device_attrs;
        let mut attr = |f: &str| read_attr(&dir.join(f), &mut problems);
        let node_type = attr("node_type").map(|t| parse::node_type(&t));
        let mut attr = |f: &str| wanted.then(|| attr(f)).flatten();
        let node_guid = attr("node_guid").and_then(|t| parse::guid(&t));
        let sys_image_guid = attr("sys_image_guid").and_then(|t| parse::guid(&t));
        let fw_ver = attr("fw_ver");
        let node_desc = attr("node_desc");
        let hca_type = attr("hca_type");
        let board_id = attr("board_id");
        let hw_rev = attr("hw_rev");
        let driver = read_driver(&dir, &mut problems);
        let ports = self
            .list_ports(name)
            .into_iter()
            .map(|p| self.read_port_in(&dir, name, p))
            .collect();
        Ok(Device {
            name: name.to_string(),
            node_type,
            node_guid,
            sys_image_guid,
            fw_ver,
            node_desc,
            hca_type,
            board_id,
            hw_rev,
            driver,
            uverbs: uverbs.get(name).cloned(),
            ports,
            verbs: VerbsStatus::not_asked(),
            read_problems: problems,
            removal: None,
        })
    }

    fn read_port(&self, device: &str, number: u32) -> Port {
        self.read_port_in(&past_class_link(self.device_dir(device)), device, number)
    }

    /// A port of the device whose directory is `device_dir`.
    fn read_port_in(&self, device_dir: &Path, device: &str, number: u32) -> Port {
        let dir = device_dir.join("ports").join(number.to_string());
        let mut problems = Vec::new();
        let mut attr = |f: &str| read_attr(&dir.join(f), &mut problems);
        // No link_layer file is InfiniBand: the attribute came with RoCE (2.6.37), and
        // ibsim's simulated tree has none; libibverbs reads an unspecified link layer as
        // InfiniBand too. An empty or unreadable file stays unknown.
        let link_layer = match attr("link_layer") {
            Some(t) => Some(parse::link_layer(&t)),
            None if !dir.join("link_layer").exists() && dir.is_dir() => Some(LinkLayer::InfiniBand),
            None => None,
        };
        let wanted = self.port_attrs;
        let mut attr = |f: &str| wanted.then(|| attr(f)).flatten();
        let state = attr("state").map(|t| parse::port_state(&t));
        // A port directory without its `state` is a port whose state is unknown, not one
        // that is down: recorded with its errno like a file that would not read, so the rule
        // names the file instead of the cable.
        let state_gone = wanted && state.is_none() && dir.is_dir() && !dir.join("state").exists();
        let phys_state = attr("phys_state").map(|t| parse::phys_state(&t));
        let rate = attr("rate").map(|t| parse::rate(&t));
        let lid = attr("lid").and_then(|t| parse::hex_u32(&t));
        let sm_lid = attr("sm_lid").and_then(|t| parse::hex_u32(&t));
        let lmc = attr("lid_mask_count")
            .and_then(|t| parse::dec_u32(&t))
            .and_then(|v| u8::try_from(v).ok());
        let sm_sl = attr("sm_sl")
            .and_then(|t| parse::dec_u32(&t))
            .and_then(|v| u8::try_from(v).ok());
        let cap_mask = attr("cap_mask").and_then(|t| parse::hex_u32(&t));
        if state_gone {
            problems.push(ReadProblem {
                path: dir.join("state"),
                error: io::Error::from_raw_os_error(libc::ENOENT).to_string(),
            });
        }
        let ethernet = link_layer == Some(LinkLayer::Ethernet);
        let gids = if !wanted {
            Vec::new()
        } else if self.full_gid_tables {
            tables::read_gid_table(&dir, ethernet, false)
        } else if ethernet {
            tables::read_gids_to_first_netdev(&dir)
        } else {
            // InfiniBand GIDs name no netdev; IPoIB is found under device/net.
            Vec::new()
        };

        let mut gid_netdevs: Vec<String> = Vec::new();
        for nd in gids.iter().filter_map(|g| g.netdev.as_ref()) {
            if !gid_netdevs.contains(nd) {
                gid_netdevs.push(nd.clone());
            }
        }
        let (netdev_name, netdev_source) = match gids.iter().find_map(|g| g.netdev.clone()) {
            Some(nd) => (Some(nd), Some(NetdevSource::GidNdevs)),
            None if !wanted => (None, None),
            None => match device_net_for_port(device_dir, number) {
                Some(nd) => (Some(nd), Some(NetdevSource::DeviceNet)),
                None => match read_attr(&device_dir.join("parent"), &mut problems) {
                    Some(nd) => (Some(nd), Some(NetdevSource::Parent)),
                    None => (None, None),
                },
            },
        };
        let netdev = netdev_name.map(|n| {
            self.read_netdev(&n, &mut problems).unwrap_or(Netdev {
                name: n,
                operstate: None,
                admin_up: None,
                mtu: None,
                address: None,
            })
        });
        Port {
            device: device.to_string(),
            number,
            state,
            phys_state,
            rate,
            link_layer,
            lid,
            sm_lid,
            lmc,
            sm_sl,
            cap_mask,
            netdev,
            netdev_source,
            gid_netdevs,
            gids,
            active_mtu: None,
            max_mtu: None,
            verbs: VerbsStatus::not_asked(),
            read_problems: problems,
            soft_roce: soft_roce_in(device_dir, device),
        }
    }
}

/// A `class/*/NAME` entry, which on a live host is a relative symlink into `devices/`,
/// as the directory it points to. Every attribute read below it then skips resolving the
/// link again: a quarter of the cost of each read under emulation. The `..` steps are
/// taken lexically, which is right because `class/*` are plain directories; anything
/// else (a captured tree's real directory, an absolute link) stays as it is.
fn past_class_link(entry: PathBuf) -> PathBuf {
    let Ok(target) = fs::read_link(&entry) else {
        return entry;
    };
    let Some(mut resolved) = entry.parent().map(Path::to_path_buf) else {
        return entry;
    };
    if target.is_absolute() {
        return entry;
    }
    for part in target.components() {
        match part {
            std::path::Component::ParentDir if resolved.pop() => {}
            std::path::Component::Normal(name) => resolved.push(name),
            std::path::Component::CurDir => {}
            _ => return entry,
        }
    }
    resolved
}

/// Names in a directory (following symlinks, as `class/*` entries are links on a live
/// host). Dot-files are skipped: no kernel object starts with a dot, but captured trees
/// keep their metadata (`.link-target`, `.driver`, `.keep`) that way.
fn list_dir(dir: &Path) -> io::Result<Vec<String>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        if let Ok(name) = entry.file_name().into_string() {
            if !name.starts_with('.') {
                out.push(name);
            }
        }
    }
    Ok(out)
}

/// One attribute, trimmed; None when missing or empty. A file that exists but cannot be
/// read (EISDIR, EACCES, EIO...) is recorded with its path.
fn read_attr(path: &Path, problems: &mut Vec<ReadProblem>) -> Option<String> {
    let mut text = String::new();
    match read_small(path, &mut text) {
        Ok(text) => parse::text(text),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => {
            problems.push(ReadProblem {
                path: path.to_path_buf(),
                error: e.to_string(),
            });
            None
        }
    }
}

/// The parent device's driver: the `device/driver` link on a live host, or the `.driver`
/// file that capture-sysfs-guest.sh writes in its place.
fn read_driver(dev_dir: &Path, problems: &mut Vec<ReadProblem>) -> Option<String> {
    if let Ok(target) = fs::read_link(dev_dir.join("device/driver")) {
        return target
            .file_name()
            .and_then(|n| n.to_str())
            .map(str::to_string);
    }
    read_attr(&dev_dir.join(".driver"), problems)
        .map(|t| t.rsplit('/').next().unwrap_or(&t).to_string())
}

/// The netdev under the parent PCI function (`device/net/*`). A function with several
/// ports (mlx4) has one netdev per port, told apart by `dev_port` (0-based).
fn device_net_for_port(dev_dir: &Path, port: u32) -> Option<String> {
    let net = dev_dir.join("device/net");
    let mut names = list_dir(&net).ok()?;
    names.sort_by(|a, b| parse::natural_cmp(a, b));
    if let [only] = names.as_slice() {
        return Some(only.clone());
    }
    names.into_iter().find(|n| {
        read_attr(&net.join(n).join("dev_port"), &mut Vec::new())
            .and_then(|t| parse::dec_u32(&t))
            .is_some_and(|dp| dp + 1 == port)
    })
}

/// A small attribute file in open, one read, close. `fs::read_to_string` also stats the
/// file and reads again for end of file: five system calls where three do, for the
/// hundreds of attributes a big host has, each costly under emulation. A kernel attribute
/// comes whole in the first read, and a regular file reads short only at its end, so a
/// read that leaves room in the buffer is the last one.
///
/// A file that is not a regular one is refused before any read: a FIFO or socket planted
/// in the tree would block the reader forever (it is opened non-blocking, so even the
/// open returns at once). A driver's attribute that blocks in its show() is a regular file:
/// the path is registered while it is read, so `deadline::within` can name it.
pub(crate) fn read_small<'b>(path: &Path, buf: &'b mut String) -> io::Result<&'b str> {
    const CHUNK: usize = 4096;
    let _reading = crate::gather::deadline::reading(path);
    let mut file = open_regular(path)?;
    let mut bytes = std::mem::take(buf).into_bytes();
    bytes.clear();
    loop {
        let filled = bytes.len();
        bytes.resize(filled + CHUNK, 0);
        let read = file.read(&mut bytes[filled..]);
        bytes.truncate(filled + *read.as_ref().unwrap_or(&0));
        let n = match read {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if n < CHUNK {
            break;
        }
    }
    *buf = String::from_utf8(bytes)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.utf8_error()))?;
    Ok(buf.as_str())
}

/// A sysfs file's whole text, read as `read_small` reads (never a FIFO, the path named
/// while it is read): for the gatherers outside this module that read sysfs.
pub fn read_text(path: &Path) -> io::Result<String> {
    let mut buf = String::new();
    read_small(path, &mut buf)?;
    Ok(buf)
}

/// A binary sysfs file (a PCI function's `config`), read as `read_text` reads.
pub fn read_bytes(path: &Path) -> io::Result<Vec<u8>> {
    let _reading = crate::gather::deadline::reading(path);
    let mut bytes = Vec::new();
    open_regular(path)?.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Opens `path` for reading without blocking, and only if it is a regular file.
pub(crate) fn open_regular(path: &Path) -> io::Result<fs::File> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let kind = file.metadata()?.file_type();
    if kind.is_file() {
        return Ok(file);
    }
    let what = if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_dir() {
        // As read(2) says it, so a directory where a file belongs reads as before.
        return Err(io::Error::from_raw_os_error(libc::EISDIR));
    } else {
        "a device node"
    };
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("not a regular file but {what}: not read (it could block every reader)"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A FIFO where a counter file belongs is refused at once, never waited on.
    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("port_rcv_data");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let mut buf = String::new();
        let err = read_small(&fifo, &mut buf).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{err}");
        assert!(err.to_string().contains("a FIFO"), "{err}");
        let mut problems = Vec::new();
        assert_eq!(read_attr(&fifo, &mut problems), None);
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].path, fifo);
    }

    #[test]
    fn read_small_reads_short_long_and_empty_files_whole() {
        let dir = tempfile::tempdir().unwrap();
        let mut buf = String::new();
        for len in [0usize, 1, 4095, 4096, 4097, 3 * 4096 + 17] {
            let text: String = (0..len)
                .map(|i| char::from(b'a' + (i % 26) as u8))
                .collect();
            let path = dir.path().join(format!("f{len}"));
            fs::write(&path, &text).unwrap();
            assert_eq!(read_small(&path, &mut buf).unwrap(), text, "{len} bytes");
        }
        let missing = read_small(&dir.path().join("none"), &mut buf).unwrap_err();
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
        let not_utf8 = dir.path().join("bin");
        fs::write(&not_utf8, [0xffu8, 0xfe]).unwrap();
        assert_eq!(
            read_small(&not_utf8, &mut buf).unwrap_err().kind(),
            io::ErrorKind::InvalidData
        );
    }

    #[test]
    fn a_class_link_is_followed_once_and_lexically() {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        write(r, "devices/virtual/infiniband/rxe0/node_type", "1: CA\n");
        fs::create_dir_all(r.join("class/infiniband")).unwrap();
        std::os::unix::fs::symlink(
            "../../devices/virtual/infiniband/rxe0",
            r.join("class/infiniband/rxe0"),
        )
        .unwrap();
        let resolved = past_class_link(r.join("class/infiniband/rxe0"));
        assert_eq!(resolved, r.join("devices/virtual/infiniband/rxe0"));
        assert!(resolved.join("node_type").is_file());
        // A real directory, as in a captured tree, stays as it is.
        write(r, "class/net/eth0/mtu", "1500\n");
        assert_eq!(
            past_class_link(r.join("class/net/eth0")),
            r.join("class/net/eth0")
        );
        // The device reads the same through the link.
        let device = SysfsRoot::new(r).device("rxe0").unwrap();
        assert_eq!(device.node_type, Some(parse::node_type("1: CA")));
    }

    #[test]
    fn ports_only_leaves_the_device_attributes_unread() {
        let root = tree();
        let full = SysfsRoot::new(root.path()).devices().unwrap();
        let light = SysfsRoot::new(root.path()).ports_only().devices().unwrap();
        assert_eq!(full.len(), light.len());
        for (f, l) in full.iter().zip(&light) {
            assert_eq!(f.ports.len(), l.ports.len());
            assert_eq!(f.node_type, l.node_type);
            assert_eq!(f.driver, l.driver);
            assert_eq!((l.node_guid, &l.fw_ver, &l.uverbs), (None, &None, &None));
            for (fp, lp) in f.ports.iter().zip(&l.ports) {
                assert_eq!(fp.state, lp.state);
                assert_eq!(fp.netdev, lp.netdev);
            }
        }
        assert!(full
            .iter()
            .any(|d| d.fw_ver.is_some() || d.node_guid.is_some()));
    }

    #[test]
    fn link_layer_only_reads_a_port_as_its_number_and_link_layer() {
        let root = tree();
        let full = SysfsRoot::new(root.path()).devices().unwrap();
        let light = SysfsRoot::new(root.path())
            .link_layer_only()
            .devices()
            .unwrap();
        let (fp, lp) = (&full[0].ports[0], &light[0].ports[0]);
        assert_eq!((fp.number, &fp.link_layer), (lp.number, &lp.link_layer));
        assert!(fp.state.is_some() && !fp.gids.is_empty() && fp.netdev.is_some());
        assert_eq!((&lp.state, &lp.lid, &lp.netdev), (&None, &None, &None));
        assert!(lp.gids.is_empty() && lp.gid_netdevs.is_empty());
        assert_eq!(light[0].node_guid, None);
    }

    pub(super) fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    pub(super) fn tree() -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        let d = "class/infiniband/mlx5_0";
        write(r, &format!("{d}/node_type"), "1: CA\n");
        write(r, &format!("{d}/node_guid"), "0a7f:bc12:45ef:d23b\n");
        write(r, &format!("{d}/fw_ver"), "\n");
        write(r, &format!("{d}/.driver"), "mlx5_core\n");
        fs::create_dir_all(r.join(format!("{d}/hca_type"))).unwrap();
        let p = format!("{d}/ports/1");
        write(r, &format!("{p}/state"), "4: ACTIVE\n");
        write(r, &format!("{p}/lid"), "0x2bc\n");
        write(r, &format!("{p}/link_layer"), "Ethernet\n");
        write(
            r,
            &format!("{p}/gids/0"),
            "fe80:0000:0000:0000:0a7f:bcff:fe12:d23b\n",
        );
        write(
            r,
            &format!("{p}/gids/1"),
            "0000:0000:0000:0000:0000:0000:0000:0000\n",
        );
        write(
            r,
            &format!("{p}/gids/2"),
            "0000:0000:0000:0000:0000:ffff:0a0b:0bfb\n",
        );
        write(r, &format!("{p}/gid_attrs/types/0"), "IB/RoCE v1\n");
        write(r, &format!("{p}/gid_attrs/ndevs/0"), "eth0\n");
        write(r, &format!("{p}/gid_attrs/types/2"), "RoCE v2\n");
        write(r, &format!("{p}/gid_attrs/ndevs/2"), "eth0\n");
        write(r, "class/net/eth0/mtu", "9000\n");
        write(r, "class/net/eth0/operstate", "up\n");
        write(r, "class/infiniband_verbs/uverbs3/ibdev", "mlx5_0\n");
        t
    }

    /// Populated P_Key slots in index order (10 after 2, not before it); empty and
    /// unparsable ones are left out; a port without `pkeys/` has none.
    #[test]
    fn netdev_only_finds_the_same_netdev_as_the_full_read() {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysfs");
        let mut compared = 0;
        for tree in list_dir(&fixtures).unwrap() {
            let full = SysfsRoot::new(fixtures.join(&tree));
            let Ok(full_devs) = full.devices() else {
                continue;
            };
            let quick = full.clone().netdev_only().devices().unwrap();
            for (f, q) in full_devs.iter().zip(&quick) {
                for (fp, qp) in f.ports.iter().zip(&q.ports) {
                    assert_eq!(fp.netdev, qp.netdev, "{tree} {}/{}", f.name, fp.number);
                    assert_eq!(fp.netdev_source, qp.netdev_source, "{tree} {}", f.name);
                    assert!(qp.gids.len() <= fp.gids.len());
                    compared += 1;
                }
            }
        }
        assert!(compared > 10, "{compared}");
    }

    #[test]
    fn reads_a_device_and_records_what_it_could_not_read() {
        let t = tree();
        let s = SysfsRoot::new(t.path());
        let d = s.device("mlx5_0").unwrap();
        assert_eq!(d.node_guid.unwrap().to_string(), "0a7f:bc12:45ef:d23b");
        assert_eq!(d.fw_ver, None);
        assert_eq!(d.hca_type, None);
        assert_eq!(d.driver.as_deref(), Some("mlx5_core"));
        assert_eq!(d.uverbs.as_deref(), Some("uverbs3"));
        assert_eq!(d.read_problems.len(), 1);
        assert!(d.read_problems[0].path.ends_with("mlx5_0/hca_type"));
        let p = &d.ports[0];
        assert_eq!(p.lid, Some(700));
        assert_eq!(p.gids.len(), 2);
        assert_eq!(p.netdev.as_ref().unwrap().mtu, Some(9000));
        assert_eq!(p.netdev_source, Some(NetdevSource::GidNdevs));
    }

    #[test]
    fn netdev_sources_in_order_of_trust() {
        let t = tree();
        let r = t.path();
        // No GID netdev: the PCI function's netdev for the port (dev_port is 0-based).
        write(r, "class/infiniband/mlx4_0/ports/1/state", "4: ACTIVE\n");
        write(r, "class/infiniband/mlx4_0/ports/2/state", "4: ACTIVE\n");
        write(r, "class/infiniband/mlx4_0/device/net/ib0/dev_port", "0\n");
        write(r, "class/infiniband/mlx4_0/device/net/ib1/dev_port", "1\n");
        // Neither: rxe's `parent` file.
        write(r, "class/infiniband/rxe0/ports/1/state", "1: DOWN\n");
        write(r, "class/infiniband/rxe0/parent", "veth0\n");
        let s = SysfsRoot::new(r);
        let mlx4 = s.device("mlx4_0").unwrap();
        let names: Vec<_> = mlx4
            .ports
            .iter()
            .map(|p| p.netdev.as_ref().unwrap().name.as_str())
            .collect();
        assert_eq!(names, ["ib0", "ib1"]);
        assert_eq!(mlx4.ports[1].netdev_source, Some(NetdevSource::DeviceNet));
        let rxe = s.port("rxe0", 1).unwrap();
        assert_eq!(rxe.netdev.as_ref().map(|n| n.name.as_str()), Some("veth0"));
        assert_eq!(rxe.netdev_source, Some(NetdevSource::Parent));
        assert_eq!(
            s.device("mlx5_0").unwrap().ports[0].netdev_source,
            Some(NetdevSource::GidNdevs)
        );
    }

    /// ibsim's tree has no `link_layer`: InfiniBand, as libibverbs reads it. An empty file
    /// says nothing, so it stays unknown.
    #[test]
    fn a_port_without_link_layer_is_infiniband() {
        let t = tree();
        let r = t.path();
        write(r, "class/infiniband/ibsim0/ports/1/state", "4: ACTIVE\n");
        write(
            r,
            "class/infiniband/ibsim0/ports/1/rate",
            "10 Gb/sec (4X)\n",
        );
        write(
            r,
            "class/infiniband/ibsim0/ports/1/gids/0",
            "fe80:0000:0000:0000:0002:c903:0000:0101\n",
        );
        write(r, "class/infiniband/odd0/ports/1/link_layer", "\n");
        let s = SysfsRoot::new(r);
        let p = s.port("ibsim0", 1).unwrap();
        assert_eq!(p.link_layer, Some(LinkLayer::InfiniBand));
        assert_eq!(p.rate.unwrap().speed.as_deref(), Some("SDR"));
        // No gid_attrs: IB/RoCE v1, which on InfiniBand is IB.
        assert_eq!(p.gids[0].gid_type, Some(crate::model::device::GidType::Ib));
        assert_eq!(s.port("odd0", 1).unwrap().link_layer, None);
        assert_eq!(
            s.port("mlx5_0", 1).unwrap().link_layer,
            Some(LinkLayer::Ethernet)
        );
    }

    #[test]
    fn errors_name_what_exists() {
        let t = tree();
        let s = SysfsRoot::new(t.path());
        assert_eq!(
            s.device("mlx5_9").unwrap_err().to_string(),
            "no device 'mlx5_9'; devices: mlx5_0"
        );
        assert_eq!(
            s.port("mlx5_0", 2).unwrap_err().to_string(),
            "no port 2 on mlx5_0; ports: 1"
        );
        let none = SysfsRoot::new(t.path().join("nothing"));
        assert!(matches!(none.devices(), Err(Error::NoRdma { .. })));
    }
}
