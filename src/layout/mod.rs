//! Strided layouts: how a tensor's shape maps onto a flat run of storage elements.
//!
//! A [`Layout`] is pure index math: shape, strides (in elements, possibly negative or zero)
//! and a start offset. Views ([`Layout::permute`], [`Layout::narrow`], [`Layout::flip`],
//! [`Layout::broadcast_to`], [`Layout::reshape`], ...) return new layouts and never touch
//! memory. [`mod@broadcast`] computes NumPy broadcast shapes, [`mod@collapse`] merges and reorders dims
//! for iteration (shared by the CPU and GPU engines), [`overlap`] decides whether a layout may
//! be written.

pub mod broadcast;
pub mod collapse;
pub mod overlap;
mod view;

pub use broadcast::broadcast_shapes;
pub use collapse::{collapse, CollapsedLayout};

use crate::error::LayoutError;

/// The most dims a layout may have (Caffe's `kMaxBlobAxes`).
pub const MAX_DIMS: usize = 32;

/// Shape, strides and offset of a strided view into flat storage.
///
/// Invariants, upheld by every constructor and view method:
/// 1. `shape.len() == strides.len() <= MAX_DIMS`.
/// 2. The element count (the product of `shape`) fits in `usize`; a zero-size dim makes it 0.
/// 3. When the count is non-zero, every reachable offset `offset + Σ idx[i] * strides[i]`
///    (with `0 <= idx[i] < shape[i]`) lies in `0..=isize::MAX`, and is computed without
///    overflow: in particular the lowest one ([`Layout::offset_range`]) is non-negative.
///    Whether it fits a particular storage is checked by [`Layout::check_within`].
/// 4. Strides are arbitrary: negative (flipped views), zero (broadcast views, whose elements
///    alias each other and so may not be written, see [`overlap`]) or positive.
///    The stride of a size-1 dim has no effect on any offset.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Layout {
    shape: Vec<usize>,
    strides: Vec<isize>,
    offset: usize,
}

impl Layout {
    /// A row-major (C-order) contiguous layout at offset 0.
    pub fn contiguous(shape: &[usize]) -> Result<Self, LayoutError> {
        check_rank("contiguous", shape.len())?;
        checked_numel("contiguous", shape)?;
        Ok(Layout {
            shape: shape.to_vec(),
            strides: contiguous_strides(shape),
            offset: 0,
        })
    }

    /// A layout with the given strides and offset, checked against the invariants.
    pub fn new(shape: &[usize], strides: &[isize], offset: usize) -> Result<Self, LayoutError> {
        check_rank("Layout::new", shape.len())?;
        if shape.len() != strides.len() {
            return Err(LayoutError::ShapeMismatch {
                op: "Layout::new (strides)",
                expected: shape.to_vec(),
                got: strides.iter().map(|s| s.unsigned_abs()).collect(),
            });
        }
        let layout = Layout {
            shape: shape.to_vec(),
            strides: strides.to_vec(),
            offset,
        };
        layout.checked_offset_range("Layout::new")?;
        Ok(layout)
    }

    /// A rank-0 layout holding one element at `offset`.
    pub fn scalar(offset: usize) -> Self {
        Layout {
            shape: Vec::new(),
            strides: Vec::new(),
            offset,
        }
    }

    /// Size of each dim.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// Step between neighbours along each dim, in elements.
    pub fn strides(&self) -> &[isize] {
        &self.strides
    }

    /// Storage index of the element at all-zero indices.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// Number of dims.
    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// Number of elements (cannot overflow: invariant 2).
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    /// Whether the layout is row-major contiguous (from any offset). Size-1 dims' strides are
    /// ignored, as in PyTorch.
    pub fn is_contiguous(&self) -> bool {
        let mut expected = 1isize;
        for (&n, &s) in self.shape.iter().zip(&self.strides).rev() {
            if n == 0 {
                return true;
            }
            if n != 1 {
                if s != expected {
                    return false;
                }
                expected *= n as isize;
            }
        }
        true
    }

    /// The lowest and highest storage index the layout reaches, or `None` when it holds no
    /// elements.
    pub fn offset_range(&self) -> Option<(usize, usize)> {
        // Invariant 3 guarantees this succeeds.
        self.checked_offset_range("offset_range").ok().flatten()
    }

    /// Checks that every element lies inside a storage of `storage_len` elements.
    pub fn check_within(&self, op: &'static str, storage_len: usize) -> Result<(), LayoutError> {
        match self.offset_range() {
            Some((_, hi)) if hi >= storage_len => Err(self.out_of_storage(op, storage_len)),
            _ => Ok(()),
        }
    }

