//! Export: a tensor of this crate handed to another library as a DLPack managed tensor,
//! without a copy. The managed tensor's context owns what keeps the memory alive (the
//! tensor, moved in, or a clone of an `Arc` of it), so the memory lives until the consumer
//! calls the deleter, whatever happens to the exporter's handles.

use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::Arc;

use super::device::{Consumer, DlpackDevice};
use super::ffi::{
    DLDataType, DLManagedTensor, DLManagedTensorVersioned, DLTensor, DLPACK_FLAG_BITMASK_READ_ONLY,
    DLPACK_VERSION,
};
use crate::element::Element;
use crate::error::{DlpackError, Handback, Result};
use crate::layout::Layout;
use crate::runtime::foreign_stream::ForeignStream;
use crate::runtime::stream::Stream;
use crate::tensor::Tensor;

/// What keeps an export's memory alive, with its device's handshake.
trait Keep: Send {
    /// The consumer's stream waits for the work on the memory it must see.
    fn order(&self, consumer: &Consumer, write: bool) -> Result<()>;
    /// Later work of ours waits for the consumers' (before the memory is let go).
    fn hold_back(&self, consumers: &[Consumer]) -> Result<()>;
    /// Where to record an error of the deleter's (the GPU's error slot), if anywhere.
    fn record(&self, e: crate::error::Error);
}

/// An owned tensor moved in, or a shared one (`Arc`) cloned in: `S` derefs to the tensor.
struct Held<T: Element, D: DlpackDevice, S>(S, std::marker::PhantomData<fn() -> (T, D)>);

impl<T: Element, D: DlpackDevice, S: std::ops::Deref<Target = Tensor<T, D>> + Send> Keep
    for Held<T, D, S>
{
    fn order(&self, consumer: &Consumer, write: bool) -> Result<()> {
        D::order_consumer(self.0.storage(), consumer, write)
    }
    fn hold_back(&self, consumers: &[Consumer]) -> Result<()> {
        D::hold_back(self.0.storage(), consumers)
    }
    fn record(&self, e: crate::error::Error) {
        D::record_error(self.0.device(), e);
    }
}

/// The manager context: both managed forms (one is handed out), the shape and strides they
/// point to, and what keeps the memory alive. Boxed, so the pointers into it stay put.
struct Ctx {
    versioned: DLManagedTensorVersioned,
    legacy: DLManagedTensor,
    _shape: Vec<i64>,
    _strides: Vec<i64>,
    consumers: Vec<Consumer>,
    keep: Option<Box<dyn Keep>>,
}

impl Drop for Ctx {
    fn drop(&mut self) {
        let Some(keep) = self.keep.take() else { return };
        if self.consumers.is_empty() {
            return;
        }
        if let Err(e) = keep.hold_back(&self.consumers) {
            // Letting the memory go could let our allocator reuse it under a consumer's
            // kernel: leak it instead (the error is recorded for `Gpu::check_err`).
            keep.record(e);
            std::mem::forget(keep);
        }
    }
}

/// A tensor of this crate ready to be handed to another library through DLPack, without a
/// copy: [`DlpackExport::into_raw_versioned`] (DLPack 1.x) or
/// [`DlpackExport::into_raw_legacy`]. Dropped without being handed out, it just lets the
/// tensor go.
///
/// Made from an owned tensor ([`DlpackExport::new`], [`DlpackExport::with_layout`] for a view
/// of it: any strides within its storage; `data` is the lowest element the view reaches,
/// `byte_offset` the bytes from there to element 0, non-zero only for negative strides),
/// which the export owns
/// from then on, so nothing of this crate can write the memory while the consumer holds it;
/// or from a shared tensor ([`DlpackExport::shared`]), exported read-only
/// (`DLPACK_FLAG_BITMASK_READ_ONLY`): while the export holds its clone of the `Arc`, this
/// crate can only read it too.
///
/// On the GPU, [`DlpackExport::sync_to`] / [`DlpackExport::sync_to_raw`] are the producer's
/// side of the stream handshake: the consumer's stream waits for the work pending on the
/// memory; and when the consumer calls the deleter, the memory's own streams wait for the
/// consumer's stream before the memory can be reused or written here.
pub struct DlpackExport {
    ctx: Box<Ctx>,
    read_only: bool,
}

// SAFETY: the raw pointers in `ctx` point into `ctx`'s own boxes and at the tensor's memory,
// which `keep` (`Send`) owns; moving the export moves all of it together.
unsafe impl Send for DlpackExport {}
// SAFETY: `&DlpackExport` reads the DLPack description only (`dl_tensor`, `is_read_only`);
// the handshake and the hand-out, which touch what keeps the memory alive, take `&mut self`
// or `self`.
unsafe impl Sync for DlpackExport {}

impl DlpackExport {
    /// Exports `tensor` with its own layout, writable.
    ///
    /// # Errors
    /// None today on the host; kept for devices whose export can fail.
    pub fn new<T: Element, D: DlpackDevice>(tensor: Tensor<T, D>) -> Result<DlpackExport> {
        let layout = tensor.layout().clone();
        Self::with_layout(tensor, layout).map_err(|h| h.error)
    }

