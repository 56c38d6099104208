//! Everything that reads the system: sysfs, libibverbs and librdmacm, rtnetlink, umad.
//! Gatherers return facts (the `model`'s types); they hold no rules and no prose.

pub mod baseline;
pub mod check;
pub mod container;
pub mod deadline;
pub mod devinfo;
pub mod devnode;
pub mod discover;
pub mod doctor;
pub mod endpoint;
pub mod expect;
pub mod exporter;
pub mod failure;
pub mod inventory;
pub mod joblog;
pub mod net;
pub mod pci;
pub mod placement;
pub mod procfs;
pub mod qos;
pub mod removal;
pub mod res;
pub mod state;
pub mod sysfs;
pub mod verbs;
pub mod wait;
