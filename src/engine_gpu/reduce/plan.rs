//! Which reduction kernel a launch runs and how it is shaped: pure host logic over a
//! [`ReduceGeometry`], unit-tested without a GPU.
//!
//! - **Form** ([`RedForm`]): the row form when a reduced dim moves fastest in memory (its
//!   stride is at most the innermost kept dim's), so a group of threads reads each output's
//!   elements along a run; the column form when a kept dim moves fastest, so the threads of a
//!   warp read neighbouring outputs' elements at once (coalesced across the kept dim).
//! - **Vectors**: the row form loads 16 bytes at a time along a contiguous run (it peels the
//!   unaligned head itself); the column form loads `ovec` neighbouring outputs at a time when
//!   the innermost kept dim is contiguous and every offset of the launch keeps them aligned,
//!   with `ovec * acc_size * 512 <= 32 KiB` of shared memory.
//! - **Block**: row groups of [`row_group`] threads (a warp for 128 to 511 elements per
//!   output, a whole 512-thread block from 2048), several outputs per block for short rows;
//!   column blocks of up to 32 outputs (times `ovec`) by up to 512 / 32 threads along the
//!   reduction.
//! - **Splits**: when the blocks over the outputs would fill less than a quarter of the
//!   GPU's resident blocks (with 512-thread blocks, fewer blocks than multiprocessors; a
//!   quarter full, each multiprocessor still keeps enough 16-byte loads in flight to stream
//!   at full bandwidth, and a second pass would cost more), each output's elements are cut into `splits` chunks (a 2-D grid), each
//!   at least [`MIN_STEPS`] loads per thread long, and a second column launch folds the
//!   partial accumulators ([`second_pass`]).
//! - **Index width**: 32-bit when every count, partial index, offset and logical index fits
//!   31 bits, else 64-bit.

use crate::layout::reduce::ReduceGeometry;

use crate::engine_gpu::kernel::form::IndexWidth;

/// Most threads per block (the entry points' `__launch_bounds__`, `TS_RED_THREADS`).
pub const MAX_THREADS: u32 = 512;
/// Loads per thread per split, at least, before a reduction is split across blocks.
pub const MIN_STEPS: usize = 8;
/// Bytes of shared memory the column form's accumulators may take per block.
const COLUMN_SMEM: usize = 32 * 1024;
/// Most blocks along a grid's x (the kernels stride over more).
const MAX_GRID_X: usize = i32::MAX as usize;
/// Most blocks along a grid's y (the splits).
const MAX_GRID_Y: usize = 65_535;

/// A kernel form and its compile-time shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RedForm {
    /// `ts_reduce_row`: a group of threads per output. `contig`: the reduced dims are one run
    /// of stride 1, loaded `vec` elements at a time.
    Row {
        /// One contiguous run per output.
        contig: bool,
        /// Elements per vector load (1 unless `contig`).
        vec: u8,
    },
    /// `ts_reduce_col`: a thread per `ovec` outputs. `from_acc`: a second pass over partial
    /// accumulators.
    Col {
        /// Outputs per thread, loaded as one vector.
        ovec: u8,
        /// Reads partial accumulators instead of elements.
        from_acc: bool,
    },
}

/// Grid and block of one launch, and the chunk of reduced elements per split.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchShape {
    /// Threads per block along x and y.
    pub block: (u32, u32),
    /// Blocks along x (outputs) and y (splits).
    pub grid: (u32, u32),
    /// Reduced elements per split (the whole reduction when `grid.1 == 1`).
    pub chunk: usize,
}

impl LaunchShape {
    /// Number of splits (`grid.1`).
    pub fn splits(&self) -> usize {
        self.grid.1 as usize
    }
}

/// The smallest power of two `>= n` (1 for 0), saturating.
fn pow2_at_least(n: usize) -> usize {
    n.checked_next_power_of_two()
        .unwrap_or(1 << (usize::BITS - 1))
}

/// The form for `g` with elements of `in_size` bytes and accumulators of `acc_size` bytes;
/// `in_first` is the byte address of the input's element at `g.input_offset` (for the
/// column form's vector alignment).
pub fn choose_form(g: &ReduceGeometry, in_size: usize, acc_size: usize, in_first: u64) -> RedForm {
    let row = match (g.kept.last(), g.reduced.last()) {
        (None, _) => true,
        (Some(_), None) => false,
        (Some(k), Some(r)) => r.input <= k.input,
    };
    if row {
        let contig = g.reduced.len() == 1 && g.reduced[0].input == 1;
        // The kernel peels the unaligned head of each run assuming elements are naturally
        // aligned (every allocator hands out 256-byte aligned blocks); load one element at a
        // time otherwise.
        let natural = in_first.is_multiple_of(in_size.max(1) as u64);
        let vec = if contig && natural {
            (16 / in_size.max(1)).max(1)
        } else {
            1
        };
        RedForm::Row {
            contig,
            vec: u8::try_from(vec).unwrap_or(1),
        }
    } else {
        RedForm::Col {
            ovec: column_vec(g, in_size, acc_size, in_first),
            from_acc: false,
        }
    }
}

