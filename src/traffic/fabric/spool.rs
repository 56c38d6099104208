//! Rank 0's pair results on disk. 4096 ranks make 8.4 M pairs, a few GiB as the report's
//! rows; rank 0 keeps only aggregates in memory (each endpoint's best figures, counts, the
//! bad pairs) and reads the results back from here to judge them, write the CSV and list
//! what the report lists. One JSON line per finished pair test, in the order they finished;
//! a retest's line comes after the first run's. The file is removed as soon as it is open:
//! nothing is left behind, whatever ends the run.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, BufWriter, Seek, SeekFrom, Write};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::diagnose::fabric::PairInput;
use crate::error::{Error, Result};
use crate::model::fabric::PairEnd;

/// One pair test as it finished: its ends' merged result, or why it did not run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct Record {
    pub(super) a: u32,
    pub(super) b: u32,
    pub(super) round: u32,
    /// A retest of a pair that was bad the first time.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(super) retest: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) end: Option<PairEnd>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) not_run: Option<String>,
}

impl Record {
    pub(super) fn input(&self) -> PairInput {
        let end = match (&self.end, &self.not_run) {
            (Some(e), _) => Ok(e.clone()),
            (None, Some(why)) => Err(why.clone()),
            (None, None) => Err("no result from either end".into()),
        };
        let resends_per_mille = self.end.as_ref().and_then(|e| e.resends_per_mille);
        PairInput {
            a: self.a,
            b: self.b,
            end,
            resends_per_mille,
        }
    }
}

pub(super) struct Spool {
    path: PathBuf,
    writer: BufWriter<File>,
    reader: File,
    pub(super) records: u64,
}

impl Spool {
    /// A new, already removed, file under the temporary directory ($TMPDIR).
    pub(super) fn new() -> Result<Spool> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let path = std::env::temp_dir().join(format!(
            "rdmactl-fabric-{}-{nanos}.pairs",
            std::process::id()
        ));
        let io = |e| Error::Io {
            path: path.clone(),
            source: e,
        };
        let out = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(io)?;
        let reader = File::open(&path).map_err(io)?;
        std::fs::remove_file(&path).map_err(io)?;
        Ok(Spool {
            path,
            writer: BufWriter::with_capacity(1 << 16, out),
            reader,
            records: 0,
        })
    }

    fn io(&self, e: std::io::Error) -> Error {
        Error::Io {
            path: self.path.clone(),
            source: e,
        }
    }

    pub(super) fn push(&mut self, rec: &Record) -> Result<()> {
        serde_json::to_writer(&mut self.writer, rec)
            .map_err(std::io::Error::from)
            .and_then(|()| self.writer.write_all(b"\n"))
            .map_err(|e| self.io(e))?;
        self.records += 1;
        Ok(())
    }

    /// Every record so far, in the order written.
    pub(super) fn each(&mut self, mut f: impl FnMut(Record)) -> Result<()> {
        self.writer.flush().map_err(|e| self.io(e))?;
        self.reader
            .seek(SeekFrom::Start(0))
            .map_err(|e| self.io(e))?;
        let mut lines = BufReader::with_capacity(1 << 16, &self.reader);
        let mut line = String::new();
        loop {
            line.clear();
            if lines.read_line(&mut line).map_err(|e| self.io(e))? == 0 {
                return Ok(());
            }
            let rec: Record = serde_json::from_str(&line).map_err(|e| {
                self.io(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("a pair record this run wrote does not read back: {e}"),
                ))
            })?;
            f(rec);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_read_back_in_order_as_often_as_asked() {
        let mut s = Spool::new().unwrap();
        let one = Record {
            a: 0,
            b: 1,
            round: 1,
            retest: false,
            end: Some(PairEnd {
                ok: true,
                usec_per_iter: Some(10.5),
                ..PairEnd::default()
            }),
            not_run: None,
        };
        let two = Record {
            a: 2,
            b: 3,
            round: 4,
            retest: true,
            end: None,
            not_run: Some("rank 3 left, \"bye\"\nnext".into()),
        };
        s.push(&one).unwrap();
        s.push(&two).unwrap();
        for _ in 0..2 {
            let mut got = Vec::new();
            s.each(|r| got.push(r)).unwrap();
            assert_eq!(got, vec![one.clone(), two.clone()]);
        }
        assert_eq!(s.records, 2);
        assert_eq!(two.input().end, Err("rank 3 left, \"bye\"\nnext".into()));
        // Removed at once: nothing is left in the temporary directory.
        assert!(!s.path.exists());
        // Written after a read, read again with the rest.
        s.push(&one).unwrap();
        let mut n = 0;
        s.each(|_| n += 1).unwrap();
        assert_eq!(n, 3);
    }
}
