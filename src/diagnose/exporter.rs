//! Which of doctor's rules the exporter runs. The exporter is a long-running service in its
//! own sandbox (a throwaway user, an 8 MiB memlock limit, a device cgroup, maybe a
//! container): a rule that judges the process running it would export a judgement of that
//! sandbox, not of what the host's jobs get, and fail or warn on every healthy node that
//! runs the shipped unit. Those rules stay out of exporter mode; `rdmactl doctor` run as
//! the jobs run (`srun`, the job's container) is where they belong. The exporter still
//! exports its own limit as a plain series (`rdmactl_memlock_limit_bytes`).

use crate::model::codes::{self, Code};
use crate::model::diagnostic::Diagnostic;
use crate::model::doctor::DoctorFacts;

/// The codes that judge the process that runs the rules, not the host: its memlock limit
/// and CAP_IPC_LOCK (`memlock`, `job-memlock`), the device nodes it can open
/// (`device-nodes`, `uverbs`: a device cgroup allows what the unit lists), and the
/// container it runs in (`container`, `sys-read-only`, `nccl-conf`).
pub fn process_scoped() -> [Code; 7] {
    [
        codes::MEMLOCK,
        codes::JOB_MEMLOCK,
        codes::DEVICE_NODES,
        codes::UVERBS,
        codes::CONTAINER,
        codes::SYS_READ_ONLY,
        codes::NCCL_CONF,
    ]
}

/// doctor's findings on one scrape's facts, the process-scoped ones left out.
pub fn findings(facts: &DoctorFacts) -> Vec<Diagnostic> {
    let out = process_scoped();
    crate::diagnose::doctor::findings(facts)
        .into_iter()
        .filter(|d| !out.contains(&d.code))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::diagnostic::Severity;
    use crate::model::doctor::{HostFacts, HostNet, NodeAccess, ProviderFiles};

    /// Under the shipped unit (8 MiB memlock, no CAP_IPC_LOCK) doctor warns about the
    /// exporter's own limit; the exporter's findings do not, and keep the port's.
    #[test]
    fn the_exporter_does_not_judge_its_own_sandbox() {
        let ctx = crate::ctx::Ctx::fixture("port-down");
        let mut facts = crate::gather::doctor::gather(&ctx, None).unwrap();
        let devices = facts.devices.len();
        facts.host = Some(HostFacts {
            node_access: vec![
                NodeAccess::Usable {
                    path: "/dev/infiniband/uverbs0".into()
                };
                devices
            ],
            library: Ok(()),
            verbs_devices: Some(Ok(facts.devices.iter().map(|d| d.name.clone()).collect())),
            provider_files: vec![ProviderFiles::default(); devices],
            memlock_soft: Some(Some(8 << 20)),
            cap_ipc_lock: Some(false),
            root: false,
            net: HostNet {
                in_init_netns: Some(true),
                ..HostNet::default()
            },
            roce_netdevs: Vec::new(),
        });
        facts.capture = None;
        let judged = |list: &[Diagnostic], code: &Code| {
            list.iter()
                .any(|d| &d.code == code && d.severity != Severity::Ok)
        };
        let doctor = crate::diagnose::doctor::findings(&facts);
        assert!(judged(&doctor, &codes::MEMLOCK), "{doctor:#?}");
        let exported = findings(&facts);
        assert!(
            exported.iter().all(|d| !process_scoped().contains(&d.code)),
            "{exported:#?}"
        );
        assert!(judged(&exported, &codes::PORT_STATE), "{exported:#?}");
    }
}
