//! What the user typed. Resolution into devices, ports and GID indices happens in the
//! command modules, so this file stays a plain description of the flags.

use std::net::IpAddr;
use std::path::PathBuf;

use clap::{Arg, Args, Parser, Subcommand, ValueEnum};

/// The exit codes, as the README's table lists them; `--help` and every man page print
/// this one list.
pub const EXIT_CODES: &[(u8, &str)] = &[
    (0, "success; every check or test passed"),
    (1, "a check, test or ping-pong ran and found a failure"),
    (2, "bad command line or malformed input"),
    (3, "the named device, port or GID index does not exist"),
    (
        4,
        "no RDMA stack: no kernel support, no libibverbs, or no devices",
    ),
    (5, "an operating-system or verbs call failed unexpectedly"),
    (
        130,
        "pingpong, selftest or fabric stopped by SIGINT (Ctrl-C) after printing what it measured; 143 for SIGTERM",
    ),
];

/// The environment rdmactl reads, for `--help` and the man pages' ENVIRONMENT.
pub const ENVIRONMENT: &[(&str, &str)] = &[
    (
        "RDMACTL_SYSFS",
        "read sysfs from this directory instead of /sys (as --sysfs)",
    ),
    (
        "RDMACTL_PROCFS",
        "read the captured host's /proc from this directory (as --procfs)",
    ),
    ("NO_COLOR", "set and not empty: no colour in --color auto"),
    ("TERM", "dumb: no colour in --color auto"),
    (
        "COLUMNS",
        "the width tables fit (else the terminal's; a pipe gets whole lines)",
    ),
];

fn exit_status_help() -> String {
    let mut text = String::from("Exit status:\n");
    for (code, meaning) in EXIT_CODES {
        text.push_str(&format!("  {code}  {meaning}\n"));
    }
    text.push_str("\nEnvironment:\n");
    for (name, meaning) in ENVIRONMENT {
        text.push_str(&format!("  {name:<13}  {meaning}\n"));
    }
    text.trim_end().to_string()
}

#[derive(Debug, Parser)]
#[command(
    name = "rdmactl",
    version,
    about = "RDMA diagnostics: devices, ports, GID tables, ping-pong and self-test that explain their failures",
    propagate_version = true,
    disable_help_subcommand = true,
    after_long_help = exit_status_help()
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,

    #[command(subcommand)]
    pub command: Command,
}

/// Every subcommand takes these; --help and the man pages list them apart.
#[derive(Debug, Args)]
#[command(next_help_heading = "Global options")]
pub struct GlobalArgs {
    /// Print JSON instead of a table
    #[arg(short = 'j', long, global = true)]
    pub json: bool,

    /// When to colour the output (`auto`: a terminal, unless NO_COLOR is set or TERM=dumb)
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto, global = true, value_name = "WHEN")]
    pub color: ColorChoice,

    /// Read sysfs from DIR instead of /sys (a captured tree); verbs queries are skipped.
    /// pingpong and selftest refuse it: they run on this host's devices
    #[arg(long, env = "RDMACTL_SYSFS", global = true, value_name = "DIR")]
    pub sysfs: Option<PathBuf>,

    /// With --sysfs: the same host's captured /proc (a sosreport's proc/), so doctor judges
    /// its memlock limit and loaded modules too; live /proc is never mixed with a capture
    #[arg(long, env = "RDMACTL_PROCFS", global = true, value_name = "DIR")]
    pub procfs: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

// Deferred: each subcommand's arguments are built only when it is the one being parsed
// (or for --help and generate), not for every run; building all of them was a quarter of
// a `ports` run's start-up under emulation.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum Command {
    /// List RDMA devices (like ibv_devinfo; -v for every attribute)
    #[command(visible_alias = "ls", after_long_help = DEVICES_EXAMPLES)]
    Devices(DevicesArgs),
    /// Show port state, rate, LID, the RDMA MTUs (active, max) and the netdev with its MTU
    #[command(visible_alias = "link", after_long_help = PORTS_EXAMPLES)]
    Ports(PortsArgs),
    /// Show GID tables with RoCE type, netdev and decoded IP address
    #[command(after_long_help = GIDS_EXAMPLES)]
    Gids(GidsArgs),
    /// Convert between GIDs and IP addresses, offline
    #[command(subcommand, disable_help_subcommand = true, after_long_help = GID_EXAMPLES)]
    Gid(GidCommand),
    /// Is this GID index usable, and does it route to the peer?
    #[command(after_long_help = CHECK_EXAMPLES)]
    Check(CheckArgs),
    /// RC ping-pong between two hosts, interoperable with ibv_rc_pingpong
    #[command(after_long_help = PINGPONG_EXAMPLES)]
    Pingpong(PingpongArgs),
    /// Loopback test inside one process, one line per verbs step
    #[command(after_long_help = SELFTEST_EXAMPLES)]
    Selftest(SelftestArgs),
    /// Check that this host's RDMA stack is sane; --expect FILE against a manifest of what
    /// it should have, --format nagios|nhc|junit for health-check frameworks
    #[command(after_long_help = DOCTOR_EXAMPLES)]
    Doctor(DoctorArgs),
    /// Wait until ports are ACTIVE (boot ordering); on timeout exit 1 saying why each is not
    #[command(after_long_help = WAIT_EXAMPLES)]
    Wait(WaitArgs),
    /// Port counters (counters/ and hw_counters/) grouped by what they indicate;
    /// --interval for wrap-aware deltas and rates
    #[command(after_long_help = COUNTERS_EXAMPLES)]
    Counters(CountersArgs),
    /// All-pairs RC test over many hosts, one process per endpoint started by srun, mpirun
    /// or pdsh: configuration drift, a latency/bandwidth matrix, and the endpoint or link
    /// to blame, explained
    Fabric(FabricArgs),
    /// InfiniBand subnet discovery and diagnosis from this host (MADs): nodes, links, subnet
    /// manager, degraded links, error counters, changes since a baseline
    #[command(after_long_help = SUBNET_EXAMPLES)]
    Subnet(SubnetArgs),
    /// Is RoCE lossless as configured: each traffic class in use (--tclass, NCCL_IB_TC,
    /// UCX_IB_TRAFFIC_CLASS, rdma_cm's default) followed through DSCP → priority → PFC → ETS →
    /// ECN → CNP on each RoCE port; --interval for the pause, ECN and RNR counters of a run
    #[command(after_long_help = QOS_EXAMPLES)]
    Qos(QosArgs),
    /// Prometheus exporter: every port's state, configuration and counters, and doctor's
    /// findings as series; serves /metrics, or writes one file for node_exporter's textfile
    /// collector
    #[command(after_long_help = EXPORTER_HELP)]
    Exporter(ExporterArgs),
    /// Read a failed job's log (NCCL, UCX, Open MPI, libfabric, NVSHMEM, Mooncake, perftest,
    /// ibv_rc_pingpong, rping, rdmactl, the kernel's): the root RDMA error apart from its cascade, its cause with the
    /// lines that show it, and the next commands with the job's own device and GID index
    Triage(TriageArgs),
    /// The RDMA resources of running processes (as `rdma res show`): each process's QPs
    /// (type, state, QPNs, PSNs), rdma_cm IDs, MRs with the memory they pin, CQs and PDs;
    /// dead connections, stalled QPs (--interval) and a named job that uses no RDMA
    #[command(after_long_help = RES_EXAMPLES)]
    Res(ResArgs),
    /// Print what a diagnostic code means: when it fires, the cause, what it shows as
    /// evidence and the fix (the catalogue of docs/failures.md); with no code, list them all
    #[command(after_long_help = EXPLAIN_EXAMPLES)]
    Explain(ExplainArgs),
    /// Write man pages and shell completions (for packagers)
    #[command(hide = true)]
    Generate(GenerateArgs),
}

