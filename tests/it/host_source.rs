//! `HostMemorySource`: real aligned memory, a hard capacity, checked access, and streams
//! whose events complete only when told.

use std::sync::Arc;

use typestate_tensor::storage::host_source::HOST_ALIGNMENT;
use typestate_tensor::storage::{HostMemorySource, MemorySource, SourceError, StreamId};

#[test]
fn regions_are_aligned_zeroed_and_hold_what_is_written() {
    let source = HostMemorySource::new(1 << 20);
    let addr = source.allocate(1000).unwrap();
    assert_eq!(addr % HOST_ALIGNMENT as u64, 0);
    let mut out = vec![1u8; 1000];
    source.read(addr, &mut out).unwrap();
    assert!(out.iter().all(|&b| b == 0), "fresh regions are zeroed");
    let data: Vec<u8> = (0..300u32).map(|i| (i * 7 + 3) as u8).collect();
    source.write(addr + 600, &data).unwrap();
    let mut back = vec![0u8; 300];
    source.read(addr + 600, &mut back).unwrap();
    assert_eq!(back, data);
    // Past the end of the region, and into nothing at all.
    assert!(source.write(addr + 900, &[0; 101]).is_err());
    assert!(source.read(addr + 1000, &mut [0; 1]).is_err());
    assert!(source.write(8, &[1]).is_err());
    // SAFETY: `addr` came from this source with 1000 bytes and nothing uses it.
    unsafe { source.free(addr, 1000) }.unwrap();
    assert!(
        source.read(addr, &mut [0; 1]).is_err(),
        "freed memory is no longer readable"
    );
}

#[test]
fn capacity_is_enforced_and_reported() {
    let source = HostMemorySource::new(10_000);
    assert_eq!(source.mem_info(), Some((10_000, 10_000)));
    let a = source.allocate(6000).unwrap();
    assert_eq!(source.allocate(4001), Err(SourceError::OutOfMemory));
    let b = source.allocate(4000).unwrap();
    assert_eq!(source.mem_info(), Some((0, 10_000)));
    assert_eq!((source.live_regions(), source.live_bytes()), (2, 10_000));
    // SAFETY: both regions came from this source with these sizes and nothing uses them.
    unsafe {
        assert!(source.free(a, 5999).is_err(), "a wrong size is refused");
        source.free(a, 6000).unwrap();
        assert!(source.free(a, 6000).is_err(), "a double free is refused");
        source.free(b, 4000).unwrap();
    }
    assert_eq!((source.allocate_calls(), source.free_calls()), (3, 4));
    assert_eq!(source.live_regions(), 0);
    assert_eq!(
        HostMemorySource::new(10).without_mem_info().mem_info(),
        None
    );
    assert!(source.allocate(0).is_err());
}

#[test]
fn events_complete_only_when_told() {
    let source = HostMemorySource::new(0);
    let (s1, s2) = (StreamId(1), StreamId(2));
    let e1 = source.record_event(s1).unwrap();
    let e2 = source.record_event(s1).unwrap();
    let f1 = source.record_event(s2).unwrap();
    assert_eq!(e1.stream(), s1);
    assert_eq!(
        (source.pending_events(s1), source.pending_events(s2)),
        (2, 1)
    );
    assert!(!source.event_completed(&e1).unwrap());
    source.complete_stream(s1);
    assert!(source.event_completed(&e1).unwrap() && source.event_completed(&e2).unwrap());
    assert!(
        !source.event_completed(&f1).unwrap(),
        "other streams are untouched"
    );
    let e3 = source.record_event(s1).unwrap();
    assert!(
        !source.event_completed(&e3).unwrap(),
        "later events wait for the next completion"
    );
    assert_eq!(
        (source.recorded_events(s1), source.completed_events(s1)),
        (3, 2)
    );
    source.synchronize().unwrap();
    assert!(source.event_completed(&e3).unwrap() && source.event_completed(&f1).unwrap());
    assert_eq!(source.synchronize_calls(), 1);
}

#[test]
fn injected_failures_and_shared_sources() {
    let source = Arc::new(HostMemorySource::new(1 << 16));
    source.fail_next_allocate(SourceError::Other("boom".to_owned()));
    assert_eq!(
        source.allocate(64),
        Err(SourceError::Other("boom".to_owned()))
    );
    let shared: &dyn Fn(usize) -> Result<u64, SourceError> =
        &|n| MemorySource::allocate(&source, n);
    let addr = shared(64).unwrap();
    assert_eq!(MemorySource::name(&source), "host");
    assert_eq!(source.live_regions(), 1);
    // SAFETY: allocated above with 64 bytes through the same source; nothing uses it.
    unsafe { MemorySource::free(&source, addr, 64) }.unwrap();
    assert_eq!(source.live_regions(), 0);
}
