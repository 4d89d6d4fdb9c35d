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
//!      for several inputs and [`tile_shape`] the tile).
//!   3. [`Form::StridedVec`]: every operand reads the innermost dim contiguously or
//!      broadcasts it (a row broadcast `a + b[None, :]`): strided over vectors of the
//!      innermost dim.
//!   4. [`Form::Strided`]: anything else, with an `OffsetCalculator` of the collapsed rank.
//! - **Vector width** (forms 1 and 3): `16 / (widest element size)` elements per load when
//!   every vector-loaded operand's first element is aligned to the vector's bytes (and, for
//!   form 3, the innermost size and the outer strides are multiples of it), halved until that
//!   holds (PyTorch's `can_vectorize_up_to`); 1, that is no vectors, for launches too small to
//!   give one vector to each thread of one block. The tiled form has its own width,
//!   [`tiled_vec`]: 4 bytes per access for 1- and 2-byte elements where the layout allows.
//! - **Launch shape** of the contiguous vector form: [`VECTOR_WORK`] vectors per thread,
//!   [`VECTOR_BLOCK`] threads per block, and a grid that covers the tensor in one pass
//!   ([`Form::grid_cap`]); every other form has [`BLOCK`] threads and a grid capped at the
//!   device's resident blocks.

use std::fmt;

use crate::engine_gpu::offset_calculator::MAX_DIMS as CALC_MAX_DIMS;
use crate::error::LayoutError;
use crate::layout::CollapsedLayout;

/// Threads per block of every pointwise kernel but the contiguous vector form's (the
/// generated `__launch_bounds__`).
pub const BLOCK: u32 = 256;
/// Threads per block of the contiguous vector form ([`Form::Contiguous`] with `vec > 1`).
/// Of the eight launch shapes measured on an H200 (2 or 4 vectors per thread, 128 or 256
/// threads, a grid capped at the resident blocks or a full one; docs/PERFORMANCE.md), 2
/// vectors per thread in 128-thread blocks with a full grid was the fastest: the full grid
/// beat the capped one by 5-8% on every contiguous case, and 128-thread blocks edged out 256
/// on exp and f16.
pub const VECTOR_BLOCK: u32 = 128;
/// Elements each thread handles per grid-stride step in the scalar forms.
pub const SCALAR_WORK: u32 = 4;
/// Vectors each thread handles per grid-stride step in the vectorised forms.
pub const VECTOR_WORK: u32 = 2;
/// Bytes of the widest operand moved by one vector load or store.
pub const VECTOR_BYTES: usize = 16;
/// Smallest edge of a tile of [`Form::Tiled`], and the smallest size of its two dims: below
/// 8 elements the plain strided walk already reads whole sectors of the short dim.
pub const MIN_TILE_EDGE: usize = 8;
/// Largest edge of a tile of [`Form::Tiled`].
pub const MAX_TILE_EDGE: usize = 128;
/// Shared memory the staged tiles of one block of [`Form::Tiled`] may take: 8 blocks of 256
/// threads (a full H100 multiprocessor) then fit in its 228 KiB, and the total stays under the
/// 48 KiB static limit. Inputs past the budget are read unstaged (strided).
pub const TILED_SMEM_BUDGET: usize = 24 * 1024;

/// The tile of [`Form::Tiled`]: `rows` elements along the staged inputs' contiguous dim `D` by
/// `cols` along the output's contiguous dim `C` (template arguments `TR`, `TC` of
/// `ts_apply_tiled` in `kernels/apply.cuh`).
///
/// Invariants (upheld by [`tile_shape`]): both are powers of two from [`MIN_TILE_EDGE`] to
/// [`MAX_TILE_EDGE`], and `rows * cols` is a multiple of `BLOCK * vec` (for the form's
/// `vec`) of at most `16 * BLOCK`, so each thread handles `rows * cols / BLOCK` (1 to 16)
/// elements of a tile, in whole vectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TileShape {
    /// Elements along the staged inputs' contiguous dim.
    pub rows: u8,
    /// Elements along the output's contiguous dim.
    pub cols: u8,
}

impl TileShape {
    /// Elements of one tile.
    pub fn area(self) -> usize {
        usize::from(self.rows) * usize::from(self.cols)
    }

    /// Shared-memory bytes of one staged input's tile of `elem`-byte elements in a kernel
    /// moving `vec` elements per access: `cols` columns of `rows + pad` elements, `pad` being
    /// 1 for `vec == 1` and `vec` otherwise (the padding keeps a warp reading across columns
    /// on distinct banks, and with `pad == vec` every column starts `vec`-aligned, so a
    /// staged vector is one shared-memory store), rounded up to 16 bytes so the next tile
    /// stays aligned (`PITCH` and `TILE_BYTES` in `kernels/apply.cuh`).
    pub fn smem_bytes(self, elem: usize, vec: u8) -> usize {
        let pad = usize::from(vec.max(1));
        (usize::from(self.cols) * (usize::from(self.rows) + pad) * elem).div_ceil(16) * 16
    }
}

/// Width of a kernel's index math.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IndexWidth {
    /// `unsigned int` indices, `int` offsets.
    Bits32,
    /// `unsigned long long` indices, `long long` offsets.
    Bits64,
}

impl IndexWidth {
    /// The narrowest width that is exact for `numel` elements whose farthest offset from each
    /// operand's first element is `max_extent` elements.
    pub fn for_extent(numel: usize, max_extent: usize) -> Self {
        const LIMIT: usize = i32::MAX as usize;
        if numel <= LIMIT && max_extent <= LIMIT {
            IndexWidth::Bits32
        } else {
            IndexWidth::Bits64
        }
    }

    /// The CUDA index and offset types.
    pub fn cuda_types(self) -> (&'static str, &'static str) {
        match self {
            IndexWidth::Bits32 => ("unsigned int", "int"),
            IndexWidth::Bits64 => ("unsigned long long", "long long"),
        }
    }
}

impl fmt::Display for IndexWidth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IndexWidth::Bits32 => "i32",
            IndexWidth::Bits64 => "i64",
        })
    }
}

/// The kernel form of a launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Form {
    /// Every operand one dense run; `vec` elements per load (1: no vector loads).
    Contiguous {
        /// Elements per vector load/store (a power of two, at most 16).
        vec: u8,
    },
    /// Any strides, through an `OffsetCalculator` of `rank` dims.
    Strided {
        /// The collapsed rank (1 to [`crate::offset_calculator::MAX_DIMS`]).
        rank: u8,
    },
    /// Strided over vectors of `vec` elements of the innermost dim, which every operand reads
    /// contiguously (stride 1) or broadcasts (stride 0: bit `k` of `bcast` for input `k`).
    StridedVec {
        /// The collapsed rank.
        rank: u8,
        /// Elements per vector (a power of two from 2 to 16).
        vec: u8,
        /// Bit `k` set: input `k` is broadcast along the innermost dim.
        bcast: u8,
    },
    /// Shared-memory tiles over two dims, the others a batch: the output is contiguous along
    /// the last collapsed dim `C = rank - 1`, and the inputs of `staged` along `dim` instead.
    /// The kernel's `OffsetCalculator` has `rank` dims ordered batch dims (in collapsed
    /// order), then `dim`, then `C`. Rank 2 (`a.T + b`) is `rank: 2, dim: 0`.
    Tiled {
        /// The collapsed rank (2 to [`crate::offset_calculator::MAX_DIMS`]).
        rank: u8,
        /// The staged inputs' contiguous dim, in collapsed order (below `rank - 1`).
        dim: u8,
        /// Bit `k` set: input `k` goes through a tile.
        staged: u8,
        /// The tile.
        tile: TileShape,
        /// Elements per global access along the contiguous dims (1, 2 or 4, see
        /// [`tiled_vec`]): a staged input is read `vec` rows at a time and the outputs are
        /// written `vec` columns at a time, one aligned vector each.
        vec: u8,
        /// Bit `k` set: input `k`, not staged, is read `vec` columns at a time as one
        /// aligned vector ([`tiled_direct_vec`]); the other unstaged inputs one element per
        /// access. 0 when `vec` is 1.
        direct: u8,
    },
}

