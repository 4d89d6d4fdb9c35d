//! One job as cuBLASLt sees it: the shape checks, the element type, the epilogue to fuse,
//! and the [`Problem`] (matrix layouts, batches, alignments) of a set of views.

use super::cublaslt::{self, Epilogue, Matrix, Problem};
use super::layout::{alignment, batches, stored, Batches};
use super::operands::OP;
use crate::element::FloatElement;
use crate::error::{GpuError, LayoutError, Result};
use crate::layout::Layout;
use crate::runtime::Gpu;
use crate::tensor::matmul::{Activation, MatmulJob};
use crate::tensor::{Backend, TensorViewMut};

pub(super) fn overflow(what: &'static str) -> LayoutError {
    LayoutError::SizeOverflow {
        op: OP,
        shape: vec![],
        what,
    }
}

/// The matrix dims `(rows, cols)` and strides of a `[B.., r, c]` layout.
pub(super) fn matrix(l: &Layout) -> (usize, usize, isize, isize) {
    let (s, t) = (l.shape(), l.strides());
    let r = s.len();
    (s[r - 2], s[r - 1], t[r - 2], t[r - 1])
}

/// The problem of operands `a`, `b` and destination `d` (layouts `[B.., m, k]`, `[B.., k, n]`,
/// `[B.., m, n]`), or `None` if a matrix layout cannot be expressed.
#[allow(clippy::too_many_arguments)]
pub(super) fn describe(
    dtype: cublaslt::DataType,
    tf32: bool,
    a: &Layout,
    b: &Layout,
    d: &Layout,
    ptrs: [u64; 3],
    epilogue: Epilogue,
) -> Result<Option<(Problem, Batches)>> {
    let size = dtype_size(dtype);
    let (m, k, sam, sak) = matrix(a);
    let (_, n, sbk, sbn) = matrix(b);
    let (_, _, sdm, sdn) = matrix(d);
    let (Some(sa), Some(sb), Some(sd)) = (
        stored(m, k, sam, sak),
        stored(k, n, sbk, sbn),
        stored(m, n, sdm, sdn),
    ) else {
        return Ok(None);
    };
    if sd.trans {
        return Ok(None);
    }
    let r = d.rank();
    let bt = batches(
        &d.shape()[..r - 2],
        [
            &a.strides()[..r - 2],
            &b.strides()[..r - 2],
            &d.strides()[..r - 2],
        ],
    );
    let count = i32::try_from(bt.count).map_err(|_| overflow("the batch count"))?;
    let bytes = |s: isize| (s.unsigned_abs() as u64).saturating_mul(size);
    // Alignment of each view's pointers over every call and batch: the base address, and the
    // byte strides of the batches and the looped dims.
    let align = |v: usize, base: u64| {
        alignment(
            std::iter::once(base)
                .chain(std::iter::once(bytes(bt.strides[v])))
                .chain(bt.outer.iter().map(|(_, s)| bytes(s[v]))),
        )
    };
    let mat = |s: &super::layout::Stored, v: usize| Matrix {
        rows: s.rows,
        cols: s.cols,
        ld: s.ld,
        batch: count,
        batch_stride: bt.strides[v] as i64,
    };
    // cuBLASLt's A is our b, its B our a (Cᵀ = Bᵀ·Aᵀ).
    let p = Problem {
        dtype,
        tf32,
        trans_a: sb.trans,
        trans_b: sa.trans,
        a: mat(&sb, 1),
        b: mat(&sa, 0),
        d: mat(&sd, 2),
        epilogue,
        align_a: align(1, ptrs[1]),
        align_b: align(0, ptrs[0]),
        align_d: align(2, ptrs[2]),
    };
    Ok(Some((p, bt)))
}

fn dtype_size(d: cublaslt::DataType) -> u64 {
    match d {
        cublaslt::DataType::F16 | cublaslt::DataType::Bf16 => 2,
        cublaslt::DataType::F32 => 4,
        cublaslt::DataType::F64 => 8,
    }
}

/// The epilogue cuBLASLt fuses for `bias` and `act`, and whether exact GELU runs after.
pub(super) fn epilogue(bias: bool, act: Option<Activation>) -> (Epilogue, bool) {
    match (act, bias) {
        (Some(Activation::Relu), false) => (Epilogue::Relu, false),
        (Some(Activation::Relu), true) => (Epilogue::ReluBias, false),
        (Some(Activation::GeluTanh), false) => (Epilogue::Gelu, false),
        (Some(Activation::GeluTanh), true) => (Epilogue::GeluBias, false),
        (Some(Activation::Gelu), b) => (if b { Epilogue::Bias } else { Epilogue::Default }, true),
        (None, true) => (Epilogue::Bias, false),
        (None, false) => (Epilogue::Default, false),
    }
}

/// The job's rules that an engine re-checks (the tensor layer already did): shapes and the
/// device of every view.
pub(super) fn check<T: FloatElement>(
    gpu: &Gpu,
    job: &MatmulJob<'_, T, Gpu>,
    dst: &TensorViewMut<'_, T, Gpu>,
) -> Result<()> {
    let (a, b, d) = (
        job.a.layout().shape(),
        job.b.layout().shape(),
        dst.layout().shape(),
    );
    let r = d.len();
    let mismatch = |expected: Vec<usize>, got: &[usize]| -> crate::error::Error {
        LayoutError::ShapeMismatch {
            op: OP,
            expected,
            got: got.to_vec(),
        }
        .into()
    };
    if r < 2 {
        return Err(mismatch(vec![0, 0], d));
    }
    if a.len() != r || a[..r - 2] != d[..r - 2] || a[r - 2] != d[r - 2] {
        let mut want = d.to_vec();
        want[r - 1] = a.last().copied().unwrap_or(0);
        return Err(mismatch(want, a));
    }
    let k = a[r - 1];
    if b.len() != r || b[..r - 2] != d[..r - 2] || b[r - 2] != k || b[r - 1] != d[r - 1] {
        let mut want = d.to_vec();
        want[r - 2] = k;
        return Err(mismatch(want, b));
    }
    if let Some(bias) = &job.bias {
        if bias.layout().shape() != [d[r - 1]] {
            return Err(mismatch(vec![d[r - 1]], bias.layout().shape()));
        }
        gpu.check_device(OP, bias.storage())?;
    }
    gpu.check_device(OP, job.a.storage())?;
    gpu.check_device(OP, job.b.storage())?;
    gpu.check_device(OP, dst.storage())?;
    Ok(())
}

/// cuBLASLt's element type for `T`.
pub(super) fn data_type<T: FloatElement>() -> Result<cublaslt::DataType> {
    use crate::element::DType;
    Ok(match T::DTYPE {
        DType::F16 => cublaslt::DataType::F16,
        DType::BF16 => cublaslt::DataType::Bf16,
        DType::F32 => cublaslt::DataType::F32,
        DType::F64 => cublaslt::DataType::F64,
        other => {
            return Err(GpuError::Cublas {
                call: "matmul",
                message: format!("no cuBLASLt matmul of {}", other.name()),
            }
            .into())
        }
    })
}
