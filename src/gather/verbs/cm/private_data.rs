//! The private data layout: where the peer may RDMA READ/WRITE, carried in the connect
//! request and the accept.

use serde::Serialize;

/// Where the peer may RDMA READ/WRITE: carried in the CM private data of the connect
/// request (client) and of the accept (server).
///
/// Layout, 24 bytes, all integers big-endian: magic "RDCT" (4), version (1), flags (1),
/// reserved (2), buffer address (8), rkey (4), length (4). IB CM pads private data with
/// zeros (up to 56 bytes in a REQ after the CMA header), so only the prefix is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RemoteBuffer {
    pub addr: u64,
    pub rkey: u32,
    pub len: u32,
}

pub const PRIVATE_DATA_MAGIC: [u8; 4] = *b"RDCT";

pub const PRIVATE_DATA_VERSION: u8 = 1;

pub const PRIVATE_DATA_LEN: usize = 24;

/// The flags byte (offset 5) of a probe: a client whose run stalled asks the server what it
/// sees, saying what it sees itself, in a connect request of its own; the server answers in
/// the reject. Both go as CM messages (small MADs), which get through where the stalled
/// QP's packets do not (a netdev MTU cut below the path MTU), and need no working QP.
pub const PROBE_FLAG: u8 = b'?';

/// The most text a probe carries: a REQ's 56 bytes of private data after the prefix.
pub const PROBE_TEXT_LEN: usize = 50;

/// A probe's private data: magic, version, the flag, then the text.
pub fn encode_probe(text: &str) -> Vec<u8> {
    let mut out = PRIVATE_DATA_MAGIC.to_vec();
    out.push(PRIVATE_DATA_VERSION);
    out.push(PROBE_FLAG);
    out.extend(text.bytes().take(PROBE_TEXT_LEN));
    out
}

/// The text of a probe; None for any other private data (a client's buffer, a stock tool's).
pub fn probe_text(data: &[u8]) -> Option<String> {
    if data.len() < 6 || data[0..4] != PRIVATE_DATA_MAGIC || data[5] != PROBE_FLAG {
        return None;
    }
    let text = String::from_utf8_lossy(&data[6..]);
    Some(text.trim_end_matches('\0').to_string())
}

impl RemoteBuffer {
    pub fn encode(&self) -> [u8; PRIVATE_DATA_LEN] {
        let mut out = [0u8; PRIVATE_DATA_LEN];
        out[0..4].copy_from_slice(&PRIVATE_DATA_MAGIC);
        out[4] = PRIVATE_DATA_VERSION;
        out[8..16].copy_from_slice(&self.addr.to_be_bytes());
        out[16..20].copy_from_slice(&self.rkey.to_be_bytes());
        out[20..24].copy_from_slice(&self.len.to_be_bytes());
        out
    }

    pub fn decode(data: &[u8]) -> Result<RemoteBuffer, String> {
        if data.len() < PRIVATE_DATA_LEN {
            return Err(format!(
                "the peer sent {} bytes of CM private data; rdmactl --cm needs {PRIVATE_DATA_LEN}",
                data.len()
            ));
        }
        if data[0..4] != PRIVATE_DATA_MAGIC {
            return Err(format!(
                "the peer's CM private data starts with {:02x?}, not rdmactl's \"RDCT\"",
                &data[0..4]
            ));
        }
        if data[4] != PRIVATE_DATA_VERSION {
            return Err(format!(
                "the peer speaks rdmactl CM private data version {}, this rdmactl speaks {PRIVATE_DATA_VERSION}",
                data[4]
            ));
        }
        let be32 =
            |r: std::ops::Range<usize>| u32::from_be_bytes(data[r].try_into().unwrap_or_default());
        let addr = u64::from_be_bytes(data[8..16].try_into().unwrap_or_default());
        Ok(RemoteBuffer {
            addr,
            rkey: be32(16..20),
            len: be32(20..24),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_data_round_trip_and_rejects() {
        let b = RemoteBuffer {
            addr: 0x0102_0304_0506_0708,
            rkey: 0xdead_beef,
            len: 4096,
        };
        let wire = b.encode();
        assert_eq!(&wire[0..5], b"RDCT\x01");
        assert_eq!(&wire[8..16], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(RemoteBuffer::decode(&wire), Ok(b));
        // IB CM pads private data with zeros: a longer buffer still decodes.
        let mut padded = wire.to_vec();
        padded.resize(56, 0);
        assert_eq!(RemoteBuffer::decode(&padded), Ok(b));
        let cases: &[(&[u8], &str)] = &[
            (&[], "0 bytes"),
            (&wire[..10], "10 bytes"),
            (&[0u8; 24], "not rdmactl"),
        ];
        for (data, want) in cases {
            let got = RemoteBuffer::decode(data).unwrap_err();
            assert!(got.contains(want), "{got}");
        }
        // A probe is not a buffer, and a buffer is not a probe.
        let probe = encode_probe("st=4 mtu=512 path=1024 gid=1");
        assert!(probe.len() <= 56);
        assert_eq!(
            probe_text(&probe).as_deref(),
            Some("st=4 mtu=512 path=1024 gid=1")
        );
        let mut padded_probe = probe.clone();
        padded_probe.resize(56, 0);
        assert_eq!(
            probe_text(&padded_probe).as_deref(),
            Some("st=4 mtu=512 path=1024 gid=1")
        );
        assert_eq!(probe_text(&wire), None);
        assert_eq!(probe_text(&[0u8; 24]), None);
        let mut v2 = wire;
        v2[4] = 2;
        assert!(RemoteBuffer::decode(&v2).unwrap_err().contains("version 2"));
    }
}
