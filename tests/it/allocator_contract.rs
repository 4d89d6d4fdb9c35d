//! The allocator contract the crate's unsafe code trusts (`unsafe trait DeviceAllocator`):
//! a misbehaving allocator can now only be written with `unsafe impl`, and the safe paths
//! refuse what they can see of its misbehaviour with a typed error; foreign and repeated
//! frees are refused by every allocator of the crate without any effect.
//!
//! Everything here runs on host memory (so on CI), except the `GpuStorage` check at the end,
//! which prints a skip line without a CUDA driver.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use typestate_tensor::error::{AllocError, Error, GpuError};
use typestate_tensor::gpu::Gpu;
use typestate_tensor::storage::{
    Allocation, AllocatorStats, Block, CachingAllocator, CachingHostAllocator, DeviceAllocator,
    HostMemorySource, MemoryLocation, NaiveAllocator, PooledAllocator, StreamId,
};

const MIB: usize = 1 << 20;
const S0: StreamId = StreamId(0);
const S1: StreamId = StreamId(1);

/// How [`Liar`] breaks the contract.
#[derive(Clone, Copy, Debug)]
enum Lie {
    /// A block one byte smaller than asked.
    Short,
    /// Address 0 for a non-empty request.
    NullAddress,
    /// A block of another stream than the one asked for.
    OtherStream,
    /// A block recording another request size.
    WrongRequested,
    /// Honest blocks, but memory reported on this location.
    Location(MemoryLocation),
}

/// An allocator that breaks its contract as told. It owns no memory: its blocks name
/// addresses nobody may touch, and the tests only give them to safe paths that must refuse
/// them (or, for `Location`, never get that far).
struct Liar {
    lie: Lie,
    /// Blocks given back through `free`, with what they were.
    freed: Mutex<Vec<(u64, usize, StreamId)>>,
    allocated: AtomicUsize,
}

impl Liar {
    fn new(lie: Lie) -> Arc<Liar> {
        Arc::new(Liar {
            lie,
            freed: Mutex::new(Vec::new()),
            allocated: AtomicUsize::new(0),
        })
    }

    fn freed(&self) -> Vec<(u64, usize, StreamId)> {
        self.freed.lock().unwrap().clone()
    }
}

// SAFETY: this implementation breaks the contract on purpose, which is what the tests check
// the safe paths catch. It is only handed to safe functions that must refuse its blocks
// before any memory is touched (`Allocation::new`, `Gpu::with_allocator`, `GpuStorage`'s
// size check); no code reads or writes through the addresses it makes up.
unsafe impl DeviceAllocator for Liar {
    fn name(&self) -> &'static str {
        "liar"
    }

    fn memory_location(&self) -> MemoryLocation {
        match self.lie {
            Lie::Location(location) => location,
            _ => MemoryLocation::Device { ordinal: 0 },
        }
    }

    fn allocate(&self, bytes: usize, stream: StreamId) -> Result<Block, AllocError> {
        self.allocated.fetch_add(1, Ordering::SeqCst);
        let addr = 0x10_0000;
        let (addr, size, requested, stream) = match self.lie {
            Lie::Short => (addr, bytes - 1, bytes, stream),
            Lie::NullAddress => (0, bytes, bytes, stream),
            Lie::OtherStream => (addr, bytes, bytes, StreamId(stream.0 + 7)),
            Lie::WrongRequested => (addr, bytes, bytes + 1, stream),
            Lie::Location(_) => (addr, bytes, bytes, stream),
        };
        // SAFETY: not upheld, on purpose (see the `unsafe impl` above): the block names no
        // memory and only reaches code that must refuse it.
        Ok(unsafe { Block::from_raw_parts(addr, size, requested, stream) })
    }

    fn free(&self, block: Block) -> Result<(), AllocError> {
        self.freed
            .lock()
            .unwrap()
            .push((block.addr(), block.size(), block.stream()));
        Ok(())
    }

    fn free_direct(&self, block: Block) -> Result<(), AllocError> {
        self.free(block)
    }

    fn record_stream(&self, _block: &Block, _stream: StreamId) -> Result<(), AllocError> {
        Ok(())
    }

    fn empty_cache(&self) -> Result<(), AllocError> {
        Ok(())
    }

    fn stats(&self) -> AllocatorStats {
        AllocatorStats::default()
    }

    fn reset_peak_stats(&self) {}
}

