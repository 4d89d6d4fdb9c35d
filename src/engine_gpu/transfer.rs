//! Moving tensors between the CPU and a GPU: host-to-device, device-to-host and
//! device-to-device copies on a stream, synchronous and asynchronous.
//!
//! The synchronous forms take any layout and return a row-major tensor on the other side.
//! The asynchronous forms do not wait for the stream, but a host tensor's memory is pageable,
//! so they return only once the copy is done with it: CUDA stages an upload's source before
//! the call returns and finishes a download into pageable memory before returning (host
//! memory that happens to be page-locked is waited for). What may still run is the device
//! side of an upload; the returned [`PendingCopy`] keeps the host tensor borrowed and waits
//! for the copy on [`PendingCopy::wait`] or drop. The GPU tensor's memory orders every later
//! use after the copy, on any stream (docs/STREAMS.md). They need a row-major host tensor
//! because the DMA engine reads and writes one contiguous range. Uploads and downloads that
//! overlap host work go through a [`PinnedBuffer`](crate::runtime::PinnedBuffer)
//! ([`GpuStorage::copy_from_pinned_async`], [`GpuStorage::copy_to_pinned_async`]).

use crate::device::Cpu;
use crate::element::Element;
use crate::error::{LayoutError, Result};
use crate::layout::Layout;
use crate::runtime::graph::state;
use crate::runtime::{Gpu, GpuStorage, PendingCopy, Stream};
use crate::tensor::{Tensor, TensorView, Transfer};

impl<T: Element> Tensor<T, Cpu> {
    /// A row-major copy on `gpu`, made on its default stream (waits for the copy).
    pub fn to_gpu(&self, gpu: &Gpu) -> Result<Tensor<T, Gpu>> {
        self.to_gpu_on(gpu, gpu.default_stream())
    }

    /// A row-major copy on `gpu`, made on `stream` (waits for the copy). Any layout: a
    /// strided tensor is gathered on the host first.
    pub fn to_gpu_on(&self, gpu: &Gpu, stream: &Stream) -> Result<Tensor<T, Gpu>> {
        let gathered;
        let data = match self.as_slice() {
            Some(s) => s,
            None => {
                gathered = self.try_to_vec()?;
                &gathered
            }
        };
        let storage = GpuStorage::from_host(gpu, data, stream)?;
        Ok(Tensor::from_parts(
            storage,
            Layout::contiguous(self.shape())?,
            gpu.clone(),
        )?)
    }

    /// Queues the upload of this row-major tensor to `gpu` on `stream` (the new device memory
    /// is allocated, zero-filled, on `stream` too) and returns without waiting for the
    /// stream, once the driver has staged the host data (see the module docs), with the
    /// device tensor and a guard that keeps `self` borrowed and waits for the copy on drop.
    /// The device tensor orders every later use after the upload, on `stream` or any other
    /// stream (docs/STREAMS.md): no `Stream::wait_stream` is needed.
    ///
    /// Errors with [`LayoutError::NotDense`] for a non-row-major tensor: call
    /// [`contiguous`](Tensor::contiguous) first, or use [`to_gpu_on`](Self::to_gpu_on).
    pub fn to_gpu_async<'a>(
        &'a self,
        gpu: &Gpu,
        stream: &Stream,
    ) -> Result<(Tensor<T, Gpu>, PendingCopy<'a>)> {
        let data = self
            .as_slice()
            .ok_or_else(|| not_dense("Tensor::to_gpu_async", self))?;
        // Zero-filled rather than uninitialised: the memset runs at device bandwidth, far
        // faster than the upload it precedes, and keeps this module free of `unsafe`.
        let mut storage = GpuStorage::zeros(gpu, data.len(), stream)?;
        let pending = storage.copy_from_host_async(data, stream)?;
        let tensor = Tensor::from_parts(storage, Layout::contiguous(self.shape())?, gpu.clone())?;
        Ok((tensor, pending))
    }
}

impl<T: Element> Tensor<T, Gpu> {
    /// A row-major copy on the host, made on the GPU's default stream (waits for the copy).
    pub fn to_cpu(&self) -> Result<Tensor<T, Cpu>> {
        self.to_cpu_on(self.device().default_stream())
    }

