//! Host-only tensor methods: constructors from host data, element access (`get`, `set`,
//! indexing), host slices, `PartialEq`, conversions from `Vec`, reductions, and the CPU's
//! [`Transfer`].
//!
//! The methods that read or write host memory are written for every device with a
//! `where D: HostBackend` bound (only the [`Cpu`] is one), so that calling one on a GPU
//! tensor is a compile error saying to call `.to_cpu()` first, rather than "no method named
//! `to_vec`".

use crate::device::Cpu;
use crate::element::{Element, FloatElement, Numeric};
use crate::engine_cpu as cpu;
use crate::error::{LayoutError, Result};
use crate::layout::Layout;
use crate::tensor::{
    Backend, HostBackend, ReadRepr, Tensor, TensorView, TensorViewMut, Transfer, WriteRepr,
};

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

    /// A row-major tensor of ones.
    pub fn ones(shape: &[usize]) -> Result<Self> {
        Tensor::ones_on(shape, &Cpu)
    }

    /// The `n x n` identity matrix.
    pub fn eye(n: usize) -> Result<Self> {
        Tensor::eye_on(n, &Cpu)
    }
}

impl<T: Element, D: Backend> Tensor<T, D> {
    /// The elements in row-major order, without copying when the tensor is row-major from the
    /// start of its storage and uses all of it.
    pub fn into_vec(self) -> Vec<T>
    where
        D: HostBackend,
    {
        let whole = self.layout().is_contiguous()
            && self.layout().offset() == 0
            && crate::device::Storage::len(self.storage()) == self.layout().numel();
        if whole {
            D::into_host_vec(self.into_parts().0)
        } else {
            // No larger than the storage this tensor already holds (it does not overlap).
            self.view().to_vec()
        }
    }

    /// The elements as one slice in row-major order, when the layout is row-major contiguous.
    pub fn as_slice(&self) -> Option<&[T]>
    where
        D: HostBackend,
    {
        let data = D::host(D::slice(self.storage()));
        self.layout().contiguous_range().map(|r| &data[r])
    }

    /// The elements as one writable slice in row-major order, when contiguous.
    pub fn as_slice_mut(&mut self) -> Option<&mut [T]>
    where
        D: HostBackend,
    {
        let (storage, layout) = self.storage_mut_and_layout();
        let data = D::host_mut(D::slice_mut(storage));
        layout.contiguous_range().map(|r| &mut data[r])
    }
}

impl<T: Numeric> Tensor<T, Cpu> {
    /// `[0, 1, ..., n - 1]` (each converted with [`Element::from_f64`], so `u8` saturates at
    /// 255). [`arange_step`](Self::arange_step) takes a start and a step.
    pub fn arange(n: usize) -> Result<Self> {
        Self::from_fn(&[n], |i| T::from_f64(i[0] as f64))
    }

    /// `start, start + step, ...` up to `end` (excluded), as NumPy's and PyTorch's
    /// `arange(start, end, step)`; see [`Tensor::arange_step_on`].
    pub fn arange_step(start: T, end: T, step: T) -> Result<Self> {
        Tensor::arange_step_on(start, end, step, &Cpu)
    }

    /// `steps` values evenly spaced from `start` to `end`, both included; see
    /// [`Tensor::linspace_on`].
    pub fn linspace(start: T, end: T, steps: usize) -> Result<Self> {
        Tensor::linspace_on(start, end, steps, &Cpu)
    }
}

impl<T: FloatElement> Tensor<T, Cpu> {
    /// Uniform values in `[0, 1)` from the counter-based generator seeded with `seed`
    /// (the same values for the same seed and shape on every device and every run); see
    /// [`Tensor::rand_on`].
    pub fn rand(shape: &[usize], seed: u64) -> Result<Self> {
        Tensor::rand_on(shape, seed, &Cpu)
    }

    /// Standard normal values (mean 0, standard deviation 1) from the counter-based
    /// generator seeded with `seed`; see [`Tensor::randn_on`].
    pub fn randn(shape: &[usize], seed: u64) -> Result<Self> {
        Tensor::randn_on(shape, seed, &Cpu)
    }
}