    /// Exports a view of `tensor`: `layout` (any strides and offset within the storage, e.g.
    /// `tensor.t().layout().clone()`), writable unless its elements alias (a broadcast),
    /// which is exported read-only.
    ///
    /// # Errors
    /// The layout's [`LayoutError`](crate::error::LayoutError) when it reaches outside the
    /// storage, with the tensor handed back.
    #[allow(clippy::result_large_err)] // hands the tensor back
    pub fn with_layout<T: Element, D: DlpackDevice>(
        tensor: Tensor<T, D>,
        layout: Layout,
    ) -> Result<DlpackExport, Handback<Tensor<T, D>>> {
        use crate::device::Storage;
        if let Err(e) = layout.check_within("DlpackExport::with_layout", tensor.storage().len()) {
            return Err(Handback::new(tensor, e));
        }
        let read_only = !layout.is_non_overlapping();
        let addr = D::storage_addr(tensor.storage());
        let dev = tensor.device().dl_device();
        let keep = Box::new(Held::<T, D, _>(Box::new(tensor), std::marker::PhantomData));
        Ok(Self::build::<T>(keep, &layout, addr, dev, read_only))
    }

    /// Exports a view (`layout`) of a shared tensor, read-only: the export holds a clone of
    /// the `Arc`, so the memory lives as long as the consumer needs it, and this crate cannot
    /// write it while the consumer may read it (writing needs the `Arc` unique).
    ///
    /// # Errors
    /// The layout's [`LayoutError`](crate::error::LayoutError) when it reaches outside the
    /// storage.
    pub fn shared<T: Element, D: DlpackDevice>(
        tensor: &Arc<Tensor<T, D>>,
        layout: Layout,
    ) -> Result<DlpackExport> {
        use crate::device::Storage;
        layout.check_within("DlpackExport::shared", tensor.storage().len())?;
        let addr = D::storage_addr(tensor.storage());
        let dev = tensor.device().dl_device();
        let keep = Box::new(Held::<T, D, _>(
            Arc::clone(tensor),
            std::marker::PhantomData,
        ));
        Ok(Self::build::<T>(keep, &layout, addr, dev, true))
    }

    fn build<T: Element>(
        keep: Box<dyn Keep>,
        layout: &Layout,
        addr: u64,
        device: super::ffi::DLDevice,
        read_only: bool,
    ) -> DlpackExport {
        // `Vec`s, not boxes: moving a `Vec` into the context keeps pointers into its buffer
        // valid (a `Box` move would assert unique access to it).
        let mut shape: Vec<i64> = layout.shape().iter().map(|&n| n as i64).collect();
        let mut strides: Vec<i64> = layout.strides().iter().map(|&s| s as i64).collect();
        let (shape_ptr, strides_ptr) = (shape.as_mut_ptr(), strides.as_mut_ptr());
        // `data` is the lowest element the view reaches and `byte_offset` the distance from
        // there to element 0: 0 unless a stride is negative. So a consumer that ignores
        // `byte_offset` (PyTorch's `from_dlpack` long did, and its own exports always give 0,
        // as CuPy's do) reads every view without a negative stride right, and one that adds
        // it (NumPy, this crate) reads every view right; no element lies below `data`.
        let (low, empty) = match layout.offset_range() {
            Some((low, _)) => (low, false),
            None => (0, true),
        };
        let dl_tensor = || DLTensor {
            // DLPack asks for a null pointer for an empty tensor.
            data: if empty {
                std::ptr::null_mut()
            } else {
                // Within the storage (`check_within`): the sum fits.
                (addr + (low * size_of::<T>()) as u64) as usize as *mut c_void
            },
            device,
            // At most `MAX_DIMS` (32) dims: fits.
            ndim: layout.rank() as i32,
            dtype: DLDataType::of(T::DTYPE),
            shape: shape_ptr,
            strides: strides_ptr,
            // Offset and element size: their product fits (it is within the storage).
            byte_offset: if empty {
                0
            } else {
                ((layout.offset() - low) * size_of::<T>()) as u64
            },
        };
        let versioned = DLManagedTensorVersioned {
            version: DLPACK_VERSION,
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(delete_versioned),
            flags: if read_only {
                DLPACK_FLAG_BITMASK_READ_ONLY
            } else {
                0
            },
            dl_tensor: dl_tensor(),
        };
        let legacy = DLManagedTensor {
            dl_tensor: dl_tensor(),
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(delete_legacy),
        };
        let mut ctx = Box::new(Ctx {
            versioned,
            legacy,
            _shape: shape,
            _strides: strides,
            consumers: Vec::new(),
            keep: Some(keep),
        });
        let this: *mut Ctx = &mut *ctx;
        ctx.versioned.manager_ctx = this.cast();
        ctx.legacy.manager_ctx = this.cast();
        DlpackExport { ctx, read_only }
    }

