//! How a strided view maps onto cuBLASLt's column-major matrices (host math only).
//!
//! Row-major `C[m, n] = A[m, k]·B[k, n]` is computed as column-major `Cᵀ = Bᵀ·Aᵀ`: cuBLASLt's
//! operand A is our `b`, its operand B our `a`, its D our destination, each seen as the
//! column-major transpose of the row-major matrix. A matrix `[r, c]` with strides `(sr, sc)`
//! goes to cuBLASLt as it is when one of its two dims has a unit stride:
//! - `sc == 1`: column-major `c x r` with `ld = sr` (no transpose flag);
//! - `sr == 1`: column-major `r x c` with `ld = sc` (the transpose flag).
//!
//! cuBLAS requires `ld >= max(1, rows)`, so a size-1 dim's stride (which addresses nothing) is
//! replaced by the smallest legal one. Anything else (negative or zero strides inside a
//! matrix, two non-unit strides, overlapping rows) is copied first.
//!
//! Batch dims: size-1 dims are dropped, and the innermost ones whose strides nest (each outer
//! stride is the inner stride times the inner count, on all three views, zero strides
//! included) become one strided batch; the remaining outer dims are looped over, one call each.

/// A matrix as cuBLASLt stores it: `rows x cols`, column-major, leading dimension `ld`;
/// `trans` when the call must transpose it to get the logical (transposed row-major) matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stored {
    pub trans: bool,
    pub rows: u64,
    pub cols: u64,
    pub ld: i64,
}

/// The row-major matrix `[r, c]` with strides `(sr, sc)` as a column-major matrix of
/// cuBLASLt: `Some` with `trans == false` for `c x r` (`ld` from `sr`), or `trans == true` for
/// `r x c` (`ld` from `sc`); `None` when it needs a copy. `r` and `c` are at least 1.
pub(crate) fn stored(r: usize, c: usize, sr: isize, sc: isize) -> Option<Stored> {
    let (r64, c64) = (r as u64, c as u64);
    if c == 1 || sc == 1 {
        let ld = if r == 1 { c as i64 } else { sr as i64 };
        if ld >= c as i64 && ld > 0 {
            return Some(Stored {
                trans: false,
                rows: c64,
                cols: r64,
                ld,
            });
        }
    }
    if r == 1 || sr == 1 {
        let ld = if c == 1 { r as i64 } else { sc as i64 };
        if ld >= r as i64 && ld > 0 {
            return Some(Stored {
                trans: true,
                rows: r64,
                cols: c64,
                ld,
            });
        }
    }
    None
}

/// The batch dims of one call, split into a strided batch for cuBLASLt and outer dims to loop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Batches {
    /// Matrices per call.
    pub count: usize,
    /// The batch stride (elements) of `a`, `b` and the destination.
    pub strides: [isize; 3],
    /// Outer dims looped over: size and the stride of each view.
    pub outer: Vec<(usize, [isize; 3])>,
}

impl Batches {
    /// The number of calls (the product of the outer sizes).
    pub fn calls(&self) -> usize {
        self.outer.iter().map(|(n, _)| *n).product()
    }

    /// The element offsets (added to each view's base) of call `i < calls()`.
    pub fn offsets(&self, mut i: usize) -> [isize; 3] {
        let mut off = [0isize; 3];
        for (size, strides) in self.outer.iter().rev() {
            let at = (i % size) as isize;
            i /= size;
            for (o, s) in off.iter_mut().zip(strides) {
                *o += at * s;
            }
        }
        off
    }
}

