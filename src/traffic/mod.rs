//! Engines that move real traffic, driven by several commands.

pub mod meter;
