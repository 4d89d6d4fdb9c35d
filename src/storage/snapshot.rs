//! Point-in-time pictures of what an allocator holds (PyTorch's `memory_snapshot`), for
//! debugging fragmentation and for tests that recount statistics independently.

use super::source::StreamId;

/// What a block is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BlockState {
    /// Handed out to a user.
    Allocated,
    /// Freed by its user, but waiting for events on streams that used it
    /// ([`record_stream`](super::allocator::DeviceAllocator::record_stream)).
    AwaitingEvents,
    /// Cached: free for reuse.
    Free,
}

/// Which pool of the allocator a segment serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SegmentPool {
    /// The caching allocator's small pool: 2 MiB segments carved into blocks of at most 1 MiB.
    Small,
    /// The caching allocator's large pool.
    Large,
    /// A segment that is always exactly one block (naive, pooled and host allocators).
    Single,
}

/// One block of a segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockSnapshot {
    /// Start address.
    pub addr: u64,
    /// Size in bytes (after rounding).
    pub size: usize,
    /// Bytes the user asked for; 0 unless the block is allocated or awaiting events.
    pub requested: usize,
    /// The stream it belongs to (allocated on, or cached for). Free blocks of the host
    /// allocator serve every stream and report stream 0.
    pub stream: StreamId,
    /// Allocated, waiting for events, or free.
    pub state: BlockState,
}

/// One region held from the source, with its blocks in address order (they tile it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentSnapshot {
    /// Start address (that of its first block).
    pub addr: u64,
    /// Size in bytes, as allocated from the source.
    pub size: usize,
    /// The stream the segment serves.
    pub stream: StreamId,
    /// The pool it belongs to.
    pub pool: SegmentPool,
    /// Its blocks, in address order.
    pub blocks: Vec<BlockSnapshot>,
}

/// One allocator's statistics and segments at one moment, with where its memory lives: the
/// per-device entry of PyTorch's `memory_snapshot()` (whose segments carry a `device`), so
/// the reports of several GPUs in one process stay apart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemorySnapshot {
    /// The allocator's [`name`](super::DeviceAllocator::name).
    pub allocator: &'static str,
    /// Where its memory lives (device memory of a GPU, pinned or pageable host memory).
    pub location: super::source::MemoryLocation,
    /// The GPU the allocator serves: the device memory's ordinal, or for a GPU's pinned-host
    /// allocator ([`Gpu::host_memory_snapshot`](crate::gpu::Gpu::host_memory_snapshot)) that
    /// GPU's; `None` for host memory of no GPU.
    pub ordinal: Option<usize>,
    /// Its statistics.
    pub stats: super::stats::AllocatorStats,
    /// Every segment with its blocks, in address order (empty for an allocator that cannot
    /// list them, such as the driver pool).
    pub segments: Vec<SegmentSnapshot>,
}
