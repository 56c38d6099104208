//! Where this process sits in a `fabric` run, from the launcher's environment (Slurm,
//! Open MPI, PMIx, PMI) and the command line, and where rank 0 is by default. The
//! environment comes in as a lookup function, so the tests give their own.

use crate::model::fabric::{Given, Launcher, Placement};

/// The launcher's variables as this process has them.
pub fn launcher_env(key: &str) -> Option<String> {
    std::env::var(key).ok()
}

/// Reads the rank, size and local rank the way each launcher sets them; the first launcher
/// whose rank and size are both present wins. `--rank`/`--size` override all of them.
pub fn placement(given: &Given, env: &dyn Fn(&str) -> Option<String>) -> Result<Placement, String> {
    let num = |key: &str| -> Result<Option<u32>, String> {
        match env(key) {
            None => Ok(None),
            Some(v) => v
                .trim()
                .parse::<u32>()
                .map(Some)
                .map_err(|_| format!("{key}={v:?} is not a number")),
        }
    };
    // (launcher, rank, size, local rank, job id variables)
    type Keys = (
        Launcher,
        &'static str,
        &'static str,
        &'static [&'static str],
        &'static [&'static str],
    );
    let launchers: [Keys; 4] = [
        (
            Launcher::Slurm,
            "SLURM_PROCID",
            "SLURM_NTASKS",
            &["SLURM_LOCALID"],
            &["SLURM_JOB_ID", "SLURM_JOBID"],
        ),
        (
            Launcher::OpenMpi,
            "OMPI_COMM_WORLD_RANK",
            "OMPI_COMM_WORLD_SIZE",
            &["OMPI_COMM_WORLD_LOCAL_RANK"],
            &["OMPI_MCA_ess_base_jobid", "OMPI_MCA_orte_ess_jobid"],
        ),
        (
            Launcher::Pmix,
            "PMIX_RANK",
            "PMIX_SIZE",
            &["PMIX_LOCAL_RANK"],
            &["PMIX_NAMESPACE"],
        ),
        (
            Launcher::Pmi,
            "PMI_RANK",
            "PMI_SIZE",
            &["MPI_LOCALRANKID", "PMI_LOCAL_RANK"],
            &["PMI_JOBID"],
        ),
    ];
    let mut found = None;
    for (launcher, rank_key, size_key, local_keys, job_keys) in launchers {
        if let (Some(rank), Some(size)) = (num(rank_key)?, num(size_key)?) {
            let mut local = None;
            for k in local_keys {
                if let Some(v) = num(k)? {
                    local = Some(v);
                    break;
                }
            }
            let job_id = job_keys.iter().find_map(|k| env(k));
            found = Some((launcher, rank, size, local, job_id));
            break;
        }
    }
    let (launcher, rank, size, local, job_id) = match (found, given.rank, given.size) {
        (_, Some(rank), Some(size)) => (Launcher::Explicit, rank, size, None, None),
        (Some((l, r, s, lr, j)), rank, size) => (l, rank.unwrap_or(r), size.unwrap_or(s), lr, j),
        (None, Some(_), None) => return Err("--rank needs --size".into()),
        (None, None, Some(_)) => return Err("--size needs --rank".into()),
        (None, None, None) => {
            return Err(
                "no launcher placed this process: run it under srun or mpirun, or give --rank N --size N (pdsh: --rank %n)"
                    .into(),
            )
        }
    };
    if size < 2 {
        return Err(format!("size {size}: a fabric test needs at least 2 ranks"));
    }
    if rank >= size {
        return Err(format!("rank {rank} is not below size {size}"));
    }
    Ok(Placement {
        rank,
        size,
        local_rank: given.local_rank.or(local).unwrap_or(0),
        launcher,
        job_id,
    })
}

/// The default rendezvous: `MASTER_ADDR`/`MASTER_PORT` (as torch and NCCL tests set them),
/// else the first host of the Slurm node list on `default_port`.
pub fn default_rendezvous(
    env: &dyn Fn(&str) -> Option<String>,
    default_port: u16,
) -> Option<(String, u16)> {
    if let Some(addr) = env("MASTER_ADDR").filter(|a| !a.is_empty()) {
        let port = env("MASTER_PORT")
            .and_then(|p| p.trim().parse().ok())
            .unwrap_or(default_port);
        return Some((addr, port));
    }
    let list = env("SLURM_JOB_NODELIST").or_else(|| env("SLURM_NODELIST"))?;
    first_host(&list).map(|h| (h, default_port))
}

