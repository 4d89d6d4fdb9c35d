//! The CPU engine: [`Backend`] for [`Cpu`].
//!
//! Every op collapses its operands' layouts ([`crate::layout::collapse`], output first),
//! then walks runs along the innermost dim ([`runs`]) with loops specialised on the run
//! strides ([`kernels`]). A contiguous op is one run of plain slices. Results of
//! out-of-place ops are appended to a fresh `Vec` when the runs come in output order, so no
//! time is spent zero-filling memory that is about to be overwritten; tiled iterations
//! (transposed inputs) write into a zeroed buffer instead.
//!
//! Threads (issue 29): ops of at least `2 * GRAIN` (65536) elements are split across the
//! *current* rayon pool ([`par`], `crate::tensor::expr::host`): the global pool, sized by
//! `RAYON_NUM_THREADS` or the core count, or the pool a caller runs in with
//! `rayon::ThreadPoolBuilder::new().num_threads(n).build()?.install(|| ..)` (a pool of one
//! thread keeps everything on the calling thread), as ndarray's `par_azip` does. Results do
//! not depend on the number of threads: pointwise elements are computed alone, and
//! reductions fold fixed blocks combined in a fixed order ([`reduce`], [`columns`]).
//!
//! `unsafe` code: the `gemm` calls of matrix multiply (`matmul/float.rs`, issue 27) and the
//! one `set_len` of a new output whose every slot was written (`par.rs`).

mod kernels;
// Issue 29: outputs and the split across rayon's threads.
mod columns;
mod par;
mod reduce;
mod runs;
mod tensor;
#[cfg(test)]
mod tests;
// Rust closures on the CPU engine (issue 26).
mod closure;
// Matrix multiply (issue 27).
mod matmul;
// issue 28 (norm): softmax, variance, layer / rms / group norm.
mod normalize;
// issue 28 (index): gather and scatter.
mod indexing;
// issue 28 (sort): scans and sorting.
mod order;

pub(crate) use reduce::sum_map;

use kernels::Out;
use par::{into_new, into_view};

use crate::device::Cpu;
use crate::element::Element;
use crate::error::Result;
pub(crate) use crate::host_vec::vec_with_capacity;
use crate::layout::reduce::ReduceGeometry;
use crate::layout::{collapse, Layout};
use crate::ops::op::{BinaryOp, TernaryOp, UnaryOp};
use crate::ops::reduce::Reduction;
use crate::tensor::backend::sealed::FusedBackend;
use crate::tensor::backend::{check_same_shape, Backend, HostBackend};
use crate::tensor::expr::Fused;
use crate::tensor::{TensorView, TensorViewMut};

impl<T: Element> crate::device::Storage<T> for [T] {
    fn len(&self) -> usize {
        <[T]>::len(self)
    }
}

/// The elements of `layout` in `data`, in row-major order, in a buffer reserved fallibly
/// (a broadcast view may ask for far more elements than its storage holds).
pub(crate) fn gather<T: Element>(data: &[T], layout: &Layout) -> Result<Vec<T>> {
    let out = Layout::contiguous(layout.shape())?;
    let c = collapse([&out, layout]);
    into_new(&c, |walk, out| kernels::unary(|x| x, data, &c, walk, out))
}

impl HostBackend for Cpu {
    fn host<T: Element>(storage: &[T]) -> &[T] {
        storage
    }

    fn host_mut<T: Element>(storage: &mut [T]) -> &mut [T] {
        storage
    }

    fn into_host_vec<T: Element>(storage: Vec<T>) -> Vec<T> {
        storage
    }
}

// The host evaluation of fused expressions: no handles, the job runs on the CPU.
impl FusedBackend for Cpu {
    type LeafHandle<'s> = ();
    type OutHandle<'s> = ();

    fn leaf_handle<T: Element>(_: &[T]) {}

    fn leaf_key<T: Element>(storage: &[T]) -> (u64, usize) {
        (storage.as_ptr() as usize as u64, storage.len())
    }

    fn out_handle<T: Element>(_: &mut [T]) {}

    /// One pass on the host ([`Fused::run_host`]): each output element computed from the
    /// leaves' elements at its index, written once, with no temporary.
    fn fused<F: Fused<Cpu>>(&self, job: &mut F) -> Result<()> {
        job.run_host()
    }
}

// SAFETY: CPU storage is a `Vec<T>` and never holds an uninitialised element:
// `alloc_uninit` returns zeros, and the `*_new` overrides return zeros overwritten by the
// kernels or a `Vec` whose length is set only once every slot was written (`par::finish`). So every storage handed back is
// initialised whatever the kernels do; they do also write each destination element of the
// layout exactly once (`runs::for_each_run`) and never read a destination they write.
unsafe impl Backend for Cpu {
    type Slice<T: Element> = [T];

