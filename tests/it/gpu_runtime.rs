//! The GPU runtime against a real device: copies, streams and events, memory sources, the
//! driver-pool allocator, pinned buffers and threads.
//!
//! Every test that needs a GPU prints `skipping: no CUDA driver` and returns when
//! `Gpu::available()` is false, so the suite passes on machines without CUDA. With a GPU,
//! each test checks values read back against host data (random, seeded) or against what the
//! driver reports through cudarc directly.

use std::sync::Arc;
use std::thread;

use half::{bf16, f16};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use typestate_tensor::device::Storage;
use typestate_tensor::error::{AllocError, Error, GpuError, LayoutError};
use typestate_tensor::gpu::{
    DeviceMemorySource, DriverPoolAllocator, DriverPoolOptions, Gpu, GpuStorage, PinnedBuffer,
    PinnedHostSource, Stream,
};
use typestate_tensor::storage::allocator::{Block, DeviceAllocator};
use typestate_tensor::storage::source::{MemorySource, SourceError, StreamId};
use typestate_tensor::{Device, Element};

type TestResult = Result<(), Error>;

/// GPU 0, or `None` (after saying so) on a machine without a usable GPU.
fn gpu() -> Option<Gpu> {
    if !Gpu::available() {
        println!("skipping: no CUDA driver");
        return None;
    }
    Some(Gpu::new(0).expect("a GPU is available, so GPU 0 opens"))
}

/// Seeded random values of each element type (never all zero).
trait Random: Element {
    fn random(rng: &mut SmallRng) -> Self;
}

impl Random for f32 {
    fn random(rng: &mut SmallRng) -> Self {
        rng.gen_range(-1.0e3..1.0e3)
    }
}
impl Random for f64 {
    fn random(rng: &mut SmallRng) -> Self {
        rng.gen_range(-1.0e6..1.0e6)
    }
}
impl Random for i32 {
    fn random(rng: &mut SmallRng) -> Self {
        rng.gen()
    }
}
impl Random for i64 {
    fn random(rng: &mut SmallRng) -> Self {
        rng.gen()
    }
}
impl Random for u8 {
    fn random(rng: &mut SmallRng) -> Self {
        rng.gen()
    }
}
impl Random for bool {
    fn random(rng: &mut SmallRng) -> Self {
        rng.gen()
    }
}
impl Random for f16 {
    fn random(rng: &mut SmallRng) -> Self {
        f16::from_f32(rng.gen_range(-100.0..100.0))
    }
}
impl Random for bf16 {
    fn random(rng: &mut SmallRng) -> Self {
        bf16::from_f32(rng.gen_range(-100.0..100.0))
    }
}

fn random_vec<T: Random>(len: usize, seed: u64) -> Vec<T> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut v: Vec<T> = (0..len).map(|_| T::random(&mut rng)).collect();
    // Make sure a non-empty vector is not all zeros (possible for bool and u8 at tiny lengths).
    if let Some(first) = v.first_mut() {
        if *first == T::ZERO {
            *first = T::ONE;
        }
    }
    v
}

// ---------------------------------------------------------------------------------------------
// Without a GPU
// ---------------------------------------------------------------------------------------------

