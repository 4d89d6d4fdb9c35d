//! The caching host (pinned) allocator on host memory: the generic suite, plus delayed
//! reuse with a manual clock and out-of-memory recovery.

use crate::common::host_suite::host_suite_tests;
use crate::common::{assert_consistent, recovery_counters, MIB};
use typestate_tensor::error::{AllocError, OutOfMemoryError};
use typestate_tensor::storage::{
    CachingHostAllocator, DeviceAllocator, HostMemorySource, StreamId,
};

host_suite_tests!(|| HostMemorySource::new(160 * MIB));

const S0: StreamId = StreamId(0);
const S1: StreamId = StreamId(1);
const S2: StreamId = StreamId(2);

#[test]
fn a_freed_block_is_reused_only_after_every_stream_that_used_it() {
    let a = CachingHostAllocator::new(HostMemorySource::new(64 * MIB));
    let x = a.allocate(3000, S0).unwrap();
    let x_addr = x.addr();
    a.record_stream(&x, S1).unwrap();
    a.record_stream(&x, S2).unwrap();
    a.free(x).unwrap();
    let source = a.source();
    assert_eq!(
        [S0, S1, S2].map(|s| source.pending_events(s)),
        [1, 1, 1],
        "one event on the allocation stream and on each recorded stream"
    );
    let mut held = Vec::new();
    for complete in [S0, S2] {
        source.complete_stream(complete);
        let y = a.allocate(3000, S0).unwrap();
        assert_ne!(y.addr(), x_addr, "stream 1 may still read the block");
        held.push(y);
    }
    source.complete_stream(S1);
    let z = a.allocate(4000, S1).unwrap();
    assert_eq!(
        (z.addr(), z.size()),
        (x_addr, 4096),
        "same size class, any stream"
    );
    held.push(z);
    assert_consistent(&a, &held.iter().collect::<Vec<_>>());
}

#[test]
fn out_of_memory_synchronizes_releases_the_cache_and_retries() {
    let a = CachingHostAllocator::new(HostMemorySource::new(64 * MIB));
    let x = a.allocate(32 * MIB, S0).unwrap();
    a.record_stream(&x, S1).unwrap();
    a.free(x).unwrap();
    // The 32 MiB block still awaits events; a 64 MiB class does not fit beside it.
    let y = a.allocate(40 * MIB, S0).unwrap();
    assert_eq!(y.size(), 64 * MIB);
    let stats = a.stats();
    assert_eq!(recovery_counters(&stats), (1, 1, 0));
    assert_consistent(&a, &[&y]);
    let err = a.allocate(1, S0).unwrap_err();
    assert_eq!(
        err,
        AllocError::OutOfMemory(Box::new(OutOfMemoryError {
            device: "host".to_owned(),
            requested: 1,
            free: 0,
            total: 64 * MIB,
            allocated: 64 * MIB,
            reserved: 64 * MIB,
            cached: 0,
            // No setting of the pinned host allocator applies; nothing is held elsewhere.
            hints: vec![],
        }))
    );
    assert_eq!(a.stats().num_ooms, 1);
    assert_consistent(&a, &[&y]);
}
