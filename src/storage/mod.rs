//! Storage: device memory allocators (MXNet's `Storage` managers and PyTorch's caching
//! allocators), generic over where the memory comes from.
//!
//! # Layers
//!
//! - [`MemorySource`] (in [`source`]): raw regions and stream events from a driver
//!   (`cuMemAlloc`, pinned host memory) or from [`HostMemorySource`], plain host memory with
//!   a capacity and simulated streams that tests and CPU users drive.
//! - [`DeviceAllocator`] (in [`allocator`]): the allocation algorithms, shared across
//!   threads, handing out [`Block`]s. MXNet's verbs (`allocate`, `free`, `free_direct`,
//!   `empty_cache` for `ReleaseAll`) plus PyTorch's `record_stream` and statistics.
//! - [`Allocation`]: an owned block that returns itself to its allocator on drop, for tensor
//!   storage.
//!
//! # Which allocator
//!
//! | allocator | origin | reuse | setting |
//! | --- | --- | --- | --- |
//! | [`NaiveAllocator`] | MXNet `NaiveStorageManager` | none: every request goes to the source | — |
//! | [`PooledAllocator`] | MXNet `GPUPooledStorageManager` (`Naive` pool type) and `GPUPooledRoundedStorageManager` (`Round`) | exact rounded size only; a cached region serves only requests that round to its size | [`PooledConfig`] (`MXNET_GPU_MEM_POOL_*`) |
//! | [`CachingAllocator`] (default) | PyTorch `CUDACachingAllocator` | best fit with splitting and merging inside 2 MiB / 20 MiB / large segments | [`CachingConfig`] (`PYTORCH_CUDA_ALLOC_CONF` syntax in `TYPESTATE_TENSOR_ALLOC_CONF`) |
//! | [`CachingHostAllocator`] | PyTorch `CachingHostAllocator` (pinned host memory) | power-of-two size classes, reused after the streams that used a block are done | — |
//!
//! The naive allocator pays the driver's price on every call (`cuMemAlloc` + `cuMemFree`
//! take 60-90 µs on an H200) and is the baseline for debugging. The pooled allocator is
//! MXNet's: fast, but it wastes memory whenever sizes vary (a cached 4 MiB region cannot
//! serve a 3 MiB request, and rounding to powers of two can double a request). The caching
//! allocator splits cached segments to serve any smaller request and merges neighbours
//! back on free, which is why PyTorch uses it by default.
//!
//! # Streams
//!
//! Every block belongs to the stream it was allocated on, and device allocators reuse a
//! freed block only on that stream, where queued work is ordered: no synchronization
//! needed. A block also used on another stream must be announced with
//! [`DeviceAllocator::record_stream`]; freeing it then records an event on each such
//! stream and keeps the block out of use until they complete. Host memory is different:
//! the CPU does not wait for streams, so the host allocator treats the allocation stream
//! as a use too. Regions go back to the source only after the source is synchronized.
//!
//! # Statistics
//!
//! [`AllocatorStats`] follows PyTorch's `memory_stats`: allocated, reserved, active and
//! requested bytes, segments and allocations (current and peak), and counters of
//! allocations, retries after freeing the cache, out-of-memory failures and segment frees.
//! The caching, pooled and host allocators also give a [`snapshot`] of every segment and
//! block.
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//! use typestate_tensor::storage::{
//!     Allocation, CachingAllocator, DeviceAllocator, HostMemorySource, StreamId,
//! };
//!
//! let source = HostMemorySource::new(64 << 20);
//! let allocator: Arc<dyn DeviceAllocator> = Arc::new(CachingAllocator::new(source));
//! let a = Allocation::new(&allocator, 1000, StreamId(0))?;
//! assert_eq!(a.size(), 1024); // rounded up to a multiple of 512 bytes
//! let first = a.addr();
//! drop(a); // back to the cache, not to the source
//! let b = Allocation::new(&allocator, 1000, StreamId(0))?;
//! assert_eq!(b.addr(), first);
//! assert_eq!(allocator.stats().segments.current, 1); // one 2 MiB segment served both
//! # Ok::<(), typestate_tensor::error::AllocError>(())
//! ```

pub mod allocation;
pub mod allocator;
pub mod caching;
pub mod history;
pub mod host_caching;
pub mod host_source;
pub mod naive;
pub mod pooled;
pub mod snapshot;
pub mod source;

mod addr_map;
mod arith;
mod bookkeeping;
mod conf;
mod events;
mod failure;
mod locking;
mod regions;
mod stats;

pub use allocation::Allocation;
pub use allocator::{AllocatorStats, Block, DeviceAllocator, Stat};
pub use caching::{CachingAllocator, CachingConfig};
pub(crate) use failure::oom_error;
pub use host_caching::CachingHostAllocator;
pub use host_source::{HostEvent, HostMemorySource};
pub use naive::NaiveAllocator;
pub use pooled::{PoolRounding, PooledAllocator, PooledConfig};
pub use snapshot::{BlockSnapshot, BlockState, MemorySnapshot, SegmentPool, SegmentSnapshot};
pub use source::{MemoryLocation, MemorySource, SourceError, StreamId};
