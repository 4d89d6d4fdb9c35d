//! Cached allocation + free pairs on a warm cache: the allocators' hot path.
//!
//! Over `HostMemorySource`, so the numbers are the algorithms' own cost (locking, ordered
//! lookups, splitting, merging, statistics) without a driver call: every pair after the
//! warm-up is served from the cache. Run with
//! `cargo bench -p typestate-tensor-bench --bench allocator -- --warm-up-time 1 --measurement-time 2`.
//!
//! `caching` runs with history recording off (the default); `caching_recording` with it on
//! (a 100 000-event ring, full, so each pair also drops its oldest events), and
//! `caching_recording_labelled` inside a `with_alloc_label` scope.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use typestate_tensor::storage::history::{with_alloc_label, HistorySettings};
use typestate_tensor::storage::{
    CachingAllocator, DeviceAllocator, HostMemorySource, PooledAllocator, StreamId,
};

const SIZES: [(&str, usize); 3] = [("512B", 512), ("1MiB", 1 << 20), ("64MiB", 64 << 20)];

fn alloc_free_pairs(c: &mut Criterion, group_name: &str, allocator: &dyn DeviceAllocator) {
    // Warm the cache: the segments for these sizes now exist and are free.
    for (_, bytes) in SIZES {
        let block = allocator.allocate(bytes, StreamId(0)).unwrap();
        allocator.free(block).unwrap();
    }
    let warm = allocator.stats();
    let mut group = c.benchmark_group(group_name);
    for (label, bytes) in SIZES {
        group.bench_function(label, |b| {
            b.iter(|| {
                let block = allocator.allocate(black_box(bytes), StreamId(0)).unwrap();
                allocator.free(black_box(block)).unwrap();
            })
        });
    }
    group.finish();
    let stats = allocator.stats();
    assert_eq!(stats.allocations.current, 0);
    assert_eq!(
        (stats.segments.peak, stats.reserved_bytes.peak),
        (warm.segments.peak, warm.reserved_bytes.peak),
        "every measured pair was served from the cache"
    );
}

fn caching(c: &mut Criterion) {
    let allocator = CachingAllocator::new(HostMemorySource::unbounded());
    alloc_free_pairs(c, "caching", &allocator);
}

fn caching_recording(c: &mut Criterion) {
    let allocator = CachingAllocator::new(HostMemorySource::unbounded());
    allocator.record_history(Some(HistorySettings::default()));
    alloc_free_pairs(c, "caching_recording", &allocator);
    with_alloc_label("adam step", || {
        alloc_free_pairs(c, "caching_recording_labelled", &allocator)
    });
}

fn pooled(c: &mut Criterion) {
    let allocator = PooledAllocator::new(HostMemorySource::unbounded());
    alloc_free_pairs(c, "pooled", &allocator);
}

// criterion_group! generates an undocumented public function.
#[allow(missing_docs)]
mod group {
    use super::*;
    criterion_group!(benches, caching, caching_recording, pooled);
}
use group::benches;

criterion_main!(benches);
