//! The only module with FFI and `unsafe`: libibverbs (and librdmacm) through sideway and
//! rdma-mummy-sys, which dlopen the libraries at run time, so rdmactl starts and explains
//! itself on a host without them.
#![allow(unsafe_code)]
pub mod qp;
