//! The GPU runtime: devices, streams, events, memory sources, allocators and device buffers.
//!
//! Layered like cudarc:
//! - `driver` (private) owns every raw driver call and its `unsafe`; each call returns
//!   `Result<_, GpuError>` naming the call and the driver's error.
//! - Typed wrappers above it, one concept per module: [`Gpu`] (a device and what it owns),
//!   [`Stream`], [`Event`], the memory sources [`DeviceMemorySource`] and
//!   [`PinnedHostSource`] that the [`crate::storage`] allocators run on, the
//!   [`DriverPoolAllocator`], the device buffer [`GpuStorage`] with its copies, the staging
//!   buffer [`PinnedBuffer`] (from the caching [`PinnedHostAllocator`]), and [`compile`]
//!   (NVRTC and the kernel caches).
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

mod buffer;
pub mod compile;
mod device;
mod driver;
mod driver_pool;
mod error_slot;
mod event;
mod memory_source;
mod pinned_buffer;
mod pinned_source;
pub mod pointwise;
mod sleep;
mod storage_mut;
mod stream;
mod stream_order;

pub use buffer::{GpuStorage, PendingCopy};
pub use device::{AllocatorKind, Gpu, GpuOptions};
pub use driver_pool::{DriverPoolAllocator, DriverPoolOptions};
pub use event::Event;
pub use memory_source::DeviceMemorySource;
pub use pinned_buffer::PinnedBuffer;
pub use pinned_source::{PinnedHostAllocator, PinnedHostOptions, PinnedHostSource};
pub use storage_mut::GpuStorageMut;
pub use stream::Stream;
