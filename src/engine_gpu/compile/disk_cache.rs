//! Compiled kernels kept on disk between runs, so a new process skips NVRTC (170-310 ms a
//! module) and only loads.
//!
//! Where: `$TYPESTATE_TENSOR_KERNEL_CACHE` if set (`off` or `0` disables the cache), else
//! `$XDG_CACHE_HOME/typestate-tensor/kernels`, else `$HOME/.cache/typestate-tensor/kernels`.
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
//! File layout, all integers little-endian:
//!
//! | offset | size | field |
//! |-------:|-----:|-------|
//! | 0  | 8  | magic `b"TTKERNEL"` |
//! | 8  | 4  | format version, [`FORMAT_VERSION`] |
//! | 12 | 4  | image kind: 1 = CUBIN, 2 = PTX |
//! | 16 | 4  | target architecture number (`10 * major + minor`) |
//! | 20 | 4  | reserved, 0 |
//! | 24 | 16 | entry key (u128) |
//! | 40 | 8  | payload length in bytes |
//! | 48 | 16 | checksum: FNV-1a-128 of bytes 8..48, then of the payload |
//! | 64 | len | payload: the CUBIN, or the PTX text |

use std::ffi::OsStr;
use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, SystemTime};

use super::arch::{Arch, Target};
use super::fnv::Fnv128;
use super::image::KernelImage;
use crate::error::GpuError;

/// The environment variable that moves (a folder) or disables (`off`, `0`) the cache.
pub const CACHE_ENV: &str = "TYPESTATE_TENSOR_KERNEL_CACHE";
/// First bytes of every entry.
pub const MAGIC: [u8; 8] = *b"TTKERNEL";
/// Version of the entry layout; entries of another version are stale.
pub const FORMAT_VERSION: u32 = 1;
/// Bytes before the payload.
pub const HEADER_LEN: usize = 64;

/// A temporary file not modified for this long is removed, whoever wrote it (see the module
/// docs).
pub const STALE_TMP_AGE: Duration = Duration::from_secs(60 * 60);
/// A temporary file of a process that no longer exists is removed once not modified for
/// this long (see the module docs).
pub const DEAD_WRITER_GRACE: Duration = Duration::from_secs(60);

const KIND_CUBIN: u32 = 1;
const KIND_PTX: u32 = 2;

/// The cache key of a compile: FNV-1a-128 over the source, every NVRTC option, the NVRTC
/// version and the target (each a length-prefixed field, after a tag naming the scheme).
/// Stable across Rust versions, runs and machines.
pub fn entry_key(
    source: &str,
    options: &[String],
    nvrtc_version: (u32, u32),
    target: Target,
) -> u128 {
    let mut h = Fnv128::new();
    h.field(b"typestate-tensor kernel v1");
    h.field(source.as_bytes());
    h.write(&(options.len() as u64).to_le_bytes());
    for option in options {
        h.field(option.as_bytes());
    }
    h.write(&nvrtc_version.0.to_le_bytes());
    h.write(&nvrtc_version.1.to_le_bytes());
    let kind = match target {
        Target::Cubin(_) => KIND_CUBIN,
        Target::Ptx(_) => KIND_PTX,
    };
    h.write(&kind.to_le_bytes());
    h.field(target.arch_name().as_bytes());
    h.finish()
}

/// Why a cache file was not used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reject {
    /// Shorter than its header says (or than a header).
    Truncated,
    /// Longer than its header says.
    TrailingBytes,
    /// Not a cache entry.
    BadMagic,
    /// Written by another format version.
    StaleVersion,
    /// The header names another key (a misplaced or colliding file).
    WrongKey,
    /// The checksum does not match (a damaged file).
    BadChecksum,
    /// The header names an image kind or architecture this build does not know.
    UnknownTarget,
    /// The file is not one this user alone could have written (see the module docs).
    Untrusted(Distrust),
}

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

/// The serialized entry for `key`.
pub fn encode(key: u128, image: &KernelImage) -> Vec<u8> {
    let (kind, arch_name) = match image.target() {
        Target::Cubin(name) => (KIND_CUBIN, name),
        Target::Ptx(name) => (KIND_PTX, name),
    };
    let arch = arch_number(arch_name).unwrap_or(0);
    let payload = image.bytes();
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&kind.to_le_bytes());
    out.extend_from_slice(&arch.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&key.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    let checksum = Fnv128::new().write(&out[8..48]).write(payload).finish();
    out.extend_from_slice(&checksum.to_le_bytes());
    out.extend_from_slice(payload);
    out
}

