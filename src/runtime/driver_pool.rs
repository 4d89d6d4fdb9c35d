//! The driver's own stream-ordered caching allocator (`cuMemAllocAsync` on the device's
//! default memory pool) behind our [`DeviceAllocator`] interface.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use cudarc::driver::{CudaContext, CudaStream};

use super::driver::{self, AllocFailure, MemPool, PoolAttribute};
use super::event::Event;
use super::stream::{live_stream, live_stream_anywhere};
use crate::error::{AllocError, GpuError};
use crate::storage::allocator::{AllocatorStats, Block, DeviceAllocator, Stat};
use crate::storage::oom_error;
use crate::storage::source::{MemoryLocation, StreamId};

/// How the driver pool is configured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DriverPoolOptions {
    /// `CU_MEMPOOL_ATTR_RELEASE_THRESHOLD`: how many bytes of freed memory the pool may keep
    /// reserved when a stream, event or context synchronises. The driver's default, 0, hands
    /// all freed memory back to the OS at every synchronisation, so the next allocation pays
    /// for a fresh mapping: the pool would not cache at all across syncs. The default here,
    /// `u64::MAX`, makes the pool keep memory like a cache (PyTorch's caching allocator keeps
    /// everything too); [`DeviceAllocator::empty_cache`] returns it on demand. Set a smaller
    /// value to cap what an idle process holds.
    ///
    /// The default pool is shared by everything in the process that allocates with
    /// `cuMemAllocAsync` on this device (cudarc's `CudaSlice`s included), so the threshold
    /// applies to them too.
    pub release_threshold: u64,
}

impl Default for DriverPoolOptions {
    fn default() -> DriverPoolOptions {
        DriverPoolOptions {
            release_threshold: u64::MAX,
        }
    }
}

/// A block handed out and not yet freed.
#[derive(Debug)]
struct LiveBlock {
    size: usize,
    requested: usize,
    stream: StreamId,
    /// Other streams the block was used on ([`DeviceAllocator::record_stream`]).
    also_used_on: Vec<StreamId>,
}

#[derive(Debug, Default)]
struct PoolState {
    live: HashMap<u64, LiveBlock>,
    stats: AllocatorStats,
}

fn grow(stat: &mut Stat, by: usize) {
    stat.current = stat.current.saturating_add(by);
    stat.peak = stat.peak.max(stat.current);
}

fn shrink(stat: &mut Stat, by: usize) {
    stat.current = stat.current.saturating_sub(by);
}

/// Device memory from the driver's stream-ordered allocator: `cuMemAllocFromPoolAsync` /
/// `cuMemFreeAsync` on the device's default memory pool.
///
/// The driver pool is itself a caching allocator (about 1 µs per allocate + free against
/// 60-90 µs for `cuMemAlloc` + `cuMemFree`), so this type only adds bookkeeping:
/// - Invariants: `live` holds exactly the blocks handed out and not yet freed, keyed by
///   address, each allocated from `pool` by this allocator. A block is freed once, by
///   removing it from `live`; anything not in `live` is refused with
///   [`AllocError::UnknownBlock`].
/// - Allocated, active and requested bytes and block counts are kept here. Reserved bytes
///   and their peak are the pool's own (`CU_MEMPOOL_ATTR_RESERVED_MEM_*`), which counts every
///   user of the default pool, not only this allocator. The pool has no segments to count.
/// - Stream ordering: a block is allocated and freed in order on its own stream. A block also
///   used on other streams ([`DeviceAllocator::record_stream`]) is freed after an event
///   recorded on each of them: the freeing stream waits on those events (on the GPU, the host
///   does not block) before `cuMemFreeAsync`.
/// - Out of memory: the allocator synchronises the context (so frees still queued on other
///   streams complete and their memory returns to the pool) and retries once.
///
/// Chosen for a `Gpu` with [`AllocatorKind::DriverPool`](crate::gpu::AllocatorKind):
///
/// ```
/// use typestate_tensor::gpu::{AllocatorKind, DriverPoolOptions, Gpu, GpuOptions};
///
/// # fn main() -> typestate_tensor::Result<()> {
/// let options = GpuOptions {
///     allocator: AllocatorKind::DriverPool(DriverPoolOptions::default()),
///     ..GpuOptions::default()
/// };
/// match Gpu::with_options(0, options) {
///     Ok(gpu) => {
///         let stream = gpu.default_stream().id();
///         let block = gpu.allocator().allocate(1 << 20, stream)?;
///         assert!(block.size() >= 1 << 20);
///         gpu.allocator().free(block)?;
///     }
///     Err(e) => println!("no GPU with a stream-ordered pool here: {e}"),
/// }
/// # Ok(())
/// # }
/// ```
pub struct DriverPoolAllocator {
    ctx: Arc<CudaContext>,
    pool: MemPool,
    options: DriverPoolOptions,
    state: Mutex<PoolState>,
}

