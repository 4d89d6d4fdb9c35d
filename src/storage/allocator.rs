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

impl Stat {
    /// Adds `n` to the current value and raises the peak to match.
    pub fn increase(&mut self, n: usize) {
        self.current = self.current.saturating_add(n);
        self.peak = self.peak.max(self.current);
    }

    /// Subtracts `n` from the current value.
    ///
    /// Saturates at zero rather than panicking: a broken count must not take the program
    /// down (debug builds assert the count stays consistent).
    pub fn decrease(&mut self, n: usize) {
        debug_assert!(self.current >= n, "statistic would go negative");
        self.current = self.current.saturating_sub(n);
    }

    /// Sets the peak to the current value.
    pub fn reset_peak(&mut self) {
        self.peak = self.current;
    }
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

impl AllocatorStats {
    /// Reserved bytes not handed out to users: the cache (PyTorch's "reserved but
    /// unallocated").
    pub fn cached_bytes(&self) -> usize {
        self.reserved_bytes
            .current
            .saturating_sub(self.allocated_bytes.current)
    }

    /// Sets every peak to its current value.
    pub fn reset_peaks(&mut self) {
        for stat in [
            &mut self.allocated_bytes,
            &mut self.reserved_bytes,
            &mut self.active_bytes,
            &mut self.requested_bytes,
            &mut self.segments,
            &mut self.allocations,
        ] {
            stat.reset_peak();
        }
    }

    /// Zeroes the event counters (`num_allocs`, `num_alloc_retries`, `num_ooms`,
    /// `num_segment_frees`); current values and peaks are untouched (PyTorch's
    /// `reset_accumulated_memory_stats`).
    pub fn reset_counters(&mut self) {
        self.num_allocs = 0;
        self.num_alloc_retries = 0;
        self.num_ooms = 0;
        self.num_segment_frees = 0;
    }
}

/// A device memory allocator: MXNet's `Alloc` / `Free` / `DirectFree` / `ReleaseAll`, plus
/// PyTorch's `recordStream`, statistics and peak resets. Shared across threads.
pub trait DeviceAllocator: Send + Sync {
    /// Short name of the strategy (`"naive"`, `"pooled"`, `"caching"`, `"caching-host"`,
    /// `"driver-pool"`).
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

    /// Keeps an error raised where it cannot be returned, typically a failed free in the
    /// `Drop` of an [`Allocation`](super::allocation::Allocation) (cudarc's `record_err`).
    ///
    /// The default discards the error; every allocator in this crate overrides it and keeps
    /// the first error until [`check_err`](Self::check_err) takes it.
    fn record_err(&self, err: AllocError) {
        let _ = err;
    }

    /// Returns the first error kept by [`record_err`](Self::record_err) since the last call,
    /// and forgets it (cudarc's `check_err`).
    fn check_err(&self) -> Result<(), AllocError> {
        Ok(())
    }
}
