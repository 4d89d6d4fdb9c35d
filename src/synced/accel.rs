//! The seam between the head state machine and a device: the few calls the machine makes.
//!
//! [`RawSynced`](super::raw::RawSynced) is generic over an [`Accel`] so the machine's logic
//! (when to allocate, when to copy, what to count) is tested in CI against [`SimAccel`]
//! (host vectors standing in for device memory, with failure injection), and runs on the GPU
//! through the `Gpu` implementation, the one place this module calls the GPU runtime.

use super::host::HostBuffer;
use crate::element::Element;
use crate::error::{Error, GpuError};
use crate::runtime::{Gpu, GpuStorage, PinnedBuffer, Stream};

/// What the state machine needs from a device: zero-filled allocations on both sides and
/// blocking copies. Every call is fallible and leaves its arguments valid on failure.
pub(crate) trait Accel: Clone + std::fmt::Debug + Send + Sync + 'static {
    /// Device memory of `T`.
    type Buf<T: Element>: Send + Sync;
    /// Zero-filled device memory of `len` elements.
    fn alloc_device<T: Element>(&self, len: usize) -> Result<Self::Buf<T>, Error>;
    /// Zero-filled host memory of `len` elements suited to copies with this device (pinned).
    fn alloc_host<T: Element>(&self, len: usize) -> Result<HostBuffer<T>, Error>;
    /// Copies `src` into `dst` (same length), returning when done.
    fn upload<T: Element>(&self, src: &[T], dst: &mut Self::Buf<T>) -> Result<(), Error>;
    /// Copies `src` into `dst` (same length), returning when done.
    fn download<T: Element>(&self, src: &Self::Buf<T>, dst: &mut [T]) -> Result<(), Error>;

    /// A queue of device work.
    type Stream;
    /// Queues a copy of `src` into `dst` on `stream`. A page-locked `src` tracks the copy
    /// itself (its host access and its free wait for it); other memory is copied before this
    /// returns.
    fn upload_async<T: Element>(
        &self,
        src: &HostBuffer<T>,
        dst: &mut Self::Buf<T>,
        stream: &Self::Stream,
    ) -> Result<(), Error>;
    /// Blocks until every copy queued on `buf` has finished.
    fn wait_host<T: Element>(&self, buf: &HostBuffer<T>) -> Result<(), Error>;
    /// Makes later work on `stream` wait for the copies queued on `buf`, and prepares `dev`
    /// for use on `stream`.
    fn order_after<T: Element>(
        &self,
        buf: &HostBuffer<T>,
        dev: &Self::Buf<T>,
        stream: &Self::Stream,
    ) -> Result<(), Error>;

    /// Keeps an error raised where none can be returned (a `Drop`) for the owner to collect
    /// later: the GPU's error slot, read by [`Gpu::check_err`].
    fn record_err(&self, error: Error);
}

/// The GPU a memory is tied to and its stream: every copy a transition makes runs on that
/// stream and is waited for, and device memory is allocated (zero-filled) on it.
///
/// Invariant: `gpu` queues on `stream` (`gpu.default_stream()` is `stream` outside a
/// capture), so tensor ops on views of the memory through `gpu` (Blob math, the blob's
/// views) run in order with its copies.
#[derive(Clone, Debug)]
pub(crate) struct GpuAccel {
    gpu: Gpu,
    stream: Stream,
}

impl GpuAccel {
    /// Ties memory to `gpu`, copying on `stream` (which must belong to it).
    pub(crate) fn new(gpu: &Gpu, stream: &Stream) -> Result<Self, Error> {
        if stream.ordinal() != gpu.ordinal() {
            return Err(GpuError::DeviceMismatch {
                op: "SyncedMemory::with_gpu_stream",
                lhs: gpu.ordinal(),
                rhs: stream.ordinal(),
            }
            .into());
        }
        Ok(GpuAccel {
            gpu: gpu.on(stream)?,
            stream: stream.clone(),
        })
    }

    /// Ties memory to `gpu`, copying on its default stream.
    pub(crate) fn on_default_stream(gpu: &Gpu) -> Self {
        GpuAccel {
            gpu: gpu.clone(),
            stream: gpu.default_stream().clone(),
        }
    }

    /// The GPU, as a handle that queues on [`stream`](Self::stream).
    pub(crate) fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    pub(crate) fn stream(&self) -> &Stream {
        &self.stream
    }
}

impl Accel for GpuAccel {
    type Buf<T: Element> = GpuStorage<T>;
    fn alloc_device<T: Element>(&self, len: usize) -> Result<GpuStorage<T>, Error> {
        GpuStorage::zeros(&self.gpu, len, &self.stream)
    }
    fn alloc_host<T: Element>(&self, len: usize) -> Result<HostBuffer<T>, Error> {
        Ok(HostBuffer::pinned(PinnedBuffer::zeros(&self.gpu, len)?))
    }
    fn upload<T: Element>(&self, src: &[T], dst: &mut GpuStorage<T>) -> Result<(), Error> {
        dst.copy_from_host(src, &self.stream)
    }
    fn download<T: Element>(&self, src: &GpuStorage<T>, dst: &mut [T]) -> Result<(), Error> {
        src.copy_to_host(dst, &self.stream)
    }

