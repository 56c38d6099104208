//! What `doctor` reads about the container or pod it may run in: the markers that say so,
//! the RDMA device nodes this process can open against the devices sysfs lists, the RDMA
//! subsystem's network-namespace mode, this namespace's view, and the files and variables
//! that change what NCCL and UCX do. `gather::container` fills it; `diagnose::doctor`'s
//! container rules judge it.

/// A sign that this process runs in a container, as it was seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Marker {
    /// `/.dockerenv` exists (Docker creates it in every container).
    DockerEnv,
    /// `/run/.containerenv` exists (Podman, CRI-O); the engine it names, if any.
    ContainerEnv { engine: Option<String> },
    /// A cgroup path of this process names a runtime (`/kubepods/...`, `docker-<id>.scope`).
    Cgroup { runtime: &'static str, path: String },
    /// KUBERNETES_SERVICE_HOST is set: the kubelet sets it in every pod.
    KubernetesEnv,
}

impl Marker {
    /// Whether the marker says Kubernetes runs this process (its device-plugin fix applies).
    pub fn is_kubernetes(&self) -> bool {
        matches!(
            self,
            Marker::KubernetesEnv
                | Marker::Cgroup {
                    runtime: "kubernetes",
                    ..
                }
        )
    }
}

/// One `/dev/infiniband` node that a device sysfs lists needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DevNode {
    /// `/dev/infiniband/uverbs1`, `/dev/infiniband/rdma_cm`, `/dev/infiniband/umad0`.
    pub path: String,
    /// The RDMA device it serves; None for rdma_cm, which serves them all.
    pub device: Option<String>,
    pub kind: NodeKind,
    pub state: NodeState,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    /// Verbs (`class/infiniband_verbs/uverbsN`): without it libibverbs skips the device.
    Uverbs,
    /// The kernel connection manager (librdmacm, `--cm`, UCX and NCCL's rdma_cm paths).
    RdmaCm,
    /// MADs (`class/infiniband_mad/umadN`): ibstat, subnet queries; jobs do not need it.
    Umad,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeState {
    Usable,
    Missing,
    /// access(R_OK|W_OK) failed with this errno.
    Denied(i32),
}

/// `class/misc/rdma_cm`, as seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RdmaUcm {
    /// The path looked at, for the evidence.
    pub path: String,
    pub loaded: bool,
    /// Its `dev` (`10:58`): the node udev creates, or `mknod` would.
    pub dev: Option<String>,
}

/// `rdma system`'s network-namespace mode (RDMA_NLDEV_SYS_ATTR_NETNS_MODE).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetnsMode {
    /// Every network namespace sees every RDMA device (the default).
    Shared,
    /// A device is visible only in the namespace it was moved to (`rdma dev set DEV netns NS`).
    Exclusive,
}

/// What the RDMA netlink said about this network namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RdmaNamespace {
    /// None when the kernel does not answer RDMA_NLDEV_CMD_SYS_GET (before 5.2).
    pub mode: Option<NetnsMode>,
    /// The devices RDMA_NLDEV_CMD_GET's dump returns here (only this namespace's in
    /// exclusive mode).
    pub devices: Vec<String>,
}

/// Everything the container rules judge; read only on a live host.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContainerFacts {
    /// Empty when no marker was seen.
    pub markers: Vec<Marker>,
    /// What was looked at when no marker was seen, for the evidence.
    pub looked_at: Vec<String>,
    /// Every node the devices sysfs lists need, in device order, rdma_cm last.
    pub nodes: Vec<DevNode>,
    /// Whether rdma_ucm registered its misc device (`class/misc/rdma_cm` under the sysfs
    /// root); None when the tree has no `class/misc` (unknown). sysfs shows the host's misc
    /// devices in a container too, so this tells a module not loaded (on the host) from a
    /// node not passed in.
    pub rdma_ucm: Option<RdmaUcm>,
    /// The RDMA netlink's answer, or the error that stopped it.
    pub rdma_ns: Option<Result<RdmaNamespace, String>>,
    /// This process is in the initial network namespace; None when /proc/1/ns/net is
    /// unreadable (an unprivileged container).
    pub in_init_netns: Option<bool>,
    /// The name `ip netns` gives this namespace (`/run/netns/NAME`), when one matches.
    pub netns_name: Option<String>,
    /// CmaTotal from /proc/meminfo, in bytes.
    pub cma_total: Option<u64>,
    /// /sys is mounted read-only in this mount namespace (from /proc/self/mountinfo).
    pub sys_read_only: Option<bool>,
    /// `/etc/nccl.conf`'s `NAME=VALUE` lines, in file order; None when it does not exist.
    pub nccl_conf: Option<NcclConf>,
    /// Every NCCL_* and UCX_* variable of this process, sorted by name.
    pub env: Vec<(String, String)>,
    /// Every netdev `class/net` shows here with its operstate: what NCCL_SOCKET_IFNAME and
    /// UCX_NET_DEVICES are judged against.
    pub netdevs: Vec<(String, Option<crate::model::device::OperState>)>,
}

/// A NCCL configuration file as NCCL reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NcclConf {
    pub path: String,
    pub settings: Vec<(String, String)>,
}

/// NCCL's reading of a configuration file (`setEnvFile`): each line up to the first `=` is
/// the name and the rest the value, both taken as they are (no trimming: `NCCL_DEBUG = INFO`
/// sets a variable named `NCCL_DEBUG ` that nothing reads); a line without `=` is skipped.
/// `#` lines are skipped here too: NCCL would set a variable no one reads from them.
pub fn parse_nccl_conf(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter(|line| !line.trim_start().starts_with('#'))
        .filter_map(|line| {
            let (name, value) = line.split_once('=')?;
            Some((name.to_string(), value.to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nccl_conf_lines() {
        let text = "# NCCL_IB_HCA=mlx5_0\nNCCL_IB_HCA=mlx5_3\n\nNCCL_DEBUG = INFO\nnot a setting\n";
        assert_eq!(
            parse_nccl_conf(text),
            vec![
                ("NCCL_IB_HCA".to_string(), "mlx5_3".to_string()),
                ("NCCL_DEBUG ".to_string(), " INFO".to_string()),
            ]
        );
    }
}
