//! CPU-only tensor methods: constructors from host data, element access, host slices,
//! reductions, and printing.

use crate::device::Cpu;
use crate::element::{Element, Numeric};
use crate::engine_cpu as cpu;
use crate::error::{LayoutError, Result};
use crate::layout::Layout;
use crate::tensor::{ReadRepr, Tensor, TensorView, TensorViewMut};

impl<T: Element> Tensor<T, Cpu> {
    /// A row-major tensor of `shape` holding `data` (whose length must be the element count).
    pub fn from_vec(shape: &[usize], data: Vec<T>) -> Result<Self> {
        let layout = Layout::contiguous(shape)?;
        if layout.numel() != data.len() {
            return Err(LayoutError::LengthMismatch {
                op: "from_vec",
                shape: shape.to_vec(),
                expected: layout.numel(),
                got: data.len(),
            }
            .into());
        }
        Ok(Tensor::from_contiguous(data, layout, Cpu))
    }

    /// A rank-0 tensor holding `value`.
    pub fn scalar(value: T) -> Self {
        Tensor::from_contiguous(vec![value], Layout::contiguous_scalar(), Cpu)
    }

    /// A row-major tensor of zeros.
    pub fn zeros(shape: &[usize]) -> Result<Self> {
        Tensor::zeros_on(shape, &Cpu)
    }

    /// A row-major tensor with every element `value`.
    pub fn full(shape: &[usize], value: T) -> Result<Self> {
        Tensor::full_on(shape, value, &Cpu)
    }

    /// A row-major tensor whose element at each index is `f(index)`, called in row-major
    /// order. The buffer is reserved before `f` is first called: a shape too large for the
    /// host is an error ([`crate::error::AllocError`]), not an abort.
    pub fn from_fn(shape: &[usize], mut f: impl FnMut(&[usize]) -> T) -> Result<Self> {
        let layout = Layout::contiguous(shape)?;
        let n = layout.numel();
        let mut data = cpu::vec_with_capacity(n)?;
        let mut idx = vec![0usize; shape.len()];
        for _ in 0..n {
            data.push(f(&idx));
            for d in (0..shape.len()).rev() {
                idx[d] += 1;
                if idx[d] < shape[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
        Ok(Tensor::from_contiguous(data, layout, Cpu))
    }

    /// The elements in row-major order, without copying when the tensor is row-major from the
    /// start of its storage and uses all of it.
    pub fn into_vec(self) -> Vec<T> {
        let whole = self.layout().is_contiguous()
            && self.layout().offset() == 0
            && self.storage().len() == self.layout().numel();
        if whole {
            self.into_parts().0
        } else {
            // No larger than the storage this tensor already holds (it does not overlap).
            self.view().to_vec()
        }
    }
}

impl<T: Numeric> Tensor<T, Cpu> {
    /// `[0, 1, ..., n - 1]` (each converted with [`Element::from_f64`], so `u8` saturates at
    /// 255).
    pub fn arange(n: usize) -> Result<Self> {
        Self::from_fn(&[n], |i| T::from_f64(i[0] as f64))
    }
}

/// Host access, written once for every CPU tensor, owned or a view.
impl<T: Element, S: ReadRepr<T, Cpu>> Tensor<T, Cpu, S> {
    /// The elements in row-major (logical) order.
    ///
    /// Like `<[T]>::to_vec`, this aborts the process if the host cannot allocate
    /// the result. A [`TensorView`] that broadcasts may hold far more elements than
    /// its storage: use [`try_to_vec`](Self::try_to_vec) to get an error instead.
    pub fn to_vec(&self) -> Vec<T> {
        match self.try_to_vec() {
            Ok(v) => v,
            Err(_) => {
                let size = self.numel().saturating_mul(std::mem::size_of::<T>());
                let layout = std::alloc::Layout::from_size_align(
                    size.min(isize::MAX as usize),
                    std::mem::align_of::<T>(),
                )
                .unwrap_or_else(|_| std::alloc::Layout::new::<T>());
                std::alloc::handle_alloc_error(layout)
            }
        }
    }

    /// The elements in row-major (logical) order, in a buffer reserved fallibly.
    ///
    /// # Errors
    /// [`crate::error::AllocError::TooLarge`] or
    /// [`crate::error::AllocError::OutOfMemory`] when the host cannot hold them.
    pub fn try_to_vec(&self) -> Result<Vec<T>> {
        let v = self.view();
        match v.as_slice() {
            Some(s) => {
                let mut out = cpu::vec_with_capacity(s.len())?;
                out.extend_from_slice(s);
                Ok(out)
            }
            None => cpu::gather(v.storage(), v.layout()),
        }
    }

    /// The element at `index` (one entry per dim), or an error naming the first index
    /// out of range.
    pub fn get(&self, index: &[usize]) -> Result<T> {
        let v = self.view();
        let off = v.layout().index_to_offset(index)?;
        Ok(v.storage()[off])
    }

    /// `Σ a` accumulated in `f64` (exact for every element type but `i64` beyond
    /// 2^53).
    pub fn sum(&self) -> f64
    where
        T: Numeric,
    {
        let v = self.view();
        cpu::sum_map(v.storage(), v.layout(), |x: T| x.to_f64())
    }

    /// `Σ |a|` in `f64` (BLAS/Caffe `asum`, the name blobs use too: `Blob::asum_data`).
    pub fn asum(&self) -> f64
    where
        T: Numeric,
    {
        let v = self.view();
        cpu::sum_map(v.storage(), v.layout(), |x: T| x.to_f64().abs())
    }

    /// `Σ a²` in `f64` (Caffe `sumsq`, the name blobs use too: `Blob::sumsq_data`).
    pub fn sumsq(&self) -> f64
    where
        T: Numeric,
    {
        let v = self.view();
        cpu::sum_map(v.storage(), v.layout(), |x: T| {
            let x = x.to_f64();
            x * x
        })
    }

    /// The old name of [`asum`](Self::asum).
    #[deprecated(
        since = "0.1.0",
        note = "renamed `asum` (Caffe's and BLAS's name, as on `Blob`)"
    )]
    pub fn abs_sum(&self) -> f64
    where
        T: Numeric,
    {
        self.asum()
    }

    /// The old name of [`sumsq`](Self::sumsq).
    #[deprecated(since = "0.1.0", note = "renamed `sumsq` (Caffe's name, as on `Blob`)")]
    pub fn sq_sum(&self) -> f64
    where
        T: Numeric,
    {
        self.sumsq()
    }
}

impl<T: Element> Tensor<T, Cpu> {
    /// The elements as one slice in row-major order, when the layout is row-major contiguous.
    pub fn as_slice(&self) -> Option<&[T]> {
        contiguous_range(self.layout()).map(|r| &self.storage()[r])
    }