#[test]
fn missing_driver_or_device_is_an_error_not_a_panic() {
    match Gpu::device_count() {
        Err(GpuError::NoDriver) => {
            assert!(!Gpu::available());
            assert!(matches!(Gpu::new(0), Err(GpuError::NoDriver)));
            assert!(matches!(
                DeviceMemorySource::new(0),
                Err(GpuError::NoDriver)
            ));
            assert!(matches!(PinnedHostSource::new(0), Err(GpuError::NoDriver)));
            assert!(matches!(
                DriverPoolAllocator::new(0, DriverPoolOptions::default()),
                Err(GpuError::NoDriver)
            ));
        }
        Ok(count) => {
            assert_eq!(Gpu::available(), count > 0);
            let past_the_end = Gpu::new(count);
            assert!(
                matches!(
                    past_the_end,
                    Err(GpuError::NoSuchDevice { ordinal, count: c }) if ordinal == count && c == count
                ),
                "{past_the_end:?}"
            );
        }
        Err(other) => panic!("device_count failed unexpectedly: {other}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Device, streams, events
// ---------------------------------------------------------------------------------------------

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn device_properties_match_the_driver() -> TestResult {
    let Some(gpu) = gpu() else { return Ok(()) };
    let reference = cudarc::driver::CudaContext::new(0).expect("cudarc opens GPU 0");
    assert_eq!(gpu.ordinal(), 0);
    assert_eq!(Device::name(&gpu), "cuda:0");
    assert_eq!(gpu.device_name(), reference.name().expect("name"));
    let (major, minor) = reference.compute_capability().expect("capability");
    assert_eq!(
        gpu.compute_capability(),
        (u32::try_from(major).unwrap(), u32::try_from(minor).unwrap())
    );
    let sms = reference
        .attribute(
            cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
        )
        .expect("SM count");
    assert_eq!(gpu.multiprocessor_count(), u32::try_from(sms).unwrap());
    assert_eq!(
        gpu.total_memory(),
        reference.total_mem().expect("total memory")
    );
    let (free, total) = gpu.memory_info()?;
    assert_eq!(total, gpu.total_memory());
    assert!(free > 0 && free <= total);
    assert_eq!(gpu.allocator().name(), "caching");
    gpu.check_err()
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn streams_have_distinct_ids_and_clones_are_equal() -> TestResult {
    let Some(gpu) = gpu() else { return Ok(()) };
    let default = gpu.default_stream();
    assert_eq!(default.id(), StreamId(0));
    assert!(default.is_default());
    let a = gpu.new_stream()?;
    let b = gpu.new_stream()?;
    assert!(!a.is_default());
    assert_ne!(a.id(), StreamId(0));
    assert_ne!(a.id(), b.id());
    assert_ne!(a, b);
    assert_eq!(a.clone(), a);
    assert_eq!(a.clone().id(), a.id());
    assert_eq!(a.ordinal(), 0);
    a.synchronize()?;
    gpu.check_err()
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn events_complete_and_time() -> TestResult {
    let Some(gpu) = gpu() else { return Ok(()) };
    let stream = gpu.new_stream()?;
    let unrecorded = gpu.new_event()?;
    assert!(
        unrecorded.is_complete()?,
        "an event never recorded counts as complete"
    );
    let data: Vec<f32> = random_vec(1 << 22, 11);
    let mut storage = GpuStorage::<f32>::zeros(&gpu, data.len(), &stream)?;
    let start = stream.record_timing_event()?;
    storage.copy_from_host(&data, &stream)?;
    let end = stream.record_timing_event()?;
    end.synchronize()?;
    assert!(end.is_complete()?);
    assert!(start.is_timing() && end.is_timing());
    let ms = start.elapsed_ms(&end)?;
    assert!(ms.is_finite() && ms >= 0.0, "elapsed {ms} ms");
    // Timing needs timing events on both ends.
    let plain = stream.record_event()?;
    assert!(!plain.is_timing());
    assert!(start.elapsed_ms(&plain).is_err());
    assert_eq!(storage.to_vec(&stream)?, data);
    gpu.check_err()
}

// ---------------------------------------------------------------------------------------------
// Copies
// ---------------------------------------------------------------------------------------------

fn round_trip<T: Random>(gpu: &Gpu, stream: &Stream, len: usize, seed: u64) -> TestResult {
    let data: Vec<T> = random_vec(len, seed);
    let storage = GpuStorage::from_host(gpu, &data, stream)?;
    assert_eq!(storage.len(), len);
    assert_eq!(Storage::len(&storage), len);
    assert_eq!(storage.byte_len(), len * size_of::<T>());
    let back = storage.to_vec(stream)?;
    assert!(
        back == data,
        "{} round trip of {len} elements differs",
        T::NAME
    );
    Ok(())
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn host_device_round_trip_every_element_type() -> TestResult {
    let Some(gpu) = gpu() else { return Ok(()) };
    let stream = gpu.new_stream()?;
    for (i, len) in [0usize, 1, 7, 4096, 1_000_003].into_iter().enumerate() {
        let seed = 100 + i as u64;
        round_trip::<f32>(&gpu, &stream, len, seed)?;
        round_trip::<f64>(&gpu, &stream, len, seed)?;
        round_trip::<f16>(&gpu, &stream, len, seed)?;
        round_trip::<bf16>(&gpu, &stream, len, seed)?;
        round_trip::<i32>(&gpu, &stream, len, seed)?;
        round_trip::<i64>(&gpu, &stream, len, seed)?;
        round_trip::<u8>(&gpu, &stream, len, seed)?;
        round_trip::<bool>(&gpu, &stream, len, seed)?;
    }
    // The default stream works the same.
    round_trip::<f32>(&gpu, gpu.default_stream(), 12_345, 7)?;
    gpu.check_err()
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn host_device_round_trip_property() {
    let Some(gpu) = gpu() else { return };
    let stream = gpu.new_stream().expect("stream");
    let mut runner = TestRunner::new(Config::with_cases(32));
    runner
        .run(&(0usize..300_000, any::<u64>()), |(len, seed)| {
            let data: Vec<f32> = random_vec(len, seed);
            let fail = |e: Error| TestCaseError::fail(e.to_string());
            let storage = GpuStorage::from_host(&gpu, &data, &stream).map_err(fail)?;
            let mut back = vec![0.0f32; len];
            storage.copy_to_host(&mut back, &stream).map_err(fail)?;
            prop_assert_eq!(back, data);
            Ok(())
        })
        .expect("round trip holds for random lengths and data");
    gpu.check_err().expect("no recorded errors");
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn device_to_device_copies() -> TestResult {
    let Some(gpu) = gpu() else { return Ok(()) };
    let stream = gpu.new_stream()?;
    let data: Vec<i64> = random_vec(333_333, 21);
    let src = GpuStorage::from_host(&gpu, &data, &stream)?;

    let mut dst = GpuStorage::<i64>::zeros(&gpu, data.len(), &stream)?;
    dst.copy_from_device(&src, &stream)?;
    assert_eq!(dst.to_vec(&stream)?, data);

    // Asynchronous form on another stream, ordered by an event before reading back.
    let other = gpu.new_stream()?;
    let mut dst2 = GpuStorage::<i64>::zeros(&gpu, data.len(), &other)?;
    dst2.copy_from_device_async(&dst, &other)?;
    let done = other.record_event()?;
    stream.wait_event(&done)?;
    assert_eq!(dst2.to_vec(&stream)?, data);

    // A length mismatch is an error and leaves the destination unchanged.
    let mut short = GpuStorage::<i64>::from_host(&gpu, &data[..10], &stream)?;
    let err = short.copy_from_device(&src, &stream).unwrap_err();
    assert!(matches!(
        err,
        Error::Layout(LayoutError::LengthMismatch { expected, got, .. })
            if expected == 10 && got == data.len()
    ));
    assert_eq!(short.to_vec(&stream)?, &data[..10]);
    gpu.check_err()
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn host_copy_length_mismatch_is_an_error() -> TestResult {
    let Some(gpu) = gpu() else { return Ok(()) };
    let stream = gpu.new_stream()?;
    let data: Vec<f32> = random_vec(100, 5);
    let mut storage = GpuStorage::from_host(&gpu, &data, &stream)?;
    let longer: Vec<f32> = random_vec(101, 6);
    assert!(matches!(
        storage.copy_from_host(&longer, &stream),
        Err(Error::Layout(LayoutError::LengthMismatch {
            expected: 100,
            got: 101,
            ..
        }))
    ));
    let mut too_short = vec![0.0f32; 99];
    assert!(matches!(
        storage.copy_to_host(&mut too_short, &stream),
        Err(Error::Layout(LayoutError::LengthMismatch {
            expected: 100,
            got: 99,
            ..
        }))
    ));
    assert!(too_short.iter().all(|&x| x == 0.0), "nothing was written");
    assert_eq!(storage.to_vec(&stream)?, data);
    gpu.check_err()
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn zero_filled_memory_reads_zero_after_reuse() -> TestResult {
    let Some(gpu) = gpu() else { return Ok(()) };
    let stream = gpu.new_stream()?;
    for len in [1usize, 1000, 1 << 20] {
        // Fill memory with random data and give it back, so the next allocation of the same
        // size (on the same stream) very likely gets the same bytes.
        let data: Vec<f32> = random_vec(len, len as u64);
        let dirty = GpuStorage::from_host(&gpu, &data, &stream)?;
        drop(dirty);
        let zeros = GpuStorage::<f32>::zeros(&gpu, len, &stream)?;
        assert!(zeros.to_vec(&stream)?.iter().all(|&x| x == 0.0));

        let bytes: Vec<u8> = random_vec(len * 8, len as u64 + 1);
        drop(GpuStorage::from_host(&gpu, &bytes, &stream)?);
        let flags = GpuStorage::<bool>::zeros(&gpu, len * 8, &stream)?;
        assert!(flags.to_vec(&stream)?.iter().all(|&b| !b));
        let wide = gpu.zeros::<i64>(len)?;
        assert!(wide.to_vec(gpu.default_stream())?.iter().all(|&x| x == 0));
    }
    gpu.check_err()
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn async_copies_ordered_across_two_streams_by_events() -> TestResult {
    let Some(gpu) = gpu() else { return Ok(()) };
    let upload = gpu.new_stream()?;
    let work = gpu.new_stream()?;
    let len = 1 << 23; // 32 MiB of f32: long enough that an unordered read would race.
    let data: Vec<f32> = random_vec(len, 77);
    let src = PinnedBuffer::from_slice(&gpu, &data)?;
    let mut out = PinnedBuffer::<f32>::zeros(&gpu, len)?;

    for round in 0..3 {
        // Both live on `work`, so only the event orders the upload (on `upload`) before the
        // device copy (on `work`). (A first use on another stream waits for the home stream,
        // not the other way round.)
        let mut a = GpuStorage::<f32>::zeros(&gpu, len, &work)?;
        let mut b = GpuStorage::<f32>::zeros(&gpu, len, &work)?;
        let uploaded = a.copy_from_pinned_async(&src, &upload)?;
        let ready = upload.record_event()?;
        work.wait_event(&ready)?;
        b.copy_from_device_async(&a, &work)?;
        let download = b.copy_to_pinned_async(&mut out, &work)?;
        download.wait()?;
        uploaded.wait()?;
        assert!(out.as_slice()? == data.as_slice(), "round {round}");
        assert!(ready.is_complete()?);
    }
    gpu.check_err()
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn pageable_async_copies_hold_the_borrow_until_done() -> TestResult {
    let Some(gpu) = gpu() else { return Ok(()) };
    let stream = gpu.new_stream()?;
    let data: Vec<u8> = random_vec(5_000_000, 31);
    let mut storage = GpuStorage::<u8>::zeros(&gpu, data.len(), &stream)?;
    let upload = storage.copy_from_host_async(&data, &stream)?;
    upload.wait()?;
    let mut back = vec![0u8; data.len()];
    {
        let download = storage.copy_to_host_async(&mut back, &stream)?;
        assert!(download.is_complete().is_ok());
        // Dropping the guard waits.
    }
    assert_eq!(back, data);

    // A slice of page-locked memory takes the waiting path; the result is the same.
    let pinned = PinnedBuffer::from_slice(&gpu, &data)?;
    let mut other = GpuStorage::<u8>::zeros(&gpu, data.len(), &stream)?;
    let pending = other.copy_from_host_async(pinned.as_slice()?, &stream)?;
    assert!(
        pending.is_complete()?,
        "copies from page-locked slices finish before returning"
    );
    pending.wait()?;
    assert_eq!(other.to_vec(&stream)?, data);
    gpu.check_err()
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn pinned_buffers_round_trip_even_when_guards_are_leaked() -> TestResult {
    let Some(gpu) = gpu() else { return Ok(()) };
    let stream = gpu.new_stream()?;
    let data: Vec<f64> = random_vec(2_000_000, 41);
    let src = PinnedBuffer::from_slice(&gpu, &data)?;
    assert_eq!(src.len(), data.len());
    assert_eq!(src.to_vec()?, data);

    let mut storage = GpuStorage::<f64>::zeros(&gpu, data.len(), &stream)?;
    std::mem::forget(storage.copy_from_pinned_async(&src, &stream)?);
    let mut out = PinnedBuffer::<f64>::zeros(&gpu, data.len())?;
    assert!(out.as_slice()?.iter().all(|&x| x == 0.0));
    std::mem::forget(storage.copy_to_pinned_async(&mut out, &stream)?);
    // The buffer tracks the leaked copy: reading waits for it.
    assert!(out.as_slice()? == data.as_slice());

    // Host writes to the buffer, then a second upload and download.
    let doubled: Vec<f64> = data.iter().map(|x| x * 2.0).collect();
    out.as_mut_slice()?.copy_from_slice(&doubled);
    storage.copy_from_pinned_async(&out, &stream)?.wait()?;
    assert_eq!(storage.to_vec(&stream)?, doubled);

    let empty = PinnedBuffer::<f32>::zeros(&gpu, 0)?;
    assert!(empty.is_empty() && empty.as_slice()?.is_empty());
    gpu.check_err()
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn pinned_buffers_reuse_cached_host_blocks() -> TestResult {
    let Some(gpu) = gpu() else { return Ok(()) };
    let stream = gpu.new_stream()?;
    let len: usize = 300_000; // 1.2 MB of f32: one 2 MiB block.
    let block_bytes = (len * size_of::<f32>()).next_power_of_two();
    let before = gpu.host_allocator_stats();

    let first: Vec<f32> = random_vec(len, 51);
    let storage = GpuStorage::from_host(&gpu, &first, &stream)?;
    let first_ptr = {
        let mut out = PinnedBuffer::<f32>::zeros(&gpu, len)?;
        storage.copy_to_pinned_async(&mut out, &stream)?.wait()?;
        assert!(out.as_slice()? == first.as_slice());
        out.as_slice()?.as_ptr()
    };
    let after_first = gpu.host_allocator_stats();
    assert_eq!(
        (
            after_first.segments.current,
            after_first.reserved_bytes.current
        ),
        (
            before.segments.current + 1,
            before.reserved_bytes.current + block_bytes
        ),
        "the first buffer pinned one block"
    );
    assert_eq!(
        after_first.allocated_bytes.current, 0,
        "the block was given back"
    );

    // The block waits for events on the streams that used it; once they are done it is
    // reused, with no new cuMemHostAlloc.
    gpu.synchronize()?;
    gpu.host_allocator().process_events()?;
    let second: Vec<f32> = random_vec(len, 52);
    let storage = GpuStorage::from_host(&gpu, &second, &stream)?;
    let mut out = PinnedBuffer::<f32>::zeros(&gpu, len)?;
    assert_eq!(
        out.as_slice()?.as_ptr(),
        first_ptr,
        "the same block came back"
    );
    assert!(
        out.as_slice()?.iter().all(|&x| x == 0.0),
        "a reused block is zero-filled"
    );
    storage.copy_to_pinned_async(&mut out, &stream)?.wait()?;
    assert!(out.as_slice()? == second.as_slice());
    let reused = gpu.host_allocator_stats();
    assert_eq!(
        (reused.segments.current, reused.segments.peak),
        (after_first.segments.current, after_first.segments.current),
        "no second block was pinned"
    );
    assert_eq!(reused.num_allocs, before.num_allocs + 2);
    assert_eq!(reused.allocated_bytes.current, block_bytes);

    // Uploads from a reused block carry the new contents.
    let third: Vec<f32> = random_vec(len, 53);
    out.as_mut_slice()?.copy_from_slice(&third);
    let mut upload = GpuStorage::<f32>::zeros(&gpu, len, &stream)?;
    upload.copy_from_pinned_async(&out, &stream)?.wait()?;
    assert!(upload.to_vec(&stream)? == third);

    drop(out);
    gpu.synchronize()?;
    gpu.empty_host_cache()?;
    let emptied = gpu.host_allocator_stats();
    assert_eq!(
        (emptied.segments.current, emptied.reserved_bytes.current),
        (0, 0)
    );
    assert_eq!(emptied.num_segment_frees, after_first.segments.peak as u64);
    gpu.check_err()
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn dropping_a_pinned_buffer_mid_copy_defers_its_reuse() -> TestResult {
    let Some(gpu) = gpu() else { return Ok(()) };
    let stream = gpu.new_stream()?;
    let len = 1 << 23; // 32 MiB of f32
    let data: Vec<f32> = random_vec(len, 61);
    // Device work queued ahead of the upload, so the upload is likely still pending when
    // the buffer is dropped and its size class is asked for again.
    let big = GpuStorage::<f32>::zeros(&gpu, 1 << 26, &stream)?;
    let mut scratch = GpuStorage::<f32>::zeros(&gpu, 1 << 26, &stream)?;
    let src = PinnedBuffer::from_slice(&gpu, &data)?;
    let mut storage = GpuStorage::<f32>::zeros(&gpu, len, &stream)?;
    for _ in 0..8 {
        scratch.copy_from_device_async(&big, &stream)?;
    }
    std::mem::forget(storage.copy_from_pinned_async(&src, &stream)?);
    drop(src); // Does not wait: the block waits for the upload in the allocator.
               // A block of the same class is handed out only once no copy uses it; overwrite it.
    let mut next = PinnedBuffer::<f32>::zeros(&gpu, len)?;
    next.as_mut_slice()?.fill(-1.0);
    assert!(
        storage.to_vec(&stream)? == data,
        "the upload read the dropped buffer's contents"
    );
    drop(next);
    gpu.synchronize()?;
    gpu.host_allocator().process_events()?;
    let stats = gpu.host_allocator_stats();
    assert_eq!(
        (stats.allocated_bytes.current, stats.active_bytes.current),
        (0, 0),
        "both blocks are back in the cache once the device is idle"
    );
    gpu.check_err()
}

// ---------------------------------------------------------------------------------------------
// Memory sources
// ---------------------------------------------------------------------------------------------

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn device_source_allocates_aligned_memory_and_maps_oom() -> TestResult {
    let Some(gpu) = gpu() else { return Ok(()) };
    let source = gpu.device_memory_source();
    assert_eq!(source.name(), "cuda:0");
    let (free, total) = source.mem_info().expect("the device reports its memory");
    assert!(free > 0 && free <= total);

    let addr = source.allocate(1 << 20).expect("1 MiB");
    assert_ne!(addr, 0);
    assert_eq!(addr % 256, 0);
    // SAFETY: `addr` is the live 1 MiB allocation made just above; nothing uses it.
    unsafe { source.free(addr, 1 << 20) }.expect("free");

    let too_much = total + (1 << 30);
    assert_eq!(source.allocate(too_much), Err(SourceError::OutOfMemory));
    // The device still works after the refusal.
    round_trip::<f32>(&gpu, gpu.default_stream(), 1000, 3)?;

    // Events on a live stream and on an id no live stream has.
    let stream = gpu.new_stream()?;
    let event = source.record_event(stream.id()).expect("record");
    source.synchronize().expect("synchronize");
    assert_eq!(source.event_completed(&event), Ok(true));
    let retired = {
        let s = gpu.new_stream()?;
        s.id()
    };
    let event = source
        .record_event(retired)
        .expect("record on a retired id");
    assert_eq!(source.event_completed(&event), Ok(true));
    gpu.check_err()
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn pinned_source_allocates_page_locked_memory() -> TestResult {
    let Some(gpu) = gpu() else { return Ok(()) };
    let source = gpu.pinned_source();
    assert!(!source.options().write_combined);
    assert!(source.mem_info().is_none());
    let addr = source.allocate(3 << 20).expect("3 MiB");
    assert_eq!(addr % 4096, 0, "page aligned");
    // SAFETY: `addr` is the live allocation made just above; nothing uses it.
    unsafe { source.free(addr, 3 << 20) }.expect("free");
    gpu.check_err()
}

// ---------------------------------------------------------------------------------------------
// Driver-pool allocator
// ---------------------------------------------------------------------------------------------

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn driver_pool_allocates_frees_and_counts() -> TestResult {
    let Some(gpu) = gpu() else { return Ok(()) };
    let pool = DriverPoolAllocator::new(0, DriverPoolOptions::default())?;
    assert_eq!(pool.name(), "driver-pool");
    assert_eq!(pool.release_threshold()?, u64::MAX);
    let stream = gpu.new_stream()?;
    let mut rng = SmallRng::seed_from_u64(99);
    let sizes: Vec<usize> = (0..40).map(|_| rng.gen_range(1..4 << 20)).collect();
    let total: usize = sizes.iter().sum();

    let blocks: Vec<Block> = sizes
        .iter()
        .map(|&bytes| pool.allocate(bytes, stream.id()))
        .collect::<Result<_, _>>()?;
    let mut addrs: Vec<u64> = blocks.iter().map(|b| b.addr()).collect();
    addrs.sort_unstable();
    addrs.dedup();
    assert_eq!(addrs.len(), blocks.len(), "distinct addresses");
    for (block, &bytes) in blocks.iter().zip(&sizes) {
        assert!(
            block.size() >= bytes && block.requested() == bytes && block.stream() == stream.id()
        );
    }
    let stats = pool.stats();
    assert_eq!(stats.allocated_bytes.current, total);
    assert_eq!(stats.requested_bytes.current, total);
    assert_eq!(stats.allocations.current, sizes.len());
    assert_eq!(stats.num_allocs, sizes.len() as u64);
    assert!(
        stats.reserved_bytes.current >= total,
        "the pool holds at least what it handed out"
    );

    // Use one block on a second stream too, then free everything.
    let other = gpu.new_stream()?;
    pool.record_stream(&blocks[0], other.id())?;
    // SAFETY: a copy of a live block on purpose (it breaks `from_raw_parts`'s contract),
    // used only after the original is freed, to check the allocator refuses a second free
    // and a `record_stream` of it; nothing touches its memory.
    let kept = unsafe {
        Block::from_raw_parts(
            blocks[0].addr(),
            blocks[0].size(),
            blocks[0].requested(),
            blocks[0].stream(),
        )
    };
    for block in blocks {
        pool.free(block)?;
    }
    let stats = pool.stats();
    assert_eq!(stats.allocated_bytes.current, 0);
    assert_eq!(stats.allocations.current, 0);
    assert_eq!(stats.allocated_bytes.peak, total);

    // A block freed twice is refused, not freed again.
    let first_addr = kept.addr();
    assert_eq!(
        pool.record_stream(&kept, other.id()),
        Err(AllocError::UnknownBlock { addr: first_addr })
    );
    assert_eq!(
        pool.free(kept),
        Err(AllocError::UnknownBlock { addr: first_addr })
    );

    pool.reset_peak_stats();
    assert_eq!(pool.stats().allocated_bytes.peak, 0);

    // Out of memory is an error with the numbers, counted once.
    let (_, device_total) = gpu.memory_info()?;
    let err = pool.allocate(device_total * 2, stream.id()).unwrap_err();
    assert!(
        matches!(&err, AllocError::OutOfMemory(oom)
            if oom.requested == device_total * 2 && oom.total == device_total),
        "{err}"
    );
    assert_eq!(pool.stats().num_ooms, 1);
    assert_eq!(pool.stats().num_alloc_retries, 1);

    pool.empty_cache()?;
    // Zero-byte requests never reach the driver.
    let empty = pool.allocate(0, stream.id())?;
    assert_eq!((empty.addr(), empty.size()), (0, 0));
    pool.free(empty)?;
    gpu.check_err()
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn driver_pool_refuses_unknown_streams() -> TestResult {
    let Some(gpu) = gpu() else { return Ok(()) };
    let pool = DriverPoolAllocator::new(0, DriverPoolOptions::default())?;
    // No stream has this id (stream handles are aligned heap addresses). A retired stream's
    // id would do too, but a test running in parallel may get the same handle for a new one.
    let no_stream = StreamId(u64::MAX);
    assert!(matches!(
        pool.allocate(1024, no_stream),
        Err(AllocError::Source(_))
    ));
    assert_eq!(pool.stats().allocations.current, 0);
    gpu.check_err()
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn gpu_uses_the_allocator_it_is_given() -> TestResult {
    let Some(_) = gpu() else { return Ok(()) };
    // Default options: the release threshold is a setting of the device's shared default
    // pool, and the other tests (running in parallel) expect the default there.
    let allocator = Arc::new(DriverPoolAllocator::new(0, DriverPoolOptions::default())?);
    let gpu = Gpu::with_allocator(0, Arc::clone(&allocator) as Arc<dyn DeviceAllocator>)?;
    let stream = gpu.new_stream()?;
    let data: Vec<i32> = random_vec(10_000, 8);
    let storage = GpuStorage::from_host(&gpu, &data, &stream)?;
    assert_eq!(allocator.stats().allocated_bytes.current, 40_000);
    assert_eq!(gpu.allocator_stats().allocations.current, 1);
    assert_eq!(storage.to_vec(&stream)?, data);
    drop(storage);
    assert_eq!(allocator.stats().allocated_bytes.current, 0);
    gpu.empty_cache()?;
    gpu.check_err()
}

// ---------------------------------------------------------------------------------------------
// Threads
// ---------------------------------------------------------------------------------------------

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn many_threads_allocate_copy_and_free_on_one_gpu() -> TestResult {
    let Some(gpu) = gpu() else { return Ok(()) };
    let threads: Vec<_> = (0..8u64)
        .map(|t| {
            let gpu = gpu.clone();
            thread::spawn(move || -> TestResult {
                let stream = if t % 4 == 0 {
                    gpu.default_stream().clone()
                } else {
                    gpu.new_stream()?
                };
                let mut rng = SmallRng::seed_from_u64(1000 + t);
                let mut kept: Vec<(GpuStorage<f32>, Vec<f32>)> = Vec::new();
                for i in 0..150u64 {
                    let len = rng.gen_range(1..200_000);
                    let data: Vec<f32> = random_vec(len, t * 10_000 + i);
                    let storage = GpuStorage::from_host(&gpu, &data, &stream)?;
                    assert_eq!(storage.to_vec(&stream)?, data, "thread {t} iteration {i}");
                    // Keep some alive for a while, free others at once, in a random order.
                    if rng.gen_bool(0.3) {
                        kept.push((storage, data));
                    }
                    if kept.len() > 8 {
                        let (old, old_data) = kept.swap_remove(rng.gen_range(0..kept.len()));
                        assert_eq!(old.to_vec(&stream)?, old_data, "thread {t} kept block");
                    }
                }
                Ok(())
            })
        })
        .collect();
    for handle in threads {
        handle.join().expect("thread panicked")?;
    }
    gpu.synchronize()?;
    let stats = gpu.allocator_stats();
    assert_eq!(stats.allocated_bytes.current, 0);
    assert_eq!(stats.allocations.current, 0);
    assert_eq!(stats.num_allocs, 8 * 150);
    gpu.check_err()
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn one_storage_read_from_many_threads_and_streams() -> TestResult {
    let Some(gpu) = gpu() else { return Ok(()) };
    let data: Vec<u8> = random_vec(3_000_000, 123);
    let shared = Arc::new(GpuStorage::from_host(&gpu, &data, gpu.default_stream())?);
    let threads: Vec<_> = (0..6)
        .map(|_| {
            let gpu = gpu.clone();
            let shared = Arc::clone(&shared);
            thread::spawn(move || -> Result<Vec<u8>, Error> {
                let stream = gpu.new_stream()?;
                let copy = shared.to_vec(&stream)?;
                // Also a device copy made on this thread's stream.
                let mut mine = GpuStorage::<u8>::zeros(&gpu, shared.len(), &stream)?;
                mine.copy_from_device(&shared, &stream)?;
                assert_eq!(mine.to_vec(&stream)?, copy);
                Ok(copy)
            })
        })
        .collect();
    for handle in threads {
        assert!(handle.join().expect("thread panicked")? == data);
    }
    drop(shared);
    gpu.synchronize()?;
    assert_eq!(gpu.allocator_stats().allocated_bytes.current, 0);
    gpu.check_err()
}

// ---------------------------------------------------------------------------------------------
// Several GPUs
// ---------------------------------------------------------------------------------------------

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn streams_of_another_gpu_are_refused() -> TestResult {
    let Some(gpu) = gpu() else { return Ok(()) };
    if Gpu::device_count()? < 2 {
        println!("skipping: needs two GPUs");
        return Ok(());
    }
    let second = Gpu::new(1)?;
    let foreign = second.new_stream()?;
    let data: Vec<f32> = random_vec(1000, 2);
    let storage = GpuStorage::from_host(&gpu, &data, gpu.default_stream())?;
    let mut out = vec![0.0f32; data.len()];
    assert!(matches!(
        storage.copy_to_host(&mut out, &foreign),
        Err(Error::Gpu(GpuError::DeviceMismatch { lhs: 0, rhs: 1, .. }))
    ));
    assert!(matches!(
        GpuStorage::<f32>::zeros(&gpu, 10, &foreign),
        Err(Error::Gpu(GpuError::DeviceMismatch { lhs: 0, rhs: 1, .. }))
    ));
    let on_second = GpuStorage::from_host(&second, &data, &foreign)?;
    let mut on_first = GpuStorage::<f32>::zeros(&gpu, data.len(), gpu.default_stream())?;
    assert!(matches!(
        on_first.copy_from_device(&on_second, gpu.default_stream()),
        Err(Error::Gpu(GpuError::DeviceMismatch { lhs: 0, rhs: 1, .. }))
    ));
    assert_eq!(on_second.to_vec(&foreign)?, data);
    gpu.check_err()?;
    second.check_err()
}
