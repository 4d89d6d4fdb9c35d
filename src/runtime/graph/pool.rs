//! [`GraphPool`]: the private caching allocator a CUDA graph's capture allocates from
//! (PyTorch's graph-private memory pool).
//!
//! A captured graph holds raw device addresses of every buffer its nodes touch, including the
//! temporaries the closure allocated and freed during the capture. So memory of this pool must
//! never reach anyone else while the graph can replay:
//! - only the capturing thread allocates from it, and only while the capture is open
//!   (`super::state` routes those allocations here); afterwards nobody does;
//! - blocks freed during the capture are reused within the same capture only (stream order on
//!   the capture stream makes that safe in every replay, as in PyTorch);
//! - segments are never given back to the driver while the pool lives: [`GraphSource`] defers
//!   every `cuMemFree` (asked by out-of-memory recovery or by the allocator's drop) to its own
//!   drop, which runs when the last holder (the graph, or an output tensor after
//!   `Graph::into_parts`) is gone, after synchronising the context.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use cudarc::driver::CudaContext;

use crate::runtime::driver;
use crate::runtime::event::Event;
use crate::runtime::memory_source::{
    event_completed, free_lock, record_on_stream_id, source_error, synchronize_context,
};
use crate::storage::allocator::DeviceAllocator;
use crate::storage::source::{MemoryLocation, MemorySource, SourceError, StreamId};
use crate::storage::{CachingAllocator, CachingConfig};

/// Device memory from `cuMemAlloc` whose frees wait until the source drops (see the module
/// docs).
pub(crate) struct GraphSource {
    ctx: Arc<CudaContext>,
    /// Regions given back by the allocator, freed for real on drop.
    deferred: Mutex<Vec<u64>>,
}

impl GraphSource {
    fn deferred(&self) -> std::sync::MutexGuard<'_, Vec<u64>> {
        // Pushing an address cannot leave the vector invalid.
        self.deferred.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

// SAFETY: regions come from `cuMemAlloc` on this context's device (fresh, non-null, aligned to
// at least 256 bytes, disjoint from every live allocation) and stay allocated at least until
// `free` is called: `free` only queues them, and `Drop` frees them after synchronising the
// context, so no work can still use them. `location` never changes. Events and
// `synchronize` are the same real CUDA calls as `DeviceMemorySource`'s.
unsafe impl MemorySource for GraphSource {
    type Event = Event;

    fn name(&self) -> String {
        format!("cuda:{} (graph pool)", self.ctx.ordinal())
    }

    fn location(&self) -> MemoryLocation {
        MemoryLocation::Device {
            ordinal: self.ctx.ordinal(),
        }
    }

    fn allocate(&self, bytes: usize) -> Result<u64, SourceError> {
        driver::mem_alloc(&self.ctx, bytes).map_err(source_error)
    }

    unsafe fn free(&self, addr: u64, _bytes: usize) -> Result<(), SourceError> {
        // Deferred: an executable graph may still name this memory (module docs).
        self.deferred().push(addr);
        Ok(())
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
        driver::memory_info(&self.ctx).ok()
    }
}

impl Drop for GraphSource {
    fn drop(&mut self) {
        let deferred = std::mem::take(
            self.deferred
                .get_mut()
                .unwrap_or_else(PoisonError::into_inner),
        );
        if deferred.is_empty() {
            return;
        }
        // Every graph and buffer that named this memory is gone, but a replay may still be
        // running: wait for it. If the wait fails the context is broken; leak the memory
        // rather than free it under running work.
        if driver::context_synchronize(&self.ctx).is_err() {
            return;
        }
        for addr in deferred {
            // Under THC's free lock, as every `cuMemFree` (`memory_source::free_lock`).
            let _free = free_lock();
            // SAFETY: `addr` came from `cuMemAlloc` on this context (`allocate`), was given
            // back once by the allocator (which never hands it out again), and no work uses
            // it: the context was synchronised above and nothing can queue new work on it
            // (the allocator and every graph and buffer holding it are gone). Errors leave
            // the memory to the context's teardown.
            let _ = unsafe { driver::mem_free(&self.ctx, addr) };
        }
    }
}

/// [`GraphPool::owner`] of a pool whose capture failed; no thread has this token.
pub(crate) const POISONED: u64 = u64::MAX;

/// The private memory pool of one capture: a [`CachingAllocator`] over a [`GraphSource`],
/// plus the token of the thread capturing into it (0 once the capture has ended).
pub(crate) struct GraphPool {
    allocator: CachingAllocator<GraphSource>,
    owner: AtomicU64,
}

impl GraphPool {
    /// A pool on `ctx`'s device, owned by the capturing thread `owner`.
    pub(crate) fn new(ctx: Arc<CudaContext>, owner: u64) -> GraphPool {
        let source = GraphSource {
            ctx,
            deferred: Mutex::new(Vec::new()),
        };
        GraphPool {
            allocator: CachingAllocator::with_config(source, CachingConfig::default()),
            owner: AtomicU64::new(owner),
        }
    }

    /// The allocator (blocks come from and go back to it).
    pub(crate) fn allocator(&self) -> &dyn DeviceAllocator {
        &self.allocator
    }

    /// The capturing thread's token while the capture is open (until its first run is
    /// queued), 0 afterwards, [`POISONED`] if it failed.
    #[inline]
    pub(crate) fn owner(&self) -> u64 {
        self.owner.load(Ordering::Acquire)
    }

    /// Marks the capture ended and its graph run once: the pool's buffers hold computed
    /// values and may be used by any thread.
    pub(crate) fn release_owner(&self) {
        self.owner.store(0, Ordering::Release);
    }

    /// Marks the capture failed: its work never ran, so buffers of the pool still alive
    /// (escaped from the closure) hold nothing computed, and every use of them is refused.
    pub(crate) fn poison(&self) {
        self.owner.store(POISONED, Ordering::Release);
    }
}

impl fmt::Debug for GraphPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GraphPool")
            .field("owner", &self.owner())
            .field("stats", &self.allocator.stats())
            .finish()
    }
}
