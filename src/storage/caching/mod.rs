//! [`CachingAllocator`]: PyTorch's `CUDACachingAllocator` algorithm over any
//! [`MemorySource`].
//!
//! How a request of `n` bytes on stream `s` is served:
//!
//! 1. Round `n` up to a multiple of 512 bytes ([`round_size`]; optionally to power-of-two
//!    divisions). Rounded sizes up to 1 MiB use the small pool, larger ones the large pool.
//! 2. Return blocks freed after `record_stream` whose events have completed to their pools.
//! 3. Best fit: the smallest cached block of stream `s` in that pool that is at least as
//!    large (one ordered lookup on (stream, size, address)). Blocks of other streams are
//!    never used, so reuse needs no synchronization: work on `s` is ordered.
//! 4. On a miss, get a segment from the source: 2 MiB for small requests, 20 MiB for
//!    requests under 10 MiB, else the request rounded up to 2 MiB ([`allocation_size`]).
//!    If the source is out of memory: free cached oversize segments and retry
//!    (`max_split_size` only), then synchronize, finish all events, free every cached
//!    whole segment and retry (counted in `num_alloc_retries`), then fail with
//!    [`AllocError::OutOfMemory`] (counted in `num_ooms`).
//! 5. Split the block if the remainder is worth keeping (small pool: at least 512 bytes;
//!    large pool: more than 1 MiB, and never for requests of `max_split_size` or more);
//!    the remainder goes back to the pool.
//!
//! Freeing merges the block with free neighbours in its segment; a block used on other
//! streams first waits for an event recorded on each of them. Segments go back to the
//! source only on `empty_cache`, `free_direct`, out-of-memory recovery, garbage collection
//! or drop, always after synchronizing the source.

mod arena;
mod config;
mod pool;
mod sizes;
mod state;

pub use config::CachingConfig;
pub use sizes::{
    allocation_size, is_small, round_size, LARGE_BUFFER, MIN_BLOCK_SIZE, MIN_LARGE_ALLOC,
    ROUNDUP_INTERVALS, ROUND_LARGE, SMALL_BUFFER, SMALL_SIZE,
};

use self::arena::BlockId;
use self::state::{Limits, State};
use super::allocator::{Block, DeviceAllocator};
use super::bookkeeping::{bookkeeping_methods, Books, Guarded};
use super::events::EventGuarded;
use super::failure::out_of_memory;
use super::history::record::{record, Recorder, TraceAction};
use super::history::{HistorySettings, MemoryHistory};
use super::host_source::HostMemorySource;
use super::snapshot::SegmentSnapshot;
use super::source::{MemorySource, StreamId};
use super::stats::AllocatorStats;
use crate::error::{AllocError, OomHint};

/// PyTorch's caching device allocator (the crate's default), generic over where memory
/// comes from.
///
/// One mutex guards all state, as in PyTorch (one per device): every operation is one
/// critical section, so no decision is made on state another thread may change before it
/// acts. Source calls happen under the lock.
///
/// Invariants (see the private `State` for the full list): every block lies in exactly
/// one segment and the blocks of a segment tile it; no two neighbouring blocks are both
/// free; blocks handed out never overlap; a block used on other streams returns to a pool
/// only after events recorded on those streams at its free have completed; statistics
/// equal a recount of the blocks ([`snapshot`](Self::snapshot)).
///
/// Dropping the allocator synchronizes and returns every cached whole segment. Segments
/// with blocks still handed out stay with the source: their owners hold raw addresses.
///
/// Every `Gpu` uses one over device memory unless told otherwise; over
/// [`HostMemorySource`] it runs anywhere:
///
/// ```
/// use typestate_tensor::storage::{
///     CachingAllocator, CachingConfig, DeviceAllocator, HostMemorySource, StreamId,
/// };
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let config: CachingConfig = "max_split_size_mb:64".parse()?; // PYTORCH_CUDA_ALLOC_CONF syntax
/// let alloc = CachingAllocator::with_config(HostMemorySource::new(256 << 20), config);
/// let a = alloc.allocate(300 << 10, StreamId(0))?; // a small block: one 2 MiB segment
/// let b = alloc.allocate(500 << 10, StreamId(0))?; // split from the same segment
/// assert_eq!(alloc.stats().segments.current, 1);
/// alloc.free(a)?;
/// alloc.free(b)?; // both back in the cache, merged: the segment stays reserved
/// assert_eq!(alloc.stats().allocated_bytes.current, 0);
/// assert_eq!(alloc.stats().reserved_bytes.current, 2 << 20);
/// alloc.empty_cache()?; // PyTorch's torch.cuda.empty_cache()
/// assert_eq!(alloc.stats().reserved_bytes.current, 0);
/// # Ok(())
/// # }
/// ```
pub struct CachingAllocator<S: MemorySource> {
    limits: Limits,
    inner: Guarded<S, State<S::Event>>,
}

