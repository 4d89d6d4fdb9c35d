//! Calling the source for memory, and building the errors allocators return when it fails.

use super::source::{MemorySource, SourceError};
use super::stats::AllocatorStats;
use crate::error::{AllocError, OomHint, OutOfMemoryError};
use crate::oom::applicable_hints;

/// A new region of `bytes` from `source`: `Ok(None)` if the source is out of memory (the
/// caller may free cached memory and retry), an error for any other failure.
pub(crate) fn try_allocate<S: MemorySource>(
    source: &S,
    bytes: usize,
) -> Result<Option<u64>, AllocError> {
    match source.allocate(bytes) {
        Ok(addr) => Ok(Some(addr)),
        Err(SourceError::OutOfMemory) => Ok(None),
        Err(e) => Err(source_failure(source, e)),
    }
}

/// The out-of-memory error for a request of `requested` bytes that failed after every
/// recovery step, counted in `stats.num_ooms`, with the source's free and total memory (0
/// when unknown), the allocator's current holdings and, of the `knobs` the allocator can
/// act on, those the numbers call for.
pub(crate) fn out_of_memory<S: MemorySource>(
    source: &S,
    requested: usize,
    stats: &mut AllocatorStats,
    knobs: &[OomHint],
) -> AllocError {
    stats.num_ooms += 1;
    let mem_info = source.mem_info().unwrap_or((0, 0));
    oom_error(source.name(), requested, mem_info, stats, knobs)
}

/// [`AllocError::OutOfMemory`] from its numbers: `(free, total)` of the device, the
/// allocator's statistics, and the hints among `knobs` that apply.
pub(crate) fn oom_error(
    device: String,
    requested: usize,
    (free, total): (usize, usize),
    stats: &AllocatorStats,
    knobs: &[OomHint],
) -> AllocError {
    let reserved = stats.reserved_bytes.current;
    let cached = stats.cached_bytes();
    AllocError::OutOfMemory(Box::new(OutOfMemoryError {
        device,
        requested,
        free,
        total,
        allocated: stats.allocated_bytes.current,
        reserved,
        cached,
        hints: applicable_hints(knobs, requested, free, total, reserved, cached),
    }))
}

/// A source failure other than out-of-memory (or one where out-of-memory makes no sense,
/// such as a failed free or event query).
pub(crate) fn source_failure<S: MemorySource>(source: &S, err: SourceError) -> AllocError {
    AllocError::Source(format!("{}: {err}", source.name()))
}