    /// A row-major copy on the host, made on `stream` (waits for the copy). A strided tensor
    /// is made row-major on the GPU first.
    pub fn to_cpu_on(&self, stream: &Stream) -> Result<Tensor<T, Cpu>> {
        let packed;
        let dense = match self.dense_storage() {
            Some(storage) => storage,
            None => {
                packed = self.contiguous()?;
                packed.storage()
            }
        };
        let mut host = crate::tensor::Backend::zeros(&Cpu, dense.len())?;
        dense.copy_to_host(&mut host, stream)?;
        Tensor::from_vec(self.shape(), host)
    }

    /// Queues the download of this tensor into the row-major host tensor `out` (same shape)
    /// on `stream`, after the last write to it on any stream, and returns once the copy is
    /// done with `out` (CUDA finishes a copy into pageable memory before returning; see the
    /// module docs), without waiting for other work on `stream`. The guard keeps `out`
    /// borrowed until it is dropped.
    ///
    /// Errors: [`LayoutError::ShapeMismatch`] for another shape, [`LayoutError::NotDense`]
    /// when `self` does not cover its whole storage in row-major order or `out` is not
    /// row-major (make either contiguous first).
    pub fn to_cpu_async<'a>(
        &self,
        out: &'a mut Tensor<T, Cpu>,
        stream: &Stream,
    ) -> Result<PendingCopy<'a>> {
        const OP: &str = "Tensor::to_cpu_async";
        if out.shape() != self.shape() {
            return Err(LayoutError::ShapeMismatch {
                op: OP,
                expected: self.shape().to_vec(),
                got: out.shape().to_vec(),
            }
            .into());
        }
        let src = self.dense_storage().ok_or_else(|| not_dense(OP, self))?;
        let out_layout = (out.shape().to_vec(), out.strides().to_vec());
        let dst = out.as_slice_mut().ok_or(LayoutError::NotDense {
            op: OP,
            shape: out_layout.0,
            strides: out_layout.1,
        })?;
        src.copy_to_host_async(dst, stream)
    }

    /// A row-major device-to-device copy on the same GPU (made on the default stream).
    pub fn to_gpu_copy(&self) -> Result<Tensor<T, Gpu>> {
        self.contiguous()
    }

    /// The storage, when this tensor is its whole content in row-major order.
    fn dense_storage(&self) -> Option<&GpuStorage<T>> {
        let layout = self.layout();
        let whole = layout.is_contiguous() && layout.offset() == 0;
        (whole && layout.numel() == self.storage().len()).then(|| self.storage())
    }
}

impl Transfer for Gpu {
    /// The view made row-major on the GPU when it is not its whole storage in row-major
    /// order already, then copied to the host on the default stream. Refused while this
    /// thread captures a CUDA graph before anything is queued, so printing a tensor inside
    /// [`Gpu::capture`] neither records a copy kernel nor fails the capture.
    fn to_host<T: Element>(&self, src: &TensorView<'_, T, Gpu>) -> Result<Vec<T>> {
        self.check_host_copy()?;
        let stream = self.default_stream();
        if src.numel() == 0 {
            return Ok(Vec::new());
        }
        let layout = src.layout();
        let whole =
            layout.is_contiguous() && layout.offset() == 0 && layout.numel() == src.storage().len();
        if whole {
            src.storage().to_vec(stream)
        } else {
            let packed = src.contiguous()?;
            packed.storage().to_vec(stream)
        }
    }

    /// Refused while this thread captures a CUDA graph (or another thread captures on the
    /// default stream).
    fn check_host_copy(&self) -> Result<()> {
        let stream = self.default_stream();
        state::check_host_sync("Tensor::to_host", stream.capture_owner(), state::HOST_COPY)?;
        Ok(())
    }

    /// New device memory holding `data`, copied on the default stream (waited for).
    fn host_to_storage<T: Element>(&self, data: &[T]) -> Result<GpuStorage<T>> {
        GpuStorage::from_host(self, data, self.default_stream())
    }
}

fn not_dense<T: Element, D: crate::device::Device>(
    op: &'static str,
    t: &Tensor<T, D>,
) -> crate::error::Error {
    LayoutError::NotDense {
        op,
        shape: t.shape().to_vec(),
        strides: t.strides().to_vec(),
    }
    .into()
}
