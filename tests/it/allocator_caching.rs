//! The caching allocator on host memory: the generic suite, plus the rules that need a
//! source with a fixed capacity or events that complete only when told (out-of-memory
//! stages, `max_split_size`, garbage collection, delayed reuse), the size tables and the
//! configuration parser.

use crate::common::caching_suite::{assert_consistent, caching_suite_tests};
use crate::common::{check, fill, MIB};
use std::sync::Arc;

use typestate_tensor::error::{AllocError, OomHint, OutOfMemoryError};
use typestate_tensor::storage::caching::{allocation_size, round_size, ROUNDUP_INTERVALS};
use typestate_tensor::storage::{
    Block, BlockState, CachingAllocator, CachingConfig, DeviceAllocator, HostMemorySource,
    SourceError, StreamId,
};

caching_suite_tests!(|| HostMemorySource::new(160 * MIB));

const S0: StreamId = StreamId(0);
const S1: StreamId = StreamId(1);
const S2: StreamId = StreamId(2);
const NO_DIVISIONS: [usize; ROUNDUP_INTERVALS] = [0; ROUNDUP_INTERVALS];

fn caching(capacity: usize, config: CachingConfig) -> CachingAllocator<HostMemorySource> {
    CachingAllocator::with_config(HostMemorySource::new(capacity), config)
}

fn alloc(a: &CachingAllocator<HostMemorySource>, bytes: usize, stream: StreamId) -> Block {
    a.allocate(bytes, stream)
        .unwrap_or_else(|e| panic!("allocating {bytes} bytes: {e}"))
}

fn max_split(mb: usize) -> CachingConfig {
    CachingConfig::default().with_max_split_size_mb(mb).unwrap()
}

#[test]
fn round_size_table() {
    let table = [
        (1, 512),
        (512, 512),
        (513, 1024),
        (1536, 1536),
        (1537, 2048),
        (MIB + 1, MIB + 512),
        (3 * MIB + 1, 3 * MIB + 512),
    ];
    for (request, want) in table {
        assert_eq!(
            round_size(request, &NO_DIVISIONS),
            Ok(want),
            "request {request}"
        );
    }
    let four = [4; ROUNDUP_INTERVALS];
    let table = [
        (1100, 1536),                // at most 4 * 512 bytes: plain rounding
        (3000, 3072),                // steps of 512 between 2048 and 4096
        (4096, 4096),                // powers of two stay
        (9000, 10240),               // steps of 2048 between 8192 and 16384
        (MIB + 1, MIB + 256 * 1024), // steps of 256 KiB above 1 MiB
        (3 * MIB + 1, 3 * MIB + 512 * 1024),
    ];
    for (request, want) in table {
        assert_eq!(
            round_size(request, &four),
            Ok(want),
            "request {request}, 4 divisions"
        );
    }
    let per_interval = CachingConfig::parse("roundup_power2_divisions:[2:1,>:4]").unwrap();
    let table = [
        (MIB + MIB / 2 + 1, MIB + MIB / 2 + 512),
        (3 * MIB + 1, 3 * MIB + MIB / 2),
    ];
    for (request, want) in table {
        assert_eq!(
            round_size(request, per_interval.roundup_power2_divisions()),
            Ok(want),
            "request {request}, [2:1,>:4]"
        );
    }
    assert_eq!(
        round_size(usize::MAX, &NO_DIVISIONS),
        Err(AllocError::SizeOverflow {
            requested: usize::MAX
        })
    );
}

#[test]
fn allocation_size_table() {
    let table = [
        (512, 2 * MIB),
        (MIB, 2 * MIB),
        (MIB + 512, 20 * MIB),
        (10 * MIB - 512, 20 * MIB),
        (10 * MIB, 10 * MIB),
        (10 * MIB + 512, 12 * MIB),
        (64 * MIB, 64 * MIB),
    ];
    for (size, want) in table {
        assert_eq!(allocation_size(size), Ok(want), "block size {size}");
    }
    assert!(allocation_size(usize::MAX - 511).is_err());
}

