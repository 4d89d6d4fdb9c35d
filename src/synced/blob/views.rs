//! Tensor views of a blob's data and diff, for the pointwise ops: each side, on the CPU or
//! the GPU, borrowed where its state allows (reads where the side is current, writes where it
//! is the head), shaped as the blob.
//!
//! GPU views are on the blob's device handle, which queues on the blob's stream (the one its
//! transitions copy on: the GPU's default stream unless the blob was made with another), so
//! ops on them run in order with the blob's own copies and math.

use super::base::{cpu_prefix, gpu_of, gpu_of_raw, Blob};
use super::side::{BlobSide, OwnedSide};
use crate::device::Cpu;
use crate::element::Element;
use crate::error::Error;
use crate::layout::Layout;
use crate::runtime::Gpu;
use crate::synced::state::{CpuReadable, CpuWritable, GpuReadable, GpuWritable};
use crate::tensor::{TensorView, TensorViewMut};

impl<T: Element, D: BlobSide, G: BlobSide> Blob<T, D, G> {
    /// The blob's shape as a contiguous layout over the first `count()` elements (Caffe's
    /// empty blob, no axes and no elements, is viewed as shape `[0]`).
    fn layout(&self) -> Result<Layout, Error> {
        let dims = self.shape.dims();
        Ok(if self.count() == 0 && dims.is_empty() {
            Layout::contiguous(&[0])?
        } else {
            Layout::contiguous(dims)?
        })
    }

    /// The data as a CPU tensor view of the blob's shape.
    pub fn cpu_data_view(&self) -> Result<TensorView<'_, T, Cpu>, Error>
    where
        D::Base: CpuReadable,
    {
        TensorView::new(
            cpu_prefix(D::raw(&self.data), self.count()),
            self.layout()?,
            &Cpu,
        )
    }

    /// The diff as a CPU tensor view of the blob's shape.
    pub fn cpu_diff_view(&self) -> Result<TensorView<'_, T, Cpu>, Error>
    where
        G::Base: CpuReadable,
    {
        TensorView::new(
            cpu_prefix(G::raw(&self.diff), self.count()),
            self.layout()?,
            &Cpu,
        )
    }

    /// The data as a writable CPU tensor view (the CPU side must be the head).
    pub fn cpu_data_view_mut(&mut self) -> Result<TensorViewMut<'_, T, Cpu>, Error>
    where
        D: OwnedSide,
        D::Base: CpuWritable,
    {
        let layout = self.layout()?;
        TensorViewMut::new(self.cpu_data_mut(), layout, &Cpu)
    }

    /// The diff as a writable CPU tensor view (the CPU side must be the head).
    pub fn cpu_diff_view_mut(&mut self) -> Result<TensorViewMut<'_, T, Cpu>, Error>
    where
        G: OwnedSide,
        G::Base: CpuWritable,
    {
        let layout = self.layout()?;
        TensorViewMut::new(self.cpu_diff_mut(), layout, &Cpu)
    }

