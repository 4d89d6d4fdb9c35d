//! The mask side of the indexing ops: `masked_fill`, `masked_select`, `masked_scatter` and
//! `nonzero`. The three whose result size depends on the data (`nonzero`, `masked_select`,
//! `masked_scatter`) read the mask on the host to find the positions (on the GPU a copy and
//! a synchronisation, as PyTorch's `nonzero` synchronises too), then gather or scatter on the
//! device.

use super::check::{mismatch, run_gather};
use super::scatter::{assign, Owner, Values};
use super::IndexBackend;
use crate::element::Element;
use crate::error::{LayoutError, Result};
use crate::layout::{broadcast_shapes, contiguous_strides};
use crate::tensor::repr::{ReadRepr, WriteRepr};
use crate::tensor::{AsView, Backend, Tensor, TensorView};

/// The row-major positions of the `true` elements of `mask` (broadcast to `shape`), as an
/// `i64` tensor `[k]` on `device`.
fn positions<D: Backend>(
    mask: &TensorView<'_, bool, D>,
    shape: &[usize],
    device: &D,
) -> Result<Tensor<i64, D>> {
    let m = mask.broadcast_to(shape)?;
    let host = device.to_host(&m)?;
    let flat: Vec<i64> = host
        .iter()
        .enumerate()
        .filter(|(_, &b)| b)
        .map(|(i, _)| i as i64)
        .collect();
    Tensor::from_slice_on(&[flat.len()], &flat, device)
}

/// `v` as a 1-D row-major tensor (a view where the strides allow, else a copy).
fn flat<T: Element, D: Backend>(v: &TensorView<'_, T, D>) -> Result<Tensor<T, D>> {
    Ok(v.contiguous()?.into_reshape(&[v.numel()])?)
}

impl<T: Element, D: Backend, S: ReadRepr<T, D>> Tensor<T, D, S> {
    /// PyTorch's `self.masked_fill(mask, value)`: `value` where `mask` is true, `self`
    /// elsewhere (the two broadcast), as a new row-major tensor.
    ///
    /// # Errors
    /// [`LayoutError::BroadcastMismatch`](crate::error::LayoutError) for shapes that do not
    /// broadcast, the device's errors.
    pub fn masked_fill(&self, mask: &impl AsView<bool, D>, value: T) -> Result<Tensor<T, D>> {
        let v = Tensor::full_on(&[], value, self.device())?;
        Tensor::where_cond(&mask.view(), &v, &self.view())
    }

    /// PyTorch's `torch.nonzero(self)`: the indices of the non-zero (`true`) elements, as an
    /// `i64` tensor `[k, rank]` in row-major order. The positions are found on the host.
    ///
    /// # Errors
    /// The device's errors.
    pub fn nonzero(&self) -> Result<Tensor<i64, D>> {
        let device = self.device();
        let zero = Tensor::full_on(&[], T::ZERO, device)?;
        let mask = self.view().ne(&zero)?;
        let host = device.to_host(&mask.view())?;
        let strides = contiguous_strides(self.shape());
        let rank = self.rank();
        let mut out = Vec::new();
        for (i, _) in host.iter().enumerate().filter(|(_, &b)| b) {
            let mut rem = i;
            for &s in &strides {
                let s = s.max(1) as usize;
                out.push((rem / s) as i64);
                rem %= s;
            }
        }
        // A 0-d tensor has one position, with no coordinates.
        let k = out
            .len()
            .checked_div(rank)
            .unwrap_or_else(|| host.iter().filter(|&&b| b).count());
        Tensor::from_slice_on(&[k, rank], &out, device)
    }
}

impl<T: Element, D: IndexBackend<T>, S: ReadRepr<T, D>> Tensor<T, D, S> {
    /// PyTorch's `self.masked_select(mask)`: the elements where `mask` is true (the two
    /// broadcast), in row-major order, as a 1-D tensor.
    ///
    /// # Errors
    /// Shapes that do not broadcast, the device's errors.
    pub fn masked_select(&self, mask: &impl AsView<bool, D>) -> Result<Tensor<T, D>> {
        const OP: &str = "masked_select";
        let mask = mask.view();
        let shape = broadcast_shapes(OP, self.shape(), mask.shape())?;
        let device = self.device();
        device.check_device(OP, mask.storage())?;
        let idx = positions(&mask, &shape, device)?;
        let src = flat(&self.view().broadcast_to(&shape)?)?;
        run_gather(OP, src.view(), idx.view(), 0, false)
    }

    /// PyTorch's `self.masked_scatter(mask, source)`: a copy of `self` whose elements where
    /// `mask` (broadcast to `self`'s shape) is true take `source`'s first elements, in
    /// row-major order.
    ///
    /// # Errors
    /// [`LayoutError::LengthMismatch`] when `source` has fewer elements than `mask` has true
    /// values; shapes that do not broadcast; the device's errors.
    pub fn masked_scatter(
        &self,
        mask: &impl AsView<bool, D>,
        source: &impl AsView<T, D>,
    ) -> Result<Tensor<T, D>> {
        const OP: &str = "masked_scatter";
        let mask = mask.view();
        let device = self.device();
        device.check_device(OP, mask.storage())?;
        let idx = positions(&mask, self.shape(), device)?;
        let k = idx.numel();
        let source = source.view();
        if source.numel() < k {
            return Err(LayoutError::LengthMismatch {
                op: OP,
                shape: self.shape().to_vec(),
                expected: k,
                got: source.numel(),
            }
            .into());
        }
        let src = flat(&source)?;
        let mut out = flat(&self.view())?;
        let values = Values::Src(src.view().narrow(0, 0, k)?);
        assign(
            OP,
            (out.view_mut(), Owner::Op),
            0,
            idx.view(),
            values,
            false,
            false,
        )?;
        Ok(out.into_reshape(self.shape())?)
    }
}

impl<T: Element, D: IndexBackend<T>, S: WriteRepr<T, D>> Tensor<T, D, S> {
    /// PyTorch's `self.masked_fill_(mask, value)`: `value` where `mask` (broadcast to `self`'s
    /// shape) is true.
    ///
    /// # Errors
    /// As [`Tensor::masked_fill`].
    pub fn masked_fill_(&mut self, mask: &impl AsView<bool, D>, value: T) -> Result<()> {
        let mask = mask.view();
        let filled = self.masked_fill(&mask.broadcast_to(self.shape())?, value)?;
        if filled.shape() != self.shape() {
            return Err(mismatch("masked_fill_", self.shape(), filled.shape()));
        }
        self.copy_from(&filled)
    }

    /// PyTorch's `self.masked_scatter_(mask, source)`: [`Tensor::masked_scatter`] in place.
    ///
    /// # Errors
    /// As [`Tensor::masked_scatter`].
    pub fn masked_scatter_(
        &mut self,
        mask: &impl AsView<bool, D>,
        source: &impl AsView<T, D>,
    ) -> Result<()> {
        let out = self.masked_scatter(mask, source)?;
        self.copy_from(&out)
    }
}
