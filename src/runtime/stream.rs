//! Streams: in-order GPU work queues, and the registry that maps a [`StreamId`] back to a live
//! stream for the allocators.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use cudarc::driver::{CudaContext, CudaStream};

use super::driver;
use super::error_slot::ErrorSlot;
use super::event::Event;
use super::graph::state;
use crate::error::GpuError;
use crate::storage::source::StreamId;

/// Streams created by this crate, by id, so that allocators, which only see [`StreamId`]s,
/// can record events and free memory on them.
///
/// An entry lives from creation until its [`Stream`] is dropped *and synchronised*: the last
/// handle's drop first waits for the stream's work, then removes the entry. So a lookup that
/// finds no entry means no work of ours can be pending on that id, and one that finds an entry
/// holds the stream alive for as long as it needs it.
static LIVE_STREAMS: LazyLock<Mutex<HashMap<u64, Arc<CudaStream>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

fn live_streams() -> std::sync::MutexGuard<'static, HashMap<u64, Arc<CudaStream>>> {
    // Nothing panics while holding this lock, and the map stays consistent at every step, so
    // a poisoned lock (impossible here) would still guard valid data.
    LIVE_STREAMS.lock().unwrap_or_else(PoisonError::into_inner)
}

fn id_of(stream: &CudaStream) -> StreamId {
    // A `CUstream` is a pointer; its address is the id (null for the legacy default stream).
    // `usize` is at most 64 bits on every target CUDA supports, so the cast is lossless.
    StreamId(stream.cu_stream() as usize as u64)
}

/// The live stream with id `id` in context `ctx`: the context's legacy default stream for id
/// 0, a registered stream of this context otherwise, `None` when no such stream is alive
/// (then no work of this crate is pending on it; see [`LIVE_STREAMS`]).
pub(crate) fn live_stream(id: StreamId, ctx: &Arc<CudaContext>) -> Option<Arc<CudaStream>> {
    live_stream_anywhere(id, ctx).filter(|s| **s.context() == **ctx)
}

/// The live stream with id `id`, of `ctx` or of any other context: `ctx`'s legacy default
/// stream for id 0 (ids are `CUstream` handles, unique across contexts but for the null
/// handle), a registered stream of any context otherwise, `None` when no such stream is
/// alive. For recording events on streams of another GPU that used a buffer: such an event
/// must be made in the stream's own context ([`CudaStream::context`]).
pub(crate) fn live_stream_anywhere(
    id: StreamId,
    ctx: &Arc<CudaContext>,
) -> Option<Arc<CudaStream>> {
    if id == StreamId(0) {
        return Some(driver::legacy_default_stream(ctx));
    }
    live_streams().get(&id.0).cloned()
}

/// The shared part of a [`Stream`]: the cudarc stream plus what its drop needs.
struct StreamInner {
    cuda: Arc<CudaStream>,
    /// Whether we created the stream (and so registered it and must retire it); false for the
    /// legacy default stream.
    owned: bool,
    errors: Arc<ErrorSlot>,
    /// The token of the thread capturing a CUDA graph on this stream, 0 if none
    /// (`graph::state`).
    capture_owner: AtomicU64,
}

impl Drop for StreamInner {
    fn drop(&mut self) {
        if !self.owned {
            return;
        }
        // Wait before unregistering (see `LIVE_STREAMS`): after this, allocators that no
        // longer find the id may treat everything on it as finished. If the wait fails the
        // context is broken (sticky error) and runs no more work, so the same holds.
        if let Err(e) = driver::stream_synchronize(&self.cuda) {
            self.errors.record(e);
        }
        live_streams().remove(&id_of(&self.cuda).0);
    }
}

/// A CUDA stream: an in-order queue of GPU work (copies, kernels, event records).
///
/// Work on one stream runs in the order queued; work on different streams may overlap unless
/// ordered with [`Event`]s ([`Stream::wait_event`], [`Stream::wait_stream`]). Create streams
/// with [`Gpu::new_stream`](super::Gpu::new_stream) (non-blocking: they do not synchronise with
/// the legacy default stream) or use [`Gpu::default_stream`](super::Gpu::default_stream).
///
/// Invariants:
/// - The stream stays alive while any clone of this handle exists.
/// - When the last clone of a created stream drops, the stream is synchronised before it is
///   destroyed (so memory the allocators cached for it can be reused by a later stream that
///   gets the same id). Drop stream handles off hot paths.
/// - Clones compare equal; different streams never do.
#[derive(Clone)]
pub struct Stream {
    inner: Arc<StreamInner>,
}

impl Stream {
    /// Creates a non-blocking stream in `ctx` and registers it.
    pub(crate) fn create(
        ctx: &Arc<CudaContext>,
        errors: Arc<ErrorSlot>,
    ) -> Result<Stream, GpuError> {
        let cuda = driver::create_stream(ctx)?;
        live_streams().insert(id_of(&cuda).0, Arc::clone(&cuda));
        Ok(Stream {
            inner: Arc::new(StreamInner {
                cuda,
                owned: true,
                errors,
                capture_owner: AtomicU64::new(0),
            }),
        })
    }

