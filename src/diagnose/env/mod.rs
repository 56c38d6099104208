//! The environment variables that decide which device, port and GID an NCCL or UCX job
//! uses, checked the way the libraries read them, against this host's port (`check
//! --env`).
//!
//! Each variable is parsed as its library parses it, not as a person would: NCCL reads its
//! numbers with `strtoll(s, NULL, 0)` (so `0x1` is 1, `010` is 8, trailing text is ignored
//! and no digits at all is 0), UCX with `sscanf("%lu")`; NCCL's lists take `^` (exclude)
//! and `=` (exact names) once at the start; UCX's take `^` and `all`. Where a library
//! silently ignores a value, the finding says so.

mod gid_index;
mod lists;
mod nccl_gid;
pub mod numbers;
#[cfg(test)]
mod tests;
mod ucx_gid;

use crate::diagnose::gidselect::{Selection, Want};
use crate::model::codes::{self, Code};
use crate::model::device::{GidEntry, LinkLayer, OperState};
use crate::model::diagnostic::Diagnostic;

use gid_index::check_ucx_gid_index;
use lists::{check_hca, check_socket_ifname, check_ucx_net_devices};
use nccl_gid::{check_nccl_auto_var, check_nccl_gid_index, NcclGidVars};

/// Every variable `--env` checks, in the order it reports them.
pub const VARIABLES: &[&str] = &[
    "NCCL_IB_HCA",
    "NCCL_IB_GID_INDEX",
    "NCCL_IB_ROCE_VERSION_NUM",
    "NCCL_IB_ADDR_FAMILY",
    "NCCL_IB_ADDR_RANGE",
    "NCCL_SOCKET_IFNAME",
    "UCX_NET_DEVICES",
    "UCX_IB_GID_INDEX",
];

/// What `--env` checks against: this host's port, its GID table, the automatic choice,
/// and the names the lists may use.
pub struct EnvTarget<'a> {
    pub device: &'a str,
    pub port: u32,
    pub link_layer: &'a LinkLayer,
    /// The port's populated GIDs.
    pub table: &'a [GidEntry],
    /// The port's GID table length, empty slots included: NCCL walks every slot.
    pub table_len: u32,
    pub auto: &'a Selection,
    /// What `auto` was asked (the peer, its route): asked again with NCCL_IB_ADDR_FAMILY's
    /// family when no peer says which.
    pub want: &'a Want,
    /// Every RDMA device on the host, for NCCL_IB_HCA.
    pub devices: &'a [String],
    /// Every RDMA port on the host: UCX_NET_DEVICES names them `DEV:PORT`.
    pub ports: &'a [(String, u32)],
    /// Every netdev (`class/net`) with its operstate: NCCL_SOCKET_IFNAME, and
    /// UCX_NET_DEVICES' TCP entries.
    pub netdevs: &'a [(String, Option<OperState>)],
}

impl EnvTarget<'_> {
    fn name(&self) -> String {
        format!("{}/{}", self.device, self.port)
    }

    fn ethernet(&self) -> bool {
        *self.link_layer == LinkLayer::Ethernet
    }
}

/// Check every variable in `VARIABLES` that is set. `lookup` reads a variable
/// (std::env::var in production, a table in tests). Unset variables give no finding.
pub fn validate_env(
    lookup: impl Fn(&str) -> Option<String>,
    target: &EnvTarget,
) -> Vec<Diagnostic> {
    let nccl = NcclGidVars::read(&lookup);
    let mut findings = Vec::new();
    for name in VARIABLES {
        let Some(value) = lookup(name) else { continue };
        findings.push(match *name {
            "NCCL_IB_HCA" => check_hca(&value, target),
            "NCCL_IB_GID_INDEX" => check_nccl_gid_index(&value, &nccl, target),
            "NCCL_IB_ROCE_VERSION_NUM" | "NCCL_IB_ADDR_FAMILY" | "NCCL_IB_ADDR_RANGE" => {
                check_nccl_auto_var(name, &value, &nccl, target)
            }
            "NCCL_SOCKET_IFNAME" => check_socket_ifname(&value, target),
            "UCX_NET_DEVICES" => check_ucx_net_devices(&value, target),
            // On RoCE, auto is judged as the index UCX's own rule will take.
            "UCX_IB_GID_INDEX" if value.eq_ignore_ascii_case("auto") && target.ethernet() => {
                ucx_gid::check_ucx_auto(&format!("UCX_IB_GID_INDEX={value}"), target)
            }
            "UCX_IB_GID_INDEX" => check_ucx_gid_index(&value, target),
            _ => unreachable!("every listed variable has a check"),
        });
    }
    // A UCX job (UCX_NET_DEVICES set) that leaves UCX_IB_GID_INDEX unset gets UCX's default,
    // auto: the index UCX will take is judged as if it were set. Without any UCX variable
    // the job may not use UCX at all, so nothing is said.
    if target.ethernet()
        && lookup("UCX_IB_GID_INDEX").is_none()
        && lookup("UCX_NET_DEVICES").is_some()
    {
        findings.push(ucx_gid::check_ucx_auto(
            "UCX_IB_GID_INDEX unset (auto)",
            target,
        ));
    }
    findings
}

/// The finding code of a variable's rule: `env-` and the name in kebab case, as catalogued.
fn code_of(name: &str) -> Code {
    match name {
        "NCCL_IB_ADDR_FAMILY" => codes::ENV_NCCL_IB_ADDR_FAMILY,
        "NCCL_IB_ADDR_RANGE" => codes::ENV_NCCL_IB_ADDR_RANGE,
        "NCCL_IB_GID_INDEX" => codes::ENV_NCCL_IB_GID_INDEX,
        "NCCL_IB_HCA" => codes::ENV_NCCL_IB_HCA,
        "NCCL_IB_ROCE_VERSION_NUM" => codes::ENV_NCCL_IB_ROCE_VERSION_NUM,
        "NCCL_SOCKET_IFNAME" => codes::ENV_NCCL_SOCKET_IFNAME,
        "UCX_IB_GID_INDEX" => codes::ENV_UCX_IB_GID_INDEX,
        "UCX_NET_DEVICES" => codes::ENV_UCX_NET_DEVICES,
        // The rules name their variables by constants of this module.
        other => unreachable!("{other} has no rule"),
    }
}
