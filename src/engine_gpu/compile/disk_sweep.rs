//! The sweep of stale temporary files in the kernel disk cache's folder (see
//! `super::disk_cache`'s module docs, "Stale temporary files").

use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, SystemTime};

/// A temporary file not modified for this long is removed, whoever wrote it (see the module
/// docs).
pub const STALE_TMP_AGE: Duration = Duration::from_secs(60 * 60);
/// A temporary file of a process that no longer exists is removed once not modified for
/// this long (see the module docs).
pub const DEAD_WRITER_GRACE: Duration = Duration::from_secs(60);

/// Sweeps `dir` once per process (the first lookup or store there; later ones return at
/// once).
pub(super) fn sweep_once(dir: &Path) {
    static SWEPT: OnceLock<Mutex<Vec<PathBuf>>> = OnceLock::new();
    let mut swept = SWEPT
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if !swept.iter().any(|d| d == dir) {
        swept.push(dir.to_owned());
        // Under the lock, so that two threads do not sweep one folder at once.
        sweep_temps(dir, SystemTime::now(), process_exists);
    }
}

/// The pid in a temporary file's name `.<32 hex digits>.<pid>.<n>.tmp`, or `None` for any
/// other name.
fn parse_temp_name(name: &OsStr) -> Option<u32> {
    let rest = name.to_str()?.strip_prefix('.')?.strip_suffix(".tmp")?;
    let mut parts = rest.split('.');
    let (key, pid, n) = (parts.next()?, parts.next()?, parts.next()?);
    let digits = |s: &str, hex: bool| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (hex && matches!(b, b'a'..=b'f')))
    };
    let well_formed = parts.next().is_none()
        && key.len() == 32
        && digits(key, true)
        && digits(pid, false)
        && digits(n, false);
    well_formed.then(|| pid.parse().ok()).flatten()
}

/// Whether process `pid` exists: `Some` on Linux with `/proc` mounted, else `None` (unknown).
pub(super) fn process_exists(pid: u32) -> Option<bool> {
    if cfg!(target_os = "linux") && Path::new("/proc/self").exists() {
        Some(Path::new("/proc").join(pid.to_string()).exists())
    } else {
        None
    }
}

/// Removes the stale temporary files in `dir` as of `now` (see the module docs), asking
/// `exists` whether a writer's process is alive; returns how many it removed.
pub(super) fn sweep_temps(
    dir: &Path,
    now: SystemTime,
    exists: impl Fn(u32) -> Option<bool>,
) -> usize {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    let own = std::process::id();
    let mut removed = 0;
    for entry in entries.flatten() {
        let Some(pid) = parse_temp_name(&entry.file_name()) else {
            continue;
        };
        // `DirEntry::metadata` does not follow symlinks.
        let Ok(meta) = entry.metadata() else {
            continue;
        };
        if !meta.file_type().is_file() {
            continue;
        }
        // A modification time in the future (clock skew) counts as fresh.
        let idle = meta
            .modified()
            .ok()
            .and_then(|m| now.duration_since(m).ok())
            .unwrap_or(Duration::ZERO);
        let dead = pid != own && exists(pid) == Some(false);
        let stale = idle >= STALE_TMP_AGE || (dead && idle >= DEAD_WRITER_GRACE);
        if stale && fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}