    /// The legacy default stream of `ctx` (`CUstream` null, [`StreamId`] 0).
    pub(crate) fn legacy_default(ctx: &Arc<CudaContext>, errors: Arc<ErrorSlot>) -> Stream {
        Stream {
            inner: Arc::new(StreamInner {
                cuda: driver::legacy_default_stream(ctx),
                owned: false,
                errors,
                capture_owner: AtomicU64::new(0),
            }),
        }
    }

    /// The id allocators key cached blocks by (the `CUstream` handle's value; 0 for the
    /// legacy default stream).
    pub fn id(&self) -> StreamId {
        id_of(&self.inner.cuda)
    }

    /// The ordinal of the GPU the stream belongs to.
    pub fn ordinal(&self) -> usize {
        self.inner.cuda.context().ordinal()
    }

    /// Whether this is the legacy default stream.
    pub fn is_default(&self) -> bool {
        !self.inner.owned
    }

    /// Blocks until all work queued so far has finished (`cuStreamSynchronize`).
    ///
    /// Refused while a CUDA graph is being captured on this thread or on this stream
    /// ([`GpuError::NotCapturable`], [`GpuError::CaptureInProgress`]).
    pub fn synchronize(&self) -> Result<(), GpuError> {
        state::check_host_sync("Stream::synchronize", self.capture_owner(), state::SYNC)?;
        driver::stream_synchronize(&self.inner.cuda)
    }

    /// Records a new event (no timing) capturing the work queued so far.
    pub fn record_event(&self) -> Result<Event, GpuError> {
        state::check_host_sync("Stream::record_event", self.capture_owner(), state::EVENTS)?;
        let event = Event::create(self.context(), false)?;
        event.record(self)?;
        Ok(event)
    }

    /// Records a new timing-capable event, for [`Event::elapsed_ms`].
    pub fn record_timing_event(&self) -> Result<Event, GpuError> {
        state::check_host_sync("Stream::record_event", self.capture_owner(), state::EVENTS)?;
        let event = Event::create(self.context(), true)?;
        event.record(self)?;
        Ok(event)
    }

    /// Makes work queued on this stream from now on wait until `event` completes
    /// (`cuStreamWaitEvent`). The host does not block. The event may come from another GPU
    /// (the wait then orders this GPU's work after the other's).
    pub fn wait_event(&self, event: &Event) -> Result<(), GpuError> {
        state::check_host_sync("Stream::wait_event", self.capture_owner(), state::EVENTS)?;
        driver::stream_wait_event(&self.inner.cuda, event.cuda())
    }

    /// Makes work queued on this stream from now on wait for all work queued on `other` so
    /// far. The host does not block. `other` may be a stream of another GPU.
    pub fn wait_stream(&self, other: &Stream) -> Result<(), GpuError> {
        if self == other {
            return Ok(());
        }
        self.wait_event(&other.record_event()?)
    }

    /// The token of the thread capturing a CUDA graph on this stream, 0 if none.
    #[inline]
    pub(crate) fn capture_owner(&self) -> u64 {
        self.inner.capture_owner.load(Ordering::Acquire)
    }

    /// Marks the stream as captured on by thread `token` (0: no capture).
    pub(crate) fn set_capture_owner(&self, token: u64) {
        self.inner.capture_owner.store(token, Ordering::Release);
    }

    /// The cudarc stream, for launching kernels through cudarc (`launch_builder`).
    pub(crate) fn cuda(&self) -> &CudaStream {
        &self.inner.cuda
    }

    /// The context the stream belongs to.
    pub(crate) fn context(&self) -> &Arc<CudaContext> {
        self.inner.cuda.context()
    }
}

impl PartialEq for Stream {
    fn eq(&self, other: &Stream) -> bool {
        *self.inner.cuda == *other.inner.cuda
    }
}

impl Eq for Stream {}

impl fmt::Debug for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stream")
            .field("ordinal", &self.ordinal())
            .field("id", &format_args!("{:#x}", self.id().0))
            .finish()
    }
}

static_assertions::assert_impl_all!(Stream: Send, Sync, Clone);

impl Event {
    /// Captures the work queued on `stream` so far (`cuEventRecord`). Re-recording replaces
    /// what the event captured; waits already queued on other streams are not affected.
    ///
    /// The stream must belong to the GPU the event was made on ([`GpuError::DeviceMismatch`]
    /// otherwise); any GPU's stream may wait on it ([`Stream::wait_event`]).
    pub fn record(&self, stream: &Stream) -> Result<(), GpuError> {
        state::check_host_sync("Event::record", stream.capture_owner(), state::EVENTS)?;
        if **self.context() != **stream.context() {
            return Err(GpuError::DeviceMismatch {
                op: "Event::record",
                lhs: self.ordinal(),
                rhs: stream.ordinal(),
            });
        }
        driver::event_record(self.cuda(), stream.cuda())
    }
}
