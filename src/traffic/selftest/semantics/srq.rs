//! A shared receive queue serving two QPs.

use std::collections::BTreeMap;

use super::{send, SIGNALED};
use crate::gather::verbs::qp::{Qp, Srq};
use crate::traffic::selftest::{pattern, StepResult, Tester};

impl Tester {
    /// One shared receive queue on the second end serves two QPs: receives posted once,
    /// consumed by SENDs arriving on either.
    pub(super) fn srq(&mut self) -> StepResult {
        const PER_QP: usize = 2;
        let ctx = self.ends[1].ctx.clone().expect("opened");
        if ctx.caps()?.max_srq == 0 {
            return Ok(format!("not supported by {} (max_srq 0)", ctx.name()));
        }
        let mut cqs = [self.new_cq(0, 32, false)?, self.new_cq(1, 32, false)?];
        let mrs = [self.new_mr(0)?, self.new_mr(1)?];
        let srq = Srq::create(self.ends[1].pd.as_ref().expect("pd"), 2 * PER_QP as u32)?;
        let mut pairs: Vec<[Qp; 2]> = Vec::new();
        for _ in 0..2 {
            let pd0 = self.ends[0].pd.as_ref().expect("pd");
            let pd1 = self.ends[1].pd.as_ref().expect("pd");
            let a = Qp::create_configured(pd0, &self.config(0, &cqs[0], &cqs[0]))?.0;
            let mut cfg = self.config(1, &cqs[1], &cqs[1]);
            cfg.srq = Some(&srq);
            let b = Qp::create_configured(pd1, &cfg)?.0;
            self.connect(&a, &b)?;
            pairs.push([a, b]);
        }
        let len = 32u32;
        for slot in 0..2 * PER_QP {
            srq.post_recv(&mrs[1], slot * len as usize, len, slot as u64)?;
        }
        let mut sent = Vec::new();
        for (q, pair) in pairs.iter().enumerate() {
            for m in 0..PER_QP {
                let at = (q * PER_QP + m) * len as usize;
                let data = pattern(&format!("srq qp {q} message {m}"), len as usize);
                mrs[0].write(at, &data);
                pair[0].post(&mrs[0], &send(at as u64, at, len, SIGNALED))?;
                sent.push((pair[1].qpn(), data));
            }
        }
        for _ in 0..sent.len() {
            self.next_ok(0, &mut cqs[0], &pairs[0][0])?;
        }
        let mut per_qp: BTreeMap<u32, usize> = BTreeMap::new();
        for _ in 0..sent.len() {
            let wc = self.next_ok(1, &mut cqs[1], &pairs[0][1])?;
            let got = mrs[1].read(wc.wc.wr_id as usize * len as usize, len as usize);
            let Some(k) = sent
                .iter()
                .position(|(qpn, d)| *qpn == wc.qp_num && *d == got)
            else {
                return Err(self.invalid(
                    1,
                    format!(
                        "SRQ receive {} on QPN 0x{:06x}: not a message sent to that QP",
                        wc.wc.wr_id, wc.qp_num
                    ),
                ));
            };
            sent.remove(k);
            *per_qp.entry(wc.qp_num).or_default() += 1;
        }
        drop(pairs);
        self.messages += (2 * PER_QP) as u64;
        Ok(format!(
            "{} receives posted once on one SRQ; {}: each message checked",
            2 * PER_QP,
            per_qp
                .iter()
                .map(|(qpn, n)| format!("{n} SENDs on QPN 0x{qpn:06x}"))
                .collect::<Vec<_>>()
                .join(", ")
        ))
    }
}
