//! The pooled allocator's rules, generic over the memory source (at least 160 MiB
//! available). `pooled_suite_tests!` turns them into `#[test]`s for one source factory.

use typestate_tensor::error::AllocError;
use typestate_tensor::storage::{
    Block, BlockState, DeviceAllocator, PoolRounding, PooledAllocator, PooledConfig, StreamId,
};

use super::{assert_consistent, SuiteSource, MIB};

const S0: StreamId = StreamId(0);
const S1: StreamId = StreamId(1);
const S2: StreamId = StreamId(2);

fn alloc<S: SuiteSource>(a: &PooledAllocator<S>, bytes: usize, stream: StreamId) -> Block {
    a.allocate(bytes, stream)
        .unwrap_or_else(|e| panic!("allocating {bytes} bytes: {e}"))
}

/// An allocator with `rounding` and MXNet's default reserve.
pub fn pooled<S: SuiteSource>(source: S, rounding: PoolRounding) -> PooledAllocator<S> {
    PooledAllocator::with_config(source, PooledConfig::new(rounding, 5).unwrap())
}

pub fn only_requests_of_the_same_bucket_reuse_a_region<S: SuiteSource>(source: S) {
    let a = pooled(source, PoolRounding::MXNET_PAGE);
    let x = alloc(&a, 5000, S0);
    assert_eq!(x.size(), 8192);
    let x_addr = x.addr();
    a.free(x).unwrap();
    let y = alloc(&a, 6000, S0);
    assert_eq!(
        (y.addr(), y.size()),
        (x_addr, 8192),
        "6000 bytes rounds to the same page count"
    );
    let z = alloc(&a, 9000, S0);
    assert_ne!(z.addr(), x_addr);
    assert_eq!(z.size(), 12288);
    a.free(y).unwrap();
    let w = alloc(&a, 4000, S0);
    assert_ne!(
        w.addr(),
        x_addr,
        "a smaller bucket does not use the cached 8 KiB region"
    );
    assert_eq!(a.stats().segments.current, 3);
    assert_consistent(&a, &[&z, &w]);
}

pub fn power2_buckets_reuse_across_their_range<S: SuiteSource>(source: S) {
    let a = pooled(source, PoolRounding::MXNET_ROUND);
    let x = alloc(&a, 5 * MIB, S0);
    assert_eq!(x.size(), 8 * MIB);
    let x_addr = x.addr();
    a.free(x).unwrap();
    let y = alloc(&a, 7 * MIB + 3, S0);
    assert_eq!((y.addr(), y.size()), (x_addr, 8 * MIB));
    let z = alloc(&a, 17 * MIB, S0);
    assert_eq!(z.size(), 32 * MIB, "above 16 MiB sizes step by 16 MiB");
    assert_consistent(&a, &[&y, &z]);
}

pub fn streams_have_separate_buckets<S: SuiteSource>(source: S) {
    let a = pooled(source, PoolRounding::MXNET_PAGE);
    let x = alloc(&a, 4096, S1);
    let x_addr = x.addr();
    a.free(x).unwrap();
    let y = alloc(&a, 4096, S2);
    assert_ne!(y.addr(), x_addr);
    let z = alloc(&a, 4096, S1);
    assert_eq!(z.addr(), x_addr);
    assert_consistent(&a, &[&y, &z]);
}

pub fn record_stream_holds_the_region_until_events_complete<S: SuiteSource>(source: S) {
    let a = pooled(source, PoolRounding::MXNET_PAGE);
    let x = alloc(&a, 4096, S0);
    let x_addr = x.addr();
    a.record_stream(&x, S1).unwrap();
    a.record_stream(&x, S2).unwrap();
    a.free(x).unwrap();
    let state = |a: &PooledAllocator<S>| a.snapshot()[0].blocks[0].state;
    assert_eq!(state(&a), BlockState::AwaitingEvents);
    assert_eq!(a.stats().active_bytes.current, 4096);
    assert_consistent(&a, &[]);
    a.source().suite_complete(S1);
    a.source().suite_complete(S2);
    a.process_events().unwrap();
    assert_eq!(state(&a), BlockState::Free);
    let y = alloc(&a, 4096, S0);
    assert_eq!(y.addr(), x_addr);
    assert_consistent(&a, &[&y]);
}

pub fn empty_cache_and_free_direct_return_regions<S: SuiteSource>(source: S) {
    let a = pooled(source, PoolRounding::MXNET_PAGE);
    let held: Vec<Block> = [100, 5000, 3 * MIB, 20 * MIB]
        .iter()
        .enumerate()
        .map(|(i, &n)| alloc(&a, n, StreamId(i as u64 % 2)))
        .collect();
    a.record_stream(&held[0], S2).unwrap();
    let mut held = held.into_iter();
    let first = held.next().unwrap();
    let second = held.next().unwrap();
    a.free_direct(first).unwrap();
    assert_eq!(a.stats().segments.current, 3);
    a.free(second).unwrap();
    for block in held {
        a.free(block).unwrap();
    }
    assert_eq!(a.stats().segments.current, 3);
    a.empty_cache().unwrap();
    let stats = a.stats();
    assert_eq!(
        (stats.segments.current, stats.reserved_bytes.current),
        (0, 0)
    );
    assert_eq!(stats.num_segment_frees, 4);
    assert_consistent(&a, &[]);
}

pub fn zero_and_unknown_blocks<S: SuiteSource>(source: S) {
    let a = pooled(source, PoolRounding::MXNET_PAGE);
    super::assert_zero_bytes_give_an_empty_block(&a, S1);
    let x = alloc(&a, 100, S0);
    super::assert_second_free_refused(&a, x);
    let forged = super::forge(12345, 4096, 1, S0);
    assert_eq!(
        a.free_direct(forged),
        Err(AllocError::UnknownBlock { addr: 12345 })
    );
    assert_consistent(&a, &[]);
}

/// Random workloads on pooled allocators with both roundings.
pub fn random_sequences<S: SuiteSource>(make: impl Fn() -> S, cases: u32) {
    for rounding in [PoolRounding::MXNET_PAGE, PoolRounding::MXNET_ROUND] {
        super::random_sequences(|| pooled(make(), rounding), &|_| {}, cases, 48);
    }
}

/// `#[test]`s for every function above, on sources from `$make` (a closure). With
/// `skip_unless: $available`, each test first calls `$available()` and returns early, with
/// a printed line, when it is false (a GPU source on a machine without a GPU).
macro_rules! pooled_suite_tests {
    ($make:expr) => {
        crate::common::pooled_suite::pooled_suite_tests!(@suite [] $make, || true);
    };
    // `skip_unless` is the GPU's availability: these tests are also ignored (reported, not
    // passed) unless the `gpu-tests` feature is on.
    ($make:expr, skip_unless: $available:expr) => {
        crate::common::pooled_suite::pooled_suite_tests!(@suite [gpu] $make, $available);
    };
    (@suite [$($gpu:ident)?] $make:expr, $available:expr) => {
        crate::common::suite_module!($($gpu)? pooled_suite, $make, $available; [
            only_requests_of_the_same_bucket_reuse_a_region,
            power2_buckets_reuse_across_their_range,
            streams_have_separate_buckets,
            record_stream_holds_the_region_until_events_complete,
            empty_cache_and_free_direct_return_regions,
            zero_and_unknown_blocks,
        ]
        #[test]
        fn random_sequences() {
            run_if($available, || suite::random_sequences($make, 32));
        }
        );
    };
}
pub(crate) use pooled_suite_tests;
