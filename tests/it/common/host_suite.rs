//! The caching host (pinned) allocator's rules, generic over the memory source (at least
//! 160 MiB available). `host_suite_tests!` turns them into `#[test]`s.

use typestate_tensor::error::AllocError;
use typestate_tensor::storage::{
    Block, BlockState, CachingHostAllocator, DeviceAllocator, StreamId,
};

use super::{assert_consistent, SuiteSource, MIB};

const S0: StreamId = StreamId(0);
const S1: StreamId = StreamId(1);
const S2: StreamId = StreamId(2);

fn alloc<S: SuiteSource>(a: &CachingHostAllocator<S>, bytes: usize, stream: StreamId) -> Block {
    a.allocate(bytes, stream)
        .unwrap_or_else(|e| panic!("allocating {bytes} bytes: {e}"))
}

fn state_of<S: SuiteSource>(a: &CachingHostAllocator<S>, addr: u64) -> BlockState {
    a.snapshot()
        .iter()
        .find(|s| s.addr == addr)
        .map(|s| s.blocks[0].state)
        .unwrap_or_else(|| panic!("no block at {addr:#x}"))
}

pub fn sizes_round_up_to_powers_of_two<S: SuiteSource>(source: S) {
    let a = CachingHostAllocator::new(source);
    let table = [
        (1, 1),
        (3, 4),
        (4096, 4096),
        (5000, 8192),
        (MIB + 1, 2 * MIB),
    ];
    let mut held = Vec::new();
    for (request, want) in table {
        let block = alloc(&a, request, S0);
        assert_eq!((block.size(), block.requested()), (want, request));
        held.push(block);
    }
    assert_eq!(a.stats().segments.current, table.len());
    assert_consistent(&a, &held.iter().collect::<Vec<_>>());
}

pub fn a_freed_block_waits_for_its_streams_then_serves_its_class<S: SuiteSource>(source: S) {
    let a = CachingHostAllocator::new(source);
    let x = alloc(&a, 5000, S1);
    let x_addr = x.addr();
    a.record_stream(&x, S2).unwrap();
    a.free(x).unwrap();
    assert_eq!(state_of(&a, x_addr), BlockState::AwaitingEvents);
    assert_consistent(&a, &[]);
    a.source().suite_complete(S1);
    a.source().suite_complete(S2);
    a.process_events().unwrap();
    assert_eq!(state_of(&a, x_addr), BlockState::Free);
    // Host blocks serve any stream: the CPU, not a stream, reuses them.
    let y = alloc(&a, 7000, S0);
    assert_eq!((y.addr(), y.size()), (x_addr, 8192));
    let z = alloc(&a, 5000, S0);
    assert_ne!(z.addr(), x_addr);
    assert_consistent(&a, &[&y, &z]);
}

pub fn empty_cache_and_free_direct_return_blocks<S: SuiteSource>(source: S) {
    let a = CachingHostAllocator::new(source);
    let x = alloc(&a, 1000, S0);
    let y = alloc(&a, 3 * MIB, S1);
    let z = alloc(&a, 100, S2);
    a.free_direct(x).unwrap();
    assert_eq!(a.stats().segments.current, 2);
    a.free(y).unwrap();
    a.free(z).unwrap();
    a.empty_cache().unwrap();
    let stats = a.stats();
    assert_eq!(
        (stats.segments.current, stats.reserved_bytes.current),
        (0, 0)
    );
    assert_eq!((stats.num_segment_frees, stats.segments.peak), (3, 3));
    assert_consistent(&a, &[]);
}

pub fn zero_and_unknown_blocks<S: SuiteSource>(source: S) {
    let a = CachingHostAllocator::new(source);
    super::assert_zero_bytes_give_an_empty_block(&a, S1);
    let x = alloc(&a, 100, S0);
    super::assert_second_free_refused(&a, x);
    assert!(matches!(
        a.allocate(usize::MAX, S0),
        Err(AllocError::SizeOverflow {
            requested: usize::MAX
        })
    ));
    assert_consistent(&a, &[]);
}

/// Random workloads on host allocators.
pub fn random_sequences<S: SuiteSource>(make: impl Fn() -> S, cases: u32) {
    super::random_sequences(|| CachingHostAllocator::new(make()), &|_| {}, cases, 48);
}

/// `#[test]`s for every function above, on sources from `$make` (a closure). With
/// `skip_unless: $available`, each test first calls `$available()` and returns early, with
/// a printed line, when it is false (a GPU source on a machine without a GPU).
macro_rules! host_suite_tests {
    ($make:expr) => {
        crate::common::host_suite::host_suite_tests!(@suite [] $make, || true);
    };
    // `skip_unless` is the GPU's availability: these tests are also ignored (reported, not
    // passed) unless the `gpu-tests` feature is on.
    ($make:expr, skip_unless: $available:expr) => {
        crate::common::host_suite::host_suite_tests!(@suite [gpu] $make, $available);
    };
    (@suite [$($gpu:ident)?] $make:expr, $available:expr) => {
        crate::common::suite_module!($($gpu)? host_suite, $make, $available; [
            sizes_round_up_to_powers_of_two,
            a_freed_block_waits_for_its_streams_then_serves_its_class,
            empty_cache_and_free_direct_return_blocks,
            zero_and_unknown_blocks,
        ]
        #[test]
        fn random_sequences() {
            run_if($available, || suite::random_sequences($make, 32));
        }
        );
    };
}
pub(crate) use host_suite_tests;
