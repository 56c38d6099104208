//! One module per subcommand, each only orchestrating: gather → diagnose → render → print
//! → exit code. No command module imports another.

pub mod check;
pub mod counters;
pub mod devices;
pub mod doctor;
pub mod explain;
pub mod exporter;
pub mod fabric;
pub mod gid;
pub mod gids;
pub mod pingpong;
pub mod ports;
pub mod qos;
pub mod res;
pub mod selftest;
pub mod subnet;
pub mod triage;
pub mod wait;
