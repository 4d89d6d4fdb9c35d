//! Constructors on every device (`ones_on`, `eye_on`, `arange_step_on`, `linspace_on`,
//! `rand_on`, `randn_on`, `from_slice_on`), the `*_like` constructors, and [`Tensor::item`].
//!
//! Constant fills run on the device ([`Tensor::full_on`], a fill kernel on a GPU). Values
//! that depend on the index (ranges, random numbers) are computed on the host and uploaded
//! ([`Transfer`](super::Transfer)), so a GPU tensor holds exactly the CPU's values. The CPU shorthands
//! (`Tensor::ones`, `Tensor::eye`, `Tensor::linspace`, `Tensor::rand`, ...) call these with
//! [`Cpu`](crate::device::Cpu).

use super::random;
use super::{ReadRepr, Tensor};
use crate::element::{Element, FloatElement, Numeric};
use crate::error::{LayoutError, Result};
use crate::layout::Layout;
use crate::tensor::Backend;

impl<T: Element, D: Backend> Tensor<T, D> {
    /// A new row-major tensor of ones (`true` for `bool`) on `device`.
    pub fn ones_on(shape: &[usize], device: &D) -> Result<Self> {
        Self::full_on(shape, T::ONE, device)
    }

    /// The `n x n` identity matrix on `device`: zeros, then the diagonal (a strided view of
    /// stride `n + 1`) filled with one.
    pub fn eye_on(n: usize, device: &D) -> Result<Self> {
        let mut t = Self::zeros_on(&[n, n], device)?;
        // `n * n` fits `isize` (checked by `zeros_on`), so `n + 1` does.
        let diagonal = t
            .view_mut()
            .relayout(|_| Layout::new(&[n], &[n as isize + 1], 0))?;
        let mut diagonal = diagonal;
        diagonal.fill_(T::ONE)?;
        Ok(t)
    }
}

impl<T: Element, D: Backend> Tensor<T, D> {
    /// A row-major tensor of `shape` on `device` holding a copy of `data` (whose length must
    /// be the element count): `Tensor::from_vec` for any device.
    ///
    /// # Errors
    /// [`LayoutError::LengthMismatch`]; the device's allocation or copy error.
    pub fn from_slice_on(shape: &[usize], data: &[T], device: &D) -> Result<Self> {
        let layout = Layout::contiguous(shape)?;
        if layout.numel() != data.len() {
            return Err(LayoutError::LengthMismatch {
                op: "from_slice_on",
                shape: shape.to_vec(),
                expected: layout.numel(),
                got: data.len(),
            }
            .into());
        }
        let storage = device.host_to_storage(data)?;
        Ok(Tensor::from_contiguous(storage, layout, device.clone()))
    }

    /// A row-major tensor of `shape` on `device` made from host values already checked to
    /// number `shape`'s elements.
    fn from_host_values(shape: &[usize], data: Vec<T>, device: &D) -> Result<Self> {
        let layout = Layout::contiguous(shape)?;
        debug_assert_eq!(layout.numel(), data.len());
        let storage = device.host_vec_to_storage(data)?;
        Ok(Tensor::from_contiguous(storage, layout, device.clone()))
    }
}

impl<T: Numeric, D: Backend> Tensor<T, D> {
    /// `start, start + step, start + 2 step, ...` while below `end` (above it for a negative
    /// step), as a rank-1 tensor on `device`: NumPy's and PyTorch's `arange(start, end,
    /// step)`. Each value is `start + i * step` computed in `f64` and converted with
    /// [`Element::from_f64`]; the count is `ceil((end - start) / step)` (0 when the step
    /// points away from `end`).
    ///
    /// ```
    /// use typestate_tensor::tensor::Tensor;
    ///
    /// assert_eq!(Tensor::arange_step(1.0f32, 2.0, 0.25)?.to_vec(), [1.0, 1.25, 1.5, 1.75]);
    /// assert_eq!(Tensor::arange_step(5i32, 0, -2)?.to_vec(), [5, 3, 1]);
    /// # Ok::<(), typestate_tensor::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`LayoutError::InvalidRange`] for a zero or non-finite step, a non-finite bound, or a
    /// count past `isize::MAX`.
    pub fn arange_step_on(start: T, end: T, step: T, device: &D) -> Result<Self> {
        let (a, b, s) = (start.to_f64(), end.to_f64(), step.to_f64());
        let invalid = || LayoutError::InvalidRange {
            op: "arange_step",
            start: format!("{start:?}").into(),
            end: format!("{end:?}").into(),
            step: format!("{step:?}").into(),
        };
        if !(a.is_finite() && b.is_finite() && s.is_finite()) || s == 0.0 {
            return Err(invalid().into());
        }
        let count = ((b - a) / s).ceil().max(0.0);
        if !count.is_finite() || count > isize::MAX as f64 {
            return Err(invalid().into());
        }
        let n = count as usize;
        let mut data = crate::host_vec::vec_with_capacity(n)?;
        data.extend((0..n).map(|i| T::from_f64(a + i as f64 * s)));
        Self::from_host_values(&[n], data, device)
    }

