//! Caffe's `test_syncedmem.cpp`, test for test, on the typed `SyncedMemory`, plus the
//! external-buffer, erasure and failure cases, and a property test against a model of
//! Caffe's state machine. GPU tests print a line and return when no GPU is present.

use proptest::prelude::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use typestate_tensor::error::{Error, LayoutError, StateError};
use typestate_tensor::synced::{
    AnySyncedMemory, Head, HeadAtCpu, HeadAtGpu, Synced, SyncedMemory, TransferStats, Uninitialized,
};

/// Random non-zero values (Caffe's tests use memsets of 1 and 2; random data catches more).
fn random_nonzero(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let v: f32 = rng.gen_range(0.5..10.0);
            if rng.gen_bool(0.5) {
                v
            } else {
                -v
            }
        })
        .collect()
}

// ---- Caffe TestInitialization ----------------------------------------------------------

#[test]
fn initialization() {
    let mem = SyncedMemory::<u8, Uninitialized>::new(10).unwrap();
    assert_eq!(mem.head(), Head::Uninitialized);
    assert_eq!(mem.size_in_bytes(), 10);
    let mem = SyncedMemory::<f32, Uninitialized>::new(10).unwrap();
    assert_eq!(mem.size_in_bytes(), 10 * std::mem::size_of::<f32>());
    assert_eq!(mem.len(), 10);
    assert_eq!(
        mem.stats(),
        TransferStats::default(),
        "nothing allocated yet"
    );
}

#[test]
fn size_overflow_is_an_error_not_a_panic() {
    let err = SyncedMemory::<f64, Uninitialized>::new(usize::MAX / 4).unwrap_err();
    assert!(
        matches!(err, Error::Layout(LayoutError::SizeOverflow { .. })),
        "{err}"
    );
}

// ---- Caffe TestAllocationCPU -----------------------------------------------------------

#[test]
fn allocation_cpu() {
    let mem = SyncedMemory::<f32, Uninitialized>::new(10).unwrap();
    let mem: SyncedMemory<f32, HeadAtCpu> = mem.into_cpu().unwrap();
    assert_eq!(mem.cpu(), &[0.0; 10], "first touch is zero-filled");
    let mem = mem.into_cpu_mut().unwrap();
    assert_eq!(mem.cpu().len(), 10);
    assert_eq!(
        mem.stats(),
        TransferStats {
            host_allocs: 1,
            ..TransferStats::default()
        },
        "one allocation, no copies"
    );
}

// ---- Caffe TestCPUWrite ----------------------------------------------------------------

#[test]
fn cpu_write() {
    let mem = SyncedMemory::<f32, Uninitialized>::new(10).unwrap();
    let mut mem = mem.into_cpu_mut().unwrap();
    assert_eq!(mem.head(), Head::HeadAtCpu);
    let first = random_nonzero(10, 1);
    mem.cpu_mut().copy_from_slice(&first);
    assert_eq!(mem.cpu(), &first[..]);
    // Another round.
    let mut mem = mem.into_cpu_mut().unwrap();
    assert_eq!(mem.head(), Head::HeadAtCpu);
    let second = random_nonzero(10, 2);
    mem.cpu_mut().copy_from_slice(&second);
    assert_eq!(mem.cpu(), &second[..]);
    assert_eq!(mem.stats().host_allocs, 1);
    assert_eq!(mem.stats().copies(), 0);
}

// ---- External buffers (Caffe set_cpu_data) ---------------------------------------------

#[test]
fn adopted_vec_is_head_at_cpu_and_comes_back() {
    let data = random_nonzero(6, 3);
    let mem = SyncedMemory::from_vec(data.clone());
    assert_eq!(mem.head(), Head::HeadAtCpu);
    assert_eq!(mem.cpu(), &data[..]);
    assert_eq!(
        mem.stats(),
        TransferStats::default(),
        "adoption is no allocation"
    );
    assert_eq!(mem.into_vec(), data);
}

#[test]
fn set_cpu_data_replaces_the_cpu_side_and_returns_the_old_buffer() {
    let mem = SyncedMemory::<f32, Uninitialized>::new(4).unwrap();
    let mut mem = mem.into_cpu_mut().unwrap();
    let old = random_nonzero(4, 4);
    mem.cpu_mut().copy_from_slice(&old);
    let new = random_nonzero(4, 5);
    let (mem, previous) = mem.set_cpu_data(new.clone()).unwrap();
    assert_eq!(mem.cpu(), &new[..]);
    assert_eq!(previous.unwrap().into_vec(), old);

    // A length mismatch hands back both the memory and the vector.
    let err = mem.set_cpu_data(vec![1.0; 3]).unwrap_err();
    assert!(matches!(
        err.error,
        Error::Layout(LayoutError::LengthMismatch { got: 3, .. })
    ));
    let (mem, rejected) = err.into_inner();
    assert_eq!(rejected, vec![1.0; 3]);
    assert_eq!(mem.cpu(), &new[..]);
}

