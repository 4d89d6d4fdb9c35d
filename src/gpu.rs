//! The GPU: devices, streams, events, memory sources, allocators and device buffers (the
//! runtime), and what the GPU engine's kernel caches report.
//!
//! A facade: this module only re-exports. The code lives in `src/runtime/` (driver, device,
//! streams, buffers) and `src/engine_gpu/` (code generation, compilation, launches; private); see
//! `docs/ARCHITECTURE.md`. Code inside the crate imports from those folders, never from here.
//!
//! Layered like cudarc:
//! - `driver` (private, `src/runtime/driver/`) owns every raw driver call and its `unsafe`; each call returns
//!   `Result<_, GpuError>` naming the call and the driver's error.
//! - Typed wrappers above it, one concept per module: [`Gpu`] (a device and what it owns),
//!   [`Stream`], [`Event`], the memory sources [`DeviceMemorySource`] and
//!   [`PinnedHostSource`] that the [`crate::storage`] allocators run on, the
//!   [`DriverPoolAllocator`], the device buffer [`GpuStorage`] with its copies, the staging
//!   buffer [`PinnedBuffer`] (from the caching [`PinnedHostAllocator`]), copies between
//!   GPUs ([`Gpu::enable_peer_access`], [`GpuStorage::copy_from_peer_async`], [`PeerPath`],
//!   [`PeerRoute`]; `Tensor::to_device`, `SyncedMemory::into_gpu_of` build on them), and
//!   what the kernel caches report ([`kernel_cache_stats`], [`kernel_cache_warning`]).
//!
//! The GPU engine itself (code generation, plans, NVRTC, the kernel caches and their keys,
//! launches) is private: every kernel this crate launches comes from its own op table and
//! templates, so nothing a caller does can put code, a cache entry or a launch handle in
//! front of the unsafe launch path. Work runs on any stream through [`Gpu::on`].
//!
//! Every entry point first checks that libcuda can be loaded, so on a machine without a
//! driver `Gpu::new` returns [`GpuError::NoDriver`](crate::error::GpuError::NoDriver) instead
//! of panicking, and [`Gpu::available`] says `false`.
//!
//! ```no_run
//! use typestate_tensor::gpu::{Gpu, GpuStorage};
//!
//! # fn main() -> typestate_tensor::Result<()> {
//! let gpu = Gpu::new(0)?;
//! let stream = gpu.new_stream()?;
//! let data: Vec<f32> = (0..1024).map(|i| i as f32).collect();
//! let on_gpu = GpuStorage::from_host(&gpu, &data, &stream)?;
//! assert_eq!(on_gpu.to_vec(&stream)?, data);
//! # Ok(())
//! # }
//! ```

pub use crate::engine_gpu::compile::{
    kernel_cache_stats, kernel_cache_warning, Bypass, CacheStats, Distrust,
};
pub use crate::runtime::{
    kernel_cache_dir, set_kernel_cache_dir, KernelCacheDir, KernelCacheInUse, KERNEL_CACHE_ENV,
};
pub use crate::runtime::{
    AllocatorKind, Bound, BoundView, DeviceMemorySource, DriverPoolAllocator, DriverPoolOptions,
    Event, Gpu, GpuOptions, GpuStorage, GpuStorageMut, Graph, Outputs, PeerPath, PeerRoute,
    PendingCopy, PinnedBuffer, PinnedHostAllocator, PinnedHostOptions, PinnedHostSource, Stream,
    PEER_PATH_ENV, STAGE_CHUNK,
};
