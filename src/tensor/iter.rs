//! Iterators over the elements of host tensors and views, in logical (row-major) order
//! whatever the strides: `x.iter()`, `x.iter_mut()`, `x.indexed_iter()`, `for v in &x`,
//! `for v in &mut x`, `for v in x` (owned: the elements by value), `for v in x.t()`.
//!
//! A layout's row-major walk is an odometer over its shape (`Walker`). A row-major
//! contiguous layout iterates as a plain slice. Writable iteration hands out one `&mut T` per
//! element without `unsafe`: when the walk visits storage in increasing order (row-major
//! layouts, stepped slices) by splitting the storage as it goes; otherwise (transposed or
//! flipped views) from a table of the references to the span the view reaches, taken in the
//! walk's order (one pointer per element of that span).
//!
//! Every method is bounded by `D: HostBackend`: on a GPU tensor they are a compile error
//! saying to call `.to_cpu()` first.

use std::iter::FusedIterator;

use super::backend::HostBackend;
use super::{ReadRepr, Tensor, TensorView, TensorViewMut, WriteRepr};
use crate::element::Element;
use crate::layout::{Dims, Layout};

/// The storage offsets of a layout's elements in row-major order of its shape.
#[derive(Clone, Debug)]
struct Walker {
    shape: Dims<usize>,
    strides: Dims<isize>,
    index: Dims<usize>,
    offset: isize,
    remaining: usize,
}

impl Walker {
    fn new(layout: &Layout) -> Self {
        Walker {
            shape: Dims::from_slice(layout.shape()),
            strides: Dims::from_slice(layout.strides()),
            index: layout.shape().iter().map(|_| 0).collect(),
            // `offset <= isize::MAX` (Layout invariant 3).
            offset: layout.offset() as isize,
            remaining: layout.numel(),
        }
    }

    /// The index (one entry per dim) of the element the next call returns.
    fn index(&self) -> &Dims<usize> {
        &self.index
    }

    /// The next storage offset.
    fn next_offset(&mut self) -> Option<usize> {
        if self.remaining == 0 {
            return None;
        }
        // Reachable offsets lie in `0..=isize::MAX` (Layout invariant 4).
        let current = self.offset as usize;
        self.remaining -= 1;
        if self.remaining > 0 {
            // Odometer step; the transient offset one step past a dim's end may leave the
            // reachable range, so the arithmetic wraps (it is wound back at once).
            for d in (0..self.shape.len()).rev() {
                self.index[d] += 1;
                self.offset = self.offset.wrapping_add(self.strides[d]);
                if self.index[d] < self.shape[d] {
                    break;
                }
                let span = self.strides[d].wrapping_mul(self.shape[d] as isize);
                self.offset = self.offset.wrapping_sub(span);
                self.index[d] = 0;
            }
        }
        Some(current)
    }
}

/// Whether the row-major walk of `layout` visits strictly increasing storage offsets.
fn walks_forward(layout: &Layout) -> bool {
    // Each dim's stride must exceed the furthest the dims inside it reach.
    let mut reach = 0usize;
    for (&n, &s) in layout.shape().iter().zip(layout.strides()).rev() {
        if n <= 1 {
            continue;
        }
        if s <= 0 || s.unsigned_abs() <= reach {
            return false;
        }
        // At most `isize::MAX` (Layout invariant 4).
        reach += s.unsigned_abs() * (n - 1);
    }
    true
}

/// The elements of a host tensor or view by reference, in row-major order
/// ([`Tensor::iter`]).
#[derive(Clone, Debug)]
pub struct Iter<'a, T> {
    inner: IterInner<'a, T>,
}