/// The first host of a Slurm host list: `c[07-09,12],d1` → `c07`.
pub fn first_host(list: &str) -> Option<String> {
    let list = list.trim();
    let end = list.find([',', '[']).unwrap_or(list.len());
    let prefix = &list[..end];
    if list[end..].starts_with('[') {
        let inner = &list[end + 1..];
        let first = inner.split([',', '-', ']']).next()?;
        if first.is_empty() || !first.chars().all(|c| c.is_ascii_digit()) {
            return None;
        }
        let close = inner.find(']')?;
        // A suffix after the bracket (`c[1-2]-ib`) belongs to every host.
        let suffix: String = inner[close + 1..]
            .chars()
            .take_while(|c| *c != ',')
            .collect();
        return Some(format!("{prefix}{first}{suffix}"));
    }
    (!prefix.is_empty()).then(|| prefix.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k: &str| map.get(k).cloned()
    }

    #[test]
    fn slurm_environment() {
        let env = env_of(&[
            ("SLURM_PROCID", "5"),
            ("SLURM_NTASKS", "16"),
            ("SLURM_LOCALID", "1"),
            ("SLURM_JOB_ID", "4242"),
            ("SLURM_JOB_NODELIST", "c[07-09,12],d1"),
        ]);
        let p = placement(&Given::default(), &env).unwrap();
        assert_eq!((p.rank, p.size, p.local_rank), (5, 16, 1));
        assert_eq!(p.launcher, Launcher::Slurm);
        assert_eq!(p.job_id.as_deref(), Some("4242"));
        assert_eq!(
            default_rendezvous(&env, 18514),
            Some(("c07".to_string(), 18514))
        );
    }

    #[test]
    fn open_mpi_and_pmi_environments() {
        let ompi = env_of(&[
            ("OMPI_COMM_WORLD_RANK", "3"),
            ("OMPI_COMM_WORLD_SIZE", "4"),
            ("OMPI_COMM_WORLD_LOCAL_RANK", "3"),
            ("OMPI_MCA_ess_base_jobid", "123456"),
        ]);
        let p = placement(&Given::default(), &ompi).unwrap();
        assert_eq!(
            (p.rank, p.size, p.local_rank, p.launcher),
            (3, 4, 3, Launcher::OpenMpi)
        );
        let pmi = env_of(&[
            ("PMI_RANK", "1"),
            ("PMI_SIZE", "2"),
            ("MPI_LOCALRANKID", "0"),
        ]);
        let p = placement(&Given::default(), &pmi).unwrap();
        assert_eq!((p.rank, p.size, p.launcher), (1, 2, Launcher::Pmi));
        let pmix = env_of(&[
            ("PMIX_RANK", "0"),
            ("PMIX_SIZE", "8"),
            ("PMIX_NAMESPACE", "ns1"),
        ]);
        let p = placement(&Given::default(), &pmix).unwrap();
        assert_eq!(
            (p.rank, p.launcher, p.job_id.as_deref()),
            (0, Launcher::Pmix, Some("ns1"))
        );
    }

    #[test]
    fn explicit_flags_win_and_are_checked() {
        let env = env_of(&[("SLURM_PROCID", "5"), ("SLURM_NTASKS", "16")]);
        let given = Given {
            rank: Some(1),
            size: Some(3),
            local_rank: Some(2),
        };
        let p = placement(&given, &env).unwrap();
        assert_eq!(
            (p.rank, p.size, p.local_rank, p.launcher),
            (1, 3, 2, Launcher::Explicit)
        );
        let none = env_of(&[]);
        let err = placement(&Given::default(), &none).unwrap_err();
        assert!(err.contains("--rank N --size N"), "{err}");
        let bad = Given {
            rank: Some(3),
            size: Some(3),
            local_rank: None,
        };
        assert!(placement(&bad, &none).unwrap_err().contains("not below"));
        let one = Given {
            rank: Some(0),
            size: Some(1),
            local_rank: None,
        };
        assert!(placement(&one, &none).unwrap_err().contains("at least 2"));
        let garbage = env_of(&[("SLURM_PROCID", "x"), ("SLURM_NTASKS", "2")]);
        assert!(placement(&Given::default(), &garbage)
            .unwrap_err()
            .contains("SLURM_PROCID"));
    }

    #[test]
    fn master_addr_wins_and_host_lists_parse() {
        let env = env_of(&[
            ("MASTER_ADDR", "head"),
            ("MASTER_PORT", "29500"),
            ("SLURM_JOB_NODELIST", "c1"),
        ]);
        assert_eq!(default_rendezvous(&env, 1), Some(("head".into(), 29500)));
        assert_eq!(first_host("node001"), Some("node001".into()));
        assert_eq!(first_host("a,b"), Some("a".into()));
        assert_eq!(first_host("gpu[003-010]-ib"), Some("gpu003-ib".into()));
        assert_eq!(first_host("x[]"), None);
        assert_eq!(first_host(""), None);
        assert_eq!(default_rendezvous(&env_of(&[]), 1), None);
    }
}