    /// `steps` values evenly spaced from `start` to `end`, both included, as a rank-1 tensor
    /// on `device` (NumPy's and PyTorch's `linspace`). Computed in `f64` as PyTorch does
    /// (`start + i * step` for the first half, `end - (steps - 1 - i) * step` for the rest,
    /// so both ends are exact) and converted with [`Element::from_f64`].
    ///
    /// ```
    /// use typestate_tensor::tensor::Tensor;
    ///
    /// assert_eq!(Tensor::linspace(0.0f64, 1.0, 5)?.to_vec(), [0.0, 0.25, 0.5, 0.75, 1.0]);
    /// # Ok::<(), typestate_tensor::Error>(())
    /// ```
    pub fn linspace_on(start: T, end: T, steps: usize, device: &D) -> Result<Self> {
        let (a, b) = (start.to_f64(), end.to_f64());
        let mut data = crate::host_vec::vec_with_capacity(steps)?;
        if steps == 1 {
            data.push(start);
        } else if steps > 1 {
            let step = (b - a) / (steps - 1) as f64;
            let half = steps / 2;
            data.extend((0..steps).map(|i| {
                let v = if i < half {
                    a + i as f64 * step
                } else {
                    b - (steps - 1 - i) as f64 * step
                };
                T::from_f64(v)
            }));
        }
        Self::from_host_values(&[steps], data, device)
    }
}

impl<T: FloatElement, D: Backend> Tensor<T, D> {
    /// Uniform values in `[0, 1)` on `device`, from the Philox4x32-10 stream of `seed`
    /// ([`random`] gives the exact layout): the same values for the same
    /// seed and shape on every run and every device.
    ///
    /// ```
    /// use typestate_tensor::tensor::Tensor;
    ///
    /// let a = Tensor::<f32>::rand(&[2, 3], 7)?;
    /// assert_eq!(a, Tensor::rand(&[2, 3], 7)?); // deterministic
    /// assert!(a.iter().all(|&x| (0.0..1.0).contains(&x)));
    /// # Ok::<(), typestate_tensor::Error>(())
    /// ```
    pub fn rand_on(shape: &[usize], seed: u64, device: &D) -> Result<Self> {
        let n = Layout::contiguous(shape)?.numel();
        Self::from_host_values(shape, random::uniform(n, seed)?, device)
    }

    /// Standard normal values (mean 0, standard deviation 1) on `device`, from the
    /// Philox4x32-10 stream of `seed` by Box-Muller ([`random`]): the same
    /// values for the same seed and shape on every run and every device. Scale and shift
    /// with operators: `(Tensor::randn(&shape, seed)? * std)? + mean`.
    pub fn randn_on(shape: &[usize], seed: u64, device: &D) -> Result<Self> {
        let n = Layout::contiguous(shape)?.numel();
        Self::from_host_values(shape, random::normal(n, seed)?, device)
    }
}

/// Constructors shaped like an existing tensor, and single-element reads, written once for
/// every representation and device.
impl<T: Element, D: Backend, S: ReadRepr<T, D>> Tensor<T, D, S> {
    /// A row-major tensor of zeros with this shape, on this device.
    pub fn zeros_like(&self) -> Result<Tensor<T, D>> {
        Tensor::zeros_on(self.shape(), self.device())
    }

    /// A row-major tensor of ones with this shape, on this device.
    pub fn ones_like(&self) -> Result<Tensor<T, D>> {
        Tensor::ones_on(self.shape(), self.device())
    }

    /// A row-major tensor of `value` with this shape, on this device.
    pub fn full_like(&self, value: T) -> Result<Tensor<T, D>> {
        Tensor::full_on(self.shape(), value, self.device())
    }
}
