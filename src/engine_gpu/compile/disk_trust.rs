//! Trust in the kernel disk cache's files (see `super::disk_cache`'s module docs): the
//! reasons a folder or file is not trusted, and the checked reads and private creations.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Why a cache folder or file is not trusted (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Distrust {
    /// The effective user id could not be found (no file could be created to learn it).
    UnknownUser,
    /// A folder that is not a directory, or an entry that is not a regular file (a symlink,
    /// a FIFO, ...).
    NotPlain,
    /// Owned by another user.
    ForeignOwner {
        /// The owner's uid.
        owner: u32,
        /// This process's effective uid.
        euid: u32,
    },
    /// Writable by the group or by others.
    Writable {
        /// The permission bits.
        mode: u32,
    },
    /// The file opened is not the file checked (replaced in between).
    Replaced,
    /// This platform has no permission check here.
    Unsupported,
}

impl std::fmt::Display for Distrust {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Distrust::UnknownUser => write!(f, "the effective user id could not be determined"),
            Distrust::NotPlain => write!(f, "not a plain directory or regular file (a symlink?)"),
            Distrust::ForeignOwner { owner, euid } => {
                write!(f, "owned by uid {owner}, not by this user (uid {euid})")
            }
            Distrust::Writable { mode } => {
                write!(
                    f,
                    "writable by group or others (mode {mode:o}); chmod go-w it"
                )
            }
            Distrust::Replaced => write!(f, "replaced between its check and its use"),
            Distrust::Unsupported => write!(f, "no permission check on this platform"),
        }
    }
}

/// Why the disk cache was bypassed: the path that failed its check, and the reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bypass {
    /// The folder that failed.
    pub path: PathBuf,
    /// What is wrong with it.
    pub reason: Distrust,
}

impl std::fmt::Display for Bypass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "kernel disk cache bypassed (compiling in memory): {} is {}",
            self.path.display(),
            self.reason
        )
    }
}

/// The effective user id, from the OS (`geteuid`).
pub(super) fn effective_uid() -> Option<u32> {
    crate::fs_trust::effective_uid()
}

/// Checks a folder (`dir`) or an entry: its kind, owner and permission bits.
#[cfg(unix)]
pub(super) fn check_meta(meta: &fs::Metadata, dir: bool, euid: u32) -> Result<(), Distrust> {
    use std::os::unix::fs::MetadataExt;
    let kind = meta.file_type();
    if (dir && !kind.is_dir()) || (!dir && !kind.is_file()) {
        return Err(Distrust::NotPlain);
    }
    if meta.uid() != euid {
        return Err(Distrust::ForeignOwner {
            owner: meta.uid(),
            euid,
        });
    }
    if meta.mode() & 0o022 != 0 {
        return Err(Distrust::Writable {
            mode: meta.mode() & 0o7777,
        });
    }
    Ok(())
}

#[cfg(not(unix))]
pub(super) fn check_meta(_meta: &fs::Metadata, _dir: bool, _euid: u32) -> Result<(), Distrust> {
    Err(Distrust::Unsupported)
}

/// Reads the entry at `path` if it is trusted: `Ok(None)` when it does not exist or cannot
/// be read, `Err` when it exists but fails a check.
pub(super) fn read_trusted(path: &Path) -> Result<Option<Vec<u8>>, Distrust> {
    let Ok(checked) = fs::symlink_metadata(path) else {
        return Ok(None);
    };
    let euid = effective_uid().ok_or(Distrust::UnknownUser)?;
    check_meta(&checked, false, euid)?;
    let Ok(mut file) = fs::File::open(path) else {
        return Ok(None);
    };
    let Ok(opened) = file.metadata() else {
        return Ok(None);
    };
    if !crate::fs_trust::same_file(&checked, &opened) {
        return Err(Distrust::Replaced);
    }
    check_meta(&opened, false, euid)?;
    let mut bytes = Vec::new();
    match file.read_to_end(&mut bytes) {
        Ok(_) => Ok(Some(bytes)),
        Err(_) => Ok(None),
    }
}

/// Creates `dir` and any missing parents with mode `0700`.
pub(super) fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Creates a new file (never an existing one) with mode `0600`.
pub(super) fn create_private_file(path: &Path) -> std::io::Result<fs::File> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}