/// `Allocation::new` over a liar: the typed error, and the block given back exactly once.
fn refused_by_allocation(lie: Lie, bytes: usize, want_in_reason: &str) {
    let liar = Liar::new(lie);
    let shared: Arc<dyn DeviceAllocator> = liar.clone();
    match Allocation::new(&shared, bytes, S1) {
        Err(AllocError::BrokenAllocator { allocator, reason }) => {
            assert_eq!(allocator, "liar");
            assert!(
                reason.contains(want_in_reason),
                "{lie:?}: reason {reason:?} should mention {want_in_reason:?}"
            );
        }
        other => panic!("{lie:?}: Allocation::new gave {other:?}"),
    }
    assert_eq!(liar.allocated.load(Ordering::SeqCst), 1);
    assert_eq!(
        liar.freed().len(),
        1,
        "{lie:?}: the bad block goes back once"
    );
}

#[test]
fn a_block_smaller_than_asked_is_refused_and_given_back() {
    refused_by_allocation(Lie::Short, 4096, "4095 bytes");
}

#[test]
fn a_null_address_for_a_non_empty_request_is_refused_and_given_back() {
    refused_by_allocation(Lie::NullAddress, 4096, "address 0");
}

#[test]
fn a_block_of_another_stream_is_refused_and_given_back() {
    refused_by_allocation(Lie::OtherStream, 4096, "stream 0x8");
}

#[test]
fn a_block_recording_another_request_is_refused_and_given_back() {
    refused_by_allocation(Lie::WrongRequested, 4096, "4097");
}

#[test]
fn gpu_with_allocator_refuses_memory_of_another_device_before_touching_the_driver() {
    // The location is checked first, so this runs (and must give the same errors) with or
    // without a GPU.
    let other = Liar::new(Lie::Location(MemoryLocation::Device { ordinal: 3 }));
    match Gpu::with_allocator(0, other.clone()) {
        Err(
            e @ GpuError::AllocatorOfAnotherGpu {
                op,
                ordinal,
                allocator_ordinal,
                allocator,
            },
        ) => {
            assert_eq!(
                (op, ordinal, allocator_ordinal, allocator),
                ("Gpu::with_allocator", 0, 3, "liar")
            );
            assert!(
                e.to_string().starts_with(
                    "Gpu::with_allocator: the liar allocator belongs to GPU 3, not GPU 0;"
                ),
                "{e}"
            );
        }
        other => panic!("gave {other:?}"),
    }
    assert_eq!(
        other.allocated.load(Ordering::SeqCst),
        0,
        "nothing allocated"
    );
    for location in [MemoryLocation::Host, MemoryLocation::PinnedHost] {
        let host = Liar::new(Lie::Location(location));
        match Gpu::with_allocator(1, host) {
            Err(GpuError::AllocatorNotOnDevice {
                op,
                ordinal,
                allocator,
                location: got,
            }) => {
                assert_eq!(
                    (op, ordinal, allocator, got),
                    ("Gpu::with_allocator", 1, "liar", location)
                );
            }
            other => panic!("{location:?} gave {other:?}"),
        }
    }
}

