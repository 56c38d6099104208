//! What the user typed. Resolution into devices, ports and GID indices happens in the
//! command modules, so this file stays a plain description of the flags.

use std::net::IpAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

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
        "pingpong or selftest stopped by SIGINT (Ctrl-C) after printing what it measured; 143 for SIGTERM",
    ),
];

/// The environment rdmactl reads, for `--help` and the man pages' ENVIRONMENT.
pub const ENVIRONMENT: &[(&str, &str)] = &[
    (
        "RDMACTL_SYSFS",
        "read sysfs from this directory instead of /sys (as --sysfs)",
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
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List RDMA devices (like ibv_devinfo; -v for every attribute)
    #[command(visible_alias = "ls")]
    Devices(DevicesArgs),
    /// Show port state, rate, LID, the RDMA MTUs (active, max) and the netdev with its MTU
    #[command(visible_alias = "link")]
    Ports(PortsArgs),
    /// Show GID tables with RoCE type, netdev and decoded IP address
    Gids(GidsArgs),
    /// Convert between GIDs and IP addresses, offline
    #[command(subcommand, disable_help_subcommand = true)]
    Gid(GidCommand),
    /// Is this GID index usable, and does it route to the peer?
    Check(CheckArgs),
    /// RC ping-pong between two hosts, interoperable with ibv_rc_pingpong
    Pingpong(PingpongArgs),
    /// Loopback test inside one process, one line per verbs step
    Selftest(SelftestArgs),
    /// Check that this host's RDMA stack is sane
    Doctor(DoctorArgs),
    /// Port counters (counters/ and hw_counters/) grouped by what they indicate;
    /// --interval for wrap-aware deltas and rates
    Counters(CountersArgs),
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
    /// Only this device
    #[arg(short = 'd', long = "ib-dev", value_name = "DEV")]
    pub device: Option<String>,
    /// Every attribute, as `ibv_devinfo -v` prints it
    #[arg(short = 'v', long)]
    pub verbose: bool,
}

/// Which ports a listing command shows: `DEV[/PORT]`, or `-d DEV` and `-i PORT`.
#[derive(Debug, Args)]
pub struct PortSelection {
    /// DEV or DEV/PORT
    #[arg(value_name = "DEV[/PORT]")]
    pub target: Option<DevPort>,
    /// Only this device (same as the positional DEV)
    #[arg(
        short = 'd',
        long = "ib-dev",
        value_name = "DEV",
        conflicts_with = "target"
    )]
    pub device: Option<String>,
    /// Only this port
    #[arg(short = 'i', long = "ib-port", value_name = "PORT")]
    pub port: Option<u32>,
}

#[derive(Debug, Args)]
pub struct PortsArgs {
    #[command(flatten)]
    pub select: PortSelection,
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
    /// Device (default: the only one, or the first)
    #[arg(short = 'd', long = "ib-dev", value_name = "DEV")]
    pub device: Option<String>,
    /// Port
    #[arg(
        short = 'i',
        long = "ib-port",
        value_name = "PORT",
        default_value_t = 1
    )]
    pub port: u32,
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
    /// RDMA WRITE and READ one at a time, for their latency (as ib_write_lat and
    /// ib_read_lat); without it they keep a window in flight and report bandwidth
    #[arg(long)]
    pub lat: bool,
    /// Sleep on the completion channel instead of busy-polling (ibv_rc_pingpong -e)
    #[arg(short = 'e', long)]
    pub events: bool,
    /// Service level of the path (0-15; on RoCE the driver maps it to a priority)
    #[arg(short = 'l', long, value_name = "SL", value_parser = clap::value_parser!(u8).range(0..=15))]
    pub sl: Option<u8>,
    /// Traffic class of the GRH: on RoCE v2 the IP DSCP (upper 6 bits) and ECN (lower 2)
    #[arg(long, value_name = "TCLASS")]
    pub tclass: Option<u8>,
    /// P_Key index of the QP, into the port's P_Key table [default: 0]
    #[arg(long = "pkey-index", value_name = "N")]
    pub pkey_index: Option<u16>,
    /// Path MTU (256, 512, 1024, 2048, 4096); default: the smaller active MTU of the two ports
    /// (a server without -m takes the client's)
    #[arg(short = 'm', long, value_name = "MTU")]
    pub mtu: Option<u32>,
    /// Operations to run [default: all; send against a stock ibv_rc_pingpong; a server
    /// without --op takes the client's]
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
    /// Port
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
    /// Message size in bytes
    #[arg(short = 's', long, value_name = "BYTES", default_value_t = 4096)]
    pub size: u32,
    /// Give up on any step after this many seconds
    #[arg(long, value_name = "SECS", default_value_t = 5.0)]
    pub timeout: f64,
    /// Connect through the RDMA connection manager
    #[arg(long)]
    pub cm: bool,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Only this device
    #[arg(short = 'd', long = "ib-dev", value_name = "DEV")]
    pub device: Option<String>,
}

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

/// `--interval`: a positive number of seconds, at least 10 ms (a shorter one only measures
/// the kernel's counter cache).
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

#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// Directory that receives man/ and completions/
    #[arg(value_name = "DIR", default_value = ".")]
    pub dir: PathBuf,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
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
