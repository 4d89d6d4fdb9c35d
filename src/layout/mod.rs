//! Strided layouts: how a tensor's shape maps onto a flat run of storage elements.
//!
//! A [`Layout`] is pure index math: shape, strides (in elements, possibly negative or zero)
//! and a start offset. Views ([`Layout::permute`], [`Layout::narrow`], [`Layout::flip`],
//! [`Layout::broadcast_to`], [`Layout::reshape`], ...) return new layouts and never touch
//! memory. [`mod@broadcast`] computes NumPy broadcast shapes, [`mod@collapse`] merges and reorders dims
//! for iteration (shared by the CPU and GPU engines), [`overlap`] decides whether a layout may
//! be written, [`mod@reduce`] maps a reduction's input elements to its outputs.

pub mod broadcast;
pub mod collapse;
mod dims;
pub mod overlap;
pub mod reduce;
mod select;
mod view;

pub use broadcast::broadcast_shapes;
pub use collapse::{collapse, CollapsedLayout};
pub use dims::{Dims, INLINE_DIMS};

use crate::error::LayoutError;

/// The most dims a layout may have (Caffe's `kMaxBlobAxes`).
pub const MAX_DIMS: usize = 32;

/// Shape, strides and offset of a strided view into flat storage.
///
/// Invariants, upheld by every constructor and view method (each returns a typed
/// [`LayoutError`] rather than break one, and none panics or overflows, in debug builds
/// either):
/// 1. `shape.len() == strides.len() <= MAX_DIMS`.
/// 2. The product of the non-zero sizes of `shape` is at most `isize::MAX` (ndarray's rule).
///    So the element count (the product of `shape`, 0 when a size is 0) fits in `usize` and
///    in `isize`, and so does the element count of any sub-shape.
/// 3. `offset <= isize::MAX`, whether or not the layout holds elements.
/// 4. When the count is non-zero, every reachable offset `offset + Σ idx[i] * strides[i]`
///    (with `0 <= idx[i] < shape[i]`) lies in `0..=isize::MAX`, and every partial sum of it is
///    computed without overflow: the lowest one ([`Layout::offset_range`]) is non-negative, and
///    `Σ |strides[i]| * (shape[i] - 1) <= isize::MAX`. Whether the offsets fit a particular
///    storage is checked by [`Layout::check_within`].
/// 5. Strides are otherwise arbitrary: negative (flipped views), zero (broadcast views, whose
///    elements alias each other and so may not be written, see [`overlap`]) or positive, up
///    to `isize::MIN` and `isize::MAX`. The stride of a size-1 dim has no effect on any
///    offset, and neither do the strides of an empty layout (count 0): code must not multiply
///    such strides by a size without checking.
///
/// Byte sizes are not part of the layout: [`checked_bytes`] checks that a shape's elements
/// of a given size fit `isize::MAX` bytes where a buffer is allocated.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Layout {
    shape: Dims<usize>,
    strides: Dims<isize>,
    offset: usize,
}

impl Layout {
    /// A row-major (C-order) contiguous layout at offset 0.
    pub fn contiguous(shape: &[usize]) -> Result<Self, LayoutError> {
        check_rank("contiguous", shape.len())?;
        checked_numel("contiguous", shape)?;
        Ok(Layout {
            shape: shape.into(),
            strides: contiguous_dims(shape),
            offset: 0,
        })
    }

    /// A layout with the given strides and offset, checked against the invariants.
    ///
    /// # Errors
    /// [`LayoutError::RankTooLarge`], [`LayoutError::StrideCount`] (not one stride per dim),
    /// [`LayoutError::SizeOverflow`] (element count), [`LayoutError::OffsetOverflow`] (an
    /// offset past `isize::MAX`) or [`LayoutError::BelowStorageStart`] (a negative offset).
    pub fn new(shape: &[usize], strides: &[isize], offset: usize) -> Result<Self, LayoutError> {
        Self::checked("Layout::new", shape, strides, offset)
    }

    /// A rank-0 layout holding one element at `offset`.
    ///
    /// # Errors
    /// [`LayoutError::OffsetOverflow`] when `offset > isize::MAX` (invariant 3).
    pub fn scalar(offset: usize) -> Result<Self, LayoutError> {
        Self::checked("Layout::scalar", &[], &[], offset)
    }

    /// The rank-0 layout at offset 0 (always valid).
    pub(crate) fn contiguous_scalar() -> Self {
        Layout {
            shape: Dims::new(),
            strides: Dims::new(),
            offset: 0,
        }
    }

