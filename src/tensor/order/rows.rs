//! Moving an op's dim last: the `[rows, n]` views engines see, and the results put back.

use crate::element::Element;
use crate::error::Result;
use crate::layout::{normalize_dim, Layout};
use crate::tensor::{AsViewMut, Backend, Tensor, TensorView};

/// An input seen as rows along one dim.
pub(super) struct Rows<'a, T: Element, D: Backend> {
    /// The input, dim last, row-major: a view of the input where it already was, else a copy.
    src: Source<'a, T, D>,
    /// The permutation that moved the dim last (the input's dims in their new order).
    pub perm: Vec<usize>,
    /// The input's shape.
    pub shape: Vec<usize>,
    /// The resolved dim (0 for a 0-d input, seen as `[1]`).
    pub dim: usize,
    /// The number of rows (the product of the other dims).
    pub rows: usize,
    /// The row length (the dim's size).
    pub n: usize,
    /// The input was 0-d (seen as `[1]`).
    scalar: bool,
}

enum Source<'a, T: Element, D: Backend> {
    View(TensorView<'a, T, D>),
    Copy(Tensor<T, D>),
}

impl<'a, T: Element, D: Backend> Rows<'a, T, D> {
    /// `x` along `dim` (negative from the end; a 0-d `x` takes `0` or `-1`, as PyTorch).
    pub fn new(op: &'static str, x: TensorView<'a, T, D>, dim: isize) -> Result<Self> {
        let scalar = x.rank() == 0;
        let x = if scalar { x.reshape(&[1])? } else { x };
        let rank = x.rank();
        let dim = normalize_dim(op, dim, rank)?;
        let shape = x.shape().to_vec();
        let perm: Vec<usize> = (0..rank).filter(|&d| d != dim).chain([dim]).collect();
        let moved = x.permute(&perm)?;
        let n = shape[dim];
        let rows = shape
            .iter()
            .enumerate()
            .filter(|&(d, _)| d != dim)
            .map(|(_, &s)| s)
            .product();
        let src = if moved.layout().is_contiguous() {
            Source::View(moved)
        } else {
            Source::Copy(moved.contiguous()?)
        };
        Ok(Rows {
            src,
            perm,
            shape,
            dim,
            rows,
            n,
            scalar,
        })
    }

