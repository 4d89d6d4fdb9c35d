//! Moving tensors between the CPU and a GPU: host-to-device, device-to-host and
//! device-to-device copies on a stream, synchronous and asynchronous; and between GPUs
//! (`Tensor::to_device`, consuming, and `copy_from_peer`, into existing elements), through the
//! runtime's peer copies (`runtime/peer/`: direct where the GPUs allow it, staged through
//! pinned host memory otherwise, ordered on both GPUs' streams).
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
use crate::error::{Handback, LayoutError, Result};
use crate::layout::Layout;
use crate::ops::table::Identity;
use crate::runtime::graph::state;
use crate::runtime::peer::{copy_range, peer_copy_range};
use crate::runtime::{Gpu, GpuStorage, PeerPath, PeerRoute, PendingCopy, Stream};
use crate::tensor::{AsView, ReadRepr, Tensor, TensorView, TensorViewMut, Transfer, WriteRepr};

use super::pointwise::launch as pointwise;

/// Uploads, on every host representation: owned tensors and views (`x.t().to_gpu(&gpu)?`).
impl<T: Element, S: ReadRepr<T, Cpu>> Tensor<T, Cpu, S> {
    /// A row-major copy on `gpu`, made on its default stream (waits for the copy).
    pub fn to_gpu(&self, gpu: &Gpu) -> Result<Tensor<T, Gpu>> {
        self.to_gpu_on(gpu, gpu.default_stream())
    }

