//! The state of an allocator whose blocks are whole source regions, never split or merged:
//! the pooled allocator (MXNet) and the caching host allocator (PyTorch). Both keep freed
//! regions in lists by size and differ only in how those lists are keyed ([`FreeRegions`]),
//! in how requests are rounded and in when they ask the source for more.

use super::addr_map::AddrMap;
use super::allocator::Block;
use super::bookkeeping::{Books, Guarded};
use super::events::{add_stream_use, EventGuarded, StreamEvents};
use super::failure::{out_of_memory, source_failure, try_allocate};
use super::snapshot::{BlockSnapshot, BlockState, SegmentPool, SegmentSnapshot};
use super::source::{MemorySource, StreamId};
use super::stats::AllocatorStats;
use crate::error::{AllocError, OomHint};

/// Where cached regions wait for reuse.
pub(crate) trait FreeRegions: Default {
    /// Whether the stream a region was allocated on needs an event at its free, like the
    /// streams passed to `record_stream`: true when cached regions are reused without
    /// stream order (by another stream, or by the CPU at once).
    const OWN_STREAM_NEEDS_EVENT: bool;

    /// A cached region of `size` bytes for a request on `stream`, taken out of the cache.
    fn take(&mut self, stream: StreamId, size: usize) -> Option<u64>;

    /// Caches region `addr` of `size` bytes, allocated on `stream`.
    fn put(&mut self, stream: StreamId, size: usize, addr: u64);

    /// Every list of cached regions, with the size of its regions.
    fn lists_mut(&mut self) -> impl Iterator<Item = (usize, &mut Vec<u64>)>;

    /// Every cached region as `(address, size, stream it serves)`.
    fn cached(&self) -> impl Iterator<Item = (u64, usize, StreamId)>;

    /// Forgets lists that releasing emptied.
    fn prune(&mut self) {}
}

/// A region handed out, or freed and awaiting events.
struct Region {
    size: usize,
    requested: usize,
    stream: StreamId,
    /// Other streams it was used on, each once.
    stream_uses: Vec<StreamId>,
    /// Freed by its user, waiting for `event_count` events.
    awaiting: bool,
    event_count: usize,
}

/// Everything behind the allocator's mutex.
///
/// Invariants:
/// - Every region held from the source is in exactly one place: `live` (handed out or
///   awaiting events) or `free`, under the size it was allocated with.
/// - A region awaiting events has `event_count > 0` queued events naming its address (or
///   is leaked after a failed event record and synchronize).
/// - `stats` current values equal a recount over `live` and `free`.
pub(crate) struct RegionCache<E, F> {
    free: F,
    live: AddrMap<u64, Region>,
    events: StreamEvents<E, u64>,
    pub(crate) stats: AllocatorStats,
    /// First error recorded by `record_err`.
    pub(crate) error: Option<AllocError>,
}

/// The live, handed-out region `block` names.
#[inline]
fn lookup<'a>(
    live: &'a mut AddrMap<u64, Region>,
    block: &Block,
) -> Result<&'a mut Region, AllocError> {
    match live.get_mut(&block.addr()) {
        Some(r) if !r.awaiting && r.size == block.size() && r.stream == block.stream() => Ok(r),
        _ => Err(AllocError::UnknownBlock { addr: block.addr() }),
    }
}

impl<E, F: FreeRegions> RegionCache<E, F> {
    /// Nothing held.
    pub(crate) fn new() -> Self {
        Self {
            free: F::default(),
            live: AddrMap::default(),
            events: StreamEvents::new(),
            stats: AllocatorStats::default(),
            error: None,
        }
    }

