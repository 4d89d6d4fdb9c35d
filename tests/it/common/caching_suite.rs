//! The caching allocator's rules, generic over the memory source.
//!
//! Each function takes a fresh source with at least 160 MiB available; events must
//! complete once `suite_complete` is called for their stream. `caching_suite_tests!`
//! turns them into `#[test]`s for one source factory.

use typestate_tensor::error::AllocError;
use typestate_tensor::storage::{
    Block, BlockState, CachingAllocator, CachingConfig, DeviceAllocator, SegmentPool, StreamId,
};

use super::{SuiteSource, KIB, MIB};
use BlockState::{Allocated, AwaitingEvents, Free};

const S0: StreamId = StreamId(0);
const S1: StreamId = StreamId(1);
const S2: StreamId = StreamId(2);
const S3: StreamId = StreamId(3);

fn alloc<S: SuiteSource>(a: &CachingAllocator<S>, bytes: usize, stream: StreamId) -> Block {
    a.allocate(bytes, stream)
        .unwrap_or_else(|e| panic!("allocating {bytes} bytes: {e}"))
}

/// (address, size, state) of the blocks of the one segment containing `addr`.
fn segment_of<S: SuiteSource>(a: &CachingAllocator<S>, addr: u64) -> Vec<(u64, usize, BlockState)> {
    let snapshot = a.snapshot();
    let segment = snapshot
        .iter()
        .find(|s| s.addr <= addr && addr < s.addr + s.size as u64)
        .unwrap_or_else(|| panic!("{addr:#x} is in no segment"));
    segment
        .blocks
        .iter()
        .map(|b| (b.addr, b.size, b.state))
        .collect()
}

pub fn requests_round_up_to_512_bytes<S: SuiteSource>(source: S) {
    let a = CachingAllocator::new(source);
    let table = [
        (1, 512),
        (511, 512),
        (512, 512),
        (513, 1024),
        (1000, 1024),
        (4097, 4608),
        (MIB - 1, MIB),
        (MIB, MIB),
        (MIB + 1, MIB + 512),
    ];
    let mut held = Vec::new();
    for (request, want) in table {
        let block = alloc(&a, request, S0);
        assert_eq!(
            (block.size(), block.requested()),
            (want, request),
            "request {request}"
        );
        held.push(block);
    }
    assert_consistent(&a, &held.iter().collect::<Vec<_>>());
    for block in held {
        a.free(block).unwrap();
    }
    assert_consistent(&a, &[]);
}

pub fn small_requests_share_a_2mib_segment<S: SuiteSource>(source: S) {
    let a = CachingAllocator::new(source);
    let x = alloc(&a, 1000, S0);
    let y = alloc(&a, 3000, S0);
    assert_eq!(y.addr(), x.addr() + 1024);
    let snapshot = a.snapshot();
    assert_eq!(snapshot.len(), 1);
    assert_eq!(
        (snapshot[0].pool, snapshot[0].size),
        (SegmentPool::Small, 2 * MIB)
    );
    assert_eq!(
        segment_of(&a, x.addr()),
        vec![
            (x.addr(), 1024, Allocated),
            (x.addr() + 1024, 3072, Allocated),
            (x.addr() + 4096, 2 * MIB - 4096, Free)
        ]
    );
    assert_consistent(&a, &[&x, &y]);
}

pub fn requests_up_to_10mib_share_20mib_segments<S: SuiteSource>(source: S) {
    let a = CachingAllocator::new(source);
    let x = alloc(&a, 2 * MIB, S0);
    let y = alloc(&a, 5 * MIB, S0);
    let z = alloc(&a, MIB + 1, S0);
    assert_eq!(a.snapshot().len(), 1);
    assert_eq!(a.snapshot()[0].pool, SegmentPool::Large);
    let base = x.addr();
    assert_eq!(
        segment_of(&a, base),
        vec![
            (base, 2 * MIB, Allocated),
            (base + 2 * MIB as u64, 5 * MIB, Allocated),
            (base + 7 * MIB as u64, MIB + 512, Allocated),
            (base + (8 * MIB + 512) as u64, 12 * MIB - 512, Free),
        ]
    );
    assert_consistent(&a, &[&x, &y, &z]);
}