impl<S: MemorySource> std::fmt::Debug for CachingAllocator<S> {
    /// The source, the settings and the current statistics (taking the allocator's lock
    /// briefly).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachingAllocator")
            .field("source", &self.inner.source.name())
            .field("config", self.config())
            .field("stats", &self.stats())
            .finish()
    }
}

impl<S: MemorySource> CachingAllocator<S> {
    /// An allocator over `source` with the default settings.
    pub fn new(source: S) -> Self {
        Self::with_config(source, CachingConfig::default())
    }

    /// An allocator over `source` with the settings in the environment variable
    /// [`CachingConfig::ENV_VAR`].
    pub fn from_env(source: S) -> Result<Self, AllocError> {
        Ok(Self::with_config(source, CachingConfig::from_env()?))
    }

    /// An allocator over `source` with `config`.
    pub fn with_config(source: S, config: CachingConfig) -> Self {
        let total = source.mem_info().map(|(_, total)| total);
        // Fractions of the total, truncated: a float-to-int `as` saturates and cannot wrap.
        let allowed_max = config
            .memory_fraction()
            .zip(total)
            .map(|(fraction, total)| (fraction * total as f64) as usize);
        let gc_threshold = config
            .garbage_collection_threshold()
            .zip(allowed_max.or(total))
            .map(|(threshold, max)| (threshold * max as f64) as usize);
        let mut state = State::new();
        state.recorder = config.history().map(|h| Box::new(Recorder::new(h)));
        Self {
            limits: Limits {
                config,
                allowed_max,
                gc_threshold,
            },
            inner: Guarded::new(source, state),
        }
    }

    /// The settings.
    pub fn config(&self) -> &CachingConfig {
        &self.limits.config
    }

    /// The memory source.
    pub fn source(&self) -> &S {
        &self.inner.source
    }

    /// Every segment with its blocks, in address order (PyTorch's `memory_snapshot`).
    pub fn snapshot(&self) -> Vec<SegmentSnapshot> {
        self.inner.snapshot()
    }

    /// Returns blocks whose stream events have completed to the pools now, rather than at
    /// the next allocation.
    pub fn process_events(&self) -> Result<(), AllocError> {
        self.inner.process_events()
    }

    /// Starts recording allocator events with `settings` (dropping any history recorded so
    /// far), or stops and forgets them with `None` (PyTorch's `_record_memory_history`).
    ///
    /// While off, recording costs one branch per event under the lock the operation holds
    /// anyway (see `docs/PERFORMANCE.md`).
    pub fn record_history(&self, settings: Option<HistorySettings>) {
        self.inner.lock().recorder = settings.map(|s| Box::new(Recorder::new(s)));
    }

    /// The segments and blocks now plus the recorded events (PyTorch's `_snapshot()`):
    /// what [`MemoryHistory::to_torch_pickle`] and the plots read. The events are empty
    /// when recording is off.
    pub fn history(&self) -> MemoryHistory {
        let st = self.inner.lock();
        MemoryHistory {
            allocator: self.name(),
            location: self.inner.location(),
            mem_info: self.inner.source.mem_info(),
            stats: st.stats.clone(),
            segments: st.snapshot(),
            events: st.recorder.as_ref().map_or_else(Vec::new, |r| r.events()),
            dropped_events: st.recorder.as_ref().map_or(0, |r| r.dropped()),
            settings: st.recorder.as_ref().map(|r| r.settings()),
        }
    }

    /// Zeroes the counters (`num_allocs`, `num_alloc_retries`, `num_ooms`,
    /// `num_segment_frees`), keeping current values and peaks.
    pub fn reset_accumulated_stats(&self) {
        self.inner.lock().stats.reset_counters();
    }

    /// A new segment for a request that missed the cache, with out-of-memory recovery.
    fn new_segment(
        &self,
        st: &mut State<S::Event>,
        small: bool,
        stream: StreamId,
        size: usize,
        requested: usize,
    ) -> Result<BlockId, AllocError> {
        let alloc_size = allocation_size(size)?;
        let source = &self.inner.source;
        let limits = &self.limits;
        if let Some(threshold) = limits.gc_threshold {
            st.garbage_collect(source, threshold)?;
        }
        if let Some(id) = st.alloc_block(source, limits, small, stream, alloc_size, false)? {
            return Ok(id);
        }
        // Stage 1: oversize cached segments are useless to smaller requests; free them.
        if st.release_available_cached_blocks(source, limits, small, stream, size)? {
            if let Some(id) = st.alloc_block(source, limits, small, stream, alloc_size, false)? {
                return Ok(id);
            }
        }
        // Stage 2: synchronize, finish all events, free every cached whole segment, retry.
        st.release_cached_blocks(source)?;
        if let Some(id) = st.alloc_block(source, limits, small, stream, alloc_size, true)? {
            return Ok(id);
        }
        let capped = limits
            .allowed_max
            .is_some_and(|max| st.stats.reserved_bytes.current.saturating_add(alloc_size) > max);
        let knobs: &[OomHint] = if capped {
            &[
                OomHint::MemoryFraction,
                OomHint::MaxSplitSize,
                OomHint::RoundupPower2Divisions,
            ]
        } else {
            &[OomHint::MaxSplitSize, OomHint::RoundupPower2Divisions]
        };
        let err = out_of_memory(source, requested, &mut st.stats, knobs);
        if let AllocError::OutOfMemory(oom) = &err {
            record(
                &mut st.recorder,
                TraceAction::Oom {
                    device_free: oom.free,
                },
                0,
                size,
                stream,
            );
        }
        Err(err)
    }
}

