//! The GPU engine of the statistics and normalisations (issue 28): [`NormalizeEngine`] for
//! [`Gpu`] through NVRTC-compiled kernels (`kernels/normalize.cuh`), one kernel per job.
//!
//! Each row is read from memory once and written once where it fits a group's registers: a
//! warp per row up to `32 · VEC · 8` elements (1024 `f32`, 2048 `bf16`), a block of 256
//! threads per row up to `256 · VEC · 8` (8192 `f32`, 16384 `bf16`); the max, sum and
//! variance passes then run on registers (two-pass variance, exact max-then-sum softmax,
//! no online rescaling). Longer rows re-read the row per pass (still one kernel). Contiguous,
//! aligned rows load and store 16-byte vectors. `f16` / `bf16` / `f32` accumulate in `f32`,
//! `f64` in `f64`.

mod launch;
pub mod source;

use crate::element::FloatElement;
use crate::error::{LayoutError, Result};
use crate::runtime::Gpu;
use crate::tensor::normalize::{NormOrd, NormalizeEngine, RowOp, RowStat, RowsJob, StatJob};
use crate::tensor::TensorViewMut;

use launch::Job;
use source::NormOp;

fn mismatch(expected: Vec<usize>, got: &[usize]) -> crate::Error {
    LayoutError::ShapeMismatch {
        op: "normalize (GPU)",
        expected,
        got: got.to_vec(),
    }
    .into()
}

/// Checks `v` is row-major of `shape`.
fn row_major<T: FloatElement>(v: &TensorViewMut<'_, T, Gpu>, shape: &[usize]) -> Result<()> {
    if v.shape() != shape || !v.layout().is_contiguous() {
        return Err(mismatch(shape.to_vec(), v.shape()));
    }
    Ok(())
}

// SAFETY: `launch::run` queues one kernel that writes every element of the row-major
// destination (each row's `n` elements by its group, or one value per row by the group's
// first thread; every row in `0..rows` is visited by the grid-stride loop), and the mean when
// given, each with a value converted from the accumulator; it reads no destination. Its
// addresses are checked within each view's layout (see its `SAFETY`).
unsafe impl<T: FloatElement> NormalizeEngine<T> for Gpu {
    fn rows(&self, job: &RowsJob<'_, T, Gpu>, dst: &mut TensorViewMut<'_, T, Gpu>) -> Result<()> {
        let shape = job.src.shape().to_vec();
        if shape.len() != 2 {
            return Err(mismatch(vec![0, 0], &shape));
        }
        row_major(dst, &shape)?;
        let n = shape[1];
        for p in [&job.weight, &job.bias].into_iter().flatten() {
            if p.shape() != [n] || (n > 1 && p.strides()[0] != 1) {
                return Err(mismatch(vec![n], p.shape()));
            }
        }
        if shape[0] == 0 || n == 0 {
            return Ok(());
        }
        let (op, param) = match job.op {
            RowOp::Softmax => (NormOp::Softmax, 0.0),
            RowOp::LogSoftmax => (NormOp::LogSoftmax, 0.0),
            RowOp::LayerNorm { eps } => (NormOp::Layer, eps),
            RowOp::RmsNorm { eps } => (NormOp::Rms, eps),
        };
        let flags = i32::from(job.weight.is_some()) | (i32::from(job.bias.is_some()) << 1);
        let j = Job {
            op,
            src: &job.src,
            weight: job.weight.as_ref(),
            bias: job.bias.as_ref(),
            param,
            flags,
        };
        launch::run(self, &j, dst, None)
    }

    fn row_stats(
        &self,
        job: &StatJob<'_, T, Gpu>,
        dst: &mut TensorViewMut<'_, T, Gpu>,
        mean: Option<&mut TensorViewMut<'_, T, Gpu>>,
    ) -> Result<()> {
        let shape = job.src.shape().to_vec();
        if shape.len() != 2 {
            return Err(mismatch(vec![0, 0], &shape));
        }
        row_major(dst, &shape[..1])?;
        if let Some(m) = &mean {
            row_major(m, &shape[..1])?;
        }
        if shape[0] == 0 {
            return Ok(());
        }
        let (op, param, mut flags) = match job.stat {
            RowStat::LogSumExp => (NormOp::LogSumExp, 0.0, 0),
            RowStat::Var { correction, sqrt } => (NormOp::Var, correction, i32::from(sqrt) << 2),
            RowStat::Norm(NormOrd::L1) => (NormOp::L1, 0.0, 0),
            RowStat::Norm(NormOrd::L2) => (NormOp::L2, 0.0, 0),
            RowStat::Norm(_) => (NormOp::LInf, 0.0, 0),
        };
        if mean.is_some() && op == NormOp::Var {
            flags |= 8;
        }
        let j = Job {
            op,
            src: &job.src,
            weight: None,
            bias: None,
            param,
            flags,
        };
        launch::run(self, &j, dst, mean)
    }
}
