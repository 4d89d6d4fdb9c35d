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
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

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
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiskCache {
    dir: Option<PathBuf>,
}

impl DiskCache {
    /// The cache the environment asks for (see the module docs).
    pub fn from_env() -> Self {
        Self {
            dir: resolve_dir(
                std::env::var_os(CACHE_ENV).as_deref(),
                std::env::var_os("XDG_CACHE_HOME").as_deref(),
                std::env::var_os("HOME").as_deref(),
            ),
        }
    }

    /// No disk cache: every cold start compiles.
    pub fn disabled() -> Self {
        Self { dir: None }
    }

    /// A cache in `dir` (created on first write).
    pub fn at(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: Some(dir.into()),
        }
    }

    /// The folder, or `None` when disabled.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// The file that holds (or would hold) entry `key`.
    pub fn entry_path(&self, key: u128) -> Option<PathBuf> {
        self.dir
            .as_ref()
            .map(|d| d.join(format!("{key:032x}.kernel")))
    }

    /// Looks up entry `key`. Never fails: unreadable files are misses.
    pub fn load(&self, key: u128) -> Lookup {
        let Some(path) = self.entry_path(key) else {
            return Lookup::Miss;
        };
        match fs::read(&path) {
            Ok(bytes) => match decode(key, &bytes) {
                Ok(image) => Lookup::Hit(image),
                Err(reason) => Lookup::Rejected(reason),
            },
            Err(_) => Lookup::Miss,
        }
    }

    /// Writes entry `key` atomically (temporary file, then rename over any old entry).
    ///
    /// # Errors
    /// The I/O error, for callers that care; [`get_or_compile`](Self::get_or_compile)
    /// ignores it. A disabled cache stores nothing and returns `Ok`.
    pub fn store(&self, key: u128, image: &KernelImage) -> std::io::Result<()> {
        let (Some(dir), Some(path)) = (self.dir.as_ref(), self.entry_path(key)) else {
            return Ok(());
        };
        fs::create_dir_all(dir)?;
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let tmp = dir.join(format!(
            ".{key:032x}.{}.{}.tmp",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let written = fs::File::create(&tmp).and_then(|mut f| f.write_all(&encode(key, image)));
        let renamed = written.and_then(|()| fs::rename(&tmp, &path));
        if renamed.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        renamed
    }

    /// The entry for `key`, or `compile()`'s image, which is then stored. Only `compile`'s
    /// error is returned; cache problems fall back to compiling.
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
        };
        let image = compile()?;
        let stored = self.dir.is_some() && self.store(key, &image).is_ok();
        Ok((image, Origin::Compiled { replaced, stored }))
    }
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
