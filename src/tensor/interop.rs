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

use super::{ReadRepr, Repr, Tensor, TensorView, TensorViewMut, WriteRepr};
use crate::device::Cpu;
use crate::element::Element;
use crate::error::{Handback, LayoutError, Result};
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

/// A tensor made from an ndarray array: the conversion behind [`Tensor::from_ndarray`],
/// chosen by the argument's type.
///
/// - `Tensor::from_ndarray(&array)` (any array or view, by reference) copies into a new
///   row-major [`Tensor`].
/// - `TensorView::from_ndarray(array.view())` borrows without copying, keeping shape and
///   strides (negative and zero strides included); an array with gaps between its elements
///   (a stepped slice) gives [`LayoutError::NotDense`].
/// - `TensorViewMut::from_ndarray(array.view_mut())` borrows writable, likewise.
///
/// One trait rather than three inherent functions because the three types are one struct
/// ([`Tensor<T, D, S>`](Tensor)): `Tensor::from_ndarray` would otherwise name three
/// functions at once.
pub trait FromNdarray<A>: Sized {
    /// The tensor or view of `array`.
    fn from_ndarray(array: A) -> Result<Self>;
}

impl<T: Element, S: Repr<T, Cpu>> Tensor<T, Cpu, S> {
    /// A tensor or view of an ndarray array; see [`FromNdarray`] for the three forms
    /// (`Tensor::from_ndarray(&a)` copies, `TensorView::from_ndarray(a.view())` and
    /// `TensorViewMut::from_ndarray(a.view_mut())` borrow without copying).
    pub fn from_ndarray<A>(array: A) -> Result<Self>
    where
        Self: FromNdarray<A>,
    {
        <Self as FromNdarray<A>>::from_ndarray(array)
    }
}

impl<'a, T: Element, Dm: Dimension> FromNdarray<ArrayView<'a, T, Dm>> for TensorView<'a, T, Cpu> {
    fn from_ndarray(array: ArrayView<'a, T, Dm>) -> Result<Self> {
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
}

impl<'a, T: Element> TensorView<'a, T, Cpu> {
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

impl<'a, T: Element, Dm: Dimension> FromNdarray<ArrayViewMut<'a, T, Dm>>
    for TensorViewMut<'a, T, Cpu>
{
    fn from_ndarray(array: ArrayViewMut<'a, T, Dm>) -> Result<Self> {
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

impl<T: Element, Sd, Dm> FromNdarray<&ndarray::ArrayBase<Sd, Dm>> for Tensor<T, Cpu>
where
    Sd: ndarray::Data<Elem = T>,
    Dm: Dimension,
{
    fn from_ndarray(array: &ndarray::ArrayBase<Sd, Dm>) -> Result<Self> {
        // A broadcast array may hold far more elements than memory: reserve fallibly.
        let mut data = crate::host_vec::vec_with_capacity(array.len())?;
        data.extend(array.iter().copied());
        Tensor::from_vec(array.shape(), data)
    }
}

impl<T: Element> Tensor<T, Cpu> {
    /// An ndarray view of the tensor's elements with the same strides.
    pub fn as_ndarray(&self) -> Result<ArrayViewD<'_, T>> {
        self.view().as_ndarray()
    }
}

impl<T: Element, S: WriteRepr<T, Cpu>> Tensor<T, Cpu, S> {
    /// A writable ndarray view of the elements with the same strides (negative ones
    /// included).
    pub fn as_ndarray_mut(&mut self) -> Result<ArrayViewMutD<'_, T>> {
        let (span, dim) = span_and_dim(&self.layout);
        let shape = self.layout.shape().to_vec();
        ArrayViewMut::from_shape(dim, &mut self.repr.slice_mut().0[span])
            .map_err(|_| ndarray_refused("as_ndarray_mut", &shape).into())
    }
}

impl<T: Element, S: ReadRepr<T, Cpu>> Tensor<T, Cpu, S> {
    /// A row-major (standard layout) ndarray copy of the elements.
    pub fn to_ndarray(&self) -> Result<ArrayD<T>> {
        let v = self.view();
        ArrayD::from_shape_vec(IxDyn(v.shape()), v.try_to_vec()?)
            .map_err(|_| ndarray_refused("to_ndarray", v.shape()).into())
    }
}

/// `Tensor::try_from(&array)`: a row-major copy of any array or view
/// ([`Tensor::from_ndarray`]).
impl<T: Element, Sd, Dm> TryFrom<&ndarray::ArrayBase<Sd, Dm>> for Tensor<T, Cpu>
where
    Sd: ndarray::Data<Elem = T>,
    Dm: Dimension,
{
    type Error = crate::error::Error;
    fn try_from(array: &ndarray::ArrayBase<Sd, Dm>) -> Result<Self> {
        Tensor::from_ndarray(array)
    }
}

/// `Tensor::try_from(array)`: takes an owned array's buffer without copying when it is in
/// standard (row-major) order from the start of its buffer, and copies it otherwise. On
/// error (a rank past [`crate::layout::MAX_DIMS`], or no host memory for the copy) the array
/// is handed back.
impl<T: Element, Dm: Dimension> TryFrom<ndarray::Array<T, Dm>> for Tensor<T, Cpu> {
    type Error = Handback<ndarray::Array<T, Dm>>;
    fn try_from(array: ndarray::Array<T, Dm>) -> Result<Self, Self::Error> {
        let layout = match Layout::contiguous(array.shape()) {
            Ok(l) => l,
            Err(e) => return Err(Handback::new(array, e)),
        };
        if !array.is_standard_layout() {
            // Copied while the array is still ours to hand back.
            return match Tensor::from_ndarray(&array) {
                Ok(t) => Ok(t),
                Err(e) => Err(Handback::new(array, e)),
            };
        }
        let (data, offset) = array.into_raw_vec_and_offset();
        if offset.unwrap_or(0) == 0 && data.len() == layout.numel() {
            Ok(Tensor::from_contiguous(data, layout, Cpu))
        } else {
            // A standard-layout array that does not start its buffer: keep its elements.
            let start = offset.unwrap_or(0).min(data.len());
            let end = (start + layout.numel()).min(data.len());
            Ok(Tensor::from_contiguous(
                data[start..end].to_vec(),
                layout,
                Cpu,
            ))
        }
    }
}

/// `ArrayD::try_from(tensor)`: the tensor's elements in row-major order as an owned array,
/// without copying when the tensor is row-major over its whole storage
/// ([`Tensor::into_vec`]). It does not fail for any tensor: ndarray's limits (an element
/// count within `isize::MAX`) are the tensor's own invariants; the `Result` is
/// `from_shape_vec`'s, kept typed rather than unwrapped.
impl<T: Element> TryFrom<Tensor<T, Cpu>> for ArrayD<T> {
    type Error = crate::error::Error;
    fn try_from(tensor: Tensor<T, Cpu>) -> Result<Self> {
        let shape = tensor.shape().to_vec();
        let data = tensor.into_vec();
        ArrayD::from_shape_vec(IxDyn(&shape), data)
            .map_err(|_| ndarray_refused("ArrayD::try_from", &shape).into())
    }
}

/// `ArrayD::try_from(&tensor)`: a row-major copy ([`Tensor::to_ndarray`]).
impl<T: Element, S: ReadRepr<T, Cpu>> TryFrom<&Tensor<T, Cpu, S>> for ArrayD<T> {
    type Error = crate::error::Error;
    fn try_from(tensor: &Tensor<T, Cpu, S>) -> Result<Self> {
        tensor.to_ndarray()
    }
}