    /// Storage index of the element at `index` (one entry per dim), or an error naming the
    /// first index out of range.
    pub fn index_to_offset(&self, index: &[usize]) -> Result<usize, LayoutError> {
        if index.len() != self.rank() {
            return Err(LayoutError::ShapeMismatch {
                op: "index",
                expected: self.shape.clone(),
                got: index.to_vec(),
            });
        }
        let mut off = self.offset as isize;
        for (dim, ((&i, &n), &s)) in index.iter().zip(&self.shape).zip(&self.strides).enumerate() {
            if i >= n {
                return Err(LayoutError::RangeOutOfBounds {
                    op: "index",
                    dim,
                    start: i,
                    end: i + 1,
                    step: 1,
                    size: n,
                });
            }
            // In range by invariant 3.
            off += i as isize * s;
        }
        Ok(off as usize)
    }

    /// Returns `(min, max)` reachable offsets, or `None` for an empty layout, with every step
    /// checked for overflow.
    fn checked_offset_range(
        &self,
        op: &'static str,
    ) -> Result<Option<(usize, usize)>, LayoutError> {
        let numel = checked_numel(op, &self.shape)?;
        if numel == 0 {
            return Ok(None);
        }
        let overflow = || LayoutError::SizeOverflow {
            op,
            shape: self.shape.clone(),
            what: "offset",
        };
        let base = isize::try_from(self.offset).map_err(|_| overflow())?;
        let (mut lo, mut hi) = (base, base);
        for (&n, &s) in self.shape.iter().zip(&self.strides) {
            let span = isize::try_from(n - 1)
                .ok()
                .and_then(|m| m.checked_mul(s))
                .ok_or_else(overflow)?;
            if span < 0 {
                lo = lo.checked_add(span).ok_or_else(overflow)?;
            } else {
                hi = hi.checked_add(span).ok_or_else(overflow)?;
            }
        }
        if lo < 0 {
            return Err(LayoutError::OutOfStorage {
                op,
                shape: self.shape.clone(),
                strides: self.strides.clone(),
                offset: self.offset,
                storage_len: 0,
            });
        }
        Ok(Some((lo as usize, hi as usize)))
    }

    fn out_of_storage(&self, op: &'static str, storage_len: usize) -> LayoutError {
        LayoutError::OutOfStorage {
            op,
            shape: self.shape.clone(),
            strides: self.strides.clone(),
            offset: self.offset,
            storage_len,
        }
    }
}

/// Row-major strides for `shape` (assumes the element count fits, as checked by callers).
pub fn contiguous_strides(shape: &[usize]) -> Vec<isize> {
    let mut strides = vec![0isize; shape.len()];
    let mut acc = 1isize;
    for (s, &n) in strides.iter_mut().zip(shape).rev() {
        *s = acc;
        acc = acc.wrapping_mul(n.max(1) as isize);
    }
    strides
}

/// The element count of `shape`, or an overflow error. Counts must also fit in `isize` so
/// that every offset is representable.
pub fn checked_numel(op: &'static str, shape: &[usize]) -> Result<usize, LayoutError> {
    if shape.contains(&0) {
        return Ok(0);
    }
    shape
        .iter()
        .try_fold(1usize, |acc, &n| acc.checked_mul(n))
        .filter(|&n| n <= isize::MAX as usize)
        .ok_or_else(|| LayoutError::SizeOverflow {
            op,
            shape: shape.to_vec(),
            what: "element count",
        })
}

/// The byte size of `shape` with `elem_size`-byte elements, or an overflow error.
pub fn checked_bytes(
    op: &'static str,
    shape: &[usize],
    elem_size: usize,
) -> Result<usize, LayoutError> {
    checked_numel(op, shape)?
        .checked_mul(elem_size)
        .filter(|&b| b <= isize::MAX as usize)
        .ok_or_else(|| LayoutError::SizeOverflow {
            op,
            shape: shape.to_vec(),
            what: "byte size",
        })
}

pub(crate) fn check_rank(op: &'static str, rank: usize) -> Result<(), LayoutError> {
    if rank > MAX_DIMS {
        return Err(LayoutError::RankTooLarge {
            op,
            rank,
            max: MAX_DIMS,
        });
    }
    Ok(())
}

/// Resolves a possibly negative dim index (`-1` is the last dim) against `rank`.
pub fn normalize_dim(op: &'static str, dim: isize, rank: usize) -> Result<usize, LayoutError> {
    let resolved = if dim < 0 { dim + rank as isize } else { dim };
    if resolved < 0 || resolved as usize >= rank {
        return Err(LayoutError::DimOutOfRange { op, dim, rank });
    }
    Ok(resolved as usize)
}