impl DriverPoolAllocator {
    /// The driver-pool allocator of GPU `ordinal`.
    pub fn new(
        ordinal: usize,
        options: DriverPoolOptions,
    ) -> Result<DriverPoolAllocator, GpuError> {
        DriverPoolAllocator::from_context(driver::retain_primary_context(ordinal)?, options)
    }

    /// The driver-pool allocator on an already retained context: fetches the default pool and
    /// sets its release threshold.
    pub(crate) fn from_context(
        ctx: Arc<CudaContext>,
        options: DriverPoolOptions,
    ) -> Result<DriverPoolAllocator, GpuError> {
        if !driver::supports_mem_pools(&ctx)? {
            return Err(GpuError::Driver {
                call: "cuDeviceGetAttribute",
                message: format!(
                    "GPU {} does not support stream-ordered allocation \
                     (CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED is 0); choose another allocator",
                    ctx.ordinal()
                ),
            });
        }
        let pool = driver::default_mem_pool(&ctx)?;
        driver::pool_set(
            &ctx,
            pool,
            PoolAttribute::ReleaseThreshold,
            options.release_threshold,
        )?;
        Ok(DriverPoolAllocator {
            ctx,
            pool,
            options,
            state: Mutex::new(PoolState::default()),
        })
    }

    /// The options the allocator was created with.
    pub fn options(&self) -> DriverPoolOptions {
        self.options
    }

    /// The pool's release threshold as the driver reports it now (another user of the
    /// default pool may have changed it).
    pub fn release_threshold(&self) -> Result<u64, GpuError> {
        driver::pool_get(&self.ctx, self.pool, PoolAttribute::ReleaseThreshold)
    }