pub fn large_requests_get_their_own_segment<S: SuiteSource>(source: S) {
    let a = CachingAllocator::new(source);
    // 11 MiB + 1 rounds to 11 MiB + 512 in a 12 MiB segment; the 1 MiB - 512 rest is not
    // worth a block, so the user gets all 12 MiB.
    let x = alloc(&a, 11 * MIB + 1, S0);
    assert_eq!((x.size(), x.requested()), (12 * MIB, 11 * MIB + 1));
    let y = alloc(&a, 10 * MIB, S0);
    assert_eq!(y.size(), 10 * MIB);
    let z = alloc(&a, 64 * MIB, S0);
    assert_eq!(z.size(), 64 * MIB);
    let sizes: Vec<usize> = a.snapshot().iter().map(|s| s.size).collect();
    let mut want = vec![12 * MIB, 10 * MIB, 64 * MIB];
    let mut got = sizes.clone();
    got.sort_unstable();
    want.sort_unstable();
    assert_eq!(got, want);
    let stats = a.stats();
    assert_eq!(stats.allocated_bytes.current, 86 * MIB);
    assert_eq!(stats.requested_bytes.current, 85 * MIB + 1);
    assert_consistent(&a, &[&x, &y, &z]);
}

pub fn small_pool_splits_remainders_of_512_bytes<S: SuiteSource>(source: S) {
    let a = CachingAllocator::new(source);
    let x = alloc(&a, MIB, S0);
    let y = alloc(&a, MIB - 512, S0);
    assert_eq!(y.addr(), x.addr() + MIB as u64);
    assert_eq!(y.size(), MIB - 512);
    let z = alloc(&a, 1, S0);
    assert_eq!((z.addr(), z.size()), (y.addr() + (MIB - 512) as u64, 512));
    assert_eq!(
        a.snapshot().len(),
        1,
        "all three fit the first segment exactly"
    );
    assert!(segment_of(&a, x.addr()).iter().all(|b| b.2 == Allocated));
    assert_consistent(&a, &[&x, &y, &z]);
}

pub fn large_pool_splits_only_remainders_over_1mib<S: SuiteSource>(source: S) {
    let a = CachingAllocator::new(source);
    let x = alloc(&a, 19 * MIB, S0);
    assert_eq!(x.size(), 20 * MIB, "a 1 MiB remainder is not split off");
    assert_eq!(
        segment_of(&a, x.addr()),
        vec![(x.addr(), 20 * MIB, Allocated)]
    );
    let y = alloc(&a, 19 * MIB - 512, S0);
    assert_eq!(
        y.size(),
        19 * MIB - 512,
        "a 1 MiB + 512 remainder is split off"
    );
    assert_eq!(
        segment_of(&a, y.addr()),
        vec![
            (y.addr(), 19 * MIB - 512, Allocated),
            (y.addr() + (19 * MIB - 512) as u64, MIB + 512, Free)
        ]
    );
    assert_consistent(&a, &[&x, &y]);
}

