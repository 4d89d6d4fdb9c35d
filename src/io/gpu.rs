//! Loading tensors of a safetensors file straight to a GPU, staged through pinned host
//! memory, several in flight.
//!
//! Each tensor is decoded from the file's bytes (a map, for a mapped file) into a
//! [`PinnedBuffer`] from the GPU's caching pinned-host allocator, then copied to new device
//! memory by the DMA engine on the caller's stream, asynchronously: while tensor `k` crosses
//! the bus, the host fills the buffer of tensor `k + 1`. At most `IN_FLIGHT` (2) buffers are
//! held at once (double buffering): before a third is filled, the oldest copy is waited for
//! and its buffer goes back to the allocator, which hands the same block out again.

use std::collections::VecDeque;

use super::bytes;
use super::safetensors::SafetensorsFile;
use crate::element::Element;
use crate::error::Result;
use crate::layout::Layout;
use crate::runtime::{Gpu, GpuStorage, PinnedBuffer, Stream};
use crate::tensor::Tensor;

/// Staging buffers held at once by [`SafetensorsFile::to_gpu`].
pub(crate) const IN_FLIGHT: usize = 2;

impl SafetensorsFile {
    /// Copies the tensors `names` (all of element type `T`) to `gpu`, on `stream`, staged
    /// through pinned memory with two tensors in flight (double buffering); returns them in the order
    /// of `names`. Returns once the last copy is queued: each tensor orders every later use
    /// after its copy, on any stream (docs/STREAMS.md). Errors as [`tensor`](Self::tensor)
    /// (a missing name, another type), or the GPU's; the tensors already made are dropped.
    ///
    /// For a file of mixed types, call it once per type ([`tensors`](Self::tensors) lists
    /// each tensor's type).
    pub fn to_gpu<T: Element>(
        &self,
        names: &[&str],
        gpu: &Gpu,
        stream: &Stream,
    ) -> Result<Vec<Tensor<T, Gpu>>> {
        // Check every name and type before the first copy, so a bad name costs no transfer.
        let mut entries = Vec::with_capacity(names.len());
        for &name in names {
            let (info, data) = self.checked::<T>(name)?;
            entries.push((name, Layout::contiguous(&info.shape)?, data));
        }
        let mut staged = VecDeque::with_capacity(IN_FLIGHT);
        entries
            .into_iter()
            .map(|(name, layout, data)| self.stage(name, layout, data, gpu, stream, &mut staged))
            .collect()
    }

    /// Decodes one tensor into a pinned buffer and queues its copy; `staged` holds the
    /// buffers of the copies that may still run.
    fn stage<T: Element>(
        &self,
        name: &str,
        layout: Layout,
        data: &[u8],
        gpu: &Gpu,
        stream: &Stream,
        staged: &mut VecDeque<PinnedBuffer<T>>,
    ) -> Result<Tensor<T, Gpu>> {
        if staged.len() >= IN_FLIGHT {
            if let Some(oldest) = staged.pop_front() {
                oldest.wait()?;
            }
        }
        let mut pinned = PinnedBuffer::<T>::zeros(gpu, layout.numel())?;
        bytes::decode_into(data, false, pinned.as_mut_slice()?, self.path(), name)?;
        // Zero-filled rather than uninitialised, to keep this module free of `unsafe`: the
        // memset runs at device bandwidth, far faster than the copy after it.
        let mut storage = GpuStorage::<T>::zeros(gpu, layout.numel(), stream)?;
        // The buffer tracks the copy itself (its host access and its free wait for it), so the
        // guard is released and the host goes on to the next tensor.
        storage.copy_from_pinned_async(&pinned, stream)?.detach();
        let tensor = Tensor::from_parts(storage, layout, gpu.clone()).map_err(|h| h.error)?;
        staged.push_back(pinned);
        Ok(tensor)
    }

    /// Copies the tensor `name` to `gpu` on its default stream, staged through pinned memory
    /// ([`to_gpu`](Self::to_gpu) for several).
    pub fn tensor_gpu<T: Element>(&self, name: &str, gpu: &Gpu) -> Result<Tensor<T, Gpu>> {
        let (info, data) = self.checked::<T>(name)?;
        let layout = Layout::contiguous(&info.shape)?;
        let mut staged = VecDeque::with_capacity(1);
        self.stage(name, layout, data, gpu, gpu.default_stream(), &mut staged)
    }
}
