//! Shared helpers for the allocator suites: the source hooks a suite needs, an independent
//! recount of statistics from snapshots, and layout checks.
//!
//! The suites are generic over the memory source (`SuiteSource`), so the same checks run
//! against `HostMemorySource` here and against device memory on the GPU machine. For a
//! device source, a test file declares `mod common;`, implements `SuiteSource` for the
//! source (copies for `suite_write` / `suite_read`, a synchronize for `suite_complete`,
//! `None` from `suite_live` and `suite_clock` if it cannot count), and invokes e.g.
//! `common::caching_suite::caching_suite_tests!(|| make_source(), skip_unless: gpu_available);`.

#![allow(dead_code, unused_macros, unused_imports)]

pub mod caching_suite;
pub mod device;
pub mod host_suite;
pub mod matmul_ref;
pub mod pooled_suite;
pub mod rng;
pub mod stress;

use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, TestRunner};
use typestate_tensor::error::AllocError;
use typestate_tensor::storage::{
    AllocatorStats, Block, BlockState, CachingAllocator, CachingHostAllocator, DeviceAllocator,
    HostMemorySource, MemorySource, PooledAllocator, SegmentSnapshot, StreamId,
};

/// What the suites need from a source beyond [`MemorySource`].
pub trait SuiteSource: MemorySource {
    /// Writes `data` at `addr` (inside memory an allocator handed out).
    fn suite_write(&self, addr: u64, data: &[u8]);
    /// Reads `len` bytes at `addr`.
    fn suite_read(&self, addr: u64, len: usize) -> Vec<u8>;
    /// Makes every event recorded so far on `stream` complete (a device synchronizes).
    fn suite_complete(&self, stream: StreamId);
    /// `(regions, bytes)` the source has handed out and not taken back, if it can tell.
    fn suite_live(&self) -> Option<(usize, usize)>;
    /// `(recorded, completed)` event counts of `stream`, if the source can tell (events
    /// complete in order, so an event numbered `n` has completed once `completed >= n`).
    fn suite_clock(&self, stream: StreamId) -> Option<(u64, u64)>;
}

impl SuiteSource for HostMemorySource {
    fn suite_write(&self, addr: u64, data: &[u8]) {
        self.write(addr, data).expect("write inside a live region");
    }

    fn suite_read(&self, addr: u64, len: usize) -> Vec<u8> {
        let mut out = vec![0; len];
        self.read(addr, &mut out)
            .expect("read inside a live region");
        out
    }

    fn suite_complete(&self, stream: StreamId) {
        self.complete_stream(stream);
    }

    fn suite_live(&self) -> Option<(usize, usize)> {
        Some((self.live_regions(), self.live_bytes()))
    }

    fn suite_clock(&self, stream: StreamId) -> Option<(u64, u64)> {
        Some((self.recorded_events(stream), self.completed_events(stream)))
    }
}

/// Runs `test` when `available()` says the memory source can be used here; otherwise
/// prints a line saying the test is skipped (a GPU source on a machine without a GPU).
pub fn run_if(available: impl FnOnce() -> bool, test: impl FnOnce()) {
    if available() {
        test();
    } else {
        eprintln!("skipping: memory source not available");
    }
}

/// The test module of suite `$module` (a module of `common`) for sources from `$make`:
/// one `#[test]` per named suite function (`fn name()` runs `suite::name(($make)())`),
/// plus the `$extra` items, which may use `suite` and `run_if`. Every test runs through
/// [`run_if`] with `$available`.
macro_rules! suite_module {
    ($module:ident, $make:expr, $available:expr; [$($name:ident),+ $(,)?] $($extra:item)*) => {
        mod $module {
            use super::*;
            use crate::common::run_if;
            use crate::common::$module as suite;

            $(
                #[test]
                fn $name() {
                    run_if($available, || suite::$name(($make)()));
                }
            )+

            $($extra)*
        }
    };
    // A suite over GPU memory: ignored (not passed) unless the `gpu-tests` feature is on.
    (gpu $module:ident, $make:expr, $available:expr; [$($name:ident),+ $(,)?] $($extra:item)*) => {
        mod $module {
            use super::*;
            use crate::common::run_if;
            use crate::common::$module as suite;

            $(
                #[test]
                #[cfg(feature = "gpu-tests")]
                fn $name() {
                    run_if($available, || suite::$name(($make)()));
                }

                // Not compiled without `gpu-tests` (see `common::device::test_device!`).
                #[test]
                #[cfg(not(feature = "gpu-tests"))]
                #[ignore = "needs a GPU: cargo test --features gpu-tests"]
                fn $name() {
                    crate::common::device::not_built(stringify!($name));
                }
            )+

            $($extra)*
        }
    };
}
pub(crate) use suite_module;

