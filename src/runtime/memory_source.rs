//! Device memory straight from the driver (`cuMemAlloc` / `cuMemFree`): the source the naive,
//! pooled and caching allocators run on for GPU memory.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use cudarc::driver::{CudaContext, CudaStream};

use super::driver::{self, AllocFailure};
use super::event::Event;
use super::stream::live_stream_anywhere;
use crate::error::GpuError;
use crate::storage::source::{MemoryLocation, MemorySource, SourceError, StreamId};

/// THC's free lock (PyTorch's `getFreeMutex`): one process-wide lock taken around every
/// `cuMemFree` of device memory and around every launch of NCCL collectives
/// (docs/COLLECTIVES.md).
///
/// `cuMemFree` synchronises the device while it holds the driver's own locks, which can keep
/// other threads from launching. If one thread frees on GPU 0 while another is between the
/// launches of one collective on GPUs 0 and 1, the free waits for GPU 0's NCCL kernel, which
/// waits for the GPU 1 kernel that cannot be launched: a deadlock. With this lock a free
/// happens either before the first launch of a group or after the last. It is taken always
/// (not only once a communicator exists, which would leave a window at its creation): an
/// uncontended lock costs tens of nanoseconds against tens of microseconds for `cuMemFree`.
///
/// Nothing may allocate or free device memory while holding it (the lock is not
/// re-entrant): the collectives take it only around their NCCL calls.
static FREE_LOCK: Mutex<()> = Mutex::new(());

/// Takes [`FREE_LOCK`]. Nothing panics while it is held, so a poisoned lock (impossible) still
/// guards nothing broken.
pub(crate) fn free_lock() -> MutexGuard<'static, ()> {
    FREE_LOCK.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Maps a driver allocation failure to the source contract's error.
pub(crate) fn source_error(failure: AllocFailure) -> SourceError {
    match failure {
        AllocFailure::OutOfMemory => SourceError::OutOfMemory,
        AllocFailure::Driver(e) => SourceError::Other(e.to_string()),
    }
}

/// A driver failure as the source contract's error.
pub(crate) fn other(e: GpuError) -> SourceError {
    SourceError::Other(e.to_string())
}

/// [`MemorySource::event_completed`] for the GPU sources (`cuEventQuery`).
pub(crate) fn event_completed(event: &Event) -> Result<bool, SourceError> {
    event.is_complete().map_err(other)
}

/// [`MemorySource::synchronize`] for the GPU sources: every stream of the context.
pub(crate) fn synchronize_context(ctx: &CudaContext) -> Result<(), SourceError> {
    driver::context_synchronize(ctx).map_err(other)
}

/// Records an event on stream `id` (of `ctx`, or of another GPU's context), for the
/// sources' [`MemorySource::record_event`].
///
/// A stream of another context gets an event made in that context (an event can only be
/// recorded on its own context's streams, and is queried from any): memory of one GPU used
/// by a copy queued on another GPU's stream is then reused only after that copy. (The
/// crate's own buffers never name another GPU's stream: cross-device copies order
/// themselves on each buffer's own GPU, see `runtime/peer/`; this covers blocks announced
/// by hand through `record_stream`.)
///
/// A stream id with no live stream gets an event never recorded, which is complete: every
/// stream this crate creates is synchronised before it leaves the registry (see
/// `stream::LIVE_STREAMS`), so no work can be pending on it. Streams created outside this
/// crate are not supported.
pub(crate) fn record_on_stream_id(
    ctx: &Arc<CudaContext>,
    id: StreamId,
) -> Result<Event, SourceError> {
    match live_stream_anywhere(id, ctx) {
        Some(stream) => {
            let event = Event::create(stream.context(), false).map_err(other)?;
            record_raw(&event, &stream).map_err(other)?;
            Ok(event)
        }
        None => Event::create(ctx, false).map_err(other),
    }
}

fn record_raw(event: &Event, stream: &CudaStream) -> Result<(), GpuError> {
    driver::event_record(event.cuda(), stream)
}