/// `DEV` or `DEV/PORT`, as in `rdma link show mlx5_0/1`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DevPort {
    pub device: String,
    pub port: Option<u32>,
}

impl std::str::FromStr for DevPort {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (device, port) = match s.split_once('/') {
            Some((d, p)) => {
                let port =
                    p.parse::<u32>().ok().filter(|p| *p > 0).ok_or_else(|| {
                        format!("'{p}' is not a port number (ports count from 1)")
                    })?;
                (d, Some(port))
            }
            None => (s, None),
        };
        if device.is_empty() {
            return Err("empty device name; expected DEV or DEV/PORT, e.g. mlx5_0/1".into());
        }
        Ok(DevPort {
            device: device.to_string(),
            port,
        })
    }
}

#[derive(Debug, Args)]
pub struct DevicesArgs {
    #[command(flatten)]
    pub filter: DeviceFilter,
    /// Every attribute, as `ibv_devinfo -v` prints it
    #[arg(short = 'v', long)]
    pub verbose: bool,
}

// The device and port flags, declared once here and flattened into each subcommand. Their
// field types differ where the commands differ: a filter (`Option`) against a port to run
// on (port 1 unless given), one device against a list (selftest's two, fabric's one per
// local rank, those declared in their own structs). `-g` stays apart where it differs:
// check's is `--gid-index` (perftest's and NCCL's word) and pingpong's has no default
// (without -g no GID, as ibv_rc_pingpong; `--cm` refuses one). (Plain comments on these
// structs: with `Command`'s deferred building, a doc comment would replace the
// subcommand's own description.)

/// For `#[command(mut_args(..))]`: one shared flag changed for one command (its help, a
/// conflict) in its place; `Command::mut_arg` would move it after the command's own flags,
/// reordering the completions.
fn with_arg(id: &'static str, f: impl Fn(Arg) -> Arg) -> impl FnMut(Arg) -> Arg {
    move |a| if a.get_id() == id { f(a) } else { a }
}

// `-d DEV`: only this device (devices, doctor).
#[derive(Debug, Args)]
pub struct DeviceFilter {
    /// Only this device
    #[arg(short = 'd', long = "ib-dev", value_name = "DEV")]
    pub device: Option<String>,
}

// `-d DEV` and `-i PORT` as filters: the listing commands' (beside the positional
// `DEV[/PORT]`, in `PortSelection`) and the ports `subnet` may walk from.
#[derive(Debug, Args)]
pub struct PortFilter {
    /// Only this device
    #[arg(short = 'd', long = "ib-dev", value_name = "DEV")]
    pub device: Option<String>,
    /// Only this port
    #[arg(short = 'i', long = "ib-port", value_name = "PORT")]
    pub port: Option<u32>,
}

// `-d DEV` and `-i PORT`: the one port `check` and `pingpong` use, port 1 unless given.
#[derive(Debug, Args)]
pub struct DevicePort {
    /// Device (default: the first one)
    #[arg(short = 'd', long = "ib-dev", value_name = "DEV")]
    pub device: Option<String>,
    /// Port of the device
    #[arg(
        short = 'i',
        long = "ib-port",
        value_name = "PORT",
        default_value_t = 1
    )]
    pub port: u32,
}

// `-i PORT` and `-g N|auto` of `selftest` and `fabric`, whose `-d` lists devices (each its
// own way): the port of every device given without one, and the GID index, auto unless
// given.
#[derive(Debug, Args)]
pub struct PortGid {
    /// Port of the device(s)
    #[arg(
        short = 'i',
        long = "ib-port",
        value_name = "PORT",
        default_value_t = 1
    )]
    pub port: u32,
    /// GID index, or auto (-1 means auto too)
    #[arg(
        short = 'g',
        long = "gid-idx",
        visible_alias = "gid-index",
        value_name = "N|auto",
        default_value = "auto",
        allow_negative_numbers = true
    )]
    pub gid_index: GidIndexArg,
}

// Which ports a listing command shows: `DEV[/PORT]`, or `-d DEV` and `-i PORT`.
#[derive(Debug, Args)]
#[command(mut_args(with_arg("device", |a| {
    a.help("Only this device (same as the positional DEV)")
        .conflicts_with("target")
})))]
pub struct PortSelection {
    /// DEV or DEV/PORT
    #[arg(value_name = "DEV[/PORT]")]
    pub target: Option<DevPort>,
    #[command(flatten)]
    pub filter: PortFilter,
}

#[derive(Debug, Args)]
pub struct PortsArgs {
    #[command(flatten)]
    pub select: PortSelection,
    /// Also each port's P_Key table (the populated slots)
    #[arg(short = 'v', long)]
    pub verbose: bool,
}

#[derive(Debug, Args)]
pub struct GidsArgs {
    #[command(flatten)]
    pub select: PortSelection,
    /// Show the IP address each GID encodes
    #[arg(long)]
    pub ip: bool,
    /// Include empty (all-zero) slots
    #[arg(short = 'a', long)]
    pub all: bool,
}

#[derive(Debug, Subcommand)]
pub enum GidCommand {
    /// Decode GIDs: sysfs, IPv6, colon-byte or 32-hex-digit wire form
    Decode {
        #[arg(required = true, value_name = "GID")]
        gids: Vec<String>,
    },
    /// The GID a RoCE v2 port gets for an IP address (ADDR or ADDR/LEN, as `ip addr` prints it)
    Encode {
        #[arg(required = true, value_name = "IP")]
        ips: Vec<IpArg>,
    },
}

