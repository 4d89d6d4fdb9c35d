//! `repeat`, `tile` and `roll`: copies that lay the input out again. `repeat` reads the input
//! once through a view with a stride-0 dim in front of every repeated dim and writes the
//! result in one pass; `roll` copies two blocks per rolled dim.

use super::{ReadRepr, Tensor};
use crate::element::Element;
use crate::error::{LayoutError, Result};
use crate::layout::{normalize_dim, Layout};
use crate::tensor::shape_ops::Dim;
use crate::tensor::Backend;

impl<T: Element, D: Backend, S: ReadRepr<T, D>> Tensor<T, D, S> {
    /// The tensor repeated `reps[i]` times along dim `i`, as a new row-major tensor
    /// (PyTorch's `repeat`: `reps` has at least one entry per dim, extra leading entries add
    /// leading dims).
    ///
    /// ```
    /// use typestate_tensor::Tensor;
    ///
    /// let x = Tensor::<i32>::from_vec(&[2], vec![1, 2])?;
    /// let r = x.repeat(&[2, 3])?;
    /// assert_eq!(r.shape(), [2, 6]);
    /// assert_eq!(r.to_vec(), [1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2]);
    /// # Ok::<(), typestate_tensor::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`LayoutError::ArgumentCount`] for fewer counts than dims; a size overflow; the
    /// device's errors.
    pub fn repeat(&self, reps: &[usize]) -> Result<Tensor<T, D>> {
        const OP: &str = "repeat";
        let rank = self.rank();
        if reps.len() < rank {
            return Err(LayoutError::ArgumentCount {
                op: OP,
                what: "repeat counts",
                got: reps.len(),
                rule: format!("give at least one per dim of the tensor (rank {rank})"),
            }
            .into());
        }
        let lead = reps.len() - rank;
        let layout = self.layout();
        // The input's dims with size-1 dims in front for the extra counts, then a stride-0
        // dim of size `reps[i]` before each dim that repeats: reading this view in row-major
        // order visits the result's elements in order.
        let mut shape = Vec::with_capacity(2 * reps.len());
        let mut strides = Vec::with_capacity(2 * reps.len());
        let mut out_shape = Vec::with_capacity(reps.len());
        for (i, &r) in reps.iter().enumerate() {
            let (n, s) = if i < lead {
                (1, 0)
            } else {
                (layout.shape()[i - lead], layout.strides()[i - lead])
            };
            if r != 1 {
                shape.push(r);
                strides.push(0);
            }
            shape.push(n);
            strides.push(s);
            out_shape.push(n.checked_mul(r).ok_or_else(|| LayoutError::SizeOverflow {
                op: OP,
                shape: layout.shape().to_vec(),
                what: "repeated dim",
            })?);
        }
        crate::layout::checked_numel(OP, &out_shape)?;
        let spread = self
            .view()
            .relayout(|l| Layout::new(&shape, &strides, l.offset()))?;
        let out = spread.contiguous()?;
        Ok(out.into_reshape(&out_shape)?)
    }

    /// NumPy's and PyTorch's `tile`: [`Self::repeat`] with `reps` padded with leading ones
    /// where it has fewer entries than the tensor has dims.
    ///
    /// # Errors
    /// A size overflow; the device's errors.
    pub fn tile(&self, reps: &[usize]) -> Result<Tensor<T, D>> {
        let missing = self.rank().saturating_sub(reps.len());
        let full: Vec<usize> = std::iter::repeat_n(1, missing)
            .chain(reps.iter().copied())
            .collect();
        self.repeat(&full)
    }

    /// The elements shifted along each of `dims` by the matching entry of `shifts`, wrapping
    /// around (PyTorch's `roll`: element `i` moves to `(i + shift) mod size`; negative
    /// shifts move toward the front). With `dims` empty, `shifts` has one entry and the
    /// tensor rolls as if flattened.
    ///
    /// ```
    /// use typestate_tensor::Tensor;
    ///
    /// let x = Tensor::<i32>::from_vec(&[2, 3], vec![1, 2, 3, 4, 5, 6])?;
    /// assert_eq!(x.roll(&[1], &[1])?.to_vec(), [3, 1, 2, 6, 4, 5]);
    /// assert_eq!(x.roll::<i32>(&[-1], &[])?.to_vec(), [2, 3, 4, 5, 6, 1]);
    /// # Ok::<(), typestate_tensor::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`LayoutError::ArgumentCount`] when `shifts` and `dims` differ in length (or `dims`
    /// is empty and `shifts` has other than one entry), [`LayoutError::DimOutOfRange`]; the
    /// device's errors.
    pub fn roll<P: Dim>(&self, shifts: &[isize], dims: &[P]) -> Result<Tensor<T, D>> {
        const OP: &str = "roll";
        let wanted = dims.len().max(1);
        if shifts.len() != wanted {
            return Err(LayoutError::ArgumentCount {
                op: OP,
                what: "shifts",
                got: shifts.len(),
                rule: if dims.is_empty() {
                    "give one shift to roll the flattened tensor".to_owned()
                } else {
                    format!("give one per dim in `dims` ({})", dims.len())
                },
            }
            .into());
        }
        if dims.is_empty() {
            let flat = self.contiguous()?.into_reshape(&[self.numel()])?;
            let rolled = flat.roll(shifts, &[0])?;
            return Ok(rolled.into_reshape(self.shape())?);
        }
        let rank = self.rank();
        // The net shift of each dim (a dim may be named twice: PyTorch adds the shifts).
        let mut net = vec![0usize; rank];
        for (&shift, dim) in shifts.iter().zip(dims) {
            let d = normalize_dim(OP, dim.to_isize(), rank)?;
            let n = self.shape()[d];
            if n > 0 {
                let s = shift.rem_euclid(n as isize) as usize;
                net[d] = (net[d] + s) % n;
            }
        }
        let mut out = Tensor::zeros_on(self.shape(), self.device())?;
        if self.numel() == 0 {
            return Ok(out);
        }
        // Each rolled dim splits into two blocks: input [0, n - s) lands at [s, n), input
        // [n - s, n) at [0, s). Copy every combination of blocks once.
        let rolled: Vec<usize> = (0..rank).filter(|&d| net[d] != 0).collect();
        for mask in 0..(1usize << rolled.len()) {
            let mut src = self.view();
            let mut dst = out.view_mut();
            for (bit, &d) in rolled.iter().enumerate() {
                let (n, s) = (self.shape()[d], net[d]);
                if mask & (1 << bit) == 0 {
                    src = src.narrow(d, 0, n - s)?;
                    dst = dst.narrow(d, s, n - s)?;
                } else {
                    src = src.narrow(d, n - s, s)?;
                    dst = dst.narrow(d, 0, s)?;
                }
            }
            dst.copy_from(&src)?;
        }
        Ok(out)
    }
}
