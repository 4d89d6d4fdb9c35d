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
use crate::element::{exact_integer, from_exact_integer, Element, FloatElement, Numeric};
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
    /// step)`; the count is `ceil((end - start) / step)` (0 when the step points away from
    /// `end`). Integer types are computed exactly (in `i128`: the count by exact ceiling
    /// division, each value `start + i * step`), so ranges near the type's bounds or past
    /// 2^53 lose nothing; floats compute `start + i * step` in `f64` and convert with
    /// [`Element::from_f64`].
    ///
    /// ```
    /// use typestate_tensor::tensor::Tensor;
    ///
    /// assert_eq!(Tensor::arange_step(1.0f32, 2.0, 0.25)?.to_vec(), [1.0, 1.25, 1.5, 1.75]);
    /// assert_eq!(Tensor::arange_step(5i32, 0, -2)?.to_vec(), [5, 3, 1]);
    /// assert_eq!(Tensor::arange_step(i64::MAX - 2, i64::MAX, 1)?.to_vec(), [i64::MAX - 2, i64::MAX - 1]);
    /// # Ok::<(), typestate_tensor::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`LayoutError::InvalidRange`] for a zero or non-finite step, a non-finite bound, or a
    /// count past `isize::MAX`.
    pub fn arange_step_on(start: T, end: T, step: T, device: &D) -> Result<Self> {
        let invalid = || LayoutError::InvalidRange {
            op: "arange_step",
            start: format!("{start:?}").into(),
            end: format!("{end:?}").into(),
            step: format!("{step:?}").into(),
        };
        if let (Some(a), Some(b), Some(s)) = (
            exact_integer(start),
            exact_integer(end),
            exact_integer(step),
        ) {
            let n = integer_range_len(a, b, s).ok_or_else(invalid)?;
            let mut data = crate::host_vec::vec_with_capacity(n)?;
            // `a + i * s` lies between `a` and `b` for every `i < n`, so it is a `T`.
            data.extend((0..n).map(|i| from_exact_integer(a + i as i128 * s).unwrap_or(T::ZERO)));
            return Self::from_host_values(&[n], data, device);
        }
        let (a, b, s) = (start.to_f64(), end.to_f64(), step.to_f64());
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
    /// on `device` (NumPy's and PyTorch's `linspace`).
    ///
    /// - Floats are computed in `f64` as PyTorch does (`start + i * step` for the first
    ///   half, `end - (steps - 1 - i) * step` for the rest, so both ends are exact) and
    ///   converted with [`Element::from_f64`].
    /// - Integers are computed exactly: value `i` is the exact rational
    ///   `start + i * (end - start) / (steps - 1)` truncated toward zero, which is what
    ///   PyTorch's `f64` formula gives wherever `f64` is exact (`linspace(0, 10, 4)` is
    ///   `[0, 3, 6, 10]`, `linspace(10, 0, 4)` is `[10, 6, 3, 0]`), and stays exact for
    ///   values past 2^53.
    ///
    /// ```
    /// use typestate_tensor::tensor::Tensor;
    ///
    /// assert_eq!(Tensor::linspace(0.0f64, 1.0, 5)?.to_vec(), [0.0, 0.25, 0.5, 0.75, 1.0]);
    /// assert_eq!(Tensor::linspace(10i32, 0, 4)?.to_vec(), [10, 6, 3, 0]);
    /// # Ok::<(), typestate_tensor::Error>(())
    /// ```
    pub fn linspace_on(start: T, end: T, steps: usize, device: &D) -> Result<Self> {
        let mut data = crate::host_vec::vec_with_capacity(steps)?;
        if steps == 1 {
            data.push(start);
        } else if steps > 1 {
            if let (Some(a), Some(b)) = (exact_integer(start), exact_integer(end)) {
                let den = (steps - 1) as i128;
                // Between `a` and `b`, so a `T`.
                data.extend((0..steps).map(|i| {
                    from_exact_integer(lerp_toward_zero(a, b - a, i as i128, den))
                        .unwrap_or(T::ZERO)
                }));
            } else {
                let (a, b) = (start.to_f64(), end.to_f64());
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
        }
        Self::from_host_values(&[steps], data, device)
    }
}

/// The length of the integer range `start, start + step, ...` stopping before `end`:
/// `ceil((end - start) / step)`, 0 when the step points away from `end`, computed exactly.
/// `None` for a zero step or a length past `isize::MAX`.
fn integer_range_len(start: i128, end: i128, step: i128) -> Option<usize> {
    if step == 0 {
        return None;
    }
    let span = end - start;
    if span == 0 || (span > 0) != (step > 0) {
        return Some(0);
    }
    // Both positive here; element values are at most 64-bit, so nothing overflows `i128`.
    let (span, step) = (span.abs(), step.abs());
    let n = (span + step - 1) / step;
    usize::try_from(n)
        .ok()
        .filter(|&n| n <= isize::MAX as usize)
}

/// `start + i * span / den` (an exact rational, `den > 0`, `0 <= i <= den`) truncated toward
/// zero, in `i128` without overflow: `span = q * den + r` splits the product so that no term
/// exceeds `den^2` or `|span|`.
fn lerp_toward_zero(start: i128, span: i128, i: i128, den: i128) -> i128 {
    let (q, r) = (span / den, span % den);
    let ir = i * r; // |ir| < den^2 <= 2^126
    let whole = start + i * q + ir / den;
    let frac = ir % den; // sign of the fractional part `frac / den`, |frac| < den
    if frac < 0 && whole > 0 {
        whole - 1
    } else if frac > 0 && whole < 0 {
        whole + 1
    } else {
        whole
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_range_lengths_are_exact() {
        assert_eq!(integer_range_len(0, 10, 3), Some(4));
        assert_eq!(integer_range_len(10, -3, -4), Some(4));
        assert_eq!(integer_range_len(0, 10, -1), Some(0));
        assert_eq!(integer_range_len(5, 5, 1), Some(0));
        assert_eq!(integer_range_len(0, 1, 0), None);
        let (min, max) = (i128::from(i64::MIN), i128::from(i64::MAX));
        assert_eq!(integer_range_len(min, max, 1), None, "2^64 - 1 elements");
        assert_eq!(integer_range_len(max - 10, max, 1), Some(10));
    }

    #[test]
    fn lerp_truncates_the_exact_value_toward_zero() {
        // (start, span, i, den, expected)
        let cases = [
            (0, 10, 1, 3, 3),    // 3.33
            (10, -10, 1, 3, 6),  // 6.67
            (-10, 10, 1, 3, -6), // -6.67
            (-1, 2, 1, 4, 0),    // -0.5
            (1, -2, 1, 4, 0),    // 0.5
            (5, 0, 2, 7, 5),
        ];
        for (start, span, i, den, want) in cases {
            assert_eq!(
                lerp_toward_zero(start, span, i, den),
                want,
                "{start} + {i} * {span} / {den}"
            );
        }
        let max = i128::from(i64::MAX);
        let big_den = i128::from(i64::MAX);
        // Terms near 2^126 do not overflow.
        assert_eq!(lerp_toward_zero(-max, 2 * max, big_den, big_den), max);
        assert_eq!(
            lerp_toward_zero(-max, 2 * max, big_den - 1, big_den),
            max - 2
        );
    }
}