#[test]
fn oversized_requests_fail_before_touching_the_source() {
    let a = caching(64 * MIB, CachingConfig::default());
    assert_eq!(
        a.allocate(usize::MAX - 100, S0),
        Err(AllocError::SizeOverflow {
            requested: usize::MAX - 100
        })
    );
    assert_eq!(a.source().allocate_calls(), 0);
    assert_eq!(a.stats(), Default::default());
}

#[test]
fn record_stream_delays_reuse_until_the_event_completes() {
    let a = caching(64 * MIB, CachingConfig::default());
    let x = alloc(&a, 1000, S1);
    let x_addr = x.addr();
    a.record_stream(&x, S2).unwrap();
    a.free(x).unwrap();
    // One event, on the other stream only.
    assert_eq!(a.source().pending_events(S2), 1);
    assert_eq!(a.source().pending_events(S1), 0);
    let y = alloc(&a, 1000, S1);
    assert_ne!(y.addr(), x_addr, "the block is still in use on stream 2");
    a.source().complete_stream(S1);
    let z = alloc(&a, 1000, S1);
    assert_ne!(z.addr(), x_addr, "completing stream 1 does not release it");
    assert_consistent(&a, &[&y, &z]);
    a.source().complete_stream(S2);
    let w = alloc(&a, 1000, S1);
    assert_eq!(w.addr(), x_addr, "reused once the stream 2 event completed");
    assert_consistent(&a, &[&y, &z, &w]);
}

#[test]
fn a_request_that_fits_after_freeing_the_cache_succeeds_and_counts_a_retry() {
    let a = caching(64 * MIB, CachingConfig::default());
    let x = alloc(&a, 40 * MIB, S1);
    a.free(x).unwrap();
    // Stream 2 cannot use stream 1's cached segment; 40 + 30 MiB exceed the capacity.
    let syncs = a.source().synchronize_calls();
    let y = alloc(&a, 30 * MIB, S2);
    fill(a.source(), &y, 7);
    check(a.source(), &y, 7);
    let stats = a.stats();
    assert_eq!(stats.num_alloc_retries, 1);
    assert_eq!(stats.num_ooms, 0);
    assert_eq!(stats.num_segment_frees, 1);
    assert_eq!(stats.reserved_bytes.current, 30 * MIB);
    assert!(
        a.source().synchronize_calls() > syncs,
        "stage 2 synchronizes"
    );
    assert_consistent(&a, &[&y]);
}

#[test]
fn a_request_that_cannot_fit_reports_out_of_memory_and_leaves_the_pool_consistent() {
    let a = caching(64 * MIB, CachingConfig::default());
    let x = alloc(&a, 40 * MIB, S0);
    let y = alloc(&a, 10 * MIB, S0);
    a.free(y).unwrap();
    let err = a.allocate(30 * MIB, S0).unwrap_err();
    assert_eq!(
        err,
        AllocError::OutOfMemory(Box::new(OutOfMemoryError {
            device: "host".to_owned(),
            requested: 30 * MIB,
            free: 24 * MIB,
            total: 64 * MIB,
            allocated: 40 * MIB,
            reserved: 40 * MIB,
            cached: 0,
            // Nothing cached (no fragmentation) and nothing held elsewhere: no hint applies.
            hints: vec![],
        }))
    );
    let text = err.to_string();
    assert!(
        text.contains(&(30 * MIB).to_string()) && text.contains("host"),
        "{text}"
    );
    let stats = a.stats();
    assert_eq!((stats.num_ooms, stats.num_alloc_retries), (1, 1));
    assert_consistent(&a, &[&x]);
    // The allocator still works, and what fits still fits.
    let z = alloc(&a, 20 * MIB, S0);
    assert_consistent(&a, &[&x, &z]);
}