#[test]
fn gpu_with_allocator_refuses_the_crate_allocators_over_host_memory() {
    let allocators: [Arc<dyn DeviceAllocator>; 4] = [
        Arc::new(CachingAllocator::new(HostMemorySource::new(64 * MIB))),
        Arc::new(PooledAllocator::new(HostMemorySource::new(64 * MIB))),
        Arc::new(NaiveAllocator::new(HostMemorySource::new(64 * MIB))),
        Arc::new(CachingHostAllocator::new(HostMemorySource::new(64 * MIB))),
    ];
    for a in allocators {
        assert_eq!(a.memory_location(), MemoryLocation::Host, "{}", a.name());
        let name = a.name();
        let err = Gpu::with_allocator(0, a).unwrap_err();
        assert!(
            matches!(
                err,
                GpuError::AllocatorNotOnDevice {
                    location: MemoryLocation::Host,
                    ordinal: 0,
                    allocator,
                    ..
                } if allocator == name
            ),
            "{name}: {err:?}"
        );
        let message = err.to_string();
        assert!(
            message.contains("pageable host memory") && message.contains("DeviceMemorySource"),
            "{message}"
        );
    }
}

#[test]
fn the_sources_and_allocators_report_where_their_memory_is() {
    let source = Arc::new(HostMemorySource::new(64 * MIB));
    assert_eq!(
        typestate_tensor::storage::MemorySource::location(&source),
        MemoryLocation::Host
    );
    assert_eq!(
        CachingAllocator::new(Arc::clone(&source)).memory_location(),
        MemoryLocation::Host
    );
    assert_eq!(
        MemoryLocation::Device { ordinal: 2 }.to_string(),
        "device memory of GPU 2"
    );
    assert_eq!(MemoryLocation::PinnedHost.to_string(), "pinned host memory");
}

/// One crate allocator under test, behind the trait.
fn host_allocators(source: &Arc<HostMemorySource>) -> Vec<Arc<dyn DeviceAllocator>> {
    vec![
        Arc::new(CachingAllocator::new(Arc::clone(source))),
        Arc::new(PooledAllocator::new(Arc::clone(source))),
        Arc::new(NaiveAllocator::new(Arc::clone(source))),
        Arc::new(CachingHostAllocator::new(Arc::clone(source))),
    ]
}

#[test]
fn a_block_of_allocator_a_freed_into_allocator_b_is_refused_with_no_effect() {
    // Every pair of the crate's host-memory allocators (same kind included), over one
    // shared source: B refuses A's block through every entry point and neither changes.
    let source = Arc::new(HostMemorySource::new(256 * MIB));
    let kinds = host_allocators(&source).len();
    for ia in 0..kinds {
        for ib in 0..kinds {
            let a = Arc::clone(&host_allocators(&source)[ia]);
            let b = Arc::clone(&host_allocators(&source)[ib]);
            let (na, nb) = (a.name(), b.name());
            let kept_in_b = b.allocate(3000, S0).unwrap();
            let x = a.allocate(3000, S0).unwrap();
            let addr = x.addr();
            let (stats_a, stats_b) = (a.stats(), b.stats());
            let live = (source.live_regions(), source.live_bytes());
            let frees = source.free_calls();

            assert_eq!(
                b.record_stream(&x, S1),
                Err(AllocError::UnknownBlock { addr }),
                "{na} -> {nb}: record_stream"
            );
            // SAFETY: a second handle to `x` on purpose (it breaks `from_raw_parts`'s
            // contract), given only to B, which must refuse it without touching memory; the
            // original goes back to A below.
            let copy = unsafe { Block::from_raw_parts(addr, x.size(), x.requested(), S0) };
            assert_eq!(
                b.free_direct(copy),
                Err(AllocError::UnknownBlock { addr }),
                "{na} -> {nb}: free_direct"
            );
            assert_eq!(
                b.free(x),
                Err(AllocError::UnknownBlock { addr }),
                "{na} -> {nb}: free"
            );
            assert_eq!(a.stats(), stats_a, "{na} -> {nb}: A's statistics changed");
            assert_eq!(b.stats(), stats_b, "{na} -> {nb}: B's statistics changed");
            assert_eq!(
                (
                    source.live_regions(),
                    source.live_bytes(),
                    source.free_calls()
                ),
                (live.0, live.1, frees),
                "{na} -> {nb}: the source was touched"
            );
            assert_eq!((a.check_err(), b.check_err()), (Ok(()), Ok(())));
            b.free(kept_in_b).unwrap();
        }
    }
}

