//! The public forms on [`GpuStorage`] (`copy_from_peer_async`, `peer_copy`), the range copy
//! the GPU engine's transfers use, and the compile-time refusals of `to_device` on a host
//! tensor and `to_gpu` on a GPU tensor.

use super::copy::{check_range, copy_range};
use super::path::{PeerPath, PeerRoute};
use crate::device::wrong_device::{GpuTensorOnly, HostTensorOnly};
use crate::device::Cpu;
use crate::element::Element;
use crate::error::{Error, GpuError, LayoutError};
use crate::runtime::buffer::GpuStorage;
use crate::runtime::device::Gpu;
use crate::runtime::stream::Stream;
use crate::tensor::Tensor;

impl<T: Element> GpuStorage<T> {
    /// Queues a copy of `src`, memory of any GPU, into this memory (same length) on `stream`,
    /// a stream of either GPU, and returns once it is queued. The way it goes is this
    /// memory's GPU's [`Gpu::peer_path`] (see
    /// [`copy_from_peer_async_via`](Self::copy_from_peer_async_via)).
    pub fn copy_from_peer_async(
        &mut self,
        src: &GpuStorage<T>,
        stream: &Stream,
    ) -> Result<PeerRoute, Error> {
        let path = self.gpu().peer_path()?;
        self.copy_from_peer_async_via(src, stream, path)
    }

    /// Queues a copy of `src`, memory of any GPU, into this memory (same length) on `stream`,
    /// a stream of either GPU, going as `path` says, and returns once it is queued, with the
    /// way it went ([`PeerRoute`]).
    ///
    /// Both memories order the copy themselves (docs/STREAMS.md, and the module docs of
    /// `runtime/peer.rs` for the cross-device part): it runs after the last write of `src`
    /// and after every pending read and write of this memory, on whatever streams of either
    /// GPU they were queued; every later use of this memory, on any stream of its GPU, runs
    /// after it; a later write of `src` waits for it; and neither allocator reuses either
    /// block before it has finished. No `Stream::wait_stream` is needed on either side.
    ///
    /// On one GPU with [`PeerPath::Auto`] this is [`copy_from_device_async`](Self::copy_from_device_async).
    /// Between GPUs the copy enables peer access both ways on first use
    /// ([`Gpu::enable_peer_access`]) and is one `cuMemcpyPeerAsync` where that succeeds;
    /// otherwise, and always for [`PeerPath::Staged`], it is staged through pinned host
    /// memory of this memory's GPU ([`Gpu::host_allocator`]) in chunks.
    ///
    /// # Errors
    /// [`LayoutError::LengthMismatch`] for another length; [`GpuError::DeviceMismatch`] for
    /// a stream of a third GPU; [`GpuError::NotCapturable`] inside a CUDA graph capture;
    /// driver and allocation errors (then nothing is left running; this memory may hold
    /// part of the copy).
    pub fn copy_from_peer_async_via(
        &mut self,
        src: &GpuStorage<T>,
        stream: &Stream,
        path: PeerPath,
    ) -> Result<PeerRoute, Error> {
        const OP: &str = "GpuStorage::copy_from_peer";
        if self.len() != src.len() {
            return Err(LayoutError::LengthMismatch {
                op: OP,
                shape: vec![self.len()],
                expected: self.len(),
                got: src.len(),
            }
            .into());
        }
        let len = self.len();
        copy_range(OP, self, 0, src, 0, len, stream, path)
    }

    /// A copy of this memory on `gpu` (any GPU, this one included), made on `stream` (a
    /// stream of either GPU) as `path` says, with the way it went. The new memory's home
    /// stream is `stream` if it belongs to `gpu`, else `gpu`'s default stream; it orders
    /// every use after the copy, and this memory orders its next write after it
    /// ([`copy_from_peer_async_via`](Self::copy_from_peer_async_via)). Returns once the copy
    /// is queued.
    ///
    /// # Errors
    /// As [`copy_from_peer_async_via`](Self::copy_from_peer_async_via), and allocation
    /// errors on `gpu`.
    pub fn peer_copy(
        &self,
        gpu: &Gpu,
        stream: &Stream,
        path: PeerPath,
    ) -> Result<(GpuStorage<T>, PeerRoute), Error> {
        peer_copy_range(
            "GpuStorage::peer_copy",
            self,
            0,
            self.len(),
            gpu,
            stream,
            path,
        )
    }
}

/// New memory on `gpu` holding `len` elements of `src` from element `src_offset`, copied on
/// `stream` (a stream of either GPU) as `path` says; its home stream is `stream` if it
/// belongs to `gpu`, else `gpu`'s default stream. Returns once the copy is queued.
pub(crate) fn peer_copy_range<T: Element>(
    op: &'static str,
    src: &GpuStorage<T>,
    src_offset: usize,
    len: usize,
    gpu: &Gpu,
    stream: &Stream,
    path: PeerPath,
) -> Result<(GpuStorage<T>, PeerRoute), Error> {
    if stream.ordinal() != gpu.ordinal() && stream.ordinal() != src.gpu().ordinal() {
        return Err(GpuError::DeviceMismatch {
            op,
            lhs: src.gpu().ordinal(),
            rhs: stream.ordinal(),
        }
        .into());
    }
    check_range(op, src_offset, len, src.len())?;
    let home = if stream.ordinal() == gpu.ordinal() {
        stream
    } else {
        gpu.default_stream()
    };
    // SAFETY: `copy_range` writes all `len` elements before anything can read them: the
    // copy is recorded as this memory's write, so every later access, on any stream, is
    // ordered after it. If it fails, the memory is dropped here unread.
    let mut out = unsafe { GpuStorage::uninit(gpu, len, home) }?;
    let route = copy_range(op, &mut out, 0, src, src_offset, len, stream, path)?;
    Ok((out, route))
}

/// `to_device` on a host tensor: never callable (it requires [`GpuTensorOnly`], which no type
/// implements), so the mistake is a compile error naming `to_gpu`.
#[doc(hidden)]
impl<T: Element> Tensor<T, Cpu> {
    #[doc(hidden)]
    pub fn to_device<R>(&self, gpu: &Gpu) -> R
    where
        Self: GpuTensorOnly,
    {
        let _ = gpu;
        self.absurd()
    }
}

/// `to_gpu` on a GPU tensor: never callable (it requires [`HostTensorOnly`], which no type
/// implements), so the mistake is a compile error naming `to_device` and `to_cpu`.
#[doc(hidden)]
impl<T: Element> Tensor<T, Gpu> {
    #[doc(hidden)]
    pub fn to_gpu<R>(&self, gpu: &Gpu) -> R
    where
        Self: HostTensorOnly,
    {
        let _ = gpu;
        self.absurd()
    }
}
