//! The head state machine against the simulated device: every transition, its copies and
//! allocations, and what a failure leaves behind.

use super::super::accel::{SimAccel, SimOp};
use super::super::host::OwnedHost;
use super::*;
use proptest::prelude::*;

type Raw = RawSynced<f32, OwnedHost<f32>, SimAccel>;

fn raw(len: usize) -> (Raw, SimAccel) {
    let sim = SimAccel::default();
    let r = Raw::new("test", len, OwnedHost::empty(), Some(sim.clone())).unwrap();
    (r, sim)
}

fn stats(h2d: usize, d2h: usize, host: usize, dev: usize, bytes: usize) -> TransferStats {
    TransferStats {
        h2d_copies: h2d,
        h2d_bytes: h2d * bytes,
        d2h_copies: d2h,
        d2h_bytes: d2h * bytes,
        host_allocs: host,
        device_allocs: dev,
        ..TransferStats::default()
    }
}

/// Caffe's documented walkthrough, step by step, starting from data written on the CPU.
#[test]
fn caffe_walkthrough_copies_exactly_where_documented() {
    let n = 7;
    let (mut m, _) = raw(n);
    let mut h = m.make_cpu_head(Head::Uninitialized).unwrap();
    let data: Vec<f32> = (0..n).map(|i| i as f32 * 1.5 - 2.0).collect();
    m.host_mut().unwrap().copy_from_slice(&data);
    let b = n * 4;
    // (call, head after, h2d so far, d2h so far)
    type Step = fn(&mut Raw, Head) -> Result<Head, Error>;
    let steps: [(Step, Head, usize, usize); 9] = [
        (Raw::ensure_gpu_readable, Head::Synced, 1, 0), // gpu_data: copied cpu->gpu
        (Raw::ensure_cpu_readable, Head::Synced, 1, 0), // cpu_data: none
        (Raw::make_gpu_head, Head::HeadAtGpu, 1, 0),    // mutable_gpu_data: none
        (Raw::make_gpu_head, Head::HeadAtGpu, 1, 0),    // mutable_gpu_data again: none
        (Raw::ensure_cpu_readable, Head::Synced, 1, 1), // cpu_data: copied gpu->cpu
        (Raw::ensure_gpu_readable, Head::Synced, 1, 1), // gpu_data: none
        (Raw::make_cpu_head, Head::HeadAtCpu, 1, 1),    // mutable_cpu_data: none
        (Raw::make_gpu_head, Head::HeadAtGpu, 2, 1),    // mutable_gpu_data: copied cpu->gpu
        (Raw::make_cpu_head, Head::HeadAtCpu, 2, 2),    // mutable_cpu_data: copied gpu->cpu
    ];
    for (i, (step, want, h2d, d2h)) in steps.into_iter().enumerate() {
        h = step(&mut m, h).unwrap();
        assert_eq!(h, want, "step {i}");
        assert_eq!(m.stats(), stats(h2d, d2h, 1, 1, b), "step {i}");
    }
    assert_eq!(m.host().unwrap(), &data[..]);
    assert_eq!(m.device().unwrap(), &data);
}

#[test]
fn push_counts_one_upload_and_waits_to_synced() {
    let (mut m, sim) = raw(3);
    let h = m.make_cpu_head(Head::Uninitialized).unwrap();
    m.host_mut().unwrap().copy_from_slice(&[4.0, -5.0, 6.5]);
    sim.fail_next(SimOp::Upload);
    assert!(
        m.push(&()).is_err(),
        "a failed push leaves the caller's head"
    );
    assert_eq!(m.stats().h2d_copies, 0);
    assert_eq!(m.push(&()).unwrap(), Head::InFlight);
    assert_eq!(m.device_after(&()).unwrap(), &vec![4.0, -5.0, 6.5]);
    assert_eq!(m.wait_push().unwrap(), Head::Synced);
    assert_eq!(m.stats(), stats(1, 0, 1, 1, 12));
    assert_eq!(h, Head::HeadAtCpu);
}

#[test]
fn lazy_sides_are_zero_filled_and_allocated_once() {
    let (mut m, _) = raw(5);
    assert_eq!(
        m.ensure_gpu_readable(Head::Uninitialized).unwrap(),
        Head::HeadAtGpu
    );
    assert!(m.host().is_none(), "CPU side stays unallocated");
    assert_eq!(m.device().unwrap(), &vec![0.0; 5]);
    assert_eq!(
        m.ensure_cpu_readable(Head::HeadAtGpu).unwrap(),
        Head::Synced
    );
    assert_eq!(m.host().unwrap(), &[0.0; 5]);
    assert_eq!(m.stats(), stats(0, 1, 1, 1, 20));
}

