//! Renderers: model in, String out, no I/O. Tables go through `table::render`; JSON
//! through serde (`output::json`) on the model or on the small row types defined here.

pub mod counters;
pub mod explanation;
pub mod fabric;
pub mod findings;
pub mod gid;
pub mod inventory;
pub mod pingpong;
pub mod selftest;
pub mod subnet;
pub mod table;