pub const KIB: usize = 1 << 10;
pub const MIB: usize = 1 << 20;

/// `(num_alloc_retries, num_segment_frees, num_ooms)`: what out-of-memory recovery did.
pub fn recovery_counters(stats: &AllocatorStats) -> (u64, u64, u64) {
    (
        stats.num_alloc_retries,
        stats.num_segment_frees,
        stats.num_ooms,
    )
}

/// Empties `a`'s cache, asserts that it holds no segment any more, and returns its
/// statistics.
pub fn empty_and_assert_released<A: DeviceAllocator + ?Sized>(a: &A) -> AllocatorStats {
    a.empty_cache().unwrap();
    let stats = a.stats();
    assert_eq!(
        (stats.reserved_bytes.current, stats.segments.current),
        (0, 0)
    );
    stats
}

/// A block naming memory its caller does not own: the forged handle allocators must refuse.
pub fn forge(addr: u64, size: usize, requested: usize, stream: StreamId) -> Block {
    // SAFETY: this breaks `from_raw_parts`'s contract on purpose, to test the allocators'
    // own defence: the block is only ever given to an allocator's `free`, `free_direct` or
    // `record_stream`, which must refuse it without touching memory, and nothing reads or
    // writes through its address.
    unsafe { Block::from_raw_parts(addr, size, requested, stream) }
}

/// Frees `block`, then asserts that freeing it again (through a copy) is refused.
pub fn assert_second_free_refused<A: DeviceAllocator + ?Sized>(a: &A, block: Block) {
    let addr = block.addr();
    let copy = forge(
        block.addr(),
        block.size(),
        block.requested(),
        block.stream(),
    );
    a.free(block).unwrap();
    assert_eq!(a.free(copy), Err(AllocError::UnknownBlock { addr }));
}

/// Asserts that a 0-byte request on `stream` gets an empty block (address 0), which frees.
pub fn assert_zero_bytes_give_an_empty_block<A: DeviceAllocator + ?Sized>(a: &A, stream: StreamId) {
    let empty = a.allocate(0, stream).unwrap();
    assert_eq!((empty.addr(), empty.size()), (0, 0));
    a.free(empty).unwrap();
}

/// Current values of the statistics, recounted from a snapshot (peaks and counters zero).
pub fn recount(segments: &[SegmentSnapshot]) -> AllocatorStats {
    let mut stats = AllocatorStats::default();
    for segment in segments {
        stats.segments.current += 1;
        stats.reserved_bytes.current += segment.size;
        for block in &segment.blocks {
            match block.state {
                BlockState::Allocated => {
                    stats.allocations.current += 1;
                    stats.allocated_bytes.current += block.size;
                    stats.active_bytes.current += block.size;
                    stats.requested_bytes.current += block.requested;
                }
                BlockState::AwaitingEvents => {
                    stats.active_bytes.current += block.size;
                    stats.requested_bytes.current += block.requested;
                }
                BlockState::Free => {}
            }
        }
    }
    stats
}

/// Asserts that the current values of `stats` equal the recount of `segments`.
pub fn assert_stats_match(stats: &AllocatorStats, segments: &[SegmentSnapshot]) {
    let want = recount(segments);
    let pairs = [
        (
            "allocated_bytes",
            stats.allocated_bytes.current,
            want.allocated_bytes.current,
        ),
        (
            "reserved_bytes",
            stats.reserved_bytes.current,
            want.reserved_bytes.current,
        ),
        (
            "active_bytes",
            stats.active_bytes.current,
            want.active_bytes.current,
        ),
        (
            "requested_bytes",
            stats.requested_bytes.current,
            want.requested_bytes.current,
        ),
        ("segments", stats.segments.current, want.segments.current),
        (
            "allocations",
            stats.allocations.current,
            want.allocations.current,
        ),
    ];
    for (name, got, want) in pairs {
        assert_eq!(got, want, "{name}: bookkeeping {got} != recount {want}");
    }
    for (name, stat) in [
        ("allocated_bytes", stats.allocated_bytes),
        ("reserved_bytes", stats.reserved_bytes),
        ("active_bytes", stats.active_bytes),
        ("segments", stats.segments),
        ("allocations", stats.allocations),
    ] {
        assert!(
            stat.peak >= stat.current,
            "{name}: peak {} below current {}",
            stat.peak,
            stat.current
        );
    }
}