    fn state(&self) -> MutexGuard<'_, PoolState> {
        // Nothing panics while holding the lock; the state is consistent at every step.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn device(&self) -> String {
        format!("cuda:{}", self.ctx.ordinal())
    }

    fn stream(&self, id: StreamId) -> Result<Arc<CudaStream>, AllocError> {
        live_stream(id, &self.ctx).ok_or_else(|| {
            AllocError::Source(format!(
                "stream {:#x} is not a live stream of {}",
                id.0,
                self.device()
            ))
        })
    }

    fn out_of_memory(&self, requested: usize) -> AllocError {
        let (free, total) = driver::memory_info(&self.ctx).unwrap_or((0, 0));
        let stats = self.stats();
        oom_error(
            self.device(),
            requested,
            (free, total),
            &stats,
            // The driver's pool has no settings of ours that apply; the numbers still say
            // whether memory is held elsewhere.
            &[],
        )
    }

    /// Allocates on `stream`, retrying once after a context synchronisation on OOM.
    fn pool_alloc(&self, bytes: usize, stream: &CudaStream) -> Result<u64, AllocError> {
        let source = |e: GpuError| AllocError::Source(e.to_string());
        match driver::pool_alloc_async(self.pool, bytes, stream) {
            Ok(addr) => return Ok(addr),
            Err(AllocFailure::Driver(e)) => return Err(source(e)),
            Err(AllocFailure::OutOfMemory) => {}
        }
        self.state().stats.num_alloc_retries += 1;
        driver::context_synchronize(&self.ctx).map_err(source)?;
        match driver::pool_alloc_async(self.pool, bytes, stream) {
            Ok(addr) => Ok(addr),
            Err(AllocFailure::Driver(e)) => Err(source(e)),
            Err(AllocFailure::OutOfMemory) => {
                self.state().stats.num_ooms += 1;
                Err(self.out_of_memory(bytes))
            }
        }
    }

    /// Frees `addr` in stream order after all its uses.
    fn release(&self, addr: u64, block: &LiveBlock) -> Result<(), GpuError> {
        // A stream that left the registry was synchronised first, so nothing of ours is
        // pending on it and any stream may free; the legacy default stream is always there.
        let free_stream = live_stream(block.stream, &self.ctx)
            .unwrap_or_else(|| driver::legacy_default_stream(&self.ctx));
        for &other in &block.also_used_on {
            // A stream of another GPU gets an event of its own context (see
            // `memory_source::record_on_stream_id`).
            if let Some(other) = live_stream_anywhere(other, &self.ctx) {
                let used = Event::create(other.context(), false)?;
                driver::event_record(used.cuda(), &other)?;
                driver::stream_wait_event(&free_stream, used.cuda())?;
            }
        }
        // SAFETY: `addr` was allocated from `self.pool` by `pool_alloc` and was just removed
        // from `live` (so this is its only free). Every use of it is ordered before this
        // point of `free_stream`: uses on its own stream were queued there earlier; uses on
        // streams named by `record_stream` are covered by the waits above; streams no longer
        // registered have been synchronised and run nothing.
        unsafe { driver::free_async(addr, &free_stream) }
    }
}

