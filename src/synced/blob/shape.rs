//! [`BlobShape`]: Caffe's blob shape arithmetic (`count`, axis indices, legacy N/C/H/W
//! accessors, offsets), with errors where Caffe `CHECK`s.

use crate::error::LayoutError;
use crate::layout::{checked_numel, normalize_dim, MAX_DIMS};
use crate::tensor::Dim;

/// Axes a legacy (N, C, H, W) accessor can address.
const LEGACY_AXES: usize = 4;

/// The shape of a blob: up to [`MAX_DIMS`] (Caffe's `kMaxBlobAxes`, 32) axis sizes and their
/// element count.
///
/// Invariants:
/// 1. `dims.len() <= MAX_DIMS`.
/// 2. `count` is the product of `dims` (1 for no axes: a scalar) and fits in `isize`, except
///    for [`BlobShape::empty`] (no axes, count 0: Caffe's default-constructed blob).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BlobShape {
    // A boxed slice keeps blobs small: every transition moves the blob by value.
    dims: Box<[usize]>,
    count: usize,
}

impl Default for BlobShape {
    fn default() -> Self {
        Self::empty()
    }
}

impl BlobShape {
    /// A shape with the given axis sizes (Caffe `Reshape(vector<int>)`).
    pub fn new(dims: &[usize]) -> Result<Self, LayoutError> {
        const OP: &str = "BlobShape::new";
        if dims.len() > MAX_DIMS {
            return Err(LayoutError::RankTooLarge {
                op: OP,
                rank: dims.len(),
                max: MAX_DIMS,
            });
        }
        Ok(BlobShape {
            dims: dims.into(),
            count: checked_numel(OP, dims)?,
        })
    }

    /// The 4-axis shape `num x channels x height x width` (Caffe's legacy constructor).
    pub fn legacy(
        num: usize,
        channels: usize,
        height: usize,
        width: usize,
    ) -> Result<Self, LayoutError> {
        Self::new(&[num, channels, height, width])
    }

    /// No axes and no elements: Caffe's default-constructed `Blob()` (reshaping to `[]`
    /// gives a scalar instead, with count 1).
    pub fn empty() -> Self {
        BlobShape {
            dims: Box::new([]),
            count: 0,
        }
    }

    /// The axis sizes.
    pub fn dims(&self) -> &[usize] {
        &self.dims
    }

    /// Number of axes.
    pub fn num_axes(&self) -> usize {
        self.dims.len()
    }

    /// Number of elements.
    pub fn count(&self) -> usize {
        self.count
    }

    /// The product of the sizes of axes `start..end` (Caffe `count(start, end)`); 1 for an
    /// empty range.
    pub fn count_range(&self, start: usize, end: usize) -> Result<usize, LayoutError> {
        if start > end || end > self.num_axes() {
            return Err(LayoutError::RangeOutOfBounds {
                op: "BlobShape::count_range",
                dim: 0,
                start,
                end,
                step: 1,
                size: self.num_axes(),
            });
        }
        // A sub-product of a checked product (or of the empty shape's no axes) fits.
        Ok(self.dims[start..end].iter().product())
    }

    /// The product of the sizes of axes `start..` (Caffe `count(start)`).
    pub fn count_from(&self, start: usize) -> Result<usize, LayoutError> {
        self.count_range(start, self.num_axes())
    }

    /// Resolves a possibly negative axis index (`-1` is the last axis) in
    /// `-num_axes..num_axes` (Caffe `CanonicalAxisIndex`). Any integer type ([`Dim`]).
    pub fn canonical_axis_index(&self, axis: impl Dim) -> Result<usize, LayoutError> {
        normalize_dim(
            "BlobShape::canonical_axis_index",
            axis.to_isize(),
            self.num_axes(),
        )
    }

    /// The size of `axis`, which may be negative (Caffe `shape(index)`).
    pub fn dim(&self, axis: impl Dim) -> Result<usize, LayoutError> {
        Ok(self.dims[self.canonical_axis_index(axis)?])
    }

    /// Caffe `LegacyShape(index)`: the size of `index` in `-4..4` for blobs of at most 4 axes,
    /// and 1 for an index past the blob's axes (so a 2-axis blob reads as `N x C x 1 x 1`).
    pub fn legacy_shape(&self, index: impl Dim) -> Result<usize, LayoutError> {
        const OP: &str = "BlobShape::legacy_shape";
        let index = index.to_isize();
        if self.num_axes() > LEGACY_AXES {
            return Err(LayoutError::RankTooLarge {
                op: OP,
                rank: self.num_axes(),
                max: LEGACY_AXES,
            });
        }
        // Validates `index` against the 4 legacy axes whatever the blob's rank.
        normalize_dim(OP, index, LEGACY_AXES)?;
        let rank = self.num_axes() as isize; // at most 4
        if index >= rank || index < -rank {
            return Ok(1);
        }
        self.dim(index)
    }

    /// Legacy axis 0 (Caffe `num()`).
    pub fn num(&self) -> Result<usize, LayoutError> {
        self.legacy_shape(0)
    }

    /// Legacy axis 1 (Caffe `channels()`).
    pub fn channels(&self) -> Result<usize, LayoutError> {
        self.legacy_shape(1)
    }

    /// Legacy axis 2 (Caffe `height()`).
    pub fn height(&self) -> Result<usize, LayoutError> {
        self.legacy_shape(2)
    }

    /// Legacy axis 3 (Caffe `width()`).
    pub fn width(&self) -> Result<usize, LayoutError> {
        self.legacy_shape(3)
    }