    fn reduce<T: Element, R: Reduction<T>>(
        &self,
        op: R,
        src: &TensorView<'_, T, Cpu>,
        dims: &[usize],
        dst: &mut TensorViewMut<'_, R::Output, Cpu>,
    ) -> Result<()> {
        let kind = R::KIND;
        let g = ReduceGeometry::new(
            kind.name(),
            src.layout(),
            dims,
            dst.layout(),
            !kind.has_identity(),
            kind.is_arg(),
        )?;
        reduce::reduce(op, src.storage(), &g, dst.slice_mut())
    }

    fn read_element<T: Element>(&self, data: &[T], offset: usize) -> Result<T> {
        data.get(offset).copied().ok_or_else(|| {
            crate::error::LayoutError::OutOfStorage {
                op: "read_element",
                shape: vec![],
                strides: vec![],
                offset,
                storage_len: data.len(),
            }
            .into()
        })
    }

    fn slice<T: Element>(storage: &Vec<T>) -> &[T] {
        storage
    }

    fn slice_mut<T: Element>(storage: &mut Vec<T>) -> &mut [T] {
        storage
    }

    fn zeros<T: Element>(&self, len: usize) -> Result<Vec<T>> {
        crate::host_vec::zeroed_vec(len)
    }

    /// Zeros: a `Vec<T>` may not hold uninitialised elements. (Out-of-place ops avoid the
    /// zero fill through the overridden `*_new` methods instead.)
    unsafe fn alloc_uninit<T: Element>(&self, len: usize) -> Result<Vec<T>> {
        self.zeros(len)
    }

    fn fill<T: Element>(&self, dst: &mut TensorViewMut<'_, T, Cpu>, value: T) -> Result<()> {
        let c = collapse([dst.layout()]);
        let range = dst.layout().contiguous_range();
        into_view(&c, dst.slice_mut(), range, |walk, d, base| {
            kernels::fill(d, base, value, &c, walk)
        });
        Ok(())
    }

    fn unary<T: Element, O: UnaryOp<T>>(
        &self,
        op: O,
        a: &TensorView<'_, T, Cpu>,
        dst: &mut TensorViewMut<'_, O::Output, Cpu>,
    ) -> Result<()> {
        check_same_shape(O::NAME, &[dst.layout(), a.layout()])?;
        let c = collapse([dst.layout(), a.layout()]);
        let range = dst.layout().contiguous_range();
        into_view(&c, dst.slice_mut(), range, |walk, buf, base| {
            kernels::unary(
                // Element closures are `#[inline(always)]`: the kernels' loops run inside
                // `host::vectorized` (compiled for AVX2), and an out-of-line call per element
                // would leave it for baseline code (`gelu` ran at a third of the speed). The
                // attribute is stable on closures in argument position only, hence the
                // `identity(..)` wrapping below.
                #[inline(always)]
                |x| op.cpu(x),
                a.storage(),
                &c,
                walk,
                &mut Out::Write { buf, base },
            )
        });
        Ok(())
    }

    fn binary<T: Element, O: BinaryOp<T>>(
        &self,
        op: O,
        a: &TensorView<'_, T, Cpu>,
        b: &TensorView<'_, T, Cpu>,
        dst: &mut TensorViewMut<'_, O::Output, Cpu>,
    ) -> Result<()> {
        check_same_shape(O::NAME, &[dst.layout(), a.layout(), b.layout()])?;
        let c = collapse([dst.layout(), a.layout(), b.layout()]);
        let range = dst.layout().contiguous_range();
        let f = std::convert::identity(
            #[inline(always)]
            |x, y| op.cpu(x, y),
        );
        into_view(&c, dst.slice_mut(), range, |walk, buf, base| {
            kernels::binary(
                f,
                a.storage(),
                b.storage(),
                &c,
                walk,
                &mut Out::Write { buf, base },
            )
        });
        Ok(())
    }

    fn ternary<A: Element, T: Element, O: TernaryOp<A, T>>(
        &self,
        op: O,
        a: &TensorView<'_, A, Cpu>,
        b: &TensorView<'_, T, Cpu>,
        c: &TensorView<'_, T, Cpu>,
        dst: &mut TensorViewMut<'_, O::Output, Cpu>,
    ) -> Result<()> {
        let layouts = [dst.layout(), a.layout(), b.layout(), c.layout()];
        check_same_shape(O::NAME, &layouts)?;
        let c4 = collapse(layouts);
        let range = dst.layout().contiguous_range();
        let f = std::convert::identity(
            #[inline(always)]
            |x, y, z| op.cpu(x, y, z),
        );
        let (a, b, c) = (a.storage(), b.storage(), c.storage());
        into_view(&c4, dst.slice_mut(), range, |walk, buf, base| {
            kernels::ternary(f, a, b, c, &c4, walk, &mut Out::Write { buf, base })
        });
        Ok(())
    }

