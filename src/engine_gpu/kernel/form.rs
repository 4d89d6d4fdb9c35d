//! The shape of a pointwise launch, shared by every Apply kernel (eager and fused): the
//! kernel [`Form`], the [`IndexWidth`], the [`TileShape`] of the tiled form, the launch-shape
//! constants and [`launch_grid`]. What each form is for and when the planner picks it is in
//! [`super::plan`].

use std::fmt;

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
/// Vectors each thread of a contiguous pointwise kernel of two or more inputs handles per
/// step where a vector holds 16 elements (the widest operand is 1 byte; the pointwise
/// `KernelSpec::work_per_thread` applies it). Measured on an H200 in the all-ops benchmark
/// (2^26 elements, against PyTorch): `i8` add 0.89x with 2 vectors a thread and 1.07x with
/// 1, `u8` eq 0.91x and 1.09x, `where` on `i8` 0.74x and 1.05x (unpacking 16 narrow
/// elements of several inputs is ALU work, which more threads hide better); but a copy, a
/// fill or a one-input op of `u8` about 10 % slower with 1, so those keep [`VECTOR_WORK`].
pub const NARROW_VECTOR_WORK: u32 = 1;
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

    /// Bits of the index type (the compile key's `index_bits`).
    pub fn bits(self) -> u32 {
        match self {
            IndexWidth::Bits32 => 32,
            IndexWidth::Bits64 => 64,
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
        /// [`tiled_vec`](super::tiled::tiled_vec)): a staged input is read `vec` rows at a time and the outputs are
        /// written `vec` columns at a time, one aligned vector each.
        vec: u8,
        /// Bit `k` set: input `k`, not staged, is read `vec` columns at a time as one
        /// aligned vector ([`tiled_direct_vec`](super::tiled::tiled_direct_vec)); the other unstaged inputs one element per
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

    /// Elements per vector access (the compile key's `vector_width`): 1 for the strided
    /// form.
    pub fn vector_width(self) -> u32 {
        match self {
            Form::Contiguous { vec } | Form::StridedVec { vec, .. } | Form::Tiled { vec, .. } => {
                u32::from(vec)
            }
            Form::Strided { .. } => 1,
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
