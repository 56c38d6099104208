//! Renderers: data in, String out, no I/O.
