//! `triage`'s input: the job logs named on the command line (or standard input), streamed
//! line by line through `model::joblog`'s parser in bounded memory: a line is read into one
//! reused buffer (at most `MAX_LINE` bytes kept, the rest of a longer line skipped), and the
//! parser keeps only what `LogDigest` bounds. A file that is not text (a NUL byte, or mostly
//! invalid UTF-8, in its first 64 KiB) or cannot be read is an error naming the path and
//! the errno.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use crate::error::Error;
use crate::model::errno::errno_text;
use crate::model::joblog::{LogDigest, LogParser, Progress};

/// Bytes of one line kept; a longer line is cut (the rest is read and dropped).
pub const MAX_LINE: usize = 64 * 1024;
/// How much of a file is looked at to tell text from binary.
const SNIFF: u64 = 64 * 1024;

/// Lines between two looks at the clock (a look costs more than a line under emulation).
const PROGRESS_STRIDE: u64 = 1 << 16;

/// Who hears a long read's progress, and how often.
pub type ProgressSink<'a> = (&'a mut dyn FnMut(&Progress), std::time::Duration);

/// Read every input into one digest: `-` is standard input. Inputs are read in order, each
/// with its own line numbers. `progress`, when given, hears how far the read is every
/// `every` of wall time (nothing for a read shorter than that).
pub fn read_logs(paths: &[String], mut progress: Option<ProgressSink>) -> Result<LogDigest, Error> {
    let mut digest = LogDigest::default();
    for (index, path) in paths.iter().enumerate() {
        let watch = progress.as_mut().map(|(f, every)| Watch {
            tell: &mut **f,
            every: *every,
            last: std::time::Instant::now(),
        });
        if path == "-" {
            let stdin = std::io::stdin();
            read_one(
                stdin.lock(),
                "standard input",
                None,
                index,
                &mut digest,
                watch,
            )?;
        } else {
            let file = File::open(Path::new(path)).map_err(|e| unreadable(path, &e))?;
            let size = file
                .metadata()
                .ok()
                .filter(|m| m.is_file())
                .map(|m| m.len());
            read_one(
                BufReader::with_capacity(256 * 1024, file),
                path,
                size,
                index,
                &mut digest,
                watch,
            )?;
        }
    }
    Ok(digest)
}

/// Who hears a long read's progress, and when it last did.
pub struct Watch<'f> {
    tell: &'f mut dyn FnMut(&Progress),
    every: std::time::Duration,
    last: std::time::Instant,
}

/// Stream one input into the digest.
pub fn read_one<R: BufRead>(
    mut input: R,
    name: &str,
    size: Option<u64>,
    file: usize,
    digest: &mut LogDigest,
    mut watch: Option<Watch>,
) -> Result<(), Error> {
    let mut parser = LogParser::for_file(file);
    digest.start_file(file);
    let mut buf: Vec<u8> = Vec::with_capacity(1024);
    let mut offset: u64 = 0;
    let (mut sniffed_lines, mut bad_lines) = (0u32, 0u32);
    let mut line_no: u64 = 0;
    loop {
        buf.clear();
        let read = read_line(&mut input, &mut buf).map_err(|e| unreadable(name, &e))?;
        if read == 0 {
            break;
        }
        line_no += 1;
        if offset < SNIFF {
            if let Some(at) = buf.iter().position(|b| *b == 0) {
                return Err(binary(name, offset + at as u64, "a NUL byte"));
            }
            sniffed_lines += 1;
            if std::str::from_utf8(&buf).is_err() {
                bad_lines += 1;
            }
        }
        offset += read as u64;
        if offset >= SNIFF && sniffed_lines > 0 && bad_lines * 2 > sniffed_lines {
            return Err(binary(name, 0, "mostly invalid UTF-8"));
        }
        let text = String::from_utf8_lossy(&buf);
        let (kind, done) = parser.feed(line_no, text.trim_end_matches(['\n', '\r']));
        // The released event first: a line after it (perftest's banner, which a buffered
        // stdout prints after stderr's error) may add to it.
        if let Some(e) = done {
            digest.add(e);
        }
        digest.count(&kind);
        if let Some(w) = watch.as_mut().filter(|_| line_no % PROGRESS_STRIDE == 0) {
            if w.last.elapsed() >= w.every {
                (w.tell)(&Progress {
                    name,
                    bytes: offset,
                    size,
                    lines: digest.lines,
                    understood: digest.understood,
                });
                w.last = std::time::Instant::now();
            }
        }
    }
    if offset < SNIFF && sniffed_lines >= 4 && bad_lines * 2 > sniffed_lines {
        return Err(binary(name, 0, "mostly invalid UTF-8"));
    }
    if let Some(e) = parser.finish() {
        digest.add(e);
    }
    Ok(())
}

