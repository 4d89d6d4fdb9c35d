//! The copies of a [`GpuStorage`]: to and from host memory (waiting, or queued with a
//! [`PendingCopy`] that borrows the host memory), pinned buffers and device memory of the same
//! GPU. Copies between GPUs are `runtime/peer/`.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use super::{check_len, GpuStorage};
use crate::element::Element;
use crate::error::{Error, GpuError};
use crate::runtime::driver;
use crate::runtime::error_slot::ErrorSlot;
use crate::runtime::event::Event;
use crate::runtime::graph::state;
use crate::runtime::pinned_buffer::PinnedBuffer;
use crate::runtime::stream::Stream;

impl<T: Element> GpuStorage<T> {
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

static_assertions::assert_impl_all!(PendingCopy<'static>: Send, Sync);
