//! The tiled form's planning: which dim the shared-memory tiles cover, which inputs go
//! through them, the tile's shape and the access width ([`super::plan`] has the overall rule,
//! [`super::form::Form::Tiled`] the form).

use crate::engine_gpu::offset_calculator::MAX_DIMS as CALC_MAX_DIMS;
use crate::layout::CollapsedLayout;

use super::form::{TileShape, BLOCK, MAX_TILE_EDGE, MIN_TILE_EDGE, TILED_SMEM_BUDGET};

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
