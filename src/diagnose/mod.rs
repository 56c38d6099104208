//! Diagnosis: pure rules from gathered facts to findings and explanations. Nothing here does
//! I/O or calls into the system; callers gather the facts (`facts::Facts`) and the failure
//! (`failure::Failure`), and render what comes back.

pub mod check;
pub mod cm;
pub mod counters;
pub mod datapath;
pub mod device_node;
pub mod doctor;
pub mod env;
pub mod expect;
pub mod exporter;
pub mod fabric;
pub mod firewall;
pub mod gid_auto;
pub mod gidselect;
pub mod gpu_path;
pub mod kernel_choice;
pub mod link_local;
pub mod midrun;
pub mod mtu_mismatch;
pub mod pin;
pub mod port_state;
pub mod qos;
pub mod removal;
pub mod res;
pub mod route;
pub mod same_answer;
pub mod same_host;
pub mod setup;

use crate::model::diagnostic::Diagnostic;
use crate::model::facts::Facts;
use crate::model::failure::Failure;

/// Explain any failure: connection-manager stages go to the CM rules, everything else to
/// the data-path rules (which also explain a failed completion on a CM connection).
pub fn explain(failure: &Failure, facts: &Facts) -> Diagnostic {
    if failure.step.is_cm() {
        cm::explain(failure, facts)
    } else {
        datapath::explain(failure, facts)
    }
}
pub mod subnet;
pub mod triage;
pub mod wait;
