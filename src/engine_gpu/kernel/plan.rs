//! Launch planning, pure host logic: which kernel form a launch takes, its index width, its
//! vector width and its grid. Nothing here touches a GPU, so it is unit-tested everywhere.
//!
//! - **Index width**: 32-bit index math when the element count and every operand's farthest
//!   offset ([`CollapsedLayout::max_extent`]) fit in `i32`, else 64-bit. A 32-bit launch also
//!   keeps its grid-stride step below 2^31, so `index + step` never wraps in `unsigned int`.
//! - **Form**, first that applies:
//!   1. [`Form::Contiguous`]: the collapsed layout is one dense run in every operand; no index
//!      math.
//!   2. [`Form::Tiled`]: the output contiguous along its innermost collapsed dim `C` while
//!      some input is contiguous along another dim `D` instead (`a.T + b`, a batched
//!      transpose, NCHW to NHWC, an attention head split), of any rank: those inputs go
//!      through shared-memory tiles over `(D, C)`, the other dims are a batch walked by the
//!      offset calculator, so every global access is coalesced ([`tiled_plan`] has the rule
//!      for several inputs and [`tile_shape`](super::tiled::tile_shape) the tile).
//!   3. [`Form::StridedVec`]: every operand reads the innermost dim contiguously or
//!      broadcasts it (a row broadcast `a + b[None, :]`): strided over vectors of the
//!      innermost dim.
//!   4. [`Form::Strided`]: anything else, with an `OffsetCalculator` of the collapsed rank.
//! - **Vector width** (forms 1 and 3): `16 / (widest element size)` elements per load when
//!   every vector-loaded operand's first element is aligned to the vector's bytes (and, for
//!   form 3, the innermost size and the outer strides are multiples of it), halved until that
//!   holds (PyTorch's `can_vectorize_up_to`); 1, that is no vectors, for launches too small to
//!   give one vector to each thread of one block. The tiled form has its own width,
//!   [`tiled_vec`](super::tiled::tiled_vec): 4 bytes per access for 1- and 2-byte elements where the layout allows.
//! - **Launch shape** of the contiguous vector form: [`VECTOR_WORK`](super::form::VECTOR_WORK) vectors per thread
//!   ([`NARROW_VECTOR_WORK`](super::form::NARROW_VECTOR_WORK) for pointwise kernels of two or more inputs
//!   whose vectors hold 16 one-byte elements),
//!   [`VECTOR_BLOCK`](super::form::VECTOR_BLOCK) threads per block, and a grid that covers the tensor in one pass
//!   ([`Form::grid_cap`]); every other form has [`BLOCK`] threads and a grid capped at the
//!   device's resident blocks.

use crate::engine_gpu::offset_calculator::MAX_DIMS as CALC_MAX_DIMS;
use crate::error::LayoutError;
use crate::layout::CollapsedLayout;

use super::form::{Form, IndexWidth, BLOCK, VECTOR_BYTES};
use super::tiled::tiled_plan;

/// The form and index width of one launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The kernel form.
    pub form: Form,
    /// The index width.
    pub index: IndexWidth,
}

/// [`plan`], then the rank check every launch goes through: a form that indexes through an
/// `OffsetCalculator` ([`Form::Strided`], [`Form::StridedVec`], [`Form::Tiled`]) can take at
/// most [`crate::offset_calculator::MAX_DIMS`] (25) collapsed dims, while a
/// [`crate::layout::Layout`] may have up to [`crate::layout::MAX_DIMS`] (32). The contiguous
/// form has no such limit (and the planner never picks the tiled form above it).
///
/// # Errors
/// [`LayoutError::GpuRankTooLarge`], naming `op` and saying what to do (make the operands
/// contiguous, or reshape to fewer dims), when the collapsed rank needs a calculator larger
/// than the kernels take. Nothing is compiled or launched then.
pub fn plan_checked<const N: usize>(
    op: &'static str,
    layout: &CollapsedLayout<N>,
    sizes: [usize; N],
    addrs: [u64; N],
) -> Result<Plan, LayoutError> {
    plan_checked_outputs(op, layout, sizes, addrs, 1)
}

/// [`plan_checked`] for a launch whose first `n_out` operands are outputs (a fused kernel
/// with several outputs; `1 <= n_out < N`).
///
/// # Errors
/// As [`plan_checked`].
pub fn plan_checked_outputs<const N: usize>(
    op: &'static str,
    layout: &CollapsedLayout<N>,
    sizes: [usize; N],
    addrs: [u64; N],
    n_out: usize,
) -> Result<Plan, LayoutError> {
    let p = plan_outputs(layout, sizes, addrs, n_out);
    let needs_calculator = !matches!(p.form, Form::Contiguous { .. });
    if needs_calculator && layout.rank() > CALC_MAX_DIMS {
        return Err(LayoutError::GpuRankTooLarge {
            op,
            rank: layout.rank(),
            max: CALC_MAX_DIMS,
        });
    }
    Ok(p)
}

