//! Views that pick part of a layout by PyTorch's indexing rules (`x[i]`, `x[-3:]`) and that
//! merge or split dims (`flatten`, `unflatten`). None of them touches memory.

use std::ops::{Bound, RangeBounds};

use super::{normalize_dim, Layout};
use crate::error::LayoutError;

/// `index` (negative counts from the end) resolved against `size`, as PyTorch's `x[i]`.
pub(crate) fn resolve_index(
    op: &'static str,
    index: isize,
    dim: usize,
    size: usize,
) -> Result<usize, LayoutError> {
    let out_of_range = || LayoutError::IndexOutOfRange {
        op,
        index: index as i64,
        dim,
        size,
    };
    let resolved = if index < 0 {
        size.checked_sub(index.unsigned_abs())
    } else {
        Some(index.unsigned_abs())
    };
    resolved.filter(|&i| i < size).ok_or_else(out_of_range)
}

/// A bound of a Python slice (negative counts from the end) moved by `shift` and clamped
/// into `0..=size`; computed in `i128`, so no bound overflows.
fn clamp_bound(bound: isize, shift: i128, size: usize) -> usize {
    let n = size as i128;
    let at = if bound < 0 {
        bound as i128 + n
    } else {
        bound as i128
    };
    (at + shift).clamp(0, n) as usize
}

impl Layout {
    /// The layout of `x[.., index, ..]` at `dim`: that dim removed (PyTorch's `select`;
    /// a negative `index` counts from the end).
    pub fn select(&self, dim: isize, index: isize) -> Result<Layout, LayoutError> {
        let d = normalize_dim("select", dim, self.rank())?;
        let i = resolve_index("select", index, d, self.shape()[d])?;
        let mut out = self.narrow(dim, i, 1)?;
        out.shape.remove(d);
        out.strides.remove(d);
        Ok(out)
    }

    /// PyTorch's and NumPy's `x[.., start:end, ..]` along `dim` with Python's rules: negative
    /// bounds count from the end, bounds past either end are clamped (`x[-100:]` is all of a
    /// short dim) and a range that ends before it starts is empty. `step` is then applied as
    /// in [`Layout::slice`] (a negative step walks the range from its end).
    pub fn slice_range(
        &self,
        dim: isize,
        range: impl RangeBounds<isize>,
        step: isize,
    ) -> Result<Layout, LayoutError> {
        let d = normalize_dim("slice", dim, self.rank())?;
        let size = self.shape()[d];
        let start = match range.start_bound() {
            Bound::Included(&b) => clamp_bound(b, 0, size),
            Bound::Excluded(&b) => clamp_bound(b, 1, size),
            Bound::Unbounded => 0,
        };
        let end = match range.end_bound() {
            Bound::Included(&b) => clamp_bound(b, 1, size),
            Bound::Excluded(&b) => clamp_bound(b, 0, size),
            Bound::Unbounded => size,
        };
        self.slice(dim, start, end.max(start), step)
    }

    /// Dims `start..=end` merged into one (PyTorch's `flatten(start_dim, end_dim)`), as a
    /// view; a rank-0 layout becomes `[1]`. Fails with [`LayoutError::ReshapeNeedsCopy`]
    /// where the strides do not allow a view.
    pub fn flatten(&self, start: isize, end: isize) -> Result<Layout, LayoutError> {
        if self.rank() == 0 {
            return self.reshape(&[1]);
        }
        let s = normalize_dim("flatten", start, self.rank())?;
        let e = normalize_dim("flatten", end, self.rank())?;
        if s > e {
            return Err(LayoutError::DimOrder {
                op: "flatten",
                start: s,
                end: e,
            });
        }
        let shape = self.shape();
        let merged = shape[s..=e].iter().product::<usize>();
        let mut to: Vec<usize> = shape[..s].to_vec();
        to.push(merged);
        to.extend_from_slice(&shape[e + 1..]);
        self.reshape(&to).map_err(|e| rename(e, "flatten"))
    }

    /// Dim `dim` split into `sizes` (PyTorch's `unflatten`), whose product must be its size;
    /// always a view.
    pub fn unflatten(&self, dim: isize, sizes: &[usize]) -> Result<Layout, LayoutError> {
        let d = normalize_dim("unflatten", dim, self.rank())?;
        let shape = self.shape();
        let mut to: Vec<usize> = shape[..d].to_vec();
        to.extend_from_slice(sizes);
        to.extend_from_slice(&shape[d + 1..]);
        let product = sizes.iter().try_fold(1usize, |p, &n| p.checked_mul(n));
        if product != Some(shape[d]) {
            return Err(LayoutError::DimSize {
                op: "unflatten",
                dim: d,
                size: shape[d],
                expected: product.unwrap_or(usize::MAX),
            });
        }
        self.reshape(&to).map_err(|e| rename(e, "unflatten"))
    }
}

/// `e` reported under `op` where it names one.
fn rename(e: LayoutError, op: &'static str) -> LayoutError {
    match e {
        LayoutError::ReshapeNeedsCopy {
            from, strides, to, ..
        } => LayoutError::ReshapeNeedsCopy {
            op,
            from,
            strides,
            to,
        },
        LayoutError::RankTooLarge { rank, max, .. } => LayoutError::RankTooLarge { op, rank, max },
        other => other,
    }
}
