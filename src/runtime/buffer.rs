//! [`GpuStorage`]: typed device memory from a [`Gpu`]'s allocator, and the copies between it,
//! host slices, [`PinnedBuffer`]s and other device memory.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use super::byte_len;
use super::device::Gpu;
use super::driver;
use super::error_slot::ErrorSlot;
use super::event::Event;
use super::graph::pool::GraphPool;
use super::graph::{active, state};
use super::pinned_buffer::PinnedBuffer;
use super::stream::Stream;
use super::stream_order::{Access, StreamOrder};
use crate::element::Element;
use crate::error::{AllocError, Error, GpuError, LayoutError};
use crate::storage::allocator::{check_handed_out, Block, DeviceAllocator};

fn check_len(op: &'static str, expected: usize, got: usize) -> Result<(), LayoutError> {
    if expected == got {
        Ok(())
    } else {
        Err(LayoutError::LengthMismatch {
            op,
            shape: vec![expected],
            expected,
            got,
        })
    }
}

/// Device memory for `len` elements of `T` on one GPU: the storage of `Tensor<T, Gpu>`.
///
/// Invariants:
/// - `block` comes from `pool`'s allocator if `pool` is set (memory allocated inside a CUDA
///   graph capture, docs/GRAPHS.md), else from `gpu.allocator()`, and holds at least
///   `len * size_of::<T>()` bytes of device memory of `gpu`'s device, used by this value
///   alone (and by the replays of the graph that captured it, for a pool's memory: a pool is
///   private to one graph). It goes back to that allocator exactly once, in `Drop` (errors
///   there are recorded, see [`Gpu::check_err`]).
/// - Every element is initialised, in stream order: zero-filled or copied at creation (or
///   promised by the caller of [`GpuStorage::uninit`]). So reading it back gives valid `T`s.
/// - `stream` (the home stream, the one it was allocated and initialised on, `block.stream`)
///   is kept alive.
/// - Stream order (docs/STREAMS.md): `order` knows the stream of the last write and the
///   streams that read since. Every read or write of the memory, by any path of this crate
///   (copies here, kernels, reductions), first goes through `GpuStorage::access`, which
///   makes the work's stream wait for what it must (a read for the last write, a write for
///   the last write and every read since) and records the access. Writes are asked through
///   `&mut self`, so a recorded write has been queued before anything else can order after
///   it. Every stream used besides the home stream was also passed to the allocator's
///   `record_stream` on first use, so the memory is reused only after the work queued on
///   it before the free is done.
///
/// Copies come in two forms. The plain ones (`copy_from_host`, ...) queue the copy on the
/// given stream and wait for that stream before returning. The `_async` ones do not wait for
/// the stream: device-to-device and [`PinnedBuffer`] copies return once queued; copies from
/// or to other host memory return once the copy is done with the host memory (CUDA stages
/// a pageable source and finishes a pageable target before returning; page-locked memory
/// they cannot track is waited for: see [`GpuStorage::copy_from_host_async`]). Those reading
/// or writing host memory return a [`PendingCopy`] that keeps the host memory borrowed and
/// waits when dropped. Only [`PinnedBuffer`] memory is copied truly asynchronously.
///
/// Inside a CUDA graph capture ([`Gpu::capture`], docs/GRAPHS.md), on the capturing thread,
/// every copy from or to the host and every call that waits is refused with
/// [`GpuError::NotCapturable`]; device-to-device copies are recorded like kernels. Memory
/// allocated there comes from the graph's private pool.
///
/// Any stream of the memory's GPU may be used with any call: the memory orders the work
/// itself, so no use can see data older than the last write queued before it, and no write
/// can overtake a read queued before it. While one stream is used throughout, this costs no
/// event and no lock.
pub struct GpuStorage<T: Element> {
    block: Block,
    len: usize,
    gpu: Gpu,
    stream: Stream,
    order: StreamOrder,
    /// The private pool of the graph capture that allocated this memory, if any.
    pool: Option<Arc<GraphPool>>,
    _element: PhantomData<T>,
}