/// Checks the shape of a snapshot: segments do not overlap; each segment's blocks tile it
/// in address order and share its stream; with `merged`, no two neighbouring blocks are
/// both free (the caching allocator merges them).
pub fn assert_well_formed(segments: &[SegmentSnapshot], merged: bool) {
    for pair in segments.windows(2) {
        assert!(
            pair[0].addr + pair[0].size as u64 <= pair[1].addr,
            "segments overlap: {:#x}+{} and {:#x}",
            pair[0].addr,
            pair[0].size,
            pair[1].addr
        );
    }
    for segment in segments {
        assert!(
            !segment.blocks.is_empty(),
            "segment {:#x} has no blocks",
            segment.addr
        );
        let mut cursor = segment.addr;
        for block in &segment.blocks {
            assert_eq!(
                block.addr, cursor,
                "blocks of segment {:#x} do not tile it",
                segment.addr
            );
            assert!(block.size > 0);
            assert_eq!(block.stream, segment.stream);
            if block.state == BlockState::Free {
                assert_eq!(block.requested, 0);
            } else {
                assert!(block.requested <= block.size);
            }
            cursor += block.size as u64;
        }
        assert_eq!(
            cursor,
            segment.addr + segment.size as u64,
            "blocks do not fill segment"
        );
        if merged {
            for pair in segment.blocks.windows(2) {
                assert!(
                    !(pair[0].state == BlockState::Free && pair[1].state == BlockState::Free),
                    "neighbouring free blocks at {:#x} and {:#x} were not merged",
                    pair[0].addr,
                    pair[1].addr
                );
            }
        }
    }
}

/// Asserts that `held` (blocks a test holds) are pairwise disjoint, each appears in the
/// snapshot as an allocated block with its address, size and stream, and the snapshot has
/// no other allocated blocks.
pub fn assert_held_match(held: &[&Block], segments: &[SegmentSnapshot]) {
    let mut spans: Vec<(u64, usize)> = held.iter().map(|b| (b.addr(), b.size())).collect();
    spans.sort_unstable();
    for pair in spans.windows(2) {
        assert!(
            pair[0].0 + pair[0].1 as u64 <= pair[1].0,
            "live blocks overlap: {:#x}+{} and {:#x}",
            pair[0].0,
            pair[0].1,
            pair[1].0
        );
    }
    let allocated: Vec<_> = segments
        .iter()
        .flat_map(|s| s.blocks.iter())
        .filter(|b| b.state == BlockState::Allocated)
        .collect();
    assert_eq!(
        allocated.len(),
        held.len(),
        "allocated blocks in snapshot vs held"
    );
    for block in held {
        let found = allocated
            .iter()
            .find(|b| b.addr == block.addr())
            .unwrap_or_else(|| {
                panic!(
                    "held block {:#x} is not allocated in the snapshot",
                    block.addr()
                )
            });
        assert_eq!(found.size, block.size());
        assert_eq!(found.stream, block.stream());
        assert_eq!(found.requested, block.requested());
    }
}

/// A byte pattern that differs with `seed` and along its length (never all zero).
pub fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            // xorshift64
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8 | 1
        })
        .collect()
}

/// Spans of `block` that tests fill with a pattern: all of a small block, else its first
/// and last 256 bytes (enough to catch overlaps without writing megabytes).
pub fn probe_spans(block: &Block) -> Vec<(u64, usize)> {
    let len = block.requested();
    if len <= 512 {
        vec![(block.addr(), len)]
    } else {
        vec![
            (block.addr(), 256),
            (block.addr() + (len - 256) as u64, 256),
        ]
    }
}

/// Writes the pattern for `seed` into the probe spans of `block`.
pub fn fill<S: SuiteSource>(source: &S, block: &Block, seed: u64) {
    for (i, (addr, len)) in probe_spans(block).into_iter().enumerate() {
        source.suite_write(addr, &pattern(seed ^ ((i as u64) << 32), len));
    }
}

/// Asserts the probe spans of `block` still hold the pattern for `seed`.
pub fn check<S: SuiteSource>(source: &S, block: &Block, seed: u64) {
    for (i, (addr, len)) in probe_spans(block).into_iter().enumerate() {
        assert_eq!(
            source.suite_read(addr, len),
            pattern(seed ^ ((i as u64) << 32), len),
            "contents of block {:#x} were overwritten",
            block.addr()
        );
    }
}