    /// The data as a writable CPU tensor view together with the diff as a readable one
    /// (split borrows of the two sides), for a fused in-place step that reads the diff and
    /// writes the data in one pass, e.g. SGD with weight decay:
    ///
    /// ```
    /// use typestate_tensor::synced::{Blob, HeadAtCpu};
    ///
    /// let blob = Blob::from_vec(&[3], vec![1.0f32, 2.0, 3.0]).unwrap();
    /// let mut blob: Blob<f32, HeadAtCpu> = blob.into_cpu_diff_mut().unwrap();
    /// blob.cpu_diff_mut().copy_from_slice(&[0.5, 0.5, 0.5]);
    /// let (lr, wd) = (0.1f32, 0.01f32);
    /// let (mut w, g) = blob.cpu_data_mut_with_diff()?;
    /// w.update(|w| w.clone() - (&g + w * wd) * lr)?; // data -= lr * (diff + wd * data)
    /// assert_eq!(blob.cpu_data()[0], 1.0 - 0.1 * (0.5 + 0.01 * 1.0));
    /// # Ok::<(), typestate_tensor::Error>(())
    /// ```
    ///
    /// The data must be the CPU head (writable, owned: not [`Frozen`](super::Frozen)); the
    /// diff current on the CPU (it may be frozen: it is only read).
    #[allow(clippy::type_complexity)] // the two views
    pub fn cpu_data_mut_with_diff(
        &mut self,
    ) -> Result<(TensorViewMut<'_, T, Cpu>, TensorView<'_, T, Cpu>), Error>
    where
        D: OwnedSide,
        D::Base: CpuWritable,
        G::Base: CpuReadable,
    {
        let layout = self.layout()?;
        let count = self.count();
        let diff = cpu_prefix(G::raw(&self.diff), count);
        let data = match D::owned_mut(&mut self.data).cpu_mut().get_mut(..count) {
            Some(h) => h,
            None => unreachable!("invariant 1: a side holds at least count elements"),
        };
        Ok((
            TensorViewMut::new(data, layout.clone(), &Cpu)?,
            TensorView::new(diff, layout, &Cpu)?,
        ))
    }

    /// The GPU form of [`cpu_data_mut_with_diff`](Self::cpu_data_mut_with_diff): the data
    /// writable on the GPU (the GPU side the head: `HeadAtGpu`, e.g. after
    /// `into_gpu_data_mut()`, which copies nothing for `Synced` data) and the diff current on
    /// the GPU. A fused update through them is one kernel, on the blob's stream.
    #[allow(clippy::type_complexity)] // the two views
    pub fn gpu_data_mut_with_diff(
        &mut self,
    ) -> Result<(TensorViewMut<'_, T, Gpu>, TensorView<'_, T, Gpu>), Error>
    where
        D: OwnedSide,
        D::Base: GpuWritable,
        G::Base: GpuReadable,
    {
        let layout = self.layout()?;
        let diff_raw = G::raw(&self.diff);
        let diff = TensorView::new(gpu_of(diff_raw), layout.clone(), gpu_of_raw(diff_raw))?;
        let (storage, accel) = D::owned_mut(&mut self.data).raw.device_mut_and_accel();
        Ok((TensorViewMut::new(storage, layout, accel.gpu())?, diff))
    }

    /// The diff writable and the data readable on the CPU (split borrows), for a fused step
    /// that writes the diff from both, e.g. Caffe's L2 regularization
    /// `diff = diff + wd * data` in place. The diff must be the CPU head and owned; the data
    /// current on the CPU (it may be frozen).
    #[allow(clippy::type_complexity)] // the two views
    pub fn cpu_diff_mut_with_data(
        &mut self,
    ) -> Result<(TensorViewMut<'_, T, Cpu>, TensorView<'_, T, Cpu>), Error>
    where
        G: OwnedSide,
        G::Base: CpuWritable,
        D::Base: CpuReadable,
    {
        let layout = self.layout()?;
        let count = self.count();
        let data = cpu_prefix(D::raw(&self.data), count);
        let diff = match G::owned_mut(&mut self.diff).cpu_mut().get_mut(..count) {
            Some(h) => h,
            None => unreachable!("invariant 1: a side holds at least count elements"),
        };
        Ok((
            TensorViewMut::new(diff, layout.clone(), &Cpu)?,
            TensorView::new(data, layout, &Cpu)?,
        ))
    }

    /// The GPU form of [`cpu_diff_mut_with_data`](Self::cpu_diff_mut_with_data).
    #[allow(clippy::type_complexity)] // the two views
    pub fn gpu_diff_mut_with_data(
        &mut self,
    ) -> Result<(TensorViewMut<'_, T, Gpu>, TensorView<'_, T, Gpu>), Error>
    where
        G: OwnedSide,
        G::Base: GpuWritable,
        D::Base: GpuReadable,
    {
        let layout = self.layout()?;
        let data_raw = D::raw(&self.data);
        let data = TensorView::new(gpu_of(data_raw), layout.clone(), gpu_of_raw(data_raw))?;
        let (storage, accel) = G::owned_mut(&mut self.diff).raw.device_mut_and_accel();
        Ok((TensorViewMut::new(storage, layout, accel.gpu())?, data))
    }

