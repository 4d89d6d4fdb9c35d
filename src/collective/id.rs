//! [`UniqueId`]: the token NCCL's ranks meet through, and the two ways to pass it between
//! processes: as hexadecimal text (an environment variable) and as a file written
//! atomically by rank 0 and polled by the others.
//!
//! The id lets whoever holds it join the communicator (and so read or write every rank's
//! buffers through its collectives), so the file is private: written mode `0600` (a new
//! temporary file, never an existing one or a symlink, then renamed into place), and read
//! only if it is a regular file owned by this process's effective user with no group or
//! other permission bits ([`NcclError::UntrustedIdFile`] otherwise), so another local user
//! can neither read it nor plant one first.

use std::fmt;
use std::io::{Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use super::nccl;
use crate::error::NcclError;
use crate::fs_trust::{self, PrivateError};

/// NCCL's unique id (`ncclUniqueId`, 128 bytes): made once by rank 0 ([`UniqueId::new`]),
/// given to every rank, and passed to
/// [`Communicator::init_rank`](super::Communicator::init_rank). It holds the address of the
/// bootstrap listener that [`UniqueId::new`] starts in rank 0's process, which is how NCCL
/// finds its ranks across processes and hosts. The listener serves one communicator's
/// creation: make a new id for each communicator.
///
/// ```
/// use typestate_tensor::collective::UniqueId;
///
/// let id = UniqueId::from_bytes([7; 128]);
/// let text = id.to_hex(); // 256 hexadecimal digits, for an environment variable
/// assert_eq!(UniqueId::from_hex(&text)?, id);
/// assert!(UniqueId::from_hex("12ab").is_err()); // too short: a typed error
/// # Ok::<(), typestate_tensor::error::NcclError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct UniqueId([u8; 128]);

impl UniqueId {
    /// A new id from NCCL (`ncclGetUniqueId`), for rank 0 to hand to the others. Starts
    /// NCCL's bootstrap listener in this process.
    ///
    /// Errors: [`NcclError::NoLibrary`] without libnccl, [`NcclError::Call`] if NCCL fails
    /// (no usable network interface, for instance).
    pub fn new() -> Result<UniqueId, NcclError> {
        nccl::unique_id().map(UniqueId)
    }

    /// An id from its bytes (as [`as_bytes`](Self::as_bytes) gives them).
    pub fn from_bytes(bytes: [u8; 128]) -> UniqueId {
        UniqueId(bytes)
    }

    /// The id's bytes.
    pub fn as_bytes(&self) -> &[u8; 128] {
        &self.0
    }

    /// The id as 256 lowercase hexadecimal digits.
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// An id from 256 hexadecimal digits (surrounding whitespace ignored), as
    /// [`to_hex`](Self::to_hex) writes it.
    pub fn from_hex(text: &str) -> Result<UniqueId, NcclError> {
        Self::parse("hex text", text)
    }

    pub(crate) fn parse(source: &str, text: &str) -> Result<UniqueId, NcclError> {
        let bad = |reason: String| NcclError::BadId {
            source_name: source.to_owned(),
            reason,
        };
        let text = text.trim();
        if text.len() != 256 {
            return Err(bad(format!("{} characters", text.len())));
        }
        let digits = text.as_bytes();
        let mut out = [0u8; 128];
        for (i, byte) in out.iter_mut().enumerate() {
            let pair = &digits[2 * i..2 * i + 2];
            let hex = std::str::from_utf8(pair)
                .ok()
                .and_then(|p| u8::from_str_radix(p, 16).ok());
            *byte = hex.ok_or_else(|| {
                bad(format!(
                    "{:?} at offset {} is not a hexadecimal byte",
                    String::from_utf8_lossy(pair),
                    2 * i
                ))
            })?;
        }
        Ok(UniqueId(out))
    }

    /// Writes the id to `path` as hexadecimal text, atomically and privately: to a new
    /// temporary file in the same folder created with mode `0600` (never an existing file
    /// or a symlink), then renamed over `path`, so a rank polling `path` sees either no file
    /// or the whole id, never a part, and no other user can read it.
    pub fn write_file(&self, path: &Path) -> Result<(), NcclError> {
        let shown = path.display().to_string();
        let io = |op: &'static str| {
            let path = shown.clone();
            move |e: std::io::Error| NcclError::IdFile {
                op,
                path,
                message: e.to_string(),
            }
        };
        let name = path.file_name().ok_or_else(|| NcclError::IdFile {
            op: "writing the NCCL unique id to",
            path: shown.clone(),
            message: "the path names no file".to_owned(),
        })?;
        // A fresh name: a stale or planted file is never reused.
        let mut created = None;
        for attempt in 0..16u32 {
            let mut tmp_name = name.to_os_string();
            tmp_name.push(format!(".tmp.{}.{attempt}", std::process::id()));
            let tmp = path.with_file_name(tmp_name);
            match fs_trust::create_private_file(&tmp) {
                Ok(file) => {
                    created = Some((tmp, file));
                    break;
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(io("writing the NCCL unique id to")(e)),
            }
        }
        let Some((tmp, mut file)) = created else {
            return Err(NcclError::IdFile {
                op: "writing the NCCL unique id to",
                path: shown,
                message: "16 temporary names beside it are taken".to_owned(),
            });
        };
        let written = file
            .write_all(self.to_hex().as_bytes())
            .and_then(|()| file.sync_all());
        drop(file);
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(io("writing the NCCL unique id to")(e));
        }
        std::fs::rename(&tmp, path).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            io("renaming the NCCL unique id into")(e)
        })
    }

    /// Reads an id written by [`write_file`](Self::write_file): refused with
    /// [`NcclError::UntrustedIdFile`] unless `path` is a regular file owned by this
    /// process's effective user with no group or other permission bits.
    pub fn read_file(path: &Path) -> Result<UniqueId, NcclError> {
        let shown = path.display().to_string();
        let io = |e: std::io::Error| NcclError::IdFile {
            op: "reading the NCCL unique id from",
            path: shown.clone(),
            message: e.to_string(),
        };
        let mut file = fs_trust::open_private_file(path).map_err(|e| match e {
            PrivateError::Io(e) => io(e),
            PrivateError::NotPrivate(reason) => NcclError::UntrustedIdFile {
                path: shown.clone(),
                reason: reason.to_string(),
            },
        })?;
        let mut text = String::new();
        file.read_to_string(&mut text).map_err(io)?;
        Self::parse(&shown, &text)
    }

    /// Polls `path` until rank 0 has written it (every 10 ms, then up to every 100 ms),
    /// then reads it; [`NcclError::IdTimeout`] after `timeout`.
    pub fn wait_for_file(path: &Path, timeout: Duration) -> Result<UniqueId, NcclError> {
        let start = Instant::now();
        let mut pause = Duration::from_millis(10);
        loop {
            if path.exists() {
                return Self::read_file(path);
            }
            let waited = start.elapsed();
            if waited >= timeout {
                return Err(NcclError::IdTimeout {
                    path: path.display().to_string(),
                    waited_ms: u64::try_from(waited.as_millis()).unwrap_or(u64::MAX),
                });
            }
            std::thread::sleep(pause.min(timeout - waited));
            pause = (pause * 2).min(Duration::from_millis(100));
        }
    }
}

