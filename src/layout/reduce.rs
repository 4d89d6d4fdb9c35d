//! The index math of a reduction, shared by the CPU and GPU engines: which input elements
//! fold into which output element, with dims dropped, flipped, reordered and merged for
//! iteration as [`mod@super::collapse`] does for pointwise ops.
//!
//! A reduction of an input view over some of its dims writes one output element per index of
//! the other (kept) dims. [`ReduceGeometry::new`] splits the input's dims into kept and
//! reduced ones and normalises each list the same way:
//!
//! 1. drop size-1 dims (they move no offset);
//! 2. flip dims whose input stride is negative, so every input stride is `>= 0` (the output
//!    offset of a flipped kept dim, and the logical index of a flipped reduced dim, move the
//!    other way, so no pairing of elements changes);
//! 3. order each list by input stride, largest first (stable), so the last dim of each list
//!    is the one that moves fastest in memory;
//! 4. merge neighbours that are contiguous with each other in every offset they carry.
//!
//! A contiguous full reduction becomes one reduced dim of stride 1; a middle-axis reduction of
//! a contiguous tensor `[a, r, b]` keeps `[(a, r*b), (b, 1)]` and reduces `[(r, b)]`.
//!
//! The *logical* index of a reduced element (what `argmax` returns) is its position in
//! row-major order over the reduced dims of the original shape; each reduced dim carries its
//! logical stride through the steps above, so reordering changes where the engines look, never
//! what index they report. Ops that do not need it pass `logical: false` and get stride 0.

use super::Layout;
use crate::error::LayoutError;

/// A kept dim after normalisation: its size and the strides of the input and the output
/// along it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeptDim {
    /// Size (`> 1`).
    pub size: usize,
    /// Input stride (`>= 0`).
    pub input: isize,
    /// Output stride (any sign).
    pub output: isize,
}

/// A reduced dim after normalisation: its size, input stride and logical stride.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReducedDim {
    /// Size (`> 1`).
    pub size: usize,
    /// Input stride (`>= 0`).
    pub input: isize,
    /// Step of the logical (row-major over the reduced dims) index along this dim; 0 when
    /// not asked for.
    pub logical: isize,
}

/// Which input elements fold into which output element.
///
/// Invariants (for a geometry of valid layouts, which [`ReduceGeometry::new`] checks):
/// - The output elements are the row-major indices over `kept` sizes; output `o`'s element is
///   at `output_offset + Σ i_k * kept[k].output`, and folds the input elements at
///   `input_offset + Σ i_k * kept[k].input + Σ j_r * reduced[r].input` over every index `j` of
///   the `reduced` sizes, each with logical index `logical_offset + Σ j_r * reduced[r].logical`.
/// - Every such offset is one the input (or output) layout reaches, so it lies in
///   `0..=isize::MAX` and in the storage the layout was checked against.
/// - `num_out` and `red_n` are the products of the sizes (`red_n` may be 0: the reduced dims
///   hold no elements, allowed only for ops with an identity). When `num_out` is 0 the lists
///   are empty and nothing is read or written.
/// - Sizes are `> 1`; input strides `>= 0`; each list is ordered by input stride, largest
///   first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReduceGeometry {
    /// Kept dims, outermost first.
    pub kept: Vec<KeptDim>,
    /// Reduced dims, outermost first.
    pub reduced: Vec<ReducedDim>,
    /// Input offset of the first element of output 0.
    pub input_offset: usize,
    /// Offset of output 0.
    pub output_offset: usize,
    /// Logical index of the first element folded into each output.
    pub logical_offset: i64,
    /// Output elements.
    pub num_out: usize,
    /// Input elements folded into each output.
    pub red_n: usize,
}