/// One line into `buf` (its newline included), keeping at most `MAX_LINE` bytes; returns
/// the bytes consumed from the input (0 at the end).
fn read_line<R: BufRead>(input: &mut R, buf: &mut Vec<u8>) -> std::io::Result<usize> {
    let mut consumed = 0;
    loop {
        let chunk = match input.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            return Ok(consumed);
        }
        let (take, done) = match chunk.iter().position(|b| *b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        let room = MAX_LINE.saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..take.min(room)]);
        input.consume(take);
        consumed += take;
        if done {
            return Ok(consumed);
        }
    }
}

fn unreadable(name: &str, e: &std::io::Error) -> Error {
    let what = match e.raw_os_error() {
        Some(errno) => errno_text(errno),
        None => e.to_string(),
    };
    Error::Usage(format!(
        "cannot read {name}: {what}; give a job's log file, or - for standard input"
    ))
}

fn binary(name: &str, offset: u64, what: &str) -> Error {
    let at = if offset > 0 {
        format!(" at byte {offset}")
    } else {
        String::new()
    };
    Error::Usage(format!(
        "{name} is not a text log ({what}{at}): a binary or compressed file; decompress it \
         first (zcat {name} | rdmactl triage)"
    ))
}

/// Drain a reader to its end (tests).
#[cfg(test)]
fn digest_of(bytes: &[u8]) -> Result<LogDigest, Error> {
    let mut d = LogDigest::default();
    read_one(bytes, "log", None, 0, &mut d, None)?;
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nul_bytes_are_refused_with_the_offset() {
        let err = digest_of(b"hello\nwor\0ld\n").unwrap_err().to_string();
        assert!(
            err.contains("log is not a text log (a NUL byte at byte 9)"),
            "{err}"
        );
    }

    #[test]
    fn invalid_utf8_majority_is_refused() {
        let err = digest_of(b"\xff\xfe\n\xff\n\xfe\xfe\nok\n\xff\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("mostly invalid UTF-8"), "{err}");
        // One bad line among good ones is read.
        let d = digest_of(b"a\nb\n\xff\nc\nFailed status 12: wr_id 0 syndrom 0x81\n").unwrap();
        assert_eq!(d.lines, 5);
        assert_eq!(d.events.len(), 1);
    }

    #[test]
    fn long_lines_are_cut_not_buffered_whole() {
        let mut big = vec![b'x'; MAX_LINE * 3];
        big.extend_from_slice(b"\nFailed status 12: wr_id 0 syndrom 0x81");
        let d = digest_of(&big).unwrap();
        assert_eq!(d.lines, 2);
        assert_eq!(d.events[0].line, 2);
    }

    /// Random bytes, newlines among them, never panic the reader: they are read, or refused
    /// as binary.
    #[test]
    fn random_bytes_never_panic() {
        let mut state: u64 = 0x2545_f491_4f6c_dd1d;
        for round in 0..300 {
            let mut bytes = Vec::new();
            for _ in 0..(round * 37 % 4000) {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let b = (state >> 24) as u8;
                bytes.push(if round % 2 == 0 && b < 0x20 { b'\n' } else { b });
            }
            let _ = digest_of(&bytes);
        }
    }

    #[test]
    fn a_missing_file_names_its_errno() {
        let err = read_logs(&["/nonexistent/job.log".into()], None)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "cannot read /nonexistent/job.log: ENOENT (2, No such file or directory); give a \
             job's log file, or - for standard input"
        );
    }

    /// A long read tells how far it is: bytes that only grow, within the file's size, and
    /// the lines read so far; the line it makes names the file and the share read.
    #[test]
    fn a_long_read_tells_its_progress() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.log");
        let line = "0: step 120 loss 2.31\n";
        std::fs::write(&path, line.repeat(3 * PROGRESS_STRIDE as usize)).unwrap();
        let size = std::fs::metadata(&path).unwrap().len();
        let mut seen: Vec<(u64, Option<u64>, u64)> = Vec::new();
        let mut tell = |p: &Progress| seen.push((p.bytes, p.size, p.lines));
        let name = path.to_string_lossy().into_owned();
        let d = read_logs(
            std::slice::from_ref(&name),
            Some((&mut tell, std::time::Duration::ZERO)),
        )
        .unwrap();
        assert_eq!(d.lines, 3 * PROGRESS_STRIDE);
        assert_eq!(seen.len(), 3, "{seen:?}");
        assert!(
            seen.windows(2).all(|w| w[0].0 < w[1].0 && w[0].2 < w[1].2),
            "{seen:?}"
        );
        assert!(
            seen.iter().all(|s| s.1 == Some(size) && s.0 <= size),
            "{seen:?}"
        );
        let text = crate::render::triage::progress(&Progress {
            name: &name,
            bytes: size / 2,
            size: Some(size),
            lines: 100_000,
            understood: 0,
        });
        assert!(
            text.starts_with(&format!("triage: {name}: 0.0 GiB of 0.0 GiB (50%)")),
            "{text}"
        );
        assert!(text.ends_with("0.1 M lines read, 0 understood"), "{text}");
    }
}