impl<T: Element> GpuStorage<T> {
    /// Allocates without initialising; callers establish the initialisation invariant.
    fn allocate(op: &'static str, gpu: &Gpu, len: usize, stream: &Stream) -> Result<Self, Error> {
        gpu.check_stream(op, stream)?;
        let bytes = byte_len::<T>(op, len)?;
        // Inside a capture, on the capturing thread: the capture's private pool, with the
        // capture mode relaxed around it (`cuMemAlloc` is refused while capturing otherwise).
        let pool = active::allocation_pool(op, stream.id(), stream.capture_owner())?;
        let block = match &pool {
            None => gpu.allocator().allocate(bytes, stream.id())?,
            Some(pool) => state::relaxed(|| {
                pool.allocator()
                    .allocate(bytes, stream.id())
                    .map_err(Error::from)
            })?,
        };
        let storage = GpuStorage {
            block,
            len,
            gpu: gpu.clone(),
            stream: stream.clone(),
            order: StreamOrder::new(),
            pool,
            _element: PhantomData,
        };
        if let Err(reason) = check_handed_out(&storage.block, bytes, stream.id()) {
            // `storage` drops here and hands the block back.
            return Err(AllocError::BrokenAllocator {
                allocator: storage.allocator().name(),
                reason,
            }
            .into());
        }
        Ok(storage)
    }

    /// Zero-filled device memory for `len` elements, allocated on `stream` and filled in
    /// stream order (`cuMemsetD8Async`): work queued on `stream` after this sees zeros.
    pub fn zeros(gpu: &Gpu, len: usize, stream: &Stream) -> Result<Self, Error> {
        let storage = Self::allocate("GpuStorage::zeros", gpu, len, stream)?;
        if len > 0 {
            // SAFETY: the block is live, holds at least `byte_len()` bytes and is used by
            // nobody else (just allocated). It stays allocated until the memset completes:
            // it is freed only on drop, to its allocator, in order on `stream` (its own).
            unsafe {
                driver::memset_zero_async(storage.block.addr(), storage.byte_len(), stream.cuda())
            }?;
        }
        // All-zero bytes are a valid `T` (`Element`'s contract): initialised.
        Ok(storage)
    }

    /// Device memory for `len` elements allocated on `stream`, not initialised.
    ///
    /// # Safety
    ///
    /// Every element must be written (a copy into the whole storage, or a kernel that writes
    /// every element) before any element is read, in stream order: reading uninitialised
    /// device memory back gives arbitrary bytes, which are not a valid `bool`.
    pub unsafe fn uninit(gpu: &Gpu, len: usize, stream: &Stream) -> Result<Self, Error> {
        Self::allocate("GpuStorage::uninit", gpu, len, stream)
    }