    /// The tensor as DLPack describes it (data, device, shape, strides, byte offset).
    pub fn dl_tensor(&self) -> &DLTensor {
        &self.ctx.versioned.dl_tensor
    }

    /// Whether the export is read-only (`DLPACK_FLAG_BITMASK_READ_ONLY`).
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// The handshake with a consumer on one of this crate's streams: work queued on `stream`
    /// from now on sees every write of this crate to the memory (and, for a writable export,
    /// comes after every read too). Host memory needs none: a no-op.
    ///
    /// # Errors
    /// The GPU's errors.
    pub fn sync_to(&mut self, stream: &Stream) -> Result<()> {
        self.sync(Consumer::Ours(stream.clone()))
    }

    /// The handshake with a consumer on a stream another library owns: `stream` is the raw
    /// `CUstream` the consumer passed (`__dlpack__(stream=...)`: 1 for the legacy default
    /// stream, 2 for the per-thread default stream, else the handle). As
    /// [`DlpackExport::sync_to`]; the deleter later makes this crate's streams wait for the
    /// work queued on `stream` by then.
    ///
    /// # Errors
    /// The GPU's errors.
    ///
    /// # Safety
    ///
    /// `stream` is 1, 2 or a live stream of the tensor's device, made in its primary context
    /// (PyTorch's are), that stays live until the managed tensor's deleter has run.
    pub unsafe fn sync_to_raw(&mut self, stream: usize) -> Result<()> {
        // SAFETY: the caller's contract is `ForeignStream::new`'s.
        let foreign = unsafe { ForeignStream::new(stream) };
        self.sync(Consumer::Foreign(foreign))
    }

    fn sync(&mut self, consumer: Consumer) -> Result<()> {
        let keep = self
            .ctx
            .keep
            .as_ref()
            .expect("an export holds its tensor until dropped");
        keep.order(&consumer, !self.read_only)?;
        self.ctx.consumers.push(consumer);
        Ok(())
    }

    /// Hands the tensor out as a DLPack 1.x managed tensor (for a `"dltensor_versioned"`
    /// capsule). The consumer owns it from then on and calls its deleter once, from any
    /// thread, when done; the memory stays alive until then.
    pub fn into_raw_versioned(self) -> NonNull<DLManagedTensorVersioned> {
        let ctx = Box::into_raw(self.ctx);
        // SAFETY: `ctx` is the pointer `Box::into_raw` just returned: valid, non-null; the
        // deleter turns it back into the box.
        unsafe { NonNull::new_unchecked(&raw mut (*ctx).versioned) }
    }

    /// Hands the tensor out as a legacy managed tensor (for a `"dltensor"` capsule), as
    /// [`DlpackExport::into_raw_versioned`].
    ///
    /// # Errors
    /// [`DlpackError::ReadOnly`] for a read-only export (the legacy form cannot say so, and a
    /// consumer would take it as writable), with the export handed back.
    #[allow(clippy::result_large_err)] // hands the export back
    pub fn into_raw_legacy(self) -> Result<NonNull<DLManagedTensor>, Handback<DlpackExport>> {
        if self.read_only {
            let why = "the legacy DLPack form cannot flag a read-only tensor: ask for a versioned one (max_version >= (1, 0))";
            let e = DlpackError::ReadOnly {
                op: "DlpackExport::into_raw_legacy",
                why,
            };
            return Err(Handback::new(self, e));
        }
        let ctx = Box::into_raw(self.ctx);
        // SAFETY: as in `into_raw_versioned`.
        Ok(unsafe { NonNull::new_unchecked(&raw mut (*ctx).legacy) })
    }
}

impl std::fmt::Debug for DlpackExport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DlpackExport")
            .field("dl_tensor", self.dl_tensor())
            .field("read_only", &self.read_only)
            .finish_non_exhaustive()
    }
}

/// The deleter of a versioned export: frees the context (and with it lets the tensor go).
unsafe extern "C" fn delete_versioned(managed: *mut DLManagedTensorVersioned) {
    if managed.is_null() {
        return;
    }
    // SAFETY: a pointer handed out by `into_raw_versioned`, whose `manager_ctx` is the
    // `Box<Ctx>` turned into a raw pointer there; the DLPack contract calls the deleter once.
    unsafe { drop_ctx((*managed).manager_ctx) }
}

/// The deleter of a legacy export.
unsafe extern "C" fn delete_legacy(managed: *mut DLManagedTensor) {
    if managed.is_null() {
        return;
    }
    // SAFETY: as in `delete_versioned`, for `into_raw_legacy`.
    unsafe { drop_ctx((*managed).manager_ctx) }
}

/// # Safety
/// `ctx` came from `Box::into_raw` of a `Box<Ctx>` and is dropped once.
unsafe fn drop_ctx(ctx: *mut c_void) {
    // Never unwind into C: a panic in a drop (none is expected: drops record their errors)
    // is caught here and the rest is leaked.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: the caller's contract.
        drop(unsafe { Box::from_raw(ctx.cast::<Ctx>()) });
    }));
}
