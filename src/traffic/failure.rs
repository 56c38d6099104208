//! A failed run explained, and `-g auto` chosen: the facts from `gather::failure`, the rules
//! from `diagnose`. pingpong and selftest call these before they allocate (`pin_check`),
//! before they connect (`choose_gid`) and when a step fails (`explain_failure`).
//! The record of what a run knows (`Known`) and the peer in a failure's text come along, so
//! an engine names one module for all of it.

use std::net::IpAddr;
use std::path::Path;

use crate::diagnose;
use crate::diagnose::gid_auto;
use crate::gather::failure as facts_of;
use crate::gather::procfs;
use crate::model::diagnostic::FailureReport;
use crate::model::facts::QpFacts;
use crate::model::failure::{Cause, Failure};

pub use crate::diagnose::gid_auto::GidChoice;
pub use crate::gather::failure::{peer_ip_of, Known};

/// A device libibverbs does not list (open failed with ENODEV) that sysfs still lists
/// because the kernel is removing it: that, explained (who holds it; exit 1 as for any
/// device that cannot be used). None when it is not being removed: the caller's
/// not-found or no-RDMA error stands.
pub fn removing_device(sysfs: &Path, name: &str) -> Option<crate::error::Error> {
    let r = crate::gather::removal::pending(sysfs, name)?;
    let failure = Failure::new(
        crate::model::failure::Step::Open,
        Cause::errno(libc::ENODEV),
        crate::model::failure::FailureContext {
            device: name.to_string(),
            ..Default::default()
        },
    );
    Some(crate::error::Error::Explained(Box::new(
        FailureReport::new(&failure, diagnose::removal::explanation(&r)),
    )))
}

/// Gather the facts about `failure` and run the rules: the report pingpong and selftest
/// print (text on stderr, `failure` in `-j`).
pub fn explain_failure(sysfs: &Path, known: &Known, failure: &Failure) -> FailureReport {
    explain_failure_with(sysfs, known, failure, |_| {})
}

/// `explain_failure`, with the QP facts a step knows beyond the run's settings (an inline
/// post's size, the P_Key index it gave).
pub fn explain_failure_with(
    sysfs: &Path,
    known: &Known,
    failure: &Failure,
    add: impl FnOnce(&mut QpFacts),
) -> FailureReport {
    let mut facts = facts_of::facts(sysfs, known, failure);
    // The ARP flux group the GID's netdev belongs to, when the route toward the peer was read.
    if let (Some(route), Some(nd)) = (facts.route.as_mut(), facts.local.netdev.as_deref()) {
        route.arp_flux =
            diagnose::doctor::arp_flux_around(&crate::gather::check::roce_netdevs(sysfs), nd);
    }
    add(facts.qp.get_or_insert_with(QpFacts::default));
    FailureReport::new(failure, diagnose::explain(failure, &facts))
}

/// Before anything is opened: an iWARP device (node type RNIC) connects only through
/// rdma_cm (`gid_auto::iwarp_needs_cm` says why it is refused, not switched). `what` is
/// the command as the user typed it ("pingpong", "selftest").
pub fn refuse_iwarp_without_cm(sysfs: &Path, device: &str, what: &str) -> crate::error::Result<()> {
    let node_type = crate::gather::inventory::node_type(sysfs, device);
    match gid_auto::iwarp_needs_cm(device, node_type.as_ref(), what) {
        Some(why) => Err(crate::error::Error::Usage(why)),
        None => Ok(()),
    }
}

/// Before allocating: a run that would pin more than the memlock limit or the available
/// memory is refused with the numbers (the OOM killer would end it without a word).
pub fn pin_check(pinned: u64, what: String) -> Option<Cause> {
    diagnose::pin::would_pin(
        &facts_of::memlock_facts(pinned),
        procfs::mem_available(),
        what,
    )
}