impl Form {
    /// Elements (or vectors) per thread per grid-stride step, as the kernel template has it.
    pub fn work_per_thread(self) -> u32 {
        match self {
            Form::Contiguous { vec } if vec > 1 => VECTOR_WORK,
            Form::StridedVec { .. } => VECTOR_WORK,
            // At most 16 * BLOCK (TileShape's invariant), so this fits.
            Form::Tiled { tile, .. } => (tile.area() / BLOCK as usize) as u32,
            _ => SCALAR_WORK,
        }
    }

    /// Elements one unit of work covers: the vector width, 1 for the scalar forms, 1 for the
    /// tiled form (whose thread does [`Form::work_per_thread`] elements of each tile).
    pub fn elements_per_unit(self) -> usize {
        match self {
            Form::Contiguous { vec } | Form::StridedVec { vec, .. } => usize::from(vec),
            Form::Strided { .. } | Form::Tiled { .. } => 1,
        }
    }

    /// The rank of the kernel's `OffsetCalculator` (1 for the contiguous forms, which have
    /// none).
    pub fn rank(self) -> usize {
        match self {
            Form::Contiguous { .. } => 1,
            Form::Strided { rank } | Form::StridedVec { rank, .. } | Form::Tiled { rank, .. } => {
                usize::from(rank)
            }
        }
    }
}

impl Form {
    /// Whether this is the contiguous vector form, the one with its own launch shape
    /// ([`VECTOR_BLOCK`], a full grid).
    pub fn is_contiguous_vec(self) -> bool {
        matches!(self, Form::Contiguous { vec } if vec > 1)
    }

    /// Threads per block of a kernel of this form (its `__launch_bounds__`): [`VECTOR_BLOCK`]
    /// for the contiguous vector form, [`BLOCK`] otherwise.
    pub fn block(self) -> u32 {
        if self.is_contiguous_vec() {
            VECTOR_BLOCK
        } else {
            BLOCK
        }
    }

    /// The most blocks a launch of this form takes, given the device's resident blocks
    /// `max_blocks` (the [`launch_grid`] argument): none for the contiguous vector form, whose
    /// grid covers the tensor in one pass (measured faster, see [`VECTOR_BLOCK`]);
    /// `max_blocks` for the others, whose grid-stride loop covers the rest.
    pub fn grid_cap(self, max_blocks: u32) -> Option<u32> {
        (!self.is_contiguous_vec()).then_some(max_blocks)
    }
}

impl fmt::Display for Form {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Form::Contiguous { vec: 1 } => f.write_str("contig"),
            Form::Contiguous { vec } => write!(f, "vec{vec}"),
            Form::Strided { rank } => write!(f, "strided{rank}"),
            Form::StridedVec { rank, vec, bcast } => write!(f, "strided{rank}_vec{vec}_b{bcast}"),
            Form::Tiled {
                rank,
                dim,
                staged,
                tile,
                vec,
                direct,
            } => {
                write!(
                    f,
                    "tiled{rank}_d{dim}_s{staged}_t{}x{}",
                    tile.rows, tile.cols
                )?;
                if *vec > 1 {
                    write!(f, "_v{vec}")?;
                }
                if *direct != 0 {
                    write!(f, "_u{direct}")?;
                }
                Ok(())
            }
        }
    }
}

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

/// The parts of a [`Form::Tiled`] that [`tiled_plan`] chooses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TiledPlan {
    /// The staged inputs' contiguous dim, in collapsed order.
    pub dim: u8,
    /// Bit `k` set: input `k` goes through a tile.
    pub staged: u8,
    /// The tile.
    pub tile: TileShape,
    /// Elements per global access along the contiguous dims ([`tiled_vec`]).
    pub vec: u8,
    /// The unstaged inputs read as vectors ([`tiled_direct_vec`]).
    pub direct: u8,
}

/// Bytes one thread moves per global access in the tiled form when the layout allows it
/// (see [`tiled_vec`]): a 4-byte word, the access size of the `f32` kernel, which runs at
/// 0.73 to 0.96 of the copy bandwidth while one 1- or 2-byte element per access does not
/// reach 0.65.
pub const TILED_ACCESS_BYTES: usize = 4;

/// For the tiled form: its [`TiledPlan`], or `None` when tiles do not apply.
///
/// The rule, over the collapsed layout (operands `0..n_out` the outputs, written in output 0's
/// order; only inputs are staged; `addrs` the operands' first elements' device addresses):
/// 1. Output 0 has stride 1 along the last dim `C` (the collapse puts its fastest dim last),
///    and the rank is 2 to the offset calculator's maximum.
/// 2. A *candidate* is an input among the first 8 (the mask is a `u8`) that neither reads
///    `C` contiguously nor broadcasts it (`|stride| > 1` along `C`) and has a dim `D != C`
///    of stride +-1 (flips included): its own fastest dim. An input reading `C` with stride
///    +-1 or 0 is coalesced (or one address per warp) already.
/// 3. The tile's `D` is the dim shared by the most candidates (ties: the one of the
///    lowest-numbered input); candidates with another fastest dim stay unstaged (read
///    strided), as every non-candidate does. A block tiles two dims only, and the most
///    common one moves the most bytes through tiles.
/// 4. `D` and `C` both have at least [`MIN_TILE_EDGE`] elements.
/// 5. The access width `vec` is [`tiled_vec`] over the outputs and the candidates of `D`, the
///    tile [`tile_shape`] of the two sizes at that width.
/// 6. Staged inputs are taken in order while their tiles fit [`TILED_SMEM_BUDGET`].
/// 7. A narrower width (down to 1) replaces `vec` when it stages more inputs (a vector tile
///    takes more shared memory). A wider tile may pad small dims more ([`tile_use`]), but it
///    still moves more useful elements per block and per access, so that alone keeps `vec`.
pub fn tiled_plan<const N: usize>(
    layout: &CollapsedLayout<N>,
    sizes: [usize; N],
    addrs: [u64; N],
    n_out: usize,
) -> Option<TiledPlan> {
    let rank = layout.rank();
    if !(2..=CALC_MAX_DIMS).contains(&rank) || n_out == 0 || n_out >= N {
        return None;
    }
    let c = rank - 1;
    if layout.strides[0][c] != 1 {
        return None;
    }
    let fastest = |k: usize| -> Option<usize> {
        let s = &layout.strides[k];
        if s[c].unsigned_abs() <= 1 {
            return None;
        }
        (0..c).find(|&d| s[d].unsigned_abs() == 1)
    };
    let inputs = n_out..N.min(n_out + 8);
    let mut best: Option<(usize, usize)> = None; // (dim, count)
    for k in inputs.clone() {
        let Some(d) = fastest(k) else { continue };
        let count = inputs.clone().filter(|&j| fastest(j) == Some(d)).count();
        if best.is_none_or(|(_, n)| count > n) {
            best = Some((d, count));
        }
    }
    let (d, _) = best?;
    if layout.shape[d] < MIN_TILE_EDGE || layout.shape[c] < MIN_TILE_EDGE {
        return None;
    }
    let candidates = inputs
        .clone()
        .filter(|&k| fastest(k) == Some(d))
        .fold(0u8, |mask, k| mask | (1 << (k - n_out)));
    let (rows, cols) = (layout.shape[d], layout.shape[c]);
    // The widest access the layout allows, narrowed when a narrower one stages more inputs
    // (many inputs: a vector tile takes more shared memory): a vector never costs a staged
    // input.
    let at = |vec: u8| {
        let tile = tile_shape(rows, cols, vec);
        let mut used = 0usize;
        let mut staged = 0u8;
        for k in inputs.clone().filter(|&k| fastest(k) == Some(d)) {
            let bytes = tile.smem_bytes(sizes[k], vec);
            if used + bytes <= TILED_SMEM_BUDGET {
                used += bytes;
                staged |= 1 << (k - n_out);
            }
        }
        (staged.count_ones(), tile, staged)
    };
    let mut vec = tiled_vec(layout, sizes, addrs, n_out, d, candidates);
    let mut best = at(vec);
    let mut v = vec / 2;
    while v >= 1 {
        let other = at(v);
        if other.0 > best.0 {
            (vec, best) = (v, other);
        }
        v /= 2;
    }
    let (_, tile, staged) = best;
    let direct = tiled_direct_vec(layout, sizes, addrs, n_out, vec, staged);
    // d < c <= CALC_MAX_DIMS, so it fits.
    (staged != 0).then_some(TiledPlan {
        dim: d as u8,
        staged,
        tile,
        vec,
        direct,
    })
}

