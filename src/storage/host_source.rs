//! [`HostMemorySource`]: plain host memory with a capacity and simulated streams, for tests
//! and CPU use of the allocation algorithms.
//!
//! The pooled and caching allocators only ever talk to a [`MemorySource`]. This source gives
//! them real memory (so tests can write and check contents), a hard capacity (so
//! out-of-memory and its recovery can be driven exactly), and streams whose events complete
//! only when the test says so (so stream-ordered reuse can be observed step by step).

use std::alloc::Layout;
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use super::arith::to_u64;
use super::locking::lock;
use super::source::{MemoryLocation, MemorySource, SourceError, StreamId};

/// Alignment of every region, the same as `cudaMalloc`'s minimum guarantee.
pub const HOST_ALIGNMENT: usize = 256;

/// A [`MemorySource`] over host memory from the global allocator (`std::alloc`), aligned to
/// [`HOST_ALIGNMENT`], with a byte capacity and simulated streams.
///
/// Streams are counters: [`record_event`](MemorySource::record_event) on a stream returns
/// the next sequence number, and an event has completed once
/// [`complete_stream`](Self::complete_stream) (or
/// [`synchronize`](MemorySource::synchronize), which completes every stream) was called
/// after it was recorded. Nothing completes by itself, so tests decide when queued "work"
/// finishes.
///
/// Invariants:
/// - `used` is the sum of the sizes of the live regions and never exceeds `capacity`.
/// - Every live region was returned by `std::alloc::alloc_zeroed` with its size and
///   [`HOST_ALIGNMENT`], and is freed exactly once: by [`free`](MemorySource::free) or by
///   `Drop`.
/// - For every stream, `completed <= recorded`.
///
/// Regions are zeroed when allocated (so every byte [`read`](Self::read) returns is
/// initialized). [`write`](Self::write) and [`read`](Self::read) give safe, checked
/// access to live regions; they hold the source's lock while copying, so they are meant for
/// tests, not for bandwidth.
#[derive(Debug)]
pub struct HostMemorySource {
    capacity: usize,
    reports_mem_info: bool,
    state: Mutex<HostState>,
}

#[derive(Debug, Default)]
struct HostState {
    /// Bytes in live regions.
    used: usize,
    /// Live regions: start address to size.
    regions: BTreeMap<u64, usize>,
    allocate_calls: u64,
    free_calls: u64,
    synchronize_calls: u64,
    streams: HashMap<StreamId, StreamClock>,
    /// A failure to return from the next `allocate` call (fault injection).
    fail_next: Option<SourceError>,
}

#[derive(Debug, Default, Clone, Copy)]
struct StreamClock {
    /// Sequence number of the last event recorded.
    recorded: u64,
    /// Events with a sequence number up to this one have completed.
    completed: u64,
}

/// An event recorded on a simulated stream of a [`HostMemorySource`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostEvent {
    stream: StreamId,
    seq: u64,
}

impl HostEvent {
    /// The stream it was recorded on.
    pub fn stream(&self) -> StreamId {
        self.stream
    }
}