/// An IP address as users paste it from `ip addr`: `10.0.0.1` or `10.0.0.1/24`. The prefix
/// length is checked and dropped: a GID holds the address alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpArg(pub IpAddr);

impl std::str::FromStr for IpArg {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        let (addr, len) = match t.split_once('/') {
            Some((a, l)) => (a, Some(l)),
            None => (t, None),
        };
        let ip: IpAddr = addr.parse().map_err(|_| {
            format!("'{s}' is not an IP address; give one as `ip addr` prints it: 10.0.0.1, 10.0.0.1/24 or 2001:db8::1/64")
        })?;
        if let Some(len) = len {
            let max = if ip.is_ipv4() { 32 } else { 128 };
            if !len.parse::<u8>().is_ok_and(|l| l <= max) {
                return Err(format!(
                    "'{s}': the prefix length '{len}' is not 0 to {max}"
                ));
            }
        }
        Ok(IpArg(ip))
    }
}

/// A GID index, or `auto` to let rdmactl choose (and say why).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GidIndexArg {
    Auto,
    Index(u32),
}

impl std::str::FromStr for GidIndexArg {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        // -1 is NCCL's and perftest's "choose for me" (NCCL_IB_GID_INDEX=-1).
        if s.eq_ignore_ascii_case("auto") || s.trim() == "-1" {
            return Ok(GidIndexArg::Auto);
        }
        s.parse::<u32>().map(GidIndexArg::Index).map_err(|_| {
            format!(
                "'{s}' is not a GID index; give a number, or 'auto' (or -1, as NCCL_IB_GID_INDEX)"
            )
        })
    }
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub on: DevicePort,
    /// GID index to check, or auto (-1 means auto too, as NCCL_IB_GID_INDEX=-1)
    #[arg(
        short = 'g',
        long = "gid-index",
        value_name = "N|auto",
        default_value = "auto",
        allow_negative_numbers = true
    )]
    pub gid_index: GidIndexArg,
    /// The peer's IP address or host name, to check routing and neighbours toward it
    #[arg(long, value_name = "HOST")]
    pub peer: Option<String>,
    /// Check, as the libraries read them, the NCCL and UCX variables that pick the device,
    /// port and GID: NCCL_IB_HCA, NCCL_IB_GID_INDEX, NCCL_IB_ROCE_VERSION_NUM,
    /// NCCL_IB_ADDR_FAMILY, NCCL_IB_ADDR_RANGE, NCCL_SOCKET_IFNAME, UCX_NET_DEVICES,
    /// UCX_IB_GID_INDEX
    #[arg(long)]
    pub env: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Op {
    Send,
    Write,
    Read,
    All,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Compat {
    /// The exchange of rdma-core's ibv_rc_pingpong
    #[value(name = "rc_pingpong")]
    RcPingpong,
}

#[derive(Debug, Args)]
pub struct PingpongArgs {
    /// Connect to this server; without it, listen
    #[arg(value_name = "SERVER")]
    pub server: Option<String>,
    #[command(flatten)]
    pub on: DevicePort,
    /// GID index, or auto (-1 means auto too)
    #[arg(
        short = 'g',
        long = "gid-idx",
        visible_alias = "gid-index",
        value_name = "N|auto",
        allow_negative_numbers = true
    )]
    pub gid_index: Option<GidIndexArg>,
    /// TCP port of the out-of-band exchange
    #[arg(
        short = 'p',
        long = "port",
        value_name = "PORT",
        default_value_t = 18515
    )]
    pub tcp_port: u16,
    /// Message size in bytes [default: 4096; a server without -s takes the client's]
    #[arg(short = 's', long = "size", value_name = "BYTES")]
    pub size_given: Option<u32>,
    /// Number of iterations [default: 1000; a server without -n, --duration or --lat takes
    /// the client's]
    #[arg(short = 'n', long, value_name = "N", conflicts_with = "duration")]
    pub iters: Option<u32>,
    /// Run each measured operation for SECS instead of -n iterations (soak runs; memory
    /// stays constant)
    #[arg(long, value_name = "SECS")]
    pub duration: Option<f64>,
    /// A progress line (iterations, rate, latency) on stderr every SECS [default: 5 when
    /// stderr is a terminal, none otherwise]
    #[arg(long, value_name = "SECS")]
    pub interval: Option<f64>,
    /// RDMA WRITE and READ one at a time, for their latency, each timed from post to
    /// completion (as ib_read_lat; a WRITE's completion waits for the ACK, a round trip,
    /// where ib_write_lat reports half of a WRITE ping-pong); without it they keep a window
    /// in flight and report bandwidth
    #[arg(long)]
    pub lat: bool,
    /// Sleep on the completion channel instead of busy-polling (ibv_rc_pingpong -e)
    #[arg(short = 'e', long)]
    pub events: bool,
    /// Service level of the path (0-15; on RoCE the driver maps it to a priority)
    #[arg(short = 'l', long, value_name = "SL", value_parser = clap::value_parser!(u8).range(0..=15))]
    pub sl: Option<u8>,
    /// Traffic class of the GRH: on RoCE v2 the IP DSCP (upper 6 bits) and ECN (lower 2).
    /// Decimal (96) or hex (0x60), as perftest takes it, or a DSCP name of iproute2's
    /// rt_dsfield (CS3, AF41, EF)
    #[arg(long, value_name = "TCLASS", value_parser = parse_tclass)]
    pub tclass: Option<u8>,
    /// P_Key index of the QP, into the port's P_Key table [default: 0]
    #[arg(long = "pkey-index", value_name = "N")]
    pub pkey_index: Option<u16>,
    /// Path MTU (256, 512, 1024, 2048, 4096); default: the smaller active MTU of the two ports
    /// (a server without -m takes the client's)
    #[arg(short = 'm', long, value_name = "MTU")]
    pub mtu: Option<u32>,
    /// Operations to run [default: all; send against a stock ibv_rc_pingpong; a server
    /// without --op takes the client's]. A SEND's latency is a round trip (ibv_rc_pingpong's
    /// ping-pong): twice ib_send_lat's one-way figure
    #[arg(long, value_enum)]
    pub op: Option<Op>,
    /// Give up on any step after this many seconds
    #[arg(long, value_name = "SECS", default_value_t = 5.0)]
    pub timeout: f64,
    /// Local address: a server listens on it only; with --cm a client connects from it
    #[arg(long, value_name = "ADDR")]
    pub bind: Option<IpAddr>,
    /// Speak another tool's exchange (client side; a server detects it by itself)
    #[arg(long, value_enum, value_name = "TOOL")]
    pub compat: Option<Compat>,
    /// Connect through the RDMA connection manager (librdmacm) instead of a TCP exchange
    #[arg(long)]
    pub cm: bool,
    /// Server: serve one client after another until Ctrl-C (one report per client)
    #[arg(long)]
    pub persist: bool,
    /// Every message size from 2 B to 8 MiB, doubling, one run each, and one table
    /// (perftest's -a); give it to both ends. -n applies to each size
    #[arg(
        short = 'a',
        long = "all-sizes",
        conflicts_with_all = ["size_given", "duration", "compat", "cm", "persist"]
    )]
    pub all_sizes: bool,
    /// Bandwidth in Gbit/s instead of Mbit/s in the text report (perftest's --report-gbits;
    /// -j always carries mbit_per_sec)
    #[arg(long = "report-gbits")]
    pub report_gbits: bool,
}

