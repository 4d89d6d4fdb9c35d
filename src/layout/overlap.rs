//! Whether a layout may be written: no two indices may reach the same storage element.

use super::Layout;
use crate::error::LayoutError;

impl Layout {
    /// Whether no two elements share a storage index.
    ///
    /// Conservative: dims of size > 1 are ordered by `|stride|` and each stride must step past
    /// everything the inner dims reach. This accepts every layout made from a contiguous one by
    /// views (permute, slice, step, flip, narrow, squeeze) and rejects every broadcast
    /// (stride 0); it may reject exotic interleaved `Layout::new` layouts that happen not to
    /// overlap, which can still be written through a contiguous temporary.
    pub fn is_non_overlapping(&self) -> bool {
        if self.numel() == 0 {
            // No elements, nothing shared (and the strides are arbitrary: invariant 5).
            return true;
        }
        // On the stack: a layout has at most `MAX_DIMS` dims (invariant 1), and this runs for
        // every output of every launch.
        let mut dims = [(0usize, 0usize); super::MAX_DIMS];
        let mut len = 0;
        for (&n, &s) in self.shape().iter().zip(self.strides()) {
            if let (true, Some(slot)) = (n > 1, dims.get_mut(len)) {
                *slot = (s.unsigned_abs(), n);
                len += 1;
            }
        }
        let dims = &mut dims[..len];
        dims.sort_unstable();
        let mut reach = 0usize; // largest offset the inner dims reach from their base
        for &mut (stride, n) in dims {
            if stride <= reach {
                return false;
            }
            // Bounded by invariant 4 of `Layout` (Σ |stride| * (n - 1) <= isize::MAX).
            reach += stride * (n - 1);
        }
        true
    }

    /// `Ok` if the layout may be the output of `op`, else [`LayoutError::OverlappingOutput`].
    pub fn check_writable(&self, op: &'static str) -> Result<(), LayoutError> {
        if self.is_non_overlapping() {
            Ok(())
        } else {
            Err(LayoutError::OverlappingOutput {
                op,
                shape: self.shape().to_vec(),
                strides: self.strides().to_vec(),
            })
        }
    }
}
