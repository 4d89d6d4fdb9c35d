//! [`PooledAllocator`]: MXNet's GPU pooled storage managers over any [`MemorySource`].
//!
//! Requests are rounded ([`PoolRounding`]) and each rounded size is a bucket: a list of
//! cached regions of exactly that size. `allocate` pops a region from its bucket or gets a
//! new one from the source; `free` pushes it back; `free_direct` returns it to the source;
//! `empty_cache` (MXNet's `ReleaseAll`) returns every cached region. Regions are never split
//! or merged, so a cached region only serves requests that round to its size.
//!
//! Beyond MXNet: buckets are per stream, and `record_stream` is honoured the same way as in
//! the caching allocator (a region used on other streams returns to its bucket after events
//! on them complete). MXNet ran one stream per device and needed neither.

mod config;

use std::sync::Mutex;

pub use config::{PoolRounding, PooledConfig};

use super::addr_map::AddrMap;
use super::allocator::{AllocatorStats, Block, DeviceAllocator};
use super::events::StreamEvents;
use super::failure::{out_of_memory, source_failure};
use super::locking::{get_mut, lock};
use super::snapshot::{BlockSnapshot, BlockState, SegmentPool, SegmentSnapshot};
use super::source::{MemorySource, SourceError, StreamId};
use crate::error::AllocError;

/// MXNet's `GPUPooledStorageManager` / `GPUPooledRoundedStorageManager`, generic over the
/// memory source.
///
/// **Reserve.** A share of the source's total memory (`reserve_percent`, MXNet's
/// `MXNET_GPU_MEM_POOL_RESERVE`, default 5%) is left for others (kernel launches, library
/// workspaces): when a new region would eat into it, the allocator first returns every
/// cached region to the source (as MXNet does), and if the region still does not fit above
/// the reserve, the request fails with [`AllocError::OutOfMemory`] (MXNet would go on and
/// allocate into the reserve). Needs a source that reports `mem_info`; without it there is
/// no reserve. The error's `free` is the source's free memory, reserve included.
///
/// **Out of memory.** If the source refuses, every cached region is returned and the
/// request retried once (counted in `num_alloc_retries`); a second refusal is an
/// [`AllocError::OutOfMemory`] (counted in `num_ooms`).
///
/// Invariants:
/// - Every region held from the source is in exactly one place: `live` (handed out, or
///   awaiting events) or one bucket of `pool` (cached), under its stream and rounded size.
/// - A region awaiting events has `event_count > 0` queued events naming it.
/// - `stats` current values equal a recount over `live` and `pool`.
pub struct PooledAllocator<S: MemorySource> {
    source: S,
    config: PooledConfig,
    state: Mutex<PoolState<S::Event>>,
}

struct PoolState<E> {
    /// Cached regions by (stream, rounded size).
    pool: AddrMap<(StreamId, usize), Vec<u64>>,
    /// Regions handed out or awaiting events, by address.
    live: AddrMap<u64, Region>,
    events: StreamEvents<E, u64>,
    stats: AllocatorStats,
    /// Reused buffer for addresses whose events completed.
    scratch: Vec<u64>,
    error: Option<AllocError>,
}

struct Region {
    size: usize,
    requested: usize,
    stream: StreamId,
    /// Events still to complete; 0 while handed out.
    event_count: usize,
    awaiting: bool,
    /// Other streams it was used on.
    stream_uses: Vec<StreamId>,
}

impl<S: MemorySource> PooledAllocator<S> {
    /// An allocator over `source` with MXNet's defaults (4 KiB pages, 5% reserve).
    pub fn new(source: S) -> Self {
        Self::with_config(source, PooledConfig::default())
    }

    /// An allocator over `source` with the settings in [`PooledConfig::ENV_VAR`].
    pub fn from_env(source: S) -> Result<Self, AllocError> {
        Ok(Self::with_config(source, PooledConfig::from_env()?))
    }

    /// An allocator over `source` with `config`.
    pub fn with_config(source: S, config: PooledConfig) -> Self {
        Self {
            source,
            config,
            state: Mutex::new(PoolState::new()),
        }
    }

    /// The settings.
    pub fn config(&self) -> &PooledConfig {
        &self.config
    }

    /// The memory source.
    pub fn source(&self) -> &S {
        &self.source
    }