/// The inputs of a tiled launch (`layout` tiling `D` by the last dim `C`, `vec` elements per
/// access, the inputs of `staged` through tiles) that are not staged yet can be read `vec`
/// columns at a time as one aligned vector, as a bit mask (bit `k`: input `k`, numbered after
/// the `n_out` outputs; among the first 8): stride +1 along `C`, every other stride a
/// multiple of `vec`, and the first element aligned to `vec` elements. Then each of the
/// kernel's accesses (columns `c .. c + vec` of one row, `c` a multiple of `vec`, the column
/// count a multiple of `vec` as [`tiled_vec`] requires) is one aligned vector inside the
/// tensor. Reading such an input (`y` of `x.permute(p) + y`) one 1- or 2-byte element per
/// access, or deciding per access in the kernel whether a vector fits, were both measured
/// slower (docs/PERFORMANCE.md), so the planner decides once. 0 when `vec` is 1.
pub fn tiled_direct_vec<const N: usize>(
    layout: &CollapsedLayout<N>,
    sizes: [usize; N],
    addrs: [u64; N],
    n_out: usize,
    vec: u8,
    staged: u8,
) -> u8 {
    let rank = layout.rank();
    let v = usize::from(vec);
    if v < 2 || rank < 2 || !layout.shape[rank - 1].is_multiple_of(v) {
        return 0;
    }
    let c = rank - 1;
    (n_out..N.min(n_out + 8))
        .filter(|&k| staged & (1 << (k - n_out)) == 0)
        .filter(|&k| {
            let s = &layout.strides[k];
            s[c] == 1
                && addrs[k].is_multiple_of((v * sizes[k]) as u64)
                && (0..c).all(|d| s[d].unsigned_abs().is_multiple_of(v))
        })
        .fold(0u8, |mask, k| mask | (1 << (k - n_out)))
}

/// The fraction of the elements of whole `tile`s covering `rows x cols` that lie inside it,
/// in eighths (0 to 8).
pub fn tile_use(rows: usize, cols: usize, tile: TileShape) -> usize {
    // (elements, elements padded to whole tiles) along one dim.
    let padded = |n: usize, t: usize| (n.max(1), n.max(1).div_ceil(t.max(1)) * t.max(1));
    let (nr, pr) = padded(rows, usize::from(tile.rows));
    let (nc, pc) = padded(cols, usize::from(tile.cols));
    // u128 keeps the products exact.
    (8 * nr as u128 * nc as u128 / (pr as u128 * pc as u128)) as usize
}

/// Elements per global access of a tiled launch over `layout` tiling dims `dim` (`D`) and the
/// last (`C`), with the inputs of `staged` (bit `k`: input `k`, numbered after the `n_out`
/// outputs) read through tiles: the largest power of two `v` from 2 to
/// `TILED_ACCESS_BYTES / (widest element of the outputs and the staged inputs)` such that
/// - both tiled dims have a multiple of `v` elements (so a vector is wholly inside the tensor
///   or wholly outside it, at tile edges too),
/// - every output has stride 1 along `C` and every staged input stride +1 along `D` (a
///   flipped dim is read backwards, element by element),
/// - every other stride of those operands is a multiple of `v` and their first elements are
///   aligned to `v` elements (so each vector access is aligned);
///
/// else 1, one element per access. Inputs read directly (not staged) put no condition on `v`;
/// [`tiled_direct_vec`] picks those read as vectors of `v` columns (a vector load where the
/// kernel found such an input contiguous and aligned, checked per access, was measured
/// slower: `add` at 0.48-0.60 of copy against 0.58-0.78 for f16 and u8 on an H100,
/// docs/PERFORMANCE.md; the planned one has no check in the kernel). For
/// 4- and 8-byte elements this is always 1: the tiled kernel of `f32` and `f64` is the scalar
/// one.
pub fn tiled_vec<const N: usize>(
    layout: &CollapsedLayout<N>,
    sizes: [usize; N],
    addrs: [u64; N],
    n_out: usize,
    dim: usize,
    staged: u8,
) -> u8 {
    let rank = layout.rank();
    if rank < 2 || dim >= rank - 1 {
        return 1;
    }
    let c = rank - 1;
    let vectored = |k: usize| k < n_out || (k - n_out < 8 && staged & (1 << (k - n_out)) != 0);
    let along = |k: usize| if k < n_out { c } else { dim };
    let widest = (0..N)
        .filter(|&k| vectored(k))
        .map(|k| sizes[k])
        .max()
        .unwrap_or(1)
        .max(1);
    let mut vec = TILED_ACCESS_BYTES / widest;
    while vec > 1 {
        let fits = layout.shape[dim].is_multiple_of(vec)
            && layout.shape[c].is_multiple_of(vec)
            && (0..N).filter(|&k| vectored(k)).all(|k| {
                let s = &layout.strides[k];
                s[along(k)] == 1
                    && addrs[k].is_multiple_of((vec * sizes[k]) as u64)
                    && (0..rank)
                        .filter(|&d| d != along(k))
                        .all(|d| s[d].unsigned_abs().is_multiple_of(vec))
            });
        if fits {
            // vec <= TILED_ACCESS_BYTES = 4, so it fits.
            return vec as u8;
        }
        vec /= 2;
    }
    1
}

