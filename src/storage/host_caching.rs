//! [`CachingHostAllocator`]: PyTorch's `CachingHostAllocator` (pinned host memory)
//! algorithm over any [`MemorySource`].
//!
//! Requests round up to a power of two; each power of two is a size class with a free
//! list. Blocks are never split. A freed block returns to its free list only after an event
//! recorded at the free on every stream that used it has completed, because the CPU writes
//! a reused block at once, without waiting for copies still queued on those streams.
//!
//! The source is typically pinned (page-locked) host memory from the GPU layer; tests use
//! [`HostMemorySource`](super::host_source::HostMemorySource).

use std::sync::Mutex;

use super::addr_map::AddrMap;
use super::allocator::{AllocatorStats, Block, DeviceAllocator};
use super::events::StreamEvents;
use super::failure::{out_of_memory, source_failure};
use super::locking::{get_mut, lock};
use super::snapshot::{BlockSnapshot, BlockState, SegmentPool, SegmentSnapshot};
use super::source::{MemorySource, SourceError, StreamId};
use crate::error::AllocError;

/// Number of power-of-two size classes (one per bit of `usize`).
const SIZE_CLASSES: usize = usize::BITS as usize;

/// PyTorch's caching host allocator, generic over the memory source.
///
/// Differences from PyTorch, both for safety:
/// - The stream a block is allocated on counts as a use (PyTorch's host allocations have no
///   stream and rely on the caller to record every use). Freeing a block therefore always
///   records at least one event, and the block is reused once work queued on its
///   allocation stream (and on streams passed to `record_stream`) before the free is done.
/// - When the source is out of memory the allocator synchronizes, returns every cached
///   block and retries once, like the device allocator (PyTorch's host allocator fails at
///   once).
///
/// Invariants:
/// - Every block held from the source is in exactly one place: `live` (handed out or
///   awaiting events) or the free list of its size class (`free_lists[log2(size)]`).
/// - Block sizes are powers of two, each one whole source region.
/// - A block awaiting events has `event_count > 0` queued events naming it.
/// - `stats` current values equal a recount over `live` and the free lists.
pub struct CachingHostAllocator<S: MemorySource> {
    source: S,
    state: Mutex<HostCache<S::Event>>,
}

struct HostCache<E> {
    /// Cached block addresses per size class.
    free_lists: Vec<Vec<u64>>,
    /// Blocks handed out or awaiting events, by address.
    live: AddrMap<u64, HostBlock>,
    events: StreamEvents<E, u64>,
    stats: AllocatorStats,
    scratch: Vec<u64>,
    error: Option<AllocError>,
}

struct HostBlock {
    size: usize,
    requested: usize,
    /// The stream it was allocated on (always a use).
    stream: StreamId,
    /// Other streams it was used on.
    stream_uses: Vec<StreamId>,
    awaiting: bool,
    event_count: usize,
}

/// Size class of a power-of-two size.
fn class(size: usize) -> usize {
    // ilog2 of a usize is below usize::BITS: the conversion is exact.
    size.ilog2() as usize
}

impl<E> HostCache<E> {
    fn new() -> Self {
        Self {
            free_lists: (0..SIZE_CLASSES).map(|_| Vec::new()).collect(),
            live: AddrMap::default(),
            events: StreamEvents::new(),
            stats: AllocatorStats::default(),
            scratch: Vec::new(),
            error: None,
        }
    }

    fn process_events<S: MemorySource<Event = E>>(&mut self, source: &S) -> Result<(), AllocError> {
        if self.events.is_empty() {
            return Ok(());
        }
        let mut done = std::mem::take(&mut self.scratch);
        let polled = self.events.poll(source, &mut done);
        self.finish_events(&mut done);
        self.scratch = done;
        polled.map_err(|e| source_failure(source, e))
    }

    fn finish_events(&mut self, done: &mut Vec<u64>) {
        for addr in done.drain(..) {
            if let Some(block) = self.live.get_mut(&addr) {
                block.event_count -= 1;
                if block.event_count == 0 {
                    self.cache_block(addr);
                }
            }
        }
    }

    fn cache_block(&mut self, addr: u64) {
        if let Some(block) = self.live.remove(&addr) {
            self.stats.active_bytes.decrease(block.size);
            self.stats.requested_bytes.decrease(block.requested);
            self.free_lists[class(block.size)].push(addr);
        }
    }