/// What the suites inspect on an allocator beyond [`DeviceAllocator`].
pub trait Inspect<S: SuiteSource>: DeviceAllocator {
    /// Its segments and blocks.
    fn snapshot(&self) -> Vec<SegmentSnapshot>;
    /// Its source.
    fn source(&self) -> &S;
    /// Returns blocks whose events completed to the cache.
    fn process_events(&self) -> Result<(), AllocError>;
    /// Whether neighbouring free blocks must have been merged.
    fn merges(&self) -> bool;
    /// Whether the allocation stream counts as a use that must complete before reuse
    /// (host memory: the CPU does not wait for streams).
    fn allocation_stream_is_a_use(&self) -> bool;
}

macro_rules! impl_inspect {
    ($ty:ident, $merges:expr, $alloc_stream_use:expr) => {
        impl<S: SuiteSource> Inspect<S> for $ty<S> {
            fn snapshot(&self) -> Vec<SegmentSnapshot> {
                $ty::snapshot(self)
            }
            fn source(&self) -> &S {
                $ty::source(self)
            }
            fn process_events(&self) -> Result<(), AllocError> {
                $ty::process_events(self)
            }
            fn merges(&self) -> bool {
                $merges
            }
            fn allocation_stream_is_a_use(&self) -> bool {
                $alloc_stream_use
            }
        }
    };
}
impl_inspect!(CachingAllocator, true, false);
impl_inspect!(PooledAllocator, false, false);
impl_inspect!(CachingHostAllocator, false, true);

/// Asserts every bookkeeping invariant visible from outside, with `held` the blocks the
/// test holds: a well-formed snapshot, statistics equal to its recount, held blocks
/// disjoint and allocated, and the source holding exactly the segments.
pub fn assert_consistent<S: SuiteSource, A: Inspect<S>>(a: &A, held: &[&Block]) {
    let snapshot = a.snapshot();
    let stats = a.stats();
    assert_well_formed(&snapshot, a.merges());
    assert_stats_match(&stats, &snapshot);
    assert_held_match(held, &snapshot);
    if let Some((regions, bytes)) = a.source().suite_live() {
        assert_eq!(regions, snapshot.len(), "source regions vs segments");
        assert_eq!(
            bytes, stats.reserved_bytes.current,
            "source bytes vs reserved"
        );
    }
}

/// One step of a random allocator workload.
#[derive(Clone, Debug)]
pub enum Op {
    /// Allocate `size` bytes on stream `stream`.
    Alloc { size: usize, stream: u64 },
    /// Free the held block at `index` (modulo the count).
    Free { index: usize },
    /// `free_direct` the held block at `index`.
    FreeDirect { index: usize },
    /// `record_stream` the held block at `index` on `stream`.
    Record { index: usize, stream: u64 },
    /// Complete the events on `stream`.
    Complete { stream: u64 },
    /// `empty_cache`.
    EmptyCache,
    /// `process_events`.
    Process,
}

/// Random workloads: mostly small requests, some mid-sized and a few up to `max_large`.
pub fn ops(max_large: usize, len: usize) -> impl Strategy<Value = Vec<Op>> {
    let size = prop_oneof![
        4 => 1usize..=4 * KIB,
        3 => 4 * KIB..=MIB,
        2 => MIB + 1..=10 * MIB,
        1 => 10 * MIB..=max_large,
    ];
    let op = prop_oneof![
        8 => (size, 0u64..3).prop_map(|(size, stream)| Op::Alloc { size, stream }),
        5 => any::<usize>().prop_map(|index| Op::Free { index }),
        1 => any::<usize>().prop_map(|index| Op::FreeDirect { index }),
        4 => (any::<usize>(), 0u64..4).prop_map(|(index, stream)| Op::Record { index, stream }),
        1 => (0u64..4).prop_map(|stream| Op::Complete { stream }),
        1 => Just(Op::EmptyCache),
        1 => Just(Op::Process),
    ];
    proptest::collection::vec(op, 1..len)
}

/// A freed span that must not be handed out again before events complete: event number
/// `n` on stream `s` for each `(s, n)`.
struct Quarantine {
    addr: u64,
    size: usize,
    events: Vec<(StreamId, u64)>,
}

/// A held block, the seed of its contents, and the streams recorded on it.
struct Held {
    block: Block,
    seed: u64,
    uses: Vec<StreamId>,
}