    /// Device memory holding a copy of `src`, allocated and copied on `stream` (waits for it).
    pub fn from_host(gpu: &Gpu, src: &[T], stream: &Stream) -> Result<Self, Error> {
        let mut storage = Self::allocate("GpuStorage::from_host", gpu, src.len(), stream)?;
        // Writes every element before anything can read them: initialised.
        storage.copy_from_host(src, stream)?;
        Ok(storage)
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Size in bytes.
    pub fn byte_len(&self) -> usize {
        // Cannot overflow: checked at allocation.
        self.len * size_of::<T>()
    }

    /// The GPU the memory lives on.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// The stream the memory was allocated on.
    pub fn stream(&self) -> &Stream {
        &self.stream
    }

    /// The allocator the block came from (and goes back to).
    fn allocator(&self) -> &dyn DeviceAllocator {
        match &self.pool {
            Some(pool) => pool.allocator(),
            None => &**self.gpu.allocator(),
        }
    }

    /// The private pool of the graph capture that allocated this memory, if any.
    pub(crate) fn graph_pool(&self) -> Option<&Arc<GraphPool>> {
        self.pool.as_ref()
    }

    /// The device address, for kernel arguments that read the memory.
    pub(crate) fn device_ptr(&self) -> u64 {
        self.block.addr()
    }

    /// The device address, for kernel arguments that write the memory.
    pub(crate) fn device_ptr_mut(&mut self) -> u64 {
        self.block.addr()
    }

    /// Orders work about to be queued on `stream` that reads this memory: `stream` waits
    /// (on the GPU) for the last write, and the read is recorded so later writes wait for
    /// it. Call it right before queueing the work; see the stream-order invariant.
    pub(crate) fn access_read(&self, op: &'static str, stream: &Stream) -> Result<(), Error> {
        self.access(op, stream, Access::Read)
    }

    /// Orders work about to be queued on `stream` that writes this memory: `stream` waits
    /// for the last write and every read since, and becomes the last writer.
    pub(crate) fn access_write(&mut self, op: &'static str, stream: &Stream) -> Result<(), Error> {
        self.access(op, stream, Access::Write)
    }

    /// Both `access_read` and `access_write`: `Write` is only reached through `&mut self`.
    #[inline]
    fn access(&self, op: &'static str, stream: &Stream, access: Access) -> Result<(), Error> {
        self.gpu.check_stream(op, stream)?;
        if let Some(pool) = &self.pool {
            active::check_pool(op, pool)?;
        }
        active::check_access(
            op,
            stream.id(),
            stream.capture_owner(),
            self.pool.as_ref(),
            self.block.addr(),
            access == Access::Write,
        )?;
        self.order.order(&self.stream, stream, access, |id| {
            self.allocator()
                .record_stream(&self.block, id)
                .map_err(Error::from)
        })
    }

    /// The streams whose queued work a new access on another stream would wait for: the
    /// last writer's first, then the readers' since. One stream (the home stream) while the
    /// memory has only been used there.
    pub fn pending_streams(&self) -> Vec<Stream> {
        self.order.pending_streams(&self.stream)
    }

    /// Copies `src` into this memory on `stream` and waits for the copy.
    pub fn copy_from_host(&mut self, src: &[T], stream: &Stream) -> Result<(), Error> {
        state::check_host_sync(
            "GpuStorage::copy_from_host",
            stream.capture_owner(),
            state::HOST_COPY,
        )?;
        check_len("GpuStorage::copy_from_host", self.len, src.len())?;
        self.access_write("GpuStorage::copy_from_host", stream)?;
        if self.len == 0 {
            return Ok(());
        }
        // SAFETY: `src` is `byte_len()` readable bytes, borrowed for this whole call; the
        // device range is our live block (at least `byte_len()` bytes). The stream is
        // awaited before returning, so the copy is done with `src` before the borrow ends
        // (if the wait fails the context is broken and runs no more work).
        unsafe {
            driver::memcpy_htod_async(
                self.device_ptr_mut(),
                src.as_ptr().cast::<u8>(),
                self.byte_len(),
                stream.cuda(),
            )
        }?;
        Ok(stream.synchronize()?)
    }

    /// Copies this memory into `dst` on `stream` and waits for the copy.
    pub fn copy_to_host(&self, dst: &mut [T], stream: &Stream) -> Result<(), Error> {
        state::check_host_sync(
            "GpuStorage::copy_to_host",
            stream.capture_owner(),
            state::HOST_COPY,
        )?;
        check_len("GpuStorage::copy_to_host", self.len, dst.len())?;
        self.access_read("GpuStorage::copy_to_host", stream)?;
        if self.len == 0 {
            return Ok(());
        }
        // SAFETY: `dst` is `byte_len()` writable bytes, exclusively borrowed for this whole
        // call, and the stream is awaited before returning (as in `copy_from_host`). The
        // device range is our live block, whose elements are initialised `T`s (invariant),
        // and `access_read` ordered this copy after the last write on any stream (the
        // stream-order invariant), so the bytes written into `dst` are valid, current `T`s.
        unsafe {
            driver::memcpy_dtoh_async(
                dst.as_mut_ptr().cast::<u8>(),
                self.device_ptr(),
                self.byte_len(),
                stream.cuda(),
            )
        }?;
        Ok(stream.synchronize()?)
    }

    /// The elements in a `Vec`, copied on `stream` (waits for it).
    pub fn to_vec(&self, stream: &Stream) -> Result<Vec<T>, Error> {
        // Reserved fallibly: a huge storage gives a typed error, not an abort.
        let mut out = crate::host_vec::vec_with_capacity(self.len)?;
        out.resize(self.len, T::ZERO);
        self.copy_to_host(&mut out, stream)?;
        Ok(out)
    }

    /// Copies `src` (device memory of the same GPU) into this memory on `stream` and waits.
    pub fn copy_from_device(&mut self, src: &GpuStorage<T>, stream: &Stream) -> Result<(), Error> {
        state::check_host_sync(
            "GpuStorage::copy_from_device",
            stream.capture_owner(),
            state::SYNC,
        )?;
        self.copy_from_device_async(src, stream)?;
        Ok(stream.synchronize()?)
    }

    /// Queues a copy of `src` (device memory of the same GPU) into this memory on `stream`
    /// and returns at once. Both orders keep it (docs/STREAMS.md): later work on any stream
    /// that uses this memory runs after the copy, and a later write of `src` waits for it.
    pub fn copy_from_device_async(
        &mut self,
        src: &GpuStorage<T>,
        stream: &Stream,
    ) -> Result<(), Error> {
        const OP: &str = "GpuStorage::copy_from_device";
        check_len(OP, self.len, src.len)?;
        if src.gpu.ordinal() != self.gpu.ordinal() {
            return Err(GpuError::DeviceMismatch {
                op: OP,
                lhs: self.gpu.ordinal(),
                rhs: src.gpu.ordinal(),
            }
            .into());
        }
        src.access_read("GpuStorage::copy_from_device_async", stream)?;
        self.access_write("GpuStorage::copy_from_device_async", stream)?;
        if self.len == 0 {
            return Ok(());
        }
        // SAFETY: `access_read`/`access_write` ordered the copy after the last write of `src`
        // and after the last write and reads of `self`, on whatever streams they ran. Both
        // ranges are live blocks of at least `byte_len()` bytes on the stream's
        // device (same ordinal, checked). `&mut self` and `&src` are distinct values, so the
        // blocks do not overlap. Both stay allocated until the copy completes: each is freed
        // in order on its own stream, after `stream`'s work (recorded above).
        unsafe {
            driver::memcpy_dtod_async(
                self.device_ptr_mut(),
                src.device_ptr(),
                self.byte_len(),
                stream.cuda(),
            )
        }?;
        Ok(())
    }

    /// Queues a copy of `src` into this memory on `stream` and returns a guard that keeps
    /// `src` borrowed until the copy is done (it waits on [`PendingCopy::wait`] or drop).
    ///
    /// For ordinary (pageable) memory, CUDA copies the slice into a staging buffer before the
    /// call returns, so the host side is free at once and only the device side is pending.
    /// If `src` lies in page-locked memory (a [`PinnedBuffer`]'s slice, or memory someone
    /// registered with the driver), the call waits for the copy before returning: a guard
    /// alone cannot keep memory borrowed for a truly asynchronous copy, because it may be
    /// leaked with `mem::forget`. For truly asynchronous uploads use
    /// [`copy_from_pinned_async`](Self::copy_from_pinned_async).
    pub fn copy_from_host_async<'a>(
        &mut self,
        src: &'a [T],
        stream: &Stream,
    ) -> Result<PendingCopy<'a>, Error> {
        state::check_host_sync(
            "GpuStorage::copy_from_host_async",
            stream.capture_owner(),
            state::HOST_COPY,
        )?;
        check_len("GpuStorage::copy_from_host_async", self.len, src.len())?;
        self.access_write("GpuStorage::copy_from_host_async", stream)?;
        if self.len == 0 {
            return Ok(PendingCopy::done());
        }
        let host = src.as_ptr().cast::<u8>();
        // SAFETY: `src` is `byte_len()` readable bytes and the device range our live block.
        // `finish_pageable` returns only when the copy is done with `src` (pageable memory:
        // the driver staged it before returning; page-locked: it waits), so the copy never
        // reads `src` after this call, let alone after the borrow ends.
        unsafe {
            driver::memcpy_htod_async(self.block.addr(), host, self.byte_len(), stream.cuda())
        }?;
        Ok(finish_pageable(stream, host, self.gpu.errors())?)
    }

    /// Queues a copy of this memory into `dst` on `stream` and returns a guard that keeps
    /// `dst` borrowed until the copy is done. As for
    /// [`copy_from_host_async`](Self::copy_from_host_async): CUDA finishes copies into pageable
    /// memory before returning, and this call waits for copies into page-locked memory; use
    /// [`copy_to_pinned_async`](Self::copy_to_pinned_async) for truly asynchronous downloads.
    pub fn copy_to_host_async<'a>(
        &self,
        dst: &'a mut [T],
        stream: &Stream,
    ) -> Result<PendingCopy<'a>, Error> {
        state::check_host_sync(
            "GpuStorage::copy_to_host_async",
            stream.capture_owner(),
            state::HOST_COPY,
        )?;
        check_len("GpuStorage::copy_to_host_async", self.len, dst.len())?;
        self.access_read("GpuStorage::copy_to_host_async", stream)?;
        if self.len == 0 {
            return Ok(PendingCopy::done());
        }
        let host = dst.as_mut_ptr().cast::<u8>();
        // SAFETY: `dst` is `byte_len()` writable bytes, exclusively borrowed; the device range
        // is our live block of initialised `T`s, read after the last write (`access_read`).
        // `finish_pageable` returns only when the copy
        // is done writing `dst` (as in `copy_from_host_async`).
        unsafe {
            driver::memcpy_dtoh_async(host, self.block.addr(), self.byte_len(), stream.cuda())
        }?;
        Ok(finish_pageable(
            stream,
            host.cast_const(),
            self.gpu.errors(),
        )?)
    }

    /// Queues a copy of `src` into this memory on `stream` and returns at once: the DMA engine
    /// reads `src` while the host goes on. The guard keeps `src` borrowed until the copy is
    /// done; the buffer itself also tracks the copy (its host access and its free wait for
    /// it), so leaking the guard is harmless. The copy is ordered after earlier copies on `src`.
    pub fn copy_from_pinned_async<'a>(
        &mut self,
        src: &'a PinnedBuffer<T>,
        stream: &Stream,
    ) -> Result<PendingCopy<'a>, Error> {
        state::check_host_sync(
            "GpuStorage::copy_from_pinned_async",
            stream.capture_owner(),
            state::HOST_COPY,
        )?;
        check_len("GpuStorage::copy_from_pinned_async", self.len, src.len())?;
        self.access_write("GpuStorage::copy_from_pinned_async", stream)?;
        if self.len == 0 {
            return Ok(PendingCopy::done());
        }
        src.prepare_copy(stream)?;
        // SAFETY: `src.host_ptr()` is `byte_len()` bytes of initialised page-locked memory and
        // the device range our live block. The host does not write `src` until the copy is
        // done: `as_mut_slice` waits for the event `track_copy` records right below (or the
        // buffer is marked untracked and refuses). Its memory is not reused before then
        // either: `prepare_copy` announced `stream` to its allocator, which at the buffer's
        // drop records an event on `stream` (after this copy) and waits for it before
        // handing the memory out again. The device block stays allocated until the copy
        // completes (freed in order on its stream, after `stream`'s work, recorded above).
        unsafe {
            driver::memcpy_htod_async(
                self.block.addr(),
                src.host_ptr(),
                self.byte_len(),
                stream.cuda(),
            )
        }?;
        let event = src.track_copy(stream)?;
        Ok(PendingCopy::new(event, self.gpu.errors()))
    }

    /// Queues a copy of this memory into `dst` on `stream` and returns at once: the DMA engine
    /// writes `dst` while the host goes on. The guard keeps `dst` borrowed until the copy is
    /// done; `dst` also tracks the copy itself (host access and free wait for it), so leaking
    /// the guard is harmless. The copy is ordered after earlier copies on `dst`.
    pub fn copy_to_pinned_async<'a>(
        &self,
        dst: &'a mut PinnedBuffer<T>,
        stream: &Stream,
    ) -> Result<PendingCopy<'a>, Error> {
        state::check_host_sync(
            "GpuStorage::copy_to_pinned_async",
            stream.capture_owner(),
            state::HOST_COPY,
        )?;
        check_len("GpuStorage::copy_to_pinned_async", self.len, dst.len())?;
        self.access_read("GpuStorage::copy_to_pinned_async", stream)?;
        if self.len == 0 {
            return Ok(PendingCopy::done());
        }
        dst.prepare_copy(stream)?;
        // SAFETY: `dst.host_ptr_mut()` is `byte_len()` bytes of page-locked memory, which no
        // host reference reads or writes until the copy is done: `&mut dst` is borrowed by
        // the guard, and once the borrow ends, `as_slice` and `as_mut_slice` wait for the
        // event `track_copy` records right below. Nor is it reused before: `prepare_copy`
        // announced `stream` to its allocator, which at the buffer's drop records an event
        // on `stream` (after this copy) and waits for it before handing the memory out
        // again. The device range is our live block of initialised `T`s, read after the last
        // write (`access_read`), so `dst` receives
        // valid `T`s.
        unsafe {
            driver::memcpy_dtoh_async(
                dst.host_ptr_mut(),
                self.block.addr(),
                self.byte_len(),
                stream.cuda(),
            )
        }?;
        let event = dst.track_copy(stream)?;
        Ok(PendingCopy::new(event, self.gpu.errors()))
    }
}