#[derive(Clone, Debug)]
enum IterInner<'a, T> {
    Slice(std::slice::Iter<'a, T>),
    Strided { data: &'a [T], walker: Box<Walker> },
}

impl<'a, T> Iter<'a, T> {
    fn new(data: &'a [T], layout: &Layout) -> Self {
        let inner = match layout.contiguous_range() {
            Some(r) => IterInner::Slice(data[r].iter()),
            None => IterInner::Strided {
                data,
                walker: Box::new(Walker::new(layout)),
            },
        };
        Iter { inner }
    }
}

impl<'a, T> Iterator for Iter<'a, T> {
    type Item = &'a T;

    #[inline]
    fn next(&mut self) -> Option<&'a T> {
        match &mut self.inner {
            IterInner::Slice(it) => it.next(),
            IterInner::Strided { data, walker } => {
                let data: &'a [T] = data;
                walker.next_offset().map(|o| &data[o])
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.len();
        (n, Some(n))
    }
}

impl<T> ExactSizeIterator for Iter<'_, T> {
    fn len(&self) -> usize {
        match &self.inner {
            IterInner::Slice(it) => it.len(),
            IterInner::Strided { walker, .. } => walker.remaining,
        }
    }
}

impl<T> FusedIterator for Iter<'_, T> {}

/// The elements of a writable host tensor or view by `&mut`, in row-major order
/// ([`Tensor::iter_mut`]).
#[derive(Debug)]
pub struct IterMut<'a, T> {
    inner: IterMutInner<'a, T>,
}

#[derive(Debug)]
enum IterMutInner<'a, T> {
    Slice(std::slice::IterMut<'a, T>),
    /// The walk visits increasing offsets: `rest` is the storage from offset `base` on.
    Forward {
        rest: &'a mut [T],
        base: usize,
        walker: Walker,
    },
    /// Any other order: `slots[i]` is the element at offset `lo + i`, taken when visited.
    Table {
        slots: Vec<Option<&'a mut T>>,
        lo: usize,
        walker: Walker,
    },
}

impl<'a, T> IterMut<'a, T> {
    /// The elements of `layout` in `data`; `layout` lies within `data` and does not overlap
    /// itself (the invariants of a writable tensor), so each offset is visited once.
    fn new(data: &'a mut [T], layout: &Layout) -> Self {
        let inner = if let Some(r) = layout.contiguous_range() {
            IterMutInner::Slice(data[r].iter_mut())
        } else if walks_forward(layout) {
            IterMutInner::Forward {
                rest: data,
                base: 0,
                walker: Walker::new(layout),
            }
        } else {
            let (lo, hi) = layout.offset_range().unwrap_or((0, 0));
            let span = if layout.numel() == 0 {
                &mut data[0..0]
            } else {
                &mut data[lo..=hi]
            };
            IterMutInner::Table {
                slots: span.iter_mut().map(Some).collect(),
                lo,
                walker: Walker::new(layout),
            }
        };
        IterMut { inner }
    }
}

impl<'a, T> Iterator for IterMut<'a, T> {
    type Item = &'a mut T;

    #[inline]
    fn next(&mut self) -> Option<&'a mut T> {
        match &mut self.inner {
            IterMutInner::Slice(it) => it.next(),
            IterMutInner::Forward { rest, base, walker } => {
                let off = walker.next_offset()?;
                // Offsets increase strictly, so `off >= base` and the element lies in `rest`.
                let (_, tail) = std::mem::take(rest).split_at_mut(off - *base);
                let (first, tail) = tail.split_first_mut()?;
                *rest = tail;
                *base = off + 1;
                Some(first)
            }
            IterMutInner::Table { slots, lo, walker } => {
                let off = walker.next_offset()?;
                // Non-overlapping: each slot is visited once, so it is still there.
                slots[off - *lo].take()
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.len();
        (n, Some(n))
    }
}

impl<T> ExactSizeIterator for IterMut<'_, T> {
    fn len(&self) -> usize {
        match &self.inner {
            IterMutInner::Slice(it) => it.len(),
            IterMutInner::Forward { walker, .. } | IterMutInner::Table { walker, .. } => {
                walker.remaining
            }
        }
    }
}

impl<T> FusedIterator for IterMut<'_, T> {}

/// The elements of a host tensor or view with their indices, in row-major order
/// ([`Tensor::indexed_iter`]). The index derefs to `&[usize]` (one entry per dim).
#[derive(Clone, Debug)]
pub struct IndexedIter<'a, T> {
    data: &'a [T],
    walker: Walker,
}

impl<'a, T> Iterator for IndexedIter<'a, T> {
    type Item = (Dims<usize>, &'a T);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let index = self.walker.index().clone();
        let off = self.walker.next_offset()?;
        Some((index, &self.data[off]))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.walker.remaining, Some(self.walker.remaining))
    }
}

