//! Run-time compilation of CUDA C kernels with NVRTC, and the caches that make each kernel
//! compile once per machine and load once per device.
//!
//! Layers, from the bottom:
//! - [`nvrtc`]: the NVRTC calls. Compiles for the device's own `sm_XY` and returns a CUBIN
//!   (loads with no driver JIT), or PTX for the newest older architecture when this NVRTC
//!   does not know the device ([`Target::choose`]).
//! - [`disk_cache`]: images on disk between processes, keyed by a stable 128-bit hash of
//!   source, options, NVRTC version and target; damaged entries are recompiled, and a
//!   folder or file another user could write is never read.
//! - [`KernelCache`]: process-wide, one image per [`KernelKey`] and one loaded function per
//!   (device ordinal, [`KernelKey`]), built once even when threads race.
//!
//! [`measure_cold_start`] times the first-use path for benchmarks.

pub mod arch;
pub mod disk_cache;
mod fnv;
pub(crate) mod image;
mod module_cache;
pub mod nvrtc;
mod once_map;

use std::borrow::Cow;

pub use arch::Arch;
pub use disk_cache::{Bypass, Distrust};
pub use fnv::Fnv128;
pub use module_cache::{device_arch, target_for, CacheStats, KernelCache};
pub use nvrtc::NvrtcOptions;

use crate::element::DType;

/// What the process-wide kernel cache has done so far: images built, NVRTC compiles, disk
/// hits and rejects, modules loaded, disk lookups bypassed.
pub fn kernel_cache_stats() -> CacheStats {
    KernelCache::global().stats()
}

/// Why the kernel disk cache (`TYPESTATE_TENSOR_KERNEL_CACHE`, else a folder under the temp
/// folder) was bypassed, if it ever was: the first untrusted folder found (owned by another
/// user, writable by others, not a plain folder). Kernels were then compiled in memory, which
/// is correct but slower on the next process's first use.
pub fn kernel_cache_warning() -> Option<Bypass> {
    KernelCache::global().disk_warning()
}

/// Everything that decides a kernel's compiled code, as a cache key.
///
/// Two equal keys describe the same source text: `source_hash` is the hash of the whole
/// generated source ([`KernelKey::hash_source`]), which every key in the crate is built
/// with, so two kernels share an image only if they share their source (and every other
/// field). Keys are private to the crate; the disk cache does not even trust them: its entry
/// key hashes the source text again.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct KernelKey {
    /// The operation (`"add"`, `"fill"`).
    pub op: Cow<'static, str>,
    /// The `extern "C"` kernel function to look up in the module.
    pub entry: Cow<'static, str>,
    /// The element types involved, in the op's order.
    pub dtypes: Vec<DType>,
    /// The rank the kernel is specialised for (`NDIMS`).
    pub rank: usize,
    /// Index width: 32 or 64.
    pub index_bits: u32,
    /// Elements per vector load/store (1 for scalar kernels).
    pub vector_width: u32,
    /// The device's compute capability.
    pub arch: Arch,
    /// NVRTC options beyond the architecture and `-std=c++17`.
    pub options: NvrtcOptions,
    /// Stable hash of the source or of the templates it comes from.
    pub source_hash: u128,
}

impl KernelKey {
    /// A stable hash of source text (FNV-1a-128), for [`KernelKey::source_hash`].
    pub fn hash_source(text: &str) -> u128 {
        Fnv128::hash(text.as_bytes())
    }
}