    /// Every region (one segment of one block each), in address order.
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
            .map(|(&addr, r)| {
                let state = if r.awaiting {
                    BlockState::AwaitingEvents
                } else {
                    BlockState::Allocated
                };
                single(addr, r.size, r.requested, r.stream, state)
            })
            .chain(st.pool.iter().flat_map(|(&(stream, size), addrs)| {
                addrs
                    .iter()
                    .map(move |&addr| single(addr, size, 0, stream, BlockState::Free))
            }))
            .collect();
        segments.sort_by_key(|s| s.addr);
        segments
    }

    /// Returns regions whose stream events have completed to their buckets now, rather
    /// than at the next allocation.
    pub fn process_events(&self) -> Result<(), AllocError> {
        lock(&self.state).process_events(&self.source)
    }

    /// Whether a new region of `size` bytes leaves the reserve untouched.
    fn fits_above_reserve(&self, size: usize) -> bool {
        let percent = self.config.reserve_percent();
        match self.source.mem_info() {
            Some((free, total)) if percent > 0 => {
                // In u128 so `total * percent` cannot overflow; the result is below `total`.
                let reserve =
                    (u128::from(crate::storage::to_u64(total)) * percent as u128 / 100) as usize;
                free > reserve && size <= free - reserve
            }
            _ => true,
        }
    }

    /// A new region of `size` bytes, with MXNet's recovery steps.
    fn new_region(
        &self,
        st: &mut PoolState<S::Event>,
        size: usize,
        requested: usize,
    ) -> Result<u64, AllocError> {
        if !self.fits_above_reserve(size) {
            if st.stats.cached_bytes() > 0 {
                st.stats.num_alloc_retries += 1;
                st.release_all(&self.source)?;
            }
            if !self.fits_above_reserve(size) {
                st.stats.num_ooms += 1;
                return Err(out_of_memory(&self.source, requested, &st.stats));
            }
        }
        match self.source.allocate(size) {
            Ok(addr) => return Ok(addr),
            Err(SourceError::OutOfMemory) => {}
            Err(e) => return Err(source_failure(&self.source, e)),
        }
        st.stats.num_alloc_retries += 1;
        st.release_all(&self.source)?;
        match self.source.allocate(size) {
            Ok(addr) => Ok(addr),
            Err(SourceError::OutOfMemory) => {
                st.stats.num_ooms += 1;
                Err(out_of_memory(&self.source, requested, &st.stats))
            }
            Err(e) => Err(source_failure(&self.source, e)),
        }
    }

    /// The live, handed-out region `block` names.
    fn lookup<'a>(
        st: &'a mut PoolState<S::Event>,
        block: &Block,
    ) -> Result<&'a mut Region, AllocError> {
        match st.live.get_mut(&block.addr) {
            Some(r) if !r.awaiting && r.size == block.size && r.stream == block.stream => Ok(r),
            _ => Err(AllocError::UnknownBlock { addr: block.addr }),
        }
    }
}

impl<E> PoolState<E> {
    fn new() -> Self {
        Self {
            pool: AddrMap::default(),
            live: AddrMap::default(),
            events: StreamEvents::new(),
            stats: AllocatorStats::default(),
            scratch: Vec::new(),
            error: None,
        }
    }

    /// MXNet's `ReleaseAll`: synchronize, finish all events, return every cached region.
    fn release_all<S: MemorySource<Event = E>>(&mut self, source: &S) -> Result<(), AllocError> {
        source
            .synchronize()
            .map_err(|e| source_failure(source, e))?;
        let mut done = std::mem::take(&mut self.scratch);
        self.events.drain(&mut done);
        self.finish_events(&mut done);
        self.scratch = done;
        for (&(_, size), addrs) in self.pool.iter_mut() {
            while let Some(&addr) = addrs.last() {
                // SAFETY: `addr` is a cached region: the allocator got it from
                // `source.allocate(size)` (buckets hold regions under their allocated size),
                // no user holds it, and no event guards it. We synchronized above, so no
                // queued work still uses it. It leaves the bucket right after, so it is
                // freed once.
                unsafe { source.free(addr, size) }.map_err(|e| source_failure(source, e))?;
                addrs.pop();
                self.stats.segments.decrease(1);
                self.stats.reserved_bytes.decrease(size);
                self.stats.num_segment_frees += 1;
            }
        }
        self.pool.retain(|_, addrs| !addrs.is_empty());
        Ok(())
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
            if let Some(region) = self.live.get_mut(&addr) {
                region.event_count -= 1;
                if region.event_count == 0 {
                    self.cache_region(addr);
                }
            }
        }
    }

    /// Moves live region `addr` (freed, no events outstanding) into its bucket.
    fn cache_region(&mut self, addr: u64) {
        if let Some(region) = self.live.remove(&addr) {
            self.stats.active_bytes.decrease(region.size);
            self.stats.requested_bytes.decrease(region.requested);
            self.pool
                .entry((region.stream, region.size))
                .or_default()
                .push(addr);
        }
    }
}

