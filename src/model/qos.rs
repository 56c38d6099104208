//! The RoCE QoS chain of a port, as `qos` reads it: the traffic class a job or rdma_cm sets
//! → the DSCP on the wire → the priority the NIC maps it to (trust pcp or dscp) → PFC on
//! that priority → ECN notification and reaction on it → the priority of the congestion
//! notifications. Each link is read where the kernel exposes it, and a link that was not
//! seen says why (`Probe`), so no rule reports "ok" for what it did not see.

use serde::Serialize;

/// What reading one link of the chain gave.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", content = "value", rename_all = "snake_case")]
pub enum Probe<T> {
    /// Read.
    Read(T),
    /// This host does not expose it: the interface is absent (no DCB operations on a
    /// virtual NIC, a driver without the files). The text says which and why.
    NotExposed(String),
    /// It is there but reading it failed (permission, a malformed reply): the call or path
    /// and the error.
    Failed(String),
}

impl<T> Probe<T> {
    pub fn read(&self) -> Option<&T> {
        match self {
            Probe::Read(v) => Some(v),
            _ => None,
        }
    }

    /// Why it was not read, for a finding's "not checked" line.
    pub fn why_not(&self) -> Option<&str> {
        match self {
            Probe::Read(_) => None,
            Probe::NotExposed(why) | Probe::Failed(why) => Some(why),
        }
    }
}

/// `DCB_ATTR_DCBX`'s bits (uapi linux/dcbnl.h `DCB_CAP_DCBX_*`).
pub const DCBX_HOST: u8 = 0x01;
pub const DCBX_LLD_MANAGED: u8 = 0x02;
pub const DCBX_VER_CEE: u8 = 0x04;
pub const DCBX_VER_IEEE: u8 = 0x08;
pub const DCBX_STATIC: u8 = 0x10;

/// APP table selectors (`IEEE_8021QAZ_APP_SEL_*`, and `DCB_APP_SEL_PCP` of the trust table).
pub const APP_SEL_ETHERTYPE: u8 = 1;
pub const APP_SEL_DSCP: u8 = 5;
pub const APP_SEL_PCP: u8 = 255;

/// ETS transmission selection algorithms (`IEEE_8021QAZ_TSA_*`).
pub const TSA_STRICT: u8 = 0;
pub const TSA_ETS: u8 = 2;

/// `struct ieee_ets`: which traffic class each priority is in, and the classes' shares.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Ets {
    pub willing: bool,
    pub ets_cap: u8,
    pub cbs: u8,
    pub tc_tx_bw: [u8; 8],
    pub tc_rx_bw: [u8; 8],
    pub tc_tsa: [u8; 8],
    pub prio_tc: [u8; 8],
    pub tc_reco_bw: [u8; 8],
    pub tc_reco_tsa: [u8; 8],
    pub reco_prio_tc: [u8; 8],
}

/// `struct ieee_pfc`: the priorities PFC is enabled on (a bit each) and, where the driver
/// fills them (mlx5), the pause frames sent (`requests`) and received (`indications`) per
/// priority.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Pfc {
    pub pfc_cap: u8,
    pub pfc_en: u8,
    pub mbc: u8,
    pub delay: u16,
    pub requests: [u64; 8],
    pub indications: [u64; 8],
}

impl Pfc {
    pub fn enabled(&self, priority: u8) -> bool {
        priority < 8 && self.pfc_en & (1 << priority) != 0
    }

    /// The priorities with PFC on, lowest first.
    pub fn enabled_priorities(&self) -> Vec<u8> {
        (0..8).filter(|p| self.enabled(*p)).collect()
    }
}

/// `struct dcb_app`: one APP table entry (selector 5: `protocol` is a DSCP).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct DcbApp {
    pub selector: u8,
    pub priority: u8,
    pub protocol: u16,
}

/// `struct dcbnl_buffer`: the receive buffer each priority uses and the buffers' sizes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DcbBuffer {
    pub prio2buffer: [u8; 8],
    pub buffer_size: [u32; 8],
    pub total_size: u32,
}