    /// The elements as one writable slice in row-major order, when contiguous.
    pub fn as_slice_mut(&mut self) -> Option<&mut [T]> {
        let (storage, layout) = self.storage_mut_and_layout();
        contiguous_range(layout).map(|r| &mut storage[r])
    }
}

impl<'a, T: Element> TensorView<'a, T, Cpu> {
    /// The elements as one slice in row-major order, when the layout is row-major contiguous.
    pub fn as_slice(&self) -> Option<&'a [T]> {
        let data: &'a [T] = self.storage();
        contiguous_range(self.layout()).map(|r| &data[r])
    }
}

impl<T: Element> TensorViewMut<'_, T, Cpu> {
    /// The elements as one slice in row-major order, when contiguous.
    pub fn as_slice(&self) -> Option<&[T]> {
        contiguous_range(self.layout()).map(|r| &self.storage()[r])
    }

    /// The whole borrowed host storage, writable (elements outside the layout included: the
    /// view borrows all of it exclusively).
    pub fn storage_mut(&mut self) -> &mut [T] {
        self.slice_mut()
    }

    /// The elements as one writable slice in row-major order, when contiguous.
    pub fn as_slice_mut(&mut self) -> Option<&mut [T]> {
        let r = contiguous_range(self.layout())?;
        Some(&mut self.slice_mut()[r])
    }
}

/// The storage range of a row-major contiguous layout (empty for an empty layout, whose
/// offset need not lie within the storage).
fn contiguous_range(layout: &Layout) -> Option<std::ops::Range<usize>> {
    if layout.numel() == 0 {
        return Some(0..0);
    }
    layout
        .is_contiguous()
        .then(|| layout.offset()..layout.offset() + layout.numel())
}

impl<T: Element + std::fmt::Display, S: ReadRepr<T, Cpu>> std::fmt::Display for Tensor<T, Cpu, S> {
    /// The elements as ndarray prints them.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        display(&self.view(), f)
    }
}

#[cfg(feature = "ndarray")]
fn display<T: Element + std::fmt::Display>(
    v: &TensorView<'_, T, Cpu>,
    f: &mut std::fmt::Formatter<'_>,
) -> std::fmt::Result {
    match v.as_ndarray() {
        Ok(a) => std::fmt::Display::fmt(&a, f),
        Err(_) => write!(f, "<tensor of shape {:?}>", v.shape()),
    }
}

/// Without the `ndarray` feature: the elements in nested brackets, row-major.
#[cfg(not(feature = "ndarray"))]
fn display<T: Element + std::fmt::Display>(
    v: &TensorView<'_, T, Cpu>,
    f: &mut std::fmt::Formatter<'_>,
) -> std::fmt::Result {
    fn nest<T: std::fmt::Display>(
        f: &mut std::fmt::Formatter<'_>,
        shape: &[usize],
        items: &mut impl Iterator<Item = T>,
    ) -> std::fmt::Result {
        let Some((&n, inner)) = shape.split_first() else {
            return match items.next() {
                Some(x) => write!(f, "{x}"),
                None => Ok(()),
            };
        };
        f.write_str("[")?;
        for i in 0..n {
            if i > 0 {
                f.write_str(", ")?;
            }
            nest(f, inner, items)?;
        }
        f.write_str("]")
    }
    nest(f, v.shape(), &mut v.to_vec().into_iter())
}

#[cfg(all(test, not(feature = "ndarray")))]
mod display_without_ndarray {
    use crate::tensor::Tensor;

    #[test]
    fn prints_nested_brackets_in_logical_order() {
        let t = Tensor::from_vec(&[2, 3], vec![1i32, 2, 3, 4, 5, 6]).unwrap();
        assert_eq!(t.to_string(), "[[1, 2, 3], [4, 5, 6]]");
        assert_eq!(t.t().to_string(), "[[1, 4], [2, 5], [3, 6]]");
        assert_eq!(Tensor::scalar(7i32).to_string(), "7");
        assert_eq!(Tensor::<i32>::zeros(&[0]).unwrap().to_string(), "[]");
    }
}
