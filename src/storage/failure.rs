//! Building the errors allocators return when the source fails.

use super::allocator::AllocatorStats;
use super::source::{MemorySource, SourceError};
use crate::error::AllocError;

/// The out-of-memory error for a request of `requested` bytes, with the source's free and
/// total memory (0 when unknown) and the allocator's current holdings.
pub(crate) fn out_of_memory<S: MemorySource>(
    source: &S,
    requested: usize,
    stats: &AllocatorStats,
) -> AllocError {
    let (free, total) = source.mem_info().unwrap_or((0, 0));
    AllocError::OutOfMemory {
        device: source.name(),
        requested,
        free,
        total,
        allocated: stats.allocated_bytes.current,
        reserved: stats.reserved_bytes.current,
        cached: stats.cached_bytes(),
    }
}

/// A source failure other than out-of-memory (or one where out-of-memory makes no sense,
/// such as a failed free or event query).
pub(crate) fn source_failure<S: MemorySource>(source: &S, err: SourceError) -> AllocError {
    AllocError::Source(format!("{}: {err}", source.name()))
}
