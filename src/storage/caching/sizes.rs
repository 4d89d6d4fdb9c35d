//! Size rules of PyTorch's `CUDACachingAllocator`: request rounding, pool choice and
//! segment sizes.

use crate::error::AllocError;
use crate::storage::arith::round_up;

/// Every block size is a multiple of this, and the smallest block (`kMinBlockSize`).
pub const MIN_BLOCK_SIZE: usize = 512;
/// Requests up to this size use the small pool (`kSmallSize`, 1 MiB).
pub const SMALL_SIZE: usize = 1 << 20;
/// Segment size of the small pool (`kSmallBuffer`, 2 MiB).
pub const SMALL_BUFFER: usize = 2 << 20;
/// Segment size for requests between 1 and 10 MiB, and the slack an oversize cached block may
/// have over an oversize request (`kLargeBuffer`, 20 MiB).
pub const LARGE_BUFFER: usize = 20 << 20;
/// Requests from this size get a segment of their own size (`kMinLargeAlloc`, 10 MiB).
pub const MIN_LARGE_ALLOC: usize = 10 << 20;
/// Segments for large requests are rounded up to a multiple of this (`kRoundLarge`, 2 MiB).
pub const ROUND_LARGE: usize = 2 << 20;

/// Number of power-of-two size intervals with their own `roundup_power2_divisions`
/// (1 MiB up to 64 GiB, PyTorch's `kRoundUpPowerOfTwoIntervals`).
pub const ROUNDUP_INTERVALS: usize = 16;
/// log2 of the first interval's lower end (1 MiB).
const FIRST_INTERVAL_LOG2: u32 = 20;

/// Whether a request of `size` bytes (already rounded) is served by the small pool.
pub fn is_small(size: usize) -> bool {
    size <= SMALL_SIZE
}

/// The interval of `size` in a `roundup_power2_divisions` table: its floor(log2) counted
/// from 1 MiB, clamped to the table.
pub(crate) fn roundup_interval(size: usize) -> usize {
    let log2 = size.max(1).ilog2();
    // At most 63 - 20, so the conversion is exact.
    let index = log2.saturating_sub(FIRST_INTERVAL_LOG2) as usize;
    index.min(ROUNDUP_INTERVALS - 1)
}

/// Rounds a request to a block size (PyTorch's `round_size`): at least [`MIN_BLOCK_SIZE`],
/// then either up to a multiple of [`MIN_BLOCK_SIZE`] or, where `divisions` gives the
/// request's interval `d > 1` divisions and the request exceeds `d * 512` bytes, up to the
/// next of `d` equal steps between the powers of two around it.
pub fn round_size(
    bytes: usize,
    divisions: &[usize; ROUNDUP_INTERVALS],
) -> Result<usize, AllocError> {
    if bytes < MIN_BLOCK_SIZE {
        return Ok(MIN_BLOCK_SIZE);
    }
    let overflow = AllocError::SizeOverflow { requested: bytes };
    let d = divisions[roundup_interval(bytes)];
    if d > 1 && bytes > MIN_BLOCK_SIZE.saturating_mul(d) {
        return roundup_power2_next_division(bytes, d).ok_or(overflow);
    }
    round_up(bytes, MIN_BLOCK_SIZE).ok_or(overflow)
}

/// `size` rounded up to the next of `divisions` equal steps between the power of two below
/// it and the one above (`divisions` is a power of two; checked by the config).
fn roundup_power2_next_division(size: usize, divisions: usize) -> Option<usize> {
    if size.is_power_of_two() {
        return Some(size);
    }
    let floor = 1usize << size.ilog2();
    let step = floor >> divisions.ilog2();
    if step == 0 {
        return floor.checked_mul(2);
    }
    let rounded_down = size & !(step - 1);
    if rounded_down == size {
        Some(size)
    } else {
        rounded_down.checked_add(step)
    }
}

/// The segment size to request from the source for a block of `size` bytes (PyTorch's
/// `get_allocation_size`): 2 MiB for small blocks, 20 MiB for blocks under 10 MiB, otherwise
/// `size` rounded up to 2 MiB.
pub fn allocation_size(size: usize) -> Result<usize, AllocError> {
    if size <= SMALL_SIZE {
        Ok(SMALL_BUFFER)
    } else if size < MIN_LARGE_ALLOC {
        Ok(LARGE_BUFFER)
    } else {
        round_up(size, ROUND_LARGE).ok_or(AllocError::SizeOverflow { requested: size })
    }
}
