//! Files that only this user can have written: the process's effective user id, and private
//! files and folders (created `0600` / `0700`, checked for owner and mode before use).
//!
//! A base module (docs/ARCHITECTURE.md): shared by the GPU engine's kernel disk cache (its
//! effective uid) and the collectives' NCCL unique-id file, which sit side by side above it
//! and may not import each other.
//!
//! The effective uid comes from the operating system (`geteuid`), not from the owner of a
//! file the process creates: on a uid-squashing file system (NFS `root_squash`,
//! `all_squash`) that owner is not "me".

use std::fmt;
use std::fs;
use std::io;
use std::path::Path;

/// This process's effective user id; `None` where there is no such thing (not Unix).
#[cfg(unix)]
pub(crate) fn effective_uid() -> Option<u32> {
    // SAFETY: `geteuid` has no preconditions, reads no memory of ours and cannot fail
    // (POSIX: "The geteuid() function shall always be successful").
    Some(unsafe { libc::geteuid() })
}

/// This process's effective user id; `None` where there is no such thing (not Unix).
#[cfg(not(unix))]
pub(crate) fn effective_uid() -> Option<u32> {
    None
}

/// Why a file or folder is not private to this user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum NotPrivate {
    /// The effective user id could not be determined (not Unix).
    UnknownUser,
    /// Not a regular file (or, for a folder, not a directory): a symlink, for instance.
    NotPlain,
    /// Owned by another user.
    ForeignOwner {
        /// The owner's uid.
        owner: u32,
        /// This process's effective uid.
        euid: u32,
    },
    /// Group or other permission bits that the check forbids are set.
    Open {
        /// The permission bits.
        mode: u32,
    },
    /// The path named another file when it was opened than when it was checked.
    Replaced,
}

impl fmt::Display for NotPrivate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotPrivate::UnknownUser => write!(f, "the effective user id could not be determined"),
            NotPrivate::NotPlain => write!(f, "not a plain file or directory (a symlink?)"),
            NotPrivate::ForeignOwner { owner, euid } => {
                write!(f, "owned by uid {owner}, not by this user (uid {euid})")
            }
            NotPrivate::Open { mode } => {
                write!(f, "open to group or others (mode {mode:o})")
            }
            NotPrivate::Replaced => write!(f, "replaced between its check and its use"),
        }
    }
}

/// A failure to reach a private file: the operating system's error, or a failed check.
#[derive(Debug)]
pub(crate) enum PrivateError {
    /// The operating system refused (missing file, no permission, ...).
    Io(io::Error),
    /// The file or folder exists but is not private to this user.
    NotPrivate(NotPrivate),
}

impl From<io::Error> for PrivateError {
    fn from(e: io::Error) -> Self {
        PrivateError::Io(e)
    }
}

impl From<NotPrivate> for PrivateError {
    fn from(e: NotPrivate) -> Self {
        PrivateError::NotPrivate(e)
    }
}

/// Checks `meta` (from `symlink_metadata` or an open handle): a directory if `dir`, else a
/// regular file; owned by `euid`; none of the `forbidden` permission bits set.
#[cfg(unix)]
fn check(meta: &fs::Metadata, dir: bool, euid: u32, forbidden: u32) -> Result<(), NotPrivate> {
    use std::os::unix::fs::MetadataExt;
    let kind = meta.file_type();
    if (dir && !kind.is_dir()) || (!dir && !kind.is_file()) {
        return Err(NotPrivate::NotPlain);
    }
    if meta.uid() != euid {
        return Err(NotPrivate::ForeignOwner {
            owner: meta.uid(),
            euid,
        });
    }
    if meta.mode() & forbidden != 0 {
        return Err(NotPrivate::Open {
            mode: meta.mode() & 0o7777,
        });
    }
    Ok(())
}

#[cfg(not(unix))]
fn check(_meta: &fs::Metadata, _dir: bool, _euid: u32, _forbidden: u32) -> Result<(), NotPrivate> {
    Err(NotPrivate::UnknownUser)
}

