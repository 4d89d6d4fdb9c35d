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
