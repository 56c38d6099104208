//! `doctor --state FILE`: the previous run's counter record read back. A file that is not
//! there is a first run; one that cannot be read or parsed is said (path and errno, or the
//! parse error) and a new baseline is recorded, never an error that stops the check.

use std::path::Path;

use crate::model::counter::CounterRecord;
use crate::model::doctor::CounterState;
use crate::model::errno::errno_text;

/// Where the health-check formats keep their counter state by default, one file per format
/// (`doctor-nagios.json`, ...) so that Nagios and NHC running on one host do not each take
/// the other's deltas.
pub const STATE_DIR: &str = "/var/lib/rdmactl";

/// The state in `path` as of `now` (seconds since the Unix epoch).
pub fn read_counter_state(path: &Path, now: u64) -> CounterState {
    let shown = path.display().to_string();
    let mut state = CounterState {
        path: shown.clone(),
        now,
        ..CounterState::default()
    };
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return state,
        Err(e) => {
            state.unusable = Some(format!("{shown}: {}", io_error_text(&e)));
            return state;
        }
    };
    match serde_json::from_str::<CounterRecord>(&text) {
        Ok(r) if r.version == CounterRecord::VERSION => state.previous = Some(r),
        Ok(r) => {
            state.unusable = Some(format!(
                "{shown}: format version {} (this rdmactl writes {})",
                r.version,
                CounterRecord::VERSION
            ))
        }
        Err(e) => state.unusable = Some(format!("{shown}: not a counter state file ({e})")),
    }
    state
}

/// `EACCES (13, Permission denied)` for an OS error, else its text.
pub fn io_error_text(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(errno) => errno_text(errno),
        None => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_file_is_a_first_run_and_a_bad_one_is_said() {
        let dir = std::env::temp_dir().join(format!("rdmactl-state-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let missing = read_counter_state(&dir.join("none.json"), 5);
        assert_eq!((missing.previous, missing.unusable), (None, None));
        let bad = dir.join("bad.json");
        std::fs::write(&bad, "{").unwrap();
        let s = read_counter_state(&bad, 5);
        assert!(s.previous.is_none());
        assert!(
            s.unusable
                .as_deref()
                .unwrap()
                .contains("not a counter state file"),
            "{s:?}"
        );
        // A directory where the file should be: EISDIR, by name.
        let s = read_counter_state(&dir, 5);
        assert!(s.unusable.as_deref().unwrap().contains("EISDIR"), "{s:?}");
        let good = dir.join("good.json");
        let record = CounterRecord::of(None, &[], 3);
        std::fs::write(&good, serde_json::to_string(&record).unwrap()).unwrap();
        assert_eq!(read_counter_state(&good, 5).previous, Some(record));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