#[test]
fn failed_transitions_keep_head_data_and_counts() {
    let (mut m, sim) = raw(4);
    let h = m.make_cpu_head(Head::Uninitialized).unwrap();
    m.host_mut()
        .unwrap()
        .copy_from_slice(&[1.0, -2.0, 3.5, 9.0]);
    for op in [SimOp::AllocDevice, SimOp::Upload] {
        sim.fail_next(op);
        let before = m.stats();
        assert!(m.ensure_gpu_readable(h).is_err(), "{op:?}");
        assert_eq!(m.stats().h2d_copies, before.h2d_copies);
        assert_eq!(m.host().unwrap(), &[1.0, -2.0, 3.5, 9.0]);
    }
    // The retry succeeds and copies once.
    assert_eq!(m.make_gpu_head(h).unwrap(), Head::HeadAtGpu);
    assert_eq!(m.stats().h2d_copies, 1);
    m.device_mut().unwrap()[2] = -7.0;
    sim.fail_next(SimOp::Download);
    assert!(m.ensure_cpu_readable(Head::HeadAtGpu).is_err());
    assert_eq!(
        m.ensure_cpu_readable(Head::HeadAtGpu).unwrap(),
        Head::Synced
    );
    assert_eq!(m.host().unwrap(), &[1.0, -2.0, -7.0, 9.0]);
    assert_eq!(m.stats().d2h_copies, 1);
}

#[test]
fn host_allocation_failure_is_an_error() {
    let (mut m, sim) = raw(3);
    sim.fail_next(SimOp::AllocHost);
    assert!(m.ensure_cpu_readable(Head::Uninitialized).is_err());
    assert!(m.host().is_none());
    assert_eq!(m.stats(), TransferStats::default());
}

#[test]
fn gpu_side_without_gpu_is_a_typed_error() {
    let mut m = Raw::new("test", 3, OwnedHost::empty(), None).unwrap();
    let err = m.ensure_gpu_readable(Head::Uninitialized).unwrap_err();
    assert!(
        matches!(err, Error::State(StateError::NoGpu { .. })),
        "{err}"
    );
    assert_eq!(
        m.ensure_cpu_readable(Head::Uninitialized).unwrap(),
        Head::HeadAtCpu
    );
    assert!(!m.host_slot().buffer().unwrap().is_pinned());
}

type Borrowed<'a> = RawSynced<f32, &'a mut [f32], SimAccel>;

fn borrowed<'a>(buf: &'a mut [f32], sim: &SimAccel) -> Borrowed<'a> {
    RawSynced::from_host_buffer(buf, Some(sim.clone()))
}

/// A borrowed buffer dropped with the head on the device gets the device's data back.
#[test]
fn borrowed_buffer_gets_the_newest_data_on_drop() {
    let sim = SimAccel::default();
    let mut buf = vec![1.0f32, 2.0, 3.0];
    {
        let mut m = borrowed(&mut buf, &sim);
        let h = m.make_gpu_head(Head::HeadAtCpu).unwrap();
        assert_eq!(h, Head::HeadAtGpu);
        m.device_mut().unwrap()[1] = -20.0;
    }
    assert_eq!(buf, [1.0, -20.0, 3.0]);
    assert!(sim.take_recorded().is_none());

    // Through every path to a device head: Uninitialized -> HeadAtGpu, adoption.
    {
        let mut m = borrowed(&mut buf, &sim);
        m.ensure_gpu_readable(Head::Uninitialized).unwrap();
    }
    assert_eq!(
        buf, [0.0; 3],
        "an Uninitialized memory's device copy is zeros"
    );
    {
        let mut m = borrowed(&mut buf, &sim);
        m.replace_device(vec![7.0, 8.0, 9.0]);
    }
    assert_eq!(buf, [7.0, 8.0, 9.0]);
}

/// In every other state the buffer is current: dropping copies nothing (an armed
/// download failure stays armed and nothing is recorded).
#[test]
fn borrowed_buffer_in_a_cpu_state_is_left_alone() {
    let sim = SimAccel::default();
    let mut buf = vec![1.0f32, 2.0];
    {
        let mut m = borrowed(&mut buf, &sim);
        let h = m.make_gpu_head(Head::HeadAtCpu).unwrap();
        m.device_mut().unwrap()[0] = 5.0;
        let h = m.ensure_cpu_readable(h).unwrap();
        assert_eq!(h, Head::Synced);
        let h = m.make_cpu_head(h).unwrap();
        m.host_mut().unwrap()[1] = 6.0;
        assert_eq!((h, m.stats().d2h_copies), (Head::HeadAtCpu, 1));
        sim.fail_next(SimOp::Download);
    }
    assert_eq!(
        buf,
        [5.0, 6.0],
        "no stale device copy overwrote the CPU write"
    );
    assert!(sim.take_recorded().is_none());
    let mut scratch = [0.0f32; 1];
    assert!(
        sim.download(&vec![1.0], &mut scratch).is_err(),
        "still armed"
    );
}