    /// `Layout::new` naming `op` in its errors.
    pub(crate) fn checked(
        op: &'static str,
        shape: &[usize],
        strides: &[isize],
        offset: usize,
    ) -> Result<Self, LayoutError> {
        check_rank(op, shape.len())?;
        if shape.len() != strides.len() {
            return Err(LayoutError::StrideCount {
                op,
                shape: shape.to_vec(),
                strides: strides.to_vec(),
                rank: shape.len(),
                got: strides.len(),
            });
        }
        let layout = Layout {
            shape: shape.into(),
            strides: strides.into(),
            offset,
        };
        layout.checked_offset_range(op)?;
        Ok(layout)
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

    /// The storage range of a row-major contiguous layout, `None` for any other (empty for
    /// an empty layout, whose offset need not lie within the storage).
    pub fn contiguous_range(&self) -> Option<std::ops::Range<usize>> {
        if self.numel() == 0 {
            return Some(0..0);
        }
        self.is_contiguous()
            .then(|| self.offset()..self.offset() + self.numel())
    }

    /// Whether the layout is row-major contiguous (from any offset). Size-1 dims' strides are
    /// ignored, as in PyTorch.
    pub fn is_contiguous(&self) -> bool {
        if self.shape.contains(&0) {
            return true;
        }
        // Products of sizes stay within the element count (invariant 2).
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
        // Invariants 2 to 4 guarantee this succeeds.
        self.checked_offset_range("offset_range").ok().flatten()
    }

    /// Checks that every element lies inside a storage of `storage_len` elements.
    ///
    /// A layout that breaks an invariant (impossible through this API) is reported as the
    /// error that invariant's check gives, never taken as empty.
    pub fn check_within(&self, op: &'static str, storage_len: usize) -> Result<(), LayoutError> {
        match self.checked_offset_range(op)? {
            Some((_, hi)) if hi >= storage_len => Err(self.out_of_storage(op, storage_len)),
            _ => Ok(()),
        }
    }

    /// Storage index of the element at `index` (one entry per dim), or an error naming the
    /// first index out of range.
    pub fn index_to_offset(&self, index: &[usize]) -> Result<usize, LayoutError> {
        if index.len() != self.rank() {
            return Err(LayoutError::IndexLength {
                op: "index",
                shape: self.shape.to_vec(),
                rank: self.rank(),
                got: index.len(),
            });
        }
        let mut off = self.offset as isize;
        for (dim, ((&i, &n), &s)) in index.iter().zip(&self.shape).zip(&self.strides).enumerate() {
            if i >= n {
                return Err(LayoutError::IndexOutOfBounds {
                    op: "index",
                    dim,
                    index: i,
                    size: n,
                });
            }
            // In range by invariant 4 (every partial sum of a reachable offset fits).
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
        let overflow = || LayoutError::OffsetOverflow {
            op,
            shape: self.shape.to_vec(),
            strides: self.strides.to_vec(),
            offset: self.offset,
        };
        let base = isize::try_from(self.offset).map_err(|_| overflow())?;
        if numel == 0 {
            return Ok(None);
        }
        // `lo` and `hi` start at `base >= 0` and move apart, so `hi - lo` bounds
        // `Σ |stride| * (n - 1)` and every partial sum of a reachable offset lies in `lo..=hi`.
        let (mut lo, mut hi) = (base, base);
        for (&n, &s) in self.shape.iter().zip(&self.strides) {
            // n >= 1 here (numel != 0); n - 1 <= isize::MAX by invariant 2.
            let span = isize::try_from(n - 1)
                .ok()
                .and_then(|m| m.checked_mul(s))
                .ok_or_else(overflow)?;
            if span < 0 {
                match lo.checked_add(span) {
                    Some(v) => lo = v,
                    None => return Err(self.below_start(op, None)),
                }
            } else {
                hi = hi.checked_add(span).ok_or_else(overflow)?;
            }
        }
        if lo < 0 {
            return Err(self.below_start(op, Some(lo)));
        }
        Ok(Some((lo as usize, hi as usize)))
    }

    fn below_start(&self, op: &'static str, lowest: Option<isize>) -> LayoutError {
        LayoutError::BelowStorageStart {
            op,
            shape: self.shape.to_vec(),
            strides: self.strides.to_vec(),
            offset: self.offset,
            lowest: lowest.unwrap_or(isize::MIN),
        }
    }

    fn out_of_storage(&self, op: &'static str, storage_len: usize) -> LayoutError {
        LayoutError::OutOfStorage {
            op,
            shape: self.shape.to_vec(),
            strides: self.strides.to_vec(),
            offset: self.offset,
            storage_len,
        }
    }
}

/// Row-major strides for `shape`. Exact when the product of its non-zero sizes fits
/// `isize` (invariant 2 of [`Layout`], checked by [`checked_numel`]); wraps, without
/// panicking, for shapes that break it.
pub fn contiguous_strides(shape: &[usize]) -> Vec<isize> {
    contiguous_dims(shape).to_vec()
}

/// [`contiguous_strides`] as [`Dims`] (no heap allocation up to its inline rank).
fn contiguous_dims(shape: &[usize]) -> Dims<isize> {
    let mut strides: Dims<isize> = shape.iter().map(|_| 0).collect();
    let mut acc = 1isize;
    for (s, &n) in strides.iter_mut().zip(shape).rev() {
        *s = acc;
        acc = acc.wrapping_mul(n.max(1) as isize);
    }
    strides
}

/// The element count of `shape` (0 when a size is 0), or [`LayoutError::SizeOverflow`] when
/// the product of its non-zero sizes exceeds `isize::MAX` (invariant 2 of [`Layout`]; a shape
/// with a 0 is checked too, so that every sub-shape's count and every contiguous stride of an
/// empty layout is representable).
pub fn checked_numel(op: &'static str, shape: &[usize]) -> Result<usize, LayoutError> {
    let product = shape
        .iter()
        .filter(|&&n| n != 0)
        .try_fold(1usize, |acc, &n| acc.checked_mul(n))
        .filter(|&n| n <= isize::MAX as usize)
        .ok_or_else(|| LayoutError::SizeOverflow {
            op,
            shape: shape.to_vec(),
            what: if shape.contains(&0) {
                // The count is 0: say what is wrong instead.
                "empty, but its other sizes multiply past isize::MAX, which its strides must fit"
            } else {
                "element count past isize::MAX"
            },
        })?;
    Ok(if shape.contains(&0) { 0 } else { product })
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
            what: "byte size past isize::MAX",
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
    let resolved = if dim < 0 {
        // `rank + dim` for a negative `dim`, without leaving `usize` or `isize`.
        rank.checked_sub(dim.unsigned_abs())
    } else {
        Some(dim.unsigned_abs())
    };
    match resolved {
        Some(d) if d < rank => Ok(d),
        _ => Err(LayoutError::DimOutOfRange { op, dim, rank }),
    }
}
