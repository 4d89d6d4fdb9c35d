//! Compiled kernels kept on disk between runs, so a new process skips NVRTC (170-310 ms a
//! module) and only loads.
//!
//! Where: the process's [`KernelCacheDir`] ([`set_kernel_cache_dir`] before the first kernel,
//! else `$TYPESTATE_TENSOR_KERNEL_CACHE`: `off` or `0` disables the cache, a folder moves it),
//! by default `$XDG_CACHE_HOME/typestate-tensor/kernels`, else
//! `$HOME/.cache/typestate-tensor/kernels`.
//!
//! The entry format is `super::disk_entry`, the trust checks `super::disk_trust`, the sweep of
//! stale temporary files `super::disk_sweep`.
//!
//! One file per entry, `<key>.kernel`, where the key is the FNV-1a-128 hash of the source,
//! the NVRTC options, the NVRTC version and the target ([`entry_key`]). Files are written to
//! a temporary name and renamed into place, so readers (other processes included) see a
//! whole file or none. Every file carries a header that is checked on read; an entry that is
//! corrupt, truncated, stale (another format version) or for another key is rejected, then
//! recompiled and overwritten. The cache never fails a compile: I/O errors only mean the
//! kernel is compiled again.
//!
//! # Stale temporary files
//!
//! A temporary file is named `.<key>.<pid>.<n>.tmp` after the process writing it. One left by
//! a killed process would stay forever, so the first lookup or store of each process in a
//! folder (after the folder passes its checks) removes the temporaries that are stale
//! ([`DiskCache::sweep_stale_temps`]): those not modified for [`STALE_TMP_AGE`] (an hour;
//! a write takes milliseconds), and, on Linux, those of a process that no longer exists
//! (`/proc/<pid>` missing, `/proc` mounted) once not modified for [`DEAD_WRITER_GRACE`] (a
//! minute). The grace keeps a live writer's file safe even where its pid does not show in
//! our `/proc` (another pid namespace sharing the folder). Only regular files with exactly
//! that name pattern are touched, never an entry. Were a live writer's file removed all the
//! same, its rename would fail and that one entry would not be stored: the kernel is still
//! compiled and used.
//!
//! # Trust: a file another user could write is never loaded
//!
//! A CUBIN from the cache is loaded and launched from safe code, so it must be the crate's
//! own. Two checks, for two threats:
//!
//! - **Permissions stop other local users** (Unix). The folder and the parents the crate
//!   creates (`typestate-tensor/kernels` under the XDG cache folder; only the folder itself
//!   when it is named by `TYPESTATE_TENSOR_KERNEL_CACHE` or [`DiskCache::at`]) are created
//!   with mode `0700`; before every read and write each must be a real directory (not a
//!   symlink) owned by the effective user and writable by neither group nor others. Each
//!   entry read must be a regular file (not a symlink) owned by the effective user and not
//!   group- or other-writable, and the file opened must be the file checked (same device and
//!   inode). Entries are written `0600`. If the folder fails, the disk cache is bypassed:
//!   kernels are compiled in memory, nothing is read or written there, and the first reason
//!   is kept ([`DiskCache::warning`], [`Lookup::Bypassed`], counted in
//!   [`CacheStats::disk_bypasses`](super::CacheStats::disk_bypasses)). A failing entry is
//!   [`Reject::Untrusted`]: recompiled and replaced. The effective user id comes from the
//!   OS (`geteuid`), not from the owner of a file the process creates (uid-squashing file
//!   systems give that another owner). Other platforms have
//!   no such check here, so there the disk cache is always bypassed.
//! - **The checksum catches truncation and corruption.** The header's FNV-1a-128 covers the
//!   header (entry key included) and the payload, so a damaged, truncated or misplaced file
//!   is rejected. FNV is not cryptographic: it does not stop someone who can write the file,
//!   which is what the permissions are for. Root and the user themselves are trusted.
//!
//! [`set_kernel_cache_dir`]: crate::runtime::set_kernel_cache_dir

use std::ffi::OsStr;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
#[cfg(test)]
use std::time::SystemTime;

pub use super::disk_entry::{decode, encode, entry_key, Reject};
#[cfg(test)]
pub use super::disk_entry::{FORMAT_VERSION, HEADER_LEN};
use super::disk_sweep::sweep_once;
#[cfg(test)]
use super::disk_sweep::{process_exists, sweep_temps};
#[cfg(test)]
pub use super::disk_sweep::{DEAD_WRITER_GRACE, STALE_TMP_AGE};
use super::disk_trust::{
    check_meta, create_private_dir, create_private_file, effective_uid, read_trusted,
};
pub use super::disk_trust::{Bypass, Distrust};
use super::image::KernelImage;
use crate::error::GpuError;
use crate::runtime::{fixed_kernel_cache_dir, KernelCacheDir};

/// Result of looking up an entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// A valid entry.
    Hit(KernelImage),
    /// No entry (or the cache is disabled, or the file could not be read).
    Miss,
    /// An entry exists but is unusable.
    Rejected(Reject),
    /// The folder is not trusted: nothing was read (see the module docs).
    Bypassed(Bypass),
}