    /// Synchronizes, finishes every event and returns every cached block to the source.
    fn release_cached<S: MemorySource<Event = E>>(&mut self, source: &S) -> Result<(), AllocError> {
        source
            .synchronize()
            .map_err(|e| source_failure(source, e))?;
        let mut done = std::mem::take(&mut self.scratch);
        self.events.drain(&mut done);
        self.finish_events(&mut done);
        self.scratch = done;
        for (log2, list) in self.free_lists.iter_mut().enumerate() {
            let size = 1usize << log2;
            while let Some(&addr) = list.last() {
                // SAFETY: `addr` is a cached block of size class `log2`: it was allocated
                // from `source.allocate(size)` with exactly this power-of-two size, no user
                // holds it and no event guards it. We synchronized above, so no queued work
                // uses it. It leaves the free list right after, so it is freed once.
                unsafe { source.free(addr, size) }.map_err(|e| source_failure(source, e))?;
                list.pop();
                self.stats.segments.decrease(1);
                self.stats.reserved_bytes.decrease(size);
                self.stats.num_segment_frees += 1;
            }
        }
        Ok(())
    }

    fn lookup(&mut self, block: &Block) -> Result<&mut HostBlock, AllocError> {
        match self.live.get_mut(&block.addr) {
            Some(b) if !b.awaiting && b.size == block.size && b.stream == block.stream => Ok(b),
            _ => Err(AllocError::UnknownBlock { addr: block.addr }),
        }
    }
}

impl<S: MemorySource> CachingHostAllocator<S> {
    /// An allocator over `source`.
    pub fn new(source: S) -> Self {
        Self {
            source,
            state: Mutex::new(HostCache::new()),
        }
    }

    /// The memory source.
    pub fn source(&self) -> &S {
        &self.source
    }

    /// Every block (one segment each), in address order.
    pub fn snapshot(&self) -> Vec<SegmentSnapshot> {
        let st = lock(&self.state);
        let single = |addr, size, requested, stream, state| SegmentSnapshot {
            addr,
            size,
            stream,
            pool: SegmentPool::Single,
            blocks: vec![BlockSnapshot {
                addr,
                size,
                requested,
                stream,
                state,
            }],
        };
        let mut segments: Vec<SegmentSnapshot> = st
            .live
            .iter()
            .map(|(&addr, b)| {
                let state = if b.awaiting {
                    BlockState::AwaitingEvents
                } else {
                    BlockState::Allocated
                };
                single(addr, b.size, b.requested, b.stream, state)
            })
            .chain(st.free_lists.iter().enumerate().flat_map(|(log2, list)| {
                list.iter().map(move |&addr| {
                    single(addr, 1 << log2, 0, StreamId::default(), BlockState::Free)
                })
            }))
            .collect();
        segments.sort_by_key(|s| s.addr);
        segments
    }

    /// Returns blocks whose events have completed to the free lists now.
    pub fn process_events(&self) -> Result<(), AllocError> {
        lock(&self.state).process_events(&self.source)
    }
}

