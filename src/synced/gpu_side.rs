//! The GPU side of [`SyncedMemory`] and [`AnySyncedMemory`]: memory tied to a [`Gpu`],
//! adopting device buffers (Caffe `set_gpu_data`), and borrowing the device copy.
//!
//! Memory tied to a GPU copies on one stream (the *memory's stream*, the GPU's default
//! stream unless given): every transition queues its copy there and waits for it. Work on
//! other streams is ordered by the device buffer itself (docs/STREAMS.md): a transition's
//! copy waits for a write queued on any stream, and a write waits for reads on any stream.

use super::accel::GpuAccel;
use super::any::AnySyncedMemory;
use super::host::{HostBuffer, HostSlot, OwnedHost};
use super::raw::RawSynced;
use super::state::{
    GpuReadable, GpuWritable, HeadAtCpu, HeadAtGpu, HeadState, Settled, Uninitialized,
};
use super::synced_memory::SyncedMemory;
use super::transition_error::TransitionError;
use crate::element::Element;
use crate::error::{Error, GpuError, LayoutError, StateError};
use crate::runtime::{Gpu, GpuStorage, GpuStorageMut, Stream};

impl<T: Element> SyncedMemory<T, Uninitialized> {
    /// Memory of `len` elements tied to `gpu`, copying on its default stream; its CPU copy
    /// will be page-locked. Nothing is allocated yet (Caffe's `SyncedMemory(size)` in GPU
    /// mode).
    pub fn with_gpu(gpu: &Gpu, len: usize) -> Result<Self, Error> {
        Self::tied(GpuAccel::on_default_stream(gpu), len)
    }

    /// Memory of `len` elements tied to `gpu`, copying on `stream` (one of `gpu`'s).
    pub fn with_gpu_stream(gpu: &Gpu, stream: &Stream, len: usize) -> Result<Self, Error> {
        Self::tied(GpuAccel::new(gpu, stream)?, len)
    }

    fn tied(accel: GpuAccel, len: usize) -> Result<Self, Error> {
        Ok(Self::from_raw(Box::new(RawSynced::new(
            "SyncedMemory::with_gpu",
            len,
            OwnedHost::empty(),
            Some(accel),
        )?)))
    }
}

impl<T: Element> SyncedMemory<T, HeadAtCpu> {
    /// Memory tied to `gpu` whose CPU copy is `data` (adopted as is: pageable, so copies of
    /// it are not asynchronous).
    pub fn from_vec_with_gpu(gpu: &Gpu, data: Vec<T>) -> Self {
        Self::from_raw(Box::new(RawSynced::from_host_buffer(
            OwnedHost::adopt(HostBuffer::from_vec(data)),
            Some(GpuAccel::on_default_stream(gpu)),
        )))
    }
}

impl<'a, T: Element> SyncedMemory<T, HeadAtCpu, &'a mut [T]> {
    /// Memory tied to `gpu` whose CPU side is `buf`, borrowed for `'a` (see
    /// [`SyncedMemory::borrow_cpu`]).
    pub fn borrow_cpu_with_gpu(gpu: &Gpu, buf: &'a mut [T]) -> Self {
        Self::from_raw(Box::new(RawSynced::from_host_buffer(
            buf,
            Some(GpuAccel::on_default_stream(gpu)),
        )))
    }
}

impl<T: Element> SyncedMemory<T, HeadAtGpu> {
    /// Memory whose GPU copy is `storage` (Caffe `set_gpu_data`, owned): tied to the
    /// storage's GPU, copying on the storage's stream. The CPU side is allocated on first use.
    pub fn from_gpu_storage(storage: GpuStorage<T>) -> Result<Self, Error> {
        let accel = GpuAccel::new(storage.gpu(), storage.stream())?;
        let mut raw = RawSynced::new(
            "SyncedMemory::from_gpu_storage",
            storage.len(),
            OwnedHost::empty(),
            Some(accel),
        )?;
        raw.replace_device(storage);
        Ok(Self::from_raw(Box::new(raw)))
    }
}

impl<T: Element, S: HeadState, H: HostSlot<T>> SyncedMemory<T, S, H> {
    /// The GPU the memory is tied to, if any.
    pub fn gpu_device(&self) -> Option<&Gpu> {
        self.raw.accel().map(GpuAccel::gpu)
    }

    /// The stream transitions copy on, if the memory is tied to a GPU.
    pub fn stream(&self) -> Option<&Stream> {
        self.raw.accel().map(GpuAccel::stream)
    }

    /// The GPU copy (Caffe `gpu_data()` once readable). No copy, no state change. It may be
    /// read on any stream of its GPU: the storage orders that work after its last write
    /// (docs/STREAMS.md).
    pub fn gpu(&self) -> &GpuStorage<T>
    where
        S: GpuReadable,
    {
        match self.raw.device() {
            Some(d) => d,
            None => unreachable!("invariant 2: a GpuReadable state has a GPU copy"),
        }
    }