#[test]
fn blocks_from_max_split_size_up_never_serve_smaller_requests() {
    let a = caching(512 * MIB, max_split(32));
    let x = alloc(&a, 40 * MIB, S0);
    let x_addr = x.addr();
    a.free(x).unwrap();
    let y = alloc(&a, 12 * MIB, S0);
    assert_eq!(
        a.stats().segments.current,
        2,
        "a 12 MiB request gets a new segment"
    );
    let z = alloc(&a, 36 * MIB, S0);
    assert_eq!(
        (z.addr(), z.size()),
        (x_addr, 40 * MIB),
        "36 MiB reuses the 40 MiB block unsplit"
    );
    assert_consistent(&a, &[&y, &z]);
}

#[test]
fn oversize_blocks_serve_oversize_requests_only_within_20mib() {
    let a = caching(512 * MIB, max_split(32));
    let x = alloc(&a, 60 * MIB, S0);
    let x_addr = x.addr();
    a.free(x).unwrap();
    let y = alloc(&a, 34 * MIB, S0);
    assert_ne!(y.addr(), x_addr, "60 MiB is 20 MiB or more above 34 MiB");
    let z = alloc(&a, 41 * MIB, S0);
    assert_eq!(
        (z.addr(), z.size()),
        (x_addr, 60 * MIB),
        "within 20 MiB: reused whole"
    );
    assert_consistent(&a, &[&y, &z]);
    // Without max_split_size the same cached block is split for the 34 MiB request.
    let b = caching(512 * MIB, CachingConfig::default());
    let x = alloc(&b, 60 * MIB, S0);
    let x_addr = x.addr();
    b.free(x).unwrap();
    let y = alloc(&b, 34 * MIB, S0);
    assert_eq!((y.addr(), y.size()), (x_addr, 34 * MIB));
    assert_consistent(&b, &[&y]);
}

#[test]
fn stage_one_frees_an_oversize_block_without_counting_a_retry() {
    let a = caching(80 * MIB, max_split(32));
    let x = alloc(&a, 60 * MIB, S0);
    a.free(x).unwrap();
    // 30 MiB may not use the cached 60 MiB block, and 60 + 30 MiB exceed the capacity.
    let y = alloc(&a, 30 * MIB, S0);
    let stats = a.stats();
    assert_eq!((stats.num_alloc_retries, stats.num_ooms), (0, 0));
    assert_eq!(stats.num_segment_frees, 1);
    assert_consistent(&a, &[&y]);
}

#[test]
fn stage_one_frees_the_largest_oversize_blocks_until_enough() {
    let a = caching(150 * MIB, max_split(24));
    let blocks: Vec<Block> = [30, 40, 44]
        .iter()
        .map(|&mb| alloc(&a, mb * MIB, S0))
        .collect();
    for block in blocks {
        a.free(block).unwrap();
    }
    // 114 MiB cached + 60 MiB > 150 MiB: 44 and 40 go (84 >= 60), 30 stays.
    let y = alloc(&a, 60 * MIB, S0);
    let stats = a.stats();
    assert_eq!((stats.num_segment_frees, stats.num_alloc_retries), (2, 0));
    let mut sizes: Vec<usize> = a.snapshot().iter().map(|s| s.size).collect();
    sizes.sort_unstable();
    assert_eq!(sizes, vec![30 * MIB, 60 * MIB]);
    assert_consistent(&a, &[&y]);
}

#[test]
fn garbage_collection_frees_the_oldest_cached_segments_above_the_threshold() {
    let config = CachingConfig::default()
        .with_garbage_collection_threshold(0.5)
        .unwrap();
    let a = caching(100 * MIB, config);
    let x = alloc(&a, 30 * MIB, S0);
    a.free(x).unwrap();
    let y = alloc(&a, 30 * MIB, S1);
    a.free(y).unwrap();
    // 60 MiB held > 50 MiB: the next miss collects the older (stream 0) segment only.
    let z = alloc(&a, 12 * MIB, S2);
    let streams: Vec<(StreamId, usize)> = a.snapshot().iter().map(|s| (s.stream, s.size)).collect();
    assert!(streams.contains(&(S1, 30 * MIB)) && streams.contains(&(S2, 12 * MIB)));
    assert_eq!(streams.len(), 2);
    let stats = a.stats();
    assert_eq!((stats.num_segment_frees, stats.num_alloc_retries), (1, 0));
    assert_consistent(&a, &[&z]);
}

