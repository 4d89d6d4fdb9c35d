//! Dimension reordering and merging for iteration, shared by the CPU and GPU engines.
//!
//! THC's `collapseDims` and PyTorch's `TensorIterator::coalesce_dimensions`: an op over N
//! operands of one shape visits the same (output, input...) element tuples whatever order it
//! walks the dims in, so the engines (1) drop size-1 dims, (2) flip dims the output walks
//! backwards, (3) order dims so the output's strides decrease (its innermost dim is the
//! fastest-moving one in memory), and (4) merge neighbouring dims that are contiguous with
//! each other in every operand. A contiguous op becomes one dim of stride 1 in every operand;
//! a transposed input keeps two dims.

use super::{Dims, Layout, MAX_DIMS};

/// Operand layouts after [`collapse`]: one shared shape, per-operand strides and offsets.
///
/// Invariants: `shape` has at least one dim (rank-0 ops become shape `[1]`); no dim has size 1
/// unless it is the only one; the element tuples visited in row-major order over `shape` are
/// the tuples of the original layouts, in some order.
///
/// Shape and strides are [`Dims`] (inline up to [`super::INLINE_DIMS`] dims), so a collapse
/// allocates nothing for ordinary ranks: the CPU engine collapses on every fused evaluation,
/// which must stay allocation-free when repeated (`tests/fused_alloc.rs`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CollapsedLayout<const N: usize> {
    /// The iteration shape, outermost first.
    pub shape: Dims<usize>,
    /// Strides of each operand over `shape`.
    pub strides: [Dims<isize>; N],
    /// Storage offset of each operand's first element.
    pub offsets: [usize; N],
}

impl<const N: usize> CollapsedLayout<N> {
    /// Number of elements visited.
    pub fn numel(&self) -> usize {
        // Fits for a collapse of valid layouts; saturates for hand-built ones (the fields are
        // public) rather than overflow.
        self.shape
            .iter()
            .try_fold(1usize, |acc, &n| acc.checked_mul(n))
            .unwrap_or(if self.shape.contains(&0) {
                0
            } else {
                usize::MAX
            })
    }

    /// Number of dims.
    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// Whether every operand is one contiguous run (rank 1, stride 1): the engines' fast path.
    pub fn is_contiguous(&self) -> bool {
        self.shape.len() == 1 && self.strides.iter().all(|s| s[0] == 1)
    }

    /// The largest offset any operand reaches, relative to its own base, in elements (for
    /// choosing 32- or 64-bit index math).
    pub fn max_extent(&self) -> usize {
        self.strides
            .iter()
            .map(|st| {
                // Bounded by Layout invariant 4 for a collapse of valid layouts; saturates
                // for hand-built ones.
                st.iter()
                    .zip(&self.shape)
                    .map(|(&s, &n)| s.unsigned_abs().saturating_mul(n.saturating_sub(1)))
                    .fold(0usize, usize::saturating_add)
            })
            .max()
            .unwrap_or(0)
    }
}

/// Reorders and merges the dims of `layouts` (all of one shape; `layouts[0]` is the output,
/// whose memory order decides the iteration order) for iteration. See the module docs.
///
/// Precondition: every layout has the same shape (broadcasting is done by the caller with
/// [`Layout::broadcast_to`]).
pub fn collapse<const N: usize>(layouts: [&Layout; N]) -> CollapsedLayout<N> {
    let shape0 = layouts[0].shape();
    debug_assert!(layouts.iter().all(|l| l.shape() == shape0));
    let mut offsets: [isize; N] = std::array::from_fn(|k| layouts[k].offset() as isize);
    // (size, strides) of each dim that has size != 1, in a fixed array (rank <= MAX_DIMS,
    // Layout invariant 1): no allocation.
    let mut dims = [(0usize, [0isize; N]); MAX_DIMS];
    let mut len = 0;
    for (d, &n) in shape0.iter().enumerate() {
        if n == 0 {
            return CollapsedLayout {
                shape: Dims::from_slice(&[0]),
                strides: std::array::from_fn(|_| Dims::from_slice(&[1])),
                offsets: std::array::from_fn(|k| layouts[k].offset()),
            };
        }
        if n == 1 {
            continue;
        }
        let mut strides: [isize; N] = std::array::from_fn(|k| layouts[k].strides()[d]);
        if strides[0] < 0 {
            // Walk this dim from its other end in every operand: same tuples, and the output
            // now moves forward. `(n - 1) * s` is a reachable offset delta (Layout invariant 3).
            for k in 0..N {
                offsets[k] += (n as isize - 1) * strides[k];
                strides[k] = -strides[k];
            }
        }
        dims[len] = (n, strides);
        len += 1;
    }
    let dims = &mut dims[..len];
    // Insertion sort, outer dims first: PyTorch's `reorder_dimensions` comparator (first
    // operand whose strides differ decides; a zero stride is ambiguous and defers).
    for i in 1..dims.len() {
        let mut j = i;
        while j > 0 && inner_should_be_outer(&dims[j - 1].1, &dims[j].1) {
            dims.swap(j - 1, j);
            j -= 1;
        }
    }
    // Merge (outer, inner) neighbours that are contiguous with each other in every operand,
    // in place: `dims[..merged]` are the merged dims so far.
    let mut merged = 0usize;
    for i in 0..dims.len() {
        let (n, strides) = dims[i];
        if let Some((pn, ps)) = merged.checked_sub(1).map(|m| &mut dims[m]) {
            // `strides[k] * n` may overflow where `strides[k] * (n - 1)` does not; an
            // overflowing product equals no valid stride, so those dims do not merge.
            let n_i = n as isize; // n <= numel <= isize::MAX (Layout invariant 2)
            if (0..N).all(|k| strides[k].checked_mul(n_i) == Some(ps[k])) {
                *pn *= n;
                *ps = strides;
                continue;
            }
        }
        dims[merged] = (n, strides);
        merged += 1;
    }
    let merged: &[(usize, [isize; N])] = if merged == 0 {
        &[(1, [1; N])]
    } else {
        &dims[..merged]
    };
    CollapsedLayout {
        shape: merged.iter().map(|(n, _)| *n).collect(),
        strides: std::array::from_fn(|k| merged.iter().map(|(_, s)| s[k]).collect()),
        offsets: offsets.map(|o| o as usize),
    }
}

/// Whether `inner` (currently after `outer`) should move before it.
fn inner_should_be_outer<const N: usize>(outer: &[isize; N], inner: &[isize; N]) -> bool {
    for k in 0..N {
        let (o, i) = (outer[k].unsigned_abs(), inner[k].unsigned_abs());
        if o == 0 || i == 0 || o == i {
            continue;
        }
        return o < i;
    }
    false
}
