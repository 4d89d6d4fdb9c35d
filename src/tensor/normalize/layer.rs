//! `layer_norm`, `rms_norm` and `group_norm` (`torch.nn.functional`'s).

use crate::element::FloatElement;
use crate::error::{LayoutError, Result};
use crate::tensor::{AsViewMut, ReadRepr, Tensor, TensorView};

use super::engine::{NormalizeBackend, RowOp};
use super::rows::{rows_into, rows_new};

/// A weight or bias flattened to `[n]` with stride 1: a view where it already is, else a
/// copy.
enum Param<'a, T: FloatElement, D: NormalizeBackend<T>> {
    View(TensorView<'a, T, D>),
    Copy(Tensor<T, D>),
}

impl<'a, T: FloatElement, D: NormalizeBackend<T>> Param<'a, T, D> {
    /// `p`, checked to have shape `expected`, as `[n]`.
    fn new(
        op: &'static str,
        param: &'static str,
        p: TensorView<'a, T, D>,
        expected: &[usize],
        device: &D,
    ) -> Result<Self> {
        if p.shape() != expected {
            return Err(LayoutError::NormParamShape {
                op,
                param,
                expected: expected.to_vec(),
                got: p.shape().to_vec(),
            }
            .into());
        }
        device.check_device(op, p.storage())?;
        let n: usize = expected.iter().product();
        match p.reshape(&[n]) {
            Ok(v) if n <= 1 || v.strides()[0] == 1 => Ok(Param::View(v)),
            _ => Ok(Param::Copy(p.reshape_copy(&[n])?)),
        }
    }

    fn view(&self) -> TensorView<'_, T, D> {
        match self {
            Param::View(v) => v.clone(),
            Param::Copy(t) => t.view(),
        }
    }
}

/// The trailing dims `normalized_shape` of `shape`, checked.
fn trailing(op: &'static str, shape: &[usize], normalized_shape: &[usize]) -> Result<Vec<usize>> {
    let (r, k) = (shape.len(), normalized_shape.len());
    if k == 0 || k > r || shape[r - k..] != *normalized_shape {
        return Err(LayoutError::NormalizedShapeMismatch {
            op,
            shape: shape.to_vec(),
            normalized_shape: normalized_shape.to_vec(),
        }
        .into());
    }
    Ok((r - k..r).collect())
}

impl<T: FloatElement, D: NormalizeBackend<T>, S: ReadRepr<T, D>> Tensor<T, D, S> {
    /// Layer normalisation over the trailing dims `normalized_shape`
    /// (`F.layer_norm(x, normalized_shape, weight, bias, eps)`): `(x − mean) / sqrt(var +
    /// eps) · weight + bias`, the mean and the biased variance taken over those dims;
    /// `weight` and `bias` have shape `normalized_shape`. PyTorch's default `eps` is `1e-5`.
    ///
    /// ```
    /// use typestate_tensor::tensor::Tensor;
    ///
    /// let x = Tensor::from_vec(&[2, 2], vec![1.0f64, 3.0, -2.0, 2.0])?;
    /// let y = x.layer_norm(&[2], None, None, 0.0)?;
    /// assert_eq!(y.to_vec(), [-1.0, 1.0, -1.0, 1.0]);
    /// # Ok::<(), typestate_tensor::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`LayoutError::NormalizedShapeMismatch`], [`LayoutError::NormParamShape`], the
    /// device's errors.
    pub fn layer_norm(
        &self,
        normalized_shape: &[usize],
        weight: Option<TensorView<'_, T, D>>,
        bias: Option<TensorView<'_, T, D>>,
        eps: f64,
    ) -> Result<Tensor<T, D>> {
        let op = "layer_norm";
        let dims = trailing(op, self.shape(), normalized_shape)?;
        let device = self.device();
        let w = weight
            .map(|w| Param::new(op, "weight", w, normalized_shape, device))
            .transpose()?;
        let b = bias
            .map(|b| Param::new(op, "bias", b, normalized_shape, device))
            .transpose()?;
        let job = RowOp::LayerNorm { eps };
        let (w, b) = (w.as_ref().map(Param::view), b.as_ref().map(Param::view));
        rows_new(job, self.view(), &dims, w, b)
    }

    /// [`layer_norm`](Self::layer_norm) written into `out`, any writable view of this shape.
    ///
    /// # Errors
    /// As [`layer_norm`](Self::layer_norm), and [`LayoutError::ShapeMismatch`] for an `out`
    /// of another shape.
    pub fn layer_norm_into(
        &self,
        normalized_shape: &[usize],
        weight: Option<TensorView<'_, T, D>>,
        bias: Option<TensorView<'_, T, D>>,
        eps: f64,
        out: &mut impl AsViewMut<T, D>,
    ) -> Result<()> {
        let op = "layer_norm";
        let dims = trailing(op, self.shape(), normalized_shape)?;
        let device = self.device();
        let w = weight
            .map(|w| Param::new(op, "weight", w, normalized_shape, device))
            .transpose()?;
        let b = bias
            .map(|b| Param::new(op, "bias", b, normalized_shape, device))
            .transpose()?;
        let job = RowOp::LayerNorm { eps };
        let (w, b) = (w.as_ref().map(Param::view), b.as_ref().map(Param::view));
        rows_into(op, job, self.view(), &dims, w, b, out)
    }