/// The tile for dims of `rows` (the staged inputs' contiguous dim) by `cols` (the output's)
/// elements, in a kernel moving `vec` elements per global access ([`tiled_vec`]).
///
/// The nominal tile, for large dims, holds `1024 * vec` elements: 32 x 32 for `vec == 1`,
/// 64 x 32 for 2, 64 x 64 for 4. Each thread then makes 4 vector accesses per tile on each
/// side, 4 KiB of tile for 4-byte words: the shape of the `f32` kernel, which runs at 0.73
/// to 0.96 of the copy bandwidth on an H100 (docs/PERFORMANCE.md). Larger tiles of scalar
/// accesses for 1- and 2-byte elements (64 x 64 and 128 x 32, 16 elements per thread) were
/// measured first and ran at 0.13 to 0.38 of the copy bandwidth: more registers per thread,
/// fewer resident blocks, less overlap of one block's loads with another's stores across the
/// barrier, and still one narrow access per element.
///
/// Small or ragged dims get a narrower edge: among powers of two from [`MIN_TILE_EDGE`] to
/// [`MAX_TILE_EDGE`] with an area from `BLOCK * vec` to the nominal one, the tile with the
/// least padding (the fraction of the tiles' elements inside the tensor, in eighths) wins,
/// then the larger area, then the squarer, then the taller. So `20 x 20` at `vec == 1` takes
/// `32 x 8` (20 of every 24 columns used) rather than `32 x 32` (20 of 32 along both).
/// A `vec` outside 1, 2, 4 is taken as 1.
pub fn tile_shape(rows: usize, cols: usize, vec: u8) -> TileShape {
    let vec = if matches!(vec, 2 | 4) {
        usize::from(vec)
    } else {
        1
    };
    let max_area = 1024 * vec;
    let min_area = BLOCK as usize * vec;
    let edges =
        || (MIN_TILE_EDGE.trailing_zeros()..=MAX_TILE_EDGE.trailing_zeros()).map(|p| 1usize << p);
    let mut best: Option<((usize, usize, usize, usize), TileShape)> = None;
    for tr in edges() {
        for tc in edges() {
            let area = tr * tc;
            if area < min_area || area > max_area {
                continue;
            }
            // Edges are at most MAX_TILE_EDGE = 128, so they fit.
            let tile = TileShape {
                rows: tr as u8,
                cols: tc as u8,
            };
            let skew = tr.max(tc) / tr.min(tc);
            // Larger is better in every place: fewer skew is better, so invert it.
            let key = (tile_use(rows, cols, tile), area, MAX_TILE_EDGE / skew, tr);
            if best.is_none_or(|(k, _)| key > k) {
                best = Some((key, tile));
            }
        }
    }
    best.map_or(TileShape { rows: 32, cols: 32 }, |(_, t)| t)
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

/// Blocks to launch for `numel` elements in `form`: enough for one step of every thread,
/// at most `max_blocks` (a full device of resident blocks; the loop strides over the rest),
/// at least 1. For 32-bit index math the grid-stride step `blocks * block * work` also stays
/// at most 2^31, so that `index + step` cannot wrap in 32 bits (the plan guarantees
/// `numel <= 2^31 - 1`).
#[cfg(test)]
pub fn grid_size(numel: usize, form: Form, index: IndexWidth, max_blocks: u32) -> u32 {
    launch_grid(
        numel,
        form.elements_per_unit(),
        form.block(),
        form.work_per_thread(),
        index,
        Some(max_blocks),
    )
}

/// Blocks to launch for `numel` elements taken `per_unit` at a time (the vector width),
/// `work` units per thread and `block` threads per block: enough for one step of every
/// thread, at least 1, at most `max_blocks` when given ([`Form::grid_cap`]), else (a full
/// grid) at most `2^31 - 1`, the device's grid x limit. For 32-bit index math the grid-stride
/// step `blocks * block * work` stays at most 2^31 either way, so `index + step` cannot wrap
/// in 32 bits (the plan guarantees `numel <= 2^31 - 1`).
pub fn launch_grid(
    numel: usize,
    per_unit: usize,
    block: u32,
    work: u32,
    index: IndexWidth,
    max_blocks: Option<u32>,
) -> u32 {
    let per_thread = block.max(1).saturating_mul(work.max(1));
    let units = numel / per_unit.max(1);
    let needed = units.div_ceil(per_thread as usize).max(1);
    let mut cap = max_blocks.unwrap_or(i32::MAX as u32).max(1);
    if index == IndexWidth::Bits32 {
        cap = cap.min(((1u32 << 31) / per_thread).max(1));
    }
    u32::try_from(needed).map_or(cap, |n| n.min(cap))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::{collapse, Layout};

    #[test]
    fn index_width_switches_at_i32_max() {
        let limit = i32::MAX as usize;
        assert_eq!(IndexWidth::for_extent(limit, limit), IndexWidth::Bits32);
        assert_eq!(IndexWidth::for_extent(limit + 1, 0), IndexWidth::Bits64);
        assert_eq!(IndexWidth::for_extent(16, limit + 1), IndexWidth::Bits64);
    }

    /// An output and an input of `rank` size-2 dims that collapse to nothing smaller: the
    /// input broadcasts every other dim, so no two neighbours merge.
    fn unmergeable(rank: usize) -> CollapsedLayout<2> {
        let shape = vec![2; rank];
        let out = Layout::contiguous(&shape).unwrap();
        let strides: Vec<isize> = (0..rank)
            .map(|d| if d % 2 == 0 { 1 << (d / 2) } else { 0 })
            .rev()
            .collect();
        let a = Layout::new(&shape, &strides, 0).unwrap();
        collapse([&out, &a])
    }

    #[test]
    fn ranks_the_layout_accepts_but_the_kernels_cannot_launch_are_typed_errors() {
        use crate::engine_gpu::offset_calculator::MAX_DIMS as CALC;
        const { assert!(CALC < crate::layout::MAX_DIMS) };
        for rank in [CALC + 1, CALC + 2, crate::layout::MAX_DIMS] {
            let c = unmergeable(rank);
            assert_eq!(c.rank(), rank, "the test layout must not collapse");
            let err = plan_checked("add", &c, [4, 4], [0, 0]).unwrap_err();
            assert_eq!(
                err,
                LayoutError::GpuRankTooLarge {
                    op: "add",
                    rank,
                    max: CALC
                }
            );
            let msg = err.to_string();
            assert!(msg.contains(&format!(
                "rank {rank} exceeds the GPU kernels' limit of {CALC}"
            )));
            assert!(
                msg.contains("contiguous") && msg.contains("reshape"),
                "{msg}"
            );
        }
        // At the limit it plans, and the calculator it needs builds.
        let c = unmergeable(CALC);
        let p = plan_checked("add", &c, [4, 4], [0, 0]).unwrap();
        assert_eq!(p.form.rank(), CALC);
        let strides = [c.strides[0].as_slice(), c.strides[1].as_slice()];
        assert!(
            crate::engine_gpu::offset_calculator::OffsetCalculator::<u32, 2>::new(
                &c.shape, strides
            )
            .is_ok()
        );
        // A rank-32 op that collapses (contiguous operands) needs no calculator at all.
        let l = Layout::contiguous(&[1; crate::layout::MAX_DIMS]).unwrap();
        let p = plan_checked("add", &collapse([&l, &l]), [4, 4], [0, 0]).unwrap();
        assert!(matches!(p.form, Form::Contiguous { .. }));
    }

    #[test]
    fn reversed_dims_plan_strided_rank_three() {
        let out = Layout::contiguous(&[4, 8, 16]).unwrap();
        let a = Layout::contiguous(&[16, 8, 4])
            .unwrap()
            .permute(&[2, 1, 0])
            .unwrap();
        let c = collapse([&out, &a]);
        let p = plan(&c, [4, 4], [0, 0]);
        assert_eq!(p.form, Form::Strided { rank: 3 });
        assert_eq!(p.index, IndexWidth::Bits32);
    }

    #[test]
    fn large_extent_plans_64_bit() {
        // 3 x 2 elements, but the rows are 2^31 elements apart.
        let big = 1isize << 31;
        let out = Layout::contiguous(&[3, 2]).unwrap();
        let a = Layout::new(&[3, 2], &[big, 1], 0).unwrap();
        let p = plan(&collapse([&out, &a]), [1, 1], [0, 0]);
        assert_eq!(p.form, Form::Strided { rank: 2 });
        assert_eq!(p.index, IndexWidth::Bits64);
    }

    #[test]
    fn contiguous_vector_width_follows_alignment_and_widest_type() {
        let n = 1 << 20;
        assert_eq!(vector_width(n, [4, 4, 4], [0, 256, 4096]), 4);
        assert_eq!(vector_width(n, [2, 2], [0, 16]), 8);
        assert_eq!(vector_width(n, [1, 1], [0, 0]), 16);
        // A bool output of f32 inputs: 4 lanes, the bool side moves 4 bytes.
        assert_eq!(vector_width(n, [1, 4, 4], [4, 16, 32]), 4);
        // One input only 8-byte aligned: halve to 2 floats.
        assert_eq!(vector_width(n, [4, 4], [0, 8]), 2);
        // Not even 8-byte aligned: scalar.
        assert_eq!(vector_width(n, [4, 4], [0, 4]), 1);
        // f64 and i64: 2 per 16 bytes.
        assert_eq!(vector_width(n, [8, 8], [16, 32]), 2);
        // Too small to fill a block with vectors.
        assert_eq!(vector_width(4 * 256 - 1, [4, 4], [0, 0]), 2);
        assert_eq!(vector_width(2 * 256 - 1, [4, 4], [0, 0]), 1);
    }

    const T32: TileShape = TileShape { rows: 32, cols: 32 };

    fn tiled(rank: u8, dim: u8, staged: u8, tile: TileShape) -> Form {
        tiled_v(rank, dim, staged, tile, 1)
    }

    fn tiled_v(rank: u8, dim: u8, staged: u8, tile: TileShape, vec: u8) -> Form {
        tiled_vd(rank, dim, staged, tile, vec, 0)
    }

    fn tiled_vd(rank: u8, dim: u8, staged: u8, tile: TileShape, vec: u8, direct: u8) -> Form {
        Form::Tiled {
            rank,
            dim,
            staged,
            tile,
            vec,
            direct,
        }
    }

    #[test]
    fn transposed_inputs_plan_tiles() {
        let out = Layout::contiguous(&[64, 48]).unwrap();
        let at = Layout::contiguous(&[48, 64]).unwrap().t();
        let b = Layout::contiguous(&[64, 48]).unwrap();
        // 64 x 48: 32 x 32 pads 48 to 64 (6/8 used), 64 x 16 pads nothing.
        let t = TileShape { rows: 64, cols: 16 };
        let p = plan(&collapse([&out, &at, &b]), [4; 3], [0; 3]);
        assert_eq!(p.form, tiled(2, 0, 0b01, t));
        let p = plan(&collapse([&out, &b, &at]), [4; 3], [0; 3]);
        assert_eq!(p.form, tiled(2, 0, 0b10, t));
        // f16: two elements per access.
        let p = plan(&collapse([&out, &at, &at]), [2; 3], [0; 3]);
        assert_eq!(p.form, tiled_v(2, 0, 0b11, t, 2));
        // Flipped along its contiguous dim: still staged.
        let atf = at.flip(0).unwrap();
        let p = plan(&collapse([&out, &atf, &b]), [4; 3], [0; 3]);
        assert_eq!(p.form, tiled(2, 0, 0b01, t));
        // A dim below the smallest tile edge: plain strided.
        let small = Layout::contiguous(&[64, 4]).unwrap();
        let small_t = Layout::contiguous(&[4, 64]).unwrap().t();
        let p = plan(&collapse([&small, &small_t]), [4; 2], [0; 2]);
        assert_eq!(p.form, Form::Strided { rank: 2 });
        // A broadcast input is never staged: it reads one element per column.
        let col = Layout::contiguous(&[64, 1])
            .unwrap()
            .broadcast_to(&[64, 48])
            .unwrap();
        let p = plan(&collapse([&out, &col, &at]), [4; 3], [0; 3]);
        assert_eq!(p.form, tiled(2, 0, 0b10, t));
    }

    /// `x.permute(p) + y`: the unstaged `y` is read as vectors of `vec` columns exactly when
    /// it runs along the output's contiguous dim with aligned rows and first element.
    #[test]
    fn unstaged_inputs_read_as_vectors_when_aligned() {
        let out = Layout::contiguous(&[64, 48]).unwrap();
        let at = Layout::contiguous(&[48, 64]).unwrap().t();
        let b = Layout::contiguous(&[64, 48]).unwrap();
        let t = tile_shape(64, 48, 4);
        // u8: 4 elements per access; y (input 1) is contiguous along the columns.
        let c = collapse([&out, &at, &b]);
        let p = plan(&c, [1; 3], [0; 3]);
        let Form::Tiled {
            vec,
            staged,
            direct,
            ..
        } = p.form
        else {
            panic!("{}", p.form)
        };
        assert_eq!((vec, staged), (4, 0b01));
        assert_eq!(direct, 0b10, "{}", p.form);
        assert_eq!(tiled_direct_vec(&c, [1; 3], [0; 3], 1, 4, 0b01), 0b10);
        // Its first element not 4-byte aligned: one element per access.
        assert_eq!(tiled_direct_vec(&c, [1; 3], [0, 0, 2], 1, 4, 0b01), 0);
        // f16 at 2 elements per access: 2-element alignment is enough.
        assert_eq!(tiled_direct_vec(&c, [2; 3], [0, 0, 4], 1, 2, 0b01), 0b10);
        assert_eq!(tiled_direct_vec(&c, [2; 3], [0, 0, 2], 1, 2, 0b01), 0);
        // Scalar accesses, or the input staged: nothing.
        assert_eq!(tiled_direct_vec(&c, [1; 3], [0; 3], 1, 1, 0b01), 0);
        assert_eq!(tiled_direct_vec(&c, [1; 3], [0; 3], 1, 4, 0b11), 0);
        // Rows 50 apart (a slice of a wider tensor): not a multiple of 4 (u8), of 2 (f16) yes.
        let wide = Layout::new(&[64, 48], &[50, 1], 0).unwrap();
        let c = collapse([&out, &at, &wide]);
        assert_eq!(tiled_direct_vec(&c, [1; 3], [0; 3], 1, 4, 0b01), 0);
        assert_eq!(tiled_direct_vec(&c, [2; 3], [0; 3], 1, 2, 0b01), 0b10);
        // Broadcast along the columns or flipped along them: one element per access.
        let row = Layout::contiguous(&[64, 1])
            .unwrap()
            .broadcast_to(&[64, 48])
            .unwrap();
        let c = collapse([&out, &at, &row]);
        assert_eq!(tiled_direct_vec(&c, [1; 3], [0; 3], 1, 4, 0b01), 0);
        let flipped = b.flip(1).unwrap();
        let c = collapse([&out, &at, &flipped]);
        assert_eq!(tiled_direct_vec(&c, [1; 3], [0; 3], 1, 4, 0b01), 0);
        // Batch dims (rank 3) must keep the alignment too.
        let out3 = Layout::contiguous(&[3, 64, 48]).unwrap();
        let x3 = Layout::contiguous(&[3, 48, 64])
            .unwrap()
            .permute(&[0, 2, 1])
            .unwrap();
        let y3 = Layout::contiguous(&[3, 64, 48]).unwrap();
        let c = collapse([&out3, &x3, &y3]);
        assert_eq!(tiled_direct_vec(&c, [1; 3], [0; 3], 1, 4, 0b01), 0b10);
        assert_eq!(
            plan(&c, [1; 3], [0; 3]).form,
            tiled_vd(3, 1, 0b01, t, 4, 0b10)
        );
    }

    /// `out = f(x.permute(perm))` for a contiguous `x` of `shape` (the permuted shape is the
    /// output's), collapsed.
    fn permuted(shape: &[usize], perm: &[usize]) -> CollapsedLayout<2> {
        let x = Layout::contiguous(shape).unwrap().permute(perm).unwrap();
        let out = Layout::contiguous(x.shape()).unwrap();
        collapse([&out, &x])
    }

    #[test]
    fn permutes_of_every_rank_plan_tiles_over_the_moved_inner_dim() {
        // Rank 3, batched transpose: x[b, m, n] -> out[b, n, m]. Dims (b, n, m); the input is
        // contiguous along n (collapsed dim 1).
        let c = permuted(&[8, 64, 96], &[0, 2, 1]);
        assert_eq!(c.shape, [8, 96, 64]);
        assert_eq!(plan(&c, [4, 4], [0; 2]).form, tiled(3, 1, 1, T32));
        // NCHW -> NHWC: (N, C, H, W) -> (N, H, W, C); H and W merge; the input's fastest
        // dim (HW) is collapsed dim 1, the output's (C) dim 2.
        let c = permuted(&[4, 64, 32, 32], &[0, 2, 3, 1]);
        assert_eq!(c.shape, [4, 1024, 64]);
        assert_eq!(plan(&c, [4, 4], [0; 2]).form, tiled(3, 1, 1, T32));
        // NHWC -> NCHW.
        let c = permuted(&[4, 32, 32, 64], &[0, 3, 1, 2]);
        assert_eq!(c.shape, [4, 64, 1024]);
        assert_eq!(plan(&c, [4, 4], [0; 2]).form, tiled(3, 1, 1, T32));
        // Attention head split to keys transposed: [B, S, H, D] -> [B, H, D, S]; H and D
        // merge (the input's fastest dim), S is the output's.
        let c = permuted(&[2, 128, 8, 64], &[0, 2, 3, 1]);
        assert_eq!(c.shape, [2, 512, 128]);
        let t = TileShape { rows: 64, cols: 32 };
        assert_eq!(plan(&c, [2, 2], [0; 2]).form, tiled_v(3, 1, 1, t, 2));
        // Rank 4 after the collapse: [A, B, C, D] -> [B, A, D, C].
        let c = permuted(&[16, 8, 32, 64], &[1, 0, 3, 2]);
        assert_eq!(c.shape, [8, 16, 64, 32]);
        // u8: four elements per access; 64 x 32 pads nothing.
        let t = TileShape { rows: 64, cols: 32 };
        assert_eq!(plan(&c, [1, 1], [0; 2]).form, tiled_v(4, 2, 1, t, 4));
        // A full reversal of rank 2 to 8: the input's fastest dim is the output's slowest.
        for rank in 2..=8usize {
            let shape: Vec<usize> = (0..rank)
                .map(|d| {
                    if d == 0 || d == rank - 1 {
                        16
                    } else {
                        [8, 4][d % 2]
                    }
                })
                .collect();
            let perm: Vec<usize> = (0..rank).rev().collect();
            let c = permuted(&shape, &perm);
            assert_eq!(c.rank(), rank);
            for elem in [1, 2, 4, 8] {
                let (rows, cols) = (16, 16);
                // Dim 0 (size 16 in the input, last in the output) and dim rank-1.
                let p = plan(&c, [elem, elem], [0; 2]);
                let Form::Tiled {
                    rank: r,
                    dim,
                    staged,
                    tile,
                    vec,
                    ..
                } = p.form
                else {
                    panic!("rank {rank}, {elem} bytes: {}", p.form)
                };
                assert_eq!((usize::from(r), dim, staged), (rank, 0, 1), "rank {rank}");
                // A word per access for 1- and 2-byte elements.
                let want = (4 / elem).max(1) as u8;
                assert_eq!(vec, want, "rank {rank}, {elem} bytes");
                assert_eq!(tile, tile_shape(rows, cols, vec));
                if vec == 1 {
                    assert_eq!(
                        (tile.rows, tile.cols),
                        (16, 16),
                        "rank {rank}, {elem} bytes"
                    );
                }
            }
        }
        // A permute that keeps the innermost dim is not tiled (inner vectors instead).
        let c = permuted(&[8, 64, 96], &[1, 0, 2]);
        assert!(matches!(
            plan(&c, [4, 4], [0; 2]).form,
            Form::StridedVec { .. }
        ));
    }

    #[test]
    fn tile_shape_is_32_square_for_large_dims_and_narrows_for_ragged_ones() {
        let big = 1 << 12;
        assert_eq!(tile_shape(big, big, 1), T32);
        // Vector tiles: 1024 accesses of `vec` elements, 4 per thread.
        assert_eq!(tile_shape(big, big, 2), TileShape { rows: 64, cols: 32 });
        assert_eq!(tile_shape(big, big, 4), TileShape { rows: 64, cols: 64 });
        // A warp's access along either dim is a whole number of 32-byte sectors for every
        // element size: 32 elements of 1 to 8 bytes.
        for elem in [1usize, 2, 4, 8] {
            assert_eq!((usize::from(T32.rows) * elem) % 32, 0);
        }
        // Ragged sizes: the least padding wins.
        assert_eq!(tile_shape(20, 20, 1), TileShape { rows: 32, cols: 8 });
        assert_eq!(tile_shape(1000, 1000, 1), T32);
        assert_eq!(tile_shape(64, 48, 1), TileShape { rows: 64, cols: 16 });
        assert_eq!(tile_shape(8, 1 << 20, 1), TileShape { rows: 8, cols: 128 });
        assert_eq!(tile_shape(1 << 20, 8, 1), TileShape { rows: 128, cols: 8 });
        assert_eq!(tile_shape(1000, 1000, 4), TileShape { rows: 64, cols: 64 });
        assert_eq!(tile_shape(1 << 20, 8, 4), TileShape { rows: 128, cols: 8 });
        // An invalid width is taken as 1.
        assert_eq!(tile_shape(1000, 1000, 3), T32);
        // Every choice keeps the invariants.
        for vec in [1u8, 2, 4] {
            for rows in [1, 7, 8, 9, 31, 33, 100, 1 << 20] {
                for cols in [1, 8, 17, 64, 65, 1 << 20] {
                    let t = tile_shape(rows, cols, vec);
                    let (r, c) = (usize::from(t.rows), usize::from(t.cols));
                    assert!(r.is_power_of_two() && c.is_power_of_two());
                    assert!((MIN_TILE_EDGE..=MAX_TILE_EDGE).contains(&r));
                    assert!((MIN_TILE_EDGE..=MAX_TILE_EDGE).contains(&c));
                    assert_eq!(t.area() % (BLOCK as usize * usize::from(vec)), 0);
                    assert!(t.area() <= 16 * BLOCK as usize);
                    let w = tiled_v(2, 0, 1, t, vec).work_per_thread();
                    assert_eq!(w as usize * BLOCK as usize, t.area());
                }
            }
        }
    }

    #[test]
    fn several_inputs_tile_over_the_most_common_inner_dim() {
        // Output [4, 32, 64, 128] contiguous; input a contiguous along dim 1, inputs b and c
        // along dim 2, d contiguous like the output.
        let shape = [4, 32, 64, 128];
        let out = Layout::contiguous(&shape).unwrap();
        let a = Layout::contiguous(&[4, 128, 64, 32])
            .unwrap()
            .permute(&[0, 3, 2, 1])
            .unwrap();
        let b = Layout::contiguous(&[4, 32, 128, 64])
            .unwrap()
            .permute(&[0, 1, 3, 2])
            .unwrap();
        let c = collapse([&out, &a, &b, &b]);
        assert_eq!(c.rank(), 4);
        assert_eq!(
            plan_outputs(&c, [4; 4], [0; 4], 1).form,
            tiled(4, 2, 0b110, T32)
        );
        // One each: the first input's dim wins.
        let c = collapse([&out, &a, &b, &out]);
        assert_eq!(
            plan_outputs(&c, [4; 4], [0; 4], 1).form,
            tiled(4, 1, 0b001, T32)
        );
        // Two outputs (a fused kernel): the masks number inputs after the outputs.
        let c = collapse([&out, &out, &a, &b]);
        assert_eq!(
            plan_outputs(&c, [4; 4], [0; 4], 2).form,
            tiled(4, 1, 0b01, T32)
        );
        // An output with no stride-1 dim (every other element): no tiles.
        let out2 = Layout::contiguous(&[4, 32, 64, 256])
            .unwrap()
            .slice(3, 0, 256, 2)
            .unwrap();
        let c = collapse([&out2, &a]);
        assert_eq!(plan(&c, [4; 2], [0; 2]).form, Form::Strided { rank: 4 });
    }

    #[test]
    fn staged_tiles_stay_within_the_shared_memory_budget() {
        // Eight f64 inputs all transposed: 64-byte tiles of 32 x 33 doubles are 8448 bytes,
        // so two fit the 24 KiB budget and the rest read strided.
        let out = Layout::contiguous(&[256, 256]).unwrap();
        let at = Layout::contiguous(&[256, 256]).unwrap().t();
        let ls = [&out, &at, &at, &at, &at, &at, &at, &at, &at];
        let c = collapse(ls);
        let p = plan_outputs(&c, [8; 9], [0; 9], 1);
        assert_eq!(T32.smem_bytes(8, 1), 8448);
        assert_eq!(p.form, tiled(2, 0, 0b0000_0011, T32));
        // f16 tiles of 32 x 33 halves are 2112 bytes: all eight fit. The vector tile, 32
        // columns of 64 + 2 halves (4224 bytes), would stage five only, so the plan keeps
        // one element per access.
        let p = plan_outputs(&c, [2; 9], [0; 9], 1);
        assert_eq!(T32.smem_bytes(2, 1), 2112);
        assert_eq!(TileShape { rows: 64, cols: 32 }.smem_bytes(2, 2), 4224);
        assert_eq!(p.form, tiled(2, 0, 0b1111_1111, T32));
        // Two of them: the vector tiles fit.
        let c = collapse([&out, &at, &at]);
        let t = TileShape { rows: 64, cols: 32 };
        assert_eq!(plan(&c, [2; 3], [0; 3]).form, tiled_v(2, 0, 0b11, t, 2));
        // Inputs past the eighth are never staged (the mask has 8 bits).
        let ls = [&out, &out, &out, &out, &out, &out, &out, &out, &out, &at];
        let c = collapse(ls);
        assert!(!matches!(
            plan_outputs(&c, [1; 10], [0; 10], 1).form,
            Form::Tiled { .. }
        ));
    }

    #[test]
    fn tiled_vectors_need_whole_aligned_words() {
        let t = |vec: u8| tile_shape(256, 512, vec);
        // u8 transpose 256 x 512: 4 elements per access.
        let out = Layout::contiguous(&[256, 512]).unwrap();
        let at = Layout::contiguous(&[512, 256]).unwrap().t();
        let c = collapse([&out, &at]);
        assert_eq!(plan(&c, [1, 1], [0; 2]).form, tiled_v(2, 0, 1, t(4), 4));
        // f16: 2; f32 and f64: 1.
        assert_eq!(plan(&c, [2, 2], [0; 2]).form, tiled_v(2, 0, 1, t(2), 2));
        assert_eq!(plan(&c, [4, 4], [0; 2]).form, tiled(2, 0, 1, T32));
        assert_eq!(plan(&c, [8, 8], [0; 2]).form, tiled(2, 0, 1, T32));
        // A u8 input into an f32 output: the widest element decides.
        assert_eq!(plan(&c, [4, 1], [0; 2]).form, tiled(2, 0, 1, T32));
        // Misaligned bases: the output's or the input's.
        assert_eq!(plan(&c, [1, 1], [2, 0]).form, tiled_v(2, 0, 1, t(2), 2));
        assert_eq!(plan(&c, [1, 1], [0, 1]).form, tiled(2, 0, 1, T32));
        assert_eq!(plan(&c, [2, 2], [0, 2]).form, tiled(2, 0, 1, T32));
        assert_eq!(plan(&c, [2, 2], [4, 0]).form, tiled_v(2, 0, 1, t(2), 2));
        // A flipped staged input reads backwards: no vectors.
        let atf = at.flip(0).unwrap();
        assert_eq!(
            plan(&collapse([&out, &atf]), [1, 1], [0; 2]).form,
            tiled(2, 0, 1, T32)
        );
        // Sizes that are not multiples of the width: the largest width dividing them.
        let out = Layout::contiguous(&[256, 510]).unwrap();
        let at = Layout::contiguous(&[510, 256]).unwrap().t();
        let c = collapse([&out, &at]);
        let t2 = tile_shape(256, 510, 2);
        assert_eq!(plan(&c, [1, 1], [0; 2]).form, tiled_v(2, 0, 1, t2, 2));
        let out = Layout::contiguous(&[255, 512]).unwrap();
        let at = Layout::contiguous(&[512, 255]).unwrap().t();
        let c = collapse([&out, &at]);
        assert!(matches!(
            plan(&c, [1, 1], [0; 2]).form,
            Form::Tiled { vec: 1, .. }
        ));
        // An input slice with an odd row stride (a column window of a wider tensor).
        let wide = Layout::contiguous(&[512, 257])
            .unwrap()
            .slice(1, 0, 256, 1)
            .unwrap()
            .t();
        let out = Layout::contiguous(&[256, 512]).unwrap();
        let c = collapse([&out, &wide]);
        assert!(matches!(
            plan(&c, [1, 1], [0; 2]).form,
            Form::Tiled { vec: 1, .. }
        ));
        // An unstaged input (read along the output's dim) puts no condition on the width.
        let b = Layout::contiguous(&[512, 257])
            .unwrap()
            .slice(1, 1, 257, 1)
            .unwrap();
        let out = Layout::contiguous(&[512, 256]).unwrap();
        let at = Layout::contiguous(&[256, 512]).unwrap().t();
        let c = collapse([&out, &at, &b]);
        let t = tile_shape(512, 256, 4);
        assert_eq!(plan(&c, [1, 1, 1], [0, 0, 3]).form, tiled_v(2, 0, 1, t, 4));
        // The width function on its own: every output counts, only staged inputs do.
        assert_eq!(tiled_vec(&c, [1, 1, 1], [0, 0, 3], 1, 0, 0b01), 4);
        assert_eq!(tiled_vec(&c, [1, 1, 1], [0, 0, 3], 1, 0, 0b11), 1);
        assert_eq!(tiled_vec(&c, [1, 1, 1], [1, 0, 0], 1, 0, 0b01), 1);
        // No such dim: 1.
        assert_eq!(tiled_vec(&c, [1, 1, 1], [0; 3], 1, 1, 0b01), 1);
    }

    #[test]
    fn tiled_ranks_past_the_calculator_are_typed_errors() {
        // The planner never tiles above the calculator's rank.
        let c = unmergeable(CALC_MAX_DIMS + 1);
        assert!(tiled_plan(&c, [4, 4], [0; 2], 1).is_none());
    }

    #[test]
    fn row_broadcast_plans_inner_vectors() {
        let out = Layout::contiguous(&[64, 1024]).unwrap();
        let row = Layout::contiguous(&[1, 1024])
            .unwrap()
            .broadcast_to(&[64, 1024])
            .unwrap();
        let p = plan(&collapse([&out, &out, &row]), [4; 3], [0; 3]);
        assert_eq!(
            p.form,
            Form::StridedVec {
                rank: 2,
                vec: 4,
                bcast: 0
            }
        );
        // A column broadcast: input 1 is constant along the innermost dim.
        let col = Layout::contiguous(&[64, 1])
            .unwrap()
            .broadcast_to(&[64, 1024])
            .unwrap();
        let p = plan(&collapse([&out, &col, &out]), [2; 3], [0; 3]);
        assert_eq!(
            p.form,
            Form::StridedVec {
                rank: 2,
                vec: 8,
                bcast: 0b01
            }
        );
        // A scalar broadcast collapses to rank 1.
        let scalar = Layout::scalar(0)
            .unwrap()
            .broadcast_to(&[64, 1024])
            .unwrap();
        let p = plan(&collapse([&out, &out, &scalar]), [8; 3], [0; 3]);
        assert_eq!(
            p.form,
            Form::StridedVec {
                rank: 1,
                vec: 2,
                bcast: 0b10
            }
        );
        // An odd row length cannot be cut into vectors; a step-2 column neither.
        let odd = Layout::contiguous(&[64, 1023]).unwrap();
        let odd_row = Layout::contiguous(&[1, 1023])
            .unwrap()
            .broadcast_to(&[64, 1023])
            .unwrap();
        let p = plan(&collapse([&odd, &odd, &odd_row]), [4; 3], [0; 3]);
        assert_eq!(p.form, Form::Strided { rank: 2 });
        let wide = Layout::contiguous(&[64, 2048]).unwrap();
        let every_other = wide.slice(1, 0, 2048, 2).unwrap();
        let p = plan(&collapse([&out, &every_other]), [4; 2], [0; 2]);
        assert_eq!(p.form, Form::Strided { rank: 1 });
        // A misaligned row start halves the vector.
        let p = plan(&collapse([&out, &out, &row]), [4; 3], [0, 0, 8]);
        assert_eq!(
            p.form,
            Form::StridedVec {
                rank: 2,
                vec: 2,
                bcast: 0
            }
        );
    }

    #[test]
    fn grid_covers_the_work_up_to_the_device() {
        let f = Form::Contiguous { vec: 1 };
        assert_eq!(grid_size(0, f, IndexWidth::Bits32, 1000), 1);
        assert_eq!(grid_size(1024, f, IndexWidth::Bits32, 1000), 1);
        assert_eq!(grid_size(1025, f, IndexWidth::Bits32, 1000), 2);
        assert_eq!(grid_size(1 << 30, f, IndexWidth::Bits32, 1056), 1056);
        let v = Form::Contiguous { vec: 4 };
        // 4 elements per vector, 2 vectors per thread, 128 threads: 1024 elements per block
        // step.
        assert_eq!(grid_size(1024 * 3, v, IndexWidth::Bits32, 1000), 3);
        assert_eq!(v.block(), VECTOR_BLOCK);
        assert_eq!(v.work_per_thread(), VECTOR_WORK);
        assert_eq!(v.grid_cap(1000), None);
        assert_eq!(f.grid_cap(1000), Some(1000));
        // A huge device cannot push a 32-bit step past 2^31.
        let g = grid_size(usize::MAX / 2, f, IndexWidth::Bits32, u32::MAX);
        assert!(u64::from(g) * u64::from(BLOCK * SCALAR_WORK) <= 1 << 31);
        assert_eq!(
            grid_size(usize::MAX / 2, f, IndexWidth::Bits64, u32::MAX),
            u32::MAX
        );
    }

    #[test]
    fn full_grid_covers_every_vector_once_within_the_32_bit_step() {
        // 2^28 f32 in vectors of 4, 128 threads x 4 vectors: PyTorch's grid.
        let n = 1usize << 28;
        assert_eq!(
            launch_grid(n, 4, 128, 4, IndexWidth::Bits32, None),
            (n / (128 * 16)) as u32
        );
        // One more vector needs one more block; a remainder below a vector needs none.
        assert_eq!(
            launch_grid(n + 4, 4, 128, 4, IndexWidth::Bits32, None),
            (n / (128 * 16)) as u32 + 1
        );
        assert_eq!(
            launch_grid(n + 3, 4, 256, 2, IndexWidth::Bits32, None),
            (n / 2048) as u32
        );
        // Capped: the resident-block count wins.
        assert_eq!(
            launch_grid(n, 4, 128, 4, IndexWidth::Bits32, Some(1056)),
            1056
        );
        // The largest 32-bit launch keeps its step within 2^31.
        let g = launch_grid(i32::MAX as usize, 1, 128, 2, IndexWidth::Bits32, None);
        assert!(u64::from(g) * 256 <= 1 << 31);
        assert!(u64::from(g) * 256 * 2 >= i32::MAX as u64);
        assert_eq!(launch_grid(0, 4, 128, 4, IndexWidth::Bits32, None), 1);
        // 64-bit launches stay within the grid x limit.
        assert_eq!(
            launch_grid(usize::MAX / 2, 1, 128, 2, IndexWidth::Bits64, None),
            i32::MAX as u32
        );
    }
}
