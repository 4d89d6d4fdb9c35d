//! Gather and scatter on the CPU (issue 28): the two primitives of the indexing ops
//! ([`crate::tensor::indexing`]).
//!
//! Each call walks its index in row-major order twice: first to check every index against
//! the indexed dim (an out-of-range value is [`LayoutError::IndexOutOfRange`] before
//! anything is written), then to move the elements. Every access is a bounds-checked slice
//! index at an offset inside a checked layout, so there is no `unsafe` here; scatters run in
//! row-major order of the index, so duplicates resolve deterministically (the last source
//! wins an assignment; sums add in that order).

mod walk;

use crate::device::Cpu;
use crate::element::{Element, Numeric};
use crate::error::{LayoutError, Result};
use crate::tensor::indexing::{
    GatherJob, IndexCheck, IndexElement, IndexEngine, ScatterJob, ScatterReduce,
    ScatterReduceEngine,
};
use crate::tensor::{TensorView, TensorViewMut};

use walk::{for_each, Operand};

/// The position along a dim of size `size` that index value `v` names, or the typed error.
fn resolve(op: &'static str, v: i64, wrap: bool, dim: usize, size: usize) -> Result<usize> {
    let n = i64::try_from(size).unwrap_or(i64::MAX);
    let p = if wrap && v < 0 { v + n } else { v };
    if (0..n).contains(&p) {
        Ok(p as usize)
    } else {
        Err(LayoutError::IndexOutOfRange {
            op,
            index: v,
            dim,
            size,
        }
        .into())
    }
}

/// Checks every index of `index` before anything is written.
fn check_all<I: IndexElement>(
    op: &'static str,
    index: &TensorView<'_, I, Cpu>,
    wrap: bool,
    dim: usize,
    size: usize,
) -> Result<()> {
    let data = index.storage();
    let l = index.layout();
    let mut err = Ok(());
    for_each(l.shape(), [Operand::of(l)], |[o]| {
        if err.is_ok() {
            if let Err(e) = resolve(op, data[o].to_i64(), wrap, dim, size) {
                err = Err(e);
            }
        }
    });
    err
}

/// The shape error of a job that breaks its rules (never built by the tensor layer).
fn bad_job(op: &'static str, expected: &[usize], got: &[usize]) -> crate::Error {
    LayoutError::ShapeMismatch {
        op,
        expected: expected.to_vec(),
        got: got.to_vec(),
    }
    .into()
}

/// Checks that `other` has `shape` in every dim but `dim`.
fn check_shape(op: &'static str, shape: &[usize], other: &[usize], dim: usize) -> Result<()> {
    let fits = shape.len() == other.len()
        && dim < shape.len()
        && shape
            .iter()
            .zip(other)
            .enumerate()
            .all(|(d, (a, b))| d == dim || a == b);
    if fits {
        Ok(())
    } else {
        Err(bad_job(op, shape, other))
    }
}

// SAFETY: `gather` writes each element of `dst`'s layout once (the walk visits every position
// of its shape), with a value read from `src`, and never reads `dst`; `scatter_assign` writes
// only at positions of `dst`'s layout. Every index is checked before the first write, and
// every access is a bounds-checked slice index, so no index value reaches outside a view.
unsafe impl<T: Element> IndexEngine<T> for Cpu {
    /// `check_all` walks the index before the first write of every call.
    const CHECKS: IndexCheck = IndexCheck::BeforeWriting;

