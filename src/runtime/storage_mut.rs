//! [`GpuStorageMut`]: write access to device memory that someone else owns, without the
//! power to replace it.
//!
//! A `&mut GpuStorage<T>` lets safe code `mem::swap` the storage with another one of a
//! different length or GPU, which would break the owner's invariants (a `SyncedMemory`'s two
//! copies have one length; a Blob's sides live on one GPU). Owners that lend their device
//! memory for writing hand out this handle instead: it reads through `Deref` and writes
//! through the same copy methods as `GpuStorage`, but swapping two handles swaps only the
//! borrows.

use std::fmt;
use std::ops::Deref;

use super::buffer::{GpuStorage, PendingCopy};
use super::device::Gpu;
use super::peer::{PeerPath, PeerRoute};
use super::pinned_buffer::PinnedBuffer;
use super::stream::Stream;
use crate::element::Element;
use crate::error::Error;
use crate::layout::Layout;
use crate::tensor::TensorViewMut;

/// Writable access to a [`GpuStorage`] owned elsewhere (a [`SyncedMemory`]'s or a Blob's
/// GPU copy). Reads go through `Deref<Target = GpuStorage<T>>`; writes through the copy
/// methods below, which order themselves on any stream like `GpuStorage`'s.
///
/// ```no_run
/// use typestate_tensor::gpu::Gpu;
/// use typestate_tensor::synced::{HeadAtGpu, SyncedMemory};
///
/// # fn main() -> typestate_tensor::Result<()> {
/// let gpu = Gpu::new(0)?;
/// let mut m: SyncedMemory<f32, HeadAtGpu> = SyncedMemory::with_gpu(&gpu, 4)?.into_gpu_mut()?;
/// m.gpu_mut().copy_from_host(&[1.0, 2.0, 3.0, 4.0], gpu.default_stream())?;
/// assert_eq!(m.gpu().len(), 4);
/// # Ok(()) }
/// ```
///
/// [`SyncedMemory`]: crate::synced::SyncedMemory
pub struct GpuStorageMut<'a, T: Element> {
    storage: &'a mut GpuStorage<T>,
    /// The storage's GPU, borrowed from the owner so that views can name it while the
    /// storage is borrowed mutably.
    gpu: &'a Gpu,
}

impl<'a, T: Element> GpuStorageMut<'a, T> {
    /// Lends `storage` (of `gpu`) for writing without the power to replace it.
    pub(crate) fn new(storage: &'a mut GpuStorage<T>, gpu: &'a Gpu) -> Self {
        debug_assert_eq!(storage.gpu().ordinal(), gpu.ordinal());
        GpuStorageMut { storage, gpu }
    }

    /// A shorter-lived handle to the same memory.
    pub fn reborrow(&mut self) -> GpuStorageMut<'_, T> {
        GpuStorageMut {
            storage: self.storage,
            gpu: self.gpu,
        }
    }

    /// A writable tensor view of the memory with `layout`, for the tensor ops (`exp_into`,
    /// `fill_`, ...). Errors when the layout reaches outside the memory.
    pub fn view_mut(&mut self, layout: Layout) -> Result<TensorViewMut<'_, T, Gpu>, Error> {
        TensorViewMut::new(self.storage, layout, self.gpu)
    }

    /// See [`GpuStorage::copy_from_host`].
    pub fn copy_from_host(&mut self, src: &[T], stream: &Stream) -> Result<(), Error> {
        self.storage.copy_from_host(src, stream)
    }

    /// See [`GpuStorage::copy_from_device`].
    pub fn copy_from_device(&mut self, src: &GpuStorage<T>, stream: &Stream) -> Result<(), Error> {
        self.storage.copy_from_device(src, stream)
    }

    /// See [`GpuStorage::copy_from_device_async`].
    pub fn copy_from_device_async(
        &mut self,
        src: &GpuStorage<T>,
        stream: &Stream,
    ) -> Result<(), Error> {
        self.storage.copy_from_device_async(src, stream)
    }

    /// See [`GpuStorage::copy_from_peer_async`] (memory of any GPU).
    pub fn copy_from_peer_async(
        &mut self,
        src: &GpuStorage<T>,
        stream: &Stream,
    ) -> Result<PeerRoute, Error> {
        self.storage.copy_from_peer_async(src, stream)
    }

    /// See [`GpuStorage::copy_from_peer_async_via`].
    pub fn copy_from_peer_async_via(
        &mut self,
        src: &GpuStorage<T>,
        stream: &Stream,
        path: PeerPath,
    ) -> Result<PeerRoute, Error> {
        self.storage.copy_from_peer_async_via(src, stream, path)
    }

    /// See [`GpuStorage::copy_from_host_async`].
    pub fn copy_from_host_async<'b>(
        &mut self,
        src: &'b [T],
        stream: &Stream,
    ) -> Result<PendingCopy<'b>, Error> {
        self.storage.copy_from_host_async(src, stream)
    }

    /// See [`GpuStorage::copy_from_pinned_async`].
    pub fn copy_from_pinned_async<'b>(
        &mut self,
        src: &'b PinnedBuffer<T>,
        stream: &Stream,
    ) -> Result<PendingCopy<'b>, Error> {
        self.storage.copy_from_pinned_async(src, stream)
    }
}

impl<T: Element> Deref for GpuStorageMut<'_, T> {
    type Target = GpuStorage<T>;

    fn deref(&self) -> &GpuStorage<T> {
        self.storage
    }
}

impl<T: Element> fmt::Debug for GpuStorageMut<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("GpuStorageMut")
            .field(&*self.storage)
            .finish()
    }
}