#[test]
fn set_cpu_data_in_place_keeps_the_state_through_mut() {
    let mut mem = SyncedMemory::from_vec(random_nonzero(5, 6));
    let mut batches = Vec::new();
    for seed in 7..10 {
        let batch = random_nonzero(5, seed);
        let previous = mem.set_cpu_data_in_place(batch.clone()).unwrap();
        assert_eq!(mem.cpu(), &batch[..]);
        batches.push(previous.unwrap().into_vec());
    }
    assert_eq!(
        batches[1],
        random_nonzero(5, 7),
        "the old buffer comes back"
    );
    let err = mem.set_cpu_data_in_place(vec![0.5; 4]).unwrap_err();
    assert!(matches!(
        err.error,
        Error::Layout(LayoutError::LengthMismatch { got: 4, .. })
    ));
    assert_eq!(err.into_inner(), vec![0.5; 4]);
    assert_eq!(mem.cpu(), &random_nonzero(5, 9)[..]);
    assert_eq!(mem.stats().copies(), 0);
}

#[test]
fn borrowed_buffer_is_used_in_place_and_handed_back() {
    let mut buf = random_nonzero(5, 6);
    let expected: Vec<f32> = buf.iter().map(|v| v * 2.0).collect();
    {
        let mut mem = SyncedMemory::borrow_cpu(&mut buf);
        assert_eq!(mem.head(), Head::HeadAtCpu);
        for v in mem.cpu_mut() {
            *v *= 2.0;
        }
        let back: &mut [f32] = mem.into_borrowed();
        assert_eq!(back, &expected[..]);
    }
    assert_eq!(buf, expected, "the writes went to the caller's buffer");
}

#[test]
fn borrowed_buffer_released_from_a_cpu_state_copies_nothing() {
    let mut buf = random_nonzero(4, 8);
    let expected: Vec<f32> = buf.iter().map(|v| v + 1.0).collect();
    {
        let mut mem = SyncedMemory::borrow_cpu(&mut buf);
        for v in mem.cpu_mut() {
            *v += 1.0;
        }
        let stats = mem.stats();
        let back = mem.release().unwrap();
        assert_eq!(back, &expected[..]);
        assert_eq!(stats.copies(), 0);
    }
    assert_eq!(buf, expected);
}

// ---- Failed transitions and the erased ladder ------------------------------------------

#[test]
fn gpu_transition_without_gpu_hands_the_memory_back_unchanged() {
    let data = random_nonzero(8, 7);
    let mem = SyncedMemory::from_vec(data.clone());
    let err = mem.into_gpu().unwrap_err();
    assert!(
        matches!(err.error, Error::State(StateError::NoGpu { .. })),
        "{}",
        err.error
    );
    let mem: SyncedMemory<f32, HeadAtCpu> = err.into_inner();
    assert_eq!(mem.cpu(), &data[..]);
    let err = mem.into_gpu_mut().unwrap_err();
    assert_eq!(err.value.cpu(), &data[..]);
    // `?` turns a TransitionError into the crate's Error.
    fn via_question_mark(m: SyncedMemory<f32, HeadAtCpu>) -> Result<(), Error> {
        m.into_gpu()?;
        Ok(())
    }
    assert!(via_question_mark(err.into_inner()).is_err());
}

#[test]
fn erased_memory_converts_back_only_to_its_state() {
    let data = random_nonzero(3, 8);
    let any: AnySyncedMemory<f32> = SyncedMemory::from_vec(data.clone()).erase();
    assert_eq!(any.head(), Head::HeadAtCpu);
    let err = any.try_into_state::<Synced>().unwrap_err();
    match &err.error {
        Error::State(StateError::WrongState { expected, actual }) => {
            assert_eq!((*expected, *actual), ("Synced", "HeadAtCpu"));
        }
        e => panic!("unexpected error {e}"),
    }
    let err = err.into_inner().try_into_state::<HeadAtGpu>().unwrap_err();
    let typed = err.into_inner().try_into_state::<HeadAtCpu>().unwrap();
    assert_eq!(typed.cpu(), &data[..]);
}

