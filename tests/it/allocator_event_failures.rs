//! What the event-guarding allocators (caching, pooled, caching host) do when the source
//! cannot record an event at a free: they synchronize instead, report the failure and take
//! the block back for reuse; if synchronizing fails too, they leak the block rather than
//! hand out memory queued work may still use. One implementation serves all three; these
//! tests hold each of them to it.

use std::sync::atomic::{AtomicBool, Ordering};

use typestate_tensor::error::AllocError;
use typestate_tensor::storage::{
    Block, BlockState, CachingAllocator, CachingHostAllocator, DeviceAllocator, HostEvent,
    HostMemorySource, MemoryLocation, MemorySource, PooledAllocator, SegmentSnapshot, SourceError,
    StreamId,
};

const S0: StreamId = StreamId(0);
const S1: StreamId = StreamId(1);
/// Recording an event on this stream always fails.
const BAD: StreamId = StreamId(9);

/// Host memory whose events cannot be recorded on [`BAD`], and whose `synchronize` fails
/// while `sync_fails` is set.
struct Flaky {
    inner: HostMemorySource,
    sync_fails: AtomicBool,
}

impl Flaky {
    fn new() -> Self {
        Flaky {
            inner: HostMemorySource::new(64 << 20),
            sync_fails: AtomicBool::new(false),
        }
    }
}

fn record_failure() -> AllocError {
    AllocError::Source("flaky: no events on stream 9".to_owned())
}

// SAFETY: regions, their location and events are the inner host source's, which upholds
// the contract; the injected failures only make `record_event` and `synchronize` return
// errors, never report unfinished work as finished.
unsafe impl MemorySource for Flaky {
    type Event = HostEvent;

    fn name(&self) -> String {
        "flaky".to_owned()
    }

    fn location(&self) -> MemoryLocation {
        self.inner.location()
    }

    fn allocate(&self, bytes: usize) -> Result<u64, SourceError> {
        self.inner.allocate(bytes)
    }

    unsafe fn free(&self, addr: u64, bytes: usize) -> Result<(), SourceError> {
        // SAFETY: the caller upholds `free`'s contract for this source, whose regions are
        // the inner source's.
        unsafe { self.inner.free(addr, bytes) }
    }

    fn record_event(&self, stream: StreamId) -> Result<HostEvent, SourceError> {
        if stream == BAD {
            return Err(SourceError::Other("no events on stream 9".to_owned()));
        }
        self.inner.record_event(stream)
    }

    fn event_completed(&self, event: &HostEvent) -> Result<bool, SourceError> {
        self.inner.event_completed(event)
    }

    fn synchronize(&self) -> Result<(), SourceError> {
        if self.sync_fails.load(Ordering::SeqCst) {
            return Err(SourceError::Other("synchronize failed".to_owned()));
        }
        self.inner.synchronize()
    }

    fn mem_info(&self) -> Option<(usize, usize)> {
        self.inner.mem_info()
    }
}

/// One allocator under test, with the views the checks need.
struct Case<'a, A> {
    allocator: &'a A,
    source: &'a Flaky,
    snapshot: fn(&A) -> Vec<SegmentSnapshot>,
    /// Whether the allocation stream itself gets an event at the free (host memory).
    own_stream_recorded: bool,
}

