//! Atomics: fetch-and-add, then compare-and-swap on the sum.

use super::{PairSpec, SIGNALED};
use crate::gather::verbs::qp::{Mr, Opcode, WorkRequest};
use crate::model::failure::Failure;
use crate::traffic::selftest::{StepResult, Tester};

impl Tester {
    /// Names the device without atomics, if one of the two has none.
    pub(in crate::traffic::selftest) fn without_atomics(&self) -> Result<Option<String>, Failure> {
        for i in 0..2 {
            let ctx = self.ends[i].ctx.as_ref().expect("opened");
            if !ctx.caps()?.has_atomics() {
                return Ok(Some(format!(
                    "not supported by {} (atomic_cap IBV_ATOMIC_NONE)",
                    ctx.name()
                )));
            }
        }
        Ok(None)
    }

    /// Fetch-and-add returns the old word and adds; compare-and-swap on the sum then
    /// replaces it.
    pub(super) fn fetch_add(&mut self) -> StepResult {
        if let Some(why) = self.without_atomics()? {
            return Ok(why);
        }
        const START: u64 = 0x0000_0001_0000_0000;
        const ADD: u64 = 0x0000_0000_0000_0042;
        const SWAP: u64 = 0x5555_aaaa_5555_aaaa;
        let mut p = self.pair(PairSpec::default())?;
        p.mrs[1].write(0, &START.to_ne_bytes());
        let (addr, rkey) = (p.mrs[1].addr(), p.mrs[1].rkey());
        let word =
            |mr: &Mr, at: usize| u64::from_ne_bytes(mr.read(at, 8).try_into().expect("8 bytes"));
        let atomic = |wr_id, op| WorkRequest {
            wr_id,
            op,
            flags: SIGNALED,
            offset: 8 * wr_id as usize,
            len: 8,
        };
        let fa = Opcode::FetchAdd {
            remote_addr: addr,
            rkey,
            add: ADD,
        };
        p.qps[0].post(&p.mrs[0], &atomic(1, fa))?;
        self.next_ok(0, &mut p.cqs[0], &p.qps[0])?;
        let (old, now) = (word(&p.mrs[0], 8), word(&p.mrs[1], 0));
        if old != START || now != START + ADD {
            return Err(self.broken(
                0,
                format!(
                    "fetch-and-add of 0x{ADD:x} on 0x{START:016x} returned 0x{old:016x} and left 0x{now:016x}"
                ),
            ));
        }
        let cas = Opcode::CompareSwap {
            remote_addr: addr,
            rkey,
            compare: START + ADD,
            swap: SWAP,
        };
        p.qps[0].post(&p.mrs[0], &atomic(2, cas))?;
        self.next_ok(0, &mut p.cqs[0], &p.qps[0])?;
        let (old, now) = (word(&p.mrs[0], 16), word(&p.mrs[1], 0));
        if old != START + ADD || now != SWAP {
            return Err(self.broken(
                0,
                format!(
                    "compare-and-swap after fetch-and-add returned 0x{old:016x} and left 0x{now:016x}"
                ),
            ));
        }
        self.messages += 2;
        Ok(format!(
            "0x{START:016x} + 0x{ADD:x} returned the old word; compare-and-swap on the sum -> 0x{SWAP:016x}"
        ))
    }
}
