//! [`Backend`] for [`Gpu`], the GPU engine's front door: pointwise ops go to
//! [`super::pointwise`], fused expressions to [`super::fused`], reductions to
//! [`super::reduce`].
//!
//! Every operation is queued on the GPU's default stream ([`Gpu::default_stream`]) and returns
//! once queued; copies back to the host wait for it. Storage last written (or read) on other
//! streams orders the launch itself ([`GpuStorage`]'s stream order, inside
//! [`super::pointwise::launch`]), so a view of memory that a copy on another stream is still
//! filling is read after the copy. In-place operations run one kernel in place (each element
//! is read by the thread that writes it, before it writes), not through a temporary.

use crate::element::Element;
use crate::error::{GpuError, LayoutError, Result};
use crate::layout::Layout;
use crate::ops::reduce::Reduction;
use crate::ops::table::Identity;
use crate::ops::{Backend, BinaryOp, TernaryOp, UnaryOp};
use crate::runtime::{Gpu, GpuStorage, Stream};
use crate::tensor::backend::sealed::FusedBackend;
use crate::tensor::expr::Fused;
use crate::tensor::{TensorView, TensorViewMut};

use super::fused;
use super::fused::handles::{ReadBuffer, WriteBuffer};
use super::pointwise::launch as pointwise;
use super::reduce;

// The storage handles fused kernels read and write through, and the fused launch.
impl FusedBackend for Gpu {
    const ROW_STAGE_KERNEL: bool = true;

    type LeafHandle<'s> = &'s dyn ReadBuffer;
    type OutHandle<'s> = &'s mut dyn WriteBuffer;

    fn leaf_handle<T: Element>(storage: &GpuStorage<T>) -> &dyn ReadBuffer {
        storage
    }

    fn leaf_key<T: Element>(storage: &GpuStorage<T>) -> (u64, usize) {
        (storage.device_ptr(), storage.len())
    }

    fn out_handle<T: Element>(storage: &mut GpuStorage<T>) -> &mut dyn WriteBuffer {
        storage
    }

    /// One generated kernel for all outputs, on the default stream
    /// ([`crate::engine_gpu::fused`]).
    fn fused<F: Fused<Gpu>>(&self, job: &mut F) -> Result<()> {
        let (program, outs) = job.program();
        fused::launch::launch(self.default_stream(), program, outs)
    }
}

// SAFETY: `fill`, `unary`, `binary` and `ternary` each launch one Apply kernel over the
// destination view's collapsed layout; its grid-stride loop visits every linear index below
// `numel` exactly once and stores to the destination element at that index without loading
// it first (the functor reads only the input operands), so every destination element is
// written once and never read, as `Backend` requires before `*_new` hands them
// `alloc_uninit` memory. Each launch records itself as the storage's last write (stream
// order, docs/STREAMS.md), so any later read, on any stream, is queued after it.
unsafe impl Backend for Gpu {
    type Slice<T: Element> = GpuStorage<T>;

    /// Reduction kernels on this handle's stream (`engine_gpu::reduce`).
    fn reduce<T: Element, R: Reduction<T>>(
        &self,
        op: R,
        src: &TensorView<'_, T, Gpu>,
        dims: &[usize],
        dst: &mut TensorViewMut<'_, R::Output, Gpu>,
    ) -> Result<()> {
        let layout = dst.layout().clone();
        let stream = self.default_stream();
        reduce::reduce_view(
            stream,
            op,
            src.storage(),
            src.layout(),
            dims,
            dst.slice_mut(),
            &layout,
        )
    }

    fn read_element<T: Element>(&self, data: &GpuStorage<T>, offset: usize) -> Result<T> {
        read_element(self.default_stream(), data, offset)
    }

    fn slice<T: Element>(storage: &GpuStorage<T>) -> &GpuStorage<T> {
        storage
    }

    fn slice_mut<T: Element>(storage: &mut GpuStorage<T>) -> &mut GpuStorage<T> {
        storage
    }

    /// Storage of another GPU (by ordinal) is [`GpuError::DeviceMismatch`], naming this
    /// GPU's ordinal first.
    fn check_device<T: Element>(&self, op: &'static str, storage: &GpuStorage<T>) -> Result<()> {
        let theirs = storage.gpu().ordinal();
        if theirs == self.ordinal() {
            Ok(())
        } else {
            Err(GpuError::DeviceMismatch {
                op,
                lhs: self.ordinal(),
                rhs: theirs,
            }
            .into())
        }
    }

    fn zeros<T: Element>(&self, len: usize) -> Result<GpuStorage<T>> {
        GpuStorage::zeros(self, len, self.default_stream())
    }