/// After a copy to or from a pageable-or-unknown host range: records the copy's end, and waits
/// for it at once if the range is memory the driver may still be using after the call.
fn finish_pageable<'a>(
    stream: &Stream,
    host: *const u8,
    errors: &Arc<ErrorSlot>,
) -> Result<PendingCopy<'a>, GpuError> {
    let event = match stream.record_event() {
        Ok(event) => event,
        Err(e) => {
            stream.synchronize()?;
            return Err(e);
        }
    };
    if driver::is_driver_host_memory(stream.context(), host) {
        // Truly asynchronous: the host range must outlive the copy, which only waiting can
        // promise (see `copy_from_host_async`).
        event.synchronize()?;
    }
    Ok(PendingCopy::new(Arc::new(event), errors))
}

impl<T: Element> Drop for GpuStorage<T> {
    fn drop(&mut self) {
        let empty = Block::empty(self.block.stream());
        let block = std::mem::replace(&mut self.block, empty);
        // Relaxed if this thread is capturing: the allocator may record or query events.
        if let Err(e) = state::relaxed(|| self.allocator().free(block).map_err(Error::from)) {
            self.gpu.errors().record(e);
        }
    }
}

impl<T: Element> crate::device::Storage<T> for GpuStorage<T> {
    fn len(&self) -> usize {
        self.len
    }
}