#[test]
fn a_fragmented_out_of_memory_says_what_to_try() {
    let a = caching(64 * MIB, CachingConfig::default());
    // Two 20 MiB segments, each [8 MiB][8 MiB][4 MiB free]; freeing the first block of each
    // leaves 24 MiB cached in pieces that no 30 MiB request fits, and no whole segment to
    // return.
    let x = alloc(&a, 8 * MIB, S0);
    let y = alloc(&a, 8 * MIB, S0);
    let z = alloc(&a, 8 * MIB, S0);
    let w = alloc(&a, 8 * MIB, S0);
    assert_eq!(a.stats().reserved_bytes.current, 40 * MIB);
    a.free(x).unwrap();
    a.free(z).unwrap();
    let err = a.allocate(30 * MIB, S0).unwrap_err();
    assert_eq!(
        err,
        AllocError::OutOfMemory(Box::new(OutOfMemoryError {
            device: "host".to_owned(),
            requested: 30 * MIB,
            free: 24 * MIB,
            total: 64 * MIB,
            allocated: 16 * MIB,
            reserved: 40 * MIB,
            cached: 24 * MIB,
            // 24 of 40 reserved MiB are cached pieces: fragmentation.
            hints: vec![OomHint::MaxSplitSize, OomHint::RoundupPower2Divisions],
        }))
    );
    assert_eq!(
        err.to_string(),
        "out of memory on host: tried to allocate 31457280 bytes (30.00 MiB). The device has \
         a total capacity of 64.00 MiB of which 24.00 MiB is free. Of the memory this \
         allocator holds (40.00 MiB reserved), 16.00 MiB is allocated and 24.00 MiB is \
         reserved but unallocated. Hint: if reserved but unallocated memory is large, try \
         TYPESTATE_TENSOR_ALLOC_CONF=max_split_size_mb:<MiB> (at least 20) so that blocks \
         that large are never split for smaller requests. Hint: or \
         TYPESTATE_TENSOR_ALLOC_CONF=roundup_power2_divisions:4 so that near-miss sizes \
         round to shared steps and reuse freed blocks."
    );
    // Every key the hints name is one the configuration accepts.
    assert!(CachingConfig::parse("max_split_size_mb:20,roundup_power2_divisions:4").is_ok());
    assert_consistent(&a, &[&y, &w]);
}

#[test]
fn the_memory_fraction_caps_what_the_allocator_holds() {
    let config = CachingConfig::default().with_memory_fraction(0.5).unwrap();
    let a = caching(100 * MIB, config);
    let x = alloc(&a, 40 * MIB, S0);
    let err = a.allocate(20 * MIB, S0).unwrap_err();
    assert!(
        matches!(&err, AllocError::OutOfMemory(oom)
            if oom.requested == 20 * MIB && oom.free == 60 * MIB && oom.total == 100 * MIB
                && oom.hints == [OomHint::MemoryFraction]),
        "{err:?}"
    );
    let y = alloc(&a, 10 * MIB, S0);
    assert_consistent(&a, &[&x, &y]);
}

#[test]
fn source_failures_are_reported_without_retrying() {
    let a = caching(64 * MIB, CachingConfig::default());
    a.source()
        .fail_next_allocate(SourceError::Other("driver exploded".to_owned()));
    match a.allocate(1000, S0) {
        Err(AllocError::Source(message)) => {
            assert!(
                message.contains("driver exploded") && message.contains("host"),
                "{message}"
            )
        }
        other => panic!("expected a source error, got {other:?}"),
    }
    let stats = a.stats();
    assert_eq!(
        (
            stats.num_alloc_retries,
            stats.num_ooms,
            stats.segments.current
        ),
        (0, 0, 0)
    );
    let x = alloc(&a, 1000, S0);
    assert_consistent(&a, &[&x]);
}