impl PingpongArgs {
    /// -s as given, else 4096.
    pub fn size(&self) -> u32 {
        self.size_given.unwrap_or(4096)
    }

    /// -n as given, else 1000; with --duration there is no count (None).
    pub fn iterations(&self) -> Option<u32> {
        match (self.iters, self.duration) {
            (Some(n), _) => Some(n),
            (None, Some(_)) => None,
            (None, None) => Some(1000),
        }
    }
}

#[derive(Debug, Args)]
pub struct SelftestArgs {
    /// Device; give two to test between them
    #[arg(short = 'd', long = "ib-dev", value_name = "DEV", num_args = 1, action = clap::ArgAction::Append)]
    pub devices: Vec<String>,
    #[command(flatten)]
    pub on: PortGid,
    /// Message size in bytes
    #[arg(short = 's', long, value_name = "BYTES", default_value_t = 4096)]
    pub size: u32,
    /// Give up on any step after this many seconds
    #[arg(long, value_name = "SECS", default_value_t = 5.0)]
    pub timeout: f64,
    /// Connect through the RDMA connection manager
    #[arg(long)]
    pub cm: bool,
    /// Run only these steps, comma-separated (default: all); the setup steps (open to rts)
    /// always run
    #[arg(
        long,
        value_name = "STEP,...",
        value_delimiter = ',',
        conflicts_with = "cm"
    )]
    pub steps: Vec<SelftestStep>,
}

/// The self-test's steps that `--steps` picks; `basic` is the classic walk (post recv,
/// send, rdma write, rdma read, atomic cas, zero-byte send, poll).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SelftestStep {
    /// post recv, send, rdma write, rdma read, atomic cas, zero-byte send, poll
    Basic,
    /// Only every k-th send signalled; the send queue never overflows
    Unsignaled,
    /// Completion events through a channel instead of busy polling
    Events,
    /// A CQ armed solicited-only: an event for a solicited SEND only
    Solicited,
    /// A SEND at max_inline_data inline; one byte more is refused
    Inline,
    /// The P_Key table; the default P_Key's index; an index past the table refused
    Pkey,
    /// Outstanding work requests flushed by the move to ERR
    Flush,
    /// Threads on their own QPs sharing one PD and CQ
    Threads,
    /// Threads posting on one shared QP
    SharedQp,
    /// Fetch-and-add beside compare-and-swap
    FetchAdd,
    /// A shared receive queue serving two QPs
    Srq,
}

// `rdmactl fabric`. Cost: the pattern's rounds times one pair test (a few seconds with
// the defaults, up to --deadline): `all` has N-1 rounds (4095 for 4096 endpoints: hours),
// `rails` N/R-1 for R rails, `random:K` about 2K (minutes at any N). A plain comment, as
// on PortSelection.
#[derive(Debug, Args)]
#[command(after_help = FABRIC_AFTER_HELP)]
pub struct FabricArgs {
    /// Device of this endpoint; give several (one per local rank: the n-th process on a
    /// host takes the n-th), as DEV/PORT, or DEV on -i's port. Default: the n-th ACTIVE
    /// port of the host
    #[arg(short = 'd', long = "ib-dev", value_name = "DEV[/PORT]", num_args = 1, action = clap::ArgAction::Append)]
    pub devices: Vec<DevPort>,
    #[command(flatten)]
    pub on: PortGid,
    /// This process's rank (default: from SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMIX_RANK or
    /// PMI_RANK; pdsh: --rank %n)
    #[arg(long, value_name = "N")]
    pub rank: Option<u32>,
    /// Number of ranks (default: from the launcher)
    #[arg(long, value_name = "N")]
    pub size: Option<u32>,
    /// The n-th process on this host (default: SLURM_LOCALID, OMPI_COMM_WORLD_LOCAL_RANK,
    /// ...; else 0)
    #[arg(long, value_name = "N")]
    pub local_rank: Option<u32>,
    /// Where rank 0 listens and the others connect (default: MASTER_ADDR:MASTER_PORT, else
    /// the first host of SLURM_JOB_NODELIST on port 18514)
    #[arg(long, value_name = "HOST:PORT", conflicts_with = "rendezvous_dir")]
    pub rendezvous: Option<String>,
    /// A directory every rank can read (a cluster file system): rank 0 writes its address
    /// there, on a port of its choosing
    #[arg(long, value_name = "DIR")]
    pub rendezvous_dir: Option<std::path::PathBuf>,
    /// Run token: only ranks with the same token join (default: derived from the
    /// launcher's job id)
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<String>,
    /// Pairs to test: all, rails (same local rank only) or random:K (K partners each)
    #[arg(long, value_name = "PATTERN", default_value = "all", value_parser = crate::model::fabric::Pattern::parse)]
    pub pattern: crate::model::fabric::Pattern,
    /// Message size of each pair test
    #[arg(short = 's', long, value_name = "BYTES", default_value_t = 4096)]
    pub size_bytes: u32,
    /// Iterations of each operation in a pair test
    #[arg(short = 'n', long, value_name = "N", default_value_t = 500)]
    pub iters: u32,
    /// A pair test that has not finished after this many seconds is stopped and failed
    #[arg(long, value_name = "SECS", default_value_t = 30.0)]
    pub deadline: f64,
    /// Give up on any step of a pair test after this many seconds (pingpong's --timeout)
    #[arg(long, value_name = "SECS", default_value_t = 5.0)]
    pub timeout: f64,
    /// Rank 0 waits this long for every rank to join
    #[arg(long, value_name = "SECS", default_value_t = 60.0)]
    pub join_timeout: f64,
    /// A pair is slow above this many times the baseline latency
    #[arg(long, value_name = "X", default_value_t = 2.0)]
    pub latency_factor: f64,
    /// A pair's bandwidth is low below this fraction of the baseline
    #[arg(long, value_name = "F", default_value_t = 0.8)]
    pub bandwidth_fraction: f64,
    /// A pair is lossy above this many packets resent per thousand sent (both ends' port
    /// counters)
    #[arg(long, value_name = "N", default_value_t = 10.0)]
    pub resend_limit: f64,
    /// Expected latency (µs per iteration): the baseline where the fabric gives none (two
    /// endpoints)
    #[arg(long, value_name = "USEC")]
    pub expect_usec: Option<f64>,
    /// Expected WRITE bandwidth (Mbit/s), as --expect-usec
    #[arg(long, value_name = "MBIT")]
    pub expect_mbit: Option<f64>,
    /// Test at most N pairs of a round at once (default: all): for endpoints that share
    /// CPUs (a VM, oversubscribed hosts), where concurrent busy-polling tests slow each other
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub parallel: Option<u32>,
    /// Base of the TCP ports the pair tests listen on: rank R uses BASE+R
    #[arg(long, value_name = "PORT", default_value_t = 19000)]
    pub port_base: u16,
    /// Also write the pairs as CSV
    #[arg(long, value_name = "FILE")]
    pub csv: Option<std::path::PathBuf>,
    /// Also draw the matrix as an SVG heatmap
    #[arg(long, value_name = "FILE")]
    pub svg: Option<std::path::PathBuf>,
    /// Test the control plane only: pair tests return made-up figures at once (for scale
    /// tests of rank 0)
    #[arg(long, hide = true)]
    pub simulate: bool,
    /// With --simulate: this process plays N ranks, from --rank on (one thread each)
    #[arg(long, hide = true, value_name = "N", requires = "simulate")]
    pub simulate_ranks: Option<u32>,
}