impl<T: Element> fmt::Debug for GpuStorage<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GpuStorage")
            .field("dtype", &T::DTYPE)
            .field("len", &self.len)
            .field("ordinal", &self.gpu.ordinal())
            .field("addr", &format_args!("{:#x}", self.block.addr()))
            .field("stream", &self.stream)
            .finish()
    }
}

/// A copy that may still be running, with the host memory it reads or writes borrowed for
/// `'a`. [`wait`](Self::wait) (or drop) blocks until it is done.
///
/// Soundness never rests on this guard being dropped (`mem::forget` is safe): the functions
/// that return one either finish with the host memory before returning (pageable memory) or
/// hand the tracking to the [`PinnedBuffer`] involved.
#[must_use = "dropping a PendingCopy waits for the copy at once; call `wait` to see errors"]
pub struct PendingCopy<'a> {
    event: Option<Arc<Event>>,
    errors: Option<Arc<ErrorSlot>>,
    _host: PhantomData<&'a mut ()>,
}

impl PendingCopy<'_> {
    fn done() -> Self {
        PendingCopy {
            event: None,
            errors: None,
            _host: PhantomData,
        }
    }

    fn new(event: Arc<Event>, errors: &Arc<ErrorSlot>) -> Self {
        PendingCopy {
            event: Some(event),
            errors: Some(Arc::clone(errors)),
            _host: PhantomData,
        }
    }

    /// Whether the copy has finished (never blocks).
    pub fn is_complete(&self) -> Result<bool, GpuError> {
        self.event.as_ref().map_or(Ok(true), |e| e.is_complete())
    }

    /// Releases the guard without waiting, for copies whose host memory tracks them itself
    /// (a [`PinnedBuffer`]: its reads, writes and free wait for its pending copies). For
    /// pageable memory the copy was done with the host range before the guard was returned,
    /// so releasing it early is sound too; only the wait for the device side is skipped.
    pub fn detach(mut self) {
        self.event.take();
    }

    /// Blocks until the copy has finished, releasing the borrow.
    pub fn wait(mut self) -> Result<(), GpuError> {
        match self.event.take() {
            Some(event) => event.synchronize(),
            None => Ok(()),
        }
    }
}