#[test]
fn erased_memory_runs_caffes_run_time_api() {
    let mut any: AnySyncedMemory<f32> = SyncedMemory::<f32, Uninitialized>::new(4).unwrap().into();
    assert_eq!(any.cpu_data().unwrap(), &[0.0; 4]);
    assert_eq!(any.head(), Head::HeadAtCpu);
    let data = random_nonzero(4, 9);
    any.mutable_cpu_data().unwrap().copy_from_slice(&data);
    assert_eq!(any.cpu_data().unwrap(), &data[..]);
    assert_eq!(any.stats().host_allocs, 1);
}

#[test]
fn a_collection_holds_memories_in_different_states() {
    let blobs: Vec<AnySyncedMemory<f32>> = vec![
        SyncedMemory::<f32, Uninitialized>::new(2).unwrap().erase(),
        SyncedMemory::from_vec(vec![1.0, 2.0]).erase(),
    ];
    let heads: Vec<Head> = blobs.iter().map(AnySyncedMemory::head).collect();
    assert_eq!(heads, [Head::Uninitialized, Head::HeadAtCpu]);
}

// ---- Property test: CPU-only sequences against a model ---------------------------------

/// The typed memory in whichever state the sequence reached.
enum Typed {
    Uninit(SyncedMemory<f32, Uninitialized>),
    Cpu(SyncedMemory<f32, HeadAtCpu>),
}

#[derive(Clone, Debug)]
enum CpuStep {
    IntoCpu,
    Write(usize, f32),
    TryGpu,
    EraseAndBack,
}

fn cpu_step() -> impl Strategy<Value = CpuStep> {
    prop_oneof![
        Just(CpuStep::IntoCpu),
        (0usize..64, 0.5f32..50.0).prop_map(|(i, v)| CpuStep::Write(i, v)),
        Just(CpuStep::TryGpu),
        Just(CpuStep::EraseAndBack),
    ]
}

proptest! {
    /// Random CPU-side sequences: the head, the allocations and the values match a model
    /// of Caffe's machine; a GPU request on CPU-only memory fails and changes nothing.
    #[test]
    fn cpu_sequences_match_caffe_model(n in 1usize..16, steps in prop::collection::vec(cpu_step(), 0..30)) {
        let mut mem = Typed::Uninit(SyncedMemory::new(n).unwrap());
        let mut model: Option<Vec<f32>> = None; // None: UNINITIALIZED
        for step in steps {
            mem = match (mem, step) {
                (Typed::Uninit(m), CpuStep::IntoCpu) => {
                    model = Some(vec![0.0; n]);
                    Typed::Cpu(m.into_cpu().unwrap())
                }
                (Typed::Cpu(m), CpuStep::IntoCpu) => Typed::Cpu(m.into_cpu().unwrap()),
                (Typed::Uninit(m), CpuStep::Write(i, v)) => {
                    let mut m = m.into_cpu_mut().unwrap();
                    let mut vals = vec![0.0; n];
                    vals[i % n] = v;
                    m.cpu_mut()[i % n] = v;
                    model = Some(vals);
                    Typed::Cpu(m)
                }
                (Typed::Cpu(m), CpuStep::Write(i, v)) => {
                    let mut m = m.into_cpu_mut().unwrap();
                    m.cpu_mut()[i % n] = v;
                    model.as_mut().unwrap()[i % n] = v;
                    Typed::Cpu(m)
                }
                (Typed::Uninit(m), CpuStep::TryGpu) => Typed::Uninit(m.into_gpu().unwrap_err().into_inner()),
                (Typed::Cpu(m), CpuStep::TryGpu) => Typed::Cpu(m.into_gpu_mut().unwrap_err().into_inner()),
                (Typed::Uninit(m), CpuStep::EraseAndBack) => {
                    Typed::Uninit(m.erase().try_into_state().unwrap())
                }
                (Typed::Cpu(m), CpuStep::EraseAndBack) => Typed::Cpu(m.erase().try_into_state().unwrap()),
            };
            match &mem {
                Typed::Uninit(m) => {
                    prop_assert!(model.is_none());
                    prop_assert_eq!(m.stats().host_allocs, 0);
                }
                Typed::Cpu(m) => {
                    prop_assert_eq!(m.cpu(), &model.as_ref().unwrap()[..]);
                    prop_assert_eq!(m.stats().host_allocs, 1);
                }
            }
        }
    }
}

// ---- GPU: Caffe's GPU tests, the documented walkthrough, the asynchronous push ----------

use typestate_tensor::gpu::{Gpu, Stream};
use typestate_tensor::synced::InFlight;

