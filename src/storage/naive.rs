//! [`NaiveAllocator`]: one source allocation per request (MXNet's `NaiveStorageManager`).

use std::sync::Mutex;

use super::addr_map::AddrMap;
use super::allocator::{AllocatorStats, Block, DeviceAllocator};
use super::failure::{out_of_memory, source_failure};
use super::locking::lock;
use super::snapshot::{BlockSnapshot, BlockState, SegmentPool, SegmentSnapshot};
use super::source::{MemorySource, SourceError, StreamId};
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
pub struct NaiveAllocator<S: MemorySource> {
    source: S,
    state: Mutex<NaiveState>,
}

#[derive(Default)]
struct NaiveState {
    live: AddrMap<u64, LiveBlock>,
    stats: AllocatorStats,
    error: Option<AllocError>,
}

#[derive(Clone, Copy)]
struct LiveBlock {
    size: usize,
    requested: usize,
    stream: StreamId,
}

impl<S: MemorySource> NaiveAllocator<S> {
    /// An allocator over `source`.
    pub fn new(source: S) -> Self {
        Self {
            source,
            state: Mutex::new(NaiveState::default()),
        }
    }

    /// The memory source.
    pub fn source(&self) -> &S {
        &self.source
    }

    /// Every block handed out, one segment each, in address order.
    pub fn snapshot(&self) -> Vec<SegmentSnapshot> {
        let st = lock(&self.state);
        let mut segments: Vec<SegmentSnapshot> = st
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
}

impl<S: MemorySource> DeviceAllocator for NaiveAllocator<S> {
    fn name(&self) -> &'static str {
        "naive"
    }

    fn allocate(&self, bytes: usize, stream: StreamId) -> Result<Block, AllocError> {
        if bytes == 0 {
            return Ok(Block {
                addr: 0,
                size: 0,
                requested: 0,
                stream,
            });
        }
        let mut st = lock(&self.state);
        let addr = match self.source.allocate(bytes) {
            Ok(addr) => addr,
            Err(SourceError::OutOfMemory) => {
                st.stats.num_ooms += 1;
                return Err(out_of_memory(&self.source, bytes, &st.stats));
            }
            Err(e) => return Err(source_failure(&self.source, e)),
        };
        st.live.insert(
            addr,
            LiveBlock {
                size: bytes,
                requested: bytes,
                stream,
            },
        );
        let stats = &mut st.stats;
        stats.num_allocs += 1;
        stats.allocations.increase(1);
        stats.segments.increase(1);
        for stat in [
            &mut stats.allocated_bytes,
            &mut stats.reserved_bytes,
            &mut stats.active_bytes,
            &mut stats.requested_bytes,
        ] {
            stat.increase(bytes);
        }
        Ok(Block {
            addr,
            size: bytes,
            requested: bytes,
            stream,
        })
    }

    fn free(&self, block: Block) -> Result<(), AllocError> {
        self.free_direct(block)
    }

    fn free_direct(&self, block: Block) -> Result<(), AllocError> {
        if block.size == 0 {
            return Ok(());
        }
        let mut st = lock(&self.state);
        match st.live.get(&block.addr) {
            Some(b) if b.size == block.size => {}
            _ => return Err(AllocError::UnknownBlock { addr: block.addr }),
        }
        self.source
            .synchronize()
            .map_err(|e| source_failure(&self.source, e))?;
        // SAFETY: `live` records `block.addr` as a region of `block.size` bytes that this
        // allocator got from the source and has not freed; we synchronized, so no queued work
        // still uses it.
        unsafe { self.source.free(block.addr, block.size) }
            .map_err(|e| source_failure(&self.source, e))?;
        st.live.remove(&block.addr);
        let stats = &mut st.stats;
        stats.num_segment_frees += 1;
        stats.allocations.decrease(1);
        stats.segments.decrease(1);
        for stat in [
            &mut stats.allocated_bytes,
            &mut stats.reserved_bytes,
            &mut stats.active_bytes,
            &mut stats.requested_bytes,
        ] {
            stat.decrease(block.size);
        }
        Ok(())
    }

    fn record_stream(&self, block: &Block, _stream: StreamId) -> Result<(), AllocError> {
        // Frees synchronize the whole source, which covers every stream: only check that
        // the block is ours.
        if block.size == 0 {
            return Ok(());
        }
        match lock(&self.state).live.get(&block.addr) {
            Some(b) if b.size == block.size => Ok(()),
            _ => Err(AllocError::UnknownBlock { addr: block.addr }),
        }
    }

    fn empty_cache(&self) -> Result<(), AllocError> {
        Ok(())
    }

    fn stats(&self) -> AllocatorStats {
        lock(&self.state).stats.clone()
    }

    fn reset_peak_stats(&self) {
        lock(&self.state).stats.reset_peaks();
    }

    fn record_err(&self, err: AllocError) {
        lock(&self.state).error.get_or_insert(err);
    }

    fn check_err(&self) -> Result<(), AllocError> {
        lock(&self.state).error.take().map_or(Ok(()), Err)
    }
}