/// The widest `ovec` (a power of two) for which each thread's outputs are one aligned vector
/// at every reduced offset.
fn column_vec(g: &ReduceGeometry, in_size: usize, acc_size: usize, in_first: u64) -> u8 {
    let Some(inner) = g.kept.last() else {
        return 1;
    };
    let by_load = 16 / in_size.max(1);
    let by_smem = COLUMN_SMEM / (MAX_THREADS as usize * acc_size.max(1));
    let mut v = by_load.min(by_smem).max(1);
    if !v.is_power_of_two() {
        v = pow2_at_least(v) / 2;
    }
    if inner.input != 1 {
        return 1;
    }
    while v > 1 {
        let vi = v as isize;
        let aligned = inner.size % v == 0
            && g.kept[..g.kept.len() - 1].iter().all(|d| d.input % vi == 0)
            && g.reduced.iter().all(|d| d.input % vi == 0)
            && in_first.is_multiple_of((v * in_size) as u64);
        if aligned {
            break;
        }
        v /= 2;
    }
    u8::try_from(v).unwrap_or(1)
}

/// Threads per output in the row form: about four vector loads each, from 4 (short rows) to
/// [`MAX_THREADS`] (rows of 2048 vectors and more).
pub fn row_group(red_n: usize, vec: usize) -> u32 {
    let want = pow2_at_least(red_n.div_ceil(vec.max(1) * 4));
    // Clamped to 4..=512: fits u32.
    want.clamp(4, MAX_THREADS as usize) as u32
}

/// The launch shape of `form` over `g`, for a GPU that keeps `resident_threads` threads of this
/// kernel resident at once.
pub fn launch_shape(form: RedForm, g: &ReduceGeometry, resident_threads: usize) -> LaunchShape {
    let num_out = g.num_out.max(1);
    let red_n = g.red_n;
    let (bx, by, units_x, step) = match form {
        RedForm::Row { vec, .. } => {
            let vec = usize::from(vec);
            let bx = row_group(red_n, vec) as usize;
            // Whole warps: the group reduction shuffles with a full mask.
            let by = (MAX_THREADS as usize / bx)
                .min(pow2_at_least(num_out))
                .max(32 / bx);
            // One split's step: every thread of a group loads one vector.
            (bx, by, num_out.div_ceil(by), bx * vec)
        }
        RedForm::Col { ovec, .. } => {
            let ovec = usize::from(ovec).max(1);
            let bx = pow2_at_least(num_out / ovec).min(32);
            let by = pow2_at_least(red_n).min(MAX_THREADS as usize / bx);
            (bx, by, (num_out / ovec).div_ceil(bx), by)
        }
    };
    let blocks_x = units_x.clamp(1, MAX_GRID_X);
    let target = (resident_threads / (bx * by)).max(1);
    let mut splits = 1;
    if blocks_x * 4 <= target && red_n > 0 {
        let by_work = red_n / (step * MIN_STEPS);
        splits = target.div_ceil(blocks_x).min(by_work).clamp(1, MAX_GRID_Y);
    }
    let mut chunk = red_n.div_ceil(splits);
    if let RedForm::Row { vec, .. } = form {
        // Whole vectors per split, so each split's range stays aligned as the whole run is.
        chunk = chunk.next_multiple_of(usize::from(vec).max(1));
    }
    if chunk > 0 {
        splits = red_n.div_ceil(chunk).max(1);
    }
    LaunchShape {
        // bx, by <= 512 and blocks_x <= i32::MAX, splits <= 65535: all fit u32.
        block: (bx as u32, by as u32),
        grid: (blocks_x as u32, splits as u32),
        chunk,
    }
}

/// The launch shape of the second pass over `splits` partial accumulators of `num_out` outputs
/// (a column launch from partials, `ovec` 1, one split).
pub fn second_pass(num_out: usize, splits: usize) -> LaunchShape {
    let bx = pow2_at_least(num_out).min(32);
    let by = pow2_at_least(splits).min(MAX_THREADS as usize / bx);
    LaunchShape {
        block: (bx as u32, by as u32),
        grid: (num_out.div_ceil(bx).clamp(1, MAX_GRID_X) as u32, 1),
        chunk: splits,
    }
}