impl<A: DeviceAllocator> Case<'_, A> {
    fn alloc(&self, bytes: usize, stream: StreamId) -> Block {
        self.allocator
            .allocate(bytes, stream)
            .unwrap_or_else(|e| panic!("allocating {bytes} bytes: {e}"))
    }

    fn state_of(&self, addr: u64) -> BlockState {
        (self.snapshot)(self.allocator)
            .iter()
            .flat_map(|s| &s.blocks)
            .find(|b| b.addr == addr)
            .map(|b| b.state)
            .unwrap_or_else(|| panic!("no block at {addr:#x}"))
    }

    /// A failure after some events were recorded: synchronize, report, reuse at once.
    fn failure_after_some_events(&self) {
        let x = self.alloc(4096, S0);
        let x_addr = x.addr();
        self.allocator.record_stream(&x, S1).unwrap();
        self.allocator.record_stream(&x, BAD).unwrap();
        let syncs = self.source.inner.synchronize_calls();
        assert_eq!(self.allocator.free(x), Err(record_failure()));
        assert_eq!(self.source.inner.synchronize_calls(), syncs + 1);
        // Streams before the failing one got their events, in order.
        assert_eq!(self.source.inner.recorded_events(S1), 1);
        let own = u64::from(self.own_stream_recorded);
        assert_eq!(self.source.inner.recorded_events(S0), own);
        assert_eq!(self.state_of(x_addr), BlockState::Free);
        let stats = self.allocator.stats();
        assert_eq!(
            (stats.allocated_bytes.current, stats.active_bytes.current),
            (0, 0)
        );
        let y = self.alloc(4096, S0);
        assert_eq!(y.addr(), x_addr, "the block is reusable at once");
        self.allocator.free_direct(y).unwrap();
        assert_eq!(self.allocator.check_err(), Ok(()));
    }

    /// A failure at the first event: nothing recorded, synchronize, report, reuse at once.
    fn failure_at_the_first_event(&self) {
        // Host blocks record their allocation stream first, so fail on it directly.
        let stream = if self.own_stream_recorded { BAD } else { S0 };
        let x = self.alloc(8192, stream);
        let x_addr = x.addr();
        self.allocator.record_stream(&x, BAD).unwrap();
        assert_eq!(self.allocator.free(x), Err(record_failure()));
        assert_eq!(self.state_of(x_addr), BlockState::Free);
        assert_eq!(self.allocator.stats().active_bytes.current, 0);
        let y = self.alloc(8192, stream);
        assert_eq!(y.addr(), x_addr);
        self.allocator.free_direct(y).unwrap();
    }

    /// Recording and synchronizing both fail: the block is leaked, never reused.
    fn failure_without_synchronize_leaks(&self) {
        let x = self.alloc(16384, S0);
        let x_addr = x.addr();
        self.allocator.record_stream(&x, S1).unwrap();
        self.allocator.record_stream(&x, BAD).unwrap();
        self.source.sync_fails.store(true, Ordering::SeqCst);
        assert_eq!(self.allocator.free(x), Err(record_failure()));
        self.source.sync_fails.store(false, Ordering::SeqCst);
        self.source.inner.complete_all_streams();
        self.allocator.empty_cache().unwrap();
        assert_eq!(self.state_of(x_addr), BlockState::AwaitingEvents);
        let stats = self.allocator.stats();
        assert_eq!(
            (stats.allocated_bytes.current, stats.active_bytes.current),
            (0, 16384)
        );
        let y = self.alloc(16384, S0);
        assert_ne!(y.addr(), x_addr, "a leaked block is never handed out again");
        self.allocator.free_direct(y).unwrap();
    }

    fn run(&self) {
        self.failure_after_some_events();
        self.failure_at_the_first_event();
        self.failure_without_synchronize_leaks();
    }
}

#[test]
fn caching_allocator_recovers_from_failed_event_records() {
    let a = CachingAllocator::new(Flaky::new());
    Case {
        allocator: &a,
        source: a.source(),
        snapshot: CachingAllocator::snapshot,
        own_stream_recorded: false,
    }
    .run();
}

#[test]
fn pooled_allocator_recovers_from_failed_event_records() {
    let a = PooledAllocator::new(Flaky::new());
    Case {
        allocator: &a,
        source: a.source(),
        snapshot: PooledAllocator::snapshot,
        own_stream_recorded: false,
    }
    .run();
}

#[test]
fn caching_host_allocator_recovers_from_failed_event_records() {
    let a = CachingHostAllocator::new(Flaky::new());
    Case {
        allocator: &a,
        source: a.source(),
        snapshot: CachingHostAllocator::snapshot,
        own_stream_recorded: true,
    }
    .run();
}