/// Plans a launch over `layout` (operand 0 the output), whose operands have elements of
/// `sizes[k]` bytes and first elements at device addresses `addrs[k]`. Launches go through
/// [`plan_checked`], which also checks the rank.
///
/// Precondition: `N <= 8` (the masks are `u8`). A rank above `u8::MAX` (impossible for a
/// collapse of valid layouts, which have at most [`crate::layout::MAX_DIMS`] dims) is
/// reported as `u8::MAX`, which [`plan_checked`] rejects.
#[cfg(test)]
pub fn plan<const N: usize>(
    layout: &CollapsedLayout<N>,
    sizes: [usize; N],
    addrs: [u64; N],
) -> Plan {
    plan_outputs(layout, sizes, addrs, 1)
}

/// [`plan`] for a launch whose first `n_out` operands are outputs: they are written in
/// output 0's order (the tiled form stages inputs only; the vector forms need every output
/// read along the innermost dim with stride 1), and the masks of the forms number the inputs
/// from 0 after the outputs. Precondition: `1 <= n_out` and at most 8 inputs.
pub fn plan_outputs<const N: usize>(
    layout: &CollapsedLayout<N>,
    sizes: [usize; N],
    addrs: [u64; N],
    n_out: usize,
) -> Plan {
    let numel = layout.numel();
    let index = IndexWidth::for_extent(numel, layout.max_extent());
    let rank = u8::try_from(layout.rank()).unwrap_or(u8::MAX);
    let form = if layout.is_contiguous() {
        Form::Contiguous {
            vec: vector_width(numel, sizes, addrs),
        }
    } else if let Some(t) = tiled_plan(layout, sizes, addrs, n_out) {
        Form::Tiled {
            rank,
            dim: t.dim,
            staged: t.staged,
            tile: t.tile,
            vec: t.vec,
            direct: t.direct,
        }
    } else if let Some((vec, bcast)) = inner_vector(layout, sizes, addrs, n_out) {
        Form::StridedVec { rank, vec, bcast }
    } else {
        Form::Strided { rank }
    };
    Plan { form, index }
}

/// For the inner-vectorised strided form: `(vec, bcast)` when every operand has innermost
/// stride 1 or 0 (the output 1), `bcast` marking the inputs with 0; `vec` is the largest power
/// of two `<= 16 / max(sizes)` that divides the innermost size and every outer stride of the
/// stride-1 operands, and to whose bytes their first elements are aligned; and there are
/// enough vectors for one block. `None` when no `vec >= 2` qualifies.
fn inner_vector<const N: usize>(
    layout: &CollapsedLayout<N>,
    sizes: [usize; N],
    addrs: [u64; N],
    n_out: usize,
) -> Option<(u8, u8)> {
    let last = layout.rank().checked_sub(1)?;
    let inner = |k: usize| layout.strides[k][last];
    if (0..n_out).any(|k| inner(k) != 1) || (n_out..N).any(|k| !matches!(inner(k), 0 | 1)) {
        return None;
    }
    let bcast = (n_out..N)
        .filter(|&k| inner(k) == 0)
        .fold(0u8, |mask, k| mask | (1 << (k - n_out)));
    let widest = sizes.iter().copied().max().unwrap_or(1).max(1);
    let mut vec = VECTOR_BYTES / widest;
    while vec > 1 {
        let fits = layout.shape[last].is_multiple_of(vec)
            && layout.numel() / vec >= BLOCK as usize
            && (0..N).filter(|&k| inner(k) == 1).all(|k| {
                addrs[k].is_multiple_of((vec * sizes[k]) as u64)
                    && layout.strides[k][..last]
                        .iter()
                        .all(|&s| s.unsigned_abs() % vec == 0)
            });
        if fits {
            // vec <= 16, so it fits.
            return Some((vec as u8, bcast));
        }
        vec /= 2;
    }
    None
}

/// Elements per vector load/store for a contiguous launch: the largest power of two
/// `v <= 16 / max(sizes)` such that every `addrs[k]` is a multiple of `v * sizes[k]`, or 1
/// when there are fewer than `v * BLOCK` elements (one vector per thread of one block).
pub fn vector_width<const N: usize>(numel: usize, sizes: [usize; N], addrs: [u64; N]) -> u8 {
    let widest = sizes.iter().copied().max().unwrap_or(1).max(1);
    let mut vec = VECTOR_BYTES / widest;
    while vec > 1 {
        let aligned = sizes
            .iter()
            .zip(&addrs)
            .all(|(&size, &addr)| addr % (vec * size) as u64 == 0);
        if aligned && numel >= vec * BLOCK as usize {
            // vec <= 16, so it fits.
            return vec as u8;
        }
        vec /= 2;
    }
    1
}