/// Host access, written once for every host tensor, owned or a view.
impl<T: Element, D: Backend, S: ReadRepr<T, D>> Tensor<T, D, S> {
    /// The elements in row-major (logical) order.
    ///
    /// Like `<[T]>::to_vec`, this aborts the process if the host cannot allocate
    /// the result. A [`TensorView`] that broadcasts may hold far more elements than
    /// its storage: use [`try_to_vec`](Self::try_to_vec) to get an error instead.
    pub fn to_vec(&self) -> Vec<T>
    where
        D: HostBackend,
    {
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
    pub fn try_to_vec(&self) -> Result<Vec<T>>
    where
        D: HostBackend,
    {
        let v = self.view();
        match v.as_slice() {
            Some(s) => {
                let mut out = cpu::vec_with_capacity(s.len())?;
                out.extend_from_slice(s);
                Ok(out)
            }
            None => cpu::gather(D::host(v.storage()), v.layout()),
        }
    }

    /// The element at `index` (one entry per dim), or an error naming the first index
    /// out of range ([`LayoutError::IndexOutOfBounds`], [`LayoutError::IndexLength`]).
    /// `x[[i, j]]` is the panicking form.
    pub fn get(&self, index: &[usize]) -> Result<T>
    where
        D: HostBackend,
    {
        let v = self.view();
        let off = v.layout().index_to_offset(index)?;
        Ok(D::host(v.storage())[off])
    }

    /// Sets the element at `index` (one entry per dim) to `value`, or returns an error
    /// naming the first index out of range; `x[[i, j]] = value` is the panicking form.
    pub fn set(&mut self, index: &[usize], value: T) -> Result<()>
    where
        D: HostBackend,
        S: WriteRepr<T, D>,
    {
        *self.get_mut(index)? = value;
        Ok(())
    }

    /// The element at `index`, writable, or an error naming the first index out of range.
    pub fn get_mut(&mut self, index: &[usize]) -> Result<&mut T>
    where
        D: HostBackend,
        S: WriteRepr<T, D>,
    {
        let off = self.layout().index_to_offset(index)?;
        Ok(&mut D::host_mut(self.view_mut().into_slice_mut())[off])
    }
}

/// Full reductions of CPU tensors, accumulated in `f64`.
impl<T: Element, S: ReadRepr<T, Cpu>> Tensor<T, Cpu, S> {
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
}

impl<'a, T: Element, D: Backend> TensorView<'a, T, D> {
    /// The elements as one slice in row-major order, when the layout is row-major contiguous.
    pub fn as_slice(&self) -> Option<&'a [T]>
    where
        D: HostBackend,
    {
        let data: &'a [T] = D::host(self.storage());
        self.layout().contiguous_range().map(|r| &data[r])
    }
}

impl<T: Element, D: Backend> TensorViewMut<'_, T, D> {
    /// The elements as one slice in row-major order, when contiguous.
    pub fn as_slice(&self) -> Option<&[T]>
    where
        D: HostBackend,
    {
        self.layout()
            .contiguous_range()
            .map(|r| &D::host(self.storage())[r])
    }

    /// The whole borrowed host storage, writable (elements outside the layout included: the
    /// view borrows all of it exclusively).
    pub fn storage_mut(&mut self) -> &mut [T]
    where
        D: HostBackend,
    {
        D::host_mut(self.slice_mut())
    }

    /// The elements as one writable slice in row-major order, when contiguous.
    pub fn as_slice_mut(&mut self) -> Option<&mut [T]>
    where
        D: HostBackend,
    {
        let r = self.layout().contiguous_range()?;
        Some(&mut D::host_mut(self.slice_mut())[r])
    }
}

/// Equal shapes and equal elements (`==` of the element type, so `NaN != NaN`), for any
/// mix of owned tensors and views; strides and storage do not matter. (Rust's `==` returns
/// a `bool`: [`Tensor::eq`] compares elementwise into a `Tensor<bool>`.)
impl<T, D, S1, S2> PartialEq<Tensor<T, D, S2>> for Tensor<T, D, S1>
where
    T: Element,
    D: HostBackend,
    S1: ReadRepr<T, D>,
    S2: ReadRepr<T, D>,
{
    fn eq(&self, other: &Tensor<T, D, S2>) -> bool {
        self.shape() == other.shape() && self.iter().eq(other.iter())
    }
}

/// A rank-1 tensor owning the vector (no copy).
impl<T: Element> From<Vec<T>> for Tensor<T, Cpu> {
    fn from(data: Vec<T>) -> Self {
        let layout = Layout::contiguous(&[data.len()])
            .unwrap_or_else(|_| unreachable!("a Vec's length is a valid rank-1 shape"));
        Tensor::from_contiguous(data, layout, Cpu)
    }
}

/// A rank-1 tensor holding a copy of the slice.
impl<T: Element> From<&[T]> for Tensor<T, Cpu> {
    fn from(data: &[T]) -> Self {
        Tensor::from(data.to_vec())
    }
}

impl Transfer for Cpu {
    /// The elements in row-major order (a gather for a strided view).
    fn to_host<T: Element>(&self, src: &TensorView<'_, T, Cpu>) -> Result<Vec<T>> {
        src.try_to_vec()
    }

    /// A copy of `data`, reserved fallibly.
    fn host_to_storage<T: Element>(&self, data: &[T]) -> Result<Vec<T>> {
        let mut out = cpu::vec_with_capacity(data.len())?;
        out.extend_from_slice(data);
        Ok(out)
    }

    /// `data` itself.
    fn host_vec_to_storage<T: Element>(&self, data: Vec<T>) -> Result<Vec<T>> {
        Ok(data)
    }
}