/// Splits the batch dims `sizes` (with the three views' `strides`, each `sizes.len()` long)
/// into one strided batch and outer loops. Negative batch strides are looped, never batched.
pub(crate) fn batches(sizes: &[usize], strides: [&[isize]; 3]) -> Batches {
    let dims: Vec<(usize, [isize; 3])> = sizes
        .iter()
        .enumerate()
        .filter(|(_, &n)| n != 1)
        .map(|(i, &n)| (n, [strides[0][i], strides[1][i], strides[2][i]]))
        .collect();
    let mut count = 1usize;
    let mut inner = [0isize; 3];
    let mut split = dims.len();
    for (j, (n, s)) in dims.iter().enumerate().rev() {
        if s.iter().any(|&x| x < 0) {
            break;
        }
        let nests = split == dims.len()
            || (0..3).all(|v| {
                (count as isize)
                    .checked_mul(inner[v])
                    .is_some_and(|x| x == s[v])
            });
        if !nests || count.checked_mul(*n).is_none_or(|c| c > i32::MAX as usize) {
            break;
        }
        if split == dims.len() {
            inner = *s;
        }
        count *= n;
        split = j;
    }
    Batches {
        count,
        strides: inner,
        outer: dims[..split].to_vec(),
    }
}

/// The largest power of two up to 256 dividing every value (a byte address, byte strides).
pub(crate) fn alignment(values: impl IntoIterator<Item = u64>) -> u32 {
    let mut align = 256u64;
    for v in values {
        while align > 1 && v % align != 0 {
            align /= 2;
        }
    }
    align as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_major_column_major_and_size_one_dims() {
        // Contiguous [3, 4]: column-major 4 x 3, ld 4.
        let s = stored(3, 4, 4, 1).unwrap();
        assert_eq!((s.trans, s.rows, s.cols, s.ld), (false, 4, 3, 4));
        // Its transpose view [4, 3] strides (1, 4): stored 4 x 3 with the flag.
        let s = stored(4, 3, 1, 4).unwrap();
        assert_eq!((s.trans, s.rows, s.cols, s.ld), (true, 4, 3, 4));
        // A stepped row stride (every other row): ld 8 >= 4.
        assert_eq!(stored(3, 4, 8, 1).unwrap().ld, 8);
        // One row: any row stride, ld = cols.
        assert_eq!(stored(1, 4, 0, 1).unwrap().ld, 4);
        // One column, rows stride 5: c == 1 takes the first form with ld 5.
        let s = stored(3, 1, 5, 7).unwrap();
        assert_eq!((s.trans, s.rows, s.cols, s.ld), (false, 1, 3, 5));
        // [1, 1]: always expressible.
        assert!(stored(1, 1, 0, 0).is_some());
    }

    #[test]
    fn layouts_that_copy() {
        assert!(stored(3, 4, 8, 2).is_none()); // two non-unit strides
        assert!(stored(3, 4, -4, 1).is_none()); // flipped rows
        assert!(stored(3, 4, 0, 1).is_none()); // broadcast rows
        assert!(stored(3, 4, 1, 1).is_none()); // overlapping
        assert!(stored(3, 4, 4, -1).is_none()); // flipped columns
        assert!(stored(4, 3, 1, 2).is_none()); // ld 2 < rows 4
    }

    #[test]
    fn batch_dims_nest_or_loop() {
        // [2, 3] batches, contiguous 12-element matrices, b broadcast (stride 0).
        let b = batches(&[2, 3], [&[36, 12], &[0, 0], &[30, 10]]);
        assert_eq!(b.count, 6);
        assert_eq!(b.strides, [12, 0, 10]);
        assert!(b.outer.is_empty());
        // b broadcast only over the outer dim: the outer dim is looped.
        let b = batches(&[2, 3], [&[36, 12], &[0, 20], &[30, 10]]);
        assert_eq!((b.count, b.strides, b.calls()), (3, [12, 20, 10], 2));
        assert_eq!(b.offsets(1), [36, 0, 30]);
        // Size-1 dims vanish; a negative stride is looped.
        let b = batches(&[1, 4, 1], [&[9, -12, 5], &[0, 7, 0], &[0, 3, 0]]);
        assert_eq!((b.count, b.calls()), (1, 4));
        assert_eq!(b.offsets(3), [-36, 21, 9]);
        let b = batches(&[], [&[], &[], &[]]);
        assert_eq!((b.count, b.calls()), (1, 1));
    }

    #[test]
    fn alignments() {
        assert_eq!(alignment([512, 1024]), 256);
        assert_eq!(alignment([0x1000 + 6]), 2);
        assert_eq!(alignment([256, 4 * 3]), 4);
        assert_eq!(alignment([]), 256);
    }
}