// SAFETY: every segment is a fresh region from the source, whose (unsafe) contract makes it
// live, non-null, disjoint from every other live region and of the kind `source.location()`
// reports. Blocks handed out are pieces of segments that never overlap (the blocks of a
// segment tile it, and a block is `Allocated` for one owner at a time), at least the
// rounded request in size. A free block is reused only on its own stream (where earlier
// work is ordered) or after events on every stream passed to `record_stream` completed, and
// segments go back to the source only after synchronizing it. `allocated` holds exactly the
// blocks handed out and not freed; `free`, `free_direct` and `record_stream` check address,
// size and stream against it before changing anything, so a foreign or already freed block
// is refused with no effect.
unsafe impl<S: MemorySource> DeviceAllocator for CachingAllocator<S> {
    fn name(&self) -> &'static str {
        "caching"
    }

    fn allocate(&self, bytes: usize, stream: StreamId) -> Result<Block, AllocError> {
        if bytes == 0 {
            return Ok(Block::empty(stream));
        }
        let size = round_size(bytes, self.limits.config.roundup_power2_divisions())?;
        let small = is_small(size);
        let mut st = self.inner.lock();
        st.process_events(&self.inner.source)?;
        let id = match st.get_free_block(&self.limits, small, stream, size) {
            Some(id) => id,
            None => self.new_segment(&mut st, small, stream, size, bytes)?,
        };
        let split = st.should_split(id, size, &self.limits);
        Ok(st.alloc_found_block(id, size, bytes, split))
    }

    /// Returns `block` to the cache. If it was used on other streams it stays out of the
    /// pool until events recorded now on each of them complete. If an event cannot be
    /// recorded the allocator synchronizes instead and reports the failure; the block is
    /// still taken back (and leaked, never reused, if even synchronizing fails).
    fn free(&self, block: Block) -> Result<(), AllocError> {
        if block.size() == 0 {
            return Ok(());
        }
        let source = &self.inner.source;
        self.inner.lock().free(source, &block).map(|_| ())
    }

    /// Returns `block` to the cache, then synchronizes and, if that leaves its whole
    /// segment free, returns the segment to the source. (A block is usually a piece of a
    /// segment, which can only go back whole.)
    fn free_direct(&self, block: Block) -> Result<(), AllocError> {
        if block.size() == 0 {
            return Ok(());
        }
        let source = &self.inner.source;
        let mut st = self.inner.lock();
        let id = st.free(source, &block)?;
        let (small, key) = st.segment_key(id);
        st.synchronize_and_drain(source)?;
        st.release_if_whole(source, small, &key)
    }

    fn record_stream(&self, block: &Block, stream: StreamId) -> Result<(), AllocError> {
        if block.size() == 0 {
            return Ok(());
        }
        self.inner.lock().record_stream(block, stream)
    }

    fn empty_cache(&self) -> Result<(), AllocError> {
        let mut st = self.inner.lock();
        let cached = st.stats.cached_bytes();
        record(
            &mut st.recorder,
            TraceAction::EmptyCache,
            0,
            cached,
            StreamId(0),
        );
        st.release_cached_blocks(&self.inner.source)
    }

    fn record_history(&self, settings: Option<HistorySettings>) -> bool {
        CachingAllocator::record_history(self, settings);
        true
    }

    fn history(&self) -> Option<MemoryHistory> {
        Some(CachingAllocator::history(self))
    }

    bookkeeping_methods!(inner);
}

impl<S: MemorySource> Books<S> for State<S::Event> {
    fn stats_mut(&mut self) -> &mut AllocatorStats {
        &mut self.stats
    }

    fn error_mut(&mut self) -> &mut Option<AllocError> {
        &mut self.error
    }

    fn snapshot(&self) -> Vec<SegmentSnapshot> {
        State::snapshot(self)
    }

    /// Synchronizes, finishes every event and returns every cached whole segment.
    fn release_cached(&mut self, source: &S) -> Result<(), AllocError> {
        self.release_cached_blocks(source)
    }
}

static_assertions::assert_impl_all!(CachingAllocator<HostMemorySource>: Send, Sync);
