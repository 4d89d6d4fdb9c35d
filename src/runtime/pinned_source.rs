//! Page-locked ("pinned") host memory from the driver (`cuMemHostAlloc`): the source for
//! staging buffers and for the caching host allocator.

use std::fmt;
use std::ptr::NonNull;
use std::sync::Arc;

use cudarc::driver::sys;
use cudarc::driver::CudaContext;

use super::driver;
use super::event::Event;
use super::memory_source::{
    event_completed, other, record_on_stream_id, source_error, synchronize_context,
};
use crate::error::GpuError;
use crate::storage::source::{MemoryLocation, MemorySource, SourceError, StreamId};
use crate::storage::CachingHostAllocator;

/// The caching pinned-host allocator of a [`Gpu`](super::Gpu) (PyTorch's
/// `CachingHostAllocator` over `cuMemHostAlloc`), which [`PinnedBuffer`](super::PinnedBuffer)s
/// come from.
pub type PinnedHostAllocator = CachingHostAllocator<Arc<PinnedHostSource>>;

/// How pinned memory is allocated.
///
/// The flags are chosen deliberately:
/// - `CU_MEMHOSTALLOC_PORTABLE` always: the memory counts as pinned for every context, so one
///   staging buffer serves copies to any GPU, not only the one whose context allocated it.
/// - `CU_MEMHOSTALLOC_WRITECOMBINED` off by default: write-combined memory is not cached by
///   the CPU, so CPU *reads* of it are very slow (uncached, often 10x or worse). Our buffers
///   are read by the CPU (device-to-host results, `to_vec`), so we keep ordinary cached
///   pages. Turn it on only for buffers the CPU writes once and never reads (pure uploads),
///   where it can speed up the transfer over PCIe. (cudarc's `alloc_pinned` sets it.)
/// - `CU_MEMHOSTALLOC_DEVICEMAP` off: kernels never read host memory directly here.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PinnedHostOptions {
    /// Allocate write-combined memory (fast host writes and uploads, very slow host reads).
    pub write_combined: bool,
}

impl PinnedHostOptions {
    /// The `cuMemHostAlloc` flags these options stand for.
    fn flags(self) -> u32 {
        let mut flags = sys::CU_MEMHOSTALLOC_PORTABLE;
        if self.write_combined {
            flags |= sys::CU_MEMHOSTALLOC_WRITECOMBINED;
        }
        flags
    }
}

/// Page-locked host memory from `cuMemHostAlloc`, freed with `cuMemFreeHost`.
///
/// - Addresses are host pointers (as `u64`), page aligned (so at least 256 bytes).
/// - Out-of-memory (the OS refusing to lock more pages) becomes [`SourceError::OutOfMemory`].
/// - Events are recorded on the GPU streams that copy to or from the memory; a block may be
///   reused once the copies that touched it have completed.
/// - Pinning is slow (it maps and locks pages: milliseconds for large sizes) and takes
///   memory from the OS's pageable pool, which is why staging buffers are cached.
pub struct PinnedHostSource {
    ctx: Arc<CudaContext>,
    options: PinnedHostOptions,
}

impl PinnedHostSource {
    /// A source using GPU `ordinal`'s primary context, with the default options.
    pub fn new(ordinal: usize) -> Result<PinnedHostSource, GpuError> {
        PinnedHostSource::with_options(ordinal, PinnedHostOptions::default())
    }

    /// A source using GPU `ordinal`'s primary context.
    pub fn with_options(
        ordinal: usize,
        options: PinnedHostOptions,
    ) -> Result<PinnedHostSource, GpuError> {
        Ok(PinnedHostSource::from_context(
            driver::retain_primary_context(ordinal)?,
            options,
        ))
    }

    /// A source on an already retained context.
    pub(crate) fn from_context(
        ctx: Arc<CudaContext>,
        options: PinnedHostOptions,
    ) -> PinnedHostSource {
        PinnedHostSource { ctx, options }
    }

    /// The options the source allocates with.
    pub fn options(&self) -> PinnedHostOptions {
        self.options
    }
}

// SAFETY: every region comes from `cuMemHostAlloc`, which returns fresh, non-null,
// page-aligned (so at least 256-byte aligned) page-locked host memory of at least `bytes`
// bytes, disjoint from every other live allocation; it stays valid until `cuMemFreeHost`,
// which only `free` calls. It is pinned host memory (`CU_MEMHOSTALLOC_PORTABLE`, so pinned
// for every context), which `location` reports. Events are real CUDA events recorded on the
// named stream and queried with `cuEventQuery`, and `synchronize` is `cuCtxSynchronize`, so
// both report copies finished only when they are.
unsafe impl MemorySource for PinnedHostSource {
    type Event = Event;

    fn name(&self) -> String {
        format!("pinned host (cuda:{})", self.ctx.ordinal())
    }

    fn location(&self) -> MemoryLocation {
        MemoryLocation::PinnedHost
    }

    fn allocate(&self, bytes: usize) -> Result<u64, SourceError> {
        let ptr =
            driver::mem_host_alloc(&self.ctx, bytes, self.options.flags()).map_err(source_error)?;
        // Exposed so the address can become a pointer again (`PinnedBuffer`, `free`). A host
        // address fits in 64 bits on every target CUDA supports.
        Ok(ptr.as_ptr().expose_provenance() as u64)
    }

    unsafe fn free(&self, addr: u64, _bytes: usize) -> Result<(), SourceError> {
        let ptr = usize::try_from(addr)
            .ok()
            .and_then(|a| NonNull::new(std::ptr::with_exposed_provenance_mut::<u8>(a)))
            .ok_or_else(|| SourceError::Other(format!("{addr:#x} is not a host address")))?;
        // SAFETY: the trait's contract: `addr` came from `allocate` (so from `cuMemHostAlloc`),
        // is not freed yet, and no queued or running work uses it.
        unsafe { driver::mem_free_host(&self.ctx, ptr) }.map_err(other)
    }

    fn record_event(&self, stream: StreamId) -> Result<Event, SourceError> {
        record_on_stream_id(&self.ctx, stream)
    }

    fn event_completed(&self, event: &Event) -> Result<bool, SourceError> {
        event_completed(event)
    }

    fn synchronize(&self) -> Result<(), SourceError> {
        synchronize_context(&self.ctx)
    }

    fn mem_info(&self) -> Option<(usize, usize)> {
        // The OS decides how much it will pin; the driver does not say.
        None
    }
}

impl fmt::Debug for PinnedHostSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PinnedHostSource")
            .field("ordinal", &self.ctx.ordinal())
            .field("options", &self.options)
            .finish()
    }
}

static_assertions::assert_impl_all!(PinnedHostSource: Send, Sync);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_flags_are_portable_and_cached() {
        let flags = PinnedHostOptions::default().flags();
        assert_eq!(flags, sys::CU_MEMHOSTALLOC_PORTABLE);
        assert_eq!(flags & sys::CU_MEMHOSTALLOC_WRITECOMBINED, 0);
        let wc = PinnedHostOptions {
            write_combined: true,
        }
        .flags();
        assert_eq!(
            wc,
            sys::CU_MEMHOSTALLOC_PORTABLE | sys::CU_MEMHOSTALLOC_WRITECOMBINED
        );
    }
}