/// Where an image came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Read from the disk cache.
    Disk,
    /// Compiled now (the entry was missing, rejected, or the cache is off).
    Compiled {
        /// The unusable entry that was replaced, if any.
        replaced: Option<Reject>,
        /// Whether the new entry was written.
        stored: bool,
    },
}

/// The on-disk kernel cache: a folder, or nothing (disabled).
///
/// Clones share the recorded [`warning`](Self::warning) and bypass count.
#[derive(Clone, Debug)]
pub struct DiskCache {
    dir: Option<PathBuf>,
    /// How many trailing components of `dir` the crate owns: created `0700` and checked.
    owned: usize,
    trust: Arc<TrustLog>,
}

/// The first bypass reason and how many lookups or stores were bypassed.
#[derive(Debug, Default)]
struct TrustLog {
    first: Mutex<Option<Bypass>>,
    count: AtomicU64,
}

impl PartialEq for DiskCache {
    fn eq(&self, other: &Self) -> bool {
        self.dir == other.dir && self.owned == other.owned
    }
}

impl Eq for DiskCache {}

impl DiskCache {
    /// The cache the process's setting asks for (the one
    /// [`set_kernel_cache_dir`](crate::runtime::set_kernel_cache_dir) gave, else
    /// [`KERNEL_CACHE_ENV`](crate::runtime::KERNEL_CACHE_ENV); see the module docs). Fixes
    /// that setting.
    pub fn from_env() -> Self {
        Self::for_setting(
            fixed_kernel_cache_dir(),
            std::env::var_os("XDG_CACHE_HOME").as_deref(),
            std::env::var_os("HOME").as_deref(),
        )
    }

    /// The cache for `setting`, given the values of `XDG_CACHE_HOME` and `HOME`.
    fn for_setting(
        setting: &KernelCacheDir,
        xdg_cache_home: Option<&OsStr>,
        home: Option<&OsStr>,
    ) -> Self {
        Self {
            dir: resolve(setting, xdg_cache_home, home),
            // `typestate-tensor/kernels` under the XDG folder; a named folder alone.
            owned: if matches!(setting, KernelCacheDir::At(_)) {
                1
            } else {
                2
            },
            trust: Arc::default(),
        }
    }

    /// No disk cache: every cold start compiles.
    #[cfg(test)]
    pub fn disabled() -> Self {
        Self {
            dir: None,
            owned: 0,
            trust: Arc::default(),
        }
    }

