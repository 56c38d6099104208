//! The plain data every command works on, whichever source (sysfs or verbs) filled it.
//! Kernel enums keep an `Other` catch-all so an unknown value never fails a parse.

use serde::Serialize;

use crate::gid::Gid;

/// `gid_attrs/types/N`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum GidType {
    /// "IB/RoCE v1": IB on an InfiniBand port, RoCE v1 on Ethernet.
    #[serde(rename = "IB")]
    Ib,
    #[serde(rename = "RoCE v1")]
    RoceV1,
    #[serde(rename = "RoCE v2")]
    RoceV2,
    #[serde(untagged)]
    Other(String),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum LinkLayer {
    InfiniBand,
    Ethernet,
    #[serde(untagged)]
    Other(String),
}

/// One populated (or, with `--all`, empty) slot of a port's GID table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GidEntry {
    pub index: u32,
    pub gid: Gid,
    /// None when `gid_attrs/types/N` is missing or unreadable.
    #[serde(rename = "type")]
    pub gid_type: Option<GidType>,
    /// The netdev from `gid_attrs/ndevs/N`; None on InfiniBand or when unreadable.
    pub netdev: Option<String>,
}