impl HostMemorySource {
    /// A source that hands out at most `capacity` bytes at a time.
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity,
            reports_mem_info: true,
            state: Mutex::new(HostState::default()),
        }
    }

    /// A source limited only by the machine (capacity `usize::MAX`, and no
    /// [`mem_info`](MemorySource::mem_info), so pooled allocators keep no reserve).
    pub fn unbounded() -> Self {
        Self::new(usize::MAX).without_mem_info()
    }

    /// The same source, but [`mem_info`](MemorySource::mem_info) returns `None`, like a
    /// driver that cannot report free memory.
    pub fn without_mem_info(mut self) -> Self {
        self.reports_mem_info = false;
        self
    }

    /// The capacity in bytes.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Marks every event recorded on `stream` so far as completed.
    pub fn complete_stream(&self, stream: StreamId) {
        let mut st = lock(&self.state);
        if let Some(clock) = st.streams.get_mut(&stream) {
            clock.completed = clock.recorded;
        }
    }

    /// Marks every event recorded so far on every stream as completed (like
    /// [`synchronize`](MemorySource::synchronize), without counting a synchronize call).
    pub fn complete_all_streams(&self) {
        let mut st = lock(&self.state);
        complete_all(&mut st);
    }

    /// Events recorded on `stream` that have not completed.
    pub fn pending_events(&self, stream: StreamId) -> u64 {
        let st = lock(&self.state);
        st.streams
            .get(&stream)
            .map_or(0, |c| c.recorded - c.completed)
    }

    /// Events recorded on `stream` so far (the sequence number of the last one).
    pub fn recorded_events(&self, stream: StreamId) -> u64 {
        lock(&self.state)
            .streams
            .get(&stream)
            .map_or(0, |c| c.recorded)
    }

    /// Events on `stream` that have completed (those with sequence numbers up to this).
    pub fn completed_events(&self, stream: StreamId) -> u64 {
        lock(&self.state)
            .streams
            .get(&stream)
            .map_or(0, |c| c.completed)
    }

    /// Calls to [`allocate`](MemorySource::allocate), failed ones included.
    pub fn allocate_calls(&self) -> u64 {
        lock(&self.state).allocate_calls
    }

    /// Calls to [`free`](MemorySource::free), failed ones included.
    pub fn free_calls(&self) -> u64 {
        lock(&self.state).free_calls
    }

    /// Calls to [`synchronize`](MemorySource::synchronize).
    pub fn synchronize_calls(&self) -> u64 {
        lock(&self.state).synchronize_calls
    }

    /// Regions handed out and not freed.
    pub fn live_regions(&self) -> usize {
        lock(&self.state).regions.len()
    }

    /// Bytes in regions handed out and not freed.
    pub fn live_bytes(&self) -> usize {
        lock(&self.state).used
    }

    /// Makes the next [`allocate`](MemorySource::allocate) call fail with `error` (to test
    /// how allocators report driver failures).
    pub fn fail_next_allocate(&self, error: SourceError) {
        lock(&self.state).fail_next = Some(error);
    }

    /// Copies `data` to `addr`, which must lie with all of `data` inside one live region.
    pub fn write(&self, addr: u64, data: &[u8]) -> Result<(), SourceError> {
        let st = lock(&self.state);
        let ptr = region_ptr(&st, addr, data.len())?;
        // SAFETY: `region_ptr` checked that `ptr .. ptr + data.len()` lies inside a live
        // region this source allocated. The region cannot be freed while we hold the lock,
        // and every safe access to region memory goes through this lock, so nothing else
        // touches it during the copy. `copy` (memmove) is correct even if `data` itself
        // points into the region.
        unsafe { std::ptr::copy(data.as_ptr(), ptr, data.len()) };
        Ok(())
    }

    /// Copies `out.len()` bytes from `addr`, which must lie with all of them inside one live
    /// region, into `out`.
    pub fn read(&self, addr: u64, out: &mut [u8]) -> Result<(), SourceError> {
        let st = lock(&self.state);
        let ptr = region_ptr(&st, addr, out.len())?;
        // SAFETY: as in `write`: the range is inside a live region that stays live and
        // untouched by other safe code while we hold the lock. Every byte of it is
        // initialized, since regions are allocated zeroed.
        unsafe { std::ptr::copy(ptr.cast_const(), out.as_mut_ptr(), out.len()) };
        Ok(())
    }
}

fn complete_all(st: &mut HostState) {
    for clock in st.streams.values_mut() {
        clock.completed = clock.recorded;
    }
}

/// The pointer for `addr` if `addr .. addr + len` lies inside one live region.
fn region_ptr(st: &HostState, addr: u64, len: usize) -> Result<*mut u8, SourceError> {
    let outside = || {
        SourceError::Other(format!(
            "{len} bytes at {addr:#x} are not inside a live host region"
        ))
    };
    let (&start, &size) = st.regions.range(..=addr).next_back().ok_or_else(outside)?;
    let offset = addr - start;
    let end = offset.checked_add(to_u64(len)).ok_or_else(outside)?;
    if end > to_u64(size) {
        return Err(outside());
    }
    let addr = usize::try_from(addr).map_err(|_| outside())?;
    Ok(std::ptr::with_exposed_provenance_mut(addr))
}

// SAFETY: every region comes from `std::alloc::alloc_zeroed` with its size and
// `HOST_ALIGNMENT` (so it is live, non-null, 256-byte aligned and disjoint from all other
// memory: the global allocator's own contract), and is deallocated only by `free` of the
// same address and size (or by `Drop`, when the source is gone), so it stays valid until
// then. It is ordinary host memory, which `location` reports. Events complete only when the
// test completes their stream or synchronizes, and the simulated streams run no work, so no
// event or synchronize ever claims work finished that is still running.
unsafe impl MemorySource for HostMemorySource {
    type Event = HostEvent;

