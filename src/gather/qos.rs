//! What `qos` reads of each RoCE port: the netdev's DCB configuration (rtnetlink), rdma_cm's
//! configfs defaults, MLNX_OFED's qos/ecn files, the netdev's ethtool statistics and pause
//! setting, and the port's congestion counters; and the job's QoS variables.

use crate::ctx::Ctx;
use crate::model::device::Device;
use crate::model::qos::{JobQosEnv, Probe, QosFacts, QosPort, VendorQos};

/// Every RoCE port of `devices`, read.
pub fn ports(ctx: &Ctx, devices: &[Device]) -> Vec<QosPort> {
    let _ = ctx;
    let mut out = Vec::new();
    for device in devices {
        for port in &device.ports {
            if port.link_layer != Some(crate::model::device::LinkLayer::Ethernet) {
                continue;
            }
            out.push(QosPort {
                device: device.name.clone(),
                port: port.number,
                netdev: port.netdev.as_ref().map(|n| n.name.clone()),
                netdev_mtu: None,
                active_mtu: None,
                dcb: Probe::NotExposed("not read yet".to_string()),
                cm_default: Probe::NotExposed("not read yet".to_string()),
                vendor: VendorQos::default(),
                ethtool: Probe::NotExposed("not read yet".to_string()),
                hw_counters: Vec::new(),
            });
        }
    }
    out
}

/// The job's QoS variables, as `lookup` (the environment) gives them.
pub fn job_env(lookup: &dyn Fn(&str) -> Option<String>) -> JobQosEnv {
    let _ = lookup;
    JobQosEnv::default()
}

/// `qos`'s facts: the ports, `--tclass` and the job's variables.
pub fn gather(ctx: &Ctx, devices: &[Device], tclass_flag: Option<u8>) -> QosFacts {
    QosFacts {
        ports: ports(ctx, devices),
        tclass_flag,
        env: job_env(&|name| std::env::var(name).ok()),
    }
}
