//! One module per subcommand: gather → model → diagnose → render.

pub mod check;
pub mod check_kernel;
pub mod devices;
pub mod devinfo;
pub mod doctor;
pub mod failure;
pub mod gid;
pub mod gids;
pub mod pingpong;
pub mod pingpong_cm;
pub mod ports;
pub mod results;
pub mod selftest;
