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
        Error::Layout(LayoutError::ShapeMismatch { .. })
    ));
    let (mem, rejected) = err.into_inner();
    assert_eq!(rejected, vec![1.0; 3]);
    assert_eq!(mem.cpu(), &new[..]);
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