/// The index width of a launch over `g` with `splits` splits: 32-bit when the output count,
/// the reduced count, the partial index `splits * num_out`, and the input, output and
/// logical extents all fit 31 bits.
pub fn index_width(g: &ReduceGeometry, splits: usize) -> IndexWidth {
    const LIMIT: usize = i32::MAX as usize;
    let partials = splits.saturating_mul(g.num_out);
    let input = g.input_extent();
    let fits = [
        g.num_out,
        g.red_n,
        partials,
        input,
        g.output_extent(),
        g.logical_extent(),
        // The column form's loop bound plus four block strides, and the row form's.
        g.red_n.saturating_add(4 * MAX_THREADS as usize * 16),
    ]
    .iter()
    .all(|&n| n <= LIMIT);
    if fits {
        IndexWidth::Bits32
    } else {
        IndexWidth::Bits64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::Layout;

    fn geom(shape: &[usize], dims: &[usize]) -> ReduceGeometry {
        let input = Layout::contiguous(shape).unwrap();
        let kept: Vec<usize> = (0..shape.len())
            .filter(|d| !dims.contains(d))
            .map(|d| shape[d])
            .collect();
        let out = Layout::contiguous(&kept).unwrap();
        ReduceGeometry::new("t", &input, dims, &out, false, false).unwrap()
    }

    const H100_THREADS: usize = 132 * 2048;

    #[test]
    fn benchmark_cases_take_the_intended_forms() {
        // Full reduction of 2^26 f32: one contiguous run, split across the GPU.
        let g = geom(&[1 << 26], &[0]);
        let f = choose_form(&g, 4, 4, 0);
        assert_eq!(
            f,
            RedForm::Row {
                contig: true,
                vec: 4
            }
        );
        let s = launch_shape(f, &g, H100_THREADS);
        assert_eq!(s.block, (512, 1));
        assert!(s.splits() >= 256, "{s:?}");
        assert_eq!(s.chunk % 4, 0);
        assert!(s.chunk * s.splits() >= 1 << 26);
        // Short rows: groups of 4 threads, whole warps even for 3 outputs.
        let g = geom(&[3, 5], &[1]);
        let s = launch_shape(choose_form(&g, 4, 4, 0), &g, H100_THREADS);
        assert_eq!(s.block, (4, 8));
        // Last axis of [8192, 8192]: a block per row, one pass.
        let g = geom(&[8192, 8192], &[1]);
        let f = choose_form(&g, 4, 4, 0);
        let s = launch_shape(f, &g, H100_THREADS);
        assert_eq!((s.block, s.grid), ((512, 1), (8192, 1)));
        // Middle axis of [256, 1024, 256]: columns of 4 outputs per thread, one pass.
        let g = geom(&[256, 1024, 256], &[1]);
        let f = choose_form(&g, 4, 4, 0);
        assert_eq!(
            f,
            RedForm::Col {
                ovec: 4,
                from_acc: false
            }
        );
        let s = launch_shape(f, &g, H100_THREADS);
        assert_eq!((s.block, s.grid), ((32, 16), (512, 1)));
        // First axis of [8192, 8192]: columns, split to fill the GPU.
        let g = geom(&[8192, 8192], &[0]);
        let f = choose_form(&g, 4, 4, 0);
        let s = launch_shape(f, &g, H100_THREADS);
        assert_eq!(s.block, (32, 16));
        assert!(s.splits() > 1);
        let p = second_pass(8192, s.splits());
        assert_eq!(p.block.0, 32);
    }

    #[test]
    fn splits_cover_the_reduction_exactly() {
        for &n in &[0usize, 1, 5, 100, 4097, 1 << 20, (1 << 20) + 3] {
            let g = geom(&[n], &[0]);
            let f = choose_form(&g, 2, 4, 0);
            let s = launch_shape(f, &g, H100_THREADS);
            let splits = s.splits();
            assert!(splits >= 1);
            if n > 0 {
                // Every split starts inside the reduction and together they cover it.
                assert!(
                    (splits - 1) * s.chunk < n && splits * s.chunk >= n,
                    "{n}: {s:?}"
                );
            } else {
                assert_eq!(splits, 1);
            }
        }
    }

    #[test]
    fn column_vectors_need_alignment_everywhere() {
        let g = geom(&[64, 12], &[0]);
        assert_eq!(
            choose_form(&g, 4, 4, 0),
            RedForm::Col {
                ovec: 4,
                from_acc: false
            }
        );
        // A misaligned start, or a row length not a multiple of the vector, narrows it.
        assert_eq!(
            choose_form(&g, 4, 4, 8),
            RedForm::Col {
                ovec: 2,
                from_acc: false
            }
        );
        let g = geom(&[64, 6], &[0]);
        assert_eq!(
            choose_form(&g, 4, 4, 0),
            RedForm::Col {
                ovec: 2,
                from_acc: false
            }
        );
        // Wide accumulators narrow it to fit shared memory.
        let g = geom(&[64, 64], &[0]);
        assert_eq!(
            choose_form(&g, 1, 16, 0),
            RedForm::Col {
                ovec: 4,
                from_acc: false
            }
        );
        assert_eq!(
            choose_form(&g, 2, 4, 0),
            RedForm::Col {
                ovec: 8,
                from_acc: false
            }
        );
    }

    #[test]
    fn large_counts_take_64_bit_indices() {
        let g = geom(&[3, 5], &[1]);
        assert_eq!(index_width(&g, 1), IndexWidth::Bits32);
        let g = geom(&[1 << 31], &[0]);
        assert_eq!(index_width(&g, 1), IndexWidth::Bits64);
    }
}
