//! Several threads allocating, writing, checking and freeing random sizes at once, on each
//! allocator over host memory (real memory, so overlapping blocks corrupt contents).

use std::sync::Arc;

use crate::common::stress::stress;
use crate::common::MIB;
use typestate_tensor::storage::{
    CachingAllocator, CachingHostAllocator, HostMemorySource, PoolRounding, PooledAllocator,
    PooledConfig,
};

const THREADS: u64 = 4;
const ITERATIONS: usize = 1500;

#[test]
fn caching_allocator_under_threads() {
    let a = Arc::new(CachingAllocator::new(HostMemorySource::new(512 * MIB)));
    stress(a, THREADS, ITERATIONS, 24 * MIB);
}

#[test]
fn caching_allocator_with_max_split_under_threads() {
    let config = typestate_tensor::storage::CachingConfig::default()
        .with_max_split_size_mb(20)
        .unwrap();
    let a = Arc::new(CachingAllocator::with_config(
        HostMemorySource::new(256 * MIB),
        config,
    ));
    stress(a, THREADS, ITERATIONS, 24 * MIB);
}

#[test]
fn pooled_allocator_under_threads() {
    for rounding in [PoolRounding::MXNET_PAGE, PoolRounding::MXNET_ROUND] {
        let config = PooledConfig::new(rounding, 5).unwrap();
        let a = Arc::new(PooledAllocator::with_config(
            HostMemorySource::new(512 * MIB),
            config,
        ));
        stress(a, THREADS, ITERATIONS, 24 * MIB);
    }
}

#[test]
fn caching_host_allocator_under_threads() {
    let a = Arc::new(CachingHostAllocator::new(HostMemorySource::new(512 * MIB)));
    stress(a, THREADS, ITERATIONS, 24 * MIB);
}
