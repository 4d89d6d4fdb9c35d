//! The naive allocator: every request and free goes straight to the source.

use typestate_tensor::error::{AllocError, OutOfMemoryError};
use typestate_tensor::storage::{
    Block, BlockState, DeviceAllocator, HostMemorySource, NaiveAllocator, StreamId,
};

const MIB: usize = 1 << 20;

#[test]
fn every_request_and_free_reaches_the_source() {
    let a = NaiveAllocator::new(HostMemorySource::new(16 * MIB));
    let x = a.allocate(1000, StreamId(0)).unwrap();
    let y = a.allocate(3 * MIB, StreamId(1)).unwrap();
    assert_eq!((x.size(), y.size()), (1000, 3 * MIB), "no rounding");
    assert_eq!(a.source().allocate_calls(), 2);
    let snapshot = a.snapshot();
    assert_eq!(snapshot.len(), 2);
    assert!(snapshot
        .iter()
        .all(|s| s.blocks[0].state == BlockState::Allocated));
    let stats = a.stats();
    assert_eq!(stats.reserved_bytes.current, 3 * MIB + 1000);
    assert_eq!(stats.allocated_bytes.current, 3 * MIB + 1000);
    a.free(x).unwrap();
    a.free_direct(y).unwrap();
    assert_eq!((a.source().free_calls(), a.source().live_regions()), (2, 0));
    let stats = a.stats();
    assert_eq!(
        (stats.reserved_bytes.current, stats.num_segment_frees),
        (0, 2)
    );
    assert_eq!(stats.reserved_bytes.peak, 3 * MIB + 1000);
}

#[test]
fn out_of_memory_and_unknown_blocks_are_errors() {
    let a = NaiveAllocator::new(HostMemorySource::new(MIB));
    let x = a.allocate(MIB / 2, StreamId(0)).unwrap();
    assert_eq!(
        a.allocate(MIB, StreamId(0)),
        Err(AllocError::OutOfMemory(Box::new(OutOfMemoryError {
            device: "host".to_owned(),
            requested: MIB,
            free: MIB / 2,
            total: MIB,
            allocated: MIB / 2,
            reserved: MIB / 2,
            cached: 0,
            hints: vec![],
        })))
    );
    assert_eq!(a.stats().num_ooms, 1);
    // SAFETY: a forgery on purpose (it breaks `from_raw_parts`'s contract): it only goes to
    // `free`, which must refuse it by its size without touching memory.
    let forged = unsafe { Block::from_raw_parts(x.addr(), 7, 7, StreamId(0)) };
    assert_eq!(
        a.free(forged),
        Err(AllocError::UnknownBlock { addr: x.addr() })
    );
    assert_eq!(a.record_stream(&x, StreamId(3)), Ok(()));
    a.empty_cache().unwrap();
    assert_eq!(
        a.source().live_regions(),
        1,
        "empty_cache has nothing to release"
    );
    a.free(x).unwrap();
    assert_eq!(a.source().live_regions(), 0);
}
