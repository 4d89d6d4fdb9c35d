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

/// A provider of raw memory regions and of stream events.
///
/// Addresses are `u64` so device pointers (`CUdeviceptr`) and host pointers share one type.
pub trait MemorySource: Send + Sync + 'static {
    /// An event recorded on a stream; completes when all work queued before it has finished.
    type Event: Send + Sync;

    /// A name for error messages (`"cuda:0"`, `"host"`).
    fn name(&self) -> String;

    /// Allocates `bytes > 0` bytes, aligned to at least 256 bytes.
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
impl<S: MemorySource> MemorySource for std::sync::Arc<S> {
    type Event = S::Event;

    fn name(&self) -> String {
        (**self).name()
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
