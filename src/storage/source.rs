//! Where allocators get raw memory: the seam between allocation algorithms and the driver.
//!
//! The pooled and caching algorithms are generic over a [`MemorySource`], so CI tests them
//! against [`HostMemorySource`](super::host_source::HostMemorySource) (plain host memory with
//! simulated streams and a capacity limit) and the GPU machine runs the same suites against
//! device memory.

/// Identifies a stream for stream-ordered block reuse. For CUDA this is the `CUstream`
/// handle's value (the legacy default stream is 0); test sources use small integers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StreamId(pub u64);

/// Why a source could not allocate or free.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SourceError {
    /// The source has no room for the request (`CUDA_ERROR_OUT_OF_MEMORY`).
    OutOfMemory,
    /// Any other failure, with the driver's message.
    Other(String),
}

impl std::fmt::Display for SourceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SourceError::OutOfMemory => f.write_str("out of memory"),
            SourceError::Other(m) => f.write_str(m),
        }
    }
}

pub use crate::memory_location::MemoryLocation;

/// A provider of raw memory regions and of stream events.
///
/// Addresses are `u64` so device pointers (`CUdeviceptr`) and host pointers share one type.
///
/// # Safety
///
/// Every allocator of this crate hands the regions a source returns to users as
/// [`Block`](super::allocator::Block)s, and unsafe code (memsets, copies, kernels) reads and
/// writes them trusting only this contract. An implementation must guarantee:
///
/// 1. **Fresh and disjoint.** A region `[addr, addr + bytes)` returned by
///    [`allocate`](Self::allocate) is live memory of at least `bytes` bytes, `addr` is not 0
///    and is aligned to at least 256 bytes, and the region overlaps no other live region of
///    any source, nor any other memory the program uses.
/// 2. **Live until freed.** It stays valid, and the source does not hand any of it out
///    again, until it is passed to [`free`](Self::free) of this same source.
/// 3. **Where it says.** The region is memory of the kind [`location`](Self::location)
///    reports, and `location` returns the same value for the whole life of the source.
/// 4. **Honest events.** [`event_completed`](Self::event_completed) returns `Ok(true)` only
///    once every piece of work queued on the event's stream before
///    [`record_event`](Self::record_event) has finished, and
///    [`synchronize`](Self::synchronize) returns `Ok(())` only once all work queued on every
///    stream of the source has finished: allocators reuse and free memory on their word.
///
/// A safe implementation could return one address twice, and every allocator on top of it
/// would then hand out aliasing blocks; that is why implementing this trait is `unsafe`.
pub unsafe trait MemorySource: Send + Sync + 'static {
    /// An event recorded on a stream; completes when all work queued before it has finished.
    type Event: Send + Sync;

    /// A name for error messages (`"cuda:0"`, `"host"`).
    fn name(&self) -> String;

    /// Where the regions of this source live (the same value for the source's whole life).
    fn location(&self) -> MemoryLocation;

    /// Allocates `bytes > 0` bytes, aligned to at least 256 bytes (see the trait's safety
    /// contract for what a region must be).
    fn allocate(&self, bytes: usize) -> Result<u64, SourceError>;

    /// Returns a region to the source.
    ///
    /// # Safety
    ///
    /// `addr` was returned by [`allocate`](Self::allocate) on this source with the same
    /// `bytes`, has not been freed since, and no queued or running work still uses it.
    unsafe fn free(&self, addr: u64, bytes: usize) -> Result<(), SourceError>;

    /// Records an event on `stream`.
    fn record_event(&self, stream: StreamId) -> Result<Self::Event, SourceError>;

    /// Whether all work before `event` has completed (non-blocking).
    fn event_completed(&self, event: &Self::Event) -> Result<bool, SourceError>;

    /// Blocks until all work on every stream of the source has completed.
    fn synchronize(&self) -> Result<(), SourceError>;

    /// `(free, total)` bytes, if the source knows them.
    fn mem_info(&self) -> Option<(usize, usize)>;
}

/// A shared source is a source: several allocators (or a test and its allocator) can hold
/// one through an `Arc`.
// SAFETY: every method forwards to the one source behind the `Arc`, which upholds the
// contract; sharing it does not change what its regions are or where they live.
unsafe impl<S: MemorySource> MemorySource for std::sync::Arc<S> {
    type Event = S::Event;

    fn name(&self) -> String {
        (**self).name()
    }

    fn location(&self) -> MemoryLocation {
        (**self).location()
    }

    fn allocate(&self, bytes: usize) -> Result<u64, SourceError> {
        (**self).allocate(bytes)
    }

    unsafe fn free(&self, addr: u64, bytes: usize) -> Result<(), SourceError> {
        // SAFETY: the caller upholds `free`'s contract for this source, which is the one
        // behind the `Arc`.
        unsafe { (**self).free(addr, bytes) }
    }

    fn record_event(&self, stream: StreamId) -> Result<Self::Event, SourceError> {
        (**self).record_event(stream)
    }

    fn event_completed(&self, event: &Self::Event) -> Result<bool, SourceError> {
        (**self).event_completed(event)
    }

    fn synchronize(&self) -> Result<(), SourceError> {
        (**self).synchronize()
    }

    fn mem_info(&self) -> Option<(usize, usize)> {
        (**self).mem_info()
    }
}
