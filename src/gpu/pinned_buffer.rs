//! [`PinnedBuffer`]: page-locked host memory for staging, the only host memory copies can
//! read and write truly asynchronously.

use std::fmt;
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::buffer::byte_len;
use super::device::Gpu;
use super::error_slot::ErrorSlot;
use super::event::Event;
use super::pinned_source::PinnedHostSource;
use super::stream::Stream;
use crate::element::Element;
use crate::error::{AllocError, Error, GpuError};
use crate::storage::source::{MemorySource, SourceError};

/// Copies queued on the buffer and not yet known to be finished.
#[derive(Debug, Default)]
struct Pending {
    /// One event per copy that may still read or write the buffer.
    events: Vec<Arc<Event>>,
    /// A copy was queued whose end could neither be recorded nor awaited (the context
    /// failed). The buffer can never be safely touched or freed again.
    untracked: bool,
}

/// Page-locked host memory for `len` elements of `T`, from a [`PinnedHostSource`].
///
/// Copies between a `PinnedBuffer` and device memory are truly asynchronous (the DMA engine
/// reads or writes the buffer after the call returns; see
/// [`GpuStorage::copy_from_pinned_async`](super::GpuStorage::copy_from_pinned_async)). The
/// buffer itself keeps that sound, whatever happens to the guards those copies return:
///
/// Invariants:
/// - `ptr` points to `len * size_of::<T>()` bytes from `source.allocate`, aligned for `T`,
///   owned by this value alone (dangling and never freed when that is 0 bytes).
/// - Every element is initialised (zero-filled or written at creation, or since).
/// - `pending` holds an event for every copy queued on the buffer that may not have finished.
///   Host access ([`as_slice`](Self::as_slice), [`as_mut_slice`](Self::as_mut_slice)) and
///   the free in `Drop` wait for them first; a new copy is ordered after them on the GPU.
///   If the end of a copy is unknown (`untracked`), host access fails and the memory is
///   leaked rather than freed.
pub struct PinnedBuffer<T: Element> {
    ptr: NonNull<T>,
    len: usize,
    source: Arc<PinnedHostSource>,
    pending: Mutex<Pending>,
    errors: Arc<ErrorSlot>,
    _owns: PhantomData<T>,
}

// SAFETY: a `PinnedBuffer<T>` owns its memory like a `Vec<T>` does (no other handle to it
// exists), the source and error slot are `Send + Sync`, and `T: Element` is `Send`.
unsafe impl<T: Element> Send for PinnedBuffer<T> {}
// SAFETY: through `&PinnedBuffer<T>` one can only read the elements (after waiting for
// pending copies), queue copies that read the buffer, and touch the `pending` list behind its
// mutex; `T: Element` is `Sync`. Writes need `&mut`.
unsafe impl<T: Element> Sync for PinnedBuffer<T> {}

impl<T: Element> PinnedBuffer<T> {
    /// A zero-filled buffer of `len` elements from `gpu`'s pinned source.
    pub fn zeros(gpu: &Gpu, len: usize) -> Result<PinnedBuffer<T>, Error> {
        let bytes = byte_len::<T>("PinnedBuffer::zeros", len)?;
        let source = Arc::clone(gpu.pinned_source());
        let ptr = if bytes == 0 {
            NonNull::dangling()
        } else {
            let addr = source.allocate(bytes).map_err(|e| match e {
                SourceError::OutOfMemory => AllocError::OutOfMemory {
                    device: source.name(),
                    requested: bytes,
                    free: 0,
                    total: 0,
                    allocated: 0,
                    reserved: 0,
                    cached: 0,
                },
                SourceError::Other(message) => AllocError::Source(message),
            })?;
            let ptr = usize::try_from(addr)
                .ok()
                .map(std::ptr::with_exposed_provenance_mut::<T>)
                .and_then(NonNull::new)
                .filter(|p| p.as_ptr().is_aligned());
            let Some(ptr) = ptr else {
                // SAFETY: `addr` came from `allocate(bytes)` on this source just now and
                // nothing has used it.
                let _ = unsafe { source.free(addr, bytes) };
                return Err(AllocError::Source(format!(
                    "pinned source returned {addr:#x}, not a pointer aligned for {}",
                    T::NAME
                ))
                .into());
            };
            // SAFETY: `ptr` is valid for writes of `len` elements (`bytes` bytes freshly
            // allocated, owned by nobody else) and aligned for `T`. All-zero bytes are a
            // valid `T` (`Element`'s safety contract).
            unsafe { ptr.as_ptr().write_bytes(0, len) };
            ptr
        };
        Ok(PinnedBuffer {
            ptr,
            len,
            source,
            pending: Mutex::new(Pending::default()),
            errors: Arc::clone(gpu.errors()),
            _owns: PhantomData,
        })
    }

