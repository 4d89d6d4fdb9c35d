//! `Allocation`: blocks that return to their allocator when dropped, with failed frees
//! recorded rather than panicking.

use std::sync::Arc;

use typestate_tensor::error::AllocError;
use typestate_tensor::storage::{
    Allocation, Block, CachingAllocator, DeviceAllocator, HostMemorySource, StreamId,
};

const MIB: usize = 1 << 20;

fn allocator() -> (
    Arc<CachingAllocator<HostMemorySource>>,
    Arc<dyn DeviceAllocator>,
) {
    let concrete = Arc::new(CachingAllocator::new(HostMemorySource::new(64 * MIB)));
    let shared: Arc<dyn DeviceAllocator> = concrete.clone();
    (concrete, shared)
}

/// An allocation of a block `shared` never handed out (512 bytes at `addr`, stream 0).
fn forged_allocation(addr: u64, shared: &Arc<dyn DeviceAllocator>) -> Allocation {
    // SAFETY: this breaks both contracts on purpose, to test the allocator's own defence:
    // the forged block is only ever freed (by `free` or `Drop`), which must refuse it and
    // record the error; nothing reads or writes through its address.
    unsafe {
        Allocation::from_block(
            Block::from_raw_parts(addr, 512, 1, StreamId(0)),
            Arc::clone(shared),
        )
    }
}

#[test]
fn dropping_an_allocation_frees_it_to_the_cache() {
    let (concrete, shared) = allocator();
    let addr;
    {
        let a = Allocation::new(&shared, 3000, StreamId(1)).unwrap();
        assert_eq!(
            (a.size(), a.requested(), a.stream()),
            (3072, 3000, StreamId(1))
        );
        concrete.source().write(a.addr(), &[7; 3000]).unwrap();
        addr = a.addr();
        assert_eq!(concrete.stats().allocations.current, 1);
        assert_eq!(a.allocator().name(), "caching");
    }
    let stats = concrete.stats();
    assert_eq!(
        (stats.allocations.current, stats.allocated_bytes.current),
        (0, 0)
    );
    assert_eq!(
        stats.reserved_bytes.current,
        2 * MIB,
        "cached, not returned to the source"
    );
    let again = Allocation::new(&shared, 3000, StreamId(1)).unwrap();
    assert_eq!(again.addr(), addr);
    assert_eq!(concrete.check_err(), Ok(()));
}

#[test]
fn record_stream_through_an_allocation_delays_reuse() {
    let (concrete, shared) = allocator();
    let a = Allocation::new(&shared, 1000, StreamId(0)).unwrap();
    let addr = a.addr();
    a.record_stream(StreamId(5)).unwrap();
    drop(a);
    let b = Allocation::new(&shared, 1000, StreamId(0)).unwrap();
    assert_ne!(b.addr(), addr);
    concrete.source().complete_stream(StreamId(5));
    let c = Allocation::new(&shared, 1000, StreamId(0)).unwrap();
    assert_eq!(c.addr(), addr);
}

#[test]
fn into_block_gives_up_ownership_and_free_reports_errors() {
    let (concrete, shared) = allocator();
    let a = Allocation::new(&shared, 4096, StreamId(0)).unwrap();
    let block = a.into_block();
    assert_eq!(
        concrete.stats().allocations.current,
        1,
        "not freed by into_block"
    );
    shared.free(block).unwrap();
    assert_eq!(concrete.stats().allocations.current, 0);
    let f = forged_allocation(0x1000, &shared);
    assert_eq!(f.free(), Err(AllocError::UnknownBlock { addr: 0x1000 }));
}

#[test]
fn a_failed_free_in_drop_is_recorded_not_panicked() {
    let (concrete, shared) = allocator();
    drop(forged_allocation(0x2000, &shared));
    drop(forged_allocation(0x3000, &shared));
    // The first error is kept until taken.
    assert_eq!(
        concrete.check_err(),
        Err(AllocError::UnknownBlock { addr: 0x2000 })
    );
    assert_eq!(concrete.check_err(), Ok(()));
}
