//! The allocator interface shared by every device allocator (MXNet's `Storage` verbs plus
//! PyTorch's stream-aware calls).

use super::source::StreamId;
use crate::error::AllocError;

/// A region handed out by a [`DeviceAllocator`].
///
/// Not `Clone`: a block has one owner, and giving it back (`free`, `free_direct`) consumes it,
/// so a double free does not compile.
#[derive(Debug, PartialEq, Eq)]
pub struct Block {
    /// Start address (a `CUdeviceptr`, or a host address for host sources). 0 for an empty
    /// block (`bytes == 0` requests never touch the source).
    pub addr: u64,
    /// Usable bytes (the request rounded up by the allocator's rules).
    pub size: usize,
    /// Bytes the caller asked for.
    pub requested: usize,
    /// The stream the block was allocated on; it may be reused on that stream at once.
    pub stream: StreamId,
}

/// Current and peak value of a statistic.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stat {
    /// Now.
    pub current: usize,
    /// Highest since creation or the last [`DeviceAllocator::reset_peak_stats`].
    pub peak: usize,
}

/// What an allocator holds and has done (PyTorch's `memory_stats`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AllocatorStats {
    /// Bytes in blocks handed out to users (rounded sizes).
    pub allocated_bytes: Stat,
    /// Bytes the allocator holds from its source (segments).
    pub reserved_bytes: Stat,
    /// Bytes in blocks that are handed out or waiting on stream events.
    pub active_bytes: Stat,
    /// Bytes users asked for (before rounding).
    pub requested_bytes: Stat,
    /// Segments held from the source.
    pub segments: Stat,
    /// Blocks handed out.
    pub allocations: Stat,
    /// Allocation requests served since creation.
    pub num_allocs: u64,
    /// Times an allocation freed cached memory and retried.
    pub num_alloc_retries: u64,
    /// Allocations that failed with out-of-memory after every recovery step.
    pub num_ooms: u64,
    /// Segments returned to the source.
    pub num_segment_frees: u64,
}

/// A device memory allocator: MXNet's `Alloc` / `Free` / `DirectFree` / `ReleaseAll`, plus
/// PyTorch's `recordStream`, statistics and peak resets. Shared across threads.
pub trait DeviceAllocator: Send + Sync {
    /// Short name of the strategy (`"naive"`, `"pooled"`, `"caching"`, `"driver-pool"`).
    fn name(&self) -> &'static str;

    /// Allocates at least `bytes` bytes usable on `stream`.
    fn allocate(&self, bytes: usize, stream: StreamId) -> Result<Block, AllocError>;

    /// Gives a block back to the allocator's cache (MXNet `Free`).
    fn free(&self, block: Block) -> Result<(), AllocError>;

    /// Gives a block straight back to the source, bypassing any cache (MXNet `DirectFree`).
    fn free_direct(&self, block: Block) -> Result<(), AllocError>;

    /// Marks `block` as used on `stream` too: when freed, it is reused only after an event
    /// recorded then on `stream` completes (PyTorch `recordStream`).
    fn record_stream(&self, block: &Block, stream: StreamId) -> Result<(), AllocError>;

    /// Returns every cached, unused segment to the source (MXNet `ReleaseAll`, PyTorch
    /// `empty_cache`).
    fn empty_cache(&self) -> Result<(), AllocError>;

    /// A snapshot of the statistics.
    fn stats(&self) -> AllocatorStats;

    /// Sets every peak to its current value.
    fn reset_peak_stats(&self);
}
