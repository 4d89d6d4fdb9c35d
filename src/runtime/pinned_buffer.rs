//! [`PinnedBuffer`]: page-locked host memory for staging, the only host memory copies can
//! read and write truly asynchronously, from the [`Gpu`]'s caching pinned-host allocator.

use std::fmt;
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::byte_len;
use super::device::Gpu;
use super::error_slot::ErrorSlot;
use super::event::Event;
use super::pinned_source::PinnedHostAllocator;
use super::stream::Stream;
use crate::element::Element;
use crate::error::{AllocError, Error, GpuError};
use crate::storage::allocator::{Block, DeviceAllocator};

/// Copies queued on the buffer and not yet known to be finished.
#[derive(Debug, Default)]
struct Pending {
    /// One event per copy that may still read or write the buffer.
    events: Vec<Arc<Event>>,
    /// A copy was queued whose end could neither be recorded nor awaited (the context
    /// failed). The buffer can never be safely touched or freed again.
    untracked: bool,
    /// A copy was queued on a stream of another GPU, which the allocator (of this buffer's
    /// GPU) cannot record events on: the drop must wait for the copies itself.
    used_by_other_gpu: bool,
}

/// Page-locked host memory for `len` elements of `T`, from the [`Gpu`]'s caching
/// pinned-host allocator ([`Gpu::host_allocator`], PyTorch's `CachingHostAllocator`).
///
/// Pinning memory takes milliseconds, so the allocator keeps freed blocks (power-of-two
/// sizes) and hands them out again: a buffer of a size used before costs no driver call.
///
/// Copies between a `PinnedBuffer` and device memory are truly asynchronous (the DMA engine
/// reads or writes the buffer after the call returns; see
/// [`GpuStorage::copy_from_pinned_async`](super::GpuStorage::copy_from_pinned_async)). The
/// buffer itself keeps that sound, whatever happens to the guards those copies return:
///
/// Invariants:
/// - `block` was handed out by `allocator` for `len * size_of::<T>()` bytes (or is the
///   empty block, for 0 bytes) and is owned by this value alone; `ptr` is its address,
///   aligned for `T` (dangling for 0 bytes). It goes back to `allocator` once, in `Drop`.
/// - Every element is initialised (zero-filled or written at creation, or since).
/// - `pending` holds an event for every copy queued on the buffer that may not have finished.
///   Host access ([`as_slice`](Self::as_slice), [`as_mut_slice`](Self::as_mut_slice)) waits
///   for them first; a new copy is ordered after them on the GPU.
/// - Every stream of `ordinal`'s GPU a copy was queued on was announced to `allocator` with
///   `record_stream` before the copy, so when `Drop` gives the block back the allocator
///   records an event on each of them and reuses the block only once those (and so the
///   copies) have completed: `Drop` does not wait. (The memory is portable, so copies may
///   also run on another GPU's streams, whose events this allocator cannot record; then
///   `used_by_other_gpu` is set and `Drop` waits for the pending copies first.)
/// - If the end of a copy is unknown (`untracked`), host access fails and the memory is
///   leaked rather than given back.
pub struct PinnedBuffer<T: Element> {
    ptr: NonNull<T>,
    len: usize,
    block: Block,
    allocator: Arc<PinnedHostAllocator>,
    /// The GPU whose allocator the block came from.
    ordinal: usize,
    pending: Mutex<Pending>,
    errors: Arc<ErrorSlot>,
    _owns: PhantomData<T>,
}

// SAFETY: a `PinnedBuffer<T>` owns its memory like a `Vec<T>` does (no other handle to it
// exists), the allocator and error slot are `Send + Sync`, and `T: Element` is `Send`.
unsafe impl<T: Element> Send for PinnedBuffer<T> {}
// SAFETY: through `&PinnedBuffer<T>` one can only read the elements (after waiting for
// pending copies), queue copies that read the buffer, and touch the `pending` list behind its
// mutex; `T: Element` is `Sync`. Writes need `&mut`.
unsafe impl<T: Element> Sync for PinnedBuffer<T> {}

impl<T: Element> PinnedBuffer<T> {
    /// A zero-filled buffer of `len` elements from `gpu`'s pinned-host allocator.
    pub fn zeros(gpu: &Gpu, len: usize) -> Result<PinnedBuffer<T>, Error> {
        let bytes = byte_len::<T>("PinnedBuffer::zeros", len)?;
        let allocator = Arc::clone(gpu.host_allocator());
        // Host blocks are not tied to a stream: the allocation stream (which the allocator
        // guards with an event at the free, like every announced stream) is the default.
        let block = allocator.allocate(bytes, gpu.default_stream().id())?;
        let ptr = if bytes == 0 {
            NonNull::dangling()
        } else {
            let ptr = usize::try_from(block.addr())
                .ok()
                .map(std::ptr::with_exposed_provenance_mut::<T>)
                .and_then(NonNull::new)
                .filter(|p| p.as_ptr().is_aligned());
            let Some(ptr) = ptr else {
                let addr = block.addr();
                // Unused memory the source should not have given: back to the source.
                if let Err(e) = allocator.free_direct(block) {
                    gpu.errors().record(e);
                }
                return Err(AllocError::Source(format!(
                    "pinned host allocator returned {addr:#x}, not a pointer aligned for {}",
                    T::NAME
                ))
                .into());
            };
            // SAFETY: `ptr` is valid for writes of `len` elements: the block holds at least
            // `bytes` bytes of host memory, handed out to us alone, and no copy uses it any
            // more (the allocator reuses a block only after the events guarding it have
            // completed). It is aligned for `T`. All-zero bytes are a valid `T`
            // (`Element`'s safety contract).
            unsafe { ptr.as_ptr().write_bytes(0, len) };
            ptr
        };
        Ok(PinnedBuffer {
            ptr,
            len,
            block,
            allocator,
            ordinal: gpu.ordinal(),
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

    /// Call right before queuing a copy on `stream` that touches the buffer: makes later
    /// work on `stream` wait (on the GPU) for every copy queued on the buffer, so copies
    /// touching one buffer never overlap, and tells the allocator the memory is used on
    /// `stream` (see the invariants).
    pub(crate) fn prepare_copy(&self, stream: &Stream) -> Result<(), Error> {
        let mut pending = self.pending();
        if pending.untracked {
            return Err(untracked_error().into());
        }
        if stream.ordinal() == self.ordinal {
            self.allocator.record_stream(&self.block, stream.id())?;
        } else {
            pending.used_by_other_gpu = true;
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
        let pending = self
            .pending
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        let ready = if pending.untracked {
            Err(untracked_error())
        } else if pending.used_by_other_gpu {
            // The allocator cannot record events on another GPU's streams: wait here.
            pending.events.iter().try_for_each(|e| e.synchronize())
        } else {
            // No waiting: the allocator records an event on every stream a copy used the
            // block on (announced in `prepare_copy`) and reuses it only once they complete.
            Ok(())
        };
        if let Err(e) = ready {
            // A copy may still use the memory: leak it rather than let the allocator hand
            // it out under the DMA.
            self.errors.record(e);
            return;
        }
        let empty = Block::empty(self.block.stream());
        let block = std::mem::replace(&mut self.block, empty);
        if let Err(e) = self.allocator.free(block) {
            self.errors.record(e);
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