const FABRIC_AFTER_HELP: &str = "\
Launch one process per endpoint with what the cluster has:
  srun -N 64 --ntasks-per-node=8 rdmactl fabric
  mpirun -np 8 -H a,b,c,d,e,f,g,h rdmactl fabric --rendezvous a:18514
  pdsh -R exec -w h[0-3] rdmactl fabric --rank %n --size 4 --rendezvous h0:18514
Rank 0 prints the report: configuration drift, the matrix, the suspects with why/seen/fix,
and a verdict. Exit status: 0 clean, 1 anything bad (a failed, slow or lossy pair, drift, a
missing rank).
Cost with the defaults (a round takes about 1-2 s on hardware: two process starts and
500 iterations of each operation): all = N-1 rounds (4096 endpoints: 4095 rounds, 1-2
hours), rails = N/R-1 rounds for R rails (4096 endpoints on 8 rails: 511 rounds, 10-15
minutes), random:K = about 2K rounds (random:4: under a minute at any N). Bad pairs add
retest rounds.";

#[derive(Debug, Args)]
pub struct DoctorArgs {
    #[command(flatten)]
    pub filter: DeviceFilter,
    /// Also judge the host against FILE, a manifest (TOML, or JSON by extension or
    /// content) of the devices, ports, rates, MTUs, firmware, GIDs, memlock and modules it
    /// should have (docs/health-checks.md)
    #[arg(long, value_name = "FILE", conflicts_with = "save_expect")]
    pub expect: Option<PathBuf>,
    /// Write this host as a manifest for --expect to FILE (JSON when it ends in .json, else
    /// TOML), then report as usual
    #[arg(long, value_name = "FILE")]
    pub save_expect: Option<PathBuf>,
    /// How to report: text, or for health-check frameworks nagios (a status line with
    /// perfdata; exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN), nhc (nothing when healthy,
    /// else one line "rdmactl: CODE SUBJECT" and exit 1) or junit (XML, one testcase per
    /// check)
    #[arg(long, value_enum, default_value_t = HealthFormat::Text, value_name = "FORMAT")]
    pub format: HealthFormat,
    /// Keep the port counters in FILE between runs and warn only on an error counter that
    /// grew since the previous run (the first run records a baseline). Default with
    /// --format nagios|nhc|junit on a live host: /var/lib/rdmactl/doctor-FORMAT.json;
    /// without state, non-zero totals are information, not a warning
    #[arg(long, value_name = "FILE")]
    pub state: Option<PathBuf>,
    /// Keep no counter state, even with a health-check format: totals are information only
    #[arg(long, conflicts_with = "state")]
    pub no_state: bool,
}

/// `doctor --format`: who reads the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HealthFormat {
    /// The findings for a person (or -j for JSON)
    Text,
    /// Nagios/Icinga plugin output
    Nagios,
    /// LBNL NHC and Slurm drain reasons
    Nhc,
    /// JUnit XML for CI
    Junit,
}

#[derive(Debug, Args)]
pub struct WaitArgs {
    /// The ports to wait for: DEV (all its ports) or DEV/PORT; none: every port of every
    /// device (and at least one device)
    #[arg(value_name = "DEV[/PORT]")]
    pub targets: Vec<DevPort>,
    /// Give up after SECS seconds (fractions allowed; 0 checks once)
    #[arg(long, value_name = "SECS", default_value_t = 120.0, value_parser = parse_timeout)]
    pub timeout: f64,
}

/// `wait --timeout`: seconds, 0 or more.
fn parse_timeout(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(secs) if secs.is_finite() && secs >= 0.0 => Ok(secs),
        _ => Err(format!("'{s}' is not a number of seconds (0 or more)")),
    }
}

// Each command's long help (--help, the man page) ends with a few examples: the common
// case first, then the flags people look for.
const DEVICES_EXAMPLES: &str = "\
Examples:
  rdmactl devices                   one line per device (ibv_devices with state and netdev)
  rdmactl devices -d mlx5_0 -v      every ibv_devinfo -v field of one device
  rdmactl -j devices                JSON (docs/json.md)";

const PORTS_EXAMPLES: &str = "\
Examples:
  rdmactl ports                     every port: state, rate, LID, MTUs, netdev
  rdmactl ports mlx5_0/1 -v         one port, with its P_Key table";

const GIDS_EXAMPLES: &str = "\
Examples:
  rdmactl gids                      every GID table (show_gids)
  rdmactl gids rxe0/1 --ip          one port's GIDs as IP addresses";

