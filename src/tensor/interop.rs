//! ndarray interop, both ways, keeping strides (negative and zero ones included).
//!
//! ndarray strides are in elements like ours, and its data pointer points at the logical
//! first element, which for negative strides lies inside the span rather than at its start.
//! Our layouts instead index a slice from its lowest element, so conversion moves the
//! pointer to the lowest address and puts the distance into the layout's offset.
//!
//! Borrowing ([`TensorView::from_ndarray`], [`TensorViewMut::from_ndarray`]) needs the
//! array's elements to cover the memory between them densely (in any axis order, flipped or
//! broadcast): a stepped slice leaves gaps that another view may be writing, so borrowing
//! the whole span would alias them. [`Tensor::from_ndarray`] copies any array.

use ndarray::ShapeBuilder;
use ndarray::{ArrayD, ArrayView, ArrayViewD, ArrayViewMut, ArrayViewMutD, Axis, Dimension, IxDyn};

use super::{Tensor, TensorView, TensorViewMut};
use crate::device::Cpu;
use crate::element::Element;
use crate::error::{LayoutError, Result};
use crate::layout::Layout;

/// Distance from the lowest element to the logical first one.
fn low_to_first(shape: &[usize], strides: &[isize]) -> usize {
    shape
        .iter()
        .zip(strides)
        .filter(|(&n, &s)| s < 0 && n > 1)
        .map(|(&n, &s)| (n - 1) * s.unsigned_abs())
        .sum()
}

fn not_dense(op: &'static str, shape: &[usize], strides: &[isize]) -> LayoutError {
    LayoutError::NotDense {
        op,
        shape: shape.to_vec(),
        strides: strides.to_vec(),
    }
}

fn ndarray_refused(op: &'static str, shape: &[usize]) -> LayoutError {
    LayoutError::SizeOverflow {
        op,
        shape: shape.to_vec(),
        what: "ndarray shape",
    }
}

impl<'a, T: Element> TensorView<'a, T, Cpu> {
    /// Borrows an ndarray view without copying, with the same shape and strides (negative
    /// and zero strides included). Fails with [`LayoutError::NotDense`] for views with gaps
    /// (stepped slices); copy those with [`Tensor::from_ndarray`].
    pub fn from_ndarray<Dm: Dimension>(array: ArrayView<'a, T, Dm>) -> Result<Self> {
        const OP: &str = "TensorView::from_ndarray";
        let shape = array.shape().to_vec();
        let strides = array.strides().to_vec();
        if shape.contains(&0) {
            return TensorView::new(&[][..], Layout::new(&shape, &strides, 0)?, &Cpu);
        }
        // Broadcast axes repeat one position: borrow the array with them collapsed to it.
        let mut core = array;
        for (axis, (&n, &s)) in shape.iter().zip(&strides).enumerate() {
            if s == 0 && n > 1 {
                core.collapse_axis(Axis(axis), 0);
            }
        }
        let data: &'a [T] = core
            .to_slice_memory_order()
            .ok_or_else(|| not_dense(OP, &shape, &strides))?;
        let layout = Layout::new(&shape, &strides, low_to_first(&shape, &strides))?;
        TensorView::new(data, layout, &Cpu)
    }

    /// An ndarray view of the same elements with the same strides (negative and zero ones
    /// included), borrowing the same memory.
    pub fn as_ndarray(&self) -> Result<ArrayViewD<'a, T>> {
        let data: &'a [T] = self.storage();
        let l = self.layout();
        let (span, dim) = span_and_dim(l);
        ArrayView::from_shape(dim, &data[span])
            .map_err(|_| ndarray_refused("as_ndarray", l.shape()).into())
    }
}

impl<'a, T: Element> TensorViewMut<'a, T, Cpu> {
    /// Borrows a writable ndarray view without copying, keeping its strides (negative ones
    /// included). Fails with [`LayoutError::NotDense`] for views with gaps.
    pub fn from_ndarray<Dm: Dimension>(array: ArrayViewMut<'a, T, Dm>) -> Result<Self> {
        const OP: &str = "TensorViewMut::from_ndarray";
        let shape = array.shape().to_vec();
        let strides = array.strides().to_vec();
        if shape.contains(&0) {
            return TensorViewMut::new(&mut [][..], Layout::new(&shape, &strides, 0)?, &Cpu);
        }
        let data: &'a mut [T] = array
            .into_slice_memory_order()
            .ok_or_else(|| not_dense(OP, &shape, &strides))?;
        let layout = Layout::new(&shape, &strides, low_to_first(&shape, &strides))?;
        TensorViewMut::new(data, layout, &Cpu)
    }

    /// A writable ndarray view of the same elements with the same strides.
    pub fn as_ndarray_mut(&mut self) -> Result<ArrayViewMutD<'_, T>> {
        let layout = self.layout().clone();
        let (span, dim) = span_and_dim(&layout);
        ArrayViewMut::from_shape(dim, &mut self.slice_mut()[span])
            .map_err(|_| ndarray_refused("as_ndarray_mut", layout.shape()).into())
    }
}

/// The storage span a layout reaches and the ndarray shape-with-strides addressing it.
fn span_and_dim(l: &Layout) -> (std::ops::Range<usize>, ndarray::StrideShape<IxDyn>) {
    match l.offset_range() {
        Some((lo, hi)) => {
            // ndarray takes strides as `usize` bit patterns of `isize`.
            let strides: Vec<usize> = l.strides().iter().map(|&s| s as usize).collect();
            (lo..hi + 1, IxDyn(l.shape()).strides(IxDyn(&strides)))
        }
        None => (0..0, IxDyn(l.shape()).into()),
    }
}

impl<T: Element> Tensor<T, Cpu> {
    /// A row-major copy of any ndarray array or view.
    pub fn from_ndarray<S, Dm>(array: &ndarray::ArrayBase<S, Dm>) -> Result<Self>
    where
        S: ndarray::Data<Elem = T>,
        Dm: Dimension,
    {
        // A broadcast array may hold far more elements than memory: reserve fallibly.
        let mut data = crate::host_vec::vec_with_capacity(array.len())?;
        data.extend(array.iter().copied());
        Tensor::from_vec(array.shape(), data)
    }

    /// An ndarray view of the tensor's elements with the same strides.
    pub fn as_ndarray(&self) -> Result<ArrayViewD<'_, T>> {
        self.view().as_ndarray()
    }

    /// A writable ndarray view of the tensor's elements with the same strides.
    pub fn as_ndarray_mut(&mut self) -> Result<ArrayViewMutD<'_, T>> {
        let layout = self.layout.clone();
        let (span, dim) = span_and_dim(&layout);
        ArrayViewMut::from_shape(dim, &mut self.storage[span])
            .map_err(|_| ndarray_refused("as_ndarray_mut", layout.shape()).into())
    }
}

/// `to_ndarray` on the three CPU types.
macro_rules! to_ndarray {
    ($($ty:ty),*) => {$(
        impl<T: Element> $ty {
            /// A row-major (standard layout) ndarray copy of the elements.
            pub fn to_ndarray(&self) -> Result<ArrayD<T>> {
                let v = self.view();
                ArrayD::from_shape_vec(IxDyn(v.shape()), v.try_to_vec()?)
                    .map_err(|_| ndarray_refused("to_ndarray", v.shape()).into())
            }
        }
    )*};
}

to_ndarray!(Tensor<T, Cpu>, TensorView<'_, T, Cpu>, TensorViewMut<'_, T, Cpu>);