/// Device memory of one GPU from `cuMemAlloc`, freed with `cuMemFree`.
///
/// - Every allocation is aligned to at least 256 bytes (the driver's guarantee).
/// - `CUDA_ERROR_OUT_OF_MEMORY` becomes [`SourceError::OutOfMemory`], so allocators can free
///   their caches and retry.
/// - Events are `cuEventCreate(CU_EVENT_DISABLE_TIMING)` + `cuEventRecord` on the stream
///   named by the [`StreamId`], polled with `cuEventQuery`.
/// - Every call binds the device's primary context to the calling thread first, so one
///   source serves any number of threads.
/// - `cuMemAlloc` and `cuMemFree` each take tens of microseconds and `cuMemFree`
///   synchronises the device: this is the slow path the caching allocators exist to avoid.
///   Every `cuMemFree` takes the process-wide free lock (THC's, so that it never runs between
///   the launches of one NCCL collective; docs/COLLECTIVES.md).
pub struct DeviceMemorySource {
    ctx: Arc<CudaContext>,
}

impl DeviceMemorySource {
    /// A source for GPU `ordinal` (retains its primary context).
    pub fn new(ordinal: usize) -> Result<DeviceMemorySource, GpuError> {
        Ok(DeviceMemorySource {
            ctx: driver::retain_primary_context(ordinal)?,
        })
    }

    /// A source on an already retained context.
    pub(crate) fn from_context(ctx: Arc<CudaContext>) -> DeviceMemorySource {
        DeviceMemorySource { ctx }
    }

    /// The ordinal of the GPU this source allocates on.
    pub fn ordinal(&self) -> usize {
        self.ctx.ordinal()
    }
}

// SAFETY: every region comes from `cuMemAlloc` on this context's device, which returns
// fresh, non-null device memory of at least `bytes` bytes, aligned to at least 256 bytes and
// disjoint from every other live allocation; it stays valid until `cuMemFree`, which only
// `free` calls. It is device memory of GPU `ctx.ordinal()`, which `location` reports (the
// context never changes). Events are real CUDA events recorded on the named stream and
// queried with `cuEventQuery`, and `synchronize` is `cuCtxSynchronize`, so both report work
// finished only when it is. `cuMemAlloc` memory is usable on any stream of the context.
unsafe impl MemorySource for DeviceMemorySource {
    type Event = Event;

    fn name(&self) -> String {
        format!("cuda:{}", self.ctx.ordinal())
    }

    fn location(&self) -> MemoryLocation {
        MemoryLocation::Device {
            ordinal: self.ctx.ordinal(),
        }
    }

    fn allocate(&self, bytes: usize) -> Result<u64, SourceError> {
        driver::mem_alloc(&self.ctx, bytes).map_err(source_error)
    }

    unsafe fn free(&self, addr: u64, _bytes: usize) -> Result<(), SourceError> {
        // Never while collectives are being launched (see `FREE_LOCK`).
        let _free = free_lock();
        // SAFETY: the trait's contract: `addr` came from `allocate` (so from `cuMemAlloc` on
        // this context's device), is not yet freed, and no queued or running work uses it.
        unsafe { driver::mem_free(&self.ctx, addr) }.map_err(other)
    }

    fn record_event(&self, stream: StreamId) -> Result<Event, SourceError> {
        record_on_stream_id(&self.ctx, stream)
    }

    fn event_completed(&self, event: &Event) -> Result<bool, SourceError> {
        event_completed(event)
    }

    fn synchronize(&self) -> Result<(), SourceError> {
        synchronize_context(&self.ctx)
    }

    fn mem_info(&self) -> Option<(usize, usize)> {
        driver::memory_info(&self.ctx).ok()
    }
}

impl fmt::Debug for DeviceMemorySource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceMemorySource")
            .field("ordinal", &self.ctx.ordinal())
            .finish()
    }
}

static_assertions::assert_impl_all!(DeviceMemorySource: Send, Sync);