/// A netdev's DCB configuration as `DCB_CMD_IEEE_GET` (and `DCB_CMD_GDCBX`) answer it.
/// A part the driver does not report is None.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DcbConfig {
    /// `DCB_ATTR_DCBX`: who manages DCB (host, firmware/LLDP agent) and which version.
    pub dcbx: Option<u8>,
    pub ets: Option<Ets>,
    pub pfc: Option<Pfc>,
    /// The APP table (`DCB_ATTR_IEEE_APP_TABLE`).
    pub app: Vec<DcbApp>,
    /// `DCB_ATTR_DCB_APP_TRUST_TABLE`: the selectors trusted, in order (first wins);
    /// None when the driver does not report one.
    pub trust: Option<Vec<u8>>,
    pub buffer: Option<DcbBuffer>,
    /// `DCB_ATTR_IEEE_MAXRATE`: each traffic class's rate limit in kbit/s (0: none).
    pub maxrate: Option<[u64; 8]>,
    /// What the link partner advertised over DCBX, where the driver reports it.
    pub peer_pfc: Option<Pfc>,
    pub peer_app: Vec<DcbApp>,
}

impl DcbConfig {
    /// The priority the APP table maps DSCP `dscp` to, if it has an entry.
    pub fn dscp_priority(&self, dscp: u8) -> Option<u8> {
        self.app
            .iter()
            .find(|a| a.selector == APP_SEL_DSCP && a.protocol == u16::from(dscp))
            .map(|a| a.priority)
    }

    /// Whether any DSCP entry exists: a DSCP-trusting NIC with none maps everything to 0.
    pub fn has_dscp_entries(&self) -> bool {
        self.app.iter().any(|a| a.selector == APP_SEL_DSCP)
    }
}

/// The trust mode in force: which header field picks a packet's priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Trust {
    /// The VLAN tag's PCP (802.1p); untagged RoCE traffic lands on priority 0.
    Pcp,
    /// The IP header's DSCP, through the APP table (or the vendor's dscp2prio).
    Dscp,
}

/// Where the trust mode was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TrustSource {
    /// DCB's APP trust table (`dcb apptrust`).
    DcbTrustTable,
    /// MLNX_OFED's `qos/trust` file.
    VendorSysfs,
    /// Neither reported one: the kernel default, PCP.
    Default,
}

/// rdma_cm's defaults for applications that set no traffic class (perftest `-R`, NVMe-oF,
/// SMB Direct): configfs `rdma_cm/DEV/ports/N/default_roce_tos` and `default_roce_mode`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CmDefault {
    pub tos: u8,
    /// `RoCE v2` or `IB/RoCE v1`; None when the group is not created (the kernel's default
    /// is RoCE v2 where the port supports it).
    pub mode: Option<String>,
    /// Where `tos` came from.
    pub source: CmDefaultSource,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CmDefaultSource {
    /// Read from the device's configfs group (its path).
    Configfs(String),
    /// Read through a group rdmactl created for the read and removed again (its path).
    ConfigfsProbed(String),
    /// No configfs group for the device (none was created with `mkdir`, or configfs is not
    /// mounted): the kernel's default, TOS 0, applies.
    KernelDefault,
}

/// MLNX_OFED's sysfs extras under `/sys/class/net/NETDEV/`, read only where present: each
/// None is a file that is not there.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct VendorQos {
    /// `qos/trust`: `pcp` or `dscp`.
    pub trust: Option<String>,
    /// `ecn/roce_np/enable/N`: the notification point (sends CNPs on ECN-marked packets).
    pub ecn_np: [Option<bool>; 8],
    /// `ecn/roce_rp/enable/N`: the reaction point (slows down on CNPs).
    pub ecn_rp: [Option<bool>; 8],
    /// `ecn/roce_np/cnp_dscp`.
    pub cnp_dscp: Option<u8>,
    /// `ecn/roce_np/cnp_802p_prio`.
    pub cnp_802p_prio: Option<u8>,
}

impl VendorQos {
    /// Whether any of the files was there.
    pub fn any(&self) -> bool {
        self.trust.is_some()
            || self.ecn_np.iter().chain(&self.ecn_rp).any(Option::is_some)
            || self.cnp_dscp.is_some()
            || self.cnp_802p_prio.is_some()
    }
}