    /// Hands out a region of `size` bytes (a request of `requested`) for `stream`: a cached
    /// one if its events are done, else one from `new_region`.
    #[inline]
    pub(crate) fn allocate<S: MemorySource<Event = E>>(
        &mut self,
        source: &S,
        size: usize,
        requested: usize,
        stream: StreamId,
        new_region: impl FnOnce(&mut Self) -> Result<u64, AllocError>,
    ) -> Result<Block, AllocError> {
        self.process_events(source)?;
        let addr = match self.free.take(stream, size) {
            Some(addr) => addr,
            None => {
                let addr = new_region(self)?;
                self.stats.segment_added(size);
                addr
            }
        };
        self.live.insert(
            addr,
            Region {
                size,
                requested,
                stream,
                stream_uses: Vec::new(),
                awaiting: false,
                event_count: 0,
            },
        );
        self.stats.block_handed_out(size, requested);
        Ok(Block::new(addr, size, requested, stream))
    }

    /// A new region of `size` bytes from `source`; if it is out of memory, returns every
    /// cached region and retries once (counted in `num_alloc_retries`), then fails with
    /// out-of-memory for the request of `requested` bytes (with the hints among `knobs` that
    /// apply).
    pub(crate) fn allocate_region<S: MemorySource<Event = E>>(
        &mut self,
        source: &S,
        size: usize,
        requested: usize,
        knobs: &[OomHint],
    ) -> Result<u64, AllocError> {
        if let Some(addr) = try_allocate(source, size)? {
            return Ok(addr);
        }
        self.stats.num_alloc_retries += 1;
        self.release_cached(source)?;
        try_allocate(source, size)?
            .ok_or_else(|| out_of_memory(source, requested, &mut self.stats, knobs))
    }

    /// Takes `block` back: into the cache once events recorded now on the streams that used
    /// it complete (at once if there are none). If an event cannot be recorded the source
    /// is synchronized instead and the failure reported; the region is still taken back
    /// (and leaked, never reused, if even synchronizing fails).
    #[inline]
    pub(crate) fn free<S: MemorySource<Event = E>>(
        &mut self,
        source: &S,
        block: &Block,
    ) -> Result<(), AllocError> {
        let region = lookup(&mut self.live, block)?;
        region.awaiting = true;
        self.stats.block_given_back(region.size);
        let own = F::OWN_STREAM_NEEDS_EVENT.then_some(region.stream);
        let recorded = self
            .events
            .record(source, own, &mut region.stream_uses, block.addr());
        self.hold_until_events(source, block.addr(), recorded)
    }

    /// Returns `block` straight to the source, after synchronizing it.
    pub(crate) fn free_direct<S: MemorySource<Event = E>>(
        &mut self,
        source: &S,
        block: &Block,
    ) -> Result<(), AllocError> {
        lookup(&mut self.live, block)?;
        let (addr, size) = (block.addr(), block.size());
        source
            .synchronize()
            .map_err(|e| source_failure(source, e))?;
        // SAFETY: `lookup` found `block` handed out under this address and size, which is
        // how the region was allocated from the source; the user gives it up here and we
        // synchronized, so no queued work on any stream still uses it. It leaves `live`
        // right after, so it is freed once.
        unsafe { source.free(addr, size) }.map_err(|e| source_failure(source, e))?;
        if let Some(region) = self.live.remove(&addr) {
            self.stats.block_given_back(region.size);
            self.stats.block_inactive(region.size, region.requested);
            self.stats.segment_released(region.size);
        }
        Ok(())
    }

    /// Notes that `block` is used on `stream` too.
    pub(crate) fn record_stream(
        &mut self,
        block: &Block,
        stream: StreamId,
    ) -> Result<(), AllocError> {
        let region = lookup(&mut self.live, block)?;
        add_stream_use(&mut region.stream_uses, region.stream, stream);
        Ok(())
    }

