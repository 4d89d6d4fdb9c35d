//! The pooled allocator on host memory: the generic suite, plus the rounding tables, the
//! reserve and out-of-memory recovery (which need a fixed capacity), and configuration.

use crate::common::pooled_suite::pooled_suite_tests;
use crate::common::{assert_consistent, recovery_counters, MIB};
use typestate_tensor::error::{AllocError, OomHint, OutOfMemoryError};
use typestate_tensor::storage::{
    DeviceAllocator, HostMemorySource, PoolRounding, PooledAllocator, PooledConfig, StreamId,
};

pooled_suite_tests!(|| HostMemorySource::new(160 * MIB));

const S0: StreamId = StreamId(0);
const S1: StreamId = StreamId(1);
const KIB: usize = 1 << 10;

fn pooled(
    capacity: usize,
    rounding: PoolRounding,
    reserve: usize,
) -> PooledAllocator<HostMemorySource> {
    PooledAllocator::with_config(
        HostMemorySource::new(capacity),
        PooledConfig::new(rounding, reserve).unwrap(),
    )
}

#[test]
fn page_rounding_table() {
    let r = PoolRounding::MXNET_PAGE;
    let table = [
        (1, 4 * KIB),
        (4 * KIB, 4 * KIB),
        (4 * KIB + 1, 8 * KIB),
        (2 * MIB, 2 * MIB),
        (2 * MIB + 1, 4 * MIB),
        (5 * MIB + 3, 6 * MIB),
    ];
    for (request, want) in table {
        assert_eq!(r.round(request), Ok(want), "request {request}");
    }
    let custom = PoolRounding::Page {
        page_size: 1000,
        large_alloc_round_size: 10_000,
    };
    for (request, want) in [(1, 1000), (1001, 2000), (10_000, 10_000), (10_001, 20_000)] {
        assert_eq!(custom.round(request), Ok(want), "request {request}");
    }
    assert_eq!(
        r.round(usize::MAX),
        Err(AllocError::SizeOverflow {
            requested: usize::MAX
        })
    );
}

#[test]
fn power2_rounding_table() {
    let r = PoolRounding::MXNET_ROUND;
    let table = [
        (1, 4 * KIB),
        (4 * KIB, 4 * KIB),
        (4 * KIB + 1, 8 * KIB),
        (5000, 8 * KIB),
        (MIB + 1, 2 * MIB),
        (16 * MIB, 16 * MIB),
        (16 * MIB + 1, 32 * MIB),
        (40 * MIB, 48 * MIB),
        (64 * MIB, 64 * MIB),
    ];
    for (request, want) in table {
        assert_eq!(r.round(request), Ok(want), "request {request}");
    }
    let cutoff_20 = PoolRounding::Power2 {
        page_size: 256,
        linear_cutoff: 20,
    };
    for (request, want) in [
        (1, 256),
        (300, 512),
        (MIB, MIB),
        (MIB + 1, 2 * MIB),
        (3 * MIB - 1, 3 * MIB),
    ] {
        assert_eq!(cutoff_20.round(request), Ok(want), "request {request}");
    }
}

#[test]
fn a_new_region_never_eats_into_the_reserve() {
    // 10% of 100 MiB is reserved: at most 90 MiB may be held.
    let a = pooled(100 * MIB, PoolRounding::MXNET_PAGE, 10);
    let x = a.allocate(60 * MIB, S0).unwrap();
    let y = a.allocate(28 * MIB, S0).unwrap();
    // 2 MiB + 1 rounds to 4 MiB, which would leave 8 MiB free.
    let err = a.allocate(2 * MIB + 1, S0).unwrap_err();
    assert_eq!(
        err,
        AllocError::OutOfMemory(Box::new(OutOfMemoryError {
            device: "host".to_owned(),
            requested: 2 * MIB + 1,
            free: 12 * MIB,
            total: 100 * MIB,
            allocated: 88 * MIB,
            reserved: 88 * MIB,
            cached: 0,
            hints: vec![OomHint::UseCachingAllocator],
        }))
    );
    assert_eq!((a.stats().num_ooms, a.stats().num_alloc_retries), (1, 0));
    let z = a.allocate(2 * MIB, S0).unwrap();
    assert_eq!(a.source().live_bytes(), 90 * MIB);
    assert_consistent(&a, &[&x, &y, &z]);
}

