//! A port's tables: the GID table (whole, or up to the first slot naming a netdev) and the
//! populated P_Key slots, read slot by slot with one scratch path and buffer.

use std::io;
use std::path::{Path, PathBuf};

use super::{list_dir, parse, read_attr, read_small, SysfsRoot};
use crate::error::{Error, Result};
use crate::model::device::{GidEntry, LinkLayer, PkeyEntry};
use crate::model::gid::Gid;

impl SysfsRoot {
    /// Slots in a port's GID table: the entries of `gids/`, one directory read instead of
    /// a read per slot.
    pub fn gid_table_len(&self, device: &str, port: u32) -> Result<usize> {
        self.check_port(device, port)?;
        Ok(list_dir(&self.port_dir(device, port).join("gids"))
            .map(|v| v.len())
            .unwrap_or(0))
    }

    /// The port's populated P_Key slots (`ports/N/pkeys/I`), in index order: the table's
    /// empty (0x0000) and unreadable slots are left out.
    pub fn pkey_table(&self, device: &str, port: u32) -> Result<Vec<PkeyEntry>> {
        self.check_port(device, port)?;
        let dir = self.port_dir(device, port).join("pkeys");
        let mut buf = String::new();
        let mut table: Vec<PkeyEntry> = list_dir(&dir)
            .unwrap_or_default()
            .iter()
            .filter_map(|name| {
                let index = parse::dec_u32(name)?;
                let pkey = parse::pkey(read_small(&dir.join(name), &mut buf).ok()?)?;
                (pkey != 0).then_some(PkeyEntry { index, pkey })
            })
            .collect();
        table.sort_by_key(|e| e.index);
        Ok(table)
    }

    /// The GID table of one port. Empty (all-zero or unreadable) slots are skipped unless
    /// `all`; for an empty slot nothing but `gids/N` is read.
    pub fn gid_table(&self, device: &str, port: u32, all: bool) -> Result<Vec<GidEntry>> {
        self.check_port(device, port)?;
        let port_dir = self.port_dir(device, port);
        let ethernet = is_ethernet(&port_dir);
        Ok(read_gid_table(&port_dir, ethernet, all))
    }

    /// One GID slot. `NoSuchGid` when the index is past the table or the slot is empty,
    /// with the populated indices as the hint.
    pub fn gid(&self, device: &str, port: u32, index: u32) -> Result<GidEntry> {
        self.check_port(device, port)?;
        let port_dir = self.port_dir(device, port);
        let ethernet = is_ethernet(&port_dir);
        let mut buf = String::new();
        let mut path = port_dir.clone();
        if let Some(entry) = read_gid_entry(&mut path, index, ethernet, false, &mut buf) {
            return Ok(entry);
        }
        let table = read_gid_table(&port_dir, ethernet, false);
        let populated: Vec<String> = table.iter().map(|e| e.index.to_string()).collect();
        let slots = list_dir(&port_dir.join("gids"))
            .map(|v| v.len())
            .unwrap_or(0);
        let what = if (index as usize) < slots {
            "that slot is empty"
        } else {
            "past the table"
        };
        let hint = if populated.is_empty() {
            format!("{what}; the table ({slots} slots) has no populated entries")
        } else {
            format!("{what}; populated indices: {}", populated.join(", "))
        };
        Err(Error::NoSuchGid {
            device: device.to_string(),
            port,
            index,
            hint,
        })
    }
}

fn is_ethernet(port_dir: &Path) -> bool {
    read_attr(&port_dir.join("link_layer"), &mut Vec::new())
        .is_some_and(|t| parse::link_layer(&t) == LinkLayer::Ethernet)
}

/// One pass over `gids/`: list it once, then read `gids/N`; only a populated slot (or
/// every slot with `all`) costs the two further reads of its type and netdev.
pub(super) fn read_gid_table(port_dir: &Path, ethernet: bool, all: bool) -> Vec<GidEntry> {
    let mut indices: Vec<u32> = list_dir(&port_dir.join("gids"))
        .unwrap_or_default()
        .iter()
        .filter_map(|n| n.parse().ok())
        .collect();
    indices.sort_unstable();
    let mut path = port_dir.to_path_buf();
    let mut buf = String::with_capacity(64);
    indices
        .into_iter()
        .filter_map(|i| read_gid_entry(&mut path, i, ethernet, all, &mut buf))
        .collect()
}