/// 802.3x global pause (`ETHTOOL_GPAUSEPARAM`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct PauseParam {
    pub autoneg: bool,
    pub rx: bool,
    pub tx: bool,
}

/// The netdev's driver statistics (`ethtool -S`, `ETHTOOL_GSTATS`) by name, and its global
/// pause setting.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EthtoolFacts {
    pub stats: Vec<(String, u64)>,
    pub pause: Probe<PauseParam>,
}

impl EthtoolFacts {
    pub fn stat(&self, name: &str) -> Option<u64> {
        self.stats.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
    }
}

/// Where the traffic class judged came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TclassSource {
    /// `--tclass`.
    Flag,
    /// An environment variable a library reads (`NCCL_IB_TC`, `UCX_IB_TRAFFIC_CLASS`).
    Env(String),
    /// rdma_cm's default for the port (configfs, or the kernel's 0).
    CmDefault,
}

/// The job's QoS variables as the environment gives them: `NCCL_IB_TC`, `NCCL_IB_SL`,
/// `UCX_IB_TRAFFIC_CLASS`, each set one as (name, text); `diagnose::qos` reads the text as
/// the library does.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct JobQosEnv {
    pub vars: Vec<(String, String)>,
}

/// One RoCE port's chain, as read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct QosPort {
    pub device: String,
    pub port: u32,
    /// The port's netdev; None when it has none (then nothing below it is read).
    pub netdev: Option<String>,
    /// The netdev's MTU and the port's active RDMA MTU, in bytes.
    pub netdev_mtu: Option<u32>,
    pub active_mtu: Option<u32>,
    pub dcb: Probe<DcbConfig>,
    pub cm_default: Probe<CmDefault>,
    /// MLNX_OFED's files; all None where the driver has none.
    pub vendor: VendorQos,
    pub ethtool: Probe<EthtoolFacts>,
    /// The port's congestion-related `hw_counters` (np_ecn_marked_roce_packets,
    /// np_cnp_sent, rp_cnp_handled, out_of_buffer, ...), by name.
    pub hw_counters: Vec<(String, u64)>,
    /// The netdevs behind the port's GIDs (`gid_attrs/ndevs`), each once; empty when not
    /// read. All of them the port's own netdev: RoCE leaves untagged (no VLAN, so no PCP).
    #[serde(skip)]
    pub gid_netdevs: Vec<String>,
}

/// What `qos` judges: every RoCE port asked for, and the traffic classes in use.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct QosFacts {
    pub ports: Vec<QosPort>,
    /// `--tclass`, when given.
    pub tclass_flag: Option<u8>,
    /// The job's variables (this process's environment, or `--env`'s).
    pub env: JobQosEnv,
}

/// What the netdev MTU must hold beyond the RDMA MTU for a RoCE v2 packet over IPv4: the
/// IP header 20, UDP 8, BTH 12, RETH 16 (the largest extended header a full-MTU packet
/// carries) and ICRC 4. The Ethernet header is outside the MTU.
pub const ROCE_V2_OVERHEAD_IPV4: u32 = 20 + 8 + 12 + 16 + 4;

/// One traffic class followed through a port's configuration: what `qos` shows per port and
/// what its rules judge. A link that was not seen is None, with `unknown` saying why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Chain {
    pub tclass: u8,
    pub dscp: u8,
    pub ecn: u8,
    /// Who sets it (several sources with one value are listed once each).
    pub sources: Vec<TclassSource>,
    pub trust: Option<Trust>,
    pub trust_source: Option<TrustSource>,
    /// The priority the NIC gives these packets; None when the evidence does not decide it.
    pub priority: Option<u8>,
    /// PFC on that priority.
    pub pfc: Option<bool>,
    /// The ETS traffic class of that priority, its transmission algorithm and share.
    pub ets_tc: Option<u8>,
    pub ets_tsa: Option<u8>,
    pub ets_share: Option<u8>,
    /// MLNX_OFED's ECN notification and reaction points on that priority.
    pub ecn_np: Option<bool>,
    pub ecn_rp: Option<bool>,
    /// What could not be decided or read, in words.
    pub unknown: Vec<String>,
}