#[test]
fn the_reserve_first_releases_the_cache() {
    let a = pooled(100 * MIB, PoolRounding::MXNET_PAGE, 10);
    let x = a.allocate(60 * MIB, S0).unwrap();
    a.free(x).unwrap();
    // 60 MiB cached + 40 MiB would eat into the 10 MiB reserve: the cache goes first.
    let y = a.allocate(40 * MIB, S0).unwrap();
    let stats = a.stats();
    assert_eq!(recovery_counters(&stats), (1, 1, 0));
    assert_eq!(stats.reserved_bytes.current, 40 * MIB);
    assert_consistent(&a, &[&y]);
}

#[test]
fn out_of_memory_releases_the_cache_and_retries() {
    // Without mem_info there is no reserve: only the source's refusal triggers recovery.
    let a = PooledAllocator::new(HostMemorySource::new(64 * MIB).without_mem_info());
    let x = a.allocate(40 * MIB, S1).unwrap();
    a.free(x).unwrap();
    let y = a.allocate(30 * MIB, S0).unwrap();
    let stats = a.stats();
    assert_eq!(recovery_counters(&stats), (1, 1, 0));
    assert_consistent(&a, &[&y]);
    let err = a.allocate(40 * MIB, S0).unwrap_err();
    assert_eq!(
        err,
        AllocError::OutOfMemory(Box::new(OutOfMemoryError {
            device: "host".to_owned(),
            requested: 40 * MIB,
            free: 0,
            total: 0,
            allocated: 30 * MIB,
            reserved: 30 * MIB,
            cached: 0,
            hints: vec![OomHint::UseCachingAllocator],
        }))
    );
    assert_eq!((a.stats().num_ooms, a.stats().num_alloc_retries), (1, 2));
    assert_consistent(&a, &[&y]);
}

#[test]
fn config_parses_mxnet_settings() {
    let page = PooledConfig::parse(
        "type:page, page_size:8192, large_alloc_round_size:4194304, reserve:10",
    )
    .unwrap();
    assert_eq!(
        page.rounding(),
        PoolRounding::Page {
            page_size: 8192,
            large_alloc_round_size: 4 * MIB
        }
    );
    assert_eq!(page.reserve_percent(), 10);
    let round = PooledConfig::parse("type:round,round_linear_cutoff:26").unwrap();
    assert_eq!(
        round.rounding(),
        PoolRounding::Power2 {
            page_size: 4096,
            linear_cutoff: 26
        }
    );
    assert_eq!(round.reserve_percent(), 5);
    assert_eq!(PooledConfig::parse("").unwrap(), PooledConfig::default());
    assert_eq!(PooledConfig::default().rounding(), PoolRounding::MXNET_PAGE);
}

#[test]
fn config_rejects_bad_settings() {
    let bad = [
        "type:naive",
        "page_size:16",
        "type:round,page_size:5000",
        "type:round,round_linear_cutoff:19",
        "type:round,round_linear_cutoff:35",
        "type:round,page_size:4194304,round_linear_cutoff:20",
        "type:round,large_alloc_round_size:4096",
        "round_linear_cutoff:24",
        "large_alloc_round_size:0",
        "reserve:101",
        "reserve:x",
        "pool:page",
    ];
    for text in bad {
        match PooledConfig::parse(text) {
            Err(
                AllocError::InvalidConfig { input, reason }
                | AllocError::UnusableConfigKey { input, reason, .. },
            ) => {
                assert_eq!(input, text);
                assert!(!reason.is_empty());
            }
            Err(AllocError::InvalidConfigValue(e)) => {
                assert_eq!(e.input, text);
                assert!(!e.reason.is_empty());
            }
            other => panic!("{text:?} gave {other:?}"),
        }
    }
    assert!(PooledConfig::new(PoolRounding::MXNET_ROUND, 101).is_err());
    assert!(PooledConfig::new(
        PoolRounding::Power2 {
            page_size: 4096,
            linear_cutoff: 40
        },
        5
    )
    .is_err());
}

#[test]
fn config_comes_from_the_environment() {
    std::env::set_var(PooledConfig::ENV_VAR, "type:round");
    let a = PooledAllocator::from_env(HostMemorySource::new(64 * MIB)).unwrap();
    assert_eq!(a.config().rounding(), PoolRounding::MXNET_ROUND);
    std::env::set_var(PooledConfig::ENV_VAR, "type:bogus");
    assert!(PooledConfig::from_env().is_err());
    std::env::remove_var(PooledConfig::ENV_VAR);
    assert_eq!(PooledConfig::from_env().unwrap(), PooledConfig::default());
}
