//! The allocator interface shared by every device allocator (MXNet's `Storage` verbs plus
//! PyTorch's stream-aware calls).

use super::history::{HistorySettings, MemoryHistory};
use super::snapshot::{MemorySnapshot, SegmentSnapshot};
use super::source::{MemoryLocation, StreamId};
pub use super::stats::{AllocatorStats, Stat};
use crate::error::AllocError;

/// A region handed out by a [`DeviceAllocator`].
///
/// Not `Clone`, and its fields are private: a block has one owner, giving it back (`free`,
/// `free_direct`) consumes it, and safe code can get one only from an allocator's
/// [`allocate`](DeviceAllocator::allocate). A forged block naming a live block's memory
/// would let that memory be freed under its owner, so building one by hand is `unsafe`
/// ([`Block::from_raw_parts`]).
#[derive(Debug, PartialEq, Eq)]
pub struct Block {
    /// Start address (a `CUdeviceptr`, or a host address for host sources). 0 for an empty
    /// block (`bytes == 0` requests never touch the source).
    addr: u64,
    /// Usable bytes (the request rounded up by the allocator's rules).
    size: usize,
    /// Bytes the caller asked for.
    requested: usize,
    /// The stream the block was allocated on; it may be reused on that stream at once.
    stream: StreamId,
}

impl Block {
    /// A block the crate's own allocators hand out from `allocate`, under the
    /// [`DeviceAllocator`] contract.
    #[inline]
    pub(crate) const fn new(addr: u64, size: usize, requested: usize, stream: StreamId) -> Block {
        Block {
            addr,
            size,
            requested,
            stream,
        }
    }

    /// The block for a request of 0 bytes on `stream`: address 0, never touches the source.
    #[inline]
    pub(crate) const fn empty(stream: StreamId) -> Block {
        Block::new(0, 0, 0, stream)
    }

    /// A block built from its parts, for implementors of [`DeviceAllocator`] outside this
    /// crate, to return from their [`allocate`](DeviceAllocator::allocate).
    ///
    /// # Safety
    ///
    /// The block must describe memory the caller's allocator owns and hands out now, exactly
    /// as [`DeviceAllocator`]'s safety contract says of a block returned by `allocate`:
    /// `[addr, addr + size)` is live memory (with `addr != 0` when `size > 0`) disjoint from
    /// every other live block of any allocator, `requested <= size`, usable on `stream`, and
    /// no other `Block` names any of it until this one is given back to the same allocator.
    /// Never use it to copy a block someone else holds: that block's memory could then be
    /// freed under its owner.
    #[inline]
    pub const unsafe fn from_raw_parts(
        addr: u64,
        size: usize,
        requested: usize,
        stream: StreamId,
    ) -> Block {
        Block::new(addr, size, requested, stream)
    }

    /// Start address (a `CUdeviceptr`, or a host address for host sources); 0 for an empty
    /// block.
    #[inline]
    pub const fn addr(&self) -> u64 {
        self.addr
    }

    /// Usable bytes (the request rounded up by the allocator's rules).
    #[inline]
    pub const fn size(&self) -> usize {
        self.size
    }

    /// Bytes the caller asked for.
    #[inline]
    pub const fn requested(&self) -> usize {
        self.requested
    }

    /// The stream the block was allocated on; it may be reused on that stream at once.
    #[inline]
    pub const fn stream(&self) -> StreamId {
        self.stream
    }
}

/// Checks what can be checked cheaply of a block an allocator returned for `bytes` bytes on
/// `stream`: at least `bytes` bytes, `requested() == bytes`, address not 0 unless empty, and
/// on `stream`. [`AllocError::BrokenAllocator`] otherwise.
///
/// A defence in depth under the (unsafe) contract, for the safe paths that take blocks from
/// any allocator ([`Allocation::new`](super::Allocation::new)); it cannot see overlap or
/// memory that is not live, which is why the contract is `unsafe` to implement.
pub(crate) fn check_handed_out(
    block: &Block,
    bytes: usize,
    stream: StreamId,
) -> Result<(), String> {
    if block.size() < bytes {
        Err(format!(
            "a block of {} bytes at {:#x} for a request of {bytes}",
            block.size(),
            block.addr()
        ))
    } else if block.requested() != bytes {
        Err(format!(
            "a block recording a request of {} bytes for a request of {bytes}",
            block.requested()
        ))
    } else if bytes > 0 && block.addr() == 0 {
        Err(format!("address 0 for a request of {bytes} bytes"))
    } else if block.stream() != stream {
        Err(format!(
            "a block of stream {:#x} for a request on stream {:#x}",
            block.stream().0,
            stream.0
        ))
    } else {
        Ok(())
    }
}