    /// The GPU copy, writable (Caffe `mutable_gpu_data()` once the GPU side is the head).
    ///
    /// A [`GpuStorageMut`] rather than `&mut GpuStorage`: it writes, but cannot be swapped
    /// for a storage of another length or GPU under the memory.
    pub fn gpu_mut(&mut self) -> GpuStorageMut<'_, T>
    where
        S: GpuWritable,
    {
        // Invariant 2: a GpuWritable state has a GPU copy (and so a device, invariant 6).
        let (d, accel) = self.raw.device_mut_and_accel();
        GpuStorageMut::new(d, accel.gpu())
    }

    /// Replaces the GPU side with `storage` and makes it the head (Caffe `set_gpu_data`):
    /// the CPU copy, if any, is kept as a buffer but now stale. Returns the memory and the
    /// old device buffer. A length or device mismatch, or memory not tied to a GPU, hands
    /// both back.
    // The error hands back both inputs, the device buffer included: large, on a rare path.
    #[allow(clippy::type_complexity, clippy::result_large_err)]
    pub fn set_gpu_data(
        mut self,
        storage: GpuStorage<T>,
    ) -> Result<
        (SyncedMemory<T, HeadAtGpu, H>, Option<GpuStorage<T>>),
        TransitionError<(Self, GpuStorage<T>)>,
    >
    where
        S: Settled,
    {
        if let Some(error) = check_gpu_data("SyncedMemory::set_gpu_data", &self.raw, &storage) {
            return Err(TransitionError::new((self, storage), error));
        }
        let old = self.raw.replace_device(storage);
        Ok((SyncedMemory::from_raw(self.raw), old))
    }
}

impl<T: Element, H: HostSlot<T>> SyncedMemory<T, HeadAtGpu, H> {
    /// [`set_gpu_data`](Self::set_gpu_data) through `&mut self`, for memory whose GPU side is
    /// already the head (the state stays `HeadAtGpu`): replaces the GPU buffer with
    /// `storage` and returns the old one. A length or device mismatch hands `storage` back.
    #[allow(clippy::result_large_err)] // hands the device buffer back, on a rare path
    pub fn set_gpu_data_in_place(
        &mut self,
        storage: GpuStorage<T>,
    ) -> Result<Option<GpuStorage<T>>, TransitionError<GpuStorage<T>>> {
        const OP: &str = "SyncedMemory::set_gpu_data_in_place";
        if let Some(error) = check_gpu_data(OP, &self.raw, &storage) {
            return Err(TransitionError::new(storage, error));
        }
        Ok(self.raw.replace_device(storage))
    }
}

/// Why `storage` cannot become the GPU side of `raw`, if it cannot: memory not tied to a
/// GPU, another GPU, or another length.
fn check_gpu_data<T: Element, H: HostSlot<T>>(
    op: &'static str,
    raw: &RawSynced<T, H, GpuAccel>,
    storage: &GpuStorage<T>,
) -> Option<Error> {
    match raw.accel().map(GpuAccel::gpu) {
        None => Some(StateError::NoGpu { op }.into()),
        Some(g) if g.ordinal() != storage.gpu().ordinal() => Some(
            GpuError::DeviceMismatch {
                op,
                lhs: g.ordinal(),
                rhs: storage.gpu().ordinal(),
            }
            .into(),
        ),
        Some(_) if storage.len() != raw.len() => Some(
            LayoutError::ShapeMismatch {
                op,
                expected: vec![raw.len()],
                got: vec![storage.len()],
            }
            .into(),
        ),
        Some(_) => None,
    }
}

impl<T: Element, H: HostSlot<T>> AnySyncedMemory<T, H> {
    /// Caffe `gpu_data()`: makes the GPU copy readable (allocating or copying as
    /// [`SyncedMemory::into_gpu`] does) and borrows it.
    pub fn gpu_data(&mut self) -> Result<&GpuStorage<T>, Error> {
        self.step(RawSynced::ensure_gpu_readable)?;
        match self.raw().device() {
            Some(d) => Ok(d),
            None => unreachable!("a GPU-readable head has a GPU copy"),
        }
    }

    /// Caffe `mutable_gpu_data()`: syncs the GPU copy if stale, makes it the head, and
    /// lends it for writing.
    pub fn mutable_gpu_data(&mut self) -> Result<GpuStorageMut<'_, T>, Error> {
        self.step(RawSynced::make_gpu_head)?;
        let (d, accel) = self.raw_mut().device_mut_and_accel();
        Ok(GpuStorageMut::new(d, accel.gpu()))
    }
}