impl fmt::Debug for UniqueId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hex = self.to_hex();
        write!(f, "UniqueId({}...)", &hex[..16])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips_every_byte_value() {
        let mut bytes = [0u8; 128];
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = (i * 2 + 1) as u8 ^ 0xa5;
        }
        let id = UniqueId::from_bytes(bytes);
        let hex = id.to_hex();
        assert_eq!(hex.len(), 256);
        assert_eq!(UniqueId::from_hex(&format!("  {hex}\n")).unwrap(), id);
        assert_eq!(UniqueId::from_hex(&hex.to_uppercase()).unwrap(), id);
    }

    #[test]
    fn bad_hex_names_the_offset() {
        let mut hex = "0".repeat(256);
        hex.replace_range(40..42, "g1");
        match UniqueId::from_hex(&hex) {
            Err(NcclError::BadId { reason, .. }) => {
                assert!(reason.contains("offset 40"), "{reason}")
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            UniqueId::from_hex("abc"),
            Err(NcclError::BadId { .. })
        ));
    }

    #[cfg(unix)]
    mod files {
        use super::*;
        use crate::fs_trust::tests::TempDir;
        use std::os::unix::fs::{MetadataExt, PermissionsExt};

        fn sample() -> UniqueId {
            UniqueId::from_bytes(std::array::from_fn(|i| i as u8))
        }

        #[test]
        fn the_id_file_is_written_0600_and_reads_back() {
            let dir = TempDir::new("nccl-id");
            let path = dir.0.join("run.id");
            sample().write_file(&path).unwrap();
            let meta = std::fs::metadata(&path).unwrap();
            assert_eq!(meta.mode() & 0o777, 0o600);
            assert_eq!(meta.uid(), fs_trust::effective_uid().unwrap());
            assert_eq!(UniqueId::read_file(&path).unwrap(), sample());
            // Written again over an old file: still 0600, no temporary file left behind.
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
            sample().write_file(&path).unwrap();
            assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
            assert_eq!(std::fs::read_dir(&dir.0).unwrap().count(), 1);
        }

        #[test]
        fn an_id_file_readable_by_others_is_refused() {
            let dir = TempDir::new("nccl-id-open");
            let path = dir.0.join("run.id");
            std::fs::write(&path, sample().to_hex()).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
            match UniqueId::read_file(&path) {
                Err(NcclError::UntrustedIdFile { path: p, reason }) => {
                    assert_eq!(p, path.display().to_string());
                    assert!(reason.contains("mode 644"), "{reason}");
                }
                other => panic!("{other:?}"),
            }
            assert!(matches!(
                UniqueId::wait_for_file(&path, Duration::from_millis(1)),
                Err(NcclError::UntrustedIdFile { .. })
            ));
        }

        #[test]
        fn an_id_file_of_another_user_is_refused() {
            if fs_trust::effective_uid() != Some(0) {
                println!("skipped: chown to another uid needs root");
                return;
            }
            let dir = TempDir::new("nccl-id-foreign");
            let path = dir.0.join("run.id");
            sample().write_file(&path).unwrap();
            std::os::unix::fs::chown(&path, Some(12345), None).unwrap();
            match UniqueId::read_file(&path) {
                Err(NcclError::UntrustedIdFile { reason, .. }) => {
                    assert!(reason.contains("owned by uid 12345"), "{reason}");
                    assert!(reason.contains("(uid 0)"), "{reason}");
                }
                other => panic!("{other:?}"),
            }
        }
    }
}
