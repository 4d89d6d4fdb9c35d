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