    /// A cache in `dir` (created `0700` on first write). `dir` itself is checked before every
    /// read and write (see the module docs); its parents are not.
    #[cfg(test)]
    pub fn at(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: Some(dir.into()),
            owned: 1,
            trust: Arc::default(),
        }
    }

    /// The folder, or `None` when disabled.
    #[cfg(test)]
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// The file that holds (or would hold) entry `key`.
    pub fn entry_path(&self, key: u128) -> Option<PathBuf> {
        self.dir
            .as_ref()
            .map(|d| d.join(format!("{key:032x}.kernel")))
    }

    /// The first reason the cache was bypassed, if it ever was (kept until the cache is
    /// dropped; later bypasses only count, see [`bypasses`](Self::bypasses)).
    pub fn warning(&self) -> Option<Bypass> {
        self.trust
            .first
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// How many lookups and stores were bypassed because the folder is not trusted.
    pub fn bypasses(&self) -> u64 {
        self.trust.count.load(Ordering::Relaxed)
    }

    fn record(&self, bypass: Bypass) -> Bypass {
        self.trust.count.fetch_add(1, Ordering::Relaxed);
        let mut first = self
            .trust
            .first
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if first.is_none() {
            *first = Some(bypass.clone());
        }
        bypass
    }

    /// The folder and its owned parents, innermost first.
    fn owned_dirs<'a>(&self, dir: &'a Path) -> impl Iterator<Item = &'a Path> {
        dir.ancestors()
            .take(self.owned.max(1))
            .filter(|p| !p.as_os_str().is_empty())
    }

    /// Checks the folder and its owned parents. `Ok(false)`: a component does not exist
    /// (nothing to read). Other I/O errors count as missing too.
    fn check_dirs(&self, dir: &Path) -> Result<bool, Bypass> {
        let euid = effective_uid().ok_or_else(|| Bypass {
            path: dir.to_owned(),
            reason: Distrust::UnknownUser,
        })?;
        for path in self.owned_dirs(dir) {
            let meta = match fs::symlink_metadata(path) {
                Ok(m) => m,
                Err(_) => return Ok(false),
            };
            check_meta(&meta, true, euid).map_err(|reason| Bypass {
                path: path.to_owned(),
                reason,
            })?;
        }
        Ok(true)
    }

    /// Looks up entry `key`. Never fails: unreadable files are misses, and an untrusted
    /// folder is [`Lookup::Bypassed`] (recorded, see [`warning`](Self::warning)).
    pub fn load(&self, key: u128) -> Lookup {
        let (Some(dir), Some(path)) = (self.dir.as_deref(), self.entry_path(key)) else {
            return Lookup::Miss;
        };
        match self.check_dirs(dir) {
            Ok(true) => sweep_once(dir),
            Ok(false) => return Lookup::Miss,
            Err(bypass) => return Lookup::Bypassed(self.record(bypass)),
        }
        match read_trusted(&path) {
            Ok(Some(bytes)) => match decode(key, &bytes) {
                Ok(image) => Lookup::Hit(image),
                Err(reason) => Lookup::Rejected(reason),
            },
            Ok(None) => Lookup::Miss,
            Err(reason) => Lookup::Rejected(Reject::Untrusted(reason)),
        }
    }

    /// Writes entry `key` atomically (temporary file, then rename over any old entry), with
    /// mode `0600`, into a folder created `0700` and checked first.
    ///
    /// # Errors
    /// The I/O error, for callers that care; [`get_or_compile`](Self::get_or_compile)
    /// ignores it. An untrusted folder is a [`std::io::ErrorKind::PermissionDenied`] error
    /// (recorded, see [`warning`](Self::warning)). A disabled cache stores nothing and
    /// returns `Ok`.
    pub fn store(&self, key: u128, image: &KernelImage) -> std::io::Result<()> {
        let (Some(dir), Some(path)) = (self.dir.as_ref(), self.entry_path(key)) else {
            return Ok(());
        };
        create_private_dir(dir)?;
        match self.check_dirs(dir) {
            Ok(true) => sweep_once(dir),
            Ok(false) => return Err(std::io::ErrorKind::NotFound.into()),
            Err(bypass) => {
                let bypass = self.record(bypass);
                return Err(std::io::Error::new(
                    std::io::ErrorKind::PermissionDenied,
                    bypass.to_string(),
                ));
            }
        }
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        // The name `parse_temp_name` reads back.
        let tmp = dir.join(format!(
            ".{key:032x}.{}.{}.tmp",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let written = create_private_file(&tmp).and_then(|mut f| f.write_all(&encode(key, image)));
        let renamed = written.and_then(|()| fs::rename(&tmp, &path));
        if renamed.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        renamed
    }

    /// Removes the stale temporary files of the folder (see the module docs) and returns
    /// how many it removed. Lookups and stores already do this once per process and folder;
    /// this runs it again. Nothing is removed from a folder that fails its checks, or on a
    /// platform without them. Never fails: a file that cannot be read or removed is left.
    #[cfg(test)]
    pub fn sweep_stale_temps(&self) -> usize {
        match self.dir.as_deref() {
            Some(dir) if self.check_dirs(dir) == Ok(true) => {
                sweep_temps(dir, SystemTime::now(), process_exists)
            }
            _ => 0,
        }
    }

    /// The entry for `key`, or `compile()`'s image, which is then stored. Only `compile`'s
    /// error is returned; cache problems fall back to compiling. An untrusted folder is
    /// neither read nor written (`Origin::Compiled { replaced: None, stored: false }`).
    ///
    /// # Errors
    /// Whatever `compile` returns.
    pub fn get_or_compile(
        &self,
        key: u128,
        compile: impl FnOnce() -> Result<KernelImage, GpuError>,
    ) -> Result<(KernelImage, Origin), GpuError> {
        let replaced = match self.load(key) {
            Lookup::Hit(image) => return Ok((image, Origin::Disk)),
            Lookup::Miss => None,
            Lookup::Rejected(reason) => Some(reason),
            Lookup::Bypassed(_) => {
                let image = compile()?;
                let origin = Origin::Compiled {
                    replaced: None,
                    stored: false,
                };
                return Ok((image, origin));
            }
        };
        let image = compile()?;
        let stored = self.dir.is_some() && self.store(key, &image).is_ok();
        Ok((image, Origin::Compiled { replaced, stored }))
    }
}

/// The cache folder for the given values of `TYPESTATE_TENSOR_KERNEL_CACHE`,
/// `XDG_CACHE_HOME` and `HOME` (`None` = unset). `off`/`0` disable it; an empty value counts
/// as unset; a relative `XDG_CACHE_HOME` is ignored, as the XDG spec says.
#[cfg(test)]
pub fn resolve_dir(
    setting: Option<&OsStr>,
    xdg_cache_home: Option<&OsStr>,
    home: Option<&OsStr>,
) -> Option<PathBuf> {
    resolve(&KernelCacheDir::from_value(setting), xdg_cache_home, home)
}

/// The cache folder for `setting`, given the values of `XDG_CACHE_HOME` and `HOME`.
fn resolve(
    setting: &KernelCacheDir,
    xdg_cache_home: Option<&OsStr>,
    home: Option<&OsStr>,
) -> Option<PathBuf> {
    match setting {
        KernelCacheDir::Off => None,
        KernelCacheDir::At(dir) => Some(dir.clone()),
        KernelCacheDir::Default => {
            let base = xdg_cache_home
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
                .or_else(|| {
                    home.filter(|h| !h.is_empty())
                        .map(|h| Path::new(h).join(".cache"))
                })?;
            Some(base.join("typestate-tensor").join("kernels"))
        }
    }
}