    fn name(&self) -> String {
        "host".to_owned()
    }

    fn location(&self) -> MemoryLocation {
        MemoryLocation::Host
    }

    fn allocate(&self, bytes: usize) -> Result<u64, SourceError> {
        let mut st = lock(&self.state);
        st.allocate_calls += 1;
        if let Some(error) = st.fail_next.take() {
            return Err(error);
        }
        if bytes == 0 {
            return Err(SourceError::Other("zero-byte host allocation".to_owned()));
        }
        if bytes > self.capacity - st.used {
            return Err(SourceError::OutOfMemory);
        }
        let layout =
            Layout::from_size_align(bytes, HOST_ALIGNMENT).map_err(|_| SourceError::OutOfMemory)?;
        // SAFETY: `layout` has a non-zero size (checked above).
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err(SourceError::OutOfMemory);
        }
        // Exposing the provenance lets `free`, `read` and `write` turn the address back into
        // a usable pointer.
        let addr = to_u64(ptr.expose_provenance());
        st.used += bytes;
        st.regions.insert(addr, bytes);
        Ok(addr)
    }

    unsafe fn free(&self, addr: u64, bytes: usize) -> Result<(), SourceError> {
        let mut st = lock(&self.state);
        st.free_calls += 1;
        if st.regions.get(&addr) != Some(&bytes) {
            return Err(SourceError::Other(format!(
                "free of {bytes} bytes at {addr:#x}: not a live host region of that size"
            )));
        }
        let layout = Layout::from_size_align(bytes, HOST_ALIGNMENT)
            .map_err(|e| SourceError::Other(e.to_string()))?;
        let ptr_addr = usize::try_from(addr).map_err(|e| SourceError::Other(e.to_string()))?;
        st.regions.remove(&addr);
        st.used -= bytes;
        let ptr = std::ptr::with_exposed_provenance_mut::<u8>(ptr_addr);
        // SAFETY: the region table held `addr` with exactly `bytes`, so `ptr` was returned by
        // `std::alloc::alloc_zeroed` with this same layout; we removed it from the table, so it is
        // deallocated once. The caller guarantees no work still uses it.
        unsafe { std::alloc::dealloc(ptr, layout) };
        Ok(())
    }

    fn record_event(&self, stream: StreamId) -> Result<HostEvent, SourceError> {
        let mut st = lock(&self.state);
        let clock = st.streams.entry(stream).or_default();
        clock.recorded += 1;
        Ok(HostEvent {
            stream,
            seq: clock.recorded,
        })
    }

    fn event_completed(&self, event: &HostEvent) -> Result<bool, SourceError> {
        let st = lock(&self.state);
        Ok(st
            .streams
            .get(&event.stream)
            .is_some_and(|c| c.completed >= event.seq))
    }

    fn synchronize(&self) -> Result<(), SourceError> {
        let mut st = lock(&self.state);
        st.synchronize_calls += 1;
        complete_all(&mut st);
        Ok(())
    }

    fn mem_info(&self) -> Option<(usize, usize)> {
        if !self.reports_mem_info {
            return None;
        }
        let st = lock(&self.state);
        Some((self.capacity - st.used, self.capacity))
    }
}

impl Drop for HostMemorySource {
    fn drop(&mut self) {
        // Regions an allocator never gave back (leaked blocks) are returned here, so tests
        // do not leak host memory.
        let st = super::locking::get_mut(&mut self.state);
        for (&addr, &bytes) in &st.regions {
            let (Ok(layout), Ok(ptr_addr)) = (
                Layout::from_size_align(bytes, HOST_ALIGNMENT),
                usize::try_from(addr),
            ) else {
                continue;
            };
            let ptr = std::ptr::with_exposed_provenance_mut::<u8>(ptr_addr);
            // SAFETY: every table entry is a live region allocated with this layout; the
            // source is being dropped, so no one can reach the region through it any more,
            // and each entry is visited once.
            unsafe { std::alloc::dealloc(ptr, layout) };
        }
        st.regions.clear();
        st.used = 0;
    }
}