impl<S: MemorySource> DeviceAllocator for CachingHostAllocator<S> {
    fn name(&self) -> &'static str {
        "caching-host"
    }

    /// A block of `bytes` rounded up to a power of two, usable on any stream once
    /// `record_stream` announces it; `stream` is recorded as its first use.
    fn allocate(&self, bytes: usize, stream: StreamId) -> Result<Block, AllocError> {
        if bytes == 0 {
            return Ok(Block {
                addr: 0,
                size: 0,
                requested: 0,
                stream,
            });
        }
        let size = bytes
            .checked_next_power_of_two()
            .ok_or(AllocError::SizeOverflow { requested: bytes })?;
        let mut st = lock(&self.state);
        st.process_events(&self.source)?;
        let addr = match st.free_lists[class(size)].pop() {
            Some(addr) => addr,
            None => {
                let addr = match self.source.allocate(size) {
                    Ok(addr) => addr,
                    Err(SourceError::OutOfMemory) => {
                        st.stats.num_alloc_retries += 1;
                        st.release_cached(&self.source)?;
                        match self.source.allocate(size) {
                            Ok(addr) => addr,
                            Err(SourceError::OutOfMemory) => {
                                st.stats.num_ooms += 1;
                                return Err(out_of_memory(&self.source, bytes, &st.stats));
                            }
                            Err(e) => return Err(source_failure(&self.source, e)),
                        }
                    }
                    Err(e) => return Err(source_failure(&self.source, e)),
                };
                st.stats.segments.increase(1);
                st.stats.reserved_bytes.increase(size);
                addr
            }
        };
        st.live.insert(
            addr,
            HostBlock {
                size,
                requested: bytes,
                stream,
                stream_uses: Vec::new(),
                awaiting: false,
                event_count: 0,
            },
        );
        let stats = &mut st.stats;
        stats.num_allocs += 1;
        stats.allocations.increase(1);
        stats.allocated_bytes.increase(size);
        stats.active_bytes.increase(size);
        stats.requested_bytes.increase(bytes);
        Ok(Block {
            addr,
            size,
            requested: bytes,
            stream,
        })
    }

    /// Returns `block` to its free list once events recorded now on its allocation stream
    /// and on every stream passed to `record_stream` have completed. If an event cannot be
    /// recorded the allocator synchronizes instead and reports the failure; the block is
    /// still taken back (and leaked, never reused, if even synchronizing fails).
    fn free(&self, block: Block) -> Result<(), AllocError> {
        if block.size == 0 {
            return Ok(());
        }
        let mut guard = lock(&self.state);
        let st = &mut *guard;
        let host_block = st.lookup(&block)?;
        host_block.awaiting = true;
        let uses = std::mem::take(&mut host_block.stream_uses);
        st.stats.allocations.decrease(1);
        st.stats.allocated_bytes.decrease(block.size);
        let mut recorded = 0;
        let mut failure = None;
        for stream in std::iter::once(block.stream).chain(uses) {
            match self.source.record_event(stream) {
                Ok(event) => {
                    st.events.push(stream, event, block.addr);
                    recorded += 1;
                }
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        if let Some(b) = st.live.get_mut(&block.addr) {
            b.event_count = recorded;
        }
        let Some(error) = failure else {
            return Ok(());
        };
        if self.source.synchronize().is_ok() {
            if recorded == 0 {
                st.cache_block(block.addr);
            }
            let mut done = std::mem::take(&mut st.scratch);
            st.events.drain(&mut done);
            st.finish_events(&mut done);
            st.scratch = done;
        } else if let Some(b) = st.live.get_mut(&block.addr) {
            // A phantom event that never completes: the block is leaked, not reused.
            b.event_count += 1;
        }
        Err(source_failure(&self.source, error))
    }

    fn free_direct(&self, block: Block) -> Result<(), AllocError> {
        if block.size == 0 {
            return Ok(());
        }
        let mut st = lock(&self.state);
        st.lookup(&block)?;
        self.source
            .synchronize()
            .map_err(|e| source_failure(&self.source, e))?;
        // SAFETY: `lookup` found `block` handed out under this address and power-of-two
        // size, which is how it was allocated from the source; the user gives it up here
        // and we synchronized, so no queued work uses it. It leaves `live` right after, so
        // it is freed once.
        unsafe { self.source.free(block.addr, block.size) }
            .map_err(|e| source_failure(&self.source, e))?;
        if let Some(b) = st.live.remove(&block.addr) {
            let stats = &mut st.stats;
            stats.allocations.decrease(1);
            stats.allocated_bytes.decrease(b.size);
            stats.active_bytes.decrease(b.size);
            stats.requested_bytes.decrease(b.requested);
            stats.segments.decrease(1);
            stats.reserved_bytes.decrease(b.size);
            stats.num_segment_frees += 1;
        }
        Ok(())
    }

    fn record_stream(&self, block: &Block, stream: StreamId) -> Result<(), AllocError> {
        if block.size == 0 {
            return Ok(());
        }
        let mut st = lock(&self.state);
        let host_block = st.lookup(block)?;
        if stream != host_block.stream && !host_block.stream_uses.contains(&stream) {
            host_block.stream_uses.push(stream);
        }
        Ok(())
    }

    fn empty_cache(&self) -> Result<(), AllocError> {
        lock(&self.state).release_cached(&self.source)
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

impl<S: MemorySource> Drop for CachingHostAllocator<S> {
    fn drop(&mut self) {
        // Blocks still handed out stay with the source; a failure has nowhere to go.
        let _ = get_mut(&mut self.state).release_cached(&self.source);
    }
}
