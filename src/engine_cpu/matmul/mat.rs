//! [`Mat`]: where one matrix of a batch sits in its storage (a leaf, imported by every path).

/// One matrix of a batch in its storage: the index of element `[0, 0]` and the two strides.
/// Element `[i, j]` is at `off + i·rs + j·cs`, inside the storage for `i < rows`, `j < cols`
/// (the view's layout invariant), so the index arithmetic never leaves `isize`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Mat {
    pub(crate) off: isize,
    pub(crate) rs: isize,
    pub(crate) cs: isize,
}

impl Mat {
    /// The storage index of `[i, j]`; in bounds for `i < rows`, `j < cols` (see [`Mat`]).
    #[inline(always)]
    pub(crate) fn at(&self, i: usize, j: usize) -> usize {
        (self.off + i as isize * self.rs + j as isize * self.cs) as usize
    }
}

impl Mat {
    /// A row-major `[rows, cols]` matrix at the start of its buffer (a packed panel).
    pub(crate) fn row_major(cols: usize) -> Mat {
        Mat {
            off: 0,
            rs: cols as isize,
            cs: 1,
        }
    }

    /// Rows `rows` of this `[.., cols]` matrix of `data`, each element mapped by `f`, as a
    /// row-major buffer (a packed panel; `f` widens halves to `f32`).
    pub(crate) fn pack<T: Copy, U>(
        &self,
        data: &[T],
        rows: std::ops::Range<usize>,
        cols: usize,
        f: impl Fn(T) -> U,
    ) -> crate::error::Result<Vec<U>> {
        let mut out = crate::host_vec::vec_with_capacity(rows.len() * cols)?;
        for i in rows {
            out.extend((0..cols).map(|j| f(data[self.at(i, j)])));
        }
        Ok(out)
    }
}

/// One product's operands as the host engine sees them: `a` (`m × k`) and `b` (`k × n`)
/// over their storage slices, and where the destination `c` (`m × n`) sits in its own.
#[derive(Clone, Copy)]
pub(crate) struct Product<'d, T> {
    pub(crate) a_data: &'d [T],
    pub(crate) a: Mat,
    pub(crate) b_data: &'d [T],
    pub(crate) b: Mat,
    pub(crate) c: Mat,
    pub(crate) m: usize,
    pub(crate) k: usize,
    pub(crate) n: usize,
}