const GID_EXAMPLES: &str = "\
Examples:
  rdmactl gid decode fe80::1a2b:3cff:fe4d:5e6f 0000:0000:0000:0000:0000:ffff:c0a8:4d01
  rdmactl gid encode 192.168.77.1   the IPv4-mapped GID of an address";

const CHECK_EXAMPLES: &str = "\
Examples:
  rdmactl check -d mlx5_0 -g 3 --peer 10.0.0.2     is index 3 usable toward that host?
  rdmactl check -d mlx5_0 -g auto --peer 10.0.0.2  which index fits, and why
  rdmactl check --env --peer 10.0.0.2              the GID NCCL_IB_GID_INDEX or UCX would use
--peer names the peer's address; the GID the peer will use is its own -g, which check
cannot see.";

const PINGPONG_EXAMPLES: &str = "\
Examples:
  rdmactl pingpong -d rxe0 -g 1                    server: waits on TCP port 18515
  rdmactl pingpong -d rxe1 -g 1 192.168.77.1       client: the server's address
  rdmactl pingpong -g auto server.example          each end chooses its GID
  rdmactl pingpong -d rxe1 -g 1 localhost          both ends on one host
  rdmactl pingpong -g 1 fe80::1%eth0               a link-local TCP address, with its zone
  rdmactl pingpong --op write -s 65536 -n 1000 HOST   RDMA WRITE bandwidth (native peer)
  rdmactl pingpong -a --op write -n 100 [HOST]     2 B to 8 MiB, one table (both ends -a)
  rdmactl pingpong --cm 10.0.0.1                   through rdma_cm, as rping
The address carries only the TCP exchange (as ibv_rc_pingpong's); the RoCE path is the two
GIDs'. A stock ibv_rc_pingpong works on either end.";

const SELFTEST_EXAMPLES: &str = "\
Examples:
  rdmactl selftest                    the first device to itself, step by step
  rdmactl selftest -d rxe0 -d rxe1    two devices of this host
  rdmactl selftest --cm -d rxe0       through rdma_cm";

const DOCTOR_EXAMPLES: &str = "\
Examples:
  rdmactl doctor                          this host's stack, in the order to debug it
  rdmactl doctor --save-expect host.toml  write a manifest of what this host has
  rdmactl doctor --expect host.toml --format nagios   a health check against it";

const WAIT_EXAMPLES: &str = "\
Examples:
  rdmactl wait --timeout 120          until every port is ACTIVE (boot ordering)
  rdmactl wait mlx5_0/1 mlx5_1/1      only those ports";

const COUNTERS_EXAMPLES: &str = "\
Examples:
  rdmactl counters mlx5_0/1               a snapshot grouped by meaning
  rdmactl counters --interval 1 --count 10   deltas and rates, ten one-second samples";

const SUBNET_EXAMPLES: &str = "\
Examples:
  rdmactl subnet                      walk the subnet from the first InfiniBand port
  rdmactl subnet --baseline last.json   changes since a saved `rdmactl -j subnet`
  rdmactl subnet --hosts              ibhosts' list";

const QOS_EXAMPLES: &str = "\
Examples:
  rdmactl qos                         every RoCE port's chain, for the traffic classes in use
  rdmactl qos mlx5_0/1 --tclass 106   follow one traffic class
  rdmactl qos --interval 10           the pause, ECN and RNR counters over 10 s";

const RES_EXAMPLES: &str = "\
Examples:
  rdmactl res                         every process's QPs, rdma_cm IDs, MRs, CQs and PDs
  rdmactl res --comm ibv_rc_pingpong  one command's processes; a warning if they hold no QP
  rdmactl res --pid 4242 --interval 5   is its QP moving? stalled, idle or dead
  rdmactl res -d mlx5_0 -j            one device, as JSON";

const EXPLAIN_EXAMPLES: &str = "\
Examples:
  rdmactl explain                     every code, one line each
  rdmactl explain gid-family          one code: cause, evidence, fix";

const EXPORTER_HELP: &str = "\
Series: rdmactl_port_info, rdmactl_port_state, rate, width, MTUs, LID, GID counts, every \
counter of counters/ and hw_counters/ (rdmactl_pma_*, rdmactl_hw_*), \
rdmactl_finding{code,severity,device,port} from doctor's rules (rdmactl explain CODE), \
rdmactl_scrape_error{device}. docs/exporter.md lists them all.

Examples:
  rdmactl exporter                          serve http://0.0.0.0:10078/metrics
  rdmactl exporter --listen 127.0.0.1:9999
  rdmactl exporter --textfile /var/lib/prometheus/node-exporter   (cron: writes rdmactl.prom)";

#[derive(Debug, Args)]
pub struct ExporterArgs {
    /// Serve /metrics on ADDR (HOST:PORT, [V6]:PORT, or :PORT for every address, IPv6 and IPv4)
    // The default port: Prometheus' list of exporter ports filled 9100-9999 by 2023 and
    // later exporters took ports above 10000; 10078 is not registered there
    // (docs/exporter.md says so), so a host that runs something on it gives --listen.
    #[arg(long, value_name = "ADDR", default_value = ":10078")]
    pub listen: String,
    /// Write DIR/rdmactl.prom once (a temporary file renamed over it) and exit, for
    /// node_exporter's textfile collector (--collector.textfile.directory)
    #[arg(long, value_name = "DIR", conflicts_with = "listen")]
    pub textfile: Option<PathBuf>,
    /// Answer a scrape (or end a --textfile run) after SECS even when a read has not
    /// returned (a driver's sysfs file that blocks), with rdmactl_scrape_error naming it
    #[arg(long, value_name = "SECS", default_value_t = 5.0, value_parser = parse_interval)]
    pub scrape_timeout: f64,
    /// Judge each scrape against this manifest (`doctor --expect`'s, made by
    /// `doctor --save-expect`): its findings become rdmactl_finding series, so a device or
    /// port that disappears keeps failing instead of taking its alerts with it
    #[arg(long, value_name = "FILE")]
    pub expect: Option<PathBuf>,
    /// Export only these groups of series (comma-separated), beside the ones always
    /// exported (counts, state, rates, MTUs, scrape errors): info, gids, pma, hw, qos,
    /// findings (docs/exporter.md gives each one's series per port)
    #[arg(long, value_name = "GROUP", value_delimiter = ',', value_parser = COLLECT_GROUPS)]
    pub collect: Vec<String>,
    /// Leave these groups of series out (comma-separated; the same names as --collect)
    #[arg(long, value_name = "GROUP", value_delimiter = ',', value_parser = COLLECT_GROUPS)]
    pub no_collect: Vec<String>,
}

/// `--collect`'s group names (render::metrics::GROUPS has what each holds).
const COLLECT_GROUPS: [&str; 6] = ["info", "gids", "pma", "hw", "qos", "findings"];

#[derive(Debug, Args)]
pub struct CountersArgs {
    #[command(flatten)]
    pub select: PortSelection,
    /// Every counter, zero and undescribed ones included (default: the non-zero counters
    /// that matter for diagnosis)
    #[arg(short = 'a', long)]
    pub all: bool,
    /// Re-read every SECS seconds (fractions allowed) and print each interval's deltas and
    /// rates; with -j one JSON object per sample, one per line
    #[arg(long, value_name = "SECS", value_parser = parse_interval)]
    pub interval: Option<f64>,
    /// With --interval: stop after N samples (default: until interrupted)
    #[arg(long, value_name = "N", requires = "interval", value_parser = clap::value_parser!(u64).range(1..))]
    pub count: Option<u64>,
}

#[derive(Debug, Args)]
pub struct QosArgs {
    #[command(flatten)]
    pub select: PortSelection,
    /// Judge this traffic class too, as a job sets it (perftest --tclass, NCCL_IB_TC):
    /// decimal (106), hex (0x6a) or a DSCP name (AF31)
    #[arg(long, value_name = "TCLASS", value_parser = parse_tclass)]
    pub tclass: Option<u8>,
    /// Read the pause, ECN and RNR counters twice, SECS apart (run the job meanwhile), and
    /// judge what moved
    #[arg(long, value_name = "SECS", value_parser = parse_interval)]
    pub interval: Option<f64>,
}

/// `--interval`: a positive number of seconds, at least 10 ms (a shorter one only measures
/// the kernel's counter cache).
/// iproute2's DSCP names (/etc/iproute2/rt_dsfield) as traffic-class bytes: the DSCP
/// shifted past the two ECN bits.
const DSFIELD_NAMES: [(&str, u8); 22] = [
    ("default", 0x00),
    ("CS0", 0x00),
    ("CS1", 0x20),
    ("CS2", 0x40),
    ("CS3", 0x60),
    ("CS4", 0x80),
    ("CS5", 0xa0),
    ("CS6", 0xc0),
    ("CS7", 0xe0),
    ("AF11", 0x28),
    ("AF12", 0x30),
    ("AF13", 0x38),
    ("AF21", 0x48),
    ("AF22", 0x50),
    ("AF23", 0x58),
    ("AF31", 0x68),
    ("AF32", 0x70),
    ("AF33", 0x78),
    ("AF41", 0x88),
    ("AF42", 0x90),
    ("AF43", 0x98),
    ("EF", 0xb8),
];

/// `--tclass`: decimal or `0x` hex, as perftest's `--tclass` (strtol base 0, without its
/// octal), or one of iproute2's DSCP names, as operators write a TOS byte.
fn parse_tclass(s: &str) -> Result<u8, String> {
    let t = s.trim();
    let value = if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u32::from_str_radix(hex, 16).ok()
    } else if t.bytes().all(|b| b.is_ascii_digit()) && !t.is_empty() {
        t.parse::<u32>().ok()
    } else {
        DSFIELD_NAMES
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(t))
            .map(|(_, v)| u32::from(*v))
    };
    match value {
        Some(v) if v <= 255 => Ok(v as u8),
        Some(v) => Err(format!("{v} is above 255: a traffic class is one byte")),
        None => Err(format!(
            "'{s}' is not a traffic class: give 0 to 255, in decimal (96) or hex (0x60), or a DSCP name (CS0-CS7, AF11-AF43, EF)"
        )),
    }
}