/// Choose the GID index on `device`/`port` toward `peer` (None: perftest's default, IPv4
/// and not link-local), with the route facts from this host's network namespace.
pub fn choose_gid(
    sysfs: &Path,
    device: &str,
    port: u32,
    peer: Option<IpAddr>,
) -> crate::error::Result<GidChoice> {
    let (table, link_layer, net) = facts_of::auto_gid_facts(sysfs, device, port, peer)?;
    Ok(gid_auto::choose(
        device,
        port,
        peer,
        table,
        &link_layer,
        &net,
    ))
}

/// `-g auto` for a loopback test: perftest's default (IPv4, not link-local) when the port
/// has one; otherwise any valid GID, since both ends are this port's and share its family.
pub fn choose_loopback_gid(
    sysfs: &Path,
    device: &str,
    port: u32,
) -> crate::error::Result<GidChoice> {
    let (table, link_layer, net) = facts_of::auto_gid_facts(sysfs, device, port, None)?;
    let choice = gid_auto::choose(device, port, None, table, &link_layer, &net);
    Ok(gid_auto::loopback_fallback(choice, &link_layer))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(argv: &[&str]) -> crate::cli::Command {
        use clap::Parser;
        crate::cli::Cli::parse_from(argv).command
    }

    /// The iWARP decision on the siw fixture: refused before anything is opened, with the
    /// reason and the flag; a RoCE device passes.
    #[test]
    fn iwarp_without_cm_is_refused_up_front_with_the_reason() {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysfs");
        let e =
            refuse_iwarp_without_cm(&fixtures.join("siw-ens3"), "siw0", "pingpong").unwrap_err();
        let text = e.to_string();
        for want in [
            "siw0 is an iWARP device (node type RNIC, transport iWARP)",
            "connects only through rdma_cm",
            "use `rdmactl pingpong --cm` on both ends",
        ] {
            assert!(text.contains(want), "{want:?} not in {text}");
        }
        assert_eq!(e.exit_code(), crate::exit::USAGE);
        assert!(
            refuse_iwarp_without_cm(&fixtures.join("rxe-veth-basic"), "rxe0", "pingpong").is_ok()
        );
        assert!(refuse_iwarp_without_cm(&fixtures.join("ib-hca"), "mlx5_0", "selftest").is_ok());

        // The engines ask before any QP: the usage error is the whole answer.
        let ctx = crate::ctx::Ctx::fixture("siw-ens3");
        let crate::cli::Command::Pingpong(args) =
            command(&["rdmactl", "pingpong", "-d", "siw0", "192.0.2.1"])
        else {
            unreachable!()
        };
        let mut shown = 0;
        let e = crate::traffic::pingpong::run(&ctx, &args, &mut |_| {
            shown += 1;
            Ok(())
        })
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("iWARP connects only through rdma_cm"),
            "{e}"
        );
        assert_eq!(shown, 0, "no report: nothing was opened");
        let crate::cli::Command::Selftest(args) = command(&["rdmactl", "selftest", "-d", "siw0"])
        else {
            unreachable!()
        };
        let e = crate::traffic::selftest::run(&ctx, &args).unwrap_err();
        let text = e.to_string();
        assert!(text.contains("use `rdmactl selftest --cm`"), "{text}");
        assert!(!text.contains("both ends"), "a loopback has one: {text}");
    }

    #[test]
    fn auto_on_the_rxe_fixture_picks_the_ipv4_gid_and_says_why() {
        let sysfs =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysfs/rxe-veth-basic");
        let choice = choose_gid(&sysfs, "rxe0", 1, None).unwrap();
        assert_eq!(choice.selection.chosen, Some(1));
        let text = choice.render();
        assert!(
            text.contains("chose GID index 1 (RoCE v2, ::ffff:192.168.77.1 on veth0)"),
            "{text}"
        );
        assert!(
            text.contains("index 0 rejected: it is link-local IPv6"),
            "{text}"
        );
        let json = serde_json::to_value(&choice).unwrap();
        assert_eq!(json["chosen"], 1);
        assert_eq!(json["reasons"][0]["verdict"], "rejected");
    }
}