    /// The source as a row-major `[rows, n]` view.
    pub fn view(&self) -> Result<TensorView<'_, T, D>> {
        let v = match &self.src {
            Source::View(v) => v.clone(),
            Source::Copy(t) => t.view(),
        };
        v.reshape(&[self.rows, self.n])
    }

    /// The input's shape with the dim's size replaced by `m` (keeping it; or dropping it
    /// without `keepdim`), in the input's dim order.
    pub fn out_shape(&self, m: usize, keepdim: bool) -> Vec<usize> {
        let mut s = self.shape.clone();
        if self.scalar {
            return if keepdim && m != 1 { vec![m] } else { vec![] };
        }
        if keepdim {
            s[self.dim] = m;
        } else {
            s.remove(self.dim);
        }
        s
    }

    /// A new output of `[rows, m]` elements written by `fill` (a row-major `[rows, m]`
    /// destination), returned in the input's dim order with the dim's size `m` (a permuted
    /// layout of row-major storage: no copy).
    ///
    /// # Safety
    /// `fill` returning `Ok` has written every element of its destination.
    pub unsafe fn output<U: Element>(
        &self,
        device: &D,
        m: usize,
        fill: impl FnOnce(&mut crate::tensor::TensorViewMut<'_, U, D>) -> Result<()>,
    ) -> Result<Tensor<U, D>> {
        let flat = Layout::contiguous(&[self.rows, m])?;
        // SAFETY: the caller's promise: `fill` returning `Ok` wrote every element of the
        // row-major `[rows, m]` layout, which covers the whole storage. On error the storage
        // is dropped unread.
        let mut storage = unsafe { device.alloc_uninit::<U>(flat.numel())? };
        {
            let mut dst =
                crate::tensor::TensorViewMut::new(D::slice_mut(&mut storage), flat, device)?;
            fill(&mut dst)?;
        }
        let mut moved: Vec<usize> = self.perm.iter().map(|&d| self.shape[d]).collect();
        *moved.last_mut().unwrap_or(&mut 0) = m;
        let mut t = Tensor::from_contiguous(storage, Layout::contiguous(&moved)?, device.clone());
        t.set_layout(t.layout().permute(&inverse(&self.perm))?)?;
        if self.scalar && m == 1 {
            // A 0-d input gives a 0-d result, as PyTorch.
            t.set_layout(Layout::contiguous(&[])?)?;
        }
        Ok(t)
    }

    /// Writes through `fill` (as [`Rows::output`]) into `out`, of the input's shape with the
    /// dim's size `m`: directly when `out`'s view moved the same way is row-major, else
    /// through a temporary copied into it.
    ///
    /// # Safety
    /// As [`Rows::output`].
    pub unsafe fn output_into<U: Element>(
        &self,
        device: &D,
        m: usize,
        out: &mut impl AsViewMut<U, D>,
        fill: impl FnOnce(&mut crate::tensor::TensorViewMut<'_, U, D>) -> Result<()>,
    ) -> Result<()> {
        let expected = self.out_shape(m, true);
        let o = out.view_mut();
        let o_shape = o.shape().to_vec();
        let fits = o_shape == expected || (o_shape.is_empty() && expected == [1]);
        if !fits {
            return Err(crate::error::LayoutError::ShapeMismatch {
                op: "order (out)",
                expected,
                got: o_shape,
            }
            .into());
        }
        let o = if o.rank() == 0 { o.reshape(&[1])? } else { o };
        let moved = o.permute(&self.perm)?;
        if moved.layout().is_contiguous() {
            let mut flat = moved.reshape(&[self.rows, m])?;
            return fill(&mut flat);
        }
        // SAFETY: forwarded from the caller.
        let tmp = unsafe { self.output::<U>(device, m, fill)? };
        let mut moved = moved;
        moved.copy_from(&tmp.permute(&self.perm)?)
    }
}

impl<T: Element, D: Backend> Rows<'_, T, D> {
    /// Two outputs written by one call of `fill`, as [`Rows::output`].
    ///
    /// # Safety
    /// `fill` returning `Ok` has written every element of both destinations.
    pub unsafe fn output_pair<U: Element, V: Element>(
        &self,
        device: &D,
        m: usize,
        fill: impl FnOnce(
            &mut crate::tensor::TensorViewMut<'_, U, D>,
            &mut crate::tensor::TensorViewMut<'_, V, D>,
        ) -> Result<()>,
    ) -> Result<(Tensor<U, D>, Tensor<V, D>)> {
        let mut second = None;
        // SAFETY: the caller's promise covers both; the second output is kept only when
        // `fill` returned `Ok`.
        let first = unsafe {
            self.output(device, m, |a| {
                second = Some(self.output(device, m, |b| fill(a, b))?);
                Ok(())
            })?
        };
        match second {
            Some(second) => Ok((first, second)),
            None => unreachable_pair(),
        }
    }

    /// Two outputs written by one call of `fill` into `a` and `b`, as [`Rows::output_into`].
    ///
    /// # Safety
    /// As [`Rows::output_pair`].
    pub unsafe fn output_pair_into<U: Element, V: Element>(
        &self,
        device: &D,
        m: usize,
        a: &mut impl AsViewMut<U, D>,
        b: &mut impl AsViewMut<V, D>,
        fill: impl FnOnce(
            &mut crate::tensor::TensorViewMut<'_, U, D>,
            &mut crate::tensor::TensorViewMut<'_, V, D>,
        ) -> Result<()>,
    ) -> Result<()> {
        // SAFETY: forwarded from the caller.
        unsafe {
            self.output_into(device, m, a, |da| {
                self.output_into(device, m, b, |db| fill(da, db))
            })
        }
    }
}

/// `output` returned `Ok` without running its `fill`: impossible (it runs `fill` once before
/// returning `Ok`); an error rather than a panic all the same.
fn unreachable_pair<X>() -> Result<X> {
    Err(crate::error::LayoutError::ShapeMismatch {
        op: "order (internal)",
        expected: vec![],
        got: vec![],
    }
    .into())
}

/// The inverse of a permutation.
fn inverse(perm: &[usize]) -> Vec<usize> {
    let mut inv = vec![0; perm.len()];
    for (i, &p) in perm.iter().enumerate() {
        inv[p] = i;
    }
    inv
}
