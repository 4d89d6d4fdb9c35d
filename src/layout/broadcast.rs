//! NumPy broadcasting of shapes.

use super::{check_rank, checked_numel};
use crate::error::LayoutError;

/// The shape `a` and `b` broadcast to under NumPy's rules: dims are matched from the right,
/// equal sizes match, a size-1 dim stretches to the other's size, and missing dims count as 1.
///
/// ```
/// use typestate_tensor::layout::broadcast_shapes;
/// assert_eq!(broadcast_shapes("add", &[4, 1, 3], &[5, 1]).unwrap(), vec![4, 5, 3]);
/// assert!(broadcast_shapes("add", &[2, 3], &[4]).is_err());
/// ```
pub fn broadcast_shapes(
    op: &'static str,
    a: &[usize],
    b: &[usize],
) -> Result<Vec<usize>, LayoutError> {
    let rank = a.len().max(b.len());
    check_rank(op, rank)?;
    let dim = |s: &[usize], i: usize| {
        // i counts from the right.
        if i < s.len() {
            s[s.len() - 1 - i]
        } else {
            1
        }
    };
    let mut out = vec![0usize; rank];
    for i in 0..rank {
        let (x, y) = (dim(a, i), dim(b, i));
        out[rank - 1 - i] = if x == y || y == 1 {
            x
        } else if x == 1 {
            y
        } else {
            return Err(LayoutError::BroadcastMismatch {
                op,
                lhs: a.to_vec(),
                rhs: b.to_vec(),
            });
        };
    }
    checked_numel(op, &out)?;
    Ok(out)
}

/// Broadcasts any number of shapes together (left to right), naming `op` in errors.
pub fn broadcast_all(op: &'static str, shapes: &[&[usize]]) -> Result<Vec<usize>, LayoutError> {
    shapes
        .iter()
        .try_fold(Vec::new(), |acc, s| broadcast_shapes(op, &acc, s))
}
