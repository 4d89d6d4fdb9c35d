//! The entry format of the kernel disk cache: the key of a compile, and the encoding and
//! checked decoding of one entry file.
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

use super::arch::{Arch, Target};
use super::disk_trust::Distrust;
use super::fnv::Fnv128;
use super::image::KernelImage;

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
    /// The file is not one this user alone could have written (see the module docs).
    Untrusted(Distrust),
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