    unsafe fn alloc_uninit<T: Element>(&self, len: usize) -> Result<GpuStorage<T>> {
        // SAFETY: the caller writes every element before reading any (this function's
        // contract), which is `GpuStorage::uninit`'s.
        unsafe { GpuStorage::uninit(self, len, self.default_stream()) }
    }

    fn fill<T: Element>(&self, dst: &mut TensorViewMut<'_, T, Gpu>, value: T) -> Result<()> {
        let layout = dst.layout().clone();
        pointwise::fill(self.default_stream(), value, dst.slice_mut(), &layout)
    }

    fn unary<T: Element, O: UnaryOp<T>>(
        &self,
        op: O,
        a: &TensorView<'_, T, Gpu>,
        dst: &mut TensorViewMut<'_, O::Output, Gpu>,
    ) -> Result<()> {
        let layout = dst.layout().clone();
        pointwise::unary(
            self.default_stream(),
            &op,
            a.storage(),
            a.layout(),
            dst.slice_mut(),
            &layout,
        )
    }

    fn binary<T: Element, O: BinaryOp<T>>(
        &self,
        op: O,
        a: &TensorView<'_, T, Gpu>,
        b: &TensorView<'_, T, Gpu>,
        dst: &mut TensorViewMut<'_, O::Output, Gpu>,
    ) -> Result<()> {
        let layout = dst.layout().clone();
        pointwise::binary(
            self.default_stream(),
            &op,
            (a.storage(), a.layout()),
            (b.storage(), b.layout()),
            dst.slice_mut(),
            &layout,
        )
    }

    fn ternary<A: Element, T: Element, O: TernaryOp<A, T>>(
        &self,
        op: O,
        a: &TensorView<'_, A, Gpu>,
        b: &TensorView<'_, T, Gpu>,
        c: &TensorView<'_, T, Gpu>,
        dst: &mut TensorViewMut<'_, O::Output, Gpu>,
    ) -> Result<()> {
        let layout = dst.layout().clone();
        pointwise::ternary(
            self.default_stream(),
            &op,
            (a.storage(), a.layout()),
            (b.storage(), b.layout()),
            (c.storage(), c.layout()),
            dst.slice_mut(),
            &layout,
        )
    }

    fn unary_inplace<T: Element, O: UnaryOp<T, Output = T>>(
        &self,
        op: O,
        dst: &mut TensorViewMut<'_, T, Gpu>,
    ) -> Result<()> {
        let layout = dst.layout().clone();
        pointwise::unary_inplace(self.default_stream(), &op, dst.slice_mut(), &layout)
    }

    fn binary_inplace<T: Element, O: BinaryOp<T, Output = T>>(
        &self,
        op: O,
        dst: &mut TensorViewMut<'_, T, Gpu>,
        b: &TensorView<'_, T, Gpu>,
    ) -> Result<()> {
        let layout = dst.layout().clone();
        pointwise::binary_inplace(
            self.default_stream(),
            &op,
            dst.slice_mut(),
            &layout,
            (b.storage(), b.layout()),
        )
    }

    fn ternary_inplace<T: Element, O: TernaryOp<T, T, Output = T>>(
        &self,
        op: O,
        dst: &mut TensorViewMut<'_, T, Gpu>,
        b: &TensorView<'_, T, Gpu>,
        c: &TensorView<'_, T, Gpu>,
    ) -> Result<()> {
        let layout = dst.layout().clone();
        pointwise::ternary_inplace(
            self.default_stream(),
            &op,
            dst.slice_mut(),
            &layout,
            (b.storage(), b.layout()),
            (c.storage(), c.layout()),
        )
    }
}

/// The element at index `offset` of `data`, copied to the host on `stream` (waits for it, and
/// the copy waits for the last write of `data` on any stream). A one-element storage is
/// copied as it is; otherwise the element is first copied into one on the device.
///
/// # Errors
/// [`LayoutError::OutOfStorage`] for an offset past the storage; the copies' errors.
pub(crate) fn read_element<T: Element>(
    stream: &Stream,
    data: &GpuStorage<T>,
    offset: usize,
) -> Result<T> {
    let at = Layout::scalar(offset)?;
    at.check_within("read_element", data.len())?;
    let one = if data.len() == 1 {
        data.to_vec(stream)?
    } else {
        let mut tmp = GpuStorage::<T>::zeros(data.gpu(), 1, stream)?;
        pointwise::unary(stream, &Identity, data, &at, &mut tmp, &Layout::scalar(0)?)?;
        tmp.to_vec(stream)?
    };
    one.first().copied().ok_or_else(|| {
        LayoutError::OutOfStorage {
            op: "read_element",
            shape: vec![],
            strides: vec![],
            offset,
            storage_len: data.len(),
        }
        .into()
    })
}