impl ReduceGeometry {
    /// The geometry of reducing `input` over `dims` (indices into its shape, in any order,
    /// none twice) into `output`, whose shape must be `input`'s shape without `dims`.
    /// `needs_elements`: the op has no identity, so reducing an empty set of elements into a
    /// non-empty output is an error. `logical`: carry the logical index (arg ops).
    ///
    /// # Errors
    /// [`LayoutError::DimOutOfRange`], [`LayoutError::DuplicateDim`],
    /// [`LayoutError::ShapeMismatch`] (output shape), [`LayoutError::EmptyReduction`].
    pub fn new(
        op: &'static str,
        input: &Layout,
        dims: &[usize],
        output: &Layout,
        needs_elements: bool,
        logical: bool,
    ) -> Result<Self, LayoutError> {
        let rank = input.rank();
        let mut reduce = [false; super::MAX_DIMS];
        for &d in dims {
            if d >= rank {
                return Err(LayoutError::DimOutOfRange {
                    op,
                    dim: isize::try_from(d).unwrap_or(isize::MAX),
                    rank,
                });
            }
            if reduce[d] {
                return Err(LayoutError::DuplicateDim { op, dim: d, rank });
            }
            reduce[d] = true;
        }
        let kept_shape: Vec<usize> = (0..rank)
            .filter(|&d| !reduce[d])
            .map(|d| input.shape()[d])
            .collect();
        if output.shape() != kept_shape.as_slice() {
            return Err(LayoutError::ShapeMismatch {
                op,
                expected: kept_shape,
                got: output.shape().to_vec(),
            });
        }
        let num_out: usize = kept_shape.iter().product();
        let red_n: usize = (0..rank)
            .filter(|&d| reduce[d])
            .map(|d| input.shape()[d])
            .product();
        if num_out == 0 {
            return Ok(Self::empty(input, output, red_n));
        }
        if red_n == 0 {
            if needs_elements {
                return Err(LayoutError::EmptyReduction {
                    op,
                    shape: input.shape().to_vec(),
                    dims: (0..rank).filter(|&d| reduce[d]).collect(),
                });
            }
            // Nothing is read: every output is the identity.
            let mut g = Self::empty(input, output, 0);
            g.num_out = num_out;
            g.kept = kept_dims(output, &kept_shape, |_| 0);
            return Ok(g);
        }
        // Inputs and outputs hold elements from here on, so offsets are reachable ones.
        let mut input_offset = input.offset() as isize;
        let mut output_offset = output.offset() as isize;
        let mut logical_offset = 0i64;
        let mut kept = Vec::with_capacity(rank);
        let mut reduced = Vec::with_capacity(rank);
        // Logical strides: row-major over the reduced sizes, innermost last.
        let mut logical_stride = 1isize;
        let mut out_dim = output.rank();
        for d in (0..rank).rev() {
            let size = input.shape()[d];
            let stride = input.strides()[d];
            if reduce[d] {
                let l = logical_stride;
                // The product of reduced sizes is at most the element count (<= isize::MAX).
                logical_stride = logical_stride.saturating_mul(size as isize);
                if size == 1 {
                    continue;
                }
                let (mut s, mut ls) = (stride, if logical { l } else { 0 });
                if s < 0 {
                    // (size - 1) * s is a reachable offset delta (Layout invariant 4).
                    input_offset += (size as isize - 1) * s;
                    logical_offset += (size as i64 - 1) * ls as i64;
                    s = -s;
                    ls = -ls;
                }
                reduced.push(ReducedDim {
                    size,
                    input: s,
                    logical: ls,
                });
            } else {
                out_dim -= 1;
                if size == 1 {
                    continue;
                }
                let (mut s, mut os) = (stride, output.strides()[out_dim]);
                if s < 0 {
                    input_offset += (size as isize - 1) * s;
                    output_offset += (size as isize - 1) * os;
                    s = -s;
                    os = -os;
                }
                kept.push(KeptDim {
                    size,
                    input: s,
                    output: os,
                });
            }
        }
        kept.reverse();
        reduced.reverse();
        // Stable: equal strides keep their order (outer first).
        kept.sort_by_key(|d| std::cmp::Reverse(d.input));
        reduced.sort_by_key(|d| std::cmp::Reverse(d.input));
        let kept = merge(kept, |outer, inner| {
            let n = inner.size as isize;
            (inner.input.checked_mul(n) == Some(outer.input)
                && inner.output.checked_mul(n) == Some(outer.output))
            .then(|| KeptDim {
                size: outer.size * inner.size,
                input: inner.input,
                output: inner.output,
            })
        });
        let reduced = merge(reduced, |outer, inner| {
            let n = inner.size as isize;
            (inner.input.checked_mul(n) == Some(outer.input)
                && inner.logical.checked_mul(n) == Some(outer.logical))
            .then(|| ReducedDim {
                size: outer.size * inner.size,
                input: inner.input,
                logical: inner.logical,
            })
        });
        Ok(ReduceGeometry {
            kept,
            reduced,
            // Reachable offsets are in 0..=isize::MAX (Layout invariant 4).
            input_offset: input_offset as usize,
            output_offset: output_offset as usize,
            logical_offset,
            num_out,
            red_n,
        })
    }