pub fn freeing_merges_neighbours_back_into_the_segment<S: SuiteSource>(source: S) {
    let a = CachingAllocator::new(source);
    let x = alloc(&a, 4 * KIB, S0);
    let y = alloc(&a, 4 * KIB, S0);
    let z = alloc(&a, 4 * KIB, S0);
    let base = x.addr();
    let k4 = 4 * KIB as u64;
    a.free(y).unwrap();
    assert_eq!(
        segment_of(&a, base),
        vec![
            (base, 4 * KIB, Allocated),
            (base + k4, 4 * KIB, Free),
            (base + 2 * k4, 4 * KIB, Allocated),
            (base + 3 * k4, 2 * MIB - 12 * KIB, Free)
        ]
    );
    assert_consistent(&a, &[&x, &z]);
    a.free(x).unwrap();
    assert_eq!(
        segment_of(&a, base),
        vec![
            (base, 8 * KIB, Free),
            (base + 2 * k4, 4 * KIB, Allocated),
            (base + 3 * k4, 2 * MIB - 12 * KIB, Free)
        ]
    );
    assert_consistent(&a, &[&z]);
    a.free(z).unwrap();
    assert_eq!(segment_of(&a, base), vec![(base, 2 * MIB, Free)]);
    assert_consistent(&a, &[]);
    assert_eq!(a.stats().reserved_bytes.current, 2 * MIB);
}

pub fn best_fit_takes_the_smallest_block_that_fits<S: SuiteSource>(source: S) {
    let a = CachingAllocator::new(source);
    let x1 = alloc(&a, 4 * KIB, S0);
    let g1 = alloc(&a, 512, S0);
    let x2 = alloc(&a, 8 * KIB, S0);
    let g2 = alloc(&a, 512, S0);
    let (x1_addr, x2_addr) = (x1.addr(), x2.addr());
    a.free(x2).unwrap();
    a.free(x1).unwrap();
    // Free blocks: 4 KiB at x1, 8 KiB at x2, and the tail of the segment.
    let y = alloc(&a, 6 * KIB, S0);
    assert_eq!(
        y.addr(),
        x2_addr,
        "6 KiB goes to the 8 KiB block, not the tail"
    );
    let z = alloc(&a, 3 * KIB, S0);
    assert_eq!(
        z.addr(),
        x1_addr,
        "3 KiB goes to the 4 KiB block, the smallest that fits"
    );
    let w = alloc(&a, 2 * KIB, S0);
    assert_eq!(
        w.addr(),
        x2_addr + 6 * KIB as u64,
        "2 KiB takes the rest of the 8 KiB block"
    );
    assert_consistent(&a, &[&g1, &g2, &y, &z, &w]);
}

pub fn streams_never_share_cached_blocks<S: SuiteSource>(source: S) {
    let a = CachingAllocator::new(source);
    let x = alloc(&a, 4 * KIB, S1);
    let x_addr = x.addr();
    a.free(x).unwrap();
    let y = alloc(&a, 4 * KIB, S2);
    assert_ne!(y.addr(), x_addr);
    assert_eq!(
        a.stats().segments.current,
        2,
        "stream 2 gets its own segment"
    );
    let z = alloc(&a, 4 * KIB, S1);
    assert_eq!(z.addr(), x_addr, "stream 1 reuses its cached block");
    assert_eq!(a.snapshot().iter().filter(|s| s.stream == S1).count(), 1);
    assert_consistent(&a, &[&y, &z]);
}

pub fn record_stream_holds_the_block_until_events_complete<S: SuiteSource>(source: S) {
    let a = CachingAllocator::new(source);
    let x = alloc(&a, 4 * KIB, S1);
    let base = x.addr();
    a.record_stream(&x, S1).unwrap(); // its own stream: ignored
    a.record_stream(&x, S2).unwrap();
    a.record_stream(&x, S3).unwrap();
    a.record_stream(&x, S2).unwrap(); // repeated: one event
    a.free(x).unwrap();
    let segment = segment_of(&a, base);
    assert_eq!(segment[0], (base, 4 * KIB, AwaitingEvents));
    let stats = a.stats();
    assert_eq!(
        (stats.allocated_bytes.current, stats.active_bytes.current),
        (0, 4 * KIB)
    );
    assert_consistent(&a, &[]);
    a.source().suite_complete(S2);
    a.source().suite_complete(S3);
    a.process_events().unwrap();
    assert_eq!(segment_of(&a, base), vec![(base, 2 * MIB, Free)]);
    assert_consistent(&a, &[]);
}

