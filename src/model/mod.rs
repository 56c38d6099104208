//! Plain data: what the gatherers fill and the rules and renderers read. Nothing here does
//! I/O, and nothing here imports a module above it.

pub mod catalogue;
pub mod codes;
pub mod container;
pub mod counter;
pub mod device;
pub mod devinfo;
pub mod diagnostic;
pub mod doctor;
pub mod errno;
pub mod expect;
pub mod exporter;
pub mod fabric;
pub mod facts;
pub mod failure;
pub mod gid;
pub mod joblog;
pub mod mad;
pub mod netfilter;
pub mod pci;
pub mod qos;
pub mod res;
pub mod results;
pub mod rounding;
pub mod topology;
