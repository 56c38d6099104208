//! The basic walk on the two QPs just connected: one message of each kind.

use super::{pattern, Tester};
use crate::gather::verbs::qp::{SendOp, Wc};

const ATOMIC_OLD: u64 = 0x0123_4567_89ab_cdef;
const ATOMIC_NEW: u64 = 0xfeed_face_cafe_beef;

impl Tester {
    /// The classic walk on the two QPs just connected: one message of each kind.
    pub(super) fn run_basic(&mut self) {
        let size = self.size;
        self.step("post recv", |t| {
            let b = &t.ends[1];
            let (qp, mr) = (b.qp.as_ref().expect("qp"), b.mr.as_ref().expect("mr"));
            qp.post_recv(mr, size as usize, size, 1)?;
            qp.post_recv(mr, size as usize, size, 2)?;
            Ok("2 receives on the second QP".into())
        });
        self.step("send", |t| {
            let data = pattern("send", size as usize);
            t.mr(0).write(0, &data);
            t.mr(1).fill(size as usize, size as usize, 0);
            t.qp(0).post_send(
                t.mr(0),
                SendOp::Send {
                    offset: 0,
                    len: size,
                },
                10,
            )?;
            t.wait(0, 10)?;
            let wc = t.wait(1, 1)?;
            if wc.byte_len != size {
                return Err(t.invalid(1, format!("received {} bytes, sent {size}", wc.byte_len)));
            }
            t.check(1, size as usize, &data, "SEND")?;
            Ok(format!("{size} bytes received and checked"))
        });
        self.step("rdma write", |t| {
            let data = pattern("write", size as usize);
            t.mr(0).write(0, &data);
            t.mr(1).fill(size as usize, size as usize, 0);
            let (addr, rkey) = (t.mr(1).addr() + u64::from(size), t.mr(1).rkey());
            t.qp(0).post_send(
                t.mr(0),
                SendOp::Write {
                    offset: 0,
                    len: size,
                    remote_addr: addr,
                    rkey,
                },
                11,
            )?;
            t.wait(0, 11)?;
            t.check(1, size as usize, &data, "RDMA WRITE")?;
            Ok(format!("{size} bytes written and checked"))
        });
        self.step("rdma read", |t| {
            let data = pattern("read", size as usize);
            t.mr(1).write(size as usize, &data);
            t.mr(0).fill(0, size as usize, 0);
            let (addr, rkey) = (t.mr(1).addr() + u64::from(size), t.mr(1).rkey());
            t.qp(0).post_send(
                t.mr(0),
                SendOp::Read {
                    offset: 0,
                    len: size,
                    remote_addr: addr,
                    rkey,
                },
                12,
            )?;
            t.wait(0, 12)?;
            t.check(0, 0, &data, "RDMA READ")?;
            Ok(format!("{size} bytes read and checked"))
        });
        self.step("atomic cas", |t| {
            if let Some(why) = t.without_atomics()? {
                return Ok(why);
            }
            // The remote word sits at the page-aligned start of the second MR.
            t.mr(1).write(0, &ATOMIC_OLD.to_ne_bytes());
            t.mr(0).fill(0, 8, 0);
            let (addr, rkey) = (t.mr(1).addr(), t.mr(1).rkey());
            let op = SendOp::CompareSwap {
                offset: 0,
                remote_addr: addr,
                rkey,
                compare: ATOMIC_OLD,
                swap: ATOMIC_NEW,
            };
            t.qp(0).post_send(t.mr(0), op, 13)?;
            t.wait(0, 13)?;
            let old = u64::from_ne_bytes(t.mr(0).read(0, 8).try_into().expect("8 bytes"));
            let now = u64::from_ne_bytes(t.mr(1).read(0, 8).try_into().expect("8 bytes"));
            if old != ATOMIC_OLD || now != ATOMIC_NEW {
                return Err(t.invalid(
                    0,
                    format!("compare-and-swap returned 0x{old:016x} and left 0x{now:016x}"),
                ));
            }
            Ok(format!("0x{ATOMIC_OLD:016x} -> 0x{ATOMIC_NEW:016x}"))
        });
        self.step("zero-byte send", |t| {
            t.qp(0)
                .post_send(t.mr(0), SendOp::Send { offset: 0, len: 0 }, 14)?;
            t.wait(0, 14)?;
            let wc = t.wait(1, 2)?;
            if wc.byte_len != 0 {
                return Err(t.invalid(
                    1,
                    format!("a zero-byte SEND arrived as {} bytes", wc.byte_len),
                ));
            }
            Ok("completed with 0 bytes".into())
        });
        self.step("poll", |t| {
            for i in 0..2 {
                let mut wc = [Wc::default(); 4];
                let n = t.ends[i].cq.as_mut().expect("cq").poll(&mut wc)?;
                if n > 0 {
                    return Err(t.invalid(
                        i,
                        format!("{n} unexpected completion(s), first wr_id {}", wc[0].wr_id),
                    ));
                }
            }
            Ok("both CQs empty".into())
        });
        self.messages += 5;
    }
}