#[test]
fn a_block_freed_by_a_and_offered_again_through_b_is_refused_by_both() {
    // Naive allocators return memory to the shared source at once, so B may well be handed
    // A's old address (the global allocator often reuses a freed region of the same size):
    // a handle to A's freed block then names a live block of B by address and size, and
    // must still be refused, by A (already freed) and by B (not its block: another stream).
    let source = Arc::new(HostMemorySource::unbounded());
    let a: Arc<dyn DeviceAllocator> = Arc::new(NaiveAllocator::new(Arc::clone(&source)));
    let b: Arc<dyn DeviceAllocator> = Arc::new(NaiveAllocator::new(Arc::clone(&source)));
    let x = a.allocate(4096, S0).unwrap();
    let (addr, size) = (x.addr(), x.size());
    // SAFETY: a stale handle on purpose (it breaks `from_raw_parts`'s contract), used only
    // after `x` is freed, and only given to `free`, which must refuse it.
    let stale = unsafe { Block::from_raw_parts(addr, size, size, S0) };
    a.free(x).unwrap();
    let y = b.allocate(4096, S1).unwrap();
    let (stats_a, stats_b) = (a.stats(), b.stats());
    let frees = source.free_calls();
    assert_eq!(a.free(stale), Err(AllocError::UnknownBlock { addr }));
    // SAFETY: as above: a second stale handle, given only to B's `free`.
    let stale = unsafe { Block::from_raw_parts(addr, size, size, S0) };
    assert_eq!(b.free(stale), Err(AllocError::UnknownBlock { addr }));
    // SAFETY: a copy of B's live block with another stream, on purpose; only given to
    // B's `free`, which must refuse it by its stream (address and size match).
    let other_stream = unsafe { Block::from_raw_parts(y.addr(), y.size(), y.requested(), S0) };
    assert_eq!(
        b.free(other_stream),
        Err(AllocError::UnknownBlock { addr: y.addr() })
    );
    assert_eq!((a.stats(), b.stats()), (stats_a, stats_b));
    assert_eq!(source.free_calls(), frees, "nothing was freed");
    assert_eq!(source.live_regions(), 1, "B's block is still live");
    b.free(y).unwrap();
    assert_eq!(source.live_regions(), 0);
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn gpu_storage_refuses_a_short_block_from_an_allocator_claiming_device_memory() {
    if !Gpu::available() {
        println!("skipping: no CUDA driver");
        return;
    }
    // The liar claims GPU 0's memory, so `with_allocator` accepts it; `GpuStorage` then
    // sees the short block before any memset and gives it back.
    let liar = Liar::new(Lie::Short);
    let gpu = Gpu::with_allocator(0, liar.clone()).expect("GPU 0 with the liar");
    match gpu.zeros::<f32>(1024) {
        Err(Error::Alloc(AllocError::BrokenAllocator { reason, .. })) => {
            assert!(reason.contains("4095"), "{reason}")
        }
        Err(e) => panic!("gave {e:?}"),
        Ok(_) => panic!("a short block was accepted"),
    }
    assert_eq!(liar.freed().len(), 1, "the short block went back");
    // An honest allocator over GPU 0's memory is accepted.
    let honest = Arc::new(CachingAllocator::new(gpu.device_memory_source()));
    let gpu0 = Gpu::with_allocator(0, honest).expect("GPU 0 with its own memory");
    assert_eq!(
        gpu0.allocator().memory_location(),
        MemoryLocation::Device { ordinal: 0 }
    );
    if Gpu::device_count().unwrap_or(0) < 2 {
        println!("skipping the second half: needs two GPUs");
        return;
    }
    let on_zero = Arc::new(CachingAllocator::new(gpu.device_memory_source()));
    assert!(matches!(
        Gpu::with_allocator(1, on_zero),
        Err(GpuError::DeviceMismatch { lhs: 1, rhs: 0, .. })
    ));
}