#[test]
fn drop_returns_cached_segments_but_not_ones_in_use() {
    let source = Arc::new(HostMemorySource::new(64 * MIB));
    let kept = {
        let a = CachingAllocator::new(Arc::clone(&source));
        let x = a.allocate(12 * MIB, S0).unwrap();
        a.record_stream(&x, S1).unwrap();
        a.free(x).unwrap();
        assert_eq!(a.snapshot()[0].blocks[0].state, BlockState::AwaitingEvents);
        a.allocate(1000, S0).unwrap()
    };
    // The cached 12 MiB segment went back; the small segment under `kept` stayed.
    assert_eq!((source.live_regions(), source.live_bytes()), (1, 2 * MIB));
    assert!(
        source.write(kept.addr(), &[1, 2, 3]).is_ok(),
        "kept memory is still valid"
    );
}

#[test]
fn config_parses_every_key() {
    let c = CachingConfig::parse(
        "max_split_size_mb:128, max_non_split_rounding_mb:64, roundup_power2_divisions:4,\
         garbage_collection_threshold:0.6, expandable_segments:False, backend:native",
    )
    .unwrap();
    assert_eq!(c.max_split_size(), Some(128 * MIB));
    assert_eq!(c.max_non_split_rounding(), 64 * MIB);
    assert_eq!(c.roundup_power2_divisions(), &[4; ROUNDUP_INTERVALS]);
    assert_eq!(c.garbage_collection_threshold(), Some(0.6));
    assert_eq!(c.memory_fraction(), None);
    assert_eq!(CachingConfig::parse("").unwrap(), CachingConfig::default());
    let d = CachingConfig::default();
    assert_eq!(
        (d.max_split_size(), d.max_non_split_rounding()),
        (None, 20 * MIB)
    );
    assert_eq!(
        CachingConfig::parse("max_split_size_mb:20")
            .unwrap()
            .max_split_size(),
        Some(20 * MIB)
    );
}

#[test]
fn config_rejects_bad_input_with_the_text_and_a_reason() {
    let bad = [
        "max_split_size_mb:19",
        "max_split_size_mb:abc",
        "max_split_size_mb:-5",
        "max_split_size_mb",
        "max_split_size_mb:128,",
        "max_split_size_mb:[1:2]",
        "max_non_split_rounding_mb:10",
        "garbage_collection_threshold:1.0",
        "garbage_collection_threshold:0",
        "garbage_collection_threshold:nan",
        "roundup_power2_divisions:3",
        "roundup_power2_divisions:0",
        "roundup_power2_divisions:[256:3]",
        "roundup_power2_divisions:[300:2]",
        "expandable_segments:True",
        "expandable_segments:yes",
        "backend:cudaMallocAsync",
        "max_split_size:128",
        ",",
    ];
    for text in bad {
        match CachingConfig::parse(text) {
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
    let builders = [
        CachingConfig::default().with_max_split_size_mb(5),
        CachingConfig::default().with_roundup_power2_divisions(6),
        CachingConfig::default().with_garbage_collection_threshold(-0.1),
        CachingConfig::default().with_memory_fraction(0.0),
        CachingConfig::default().with_memory_fraction(1.5),
    ];
    for built in builders {
        assert!(
            matches!(built, Err(AllocError::InvalidConfigValue(_))),
            "{built:?}"
        );
    }
}

#[test]
fn config_comes_from_the_environment() {
    // The only test that touches this variable.
    std::env::set_var(CachingConfig::ENV_VAR, "max_split_size_mb:64");
    let a = CachingAllocator::from_env(HostMemorySource::new(64 * MIB)).unwrap();
    assert_eq!(a.config().max_split_size(), Some(64 * MIB));
    std::env::set_var(CachingConfig::ENV_VAR, "max_split_size_mb:1");
    assert!(matches!(
        CachingConfig::from_env(),
        Err(AllocError::InvalidConfigValue(e)) if e.input == "max_split_size_mb:1"
    ));
    std::env::remove_var(CachingConfig::ENV_VAR);
    assert_eq!(CachingConfig::from_env().unwrap(), CachingConfig::default());
}
