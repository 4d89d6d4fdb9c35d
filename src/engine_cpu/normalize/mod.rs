//! The CPU engine of the statistics and normalisations (issue 28): [`NormalizeEngine`] for
//! [`Cpu`]. Rows are spread over rayon's threads (several short rows per task); each row is
//! gathered once into an `f64` buffer (a plain slice loop where the row is contiguous), then
//! every pass over it runs on that buffer, so the arithmetic loops vectorise and the result
//! is rounded once to `T`. Computing in `f64` makes every type at least as accurate as
//! PyTorch's CPU kernels (which accumulate `f32` in `f32`).

mod row;

use rayon::prelude::*;

use crate::device::Cpu;
use crate::element::{Element, FloatElement};
use crate::error::{LayoutError, Result};
use crate::tensor::normalize::{NormalizeEngine, RowsJob, StatJob};
use crate::tensor::{TensorView, TensorViewMut};

/// Elements a rayon task handles at least (whole rows), so short rows are not one task each.
const TASK_ELEMENTS: usize = 1 << 14;

/// `[rows, n]` of a job's source, checked to be 2-D.
fn rows_n<T: FloatElement>(
    op: &'static str,
    src: &TensorView<'_, T, Cpu>,
) -> Result<(usize, usize)> {
    match *src.shape() {
        [rows, n] => Ok((rows, n)),
        _ => Err(mismatch(op, vec![0, 0], src.shape().to_vec())),
    }
}

fn mismatch(op: &'static str, expected: Vec<usize>, got: Vec<usize>) -> crate::Error {
    LayoutError::ShapeMismatch { op, expected, got }.into()
}

/// A `[n]` stride-1 parameter as `f64`s.
fn param<T: FloatElement>(
    p: &Option<TensorView<'_, T, Cpu>>,
    n: usize,
) -> Result<Option<Vec<f64>>> {
    let Some(p) = p else { return Ok(None) };
    if p.shape() != [n] || (n > 1 && p.strides()[0] != 1) {
        return Err(mismatch("normalize (CPU)", vec![n], p.shape().to_vec()));
    }
    let off = p.layout().offset();
    Ok(Some(
        p.storage()[off..off + n]
            .iter()
            .map(|v| Element::to_f64(*v))
            .collect(),
    ))
}

/// The first element of a row-major destination of `len` elements, checked.
fn dst_range<T: FloatElement>(
    dst: &TensorViewMut<'_, T, Cpu>,
    shape: &[usize],
) -> Result<std::ops::Range<usize>> {
    let len: usize = shape.iter().product();
    let ok = dst.shape() == shape && (len == 0 || dst.layout().is_contiguous());
    if !ok {
        return Err(mismatch(
            "normalize (CPU)",
            shape.to_vec(),
            dst.shape().to_vec(),
        ));
    }
    let off = dst.layout().offset();
    Ok(off..off + len)
}

// SAFETY: `rows` writes every element of `dst`'s row-major `[rows, n]` layout once (the
// chunks of `n` of its range, one per row) and `row_stats` every element of the `[rows]`
// destinations (one per row), each with a value converted from an `f64` by `from_f64`; no
// destination is read, nothing outside the checked ranges is addressed (slice indexing would
// panic, never write out of bounds).
unsafe impl<T: FloatElement> NormalizeEngine<T> for Cpu {
    fn rows(&self, job: &RowsJob<'_, T, Cpu>, dst: &mut TensorViewMut<'_, T, Cpu>) -> Result<()> {
        let (rows, n) = rows_n("normalize (CPU)", &job.src)?;
        let range = dst_range(dst, &[rows, n])?;
        if rows == 0 || n == 0 {
            return Ok(());
        }
        let (w, b) = (param(&job.weight, n)?, param(&job.bias, n)?);
        let src = row::Src::of(&job.src);
        let out = &mut dst.slice_mut()[range];
        out.par_chunks_mut(n)
            .enumerate()
            .with_min_len((TASK_ELEMENTS / n).max(1))
            .for_each_init(
                || vec![0f64; n],
                |buf, (r, o)| {
                    src.gather(r, buf);
                    row::apply(job.op, buf, w.as_deref(), b.as_deref());
                    for (o, &v) in o.iter_mut().zip(buf.iter()) {
                        *o = T::from_f64(v);
                    }
                },
            );
        Ok(())
    }

    fn row_stats(
        &self,
        job: &StatJob<'_, T, Cpu>,
        dst: &mut TensorViewMut<'_, T, Cpu>,
        mean: Option<&mut TensorViewMut<'_, T, Cpu>>,
    ) -> Result<()> {
        let (rows, n) = rows_n("normalize (CPU)", &job.src)?;
        let range = dst_range(dst, &[rows])?;
        let src = row::Src::of(&job.src);
        let stat = job.stat;
        let min_len = (TASK_ELEMENTS / n.max(1)).max(1);
        let out = &mut dst.slice_mut()[range];
        let run = |buf: &mut Vec<f64>, r: usize| {
            src.gather(r, buf);
            row::stat(stat, buf)
        };
        match mean {
            None => out
                .par_iter_mut()
                .enumerate()
                .with_min_len(min_len)
                .for_each_init(
                    || vec![0f64; n],
                    |buf, (r, o)| *o = T::from_f64(run(buf, r).0),
                ),
            Some(mean) => {
                let mrange = dst_range(mean, &[rows])?;
                let m = &mut mean.slice_mut()[mrange];
                out.par_iter_mut()
                    .zip(m.par_iter_mut())
                    .enumerate()
                    .with_min_len(min_len)
                    .for_each_init(
                        || vec![0f64; n],
                        |buf, (r, (o, m))| {
                            let (v, mu) = run(buf, r);
                            *o = T::from_f64(v);
                            *m = T::from_f64(mu);
                        },
                    )
            }
        }
        Ok(())
    }
}