    fn unary_inplace<T: Element, O: UnaryOp<T, Output = T>>(
        &self,
        op: O,
        dst: &mut TensorViewMut<'_, T, Cpu>,
    ) -> Result<()> {
        let c = collapse([dst.layout()]);
        let range = dst.layout().contiguous_range();
        into_view(&c, dst.slice_mut(), range, |walk, d, base| {
            kernels::unary_inplace(
                #[inline(always)]
                |x| op.cpu(x),
                d,
                base,
                &c,
                walk,
            )
        });
        Ok(())
    }

    fn binary_inplace<T: Element, O: BinaryOp<T, Output = T>>(
        &self,
        op: O,
        dst: &mut TensorViewMut<'_, T, Cpu>,
        b: &TensorView<'_, T, Cpu>,
    ) -> Result<()> {
        check_same_shape(O::NAME, &[dst.layout(), b.layout()])?;
        let c = collapse([dst.layout(), b.layout()]);
        let range = dst.layout().contiguous_range();
        into_view(&c, dst.slice_mut(), range, |walk, d, base| {
            kernels::binary_inplace(
                #[inline(always)]
                |x, y| op.cpu(x, y),
                d,
                base,
                b.storage(),
                &c,
                walk,
            )
        });
        Ok(())
    }

    fn ternary_inplace<T: Element, O: TernaryOp<T, T, Output = T>>(
        &self,
        op: O,
        dst: &mut TensorViewMut<'_, T, Cpu>,
        b: &TensorView<'_, T, Cpu>,
        c: &TensorView<'_, T, Cpu>,
    ) -> Result<()> {
        let layouts = [dst.layout(), b.layout(), c.layout()];
        check_same_shape(O::NAME, &layouts)?;
        let c3 = collapse(layouts);
        let range = dst.layout().contiguous_range();
        let f = std::convert::identity(
            #[inline(always)]
            |x, y, z| op.cpu(x, y, z),
        );
        let (b, c) = (b.storage(), c.storage());
        into_view(&c3, dst.slice_mut(), range, |walk, d, base| {
            kernels::ternary_inplace(f, d, base, b, c, &c3, walk)
        });
        Ok(())
    }

    fn unary_new<T: Element, O: UnaryOp<T>>(
        &self,
        op: O,
        a: &TensorView<'_, T, Cpu>,
    ) -> Result<Vec<O::Output>> {
        let out = Layout::contiguous(a.shape())?;
        let c = collapse([&out, a.layout()]);
        let f = std::convert::identity(
            #[inline(always)]
            |x| op.cpu(x),
        );
        into_new(&c, |walk, out| {
            kernels::unary(f, a.storage(), &c, walk, out)
        })
    }

    fn binary_new<T: Element, O: BinaryOp<T>>(
        &self,
        op: O,
        a: &TensorView<'_, T, Cpu>,
        b: &TensorView<'_, T, Cpu>,
    ) -> Result<Vec<O::Output>> {
        check_same_shape(O::NAME, &[a.layout(), b.layout()])?;
        let out = Layout::contiguous(a.shape())?;
        let c = collapse([&out, a.layout(), b.layout()]);
        let f = std::convert::identity(
            #[inline(always)]
            |x, y| op.cpu(x, y),
        );
        into_new(&c, |walk, out| {
            kernels::binary(f, a.storage(), b.storage(), &c, walk, out)
        })
    }

    fn ternary_new<A: Element, T: Element, O: TernaryOp<A, T>>(
        &self,
        op: O,
        a: &TensorView<'_, A, Cpu>,
        b: &TensorView<'_, T, Cpu>,
        c: &TensorView<'_, T, Cpu>,
    ) -> Result<Vec<O::Output>> {
        check_same_shape(O::NAME, &[a.layout(), b.layout(), c.layout()])?;
        let out = Layout::contiguous(a.shape())?;
        let c4 = collapse([&out, a.layout(), b.layout(), c.layout()]);
        let f = std::convert::identity(
            #[inline(always)]
            |x, y, z| op.cpu(x, y, z),
        );
        into_new(&c4, |walk, out| {
            kernels::ternary(f, a.storage(), b.storage(), c.storage(), &c4, walk, out)
        })
    }
}