    /// The data and the diff both writable on the CPU (both sides the CPU head), for a
    /// fused step writing both in one pass (`expr::update((&mut data, &mut diff), ..)`).
    #[allow(clippy::type_complexity)] // the two views
    pub fn cpu_data_diff_mut(
        &mut self,
    ) -> Result<(TensorViewMut<'_, T, Cpu>, TensorViewMut<'_, T, Cpu>), Error>
    where
        D: OwnedSide,
        D::Base: CpuWritable,
        G: OwnedSide,
        G::Base: CpuWritable,
    {
        let layout = self.layout()?;
        let count = self.count();
        let data = D::owned_mut(&mut self.data).cpu_mut().get_mut(..count);
        let diff = G::owned_mut(&mut self.diff).cpu_mut().get_mut(..count);
        let (Some(data), Some(diff)) = (data, diff) else {
            unreachable!("invariant 1: a side holds at least count elements")
        };
        Ok((
            TensorViewMut::new(data, layout.clone(), &Cpu)?,
            TensorViewMut::new(diff, layout, &Cpu)?,
        ))
    }

    /// The GPU form of [`cpu_data_diff_mut`](Self::cpu_data_diff_mut) (both sides the GPU
    /// head).
    #[allow(clippy::type_complexity)] // the two views
    pub fn gpu_data_diff_mut(
        &mut self,
    ) -> Result<(TensorViewMut<'_, T, Gpu>, TensorViewMut<'_, T, Gpu>), Error>
    where
        D: OwnedSide,
        D::Base: GpuWritable,
        G: OwnedSide,
        G::Base: GpuWritable,
    {
        let layout = self.layout()?;
        let (data, a) = D::owned_mut(&mut self.data).raw.device_mut_and_accel();
        let (diff, b) = G::owned_mut(&mut self.diff).raw.device_mut_and_accel();
        Ok((
            TensorViewMut::new(data, layout.clone(), a.gpu())?,
            TensorViewMut::new(diff, layout, b.gpu())?,
        ))
    }

    /// The data as a GPU tensor view of the blob's shape.
    pub fn gpu_data_view(&self) -> Result<TensorView<'_, T, Gpu>, Error>
    where
        D::Base: GpuReadable,
    {
        let raw = D::raw(&self.data);
        TensorView::new(gpu_of(raw), self.layout()?, gpu_of_raw(raw))
    }

    /// The diff as a GPU tensor view of the blob's shape.
    pub fn gpu_diff_view(&self) -> Result<TensorView<'_, T, Gpu>, Error>
    where
        G::Base: GpuReadable,
    {
        let raw = G::raw(&self.diff);
        TensorView::new(gpu_of(raw), self.layout()?, gpu_of_raw(raw))
    }

    /// The data as a writable GPU tensor view (the GPU side must be the head).
    pub fn gpu_data_view_mut(&mut self) -> Result<TensorViewMut<'_, T, Gpu>, Error>
    where
        D: OwnedSide,
        D::Base: GpuWritable,
    {
        let layout = self.layout()?;
        let (storage, accel) = D::owned_mut(&mut self.data).raw.device_mut_and_accel();
        TensorViewMut::new(storage, layout, accel.gpu())
    }

    /// The diff as a writable GPU tensor view (the GPU side must be the head).
    pub fn gpu_diff_view_mut(&mut self) -> Result<TensorViewMut<'_, T, Gpu>, Error>
    where
        G: OwnedSide,
        G::Base: GpuWritable,
    {
        let layout = self.layout()?;
        let (storage, accel) = G::owned_mut(&mut self.diff).raw.device_mut_and_accel();
        TensorViewMut::new(storage, layout, accel.gpu())
    }
}
