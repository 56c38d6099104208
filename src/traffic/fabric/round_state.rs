//! A round's book-keeping: each pair's slot (its two ends' results, or why it did not
//! run), which pairs are still pending, and when a pair is done.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::fabric::PairEnd;

#[derive(Default, Clone)]
pub(super) struct PairSlot {
    pub(super) round: u32,
    pub(super) server: Option<PairEnd>,
    pub(super) client: Option<PairEnd>,
    pub(super) not_run: Option<String>,
}

impl PairSlot {
    pub(super) fn merged(&self) -> std::result::Result<PairEnd, String> {
        match (&self.client, &self.server) {
            (Some(c), _) => Ok(c.clone()),
            (None, Some(s)) => Ok(s.clone()),
            (None, None) => Err(self
                .not_run
                .clone()
                .unwrap_or_else(|| "no result from either end".into())),
        }
    }
}

pub(super) struct RoundState {
    pub(super) number: u32,
    pub(super) pending: BTreeSet<(u32, u32)>,
    pub(super) slots: BTreeMap<(u32, u32), PairSlot>,
    /// Servers that listen, and on which port.
    pub(super) ready: Vec<((u32, u32), u16)>,
    pub(super) connected: BTreeSet<(u32, u32)>,
    /// Pairs with a result since the last `settle`: only they can have become done (a
    /// round of 2048 pairs is not walked again for each of its 6000 messages).
    pub(super) touched: Vec<(u32, u32)>,
    /// Pairs no longer pending since the round's loop last looked.
    pub(super) left: Vec<(u32, u32)>,
}

impl RoundState {
    pub(super) fn new(number: u32, pairs: &[(u32, u32)]) -> RoundState {
        RoundState {
            number,
            pending: pairs.iter().copied().collect(),
            slots: pairs
                .iter()
                .map(|p| {
                    (
                        *p,
                        PairSlot {
                            round: number,
                            ..PairSlot::default()
                        },
                    )
                })
                .collect(),
            ready: Vec::new(),
            connected: BTreeSet::new(),
            touched: Vec::new(),
            left: Vec::new(),
        }
    }

    fn finish(&mut self, p: (u32, u32)) {
        if self.pending.remove(&p) {
            self.left.push(p);
        }
    }

    /// One end's result for a pending pair.
    pub(super) fn result(&mut self, p: (u32, u32), client: bool, end: PairEnd) {
        if let Some(slot) = self.slots.get_mut(&p) {
            if client {
                slot.client = Some(end);
            } else {
                slot.server = Some(end);
            }
            self.touched.push(p);
        }
    }

    pub(super) fn fail_pair(&mut self, p: (u32, u32), why: &str) {
        if let Some(slot) = self.slots.get_mut(&p) {
            slot.not_run.get_or_insert_with(|| why.to_string());
        }
        self.finish(p);
    }

    /// The client end will not report: what the server says stands alone.
    pub(super) fn client_lost(&mut self, p: (u32, u32), why: &str) {
        if let Some(slot) = self.slots.get_mut(&p) {
            slot.not_run.get_or_insert_with(|| why.to_string());
            slot.client
                .get_or_insert_with(|| PairEnd::problem(why, 0.0));
        }
    }

    /// A signal stopped the run: every pair still pending or waiting is not run, whatever
    /// one end already said (its partner's test was cut short by the same signal).
    pub(super) fn interrupt(&mut self, waiting: impl Iterator<Item = (u32, u32)>, why: &str) {
        for p in self.pending.clone().into_iter().chain(waiting) {
            if let Some(slot) = self.slots.get_mut(&p) {
                slot.server = None;
                slot.client = None;
                slot.not_run = Some(why.to_string());
            }
            self.finish(p);
        }
    }

    pub(super) fn rank_gone(&mut self, rank: u32, why: &str) {
        for p in self.pending.clone() {
            if p.0 == rank || p.1 == rank {
                self.fail_pair(p, why);
            }
        }
    }

    /// A pair is done when both ends reported, or the server reported without ever
    /// asking for its client (it failed before listening).
    pub(super) fn settle(&mut self) {
        for p in std::mem::take(&mut self.touched) {
            let Some(s) = self.slots.get(&p) else {
                continue;
            };
            let done = (s.client.is_some() && s.server.is_some())
                || (s.server.is_some() && !self.connected.contains(&p));
            if done {
                self.finish(p);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_settles_when_both_ends_report_or_the_server_failed_alone() {
        let mut r = RoundState::new(1, &[(0, 1), (2, 3), (4, 5)]);
        r.connected = BTreeSet::from([(0, 1), (2, 3)]);
        r.result((0, 1), false, PairEnd::default());
        r.result((0, 1), true, PairEnd::default());
        r.result((2, 3), false, PairEnd::default());
        r.result((4, 5), false, PairEnd::problem("no listen", 0.0));
        r.settle();
        assert_eq!(r.pending, BTreeSet::from([(2, 3)]));
        r.rank_gone(3, "rank 3 left");
        assert!(r.pending.is_empty());
        // Every pair that left is said once, for the round's loop.
        let mut left = r.left.clone();
        left.sort_unstable();
        assert_eq!(left, vec![(0, 1), (2, 3), (4, 5)]);
        assert_eq!(r.slots[&(2, 3)].merged().unwrap(), PairEnd::default());
    }

    /// A signal stops the round: what one end of a running pair said no longer counts
    /// (its partner was cut short by the same signal), and the waiting pairs are not run.
    #[test]
    fn an_interrupted_round_leaves_its_unfinished_pairs_not_run() {
        let mut r = RoundState::new(1, &[(0, 1), (2, 3), (4, 5)]);
        r.pending.remove(&(4, 5));
        r.connected = BTreeSet::from([(0, 1)]);
        r.result((0, 1), false, PairEnd::problem("peer gone", 1.0));
        let why = "not run: the run was interrupted by SIGINT on rank 0";
        r.interrupt([(4, 5)].into_iter(), why);
        assert!(r.pending.is_empty());
        for p in [(0, 1), (2, 3), (4, 5)] {
            assert_eq!(r.slots[&p].merged(), Err(why.to_string()), "{p:?}");
        }
    }
}
