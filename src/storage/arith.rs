//! Size arithmetic every allocator of `storage/` uses: a leaf, so that the allocators, the
//! history and the sources can share it without importing each other.

// Addresses are u64 and sizes usize: converting a size to an address offset must be
// lossless.
static_assertions::const_assert!(usize::BITS <= u64::BITS);

/// A size as an address offset (lossless: see the assertion above).
pub(crate) fn to_u64(n: usize) -> u64 {
    n as u64
}

/// `n` rounded up to a multiple of `to` (> 0), or `None` on overflow.
pub(crate) fn round_up(n: usize, to: usize) -> Option<usize> {
    n.div_ceil(to).checked_mul(to)
}