fn parse_interval(s: &str) -> Result<f64, String> {
    let secs: f64 = s
        .parse()
        .map_err(|_| format!("'{s}' is not a number of seconds"))?;
    if secs.is_finite() && secs >= 0.01 {
        Ok(secs)
    } else {
        Err(format!("'{s}': the interval must be at least 0.01 seconds"))
    }
}

// -d and -i filter the ports subnet may walk from; its help says so, and what it takes
// without them.
#[derive(Debug, Args)]
#[command(
    mut_args(with_arg("device", |a| {
        a.help("The device to walk from (default: the first InfiniBand port with a umad device)")
    })),
    mut_args(with_arg("port", |a| a.help("The port to walk from")))
)]
pub struct SubnetArgs {
    #[command(flatten)]
    pub from: PortFilter,
    /// MADs outstanding at once (ibnetdiscover's -o; it keeps 2)
    #[arg(long, value_name = "N", default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub in_flight: u32,
    /// The longest one MAD waits before it is sent again, in milliseconds (opensm's
    /// transaction timeout); resends start sooner, from the measured answer time, and back
    /// off up to it. Also how long a node may answer nothing before it, and what lies
    /// behind it, is reported unanswered
    #[arg(long, value_name = "MS", default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..=60_000))]
    pub timeout: u64,
    /// Resends of an unanswered MAD before it is reported unanswered: many and quick (a MAD
    /// the fabric gives back is resent at once), so a switch that drops a third of its MADs
    /// is still walked whole; a dead node costs about one --timeout whatever N is
    #[arg(long, value_name = "N", default_value_t = 15, value_parser = clap::value_parser!(u32).range(0..=50))]
    pub retries: u32,
    /// Skip the PMA PortCounters of the link ends
    #[arg(long)]
    pub no_counters: bool,
    /// Read the PMA counters a second time after SECS seconds and judge what they did in
    /// between (errors per second) instead of their totals
    #[arg(long, value_name = "SECS", value_parser = parse_interval, conflicts_with = "no_counters")]
    pub interval: Option<f64>,
    /// Compare with a previous `subnet -j` output or an ibnetdiscover topology file
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Write the subnet in ibnetdiscover's topology format to FILE
    #[arg(long, value_name = "FILE")]
    pub topology: Option<PathBuf>,
    /// Draw the topology to FILE as SVG, tiered from the hosts up, each link and node coloured
    /// by its worst finding (fail red, warn orange, info blue)
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// List the channel adapters (hosts) in ibhosts' format instead of the report
    #[arg(long, conflicts_with = "switches")]
    pub hosts: bool,
    /// List the switches in ibswitches' format instead of the report
    #[arg(long)]
    pub switches: bool,
    /// After the report, clear the PMA counters of every link end (a PMA Set; nothing is
    /// ever set without this flag)
    #[arg(long)]
    pub reset_counters: bool,
}