impl<S: MemorySource> DeviceAllocator for PooledAllocator<S> {
    fn name(&self) -> &'static str {
        "pooled"
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
        let size = self.config.rounding().round(bytes)?;
        let mut st = lock(&self.state);
        st.process_events(&self.source)?;
        let cached = st.pool.get_mut(&(stream, size)).and_then(Vec::pop);
        let addr = match cached {
            Some(addr) => addr,
            None => {
                let addr = self.new_region(&mut st, size, bytes)?;
                st.stats.segments.increase(1);
                st.stats.reserved_bytes.increase(size);
                addr
            }
        };
        st.live.insert(
            addr,
            Region {
                size,
                requested: bytes,
                stream,
                event_count: 0,
                awaiting: false,
                stream_uses: Vec::new(),
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

    /// Returns `block` to its bucket; if it was used on other streams, once events recorded
    /// now on each of them complete. If an event cannot be recorded the allocator
    /// synchronizes instead and reports the failure; the region is still taken back (and
    /// leaked, never reused, if even synchronizing fails).
    fn free(&self, block: Block) -> Result<(), AllocError> {
        if block.size == 0 {
            return Ok(());
        }
        let mut guard = lock(&self.state);
        let st = &mut *guard;
        let region = Self::lookup(st, &block)?;
        region.awaiting = true;
        let uses = std::mem::take(&mut region.stream_uses);
        st.stats.allocations.decrease(1);
        st.stats.allocated_bytes.decrease(block.size);
        if uses.is_empty() {
            st.cache_region(block.addr);
            return Ok(());
        }
        let mut recorded = 0;
        let mut failure = None;
        for &stream in &uses {
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
        if let Some(region) = st.live.get_mut(&block.addr) {
            region.event_count = recorded;
        }
        let Some(error) = failure else {
            return Ok(());
        };
        if self.source.synchronize().is_ok() {
            if recorded == 0 {
                st.cache_region(block.addr);
            }
            let mut done = std::mem::take(&mut st.scratch);
            st.events.drain(&mut done);
            st.finish_events(&mut done);
            st.scratch = done;
        } else if let Some(region) = st.live.get_mut(&block.addr) {
            // A phantom event that never completes: the region is leaked, not reused.
            region.event_count += 1;
        }
        Err(source_failure(&self.source, error))
    }

    fn free_direct(&self, block: Block) -> Result<(), AllocError> {
        if block.size == 0 {
            return Ok(());
        }
        let mut st = lock(&self.state);
        Self::lookup(&mut st, &block)?;
        self.source
            .synchronize()
            .map_err(|e| source_failure(&self.source, e))?;
        // SAFETY: `lookup` found `block` handed out under this address and size, which is
        // how the region was allocated from the source; the user gives it up here and we
        // synchronized, so no queued work on any stream still uses it. It leaves `live`
        // right after, so it is freed once.
        unsafe { self.source.free(block.addr, block.size) }
            .map_err(|e| source_failure(&self.source, e))?;
        if let Some(region) = st.live.remove(&block.addr) {
            let stats = &mut st.stats;
            stats.allocations.decrease(1);
            stats.allocated_bytes.decrease(region.size);
            stats.active_bytes.decrease(region.size);
            stats.requested_bytes.decrease(region.requested);
            stats.segments.decrease(1);
            stats.reserved_bytes.decrease(region.size);
            stats.num_segment_frees += 1;
        }
        Ok(())
    }

    fn record_stream(&self, block: &Block, stream: StreamId) -> Result<(), AllocError> {
        if block.size == 0 {
            return Ok(());
        }
        let mut st = lock(&self.state);
        let region = Self::lookup(&mut st, block)?;
        if stream != region.stream && !region.stream_uses.contains(&stream) {
            region.stream_uses.push(stream);
        }
        Ok(())
    }

    fn empty_cache(&self) -> Result<(), AllocError> {
        lock(&self.state).release_all(&self.source)
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

impl<S: MemorySource> Drop for PooledAllocator<S> {
    fn drop(&mut self) {
        // Regions still handed out stay with the source (their owners hold raw addresses);
        // a failure here has nowhere to go.
        let _ = get_mut(&mut self.state).release_all(&self.source);
    }
}