pub fn empty_cache_returns_every_segment<S: SuiteSource>(source: S) {
    let a = CachingAllocator::new(source);
    let mut held = Vec::new();
    for (i, &bytes) in [100, 5000, MIB, 3 * MIB, 12 * MIB, 30 * MIB]
        .iter()
        .enumerate()
    {
        let stream = StreamId(i as u64 % 2);
        let block = alloc(&a, bytes, stream);
        if i % 3 == 0 {
            a.record_stream(&block, S3).unwrap();
        }
        held.push(block);
    }
    assert_consistent(&a, &held.iter().collect::<Vec<_>>());
    for block in held {
        a.free(block).unwrap();
    }
    assert!(a.stats().reserved_bytes.current > 0);
    let stats = super::empty_and_assert_released(&a);
    assert_eq!(
        stats.active_bytes.current, 0,
        "events were finished by the synchronize"
    );
    assert!(a.snapshot().is_empty());
    assert_eq!(stats.num_segment_frees, stats.segments.peak as u64);
    assert_consistent(&a, &[]);
}

pub fn statistics_track_current_peak_and_counters<S: SuiteSource>(source: S) {
    let a = CachingAllocator::new(source);
    let x = alloc(&a, MIB, S0);
    let y = alloc(&a, MIB - 100, S0);
    let stats = a.stats();
    assert_eq!(stats.allocated_bytes.current, 2 * MIB);
    assert_eq!(stats.requested_bytes.current, 2 * MIB - 100);
    assert_eq!((stats.allocations.current, stats.num_allocs), (2, 2));
    assert_eq!(
        (stats.segments.current, stats.reserved_bytes.current),
        (1, 2 * MIB)
    );
    a.free(x).unwrap();
    let stats = a.stats();
    assert_eq!(
        stats.allocated_bytes,
        typestate_tensor::storage::Stat {
            current: MIB,
            peak: 2 * MIB
        }
    );
    assert_eq!(stats.allocations.peak, 2);
    a.reset_peak_stats();
    let stats = a.stats();
    assert_eq!(stats.allocated_bytes.peak, MIB);
    assert_eq!(stats.allocations.peak, 1);
    assert_eq!(stats.num_allocs, 2, "peak resets keep counters");
    a.reset_accumulated_stats();
    let stats = a.stats();
    assert_eq!(stats.num_allocs, 0);
    assert_eq!(
        stats.allocated_bytes.current, MIB,
        "counter resets keep current values"
    );
    assert_consistent(&a, &[&y]);
}

pub fn free_direct_returns_whole_segments<S: SuiteSource>(source: S) {
    let a = CachingAllocator::new(source);
    let big = alloc(&a, 12 * MIB, S0);
    a.free_direct(big).unwrap();
    assert_eq!(a.stats().segments.current, 0);
    let x = alloc(&a, 4 * KIB, S0);
    let y = alloc(&a, 4 * KIB, S0);
    a.free_direct(x).unwrap();
    assert_eq!(a.stats().segments.current, 1, "y still uses the segment");
    assert_consistent(&a, &[&y]);
    a.free_direct(y).unwrap();
    assert_eq!(a.stats().segments.current, 0);
    assert_eq!(a.stats().num_segment_frees, 2);
    assert_consistent(&a, &[]);
}