impl<T> ExactSizeIterator for IndexedIter<'_, T> {}

impl<T> FusedIterator for IndexedIter<'_, T> {}

/// Iteration, written once for every host tensor or view.
impl<T: Element, D: super::Backend, S: ReadRepr<T, D>> Tensor<T, D, S> {
    /// The elements by reference, in row-major order (whatever the strides).
    ///
    /// ```
    /// use typestate_tensor::tensor::Tensor;
    ///
    /// let x = Tensor::from_vec(&[2, 2], vec![1, 2, 3, 4])?;
    /// let t: Vec<i32> = x.t().iter().copied().collect();
    /// assert_eq!(t, [1, 3, 2, 4]);
    /// let total: i32 = (&x).into_iter().sum();
    /// assert_eq!(total, 10);
    /// # Ok::<(), typestate_tensor::Error>(())
    /// ```
    pub fn iter(&self) -> Iter<'_, T>
    where
        D: HostBackend,
    {
        let v = self.view();
        Iter::new(D::host(v.storage()), self.layout())
    }

    /// The elements with their indices (`(index, &value)`, the index one entry per dim), in
    /// row-major order.
    pub fn indexed_iter(&self) -> IndexedIter<'_, T>
    where
        D: HostBackend,
    {
        let v = self.view();
        IndexedIter {
            data: D::host(v.storage()),
            walker: Walker::new(self.layout()),
        }
    }

    /// The elements by `&mut`, in row-major order (whatever the strides).
    ///
    /// ```
    /// use typestate_tensor::tensor::Tensor;
    ///
    /// let mut x = Tensor::from_vec(&[2, 2], vec![1, 2, 3, 4])?;
    /// for (k, v) in x.view_mut().t().iter_mut().enumerate() {
    ///     *v += 10 * k as i32; // column-major positions
    /// }
    /// assert_eq!(x.to_vec(), [1, 22, 13, 34]);
    /// # Ok::<(), typestate_tensor::Error>(())
    /// ```
    pub fn iter_mut(&mut self) -> IterMut<'_, T>
    where
        D: HostBackend,
        S: WriteRepr<T, D>,
    {
        let layout = self.layout().clone();
        IterMut::new(D::host_mut(self.view_mut().into_slice_mut()), &layout)
    }
}

impl<'a, T: Element, D: HostBackend, S: ReadRepr<T, D>> IntoIterator for &'a Tensor<T, D, S> {
    type Item = &'a T;
    type IntoIter = Iter<'a, T>;
    fn into_iter(self) -> Iter<'a, T> {
        self.iter()
    }
}

impl<'a, T: Element, D: HostBackend, S: WriteRepr<T, D>> IntoIterator for &'a mut Tensor<T, D, S> {
    type Item = &'a mut T;
    type IntoIter = IterMut<'a, T>;
    fn into_iter(self) -> IterMut<'a, T> {
        self.iter_mut()
    }
}

impl<'a, T: Element, D: HostBackend> IntoIterator for TensorView<'a, T, D> {
    type Item = &'a T;
    type IntoIter = Iter<'a, T>;
    /// The view's elements for as long as its borrow (`for v in x.t()`).
    fn into_iter(self) -> Iter<'a, T> {
        Iter::new(D::host(self.storage()), self.layout())
    }
}

impl<'a, T: Element, D: HostBackend> IntoIterator for TensorViewMut<'a, T, D> {
    type Item = &'a mut T;
    type IntoIter = IterMut<'a, T>;
    /// The view's elements by `&mut` for as long as its borrow.
    fn into_iter(self) -> IterMut<'a, T> {
        let layout = self.layout().clone();
        IterMut::new(D::host_mut(self.into_slice_mut()), &layout)
    }
}

impl<T: Element, D: HostBackend> IntoIterator for Tensor<T, D> {
    type Item = T;
    type IntoIter = std::vec::IntoIter<T>;
    /// The elements by value in row-major order ([`Tensor::into_vec`], which does not copy a
    /// row-major tensor that uses its whole storage).
    fn into_iter(self) -> std::vec::IntoIter<T> {
        self.into_vec().into_iter()
    }
}