/// Opens `path` for reading if it is a regular file (not a symlink) owned by this user with
/// no group or other permission bits (`mode & 0o077 == 0`); the file opened is the file
/// checked (same device and inode), so a swap between the two is refused.
pub(crate) fn open_private_file(path: &Path) -> Result<fs::File, PrivateError> {
    let euid = effective_uid().ok_or(NotPrivate::UnknownUser)?;
    let checked = fs::symlink_metadata(path)?;
    check(&checked, false, euid, 0o077)?;
    let file = fs::File::open(path)?;
    let opened = file.metadata()?;
    if !same_file(&checked, &opened) {
        return Err(NotPrivate::Replaced.into());
    }
    check(&opened, false, euid, 0o077)?;
    Ok(file)
}

/// Creates a new file at `path` (never an existing one, never through a symlink) with mode
/// `0600`, for writing.
pub(crate) fn create_private_file(path: &Path) -> io::Result<fs::File> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

/// Creates the folder `dir` with mode `0700` if it does not exist (its parent must), then
/// checks that it is a real directory owned by this user that neither group nor others can
/// write.
pub(crate) fn ensure_private_dir(dir: &Path) -> Result<(), PrivateError> {
    let euid = effective_uid().ok_or(NotPrivate::UnknownUser)?;
    let mut builder = fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    match builder.create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e.into()),
    }
    check(&fs::symlink_metadata(dir)?, true, euid, 0o022)?;
    Ok(())
}

/// Whether two metadata describe the same file (device and inode): the file opened is the
/// one checked, not one swapped in between. Never on other platforms.
#[cfg(unix)]
pub(crate) fn same_file(a: &fs::Metadata, b: &fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}

#[cfg(not(unix))]
pub(crate) fn same_file(_a: &fs::Metadata, _b: &fs::Metadata) -> bool {
    false
}

#[cfg(all(test, unix))]
pub(crate) mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    use std::path::PathBuf;

    /// A fresh folder under the temporary folder, removed on drop.
    pub(crate) struct TempDir(pub(crate) PathBuf);

    impl TempDir {
        pub(crate) fn new(tag: &str) -> TempDir {
            static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
            let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let dir = std::env::temp_dir().join(format!(
                "typestate-tensor-test-{tag}-{}-{n}",
                std::process::id()
            ));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir(&dir).expect("fresh temp folder");
            TempDir(dir)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn the_effective_uid_owns_the_files_this_process_creates() {
        let dir = TempDir::new("euid");
        let path = dir.0.join("probe");
        fs::write(&path, b"x").unwrap();
        let owner = fs::metadata(&path).unwrap().uid();
        assert_eq!(effective_uid(), Some(owner));
    }

    #[test]
    fn private_files_are_0600_and_open_files_are_refused() {
        let dir = TempDir::new("private");
        let path = dir.0.join("f");
        drop(create_private_file(&path).unwrap());
        assert_eq!(fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
        assert!(open_private_file(&path).is_ok());
        assert!(
            create_private_file(&path).is_err(),
            "never an existing file"
        );
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        assert!(matches!(
            open_private_file(&path),
            Err(PrivateError::NotPrivate(NotPrivate::Open { mode: 0o644 }))
        ));
        let link = dir.0.join("link");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        assert!(matches!(
            open_private_file(&link),
            Err(PrivateError::NotPrivate(NotPrivate::NotPlain))
        ));
        let sub = dir.0.join("sub");
        ensure_private_dir(&sub).unwrap();
        assert_eq!(fs::metadata(&sub).unwrap().mode() & 0o777, 0o700);
        ensure_private_dir(&sub).expect("an existing private folder is fine");
        fs::set_permissions(&sub, fs::Permissions::from_mode(0o777)).unwrap();
        assert!(matches!(
            ensure_private_dir(&sub),
            Err(PrivateError::NotPrivate(NotPrivate::Open { mode: 0o777 }))
        ));
    }
}
