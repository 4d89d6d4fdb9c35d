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

pub use config::{PoolRounding, PooledConfig};

use super::addr_map::AddrMap;
use super::allocator::{Block, DeviceAllocator};
use super::arith::to_u64;
use super::bookkeeping::{bookkeeping_methods, Guarded};
use super::failure::out_of_memory;
use super::host_source::HostMemorySource;
use super::regions::{FreeRegions, RegionCache};
use super::snapshot::SegmentSnapshot;
use super::source::{MemorySource, StreamId};
use crate::error::{AllocError, OomHint};

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
/// Invariants (besides those of the shared region cache): every cached region is in the
/// bucket of its stream and rounded size.
///
/// ```
/// use typestate_tensor::storage::{DeviceAllocator, HostMemorySource, PooledAllocator, StreamId};
///
/// # fn main() -> Result<(), typestate_tensor::error::AllocError> {
/// let pool = PooledAllocator::new(HostMemorySource::new(64 << 20)); // 4 KiB pages
/// let a = pool.allocate(3000, StreamId(0))?;
/// assert_eq!(a.size(), 4096);
/// let addr = a.addr();
/// pool.free(a)?;
/// let b = pool.allocate(4000, StreamId(0))?; // the same bucket: the cached region
/// assert_eq!(b.addr(), addr);
/// let c = pool.allocate(5000, StreamId(0))?; // another bucket: a new region
/// assert_eq!((c.size(), pool.stats().segments.current), (8192, 2));
/// # pool.free(b)?;
/// # pool.free(c)?;
/// # Ok(())
/// # }
/// ```
pub struct PooledAllocator<S: MemorySource> {
    config: PooledConfig,
    inner: Guarded<S, RegionCache<S::Event, Buckets>>,
}

/// Cached regions by (stream, rounded size): a region is reused only on its own stream,
/// where queued work is ordered.
#[derive(Default)]
struct Buckets(AddrMap<(StreamId, usize), Vec<u64>>);

impl FreeRegions for Buckets {
    const OWN_STREAM_NEEDS_EVENT: bool = false;

    #[inline]
    fn take(&mut self, stream: StreamId, size: usize) -> Option<u64> {
        self.0.get_mut(&(stream, size)).and_then(Vec::pop)
    }

    #[inline]
    fn put(&mut self, stream: StreamId, size: usize, addr: u64) {
        self.0.entry((stream, size)).or_default().push(addr);
    }

    fn lists_mut(&mut self) -> impl Iterator<Item = (usize, &mut Vec<u64>)> {
        self.0.iter_mut().map(|(&(_, size), list)| (size, list))
    }

    fn cached(&self) -> impl Iterator<Item = (u64, usize, StreamId)> {
        self.0
            .iter()
            .flat_map(|(&(stream, size), list)| list.iter().map(move |&addr| (addr, size, stream)))
    }

    fn prune(&mut self) {
        self.0.retain(|_, list| !list.is_empty());
    }
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
            config,
            inner: Guarded::new(source, RegionCache::new()),
        }
    }

    /// The settings.
    pub fn config(&self) -> &PooledConfig {
        &self.config
    }

    /// The memory source.
    pub fn source(&self) -> &S {
        &self.inner.source
    }

    /// Every region (one segment of one block each), in address order.
    pub fn snapshot(&self) -> Vec<SegmentSnapshot> {
        self.inner.snapshot()
    }

    /// Returns regions whose stream events have completed to their buckets now, rather
    /// than at the next allocation.
    pub fn process_events(&self) -> Result<(), AllocError> {
        self.inner.process_events()
    }

    /// Whether a new region of `size` bytes leaves the reserve untouched.
    fn fits_above_reserve(&self, size: usize) -> bool {
        let percent = self.config.reserve_percent();
        match self.inner.source.mem_info() {
            Some((free, total)) if percent > 0 => {
                // In u128 so `total * percent` cannot overflow; the result is below `total`.
                let reserve = (u128::from(to_u64(total)) * percent as u128 / 100) as usize;
                free > reserve && size <= free - reserve
            }
            _ => true,
        }
    }

    /// A new region of `size` bytes, with MXNet's recovery steps.
    fn new_region(
        &self,
        st: &mut RegionCache<S::Event, Buckets>,
        size: usize,
        requested: usize,
    ) -> Result<u64, AllocError> {
        if !self.fits_above_reserve(size) {
            if st.stats.cached_bytes() > 0 {
                st.stats.num_alloc_retries += 1;
                st.release_cached(&self.inner.source)?;
            }
            if !self.fits_above_reserve(size) {
                return Err(out_of_memory(
                    &self.inner.source,
                    requested,
                    &mut st.stats,
                    &[OomHint::UseCachingAllocator],
                ));
            }
        }
        st.allocate_region(
            &self.inner.source,
            size,
            requested,
            &[OomHint::UseCachingAllocator],
        )
    }
}

// SAFETY: every block is one whole region from the source, whose (unsafe) contract makes it
// live, non-null, disjoint from every other live region and of the kind `source.location()`
// reports, at least the rounded request in size (a region is cached and reused only under
// the size it was allocated with). A cached region serves only its own stream, where
// earlier work is ordered, and regions used on other streams return to a bucket only after
// events on those streams complete; regions go back to the source only after synchronizing
// it. The shared region cache records every block handed out and not freed; `free`,
// `free_direct` and `record_stream` check address, size and stream against it before
// changing anything, so a foreign or already freed block is refused with no effect.
unsafe impl<S: MemorySource> DeviceAllocator for PooledAllocator<S> {
    fn name(&self) -> &'static str {
        "pooled"
    }

    fn allocate(&self, bytes: usize, stream: StreamId) -> Result<Block, AllocError> {
        if bytes == 0 {
            return Ok(Block::empty(stream));
        }
        let size = self.config.rounding().round_valid(bytes)?;
        self.inner
            .allocate(size, bytes, stream, |st| self.new_region(st, size, bytes))
    }

    /// Returns `block` to its bucket; if it was used on other streams, once events recorded
    /// now on each of them complete. If an event cannot be recorded the allocator
    /// synchronizes instead and reports the failure; the region is still taken back (and
    /// leaked, never reused, if even synchronizing fails).
    fn free(&self, block: Block) -> Result<(), AllocError> {
        self.inner.free(&block)
    }

    fn free_direct(&self, block: Block) -> Result<(), AllocError> {
        self.inner.free_direct(&block)
    }

    fn record_stream(&self, block: &Block, stream: StreamId) -> Result<(), AllocError> {
        self.inner.record_stream(block, stream)
    }

    fn empty_cache(&self) -> Result<(), AllocError> {
        self.inner.release_cached()
    }

    bookkeeping_methods!(inner);
}

static_assertions::assert_impl_all!(PooledAllocator<HostMemorySource>: Send, Sync);