    /// Synchronizes, finishes every event and returns every cached region to the source
    /// (MXNet's `ReleaseAll`); stops at the first failure.
    pub(crate) fn release_cached<S: MemorySource<Event = E>>(
        &mut self,
        source: &S,
    ) -> Result<(), AllocError> {
        self.synchronize_and_drain(source)?;
        for (size, list) in self.free.lists_mut() {
            while let Some(&addr) = list.last() {
                // SAFETY: `addr` is a cached region: the allocator got it from
                // `source.allocate(size)` (cached regions are listed under their allocated
                // size), no user holds it, and no event guards it. We synchronized above,
                // so no queued work still uses it. It leaves the list right after, so it is
                // freed once.
                unsafe { source.free(addr, size) }.map_err(|e| source_failure(source, e))?;
                list.pop();
                self.stats.segment_released(size);
            }
        }
        self.free.prune();
        Ok(())
    }
}

impl<S: MemorySource, F: FreeRegions> Books<S> for RegionCache<S::Event, F> {
    fn stats_mut(&mut self) -> &mut AllocatorStats {
        &mut self.stats
    }

    fn error_mut(&mut self) -> &mut Option<AllocError> {
        &mut self.error
    }

    /// Every region (one segment of one block each), in address order.
    fn snapshot(&self) -> Vec<SegmentSnapshot> {
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
        let mut segments: Vec<SegmentSnapshot> = self
            .live
            .iter()
            .map(|(&addr, r)| {
                let state = if r.awaiting {
                    BlockState::AwaitingEvents
                } else {
                    BlockState::Allocated
                };
                single(addr, r.size, r.requested, r.stream, state)
            })
            .chain(
                self.free
                    .cached()
                    .map(|(addr, size, stream)| single(addr, size, 0, stream, BlockState::Free)),
            )
            .collect();
        segments.sort_by_key(|s| s.addr);
        segments
    }

    fn release_cached(&mut self, source: &S) -> Result<(), AllocError> {
        RegionCache::release_cached(self, source)
    }
}

/// The verbs of the two region allocators, each one critical section under the lock.
/// Empty blocks name no memory: giving one back or announcing its use does nothing.
impl<S: MemorySource, F: FreeRegions> Guarded<S, RegionCache<S::Event, F>> {
    /// Hands out a region of `size` bytes for a request of `requested` on `stream`
    /// ([`RegionCache::allocate`]), asking `new_region` on a cache miss.
    #[inline]
    pub(crate) fn allocate(
        &self,
        size: usize,
        requested: usize,
        stream: StreamId,
        new_region: impl FnOnce(&mut RegionCache<S::Event, F>) -> Result<u64, AllocError>,
    ) -> Result<Block, AllocError> {
        self.lock()
            .allocate(&self.source, size, requested, stream, new_region)
    }

    /// Takes `block` back into the cache ([`RegionCache::free`]).
    pub(crate) fn free(&self, block: &Block) -> Result<(), AllocError> {
        if block.size() == 0 {
            return Ok(());
        }
        self.lock().free(&self.source, block)
    }

    /// Returns `block` straight to the source ([`RegionCache::free_direct`]).
    pub(crate) fn free_direct(&self, block: &Block) -> Result<(), AllocError> {
        if block.size() == 0 {
            return Ok(());
        }
        self.lock().free_direct(&self.source, block)
    }

    /// Notes that `block` is used on `stream` too ([`RegionCache::record_stream`]).
    pub(crate) fn record_stream(&self, block: &Block, stream: StreamId) -> Result<(), AllocError> {
        if block.size() == 0 {
            return Ok(());
        }
        self.lock().record_stream(block, stream)
    }
}

impl<E, F: FreeRegions> EventGuarded<E> for RegionCache<E, F> {
    type Key = u64;

    #[inline]
    fn events_mut(&mut self) -> &mut StreamEvents<E, u64> {
        &mut self.events
    }

    #[inline]
    fn event_count_mut(&mut self, addr: u64) -> Option<&mut usize> {
        self.live.get_mut(&addr).map(|r| &mut r.event_count)
    }

    #[inline]
    fn reuse(&mut self, addr: u64) {
        if let Some(region) = self.live.remove(&addr) {
            self.stats.block_inactive(region.size, region.requested);
            self.free.put(region.stream, region.size, addr);
        }
    }
}