    /// A geometry that reads nothing (no output elements, or none reduced).
    fn empty(input: &Layout, output: &Layout, red_n: usize) -> Self {
        ReduceGeometry {
            kept: Vec::new(),
            reduced: Vec::new(),
            input_offset: input.offset(),
            output_offset: output.offset(),
            logical_offset: 0,
            num_out: 0,
            red_n,
        }
    }

    /// The largest input offset reached relative to `input_offset`.
    pub fn input_extent(&self) -> usize {
        let k = self
            .kept
            .iter()
            .map(|d| d.input.unsigned_abs() * (d.size - 1));
        let r = self
            .reduced
            .iter()
            .map(|d| d.input.unsigned_abs() * (d.size - 1));
        k.chain(r).sum()
    }

    /// The largest `|output offset - output_offset|` over the outputs (a bound on the output
    /// offsets' magnitude relative to output 0).
    pub fn output_extent(&self) -> usize {
        self.kept
            .iter()
            .map(|d| d.output.unsigned_abs() * (d.size - 1))
            .sum()
    }

    /// The largest `|logical index - logical_offset|`.
    pub fn logical_extent(&self) -> usize {
        self.reduced
            .iter()
            .map(|d| d.logical.unsigned_abs() * (d.size - 1))
            .sum()
    }
}

/// Kept dims of `output` (sizes `> 1`, in order), with input strides from `input_stride`.
fn kept_dims(
    output: &Layout,
    shape: &[usize],
    input_stride: impl Fn(usize) -> isize,
) -> Vec<KeptDim> {
    shape
        .iter()
        .zip(output.strides())
        .enumerate()
        .filter(|(_, (&n, _))| n > 1)
        .map(|(k, (&size, &output))| KeptDim {
            size,
            input: input_stride(k),
            output,
        })
        .collect()
}

