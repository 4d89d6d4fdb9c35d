//! `unique` (over the flattened tensor) and `searchsorted`.

use super::engine::SortBackend;
use super::key::SortElement;
use super::rows::Rows;
use crate::error::{LayoutError, Result};
use crate::layout::Layout;
use crate::tensor::{AsView, ReadRepr, Tensor, TensorViewMut};

/// The result of [`Tensor::unique`]: the distinct values, and on request the inverse map and
/// the counts (`torch.unique`'s tuple).
#[derive(Debug)]
pub struct Unique<T: SortElement, D: SortBackend<T>> {
    /// The distinct values, 1-D: ascending (NaNs last) when asked `sorted`; this crate
    /// always sorts them, which `sorted = false` permits.
    pub values: Tensor<T, D>,
    /// For each input element, the position of its value in `values`, in the input's shape
    /// (`return_inverse`).
    pub inverse: Option<Tensor<i64, D>>,
    /// How many input elements equal each value (`return_counts`), 1-D like `values`.
    pub counts: Option<Tensor<i64, D>>,
}

impl<T: SortElement, D: SortBackend<T>, S: ReadRepr<T, D>> Tensor<T, D, S> {
    /// The distinct elements of the flattened tensor (`torch.unique(x, sorted,
    /// return_inverse, return_counts)` without `dim`), sorted; `-0.0` and `0.0` are one value
    /// (the first in the sorted order is kept), and every NaN is its own value (NaN is not
    /// equal to itself), as PyTorch.
    ///
    /// The elements are sorted on the device; finding the runs reads the sorted values on the
    /// host, since the result's size depends on them (PyTorch's CUDA `unique` synchronises
    /// too), and the results go back to the device.
    ///
    /// ```
    /// use typestate_tensor::tensor::Tensor;
    ///
    /// let x = Tensor::from_vec(&[2, 3], vec![3i32, 1, 3, 2, 1, 3])?;
    /// let u = x.unique(true, true, true)?;
    /// assert_eq!(u.values.to_vec(), [1, 2, 3]);
    /// assert_eq!(u.inverse.unwrap().to_vec(), [2i64, 0, 2, 1, 0, 2]);
    /// assert_eq!(u.counts.unwrap().to_vec(), [2i64, 1, 3]);
    /// # Ok::<(), typestate_tensor::Error>(())
    /// ```
    ///
    /// # Errors
    /// The device's errors.
    pub fn unique(
        &self,
        sorted: bool,
        return_inverse: bool,
        return_counts: bool,
    ) -> Result<Unique<T, D>> {
        let _ = sorted; // always sorted
        let device = self.device();
        let flat = self.view().contiguous()?.into_reshape(&[self.numel()]);
        let flat = flat.map_err(|h| h.into_parts().1)?;
        let (values, indices) = flat.sort(0, false, true)?;
        let values = device.to_host(&values.view())?;
        let indices = device.to_host(&indices.view())?;
        let mut uniq: Vec<T> = Vec::new();
        let mut counts: Vec<i64> = Vec::new();
        let mut inverse = vec![0i64; values.len()];
        let mut last_key = None;
        for (&v, &at) in values.iter().zip(&indices) {
            let key = v.sort_key();
            // NaN is never equal to anything, itself included.
            let same = last_key == Some(key) && !is_nan(v);
            if !same {
                uniq.push(v);
                counts.push(0);
                last_key = Some(key);
            }
            if let Some(c) = counts.last_mut() {
                *c += 1;
            }
            // `at` is an index into the flattened input (the sort's contract: in `0..n`).
            if let Some(slot) = usize::try_from(at).ok().and_then(|a| inverse.get_mut(a)) {
                *slot = (uniq.len() - 1) as i64;
            }
        }
        let upload = |data: Vec<i64>, shape: &[usize]| -> Result<Tensor<i64, D>> {
            let storage = device.host_vec_to_storage(data)?;
            Ok(Tensor::from_contiguous(
                storage,
                Layout::contiguous(shape)?,
                device.clone(),
            ))
        };
        let n = uniq.len();
        let values = Tensor::from_contiguous(
            device.host_vec_to_storage(uniq)?,
            Layout::contiguous(&[n])?,
            device.clone(),
        );
        Ok(Unique {
            values,
            inverse: if return_inverse {
                Some(upload(inverse, self.shape())?)
            } else {
                None
            },
            counts: if return_counts {
                Some(upload(counts, &[n])?)
            } else {
                None
            },
        })
    }

    /// For each element `v` of `values`, where it would be inserted into this 1-D sorted
    /// sequence to keep it sorted (`torch.searchsorted(self, values, right=right)`): the
    /// first index `i` with `self[i] >= v` (or `self[i] > v` with `right`), the length when
    /// there is none (a NaN `v` included). `i64`, in `values`' shape. The sequence is not
    /// checked for order (PyTorch does not either: an unsorted one gives unspecified
    /// positions, never an error or a read outside it).
    ///
    /// ```
    /// use typestate_tensor::tensor::Tensor;
    ///
    /// let seq = Tensor::from_vec(&[5], vec![1.0f32, 3.0, 5.0, 7.0, 9.0])?;
    /// let v = Tensor::from_vec(&[2, 2], vec![3.0f32, 6.0, 9.0, 0.0])?;
    /// assert_eq!(seq.searchsorted(&v, false)?.to_vec(), [1i64, 3, 4, 0]);
    /// assert_eq!(seq.searchsorted(&v, true)?.to_vec(), [2i64, 3, 5, 0]);
    /// # Ok::<(), typestate_tensor::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`LayoutError::SortedSequenceShape`] when this tensor is not 1-D; the device's errors.
    pub fn searchsorted(&self, values: &impl AsView<T, D>, right: bool) -> Result<Tensor<i64, D>> {
        let values = values.view();
        if self.rank() != 1 {
            return Err(LayoutError::SortedSequenceShape {
                op: "searchsorted",
                sorted: self.shape().to_vec(),
                values: values.shape().to_vec(),
            }
            .into());
        }
        let device = self.device();
        let seq = Rows::new("searchsorted", self.view(), 0)?;
        let seq = seq.view()?;
        let seq = seq.reshape(&[self.numel()])?;
        let count = values.numel();
        let vals = if values.layout().is_contiguous() {
            None
        } else {
            Some(values.contiguous()?)
        };
        let vals_view = match &vals {
            Some(t) => t.view(),
            None => values.clone(),
        };
        let vals_view = vals_view.reshape(&[count])?;
        let layout = Layout::contiguous(&[count])?;
        // SAFETY: `SortEngine::searchsorted` returning `Ok` wrote every element of `out`'s
        // row-major layout, which covers the storage (its contract). On error the storage is
        // dropped unread.
        let mut storage = unsafe { device.alloc_uninit::<i64>(count)? };
        {
            let mut out = TensorViewMut::new(D::slice_mut(&mut storage), layout, device)?;
            device.searchsorted(&seq, &vals_view, right, &mut out)?;
        }
        Ok(Tensor::from_contiguous(
            storage,
            Layout::contiguous(values.shape())?,
            device.clone(),
        ))
    }
}

fn is_nan<T: SortElement>(v: T) -> bool {
    // Only NaN is unequal to itself.
    v.partial_cmp(&v).is_none()
}