#[derive(Debug, Args)]
pub struct TriageArgs {
    /// Log files, read in order (srun -l, mpirun --tag-output, pdsh and syslog prefixes are
    /// understood); standard input when none or `-`
    #[arg(value_name = "FILE")]
    pub files: Vec<String>,
    /// Judge the log alone: do not add this host's evidence (for a log copied from another
    /// cluster). By default a host that holds one of a failure's GIDs, or whose name the log
    /// gives, is checked as `check` would (port, GID slot, route toward the other end)
    #[arg(long)]
    pub no_host: bool,
}

#[derive(Debug, Args)]
pub struct ResArgs {
    /// Only this device's resources
    #[arg(short = 'd', long = "ib-dev", value_name = "DEV")]
    pub device: Option<String>,
    /// Only this process (repeatable); a process holding no QP and no MR is a finding
    #[arg(long, value_name = "PID")]
    pub pid: Vec<u32>,
    /// Only the processes with this command name (/proc/PID/comm), as --pid
    #[arg(long, value_name = "NAME", conflicts_with = "pid")]
    pub comm: Option<String>,
    /// Read twice, SECS apart, and judge what moved: an RTS QP whose PSNs stood still is
    /// stalled (its process stopped) or idle
    #[arg(long, value_name = "SECS", value_parser = parse_interval)]
    pub interval: Option<f64>,
}

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// A code as rdmactl prints it (`retry-exceeded`, `memlock`, `fabric-link`); none lists
    /// every code
    #[arg(value_name = "CODE")]
    pub code: Option<String>,
}

#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// Directory that receives man/ and completions/
    #[arg(value_name = "DIR", default_value = ".")]
    pub dir: PathBuf,
}

#[cfg(test)]
mod tests {
    /// Every example in a command's long help is a command line clap accepts.
    #[test]
    fn every_help_example_parses() {
        let mut seen = 0;
        for text in [
            DEVICES_EXAMPLES,
            PORTS_EXAMPLES,
            GIDS_EXAMPLES,
            GID_EXAMPLES,
            CHECK_EXAMPLES,
            PINGPONG_EXAMPLES,
            SELFTEST_EXAMPLES,
            DOCTOR_EXAMPLES,
            WAIT_EXAMPLES,
            COUNTERS_EXAMPLES,
            SUBNET_EXAMPLES,
            QOS_EXAMPLES,
            RES_EXAMPLES,
            EXPLAIN_EXAMPLES,
            EXPORTER_HELP,
        ] {
            for line in text.lines().filter(|l| l.starts_with("  rdmactl ")) {
                // The command, then at least two spaces and what it does.
                let command = line.trim_start().split("   ").next().unwrap();
                let command = command.split("  ").next().unwrap();
                let argv: Vec<&str> = command.split_whitespace().collect();
                if let Err(e) = Cli::try_parse_from(&argv) {
                    panic!("{command:?} does not parse: {e}");
                }
                seen += 1;
            }
        }
        assert!(seen >= 30, "{seen} examples");
    }

    use super::*;
    use clap::CommandFactory;

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    /// `--tclass 0x60` as operators write a TOS byte, decimal as perftest, and iproute2's
    /// DSCP names.
    #[test]
    fn tclass_forms() {
        for (text, want) in [
            ("96", Some(96)),
            ("0x60", Some(96)),
            ("0X60", Some(96)),
            ("0", Some(0)),
            ("255", Some(255)),
            ("0xff", Some(255)),
            ("CS3", Some(0x60)),
            ("af41", Some(0x88)),
            ("EF", Some(0xb8)),
            ("default", Some(0)),
            ("256", None),
            ("0x100", None),
            ("-1", None),
            ("0x", None),
            ("", None),
            ("AF44", None),
        ] {
            assert_eq!(parse_tclass(text).ok(), want, "{text}");
        }
        let cli = Cli::try_parse_from(["rdmactl", "pingpong", "--tclass", "0x60"]).unwrap();
        let Command::Pingpong(args) = cli.command else {
            panic!("pingpong")
        };
        assert_eq!(args.tclass, Some(96));
    }

    #[test]
    fn dev_port_forms() {
        type Case = (&'static str, Option<(&'static str, Option<u32>)>);
        let cases: &[Case] = &[
            ("mlx5_0", Some(("mlx5_0", None))),
            ("mlx5_0/1", Some(("mlx5_0", Some(1)))),
            ("rxe0/2", Some(("rxe0", Some(2)))),
            ("rxe0/0", None),
            ("rxe0/x", None),
            ("/1", None),
            ("", None),
        ];
        for (text, want) in cases {
            let got = text.parse::<DevPort>().ok();
            let want = want.map(|(d, p)| DevPort {
                device: d.to_string(),
                port: p,
            });
            assert_eq!(got, want, "{text}");
        }
    }

    #[test]
    fn ip_forms_as_ip_addr_prints_them() {
        let v4: IpAddr = "10.0.0.1".parse().unwrap();
        assert_eq!("10.0.0.1".parse::<IpArg>(), Ok(IpArg(v4)));
        assert_eq!("10.0.0.1/24".parse::<IpArg>(), Ok(IpArg(v4)));
        assert_eq!("10.0.0.1/32".parse::<IpArg>(), Ok(IpArg(v4)));
        let v6: IpAddr = "2001:db8::1".parse().unwrap();
        assert_eq!("2001:db8::1/64".parse::<IpArg>(), Ok(IpArg(v6)));
        for bad in [
            "10.0.0.1/33",
            "10.0.0.1/",
            "10.0.0.1/x",
            "2001:db8::1/129",
            "host",
            "",
        ] {
            assert!(bad.parse::<IpArg>().is_err(), "{bad}");
        }
    }

    /// `check --env`'s help names every variable it checks.
    #[test]
    fn env_help_names_every_variable() {
        let help = Cli::command()
            .find_subcommand_mut("check")
            .unwrap()
            .render_long_help()
            .to_string();
        for var in crate::diagnose::env::VARIABLES {
            assert!(help.contains(var), "{var} missing from check --help");
        }
    }

    #[test]
    fn gid_index_forms() {
        assert_eq!("auto".parse::<GidIndexArg>(), Ok(GidIndexArg::Auto));
        assert_eq!("AUTO".parse::<GidIndexArg>(), Ok(GidIndexArg::Auto));
        assert_eq!("3".parse::<GidIndexArg>(), Ok(GidIndexArg::Index(3)));
        assert_eq!("-1".parse::<GidIndexArg>(), Ok(GidIndexArg::Auto));
        assert!("-2".parse::<GidIndexArg>().is_err());
        assert!("three".parse::<GidIndexArg>().is_err());
    }
}