    /// RMS normalisation over the trailing dims `normalized_shape`
    /// (`F.rms_norm(x, normalized_shape, weight, eps)`): `x / sqrt(mean(x²) + eps) ·
    /// weight`; `eps` `None` is the type's machine epsilon (`torch.finfo(dtype).eps`), as in
    /// PyTorch.
    ///
    /// # Errors
    /// As [`layer_norm`](Self::layer_norm).
    pub fn rms_norm(
        &self,
        normalized_shape: &[usize],
        weight: Option<TensorView<'_, T, D>>,
        eps: Option<f64>,
    ) -> Result<Tensor<T, D>> {
        let op = "rms_norm";
        let dims = trailing(op, self.shape(), normalized_shape)?;
        let w = weight
            .map(|w| Param::new(op, "weight", w, normalized_shape, self.device()))
            .transpose()?;
        let eps = eps.unwrap_or_else(|| crate::element::Element::to_f64(T::epsilon()));
        rows_new(
            RowOp::RmsNorm { eps },
            self.view(),
            &dims,
            w.as_ref().map(Param::view),
            None,
        )
    }

    /// [`rms_norm`](Self::rms_norm) written into `out`, any writable view of this shape.
    ///
    /// # Errors
    /// As [`layer_norm_into`](Self::layer_norm_into).
    pub fn rms_norm_into(
        &self,
        normalized_shape: &[usize],
        weight: Option<TensorView<'_, T, D>>,
        eps: Option<f64>,
        out: &mut impl AsViewMut<T, D>,
    ) -> Result<()> {
        let op = "rms_norm";
        let dims = trailing(op, self.shape(), normalized_shape)?;
        let w = weight
            .map(|w| Param::new(op, "weight", w, normalized_shape, self.device()))
            .transpose()?;
        let eps = eps.unwrap_or_else(|| crate::element::Element::to_f64(T::epsilon()));
        let job = RowOp::RmsNorm { eps };
        rows_into(
            op,
            job,
            self.view(),
            &dims,
            w.as_ref().map(Param::view),
            None,
            out,
        )
    }

    /// Group normalisation of an input `[N, C, *]` (`F.group_norm(x, num_groups, weight,
    /// bias, eps)`): the channels split into `num_groups` groups, each `(sample, group)`
    /// normalised as [`layer_norm`](Self::layer_norm) over its channels and spatial
    /// positions, then `· weight[c] + bias[c]` per channel (`weight`, `bias`: `[C]`).
    /// PyTorch's default `eps` is `1e-5`. The affine part runs as pointwise passes after the
    /// normalisation.
    ///
    /// # Errors
    /// [`LayoutError::GroupNormGroups`] for groups that do not divide `C` (or an input of
    /// rank < 2), [`LayoutError::NormParamShape`], the device's errors.
    pub fn group_norm(
        &self,
        num_groups: usize,
        weight: Option<TensorView<'_, T, D>>,
        bias: Option<TensorView<'_, T, D>>,
        eps: f64,
    ) -> Result<Tensor<T, D>> {
        let op = "group_norm";
        let shape = self.shape().to_vec();
        if shape.len() < 2 || num_groups == 0 || !shape[1].is_multiple_of(num_groups) {
            return Err(LayoutError::GroupNormGroups {
                op,
                num_groups,
                shape,
            }
            .into());
        }
        let c = shape[1];
        let device = self.device();
        let w = weight
            .map(|w| Param::new(op, "weight", w, &[c], device))
            .transpose()?;
        let b = bias
            .map(|b| Param::new(op, "bias", b, &[c], device))
            .transpose()?;
        let rest: usize = shape[2..].iter().product::<usize>() * (c / num_groups);
        let grouped = [shape[0], num_groups, rest];
        let job = RowOp::LayerNorm { eps };
        let whole = self.view();
        let y = match whole.reshape(&grouped) {
            Ok(v) => rows_new(job, v, &[2], None, None)?,
            Err(_) => {
                let copy = whole.reshape_copy(&grouped)?;
                rows_new(job, copy.view(), &[2], None, None)?
            }
        };
        // `rows_new` over the last dim returns a row-major tensor.
        let mut y = y.into_reshape(&shape)?;
        let mut per_channel = vec![1; shape.len() - 1];
        per_channel[0] = c;
        if let Some(w) = &w {
            y.mul_(&w.view().reshape(&per_channel)?)?;
        }
        if let Some(b) = &b {
            y.add_(&b.view().reshape(&per_channel)?)?;
        }
        Ok(y)
    }
}