/// GPU 0, or `None` after printing why the test is skipped.
fn gpu_or_skip(test: &str) -> Option<Gpu> {
    if !Gpu::available() {
        println!("{test}: skipped, no CUDA driver or GPU on this machine");
        return None;
    }
    Some(Gpu::new(0).expect("GPU 0 opens when one is available"))
}

/// The memory's stream, cloned so the memory can be borrowed mutably beside it.
fn stream_of<S: typestate_tensor::synced::HeadState>(m: &SyncedMemory<f32, S>) -> Stream {
    m.stream().expect("tied to a GPU").clone()
}

fn copies(m: &TransferStats) -> (usize, usize) {
    (m.h2d_copies, m.d2h_copies)
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn allocation_cpu_gpu() {
    let Some(gpu) = gpu_or_skip("allocation_cpu_gpu") else {
        return;
    };
    let mem = SyncedMemory::<f32, Uninitialized>::with_gpu(&gpu, 10).unwrap();
    let mem = mem.into_cpu().unwrap();
    assert_eq!(mem.cpu().len(), 10);
    assert_eq!(
        mem.is_host_pinned(),
        Some(true),
        "tied to a GPU: pinned host memory"
    );
    let mem: SyncedMemory<f32, Synced> = mem.into_gpu().unwrap();
    assert_eq!(mem.gpu().len(), 10);
    let mem = mem.into_cpu_mut().unwrap();
    assert_eq!(mem.cpu().len(), 10);
    let mem = mem.into_gpu_mut().unwrap();
    assert_eq!(mem.gpu().len(), 10);
    let s = mem.stats();
    assert_eq!((s.host_allocs, s.device_allocs), (1, 1));
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn allocation_gpu() {
    let Some(gpu) = gpu_or_skip("allocation_gpu") else {
        return;
    };
    let mem = SyncedMemory::<f32, Uninitialized>::with_gpu(&gpu, 10).unwrap();
    let mem: SyncedMemory<f32, HeadAtGpu> = mem.into_gpu().unwrap();
    let stream = stream_of(&mem);
    assert_eq!(
        mem.gpu().to_vec(&stream).unwrap(),
        vec![0.0; 10],
        "zero-filled"
    );
    let mem = mem.into_gpu_mut().unwrap();
    assert_eq!(mem.gpu().len(), 10);
    assert_eq!(mem.stats().host_allocs, 0, "the CPU side was never touched");
    assert_eq!(mem.stats().copies(), 0);
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn gpu_read() {
    let Some(gpu) = gpu_or_skip("gpu_read") else {
        return;
    };
    let mem = SyncedMemory::<f32, Uninitialized>::with_gpu(&gpu, 10).unwrap();
    let mut mem = mem.into_cpu_mut().unwrap();
    assert_eq!(mem.head(), Head::HeadAtCpu);
    let first = random_nonzero(10, 11);
    mem.cpu_mut().copy_from_slice(&first);
    let mem = mem.into_gpu().unwrap();
    assert_eq!(mem.head(), Head::Synced);
    let stream = stream_of(&mem);
    assert_eq!(mem.gpu().to_vec(&stream).unwrap(), first);
    // Another round.
    let mut mem = mem.into_cpu_mut().unwrap();
    assert_eq!(mem.head(), Head::HeadAtCpu);
    let second = random_nonzero(10, 12);
    mem.cpu_mut().copy_from_slice(&second);
    let mem = mem.into_gpu().unwrap();
    assert_eq!(mem.head(), Head::Synced);
    assert_eq!(mem.gpu().to_vec(&stream).unwrap(), second);
    assert_eq!(copies(&mem.stats()), (2, 0));
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn gpu_write() {
    let Some(gpu) = gpu_or_skip("gpu_write") else {
        return;
    };
    let mem = SyncedMemory::<f32, Uninitialized>::with_gpu(&gpu, 10).unwrap();
    let mut mem = mem.into_gpu_mut().unwrap();
    assert_eq!(mem.head(), Head::HeadAtGpu);
    let stream = stream_of(&mem);
    let first = random_nonzero(10, 13);
    mem.gpu_mut().copy_from_host(&first, &stream).unwrap();
    let mem = mem.into_cpu().unwrap();
    assert_eq!(mem.cpu(), &first[..]);
    assert_eq!(mem.head(), Head::Synced);
    // Another round.
    let mut mem = mem.into_gpu_mut().unwrap();
    assert_eq!(mem.head(), Head::HeadAtGpu);
    let second = random_nonzero(10, 14);
    mem.gpu_mut().copy_from_host(&second, &stream).unwrap();
    let mem = mem.into_cpu().unwrap();
    assert_eq!(mem.cpu(), &second[..]);
    assert_eq!(mem.head(), Head::Synced);
    assert_eq!(copies(&mem.stats()), (0, 2));
}

/// The Caffe documentation's walkthrough, line by line: where a copy happens and where none
/// does, and the values each side holds. It starts from data written on the CPU.
#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn caffe_walkthrough_gpu() {
    let Some(gpu) = gpu_or_skip("caffe_walkthrough_gpu") else {
        return;
    };
    let n = 1000;
    let bytes = n * 4;
    let m = SyncedMemory::<f32, Uninitialized>::with_gpu(&gpu, n).unwrap();
    let mut m = m.into_cpu_mut().unwrap();
    let stream = stream_of(&m);
    let data = random_nonzero(n, 20);
    m.cpu_mut().copy_from_slice(&data);
    assert_eq!(copies(&m.stats()), (0, 0));

    // foo = blob.gpu_data(); // data copied cpu->gpu.
    let m: SyncedMemory<f32, Synced> = m.into_gpu().unwrap();
    assert_eq!(copies(&m.stats()), (1, 0));
    assert_eq!(m.stats().h2d_bytes, bytes);
    assert_eq!(m.gpu().to_vec(&stream).unwrap(), data);
    // foo = blob.cpu_data(); // no data copied since both have up-to-date contents.
    let m: SyncedMemory<f32, Synced> = m.into_cpu().unwrap();
    assert_eq!(copies(&m.stats()), (1, 0));
    assert_eq!(m.cpu(), &data[..]);
    // bar = blob.mutable_gpu_data(); // no data copied.
    let mut m: SyncedMemory<f32, HeadAtGpu> = m.into_gpu_mut().unwrap();
    assert_eq!(copies(&m.stats()), (1, 0));
    // ... some operations ...
    let data2 = random_nonzero(n, 21);
    m.gpu_mut().copy_from_host(&data2, &stream).unwrap();
    // bar = blob.mutable_gpu_data(); // no data copied when we are still on GPU.
    let mut m: SyncedMemory<f32, HeadAtGpu> = m.into_gpu_mut().unwrap();
    assert_eq!(copies(&m.stats()), (1, 0));
    let data3 = random_nonzero(n, 22);
    m.gpu_mut().copy_from_host(&data3, &stream).unwrap();
    // foo = blob.cpu_data(); // data copied gpu->cpu, since the gpu side has modified the data
    let m: SyncedMemory<f32, Synced> = m.into_cpu().unwrap();
    assert_eq!(copies(&m.stats()), (1, 1));
    assert_eq!(m.stats().d2h_bytes, bytes);
    assert_eq!(m.cpu(), &data3[..]);
    // foo = blob.gpu_data(); // no data copied since both have up-to-date contents
    let m: SyncedMemory<f32, Synced> = m.into_gpu().unwrap();
    assert_eq!(copies(&m.stats()), (1, 1));
    assert_eq!(m.gpu().to_vec(&stream).unwrap(), data3);
    // bar = blob.mutable_cpu_data(); // still no data copied.
    let mut m: SyncedMemory<f32, HeadAtCpu> = m.into_cpu_mut().unwrap();
    assert_eq!(copies(&m.stats()), (1, 1));
    let data4 = random_nonzero(n, 23);
    m.cpu_mut().copy_from_slice(&data4);
    // bar = blob.mutable_gpu_data(); // data copied cpu->gpu.
    let mut m: SyncedMemory<f32, HeadAtGpu> = m.into_gpu_mut().unwrap();
    assert_eq!(copies(&m.stats()), (2, 1));
    assert_eq!(m.gpu().to_vec(&stream).unwrap(), data4);
    let data5 = random_nonzero(n, 24);
    m.gpu_mut().copy_from_host(&data5, &stream).unwrap();
    // bar = blob.mutable_cpu_data(); // data copied gpu->cpu.
    let m: SyncedMemory<f32, HeadAtCpu> = m.into_cpu_mut().unwrap();
    assert_eq!(copies(&m.stats()), (2, 2));
    assert_eq!(m.cpu(), &data5[..]);
    let s = m.stats();
    assert_eq!(
        (s.host_allocs, s.device_allocs),
        (1, 1),
        "each side allocated once"
    );
    assert_eq!((s.h2d_bytes, s.d2h_bytes), (2 * bytes, 2 * bytes));
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn async_push_then_wait_or_order_a_stream() {
    let Some(gpu) = gpu_or_skip("async_push_then_wait_or_order_a_stream") else {
        return;
    };
    let n = 1 << 16;
    let data = random_nonzero(n, 30);
    let m = SyncedMemory::<f32, Uninitialized>::with_gpu(&gpu, n).unwrap();
    let mut m = m.into_cpu_mut().unwrap();
    m.cpu_mut().copy_from_slice(&data);
    let push_stream = gpu.new_stream().unwrap();
    let m: SyncedMemory<f32, InFlight> = m.async_gpu_push(&push_stream).unwrap();
    assert_eq!(copies(&m.stats()), (1, 0));
    // Read on a third stream ordered after the push.
    let compute = gpu.new_stream().unwrap();
    assert_eq!(
        m.gpu_after(&compute).unwrap().to_vec(&compute).unwrap(),
        data
    );
    let m: SyncedMemory<f32, Synced> = m.wait().unwrap();
    assert_eq!(m.cpu(), &data[..]);
    assert_eq!(m.gpu().to_vec(&push_stream).unwrap(), data);
    assert_eq!(copies(&m.stats()), (1, 0), "a push is the only copy");
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn async_push_of_cpu_only_memory_hands_it_back() {
    let Some(gpu) = gpu_or_skip("async_push_of_cpu_only_memory_hands_it_back") else {
        return;
    };
    let data = random_nonzero(5, 31);
    let m = SyncedMemory::from_vec(data.clone());
    let err = m.async_gpu_push(gpu.default_stream()).unwrap_err();
    assert!(matches!(err.error, Error::State(StateError::NoGpu { .. })));
    assert_eq!(err.into_inner().cpu(), &data[..]);
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn adopted_gpu_storage_and_set_gpu_data() {
    let Some(gpu) = gpu_or_skip("adopted_gpu_storage_and_set_gpu_data") else {
        return;
    };
    let stream = gpu.default_stream().clone();
    let data = random_nonzero(8, 32);
    let storage = typestate_tensor::gpu::GpuStorage::from_host(&gpu, &data, &stream).unwrap();
    let m = SyncedMemory::from_gpu_storage(storage).unwrap();
    assert_eq!(m.head(), Head::HeadAtGpu);
    let m = m.into_cpu().unwrap();
    assert_eq!(m.cpu(), &data[..]);
    assert_eq!(copies(&m.stats()), (0, 1));

    let other = random_nonzero(8, 33);
    let storage = typestate_tensor::gpu::GpuStorage::from_host(&gpu, &other, &stream).unwrap();
    let (m, old) = m.set_gpu_data(storage).unwrap();
    assert_eq!(old.unwrap().to_vec(&stream).unwrap(), data);
    let m = m.into_cpu().unwrap();
    assert_eq!(m.cpu(), &other[..]);

    let short = typestate_tensor::gpu::GpuStorage::<f32>::zeros(&gpu, 3, &stream).unwrap();
    let err = m.set_gpu_data(short).unwrap_err();
    assert!(matches!(
        err.error,
        Error::Layout(LayoutError::ShapeMismatch { .. })
    ));

    // The `&mut self` form on a GPU head keeps the state.
    let (m, _) = err.into_inner();
    let mut m = m.into_gpu_mut().unwrap();
    let third = random_nonzero(8, 34);
    let storage = typestate_tensor::gpu::GpuStorage::from_host(&gpu, &third, &stream).unwrap();
    let old = m.set_gpu_data_in_place(storage).unwrap();
    assert_eq!(old.unwrap().to_vec(&stream).unwrap(), other);
    assert_eq!(m.gpu().to_vec(&stream).unwrap(), third);
    let short = typestate_tensor::gpu::GpuStorage::<f32>::zeros(&gpu, 3, &stream).unwrap();
    let err = m.set_gpu_data_in_place(short).unwrap_err();
    assert!(matches!(
        err.error,
        Error::Layout(LayoutError::ShapeMismatch { .. })
    ));
    assert_eq!(err.into_inner().len(), 3);
    let m = m.into_cpu().unwrap();
    assert_eq!(m.cpu(), &third[..]);
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn borrowed_buffer_round_trips_through_the_gpu() {
    let Some(gpu) = gpu_or_skip("borrowed_buffer_round_trips_through_the_gpu") else {
        return;
    };
    let mut buf = random_nonzero(12, 34);
    let doubled: Vec<f32> = buf.iter().map(|v| v * 2.0).collect();
    let m = SyncedMemory::borrow_cpu_with_gpu(&gpu, &mut buf);
    let mut m = m.into_gpu_mut().unwrap();
    let stream = m.stream().unwrap().clone();
    m.gpu_mut().copy_from_host(&doubled, &stream).unwrap();
    let m = m.into_cpu().unwrap();
    let back = m.into_borrowed();
    assert_eq!(back, &doubled[..]);
    assert_eq!(buf, doubled, "the download went into the caller's buffer");
}

/// A borrowed buffer whose memory ends with the GPU as head gets the GPU's data back: by
/// `release()` (which returns errors) or by dropping the memory (which records them).
#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn borrowed_buffer_gets_the_gpu_data_back_when_the_borrow_ends() {
    let Some(gpu) = gpu_or_skip("borrowed_buffer_gets_the_gpu_data_back_when_the_borrow_ends")
    else {
        return;
    };
    let stream = gpu.default_stream().clone();
    let mut buf = random_nonzero(9, 41);
    let newer: Vec<f32> = buf.iter().map(|v| v * -3.0).collect();

    // release(): one download, then the buffer.
    let m = SyncedMemory::borrow_cpu_with_gpu(&gpu, &mut buf);
    let storage = typestate_tensor::gpu::GpuStorage::from_host(&gpu, &newer, &stream).unwrap();
    let (m, _) = m.set_gpu_data(storage).unwrap();
    assert_eq!(m.head(), Head::HeadAtGpu);
    let back = m.release().unwrap();
    assert_eq!(back, &newer[..]);
    assert_eq!(buf, newer);

    // Dropped with the GPU as head (through `into_gpu_mut` and a device write).
    let newest: Vec<f32> = newer.iter().map(|v| v + 0.5).collect();
    {
        let m = SyncedMemory::borrow_cpu_with_gpu(&gpu, &mut buf)
            .into_gpu_mut()
            .unwrap();
        let storage = typestate_tensor::gpu::GpuStorage::from_host(&gpu, &newest, &stream).unwrap();
        let (m, _) = m.set_gpu_data(storage).unwrap();
        assert_eq!(m.stats().h2d_copies, 1);
    }
    assert_eq!(buf, newest, "the drop wrote the GPU's data back");
    gpu.check_err().unwrap();
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn erased_memory_runs_caffes_api_on_the_gpu() {
    let Some(gpu) = gpu_or_skip("erased_memory_runs_caffes_api_on_the_gpu") else {
        return;
    };
    let stream = gpu.default_stream().clone();
    let mut any: AnySyncedMemory<f32> = SyncedMemory::<f32, Uninitialized>::with_gpu(&gpu, 6)
        .unwrap()
        .erase();
    let data = random_nonzero(6, 35);
    any.mutable_cpu_data().unwrap().copy_from_slice(&data);
    assert_eq!(any.gpu_data().unwrap().to_vec(&stream).unwrap(), data);
    assert_eq!(any.head(), Head::Synced);
    let data2 = random_nonzero(6, 36);
    any.mutable_gpu_data()
        .unwrap()
        .copy_from_host(&data2, &stream)
        .unwrap();
    assert_eq!(any.head(), Head::HeadAtGpu);
    assert_eq!(any.cpu_data().unwrap(), &data2[..]);
    assert_eq!(copies(&any.stats()), (1, 1));
}

// ---- Property test on the GPU: random sequences on both sides against a model ----------

enum AnyTyped {
    Uninit(SyncedMemory<f32, Uninitialized>),
    Cpu(SyncedMemory<f32, HeadAtCpu>),
    Gpu(SyncedMemory<f32, HeadAtGpu>),
    Synced(SyncedMemory<f32, Synced>),
}

#[derive(Clone, Debug)]
enum Step {
    IntoCpu,
    IntoGpu,
    WriteCpu(u64),
    WriteGpu(u64),
}

/// Caffe's machine as a plain run-time model.
struct Model {
    head: Head,
    cpu: Vec<f32>,
    gpu: Vec<f32>,
    h2d: usize,
    d2h: usize,
}

impl Model {
    fn cpu_data(&mut self, n: usize) {
        match self.head {
            Head::Uninitialized => {
                self.cpu = vec![0.0; n];
                self.head = Head::HeadAtCpu;
            }
            Head::HeadAtGpu => {
                self.cpu = self.gpu.clone();
                self.d2h += 1;
                self.head = Head::Synced;
            }
            _ => {}
        }
    }
    fn gpu_data(&mut self, n: usize) {
        match self.head {
            Head::Uninitialized => {
                self.gpu = vec![0.0; n];
                self.head = Head::HeadAtGpu;
            }
            Head::HeadAtCpu => {
                self.gpu = self.cpu.clone();
                self.h2d += 1;
                self.head = Head::Synced;
            }
            _ => {}
        }
    }
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn gpu_sequences_match_caffe_model() {
    let Some(gpu) = gpu_or_skip("gpu_sequences_match_caffe_model") else {
        return;
    };
    let strategy = (
        1usize..64,
        prop::collection::vec(
            prop_oneof![
                Just(Step::IntoCpu),
                Just(Step::IntoGpu),
                any::<u64>().prop_map(Step::WriteCpu),
                any::<u64>().prop_map(Step::WriteGpu),
            ],
            0..24,
        ),
    );
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(64));
    runner
        .run(&strategy, |(n, steps)| {
            let mem = SyncedMemory::<f32, Uninitialized>::with_gpu(&gpu, n).unwrap();
            let stream = mem.stream().unwrap().clone();
            let mut mem = AnyTyped::Uninit(mem);
            let mut model = Model {
                head: Head::Uninitialized,
                cpu: vec![],
                gpu: vec![],
                h2d: 0,
                d2h: 0,
            };
            for step in &steps {
                mem = match (mem, step) {
                    (AnyTyped::Uninit(m), Step::IntoCpu) => AnyTyped::Cpu(m.into_cpu().unwrap()),
                    (AnyTyped::Cpu(m), Step::IntoCpu) => AnyTyped::Cpu(m.into_cpu().unwrap()),
                    (AnyTyped::Gpu(m), Step::IntoCpu) => AnyTyped::Synced(m.into_cpu().unwrap()),
                    (AnyTyped::Synced(m), Step::IntoCpu) => AnyTyped::Synced(m.into_cpu().unwrap()),
                    (AnyTyped::Uninit(m), Step::IntoGpu) => AnyTyped::Gpu(m.into_gpu().unwrap()),
                    (AnyTyped::Cpu(m), Step::IntoGpu) => AnyTyped::Synced(m.into_gpu().unwrap()),
                    (AnyTyped::Gpu(m), Step::IntoGpu) => AnyTyped::Gpu(m.into_gpu().unwrap()),
                    (AnyTyped::Synced(m), Step::IntoGpu) => AnyTyped::Synced(m.into_gpu().unwrap()),
                    (m, Step::WriteCpu(seed)) => {
                        let mut m = match m {
                            AnyTyped::Uninit(m) => m.into_cpu_mut().unwrap(),
                            AnyTyped::Cpu(m) => m.into_cpu_mut().unwrap(),
                            AnyTyped::Gpu(m) => m.into_cpu_mut().unwrap(),
                            AnyTyped::Synced(m) => m.into_cpu_mut().unwrap(),
                        };
                        let vals = random_nonzero(n, *seed);
                        m.cpu_mut().copy_from_slice(&vals);
                        AnyTyped::Cpu(m)
                    }
                    (m, Step::WriteGpu(seed)) => {
                        let mut m = match m {
                            AnyTyped::Uninit(m) => m.into_gpu_mut().unwrap(),
                            AnyTyped::Cpu(m) => m.into_gpu_mut().unwrap(),
                            AnyTyped::Gpu(m) => m.into_gpu_mut().unwrap(),
                            AnyTyped::Synced(m) => m.into_gpu_mut().unwrap(),
                        };
                        let vals = random_nonzero(n, *seed);
                        m.gpu_mut().copy_from_host(&vals, &stream).unwrap();
                        AnyTyped::Gpu(m)
                    }
                };
                match step {
                    Step::IntoCpu => model.cpu_data(n),
                    Step::IntoGpu => model.gpu_data(n),
                    Step::WriteCpu(seed) => {
                        model.cpu_data(n);
                        model.head = Head::HeadAtCpu;
                        model.cpu = random_nonzero(n, *seed);
                    }
                    Step::WriteGpu(seed) => {
                        model.gpu_data(n);
                        model.head = Head::HeadAtGpu;
                        model.gpu = random_nonzero(n, *seed);
                    }
                }
                let (head, stats) = match &mem {
                    AnyTyped::Uninit(m) => (m.head(), m.stats()),
                    AnyTyped::Cpu(m) => {
                        prop_assert_eq!(m.cpu(), &model.cpu[..]);
                        (m.head(), m.stats())
                    }
                    AnyTyped::Gpu(m) => {
                        prop_assert_eq!(m.gpu().to_vec(&stream).unwrap(), model.gpu.clone());
                        (m.head(), m.stats())
                    }
                    AnyTyped::Synced(m) => {
                        prop_assert_eq!(m.cpu(), &model.cpu[..]);
                        prop_assert_eq!(m.gpu().to_vec(&stream).unwrap(), model.gpu.clone());
                        (m.head(), m.stats())
                    }
                };
                prop_assert_eq!(head, model.head);
                prop_assert_eq!(copies(&stats), (model.h2d, model.d2h));
            }
            Ok(())
        })
        .unwrap();
}