    fn gather<I: IndexElement>(
        &self,
        job: &GatherJob<'_, T, I, Cpu>,
        dst: &mut TensorViewMut<'_, T, Cpu>,
    ) -> Result<()> {
        let (src, index, dim) = (&job.src, &job.index, job.dim);
        if index.shape() != dst.shape() {
            return Err(bad_job(job.op, dst.shape(), index.shape()));
        }
        check_shape(job.op, dst.shape(), src.shape(), dim)?;
        let size = src.shape()[dim];
        check_all(job.op, index, job.wrap, dim, size)?;
        let dst_layout = dst.layout().clone();
        let (idx, data) = (index.storage(), src.storage());
        let step = src.strides()[dim];
        // The source walked with its `dim` held at 0: the index adds `p · step`.
        let mut src_op = Operand::of(src.layout());
        src_op.strides[dim] = 0;
        let out = dst.slice_mut();
        let mut err = Ok(());
        for_each(
            dst_layout.shape(),
            [
                Operand::of(&dst_layout),
                Operand::of(index.layout()),
                src_op,
            ],
            |[o, i, s]| match resolve(job.op, idx[i].to_i64(), job.wrap, dim, size) {
                Ok(p) => out[o] = data[(s as isize + p as isize * step) as usize],
                Err(e) => err = Err(e),
            },
        );
        err
    }

    fn scatter_assign<I: IndexElement>(
        &self,
        job: &ScatterJob<'_, T, I, Cpu>,
        dst: &mut TensorViewMut<'_, T, Cpu>,
    ) -> Result<()> {
        scatter(job, dst, |_, v| v)
    }
}

// SAFETY: as `IndexEngine` above.
unsafe impl<T: Numeric> ScatterReduceEngine<T> for Cpu {
    fn scatter_reduce<I: IndexElement>(
        &self,
        job: &ScatterJob<'_, T, I, Cpu>,
        dst: &mut TensorViewMut<'_, T, Cpu>,
    ) -> Result<()> {
        match job.reduce {
            ScatterReduce::Assign => scatter(job, dst, |_, v| v),
            ScatterReduce::Sum => scatter(job, dst, |a, v| a.add(v)),
            ScatterReduce::Prod => scatter(job, dst, |a, v| a.mul(v)),
            ScatterReduce::Amax => scatter(job, dst, |a, v| a.max_of(v)),
            ScatterReduce::Amin => scatter(job, dst, |a, v| a.min_of(v)),
            ScatterReduce::Mean => Err(bad_job(job.op, &[], &[])),
        }
    }
}

/// `dst[p with p[dim] = index[p]] = f(dst[..], src[p])` for every position `p` of the index,
/// in row-major order, after every index is checked.
fn scatter<T: Element, I: IndexElement>(
    job: &ScatterJob<'_, T, I, Cpu>,
    dst: &mut TensorViewMut<'_, T, Cpu>,
    f: impl Fn(T, T) -> T,
) -> Result<()> {
    let (index, dim) = (&job.index, job.dim);
    let shape = index.shape().to_vec();
    let fits = shape.len() == dst.rank()
        && dim < shape.len()
        && (0..shape.len()).all(|d| d == dim || shape[d] <= dst.shape()[d]);
    if !fits {
        return Err(bad_job(job.op, dst.shape(), &shape));
    }
    if let Some(src) = &job.src {
        if src.shape() != shape.as_slice() {
            return Err(bad_job(job.op, &shape, src.shape()));
        }
    }
    let size = dst.shape()[dim];
    check_all(job.op, index, job.wrap, dim, size)?;
    let step = dst.strides()[dim];
    let mut dst_op = Operand::of(dst.layout());
    dst_op.strides[dim] = 0;
    // Without a source, a stride-0 operand at 0 stands in (its offsets are not read).
    let src_op = match &job.src {
        Some(s) => Operand::of(s.layout()),
        None => Operand::zero(shape.len()),
    };
    let idx = index.storage();
    let src = job.src.as_ref().map(|s| s.storage());
    let out = dst.slice_mut();
    let mut err = Ok(());
    for_each(
        &shape,
        [Operand::of(index.layout()), src_op, dst_op],
        |[i, s, o]| match resolve(job.op, idx[i].to_i64(), job.wrap, dim, size) {
            Ok(p) => {
                let at = (o as isize + p as isize * step) as usize;
                let v = src.map_or(job.value, |d| d[s]);
                out[at] = f(out[at], v);
            }
            Err(e) => err = Err(e),
        },
    );
    err
}