impl Drop for PendingCopy<'_> {
    fn drop(&mut self) {
        if let Some(event) = self.event.take() {
            if let Err(e) = event.synchronize() {
                if let Some(errors) = &self.errors {
                    errors.record(e);
                }
            }
        }
    }
}

impl fmt::Debug for PendingCopy<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PendingCopy")
            .field("tracked", &self.event.is_some())
            .finish()
    }
}

static_assertions::assert_impl_all!(GpuStorage<f32>: Send, Sync, crate::device::Storage<f32>);
static_assertions::assert_impl_all!(GpuStorage<bool>: Send, Sync);
static_assertions::assert_not_impl_any!(GpuStorage<f32>: Clone);
static_assertions::assert_impl_all!(PendingCopy<'static>: Send, Sync);

/// `Gpu` as a [`Device`](crate::device::Device) (written here, with the storage it names,
/// so that `device.rs` does not import buffers: buffers need the device, not the reverse).
impl crate::device::sealed::Sealed for Gpu {}

impl crate::device::Device for Gpu {
    type Storage<T: Element> = GpuStorage<T>;

    fn name(&self) -> String {
        format!("cuda:{}", self.ordinal())
    }
}

static_assertions::assert_impl_all!(Gpu: crate::device::Device);

impl Gpu {
    /// Zero-filled device memory for `len` elements, queued on the default stream
    /// (shorthand for [`GpuStorage::zeros`]).
    pub fn zeros<T: Element>(&self, len: usize) -> Result<GpuStorage<T>, Error> {
        GpuStorage::zeros(self, len, self.default_stream())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_len_checks_overflow() {
        assert_eq!(byte_len::<f64>("t", 3), Ok(24));
        assert_eq!(byte_len::<u8>("t", usize::MAX), Ok(usize::MAX));
        assert_eq!(
            byte_len::<f32>("t", usize::MAX / 2),
            Err(LayoutError::SizeOverflow {
                op: "t",
                shape: vec![usize::MAX / 2],
                what: "bytes"
            })
        );
    }

    #[test]
    fn length_mismatch_names_both_lengths() {
        assert_eq!(check_len("op", 4, 4), Ok(()));
        assert_eq!(
            check_len("op", 4, 5),
            Err(LayoutError::LengthMismatch {
                op: "op",
                shape: vec![4],
                expected: 4,
                got: 5
            })
        );
    }
}