// SAFETY: every block of a non-zero request is exactly the region
// `cuMemAllocFromPoolAsync` returned on the block's own stream from this device's default
// pool: fresh, non-null device memory of GPU `ctx.ordinal()` (what `memory_location`
// reports) of `bytes` bytes, disjoint from every other live allocation, usable in order on
// that stream (the pool reuses freed memory in stream order itself). It stays valid until
// `release` queues `cuMemFreeAsync`, after waits that order every stream passed to
// `record_stream` before the free. `live` holds exactly the blocks handed out and not freed;
// `free` (and so `free_direct`) and `record_stream` check address, size and stream against
// it before changing anything, so a foreign or already freed block is refused with no
// effect, and a live one is freed once (it leaves `live` first).
unsafe impl DeviceAllocator for DriverPoolAllocator {
    fn name(&self) -> &'static str {
        "driver-pool"
    }

    fn memory_location(&self) -> MemoryLocation {
        MemoryLocation::Device {
            ordinal: self.ctx.ordinal(),
        }
    }

    fn allocate(&self, bytes: usize, stream: StreamId) -> Result<Block, AllocError> {
        if bytes == 0 {
            self.state().stats.num_allocs += 1;
            return Ok(Block::empty(stream));
        }
        let cuda_stream = self.stream(stream)?;
        let addr = self.pool_alloc(bytes, &cuda_stream)?;
        let mut state = self.state();
        state.live.insert(
            addr,
            LiveBlock {
                size: bytes,
                requested: bytes,
                stream,
                also_used_on: Vec::new(),
            },
        );
        let stats = &mut state.stats;
        stats.num_allocs += 1;
        grow(&mut stats.allocated_bytes, bytes);
        grow(&mut stats.active_bytes, bytes);
        grow(&mut stats.requested_bytes, bytes);
        grow(&mut stats.allocations, 1);
        Ok(Block::new(addr, bytes, bytes, stream))
    }

    fn free(&self, block: Block) -> Result<(), AllocError> {
        if block.addr() == 0 && block.size() == 0 {
            return Ok(());
        }
        let addr = block.addr();
        let live = {
            let mut state = self.state();
            let live = match state.live.remove(&addr) {
                Some(l) if l.size == block.size() && l.stream == block.stream() => l,
                Some(l) => {
                    // Same address, different block: not ours to free.
                    state.live.insert(addr, l);
                    return Err(AllocError::UnknownBlock { addr });
                }
                None => return Err(AllocError::UnknownBlock { addr }),
            };
            let stats = &mut state.stats;
            shrink(&mut stats.allocated_bytes, live.size);
            shrink(&mut stats.active_bytes, live.size);
            shrink(&mut stats.requested_bytes, live.requested);
            shrink(&mut stats.allocations, 1);
            live
        };
        // On failure the block is leaked (never freed while possibly in use), and reported.
        self.release(addr, &live)
            .map_err(|e| AllocError::Source(e.to_string()))
    }

    fn free_direct(&self, block: Block) -> Result<(), AllocError> {
        // The pool cannot hand one block back to the OS: free it, then trim everything unused.
        self.free(block)?;
        self.empty_cache()
    }

    fn record_stream(&self, block: &Block, stream: StreamId) -> Result<(), AllocError> {
        if block.addr() == 0 && block.size() == 0 {
            return Ok(());
        }
        let mut state = self.state();
        let live = state
            .live
            .get_mut(&block.addr())
            .filter(|l| l.size == block.size() && l.stream == block.stream())
            .ok_or(AllocError::UnknownBlock { addr: block.addr() })?;
        if stream != live.stream && !live.also_used_on.contains(&stream) {
            live.also_used_on.push(stream);
        }
        Ok(())
    }

    fn empty_cache(&self) -> Result<(), AllocError> {
        let source = |e: GpuError| AllocError::Source(e.to_string());
        // Frees still queued keep their memory in use until they run: wait for them first.
        driver::context_synchronize(&self.ctx).map_err(source)?;
        driver::pool_trim_to(&self.ctx, self.pool, 0).map_err(source)
    }

    fn stats(&self) -> AllocatorStats {
        let mut stats = self.state().stats.clone();
        // The pool's figures, when the driver answers; otherwise what we handed out is the
        // best lower bound for what is reserved.
        let reserved = driver::pool_get(&self.ctx, self.pool, PoolAttribute::ReservedCurrent);
        let reserved_high = driver::pool_get(&self.ctx, self.pool, PoolAttribute::ReservedHigh);
        stats.reserved_bytes = match (reserved, reserved_high) {
            (Ok(current), Ok(high)) => Stat {
                current: usize::try_from(current).unwrap_or(usize::MAX),
                peak: usize::try_from(high).unwrap_or(usize::MAX),
            },
            _ => stats.allocated_bytes,
        };
        stats
    }

    fn reset_peak_stats(&self) {
        {
            let mut state = self.state();
            let stats = &mut state.stats;
            for stat in [
                &mut stats.allocated_bytes,
                &mut stats.active_bytes,
                &mut stats.requested_bytes,
                &mut stats.allocations,
                &mut stats.segments,
            ] {
                stat.peak = stat.current;
            }
        }
        // Setting a high-water mark to 0 resets it to the current value. This method cannot
        // report errors; a failed reset only leaves the pool's peak higher than asked.
        let _ = driver::pool_set(&self.ctx, self.pool, PoolAttribute::ReservedHigh, 0);
        let _ = driver::pool_set(&self.ctx, self.pool, PoolAttribute::UsedHigh, 0);
    }
}

impl fmt::Debug for DriverPoolAllocator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DriverPoolAllocator")
            .field("ordinal", &self.ctx.ordinal())
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

static_assertions::assert_impl_all!(DriverPoolAllocator: Send, Sync);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_threshold_keeps_everything() {
        assert_eq!(DriverPoolOptions::default().release_threshold, u64::MAX);
    }

    #[test]
    fn stats_track_current_and_peak() {
        let mut stat = Stat::default();
        grow(&mut stat, 300);
        grow(&mut stat, 200);
        shrink(&mut stat, 400);
        assert_eq!(
            stat,
            Stat {
                current: 100,
                peak: 500
            }
        );
        shrink(&mut stat, 1000);
        assert_eq!(
            stat,
            Stat {
                current: 0,
                peak: 500
            }
        );
    }
}