pub fn zero_and_unknown_blocks<S: SuiteSource>(source: S) {
    let a = CachingAllocator::new(source);
    let empty = alloc(&a, 0, S1);
    assert_eq!(
        (
            empty.addr(),
            empty.size(),
            empty.requested(),
            empty.stream()
        ),
        (0, 0, 0, S1)
    );
    a.record_stream(&empty, S2).unwrap();
    a.free(empty).unwrap();
    assert_eq!(a.stats().num_allocs, 0);
    let x = alloc(&a, 4 * KIB, S0);
    let forged_size = super::forge(x.addr(), 8 * KIB, 1, S0);
    assert_eq!(
        a.free(forged_size),
        Err(AllocError::UnknownBlock { addr: x.addr() })
    );
    let forged_stream = super::forge(x.addr(), x.size(), 1, S1);
    assert_eq!(
        a.record_stream(&forged_stream, S2),
        Err(AllocError::UnknownBlock { addr: x.addr() })
    );
    super::assert_second_free_refused(&a, x);
    assert_consistent(&a, &[]);
}

/// Caching-specific checks after every step: segment sizes per pool, 512-byte blocks.
pub fn caching_layout<S: SuiteSource>(a: &CachingAllocator<S>) {
    for segment in a.snapshot() {
        match segment.pool {
            SegmentPool::Small => assert_eq!(segment.size, 2 * MIB),
            SegmentPool::Large => assert!(segment.size >= 10 * MIB),
            SegmentPool::Single => panic!("caching segments belong to a pool"),
        }
        for block in &segment.blocks {
            assert_eq!(block.size % 512, 0, "block sizes are multiples of 512");
        }
    }
}

/// Every invariant, caching-specific ones included.
pub fn assert_consistent<S: SuiteSource>(a: &CachingAllocator<S>, held: &[&Block]) {
    super::assert_consistent(a, held);
    caching_layout(a);
}

/// Random workloads on caching allocators over sources from `make`, with `config`.
pub fn random_sequences<S: SuiteSource>(make: impl Fn() -> S, config: CachingConfig, cases: u32) {
    super::random_sequences(
        || CachingAllocator::with_config(make(), config.clone()),
        &caching_layout,
        cases,
        48,
    );
}

/// `#[test]`s for every function above, on sources from `$make` (a closure). With
/// `skip_unless: $available`, each test first calls `$available()` and returns early, with
/// a printed line, when it is false (a GPU source on a machine without a GPU).
macro_rules! caching_suite_tests {
    ($make:expr) => {
        crate::common::caching_suite::caching_suite_tests!(@suite [] $make, || true);
    };
    // `skip_unless` is the GPU's availability: these tests are also ignored (reported, not
    // passed) unless the `gpu-tests` feature is on.
    ($make:expr, skip_unless: $available:expr) => {
        crate::common::caching_suite::caching_suite_tests!(@suite [gpu] $make, $available);
    };
    (@suite [$($gpu:ident)?] $make:expr, $available:expr) => {
        crate::common::suite_module!($($gpu)? caching_suite, $make, $available; [
            requests_round_up_to_512_bytes,
            small_requests_share_a_2mib_segment,
            requests_up_to_10mib_share_20mib_segments,
            large_requests_get_their_own_segment,
            small_pool_splits_remainders_of_512_bytes,
            large_pool_splits_only_remainders_over_1mib,
            freeing_merges_neighbours_back_into_the_segment,
            best_fit_takes_the_smallest_block_that_fits,
            streams_never_share_cached_blocks,
            record_stream_holds_the_block_until_events_complete,
            empty_cache_returns_every_segment,
            statistics_track_current_peak_and_counters,
            free_direct_returns_whole_segments,
            zero_and_unknown_blocks,
        ]
        #[test]
        fn random_sequences_default_config() {
            let config = typestate_tensor::storage::CachingConfig::default();
            run_if($available, || suite::random_sequences($make, config, 48));
        }

        #[test]
        fn random_sequences_max_split_and_divisions() {
            run_if($available, || {
                let config = typestate_tensor::storage::CachingConfig::default()
                    .with_max_split_size_mb(24)
                    .and_then(|c| c.with_roundup_power2_divisions(4))
                    .unwrap();
                suite::random_sequences($make, config, 32);
            });
        }
        );
    };
}
pub(crate) use caching_suite_tests;