/// The populated slots in index order up to and including the first that names a netdev.
/// Probes `gids/0`, `gids/1`, ... instead of listing `gids/`: listing, parsing and sorting
/// 1024 names costs more than the whole rest of `devices`, and a healthy port answers at
/// index 0.
pub(super) fn read_gids_to_first_netdev(port_dir: &Path) -> Vec<GidEntry> {
    let mut path = port_dir.to_path_buf();
    let mut buf = String::with_capacity(64);
    let mut out = Vec::new();
    for i in 0u32.. {
        if !port_dir.join("gids").join(i.to_string()).exists() {
            break;
        }
        if let Some(entry) = read_gid_entry(&mut path, i, true, false, &mut buf) {
            let named = entry.netdev.is_some();
            out.push(entry);
            if named {
                break;
            }
        }
    }
    out
}

/// Reads slot `index` using `path` (the port dir, restored on return) and `buf` as
/// scratch, so a 1024-slot table allocates almost nothing per slot. None for an empty or
/// missing slot unless `all`.
fn read_gid_entry(
    path: &mut PathBuf,
    index: u32,
    ethernet: bool,
    all: bool,
    buf: &mut String,
) -> Option<GidEntry> {
    let idx = index.to_string();
    path.push("gids");
    path.push(&idx);
    let gid = read_small(path, buf).ok().and_then(|t| Gid::parse(t).ok());
    path.pop();
    path.pop();
    let gid = match gid {
        Some(g) if !g.is_zero() => g,
        // EINVAL on an empty slot and an all-zero GID both mean "no entry here".
        _ if all => gid.unwrap_or(Gid::ZERO),
        _ => return None,
    };
    path.push("gid_attrs");
    path.push("types");
    path.push(&idx);
    let gid_type = match read_small(path, buf) {
        Ok(t) => parse::text(t).map(|t| parse::gid_type(&t, ethernet)),
        // No gid_attrs at all (older kernels, ibsim): every GID is "IB/RoCE v1", as
        // libibverbs' ibv_query_gid_type assumes.
        Err(e) if e.kind() == io::ErrorKind::NotFound && !gid_attrs_exists(path) => {
            Some(parse::gid_type("IB/RoCE v1", ethernet))
        }
        Err(_) => None,
    };
    path.pop();
    path.pop();
    path.push("ndevs");
    path.push(&idx);
    let netdev = read_small(path, buf).ok().and_then(parse::text);
    path.pop();
    path.pop();
    path.pop();
    Some(GidEntry {
        index,
        gid,
        gid_type,
        netdev,
    })
}

/// Whether `gid_attrs` exists, given `path` = `.../gid_attrs/types/N` (left unchanged).
fn gid_attrs_exists(path: &Path) -> bool {
    path.parent()
        .and_then(Path::parent)
        .is_some_and(Path::exists)
}

#[cfg(test)]
mod tests {
    use super::super::tests::{tree, write};
    use super::*;
    use std::fs;

    #[test]
    fn pkey_table_lists_the_populated_slots() {
        let t = tree();
        let p = "class/infiniband/mlx5_0/ports/1/pkeys";
        write(t.path(), &format!("{p}/0"), "0xffff\n");
        write(t.path(), &format!("{p}/1"), "0x0000\n");
        write(t.path(), &format!("{p}/2"), "0x8001\n");
        write(t.path(), &format!("{p}/10"), "0x7fff\n");
        write(t.path(), &format!("{p}/3"), "garbage\n");
        let root = SysfsRoot::new(t.path());
        let table = root.pkey_table("mlx5_0", 1).unwrap();
        let shown: Vec<String> = table.iter().map(|e| e.to_string()).collect();
        assert_eq!(shown, ["[0] 0xffff", "[2] 0x8001", "[10] 0x7fff"]);
        fs::remove_dir_all(t.path().join(p)).unwrap();
        assert!(root.pkey_table("mlx5_0", 1).unwrap().is_empty());
        assert!(root.pkey_table("mlx5_0", 2).is_err());
    }

    /// The `devices` table's shortcut finds the same netdev for every port of every
    /// captured tree, reading fewer GID slots.
    #[test]
    fn gid_table_skips_empty_slots_unless_all() {
        let t = tree();
        let s = SysfsRoot::new(t.path());
        let g = s.gid_table("mlx5_0", 1, false).unwrap();
        assert_eq!(g.iter().map(|e| e.index).collect::<Vec<_>>(), [0, 2]);
        assert_eq!(g[0].gid_type, Some(crate::model::device::GidType::RoceV1));
        assert_eq!(s.gid_table("mlx5_0", 1, true).unwrap().len(), 3);
        let e = s.gid("mlx5_0", 1, 1).unwrap_err().to_string();
        assert_eq!(
            e,
            "no GID index 1 on mlx5_0/1; that slot is empty; populated indices: 0, 2"
        );
        let e = s.gid("mlx5_0", 1, 7).unwrap_err().to_string();
        assert!(e.contains("past the table"), "{e}");
    }
}
