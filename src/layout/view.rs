//! View methods: new layouts over the same storage. None of them touches memory.

use super::{check_rank, checked_numel, contiguous_strides, normalize_dim, Dims, Layout};
use crate::error::LayoutError;

impl Layout {
    /// Reorders dims: dim `i` of the result is dim `perm[i]` of `self`.
    pub fn permute(&self, perm: &[usize]) -> Result<Layout, LayoutError> {
        let rank = self.rank();
        let mut seen = [false; super::MAX_DIMS];
        let valid = perm.len() == rank
            && perm
                .iter()
                .all(|&p| p < rank && !std::mem::replace(&mut seen[p], true));
        if !valid {
            return Err(LayoutError::InvalidPermutation {
                op: "permute",
                perm: perm.to_vec(),
                rank,
            });
        }
        Ok(Layout {
            shape: perm.iter().map(|&p| self.shape[p]).collect(),
            strides: perm.iter().map(|&p| self.strides[p]).collect(),
            offset: self.offset,
        })
    }

    /// Swaps two dims (negative dims count from the end).
    pub fn transpose(&self, dim0: isize, dim1: isize) -> Result<Layout, LayoutError> {
        let a = normalize_dim("transpose", dim0, self.rank())?;
        let b = normalize_dim("transpose", dim1, self.rank())?;
        let mut out = self.clone();
        out.shape.swap(a, b);
        out.strides.swap(a, b);
        Ok(out)
    }

    /// Reverses all dims (NumPy's `.T`; for a matrix, the transpose).
    pub fn t(&self) -> Layout {
        Layout {
            shape: self.shape.iter().rev().copied().collect(),
            strides: self.strides.iter().rev().copied().collect(),
            offset: self.offset,
        }
    }

    /// Keeps `len` elements of `dim` starting at `start`.
    pub fn narrow(&self, dim: isize, start: usize, len: usize) -> Result<Layout, LayoutError> {
        self.slice(dim, start, start.saturating_add(len), 1)
            .map_err(|e| rename_op(e, "narrow"))
    }

    /// NumPy's `a[.., start:end:step, ..]` along `dim` with `0 <= start <= end <= size` and
    /// `step != 0`. A positive step takes `start, start + step, ...` below `end`; a negative
    /// step walks down from `end - 1` by `|step|` while at or above `start`.
    pub fn slice(
        &self,
        dim: isize,
        start: usize,
        end: usize,
        step: isize,
    ) -> Result<Layout, LayoutError> {
        let d = normalize_dim("slice", dim, self.rank())?;
        let size = self.shape[d];
        if step == 0 || start > end || end > size {
            return Err(LayoutError::RangeOutOfBounds {
                op: "slice",
                dim: d,
                start,
                end,
                step,
                size,
            });
        }
        let len = end - start;
        let abs_step = step.unsigned_abs();
        let count = len.div_ceil(abs_step);
        let mut out = self.clone();
        out.shape[d] = count;
        if out.shape.contains(&0) {
            // No elements: the offset and strides have no effect (invariant 5); keep them.
            return Ok(out);
        }
        let stride = self.strides[d];
        let first = if step > 0 { start } else { end - 1 };
        // The layout is non-empty and `first < size`, so this offset is one the original
        // layout reaches: no overflow (invariant 4).
        out.offset = (self.offset as isize + first as isize * stride) as usize;
        out.strides[d] = if count > 1 {
            // |step * stride| * (count - 1) <= |stride| * (size - 1), bounded by invariant 4.
            stride * step
        } else {
            // One element: the stride has no effect, and `stride * step` may not fit.
            stride
        };
        Ok(out)
    }

    /// Reverses the order of elements along `dim` (a negative stride).
    pub fn flip(&self, dim: isize) -> Result<Layout, LayoutError> {
        let d = normalize_dim("flip", dim, self.rank())?;
        let size = self.shape[d];
        self.slice(dim, 0, size, -1)
            .map_err(|e| rename_op(e, "flip"))
            .map(|mut l| {
                if size == 0 {
                    // No elements: any stride is valid, and `-isize::MIN` does not fit.
                    l.strides[d] = l.strides[d].wrapping_neg();
                }
                l
            })
    }

    /// Inserts a size-1 dim at position `dim` (`0..=rank`; negative counts from the end, so
    /// `-1` appends).
    pub fn unsqueeze(&self, dim: isize) -> Result<Layout, LayoutError> {
        check_rank("unsqueeze", self.rank() + 1)?;
        let d = normalize_dim("unsqueeze", dim, self.rank() + 1)?;
        let mut out = self.clone();
        // The stride of a size-1 dim is free; choose the contiguous one so `is_contiguous`
        // and dim collapsing see through it.
        // The product overflows only when it has no effect (an empty layout's strides are
        // arbitrary), so fall back to 1 then.
        let stride = if d < self.rank() {
            isize::try_from(self.shape[d])
                .ok()
                .and_then(|n| self.strides[d].checked_mul(n))
                .unwrap_or(1)
        } else {
            1
        };
        out.shape.insert(d, 1);
        out.strides.insert(d, stride);
        Ok(out)
    }

    /// Removes `dim`, which must have size 1.
    pub fn squeeze(&self, dim: isize) -> Result<Layout, LayoutError> {
        let d = normalize_dim("squeeze", dim, self.rank())?;
        if self.shape[d] != 1 {
            return Err(LayoutError::DimSize {
                op: "squeeze",
                dim: d,
                size: self.shape[d],
                expected: 1,
            });
        }
        let mut out = self.clone();
        out.shape.remove(d);
        out.strides.remove(d);
        Ok(out)
    }