    /// Caffe `offset(n, c, h, w)`: `((n * C + c) * H + h) * W + w` over the legacy axes.
    /// As in Caffe, each index may equal its axis size (one past the end), so the offset of
    /// the end of a range can be computed.
    pub fn offset(&self, n: usize, c: usize, h: usize, w: usize) -> Result<usize, LayoutError> {
        let sizes = [self.num()?, self.channels()?, self.height()?, self.width()?];
        let mut offset = 0usize;
        for (axis, (&i, &size)) in [n, c, h, w].iter().zip(&sizes).enumerate() {
            if i > size {
                return Err(LayoutError::IndexOutOfBounds {
                    op: "BlobShape::offset",
                    dim: axis,
                    index: i,
                    size,
                });
            }
            offset = offset
                .checked_mul(size)
                .and_then(|o| o.checked_add(i))
                .ok_or_else(|| LayoutError::SizeOverflow {
                    op: "BlobShape::offset",
                    shape: sizes.to_vec(),
                    what: "offset",
                })?;
        }
        Ok(offset)
    }

    /// Caffe `offset(vector<int> indices)`: the row-major offset of the leading `indices`
    /// (fewer than the axes is allowed; the rest count as 0). Each index must be below its
    /// axis size.
    pub fn offset_of(&self, indices: &[usize]) -> Result<usize, LayoutError> {
        const OP: &str = "BlobShape::offset_of";
        if indices.len() > self.num_axes() {
            return Err(LayoutError::IndexLength {
                op: OP,
                shape: self.dims.to_vec(),
                rank: self.num_axes(),
                got: indices.len(),
            });
        }
        let mut offset = 0;
        for (axis, &size) in self.dims.iter().enumerate() {
            // No overflow: the result is below `count`, which fits.
            offset *= size;
            if let Some(&i) = indices.get(axis) {
                if i >= size {
                    return Err(LayoutError::IndexOutOfBounds {
                        op: OP,
                        dim: axis,
                        index: i,
                        size,
                    });
                }
                offset += i;
            }
        }
        Ok(offset)
    }

    /// Caffe `ShapeEquals(BlobProto)` for a proto with legacy `num/channels/height/width`:
    /// legacy parameter blobs are indexed from the end, so a `3 x 2` blob equals `1 x 1 x 3 x 2`.
    pub fn shape_equals_legacy(
        &self,
        num: usize,
        channels: usize,
        height: usize,
        width: usize,
    ) -> bool {
        self.num_axes() <= LEGACY_AXES
            && [(-4, num), (-3, channels), (-2, height), (-1, width)]
                .iter()
                .all(|&(axis, size)| self.legacy_shape(axis) == Ok(size))
    }
}

/// Caffe's `shape_string()`: the sizes then the count, e.g. `2 3 4 5 (120)`.
impl std::fmt::Display for BlobShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for d in &self.dims {
            write!(f, "{d} ")?;
        }
        write!(f, "({})", self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_accessors_pad_with_ones() {
        let s = BlobShape::new(&[3, 2]).unwrap();
        assert_eq!(
            [s.num(), s.channels(), s.height(), s.width()],
            [Ok(3), Ok(2), Ok(1), Ok(1)]
        );
        assert_eq!(s.legacy_shape(-1), Ok(2));
        assert_eq!(s.legacy_shape(-3), Ok(1));
        assert!(s.legacy_shape(4).is_err());
        assert!(s.legacy_shape(-5).is_err());
        let five = BlobShape::new(&[1, 2, 3, 4, 5]).unwrap();
        assert!(matches!(
            five.num(),
            Err(LayoutError::RankTooLarge { max: 4, .. })
        ));
    }

    #[test]
    fn offsets_match_row_major_order() {
        let s = BlobShape::legacy(2, 3, 4, 5).unwrap();
        let mut expected = 0;
        for n in 0..2 {
            for c in 0..3 {
                for h in 0..4 {
                    for w in 0..5 {
                        assert_eq!(s.offset(n, c, h, w), Ok(expected));
                        assert_eq!(s.offset_of(&[n, c, h, w]), Ok(expected));
                        expected += 1;
                    }
                }
            }
        }
        assert_eq!(
            s.offset(2, 0, 0, 0),
            Ok(120),
            "one past the end, as in Caffe"
        );
        assert!(s.offset(3, 0, 0, 0).is_err());
        assert!(s.offset_of(&[2]).is_err());
        assert_eq!(s.offset_of(&[1, 2]), Ok(60 + 2 * 20));
        assert!(s.offset_of(&[0, 0, 0, 0, 0]).is_err());
    }

    #[test]
    fn counts_and_axes() {
        let s = BlobShape::new(&[2, 3, 4, 5]).unwrap();
        assert_eq!(s.count(), 120);
        assert_eq!(s.count_range(1, 3), Ok(12));
        assert_eq!(s.count_range(2, 2), Ok(1));
        assert_eq!(s.count_from(2), Ok(20));
        assert!(s.count_range(3, 2).is_err());
        assert!(s.count_range(0, 5).is_err());
        assert_eq!(s.canonical_axis_index(-1), Ok(3));
        assert_eq!(s.canonical_axis_index(-4), Ok(0));
        assert!(s.canonical_axis_index(-5).is_err());
        assert!(s.canonical_axis_index(4).is_err());
        assert_eq!(s.dim(-2), Ok(4));
        assert_eq!(s.to_string(), "2 3 4 5 (120)");
        assert_eq!(BlobShape::new(&[]).unwrap().count(), 1, "a scalar");
        assert_eq!(BlobShape::empty().count(), 0);
        assert!(BlobShape::new(&[1; 33]).is_err());
        assert!(BlobShape::new(&[usize::MAX, 2]).is_err());
    }
}
