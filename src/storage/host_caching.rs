//! [`CachingHostAllocator`]: PyTorch's `CachingHostAllocator` (pinned host memory)
//! algorithm over any [`MemorySource`].
//!
//! Requests round up to a power of two; each power of two is a size class with a free
//! list. Blocks are never split. A freed block returns to its free list only after an event
//! recorded at the free on every stream that used it has completed, because the CPU writes
//! a reused block at once, without waiting for copies still queued on those streams.
//!
//! The source is typically pinned (page-locked) host memory from the GPU layer; tests use
//! [`HostMemorySource`].

use super::allocator::{Block, DeviceAllocator};
use super::bookkeeping::{bookkeeping_methods, Guarded};
use super::host_source::HostMemorySource;
use super::regions::{FreeRegions, RegionCache};
use super::snapshot::SegmentSnapshot;
use super::source::{MemorySource, StreamId};
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
/// Invariants (besides those of the shared region cache): block sizes are powers of two,
/// each one whole source region, cached in the free list of its size class
/// (`free_lists[log2(size)]`).
///
/// Each `Gpu` owns one over page-locked memory (`Gpu::host_allocator`); over
/// [`HostMemorySource`], whose streams are simulated, it
/// runs anywhere:
///
/// ```
/// use typestate_tensor::storage::{
///     CachingHostAllocator, DeviceAllocator, HostMemorySource, StreamId,
/// };
///
/// # fn main() -> Result<(), typestate_tensor::error::AllocError> {
/// let host = CachingHostAllocator::new(HostMemorySource::new(1 << 20));
/// let a = host.allocate(3000, StreamId(0))?;
/// assert_eq!(a.size(), 4096); // a power-of-two size class
/// let addr = a.addr();
/// host.free(a)?; // cached, but stream 0 may still be copying from it
/// let b = host.allocate(3000, StreamId(0))?;
/// assert_ne!(b.addr(), addr, "not reused while its stream's work is pending");
/// let b_addr = b.addr();
/// host.free(b)?;
/// host.source().complete_stream(StreamId(0)); // the stream's work is done
/// let c = host.allocate(3000, StreamId(0))?;
/// assert!([addr, b_addr].contains(&c.addr()), "a cached block is reused");
/// assert_eq!(host.stats().segments.current, 2);
/// # host.free(c)?;
/// # Ok(())
/// # }
/// ```
pub struct CachingHostAllocator<S: MemorySource> {
    inner: Guarded<S, RegionCache<S::Event, SizeClasses>>,
}

/// Cached block addresses per power-of-two size class, for any stream: the CPU, not a
/// stream, reuses a host block, so only events can tell when it is safe.
struct SizeClasses(Vec<Vec<u64>>);

impl Default for SizeClasses {
    fn default() -> Self {
        SizeClasses((0..SIZE_CLASSES).map(|_| Vec::new()).collect())
    }
}

/// Size class of a power-of-two size.
#[inline]
fn class(size: usize) -> usize {
    // ilog2 of a usize is below usize::BITS: the conversion is exact.
    size.ilog2() as usize
}

impl FreeRegions for SizeClasses {
    const OWN_STREAM_NEEDS_EVENT: bool = true;

    #[inline]
    fn take(&mut self, _stream: StreamId, size: usize) -> Option<u64> {
        self.0[class(size)].pop()
    }

    #[inline]
    fn put(&mut self, _stream: StreamId, size: usize, addr: u64) {
        self.0[class(size)].push(addr);
    }

    fn lists_mut(&mut self) -> impl Iterator<Item = (usize, &mut Vec<u64>)> {
        self.0
            .iter_mut()
            .enumerate()
            .map(|(log2, list)| (1usize << log2, list))
    }

    fn cached(&self) -> impl Iterator<Item = (u64, usize, StreamId)> {
        self.0.iter().enumerate().flat_map(|(log2, list)| {
            list.iter()
                .map(move |&addr| (addr, 1usize << log2, StreamId::default()))
        })
    }
}

impl<S: MemorySource> CachingHostAllocator<S> {
    /// An allocator over `source`.
    pub fn new(source: S) -> Self {
        Self {
            inner: Guarded::new(source, RegionCache::new()),
        }
    }

    /// The memory source.
    pub fn source(&self) -> &S {
        &self.inner.source
    }

    /// Every block (one segment each), in address order.
    pub fn snapshot(&self) -> Vec<SegmentSnapshot> {
        self.inner.snapshot()
    }

    /// Returns blocks whose events have completed to the free lists now.
    pub fn process_events(&self) -> Result<(), AllocError> {
        self.inner.process_events()
    }
}

// SAFETY: every block is one whole region from the source, whose (unsafe) contract makes it
// live, non-null, disjoint from every other live region and of the kind `source.location()`
// reports, a power of two at least the request in size (cached under its own size class).
// A freed block is reused only after events recorded at its free on its allocation stream
// and on every stream passed to `record_stream` have completed (the CPU reuses host memory
// at once, so even its own stream needs an event), and regions go back to the source only
// after synchronizing it. The shared region cache records every block handed out and not
// freed; `free`, `free_direct` and `record_stream` check address, size and stream against
// it before changing anything, so a foreign or already freed block is refused with no
// effect.
unsafe impl<S: MemorySource> DeviceAllocator for CachingHostAllocator<S> {
    fn name(&self) -> &'static str {
        "caching-host"
    }

    /// A block of `bytes` rounded up to a power of two, usable on any stream once
    /// `record_stream` announces it; `stream` is recorded as its first use.
    fn allocate(&self, bytes: usize, stream: StreamId) -> Result<Block, AllocError> {
        if bytes == 0 {
            return Ok(Block::empty(stream));
        }
        let size = bytes
            .checked_next_power_of_two()
            .ok_or(AllocError::SizeOverflow { requested: bytes })?;
        let source = &self.inner.source;
        self.inner.allocate(size, bytes, stream, |st| {
            st.allocate_region(source, size, bytes, &[])
        })
    }

    /// Returns `block` to its free list once events recorded now on its allocation stream
    /// and on every stream passed to `record_stream` have completed. If an event cannot be
    /// recorded the allocator synchronizes instead and reports the failure; the block is
    /// still taken back (and leaked, never reused, if even synchronizing fails).
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

static_assertions::assert_impl_all!(CachingHostAllocator<HostMemorySource>: Send, Sync);
