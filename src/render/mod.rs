//! Renderers: model in, String out, no I/O. Tables go through `table::render`; JSON
//! through serde (`output::json`) on the model or on the small row types defined here.

pub mod catalogue;
pub mod check;
pub mod counters;
pub mod devinfo;
pub mod diagnostic;
pub mod doctor;
pub mod expect;
pub mod exporter;
pub mod exposition;
pub mod fabric;
pub mod gid;
pub mod gid_choice;
pub mod health;
pub mod inventory;
pub mod metrics;
pub mod pingpong;
pub mod qos;
pub mod res;
pub mod selftest;
pub mod subnet;
pub mod table;
pub mod triage;
pub mod wait;