/// Merges neighbours (outer, inner) for which `join` returns the merged dim.
fn merge<D: Copy>(dims: Vec<D>, join: impl Fn(&D, &D) -> Option<D>) -> Vec<D> {
    let mut out: Vec<D> = Vec::with_capacity(dims.len());
    for d in dims {
        match out.last().and_then(|outer| join(outer, &d)) {
            Some(m) => {
                if let Some(last) = out.last_mut() {
                    *last = m;
                }
            }
            None => out.push(d),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geom(input: &Layout, dims: &[usize], logical: bool) -> ReduceGeometry {
        let kept: Vec<usize> = (0..input.rank())
            .filter(|d| !dims.contains(d))
            .map(|d| input.shape()[d])
            .collect();
        let out = Layout::contiguous(&kept).unwrap();
        ReduceGeometry::new("t", input, dims, &out, true, logical).unwrap()
    }

    /// Every (output offset, input offset, logical index) triple, sorted.
    fn triples(g: &ReduceGeometry) -> Vec<(isize, isize, i64)> {
        let mut out = vec![];
        let ks: Vec<usize> = g.kept.iter().map(|d| d.size).collect();
        let rs: Vec<usize> = g.reduced.iter().map(|d| d.size).collect();
        for o in 0..g.num_out {
            let mut rest = o;
            let (mut io, mut oo) = (g.input_offset as isize, g.output_offset as isize);
            for (k, &n) in ks.iter().enumerate().rev() {
                let i = (rest % n) as isize;
                rest /= n;
                io += i * g.kept[k].input;
                oo += i * g.kept[k].output;
            }
            for j in 0..g.red_n {
                let mut rest = j;
                let (mut ii, mut l) = (io, g.logical_offset);
                for (r, &n) in rs.iter().enumerate().rev() {
                    let i = (rest % n) as isize;
                    rest /= n;
                    ii += i * g.reduced[r].input;
                    l += (i * g.reduced[r].logical) as i64;
                }
                out.push((oo, ii, l));
            }
        }
        out.sort_unstable();
        out
    }

    /// The same triples from a plain multi-index walk of the original layouts.
    fn reference(input: &Layout, dims: &[usize]) -> Vec<(isize, isize, i64)> {
        let shape = input.shape();
        let kept: Vec<usize> = (0..shape.len()).filter(|d| !dims.contains(d)).collect();
        let red: Vec<usize> = (0..shape.len()).filter(|d| dims.contains(d)).collect();
        let out = Layout::contiguous(&kept.iter().map(|&d| shape[d]).collect::<Vec<_>>()).unwrap();
        let n: usize = shape.iter().product();
        let mut v = vec![];
        for lin in 0..n {
            let mut idx = vec![0usize; shape.len()];
            let mut rest = lin;
            for d in (0..shape.len()).rev() {
                idx[d] = rest % shape[d];
                rest /= shape[d];
            }
            let ii = input.offset() as isize
                + idx
                    .iter()
                    .zip(input.strides())
                    .map(|(&i, &s)| i as isize * s)
                    .sum::<isize>();
            let oo = kept
                .iter()
                .zip(out.strides())
                .map(|(&d, &s)| idx[d] as isize * s)
                .sum::<isize>();
            let mut l = 0i64;
            for &d in &red {
                l = l * shape[d] as i64 + idx[d] as i64;
            }
            v.push((oo, ii, l));
        }
        v.sort_unstable();
        v
    }

    #[test]
    fn contiguous_full_and_axis_reductions_collapse() {
        let l = Layout::contiguous(&[4, 5, 6]).unwrap();
        let g = geom(&l, &[0, 1, 2], false);
        assert!(g.kept.is_empty());
        assert_eq!(
            g.reduced,
            [ReducedDim {
                size: 120,
                input: 1,
                logical: 0
            }]
        );
        let g = geom(&l, &[1], false);
        assert_eq!(
            g.kept,
            [
                KeptDim {
                    size: 4,
                    input: 30,
                    output: 6
                },
                KeptDim {
                    size: 6,
                    input: 1,
                    output: 1
                }
            ]
        );
        assert_eq!(
            g.reduced,
            [ReducedDim {
                size: 5,
                input: 6,
                logical: 0
            }]
        );
        let g = geom(&l, &[2], false);
        assert_eq!(
            g.kept,
            [KeptDim {
                size: 20,
                input: 6,
                output: 1
            }]
        );
        assert_eq!(
            g.reduced,
            [ReducedDim {
                size: 6,
                input: 1,
                logical: 0
            }]
        );
    }

    #[test]
    fn flipped_and_permuted_views_pair_the_same_elements() {
        let base = Layout::new(&[3, 4, 5], &[20, 5, 1], 7).unwrap();
        let views = [
            base.clone(),
            base.flip(1).unwrap(),
            base.permute(&[2, 0, 1]).unwrap().flip(0).unwrap(),
            base.slice(2, 0, 5, 2).unwrap().flip(2).unwrap(),
            Layout::new(&[3, 1, 4], &[4, 0, 1], 2)
                .unwrap()
                .broadcast_to(&[2, 3, 5, 4])
                .unwrap(),
        ];
        for v in &views {
            let r = v.rank();
            for mask in 1u32..(1 << r) {
                let dims: Vec<usize> = (0..r).filter(|d| mask & (1 << d) != 0).collect();
                let g = geom(v, &dims, true);
                assert_eq!(triples(&g), reference(v, &dims), "{v:?} over {dims:?}");
                for w in g.kept.windows(2) {
                    assert!(w[0].input >= w[1].input);
                }
            }
        }
    }

    #[test]
    fn bad_dims_and_empty_reductions_are_errors() {
        let l = Layout::contiguous(&[2, 0, 3]).unwrap();
        let out = Layout::contiguous(&[2, 3]).unwrap();
        let e = ReduceGeometry::new("max", &l, &[1], &out, true, false).unwrap_err();
        assert!(matches!(e, LayoutError::EmptyReduction { .. }), "{e:?}");
        let g = ReduceGeometry::new("sum", &l, &[1], &out, false, false).unwrap();
        assert_eq!((g.num_out, g.red_n), (6, 0));
        // No output elements: nothing to reduce, even for max.
        let out = Layout::contiguous(&[0, 3]).unwrap();
        let g = ReduceGeometry::new("max", &l, &[0], &out, true, false).unwrap();
        assert_eq!(g.num_out, 0);
        let out = Layout::contiguous(&[2]).unwrap();
        let l = Layout::contiguous(&[2, 3]).unwrap();
        assert!(matches!(
            ReduceGeometry::new("sum", &l, &[2], &out, false, false),
            Err(LayoutError::DimOutOfRange { dim: 2, .. })
        ));
        assert!(matches!(
            ReduceGeometry::new("sum", &l, &[1, 1], &out, false, false),
            Err(LayoutError::DuplicateDim { dim: 1, .. })
        ));
        assert!(matches!(
            ReduceGeometry::new("sum", &l, &[0], &out, false, false),
            Err(LayoutError::ShapeMismatch { .. })
        ));
    }
}
