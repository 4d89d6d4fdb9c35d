//! The launch planner (`kernel::plan`, `kernel::tiled`, `kernel::form`): forms, index and
//! vector widths, tiles and grids over collapsed layouts, on any host.

use crate::engine_gpu::kernel::form::{
    grid_size, launch_grid, Form, IndexWidth, TileShape, BLOCK, MAX_TILE_EDGE, MIN_TILE_EDGE,
    SCALAR_WORK, VECTOR_BLOCK, VECTOR_WORK,
};
use crate::engine_gpu::kernel::plan::{plan, plan_checked, plan_outputs, vector_width};
use crate::engine_gpu::kernel::tiled::{tile_shape, tiled_direct_vec, tiled_plan, tiled_vec};
use crate::engine_gpu::offset_calculator::MAX_DIMS as CALC_MAX_DIMS;
use crate::error::LayoutError;
use crate::layout::{collapse, CollapsedLayout, Layout};

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
    let strides = [&c.strides[0][..], &c.strides[1][..]];
    assert!(
        crate::engine_gpu::offset_calculator::OffsetCalculator::<u32, 2>::new(&c.shape, strides)
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
    assert_eq!(c.shape[..], [8, 96, 64]);
    assert_eq!(plan(&c, [4, 4], [0; 2]).form, tiled(3, 1, 1, T32));
    // NCHW -> NHWC: (N, C, H, W) -> (N, H, W, C); H and W merge; the input's fastest
    // dim (HW) is collapsed dim 1, the output's (C) dim 2.
    let c = permuted(&[4, 64, 32, 32], &[0, 2, 3, 1]);
    assert_eq!(c.shape[..], [4, 1024, 64]);
    assert_eq!(plan(&c, [4, 4], [0; 2]).form, tiled(3, 1, 1, T32));
    // NHWC -> NCHW.
    let c = permuted(&[4, 32, 32, 64], &[0, 3, 1, 2]);
    assert_eq!(c.shape[..], [4, 64, 1024]);
    assert_eq!(plan(&c, [4, 4], [0; 2]).form, tiled(3, 1, 1, T32));
    // Attention head split to keys transposed: [B, S, H, D] -> [B, H, D, S]; H and D
    // merge (the input's fastest dim), S is the output's.
    let c = permuted(&[2, 128, 8, 64], &[0, 2, 3, 1]);
    assert_eq!(c.shape[..], [2, 512, 128]);
    let t = TileShape { rows: 64, cols: 32 };
    assert_eq!(plan(&c, [2, 2], [0; 2]).form, tiled_v(3, 1, 1, t, 2));
    // Rank 4 after the collapse: [A, B, C, D] -> [B, A, D, C].
    let c = permuted(&[16, 8, 32, 64], &[1, 0, 3, 2]);
    assert_eq!(c.shape[..], [8, 16, 64, 32]);
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
    // 16 one-byte elements per vector: the form keeps two vectors a thread (4096 elements
    // per block step); the pointwise spec of two or more inputs takes one (below).
    let narrow = Form::Contiguous { vec: 16 };
    assert_eq!(narrow.work_per_thread(), VECTOR_WORK);
    assert_eq!(grid_size(4096 * 5, narrow, IndexWidth::Bits32, 1000), 5);
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
