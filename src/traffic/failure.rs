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
