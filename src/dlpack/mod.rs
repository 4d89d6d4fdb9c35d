//! DLPack: tensors handed to other libraries (PyTorch, NumPy, CuPy, JAX) and taken from them
//! without a copy, on the host and on the GPU (issue 30).
//!
//! - [`ffi`]: the ABI of `dlpack.h` 1.1 (`DLTensor`, `DLManagedTensor`,
//!   `DLManagedTensorVersioned`, the flags), `#[repr(C)]`.
//! - Export ([`DlpackExport`]): an owned tensor, or a view of one, moved into the managed
//!   tensor's context (writable), or a shared `Arc<Tensor>` cloned in (read-only,
//!   `DLPACK_FLAG_BITMASK_READ_ONLY`). The memory lives until the consumer calls the deleter.
//!   Strides are in elements, a view's offset is `byte_offset`.
//! - Import ([`DlpackTensor`]): the producer's managed tensor taken over by an `unsafe`
//!   constructor that checks what DLPack says (element type, device, rank, strides,
//!   alignment, the read-only flag) and documents what it trusts (the allocation's extent,
//!   which DLPack does not give); views borrow from it; its drop calls the deleter once.
//! - The stream handshake (GPU), as the Python array API's `__dlpack__(stream=...)` gives it:
//!   as producer, [`DlpackExport::sync_to_raw`] makes the consumer's stream wait for the work
//!   pending on the memory (events recorded on the memory's streams, `cuStreamWaitEvent` on
//!   the consumer's), and the deleter makes our streams wait for the consumer's before the
//!   memory can be reused or written here; as consumer, the import's memory is ordered on
//!   the given [`Gpu`](crate::gpu::Gpu)'s default stream (pass that stream to the producer's
//!   `__dlpack__`: `gpu.default_stream().id()`), takes part in this crate's stream order
//!   like any GPU storage, and its drop waits for the work queued on it before the deleter.
//!
//! Python capsules (`PyCapsule` named `"dltensor"` / `"dltensor_versioned"`) are the job of a
//! Python extension (this repository's `python/` builds one with pyo3).
//!
//! ```
//! use typestate_tensor::dlpack::{DlpackExport, DlpackTensor};
//! use typestate_tensor::{Cpu, Tensor};
//!
//! let t = Tensor::from_vec(&[2, 3], vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0])?;
//! let layout = t.t().layout().clone(); // export the transposed view, no copy
//! let export = DlpackExport::with_layout(t, layout)?;
//! let raw = export.into_raw_versioned(); // what a capsule would carry
//! // SAFETY: a managed tensor just made by this crate, handed over once.
//! let imported = unsafe { DlpackTensor::<f32, Cpu>::from_versioned(raw.as_ptr(), &Cpu) }?;
//! assert_eq!(imported.view().shape(), &[3, 2]);
//! assert_eq!(imported.view().to_vec(), [1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
//! drop(imported); // calls the export's deleter: the tensor is freed now
//! # Ok::<(), typestate_tensor::Error>(())
//! ```

mod device;
mod export;
pub mod ffi;
mod import;

pub use device::{DlpackDevice, HostMemory};
pub use export::DlpackExport;
pub use import::DlpackTensor;