/// A device memory allocator: MXNet's `Alloc` / `Free` / `DirectFree` / `ReleaseAll`, plus
/// PyTorch's `recordStream`, statistics and peak resets. Shared across threads.
///
/// # Safety
///
/// Unsafe code trusts every block an allocator hands out: [`GpuStorage`] memsets, copies to
/// and launches kernels on it, [`PinnedBuffer`] makes a slice of it, and both free it through
/// the allocator when dropped. An implementation must therefore guarantee:
///
/// 1. **Live, large enough, disjoint.** A block returned by [`allocate(bytes,
///    stream)`](Self::allocate) has `size() >= bytes` and `requested() == bytes`; when
///    `size() > 0`, `addr()` is not 0 and `[addr, addr + size)` is live memory that
///    overlaps no other live block of any allocator (nor any other memory the program
///    uses). A request of 0 bytes may return an empty block (size 0, address 0).
/// 2. **Usable on its stream.** `stream() == stream`, and work queued on that stream after
///    `allocate` returns may read and write the block at once: any earlier use of the same
///    memory (by a previous owner, on any stream) is finished or ordered before that work.
/// 3. **Where it says.** The memory is of the kind [`memory_location`](Self::memory_location)
///    reports (device memory of that GPU, pageable or pinned host memory), and
///    `memory_location` returns the same value for the allocator's whole life.
/// 4. **Valid until given back.** The block stays valid, and none of its memory is handed
///    out again, until it is given back through [`free`](Self::free) or
///    [`free_direct`](Self::free_direct) of this same allocator. After a successful
///    [`record_stream(block, s)`](Self::record_stream), the memory is not reused or
///    released after that free until all work queued on `s` before the free has finished
///    (or is ordered before the next user's work).
/// 5. **Foreign blocks refused.** `free`, `free_direct` and `record_stream` of a block this
///    allocator did not hand out, or has already taken back (checked by address, size and
///    stream against its own record of live blocks), return an error
///    ([`AllocError::UnknownBlock`]) and touch nothing: no memory is freed or reused and no
///    statistic changes. (Empty blocks may be accepted: they name no memory.)
///
/// A safe allocator could hand one address out twice, and two typed storages would then
/// alias (undefined behaviour in the crate's unsafe code); that is why implementing this
/// trait is `unsafe`. The allocators of this crate are generic over a
/// [`MemorySource`](super::source::MemorySource), whose own (unsafe) contract gives them
/// fresh, disjoint regions: plugging in a new source is the usual way to get memory from
/// elsewhere.
///
/// [`GpuStorage`]: crate::gpu::GpuStorage
/// [`PinnedBuffer`]: crate::gpu::PinnedBuffer
pub unsafe trait DeviceAllocator: Send + Sync {
    /// Short name of the strategy (`"naive"`, `"pooled"`, `"caching"`, `"caching-host"`,
    /// `"driver-pool"`).
    fn name(&self) -> &'static str;

    /// Where the memory of every block this allocator hands out lives (the allocators over
    /// a [`MemorySource`](super::source::MemorySource) ask it). [`Gpu::with_allocator`]
    /// refuses an allocator whose memory is not on that GPU.
    ///
    /// [`Gpu::with_allocator`]: crate::gpu::Gpu::with_allocator
    fn memory_location(&self) -> MemoryLocation;

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

    /// Starts recording events with `settings` (dropping earlier ones), or stops with
    /// `None`. Whether this allocator records at all: the default (and every allocator but
    /// the caching one, for now) returns `false` and ignores the call.
    fn record_history(&self, settings: Option<HistorySettings>) -> bool {
        let _ = settings;
        false
    }

    /// The segments and blocks now plus the recorded events, if this allocator records
    /// (the default returns `None`).
    fn history(&self) -> Option<MemoryHistory> {
        None
    }

    /// Every segment with its blocks, in address order, if this allocator can list them
    /// (the crate's naive, pooled, caching and caching-host allocators; the default returns
    /// `None`).
    fn segments(&self) -> Option<Vec<SegmentSnapshot>> {
        None
    }

    /// The statistics and segments now, with where the memory lives and which GPU it
    /// belongs to ([`MemorySnapshot`]): one entry per device of a multi-GPU report.
    fn memory_snapshot(&self) -> MemorySnapshot {
        let location = self.memory_location();
        MemorySnapshot {
            allocator: self.name(),
            location,
            ordinal: match location {
                MemoryLocation::Device { ordinal } => Some(ordinal),
                _ => None,
            },
            stats: self.stats(),
            segments: self.segments().unwrap_or_default(),
        }
    }
}