/// A failed write-back on drop is recorded with the device, never a panic; the buffer
/// keeps its old values.
#[test]
fn failed_write_back_on_drop_is_recorded() {
    let sim = SimAccel::default();
    let mut buf = vec![1.0f32, 2.0];
    {
        let mut m = borrowed(&mut buf, &sim);
        m.make_gpu_head(Head::HeadAtCpu).unwrap();
        m.device_mut().unwrap()[0] = 9.0;
        sim.fail_next(SimOp::Download);
    }
    assert_eq!(buf, [1.0, 2.0]);
    let err = sim.take_recorded().expect("the drop recorded its error");
    assert!(err.to_string().contains("Download"), "{err}");
}

/// The consuming form returns the error and keeps the memory, then succeeds.
#[test]
fn write_back_then_hand_back() {
    let sim = SimAccel::default();
    let mut buf = vec![1.0f32, 2.0];
    let mut m = borrowed(&mut buf, &sim);
    m.make_gpu_head(Head::HeadAtCpu).unwrap();
    m.device_mut().unwrap()[1] = 4.0;
    sim.fail_next(SimOp::Download);
    assert!(m.write_back().is_err());
    assert_eq!(m.host().unwrap(), &[1.0, 2.0]);
    m.write_back().unwrap();
    assert_eq!(m.stats().d2h_copies, 1);
    m.write_back().unwrap();
    assert_eq!(
        m.stats().d2h_copies,
        1,
        "once current, nothing more to copy"
    );
    let back = m.into_host_slot();
    assert_eq!(back, &[1.0, 4.0]);
    assert!(sim.take_recorded().is_none());
}

/// Owned memory is never copied back on drop: nobody else sees its CPU buffer.
#[test]
fn owned_memory_is_not_written_back() {
    let (mut m, sim) = raw(2);
    m.make_gpu_head(Head::Uninitialized).unwrap();
    sim.fail_next(SimOp::Download);
    drop(m);
    assert!(sim.take_recorded().is_none());
    let mut scratch = [0.0f32; 1];
    assert!(
        sim.download(&vec![1.0], &mut scratch).is_err(),
        "still armed"
    );
}

#[test]
fn byte_size_overflow_is_rejected_at_construction() {
    let r = Raw::new("test", usize::MAX / 2, OwnedHost::empty(), None);
    assert!(matches!(r, Err(Error::Layout(_))));
}

/// An independent model of Caffe's machine: head, newest values, copies made.
#[derive(Debug)]
struct Model {
    head: Head,
    cpu: Option<Vec<f32>>,
    gpu: Option<Vec<f32>>,
    h2d: usize,
    d2h: usize,
}

#[derive(Clone, Debug)]
enum Step {
    CpuData,
    GpuData,
    MutableCpu(usize, f32),
    MutableGpu(usize, f32),
}

fn step_strategy(n: usize) -> impl Strategy<Value = Step> {
    prop_oneof![
        Just(Step::CpuData),
        Just(Step::GpuData),
        (0..n, -100.0f32..100.0).prop_map(|(i, v)| Step::MutableCpu(i, v)),
        (0..n, -100.0f32..100.0).prop_map(|(i, v)| Step::MutableGpu(i, v)),
    ]
}

impl Model {
    fn cpu_data(&mut self, n: usize) {
        match self.head {
            Head::Uninitialized => {
                self.cpu = Some(vec![0.0; n]);
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
                self.gpu = Some(vec![0.0; n]);
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

proptest! {
    /// Random call sequences with writes on both sides against the model: same head,
    /// same copy counts, and the readable side always holds the model's values.
    #[test]
    fn machine_matches_caffe_model(n in 1usize..9, steps in prop::collection::vec(step_strategy(8), 0..40)) {
        let (mut m, _) = raw(n);
        let mut head = Head::Uninitialized;
        let mut model = Model { head, cpu: None, gpu: None, h2d: 0, d2h: 0 };
        for s in steps {
            match s {
                Step::CpuData => { head = m.ensure_cpu_readable(head).unwrap(); model.cpu_data(n); }
                Step::GpuData => { head = m.ensure_gpu_readable(head).unwrap(); model.gpu_data(n); }
                Step::MutableCpu(i, v) => {
                    head = m.make_cpu_head(head).unwrap();
                    model.cpu_data(n);
                    model.head = Head::HeadAtCpu;
                    m.host_mut().unwrap()[i % n] = v;
                    model.cpu.as_mut().unwrap()[i % n] = v;
                }
                Step::MutableGpu(i, v) => {
                    head = m.make_gpu_head(head).unwrap();
                    model.gpu_data(n);
                    model.head = Head::HeadAtGpu;
                    m.device_mut().unwrap()[i % n] = v;
                    model.gpu.as_mut().unwrap()[i % n] = v;
                }
            }
            prop_assert_eq!(head, model.head);
            prop_assert_eq!(m.stats().h2d_copies, model.h2d);
            prop_assert_eq!(m.stats().d2h_copies, model.d2h);
            if head.cpu_readable() {
                prop_assert_eq!(m.host().unwrap(), &model.cpu.as_ref().unwrap()[..]);
            }
            if head.gpu_readable() {
                prop_assert_eq!(m.device().unwrap(), model.gpu.as_ref().unwrap());
            }
        }
    }
}