    /// A buffer holding a copy of `data`.
    pub fn from_slice(gpu: &Gpu, data: &[T]) -> Result<PinnedBuffer<T>, Error> {
        let mut buffer = PinnedBuffer::zeros(gpu, data.len())?;
        buffer.as_mut_slice()?.copy_from_slice(data);
        Ok(buffer)
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Size in bytes.
    pub fn byte_len(&self) -> usize {
        // Cannot overflow: checked when the buffer was made.
        self.len * size_of::<T>()
    }

    /// Blocks until every copy queued on the buffer has finished.
    pub fn wait(&self) -> Result<(), GpuError> {
        let mut pending = self.pending();
        if pending.untracked {
            return Err(untracked_error());
        }
        while let Some(event) = pending.events.last() {
            event.synchronize()?;
            pending.events.pop();
        }
        Ok(())
    }

    /// The elements, after waiting for queued copies.
    pub fn as_slice(&self) -> Result<&[T], GpuError> {
        self.wait()?;
        // SAFETY: by the invariants `ptr` is valid for `len` initialised, aligned elements.
        // No copy writes them: those queued are finished (just waited), and a new copy
        // writing the buffer needs `&mut self`, which the returned borrow of `self` excludes.
        Ok(unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) })
    }

    /// The elements, mutably, after waiting for queued copies.
    pub fn as_mut_slice(&mut self) -> Result<&mut [T], GpuError> {
        self.wait()?;
        // SAFETY: as in `as_slice`; in addition `&mut self` excludes every other reference
        // and every new copy, and the finished copies no longer read the memory.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) })
    }

    /// The elements in a `Vec`, after waiting for queued copies.
    pub fn to_vec(&self) -> Result<Vec<T>, GpuError> {
        Ok(self.as_slice()?.to_vec())
    }

    /// Start of the buffer, for queuing copies.
    pub(crate) fn host_ptr(&self) -> *const u8 {
        self.ptr.as_ptr().cast_const().cast::<u8>()
    }

    /// Start of the buffer, for queuing copies that write it.
    pub(crate) fn host_ptr_mut(&mut self) -> *mut u8 {
        self.ptr.as_ptr().cast::<u8>()
    }

    /// Makes later work on `stream` wait (on the GPU) for every copy queued on the buffer,
    /// so copies touching one buffer never overlap.
    pub(crate) fn order_after_pending(&self, stream: &Stream) -> Result<(), GpuError> {
        let pending = self.pending();
        if pending.untracked {
            return Err(untracked_error());
        }
        for event in &pending.events {
            stream.wait_event(event)?;
        }
        Ok(())
    }

    /// Call right after queuing a copy on `stream` that touches the buffer: records its end
    /// in `pending` and returns the event. If no event can be recorded the stream is awaited
    /// instead; if that fails too the buffer is marked untracked (see the invariants).
    pub(crate) fn track_copy(&self, stream: &Stream) -> Result<Arc<Event>, GpuError> {
        let mut pending = self.pending();
        // Drop events already complete so the list stays short.
        pending
            .events
            .retain(|e| !matches!(e.is_complete(), Ok(true)));
        match stream.record_event() {
            Ok(event) => {
                let event = Arc::new(event);
                pending.events.push(Arc::clone(&event));
                Ok(event)
            }
            Err(record_error) => {
                if stream.synchronize().is_err() {
                    pending.untracked = true;
                }
                Err(record_error)
            }
        }
    }

    fn pending(&self) -> MutexGuard<'_, Pending> {
        // Nothing panics while holding the lock; the list is valid at every step.
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn untracked_error() -> GpuError {
    GpuError::Driver {
        call: "cuEventRecord",
        message: "a copy on this pinned buffer could not be tracked after a driver failure; \
                  the buffer is unusable and will be leaked"
            .to_owned(),
    }
}

impl<T: Element> Drop for PinnedBuffer<T> {
    fn drop(&mut self) {
        let bytes = self.byte_len();
        if bytes == 0 {
            return;
        }
        if let Err(e) = self.wait() {
            // A copy may still use the memory: leak it rather than free it under the DMA.
            self.errors.record(e);
            return;
        }
        let addr = self.ptr.as_ptr().expose_provenance() as u64;
        // SAFETY: `addr` came from `self.source.allocate(bytes)` (invariant), is freed only
        // here, and every copy that used it has finished (just waited); no reference to the
        // elements outlives `self`.
        if let Err(e) = unsafe { self.source.free(addr, bytes) } {
            self.errors.record(AllocError::Source(e.to_string()));
        }
    }
}

impl<T: Element> fmt::Debug for PinnedBuffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PinnedBuffer")
            .field("dtype", &T::DTYPE)
            .field("len", &self.len)
            .field("pending_copies", &self.pending().events.len())
            .finish()
    }
}

static_assertions::assert_impl_all!(PinnedBuffer<f32>: Send, Sync);
static_assertions::assert_not_impl_any!(PinnedBuffer<f32>: Clone);