    /// Removes every size-1 dim.
    pub fn squeeze_all(&self) -> Layout {
        let kept = || {
            self.shape
                .iter()
                .zip(&self.strides)
                .filter(|(&n, _)| n != 1)
        };
        Layout {
            shape: kept().map(|(&n, _)| n).collect(),
            strides: kept().map(|(_, &s)| s).collect(),
            offset: self.offset,
        }
    }

    /// A view with `shape` under NumPy broadcasting: dims are matched from the right, a size-1
    /// dim is repeated (stride 0), and missing leading dims are added with stride 0. The
    /// result's elements alias each other and cannot be written.
    pub fn broadcast_to(&self, shape: &[usize]) -> Result<Layout, LayoutError> {
        check_rank("broadcast_to", shape.len())?;
        checked_numel("broadcast_to", shape)?;
        let mismatch = || LayoutError::BroadcastMismatch {
            op: "broadcast_to",
            lhs: self.shape.to_vec(),
            rhs: shape.to_vec(),
        };
        if shape.len() < self.rank() {
            return Err(mismatch());
        }
        let lead = shape.len() - self.rank();
        // Inline up to 8 dims (`Dims`): broadcasting an operand allocates nothing.
        let mut strides: Dims<isize> = shape.iter().map(|_| 0).collect();
        for (i, (&n, &s)) in self.shape.iter().zip(&self.strides).enumerate() {
            let target = shape[lead + i];
            strides[lead + i] = if n == target {
                s
            } else if n == 1 {
                0
            } else {
                return Err(mismatch());
            };
        }
        Ok(Layout {
            shape: shape.into(),
            strides,
            offset: self.offset,
        })
    }

    /// Alias of [`Layout::broadcast_to`] under PyTorch's name.
    pub fn expand(&self, shape: &[usize]) -> Result<Layout, LayoutError> {
        self.broadcast_to(shape)
    }

    /// The same elements in row-major order under a new shape, as a view. Fails with
    /// [`LayoutError::ReshapeNeedsCopy`] when the strides do not allow it (e.g. a transposed
    /// matrix flattened); copy the tensor first in that case.
    pub fn reshape(&self, shape: &[usize]) -> Result<Layout, LayoutError> {
        check_rank("reshape", shape.len())?;
        let to_numel = checked_numel("reshape", shape)?;
        let from_numel = self.numel();
        if to_numel != from_numel {
            return Err(LayoutError::ReshapeNumel {
                op: "reshape",
                from: self.shape.to_vec(),
                from_numel,
                to: shape.to_vec(),
                to_numel,
            });
        }
        let strides = if from_numel == 0 || self.rank() == 0 {
            Some(contiguous_strides(shape))
        } else {
            view_strides(&self.shape, &self.strides, shape)
        };
        match strides {
            Some(strides) => Ok(Layout {
                shape: shape.into(),
                strides: strides.into(),
                offset: self.offset,
            }),
            None => Err(LayoutError::ReshapeNeedsCopy {
                op: "reshape",
                from: self.shape.to_vec(),
                strides: self.strides.to_vec(),
                to: shape.to_vec(),
            }),
        }
    }
}

/// PyTorch's `computeStride`: strides that let `new_shape` view the same elements in
/// row-major order, or `None` if none exist. Walks the old dims from the innermost, grouping
/// runs that are contiguous with each other ("chunks"), and requires each chunk to be covered
/// exactly by a run of new dims.
fn view_strides(
    old_shape: &[usize],
    old_strides: &[isize],
    new_shape: &[usize],
) -> Option<Vec<isize>> {
    let mut new_strides = vec![0isize; new_shape.len()];
    let mut view_d = new_shape.len() as isize - 1;
    let mut chunk_base_stride = *old_strides.last()?;
    // Precondition (from `reshape`): both shapes have the same non-zero element count, so
    // every product of sizes below fits `isize` (Layout invariant 2). Products with strides
    // are checked: one that overflows cannot equal a stride of a valid layout.
    let mul = |numel: usize, stride: isize| isize::try_from(numel).ok()?.checked_mul(stride);
    let mut tensor_numel = 1usize;
    let mut view_numel = 1usize;
    for tensor_d in (0..old_shape.len()).rev() {
        tensor_numel *= old_shape[tensor_d];
        let chunk_ends = tensor_d == 0
            || (old_shape[tensor_d - 1] != 1
                && Some(old_strides[tensor_d - 1]) != mul(tensor_numel, chunk_base_stride));
        if chunk_ends {
            while view_d >= 0 && (view_numel < tensor_numel || new_shape[view_d as usize] == 1) {
                // For a dim of size > 1, `view_numel < tensor_numel`, so the stride times
                // (size - 1) stays within the chunk's span (invariant 4); a size-1 dim's
                // stride is free, so 0 stands in if the product overflows.
                new_strides[view_d as usize] = mul(view_numel, chunk_base_stride).unwrap_or(0);
                view_numel *= new_shape[view_d as usize];
                view_d -= 1;
            }
            if view_numel != tensor_numel {
                return None;
            }
            if tensor_d > 0 {
                chunk_base_stride = old_strides[tensor_d - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    (view_d == -1).then_some(new_strides)
}

fn rename_op(e: LayoutError, op: &'static str) -> LayoutError {
    match e {
        LayoutError::RangeOutOfBounds {
            dim,
            start,
            end,
            step,
            size,
            ..
        } => LayoutError::RangeOutOfBounds {
            op,
            dim,
            start,
            end,
            step,
            size,
        },
        LayoutError::DimOutOfRange { dim, rank, .. } => {
            LayoutError::DimOutOfRange { op, dim, rank }
        }
        other => other,
    }
}
