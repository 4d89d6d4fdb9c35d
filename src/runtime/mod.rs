//! The GPU runtime: driver, devices, streams, events, memory sources, the driver pool and
//! device and pinned buffers. Published as [`crate::gpu`] (which holds the user-facing guide).
//!
//! Layered like cudarc: `driver` owns every raw driver call and its `unsafe`, each call
//! returning `Result<_, GpuError>` that names the call; the typed wrappers above it hold one
//! concept per module. Below the GPU engine (`engine_gpu`), above [`crate::storage`] and
//! [`crate::tensor`]; see `docs/ARCHITECTURE.md`.

pub(crate) mod buffer;
pub(crate) mod device;
pub(crate) mod driver;
mod driver_pool;
mod error_slot;
mod event;
// issue 30 (dlpack): streams other libraries own.
pub(crate) mod foreign_stream;
pub(crate) mod graph;
mod kernel_cache_dir;
mod memory_source;
pub(crate) mod peer;
mod pinned_buffer;
mod pinned_source;
mod storage_mut;
pub(crate) mod stream;
mod stream_order;

pub use buffer::{GpuStorage, PendingCopy};
pub use device::{AllocatorKind, Gpu, GpuOptions};
pub use driver_pool::{DriverPoolAllocator, DriverPoolOptions};
pub use event::Event;
pub use graph::{Bound, BoundView, Graph, Outputs};
pub(crate) use kernel_cache_dir::fixed_kernel_cache_dir;
pub use kernel_cache_dir::{
    kernel_cache_dir, set_kernel_cache_dir, KernelCacheDir, KernelCacheInUse, KERNEL_CACHE_ENV,
};
pub(crate) use memory_source::free_lock;
pub use memory_source::DeviceMemorySource;
pub use peer::{PeerPath, PeerRoute, PEER_PATH_ENV, STAGE_CHUNK};
pub use pinned_buffer::PinnedBuffer;
pub use pinned_source::{PinnedHostAllocator, PinnedHostOptions, PinnedHostSource};
pub use storage_mut::GpuStorageMut;
pub use stream::Stream;

/// Bytes for `len` elements of `T`, or an error naming the overflow.
pub(crate) fn byte_len<T: crate::element::Element>(
    op: &'static str,
    len: usize,
) -> Result<usize, crate::error::LayoutError> {
    len.checked_mul(std::mem::size_of::<T>()).ok_or_else(|| {
        crate::error::LayoutError::SizeOverflow {
            op,
            shape: vec![len],
            what: "bytes",
        }
    })
}