/// Runs `ops` on `a`, checking every invariant (plus `extra`) after each step, that block
/// contents survive, that no block is handed out again before the events guarding it
/// complete (where the source can tell), and that everything goes back to the source at
/// the end.
pub fn run_ops<S: SuiteSource, A: Inspect<S>>(a: A, ops: &[Op], extra: &dyn Fn(&A)) {
    let mut held: Vec<Held> = Vec::new();
    let mut quarantined: Vec<Quarantine> = Vec::new();
    for (seed, op) in (1u64..).zip(ops) {
        match *op {
            Op::Alloc { size, stream } => match a.allocate(size, StreamId(stream)) {
                Ok(block) => {
                    assert!(block.size() >= size && block.requested() == size);
                    assert_eq!(block.stream(), StreamId(stream));
                    assert_not_reused_early(&a, &mut quarantined, &block);
                    fill(a.source(), &block, seed);
                    let uses = if a.allocation_stream_is_a_use() {
                        vec![block.stream()]
                    } else {
                        Vec::new()
                    };
                    held.push(Held { block, seed, uses });
                }
                Err(AllocError::OutOfMemory(oom)) => {
                    let stats = a.stats();
                    assert_eq!(oom.requested, size);
                    assert_eq!(oom.allocated, stats.allocated_bytes.current);
                    assert_eq!(oom.reserved, stats.reserved_bytes.current);
                    assert_eq!(oom.cached, oom.reserved - oom.allocated);
                }
                Err(e) => panic!("unexpected error {e}"),
            },
            Op::Free { index } | Op::FreeDirect { index } if !held.is_empty() => {
                let h = held.swap_remove(index % held.len());
                check(a.source(), &h.block, h.seed);
                let (addr, size) = (h.block.addr(), h.block.size());
                if matches!(op, Op::Free { .. }) {
                    // The free must record a new event on each stream that used the block.
                    let events: Option<Vec<(StreamId, u64)>> = h
                        .uses
                        .iter()
                        .map(|&s| {
                            a.source()
                                .suite_clock(s)
                                .map(|(recorded, _)| (s, recorded + 1))
                        })
                        .collect();
                    a.free(h.block).unwrap();
                    if let Some(events) = events.filter(|e| !e.is_empty()) {
                        quarantined.push(Quarantine { addr, size, events });
                    }
                } else {
                    a.free_direct(h.block).unwrap();
                }
            }
            Op::Record { index, stream } if !held.is_empty() => {
                let i = index % held.len();
                let h = &mut held[i];
                let stream = StreamId(stream);
                a.record_stream(&h.block, stream).unwrap();
                if stream != h.block.stream() && !h.uses.contains(&stream) {
                    h.uses.push(stream);
                }
            }
            Op::Complete { stream } => a.source().suite_complete(StreamId(stream)),
            Op::EmptyCache => a.empty_cache().unwrap(),
            Op::Process => a.process_events().unwrap(),
            _ => {}
        }
        let refs: Vec<&Block> = held.iter().map(|h| &h.block).collect();
        assert_consistent(&a, &refs);
        extra(&a);
        for h in &held {
            check(a.source(), &h.block, h.seed);
        }
    }
    for h in held {
        check(a.source(), &h.block, h.seed);
        a.free(h.block).unwrap();
    }
    for stream in 0..4 {
        a.source().suite_complete(StreamId(stream));
    }
    let stats = empty_and_assert_released(&a);
    assert_eq!(
        (stats.active_bytes.current, stats.requested_bytes.current),
        (0, 0)
    );
    assert!(a.snapshot().is_empty());
    if let Some(live) = a.source().suite_live() {
        assert_eq!(live, (0, 0), "the source still has regions");
    }
}

/// Asserts `block` overlaps no span whose guarding events are still pending, and forgets
/// spans whose events have all completed.
fn assert_not_reused_early<S: SuiteSource, A: Inspect<S>>(
    a: &A,
    quarantined: &mut Vec<Quarantine>,
    block: &Block,
) {
    let done = |(s, n): &(StreamId, u64)| a.source().suite_clock(*s).is_some_and(|(_, c)| c >= *n);
    for q in quarantined.iter() {
        let overlaps =
            block.addr() < q.addr + q.size as u64 && q.addr < block.addr() + block.size() as u64;
        if overlaps {
            assert!(
                q.events.iter().all(done),
                "block {:#x}+{} handed out over {:#x}+{} before its events {:?} completed",
                block.addr(),
                block.size(),
                q.addr,
                q.size,
                q.events
            );
        }
    }
    quarantined.retain(|q| !q.events.iter().all(done));
}

/// `cases` random workloads of up to `len` steps, each on a fresh allocator from `make`.
pub fn random_sequences<S: SuiteSource, A: Inspect<S>>(
    make: impl Fn() -> A,
    extra: &dyn Fn(&A),
    cases: u32,
    len: usize,
) {
    let mut runner = TestRunner::new(ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    runner
        .run(&ops(40 * MIB, len), |ops| {
            run_ops(make(), &ops, extra);
            Ok(())
        })
        .unwrap();
}
