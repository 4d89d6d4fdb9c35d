//! The kernel caches' key: everything that decides a kernel's compiled code.

use std::borrow::Cow;

use super::arch::Arch;
use super::fnv::Fnv128;
use super::nvrtc::NvrtcOptions;
use crate::element::DType;

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