    /// A row-major copy on `gpu`, made on `stream` (waits for the copy). Any layout: a
    /// strided tensor is gathered on the host first.
    pub fn to_gpu_on(&self, gpu: &Gpu, stream: &Stream) -> Result<Tensor<T, Gpu>> {
        let gathered;
        let view = self.view();
        let data = match view.as_slice() {
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
        let view = self.view();
        let data = view
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

/// Downloads, on every GPU representation: owned tensors and views (`g.t().to_cpu()?`).
impl<T: Element, S: ReadRepr<T, Gpu>> Tensor<T, Gpu, S> {
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
        let storage: &GpuStorage<T> = self.view().storage();
        (whole && layout.numel() == storage.len()).then_some(storage)
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

fn not_dense<T: Element, D: crate::tensor::Backend, S: crate::tensor::Repr<T, D>>(
    op: &'static str,
    t: &Tensor<T, D, S>,
) -> crate::error::Error {
    LayoutError::NotDense {
        op,
        shape: t.shape().to_vec(),
        strides: t.strides().to_vec(),
    }
    .into()
}

// ---------------------------------------------------------------------------------------------
// Between GPUs
// ---------------------------------------------------------------------------------------------

/// A copy of `view` on `gpu`, made on `stream` (a stream of either GPU) as `path` says. A view
/// whose elements are exactly its storage (any order, no gaps: a dense permutation, a flip)
/// is copied whole and keeps its layout; any other view is made row-major on its own GPU first
/// (one Apply kernel on its default stream), then copied.
fn copy_view_to<T: Element>(
    view: &TensorView<'_, T, Gpu>,
    gpu: &Gpu,
    stream: &Stream,
    path: PeerPath,
) -> Result<(Tensor<T, Gpu>, PeerRoute)> {
    const OP: &str = "Tensor::to_device";
    let storage = view.storage();
    let layout = view.layout();
    if layout.numel() == storage.len() && layout.is_non_overlapping() {
        let (out, route) = peer_copy_range(OP, storage, 0, storage.len(), gpu, stream, path)?;
        return Ok((Tensor::from_parts(out, layout.clone(), gpu.clone())?, route));
    }
    let packed = view.contiguous()?;
    let len = packed.storage().len();
    let (out, route) = peer_copy_range(OP, packed.storage(), 0, len, gpu, stream, path)?;
    Ok((
        Tensor::from_parts(out, packed.layout().clone(), gpu.clone())?,
        route,
    ))
}

/// Generates `to_device` and `to_device_via` for one borrowed representation.
macro_rules! view_to_device {
    ($ty:ty) => {
        impl<'a, T: Element> $ty {
            /// Consumes the view and returns a copy of its elements on `gpu` (this GPU
            /// included: then a row-major copy), made on this view's GPU's default stream
            /// the way the destination GPU's [`peer_path`](Gpu::peer_path) says. The view's borrow ends here; a failure
            /// hands the view back. See [`Tensor::to_device`].
            #[allow(clippy::result_large_err)] // hands the view back
            pub fn to_device(self, gpu: &Gpu) -> Result<Tensor<T, Gpu>, Handback<Self>> {
                let stream = self.device().default_stream().clone();
                match gpu.peer_path() {
                    Ok(path) => self.to_device_via(gpu, &stream, path),
                    Err(e) => Err(Handback::new(self, e)),
                }
            }

            /// [`to_device`](Self::to_device) on `stream` (a stream of either GPU), going as
            /// `path` says.
            #[allow(clippy::result_large_err)] // hands the view back
            pub fn to_device_via(
                self,
                gpu: &Gpu,
                stream: &Stream,
                path: PeerPath,
            ) -> Result<Tensor<T, Gpu>, Handback<Self>> {
                match copy_view_to(&self.view(), gpu, stream, path) {
                    Ok((t, _)) => Ok(t),
                    Err(e) => Err(Handback::new(self, e)),
                }
            }
        }
    };
}

view_to_device!(TensorView<'a, T, Gpu>);
view_to_device!(TensorViewMut<'a, T, Gpu>);

impl<T: Element> Tensor<T, Gpu> {
    /// Moves the tensor to `gpu`: a consuming, typed transfer like `to_gpu` / `to_cpu`
    /// (PyTorch's `tensor.to("cuda:1")`). On the tensor's own GPU (same ordinal) it comes
    /// back as it is, with no copy. On another GPU the copy is made on this GPU's default
    /// stream (as PyTorch's cross-device `copy_`), directly (`cuMemcpyPeerAsync`, peer access
    /// enabled on first use) where the two GPUs allow it and staged through pinned host memory
    /// otherwise, or as the destination GPU's [`peer_path`](Gpu::peer_path) says. A tensor that is
    /// its whole storage keeps its strides; any other is made row-major first.
    ///
    /// Returns once the copy is queued: the new tensor orders every use after it, on any
    /// stream of `gpu`, and this tensor's memory is freed only after the copy has read it
    /// (docs/STREAMS.md). A failure hands the tensor back, unchanged.
    ///
    /// ```no_run
    /// use typestate_tensor::gpu::Gpu;
    /// use typestate_tensor::tensor::Tensor;
    ///
    /// # fn main() -> typestate_tensor::Result<()> {
    /// let (g0, g1) = (Gpu::new(0)?, Gpu::new(1)?);
    /// let a = Tensor::from_vec(&[2, 3], vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0])?.to_gpu(&g0)?;
    /// let b = a.to_device(&g1)?; // `a` is gone: the data lives on GPU 1 now
    /// assert_eq!(b.device().ordinal(), 1);
    /// assert_eq!(b.to_cpu()?.to_vec(), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    /// # Ok(()) }
    /// ```
    #[allow(clippy::result_large_err)] // hands the tensor back
    pub fn to_device(self, gpu: &Gpu) -> Result<Tensor<T, Gpu>, Handback<Self>> {
        let stream = self.device().default_stream().clone();
        match gpu.peer_path() {
            Ok(path) => self.to_device_via(gpu, &stream, path),
            Err(e) => Err(Handback::new(self, e)),
        }
    }

    /// [`to_device`](Self::to_device) on `stream` (a stream of either GPU), going as `path`
    /// says. With [`PeerPath::Staged`] the tensor is copied (through pinned host memory) even
    /// to its own GPU; with [`PeerPath::Auto`] it comes back as it is there.
    #[allow(clippy::result_large_err)] // hands the tensor back
    pub fn to_device_via(
        self,
        gpu: &Gpu,
        stream: &Stream,
        path: PeerPath,
    ) -> Result<Tensor<T, Gpu>, Handback<Self>> {
        if gpu.ordinal() == self.device().ordinal() && path == PeerPath::Auto {
            return Ok(self);
        }
        match copy_view_to(&self.view(), gpu, stream, path) {
            Ok((t, _)) => Ok(t),
            Err(e) => Err(Handback::new(self, e)),
        }
    }
}

impl<T: Element, S: WriteRepr<T, Gpu>> Tensor<T, Gpu, S> {
    /// Copies `src` (the same shape, on any GPU) into these elements, like PyTorch's
    /// `dst.copy_(src)` across devices: made on `src`'s GPU's default stream, the way
    /// the destination GPU's [`peer_path`](Gpu::peer_path) says, and returns once queued, with the way it went. Both sides
    /// order it on their own GPUs (docs/STREAMS.md): later work on these elements, on any
    /// stream, runs after it, and `src` is not overwritten or freed before it has read it.
    ///
    /// On one GPU (with [`PeerPath::Auto`]) it is one Apply copy kernel; between GPUs a
    /// row-major source range goes as is (a strided source is made row-major on its GPU
    /// first), straight into a row-major destination or through a row-major temporary on the
    /// destination's GPU and a copy kernel there.
    ///
    /// # Errors
    /// [`LayoutError::ShapeMismatch`] for another shape (no broadcasting: use
    /// [`copy_from`](Tensor::copy_from) on one GPU); driver and allocation errors.
    pub fn copy_from_peer(&mut self, src: &impl AsView<T, Gpu>) -> Result<PeerRoute> {
        let src = src.view();
        let stream = src.device().default_stream().clone();
        let path = self.device().peer_path()?;
        self.copy_from_peer_via(&src, &stream, path)
    }

    /// [`copy_from_peer`](Self::copy_from_peer) on `stream` (a stream of either GPU), going as
    /// `path` says.
    pub fn copy_from_peer_via(
        &mut self,
        src: &impl AsView<T, Gpu>,
        stream: &Stream,
        path: PeerPath,
    ) -> Result<PeerRoute> {
        const OP: &str = "Tensor::copy_from_peer";
        let src = src.view();
        if src.shape() != self.shape() {
            return Err(LayoutError::ShapeMismatch {
                op: OP,
                expected: self.shape().to_vec(),
                got: src.shape().to_vec(),
            }
            .into());
        }
        let mut dst = self.view_mut();
        let dst_layout = dst.layout().clone();
        let same = src.device().ordinal() == dst.device().ordinal();
        if same && path == PeerPath::Auto {
            pointwise::unary(
                stream,
                &Identity,
                src.storage(),
                src.layout(),
                dst.slice_mut(),
                &dst_layout,
            )?;
            return Ok(PeerRoute::Local);
        }
        // The source as one row-major range of a storage.
        let packed;
        let (src_storage, src_offset) = if src.layout().is_contiguous() {
            (src.storage(), first_index(src.layout()))
        } else {
            packed = src.contiguous()?;
            (packed.storage(), 0)
        };
        let numel = dst_layout.numel();
        if dst_layout.is_contiguous() {
            let dst_offset = first_index(&dst_layout);
            return copy_range(
                OP,
                dst.slice_mut(),
                dst_offset,
                src_storage,
                src_offset,
                numel,
                stream,
                path,
            );
        }
        // A strided destination: a row-major temporary on its GPU, then a copy kernel there
        // (on `stream` if it is the destination's, else on the destination's default stream).
        let dst_gpu = dst.device().clone();
        let (temp, route) =
            peer_copy_range(OP, src_storage, src_offset, numel, &dst_gpu, stream, path)?;
        let dst_stream = if stream.ordinal() == dst_gpu.ordinal() {
            stream
        } else {
            dst_gpu.default_stream()
        };
        pointwise::unary(
            dst_stream,
            &Identity,
            &temp,
            &Layout::contiguous(dst_layout.shape())?,
            dst.slice_mut(),
            &dst_layout,
        )?;
        Ok(route)
    }
}

/// The storage index of a row-major layout's first element (0 when it has none).
fn first_index(layout: &Layout) -> usize {
    if layout.numel() == 0 {
        0
    } else {
        layout.offset()
    }
}
