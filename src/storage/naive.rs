//! [`NaiveAllocator`]: one source allocation per request (MXNet's `NaiveStorageManager`).

use super::addr_map::AddrMap;
use super::allocator::{Block, DeviceAllocator};
use super::bookkeeping::{bookkeeping_methods, Books, Guarded};
use super::failure::{out_of_memory, source_failure, try_allocate};
use super::host_source::HostMemorySource;
use super::snapshot::{BlockSnapshot, BlockState, SegmentPool, SegmentSnapshot};
use super::source::{MemorySource, StreamId};
use super::stats::AllocatorStats;
use crate::error::AllocError;

/// Allocates every request straight from the source and frees it straight back: no cache,
/// so `free` and `free_direct` are the same.
///
/// The baseline the caching allocators are measured against, and a debugging aid: every
/// use-after-free touches memory the source has taken back.
///
/// Invariants:
/// - `live` holds exactly the blocks handed out and not freed, by address, with their size,
///   requested size and stream; each is one source region of `size` bytes.
/// - `stats.reserved_bytes == stats.allocated_bytes == stats.active_bytes` (nothing cached).
///
/// Blocks still handed out when the allocator is dropped stay with the source: their owners
/// hold raw addresses, and freeing memory someone may still use is worse than leaking it.
///
/// Before returning a region the allocator synchronizes the source: the region may still be
/// used by queued work on its stream or on streams passed to `record_stream`, and
/// [`MemorySource::free`] requires that no work uses it. (CUDA's `cuMemFree` synchronizes the
/// device anyway, so this costs little more.)
///
/// ```
/// use typestate_tensor::storage::{DeviceAllocator, HostMemorySource, NaiveAllocator, StreamId};
///
/// # fn main() -> Result<(), typestate_tensor::error::AllocError> {
/// let naive = NaiveAllocator::new(HostMemorySource::new(1 << 20));
/// let a = naive.allocate(1000, StreamId(0))?;
/// assert_eq!(naive.stats().reserved_bytes.current, a.size());
/// naive.free(a)?; // straight back to the source
/// assert_eq!(naive.stats().reserved_bytes.current, 0);
/// # Ok(())
/// # }
/// ```
pub struct NaiveAllocator<S: MemorySource> {
    inner: Guarded<S, NaiveState>,
}

#[derive(Default)]
struct NaiveState {
    live: AddrMap<u64, LiveBlock>,
    stats: AllocatorStats,
    error: Option<AllocError>,
}

impl NaiveState {
    /// Checks that `block` is one we handed out and have not taken back (by address, size
    /// and stream).
    fn lookup(&self, block: &Block) -> Result<(), AllocError> {
        match self.live.get(&block.addr()) {
            Some(b) if b.size == block.size() && b.stream == block.stream() => Ok(()),
            _ => Err(AllocError::UnknownBlock { addr: block.addr() }),
        }
    }
}

#[derive(Clone, Copy)]
struct LiveBlock {
    size: usize,
    requested: usize,
    stream: StreamId,
}

impl<S: MemorySource> Books<S> for NaiveState {
    fn stats_mut(&mut self) -> &mut AllocatorStats {
        &mut self.stats
    }

    fn error_mut(&mut self) -> &mut Option<AllocError> {
        &mut self.error
    }

    fn snapshot(&self) -> Vec<SegmentSnapshot> {
        let mut segments: Vec<SegmentSnapshot> = self
            .live
            .iter()
            .map(|(&addr, b)| SegmentSnapshot {
                addr,
                size: b.size,
                stream: b.stream,
                pool: SegmentPool::Single,
                blocks: vec![BlockSnapshot {
                    addr,
                    size: b.size,
                    requested: b.requested,
                    stream: b.stream,
                    state: BlockState::Allocated,
                }],
            })
            .collect();
        segments.sort_by_key(|s| s.addr);
        segments
    }

    /// Nothing is cached: every free went straight back to the source.
    fn release_cached(&mut self, _source: &S) -> Result<(), AllocError> {
        Ok(())
    }
}

impl<S: MemorySource> NaiveAllocator<S> {
    /// An allocator over `source`.
    pub fn new(source: S) -> Self {
        Self {
            inner: Guarded::new(source, NaiveState::default()),
        }
    }

    /// The memory source.
    pub fn source(&self) -> &S {
        &self.inner.source
    }

    /// Every block handed out, one segment each, in address order.
    pub fn snapshot(&self) -> Vec<SegmentSnapshot> {
        self.inner.snapshot()
    }
}

// SAFETY: every block of a non-zero request is one whole fresh region of exactly `bytes`
// bytes from the source, whose (unsafe) contract makes it live, non-null, disjoint from every
// other live region and of the kind `source.location()` reports; the source's memory is
// usable on any stream, and a region is returned to the source only after synchronizing it,
// so no earlier work still uses memory handed out again. `live` records exactly the blocks
// handed out and not freed; `free`, `free_direct` and `record_stream` check address, size
// and stream against it before anything else, so a foreign or already freed block is
// refused with no effect, and a live one is freed once (it leaves `live`).
unsafe impl<S: MemorySource> DeviceAllocator for NaiveAllocator<S> {
    fn name(&self) -> &'static str {
        "naive"
    }

    fn allocate(&self, bytes: usize, stream: StreamId) -> Result<Block, AllocError> {
        if bytes == 0 {
            return Ok(Block::empty(stream));
        }
        let source = &self.inner.source;
        let mut guard = self.inner.lock();
        let st = &mut *guard;
        let addr = try_allocate(source, bytes)?
            .ok_or_else(|| out_of_memory(source, bytes, &mut st.stats, &[]))?;
        st.live.insert(
            addr,
            LiveBlock {
                size: bytes,
                requested: bytes,
                stream,
            },
        );
        st.stats.segment_added(bytes);
        st.stats.block_handed_out(bytes, bytes);
        Ok(Block::new(addr, bytes, bytes, stream))
    }

    fn free(&self, block: Block) -> Result<(), AllocError> {
        self.free_direct(block)
    }

    fn free_direct(&self, block: Block) -> Result<(), AllocError> {
        if block.size() == 0 {
            return Ok(());
        }
        let source = &self.inner.source;
        let mut st = self.inner.lock();
        st.lookup(&block)?;
        let (addr, size) = (block.addr(), block.size());
        source
            .synchronize()
            .map_err(|e| source_failure(source, e))?;
        // SAFETY: `live` records `addr` as a region of `size` bytes that this allocator got
        // from the source and has not freed; we synchronized, so no queued work still uses
        // it. It leaves `live` right after, so it is freed once.
        unsafe { source.free(addr, size) }.map_err(|e| source_failure(source, e))?;
        st.live.remove(&addr);
        st.stats.block_given_back(size);
        st.stats.block_inactive(size, size);
        st.stats.segment_released(size);
        Ok(())
    }

    fn record_stream(&self, block: &Block, _stream: StreamId) -> Result<(), AllocError> {
        // Frees synchronize the whole source, which covers every stream: only check that
        // the block is ours.
        if block.size() == 0 {
            return Ok(());
        }
        self.inner.lock().lookup(block)
    }

    fn empty_cache(&self) -> Result<(), AllocError> {
        Ok(())
    }

    bookkeeping_methods!(inner);
}

static_assertions::assert_impl_all!(NaiveAllocator<HostMemorySource>: Send, Sync);