    type Stream = Stream;
    fn upload_async<T: Element>(
        &self,
        src: &HostBuffer<T>,
        dst: &mut GpuStorage<T>,
        stream: &Stream,
    ) -> Result<(), Error> {
        match src.as_pinned() {
            Some(pinned) => {
                // The pinned buffer tracks the copy (its host access and its free wait for
                // it), so the guard is released at once: the push runs while the caller goes
                // on, and `InFlight::wait` / `gpu_after` order what follows.
                dst.copy_from_pinned_async(pinned, stream)?.detach();
                Ok(())
            }
            None => dst.copy_from_host(src.as_slice(), stream),
        }
    }
    fn wait_host<T: Element>(&self, buf: &HostBuffer<T>) -> Result<(), Error> {
        match buf.as_pinned() {
            Some(pinned) => Ok(pinned.wait()?),
            None => Ok(()),
        }
    }
    fn order_after<T: Element>(
        &self,
        buf: &HostBuffer<T>,
        dev: &GpuStorage<T>,
        stream: &Stream,
    ) -> Result<(), Error> {
        if let Some(pinned) = buf.as_pinned() {
            pinned.prepare_copy(stream)?;
        }
        dev.access_read("SyncedMemory::gpu_after", stream)
    }

    fn record_err(&self, error: Error) {
        self.gpu.errors().record(error);
    }
}

#[cfg(test)]
pub(crate) use sim::{SimAccel, SimOp};

#[cfg(test)]
mod sim {
    use super::*;
    use crate::error::AllocError;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::{Arc, Mutex};

    /// Host vectors standing in for device memory. `fail_next(op)` makes the next call of
    /// that kind fail, to test that failed transitions leave the memory unchanged.
    #[derive(Clone, Debug, Default)]
    pub(crate) struct SimAccel {
        fail: Arc<AtomicU32>,
        recorded: Arc<Mutex<Option<Error>>>,
    }

    /// Which call to fail (bit flags in `SimAccel::fail`).
    #[derive(Clone, Copy, Debug)]
    pub(crate) enum SimOp {
        AllocDevice = 1,
        AllocHost = 2,
        Upload = 4,
        Download = 8,
    }

    impl SimAccel {
        pub(crate) fn fail_next(&self, op: SimOp) {
            self.fail.fetch_or(op as u32, Ordering::SeqCst);
        }

        /// The first error recorded by `record_err` since the last call (`Gpu::check_err`).
        pub(crate) fn take_recorded(&self) -> Option<Error> {
            self.recorded.lock().ok()?.take()
        }

        fn check(&self, op: SimOp) -> Result<(), Error> {
            let bit = op as u32;
            if self.fail.fetch_and(!bit, Ordering::SeqCst) & bit == 0 {
                return Ok(());
            }
            Err(match op {
                SimOp::AllocDevice | SimOp::AllocHost => {
                    Error::Alloc(AllocError::Source(format!("simulated failure of {op:?}")))
                }
                SimOp::Upload | SimOp::Download => Error::Gpu(GpuError::Driver {
                    call: "simulated copy",
                    message: format!("simulated failure of {op:?}"),
                }),
            })
        }
    }

    impl Accel for SimAccel {
        type Buf<T: Element> = Vec<T>;
        fn alloc_device<T: Element>(&self, len: usize) -> Result<Vec<T>, Error> {
            self.check(SimOp::AllocDevice)?;
            Ok(vec![T::ZERO; len])
        }
        fn alloc_host<T: Element>(&self, len: usize) -> Result<HostBuffer<T>, Error> {
            self.check(SimOp::AllocHost)?;
            HostBuffer::zeroed_plain(len)
        }
        fn upload<T: Element>(&self, src: &[T], dst: &mut Vec<T>) -> Result<(), Error> {
            self.check(SimOp::Upload)?;
            dst.copy_from_slice(src);
            Ok(())
        }
        fn download<T: Element>(&self, src: &Vec<T>, dst: &mut [T]) -> Result<(), Error> {
            self.check(SimOp::Download)?;
            dst.copy_from_slice(src);
            Ok(())
        }

        type Stream = ();
        fn upload_async<T: Element>(
            &self,
            src: &HostBuffer<T>,
            dst: &mut Vec<T>,
            _stream: &(),
        ) -> Result<(), Error> {
            self.upload(src.as_slice(), dst)
        }
        fn wait_host<T: Element>(&self, _buf: &HostBuffer<T>) -> Result<(), Error> {
            Ok(())
        }
        fn order_after<T: Element>(
            &self,
            _buf: &HostBuffer<T>,
            _dev: &Vec<T>,
            _stream: &(),
        ) -> Result<(), Error> {
            Ok(())
        }
        fn record_err(&self, error: Error) {
            if let Ok(mut slot) = self.recorded.lock() {
                slot.get_or_insert(error);
            }
        }
    }
}