/// The image in `bytes`, if they are a valid entry for `key`.
///
/// # Errors
/// The [`Reject`] reason otherwise (checked in order: length, magic, version, key, payload
/// length, checksum, target).
pub fn decode(key: u128, bytes: &[u8]) -> Result<KernelImage, Reject> {
    if bytes.len() < HEADER_LEN {
        return Err(Reject::Truncated);
    }
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap_or([0; 4]));
    let u128_at = |at: usize| u128::from_le_bytes(bytes[at..at + 16].try_into().unwrap_or([0; 16]));
    if bytes[..8] != MAGIC {
        return Err(Reject::BadMagic);
    }
    if u32_at(8) != FORMAT_VERSION {
        return Err(Reject::StaleVersion);
    }
    if u128_at(24) != key {
        return Err(Reject::WrongKey);
    }
    let len = u64::from_le_bytes(bytes[40..48].try_into().unwrap_or([0; 8]));
    let have = (bytes.len() - HEADER_LEN) as u64;
    if len > have {
        return Err(Reject::Truncated);
    }
    if len < have {
        return Err(Reject::TrailingBytes);
    }
    let payload = &bytes[HEADER_LEN..];
    let checksum = Fnv128::new().write(&bytes[8..48]).write(payload).finish();
    if u128_at(48) != checksum {
        return Err(Reject::BadChecksum);
    }
    let arch = Arch::from_number(u32_at(16));
    let target = match u32_at(12) {
        KIND_CUBIN => arch.real_name().map(Target::Cubin),
        KIND_PTX => arch.virtual_name().map(Target::Ptx),
        _ => None,
    }
    .ok_or(Reject::UnknownTarget)?;
    Ok(KernelImage::new(target, payload.to_vec()))
}

/// `sm_90` / `compute_90` -> 90.
fn arch_number(name: &str) -> Option<u32> {
    name.strip_prefix("sm_")
        .or_else(|| name.strip_prefix("compute_"))
        .and_then(|n| n.parse().ok())
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
    /// The cache the environment asks for (see the module docs).
    pub fn from_env() -> Self {
        let setting = std::env::var_os(CACHE_ENV);
        let named = setting.as_deref().is_some_and(|s| !s.is_empty());
        Self {
            dir: resolve_dir(
                setting.as_deref(),
                std::env::var_os("XDG_CACHE_HOME").as_deref(),
                std::env::var_os("HOME").as_deref(),
            ),
            // `typestate-tensor/kernels` under the XDG folder; a named folder alone.
            owned: if named { 1 } else { 2 },
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

/// Sweeps `dir` once per process (the first lookup or store there; later ones return at
/// once).
fn sweep_once(dir: &Path) {
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
fn process_exists(pid: u32) -> Option<bool> {
    if cfg!(target_os = "linux") && Path::new("/proc/self").exists() {
        Some(Path::new("/proc").join(pid.to_string()).exists())
    } else {
        None
    }
}

/// Removes the stale temporary files in `dir` as of `now` (see the module docs), asking
/// `exists` whether a writer's process is alive; returns how many it removed.
fn sweep_temps(dir: &Path, now: SystemTime, exists: impl Fn(u32) -> Option<bool>) -> usize {
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

/// The effective user id, from the OS (`geteuid`).
fn effective_uid() -> Option<u32> {
    crate::fs_trust::effective_uid()
}

/// Checks a folder (`dir`) or an entry: its kind, owner and permission bits.
#[cfg(unix)]
fn check_meta(meta: &fs::Metadata, dir: bool, euid: u32) -> Result<(), Distrust> {
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
fn check_meta(_meta: &fs::Metadata, _dir: bool, _euid: u32) -> Result<(), Distrust> {
    Err(Distrust::Unsupported)
}

/// Reads the entry at `path` if it is trusted: `Ok(None)` when it does not exist or cannot
/// be read, `Err` when it exists but fails a check.
fn read_trusted(path: &Path) -> Result<Option<Vec<u8>>, Distrust> {
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
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Creates a new file (never an existing one) with mode `0600`.
fn create_private_file(path: &Path) -> std::io::Result<fs::File> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

/// The cache folder for the given values of `TYPESTATE_TENSOR_KERNEL_CACHE`,
/// `XDG_CACHE_HOME` and `HOME` (`None` = unset). `off`/`0` disable it; an empty value counts
/// as unset; a relative `XDG_CACHE_HOME` is ignored, as the XDG spec says.
pub fn resolve_dir(
    setting: Option<&OsStr>,
    xdg_cache_home: Option<&OsStr>,
    home: Option<&OsStr>,
) -> Option<PathBuf> {
    match setting.filter(|s| !s.is_empty()) {
        Some(s) if s == "off" || s == "0" => None,
        Some(s) => Some(PathBuf::from(s)),
        None => {
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
