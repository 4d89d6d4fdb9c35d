//! DLPack (issue 30): export → import round trips inside the crate on both engines (every
//! element type; contiguous, transposed, stepped, flipped, offset, empty, 0-d and broadcast
//! layouts), the producer kept alive after the exporter's handles are gone, read-only
//! exports, devices that do not match, and on the GPU the stream handshake with the race
//! window widened by a sleep kernel. A producer described by hand (the deleter counted, bad
//! descriptions): `dlpack_foreign.rs`.

use std::sync::Arc;
use std::time::Duration;

use typestate_tensor::dlpack::ffi::{DLDataType, DLDevice, DLDeviceType};
use typestate_tensor::dlpack::{DlpackDevice, DlpackExport, DlpackTensor};
use typestate_tensor::element::Element;
use typestate_tensor::error::{DlpackError, Error};
use typestate_tensor::gpu::Gpu;
use typestate_tensor::layout::Layout;
use typestate_tensor::tensor::{Tensor, TensorView};
use typestate_tensor::Cpu;

use crate::common::device::{host, test_device, TestDevice};
use crate::common::rng::Rng;

/// Distinct-ish non-zero values of `T` (small integers fit every type; bools alternate).
fn values<T: Element>(rng: &mut Rng, n: usize) -> Vec<T> {
    (0..n)
        .map(|_| T::from_f64((1 + rng.below(100)) as f64))
        .collect()
}

/// The layouts a round trip covers, over a storage of `shape` (row-major, rank 3).
fn layouts(rng: &mut Rng, shape: &[usize]) -> Vec<(&'static str, Layout)> {
    let c = Layout::contiguous(shape).unwrap();
    let (a, b) = (rng.below(shape[0]), rng.below(shape[2]));
    vec![
        ("contiguous", c.clone()),
        ("transposed", c.permute(&[2, 0, 1]).unwrap()),
        ("stepped", c.slice(1, 0, shape[1], 2).unwrap()),
        ("flipped", c.slice_range(2, .., -1).unwrap()),
        (
            "offset",
            c.narrow(0, a, shape[0] - a)
                .unwrap()
                .narrow(2, b, 1)
                .unwrap(),
        ),
        ("empty", c.narrow(1, 1, 0).unwrap()),
        (
            "0-d",
            c.select(0, a as isize)
                .unwrap()
                .select(0, 0)
                .unwrap()
                .select(0, 0)
                .unwrap(),
        ),
        (
            "broadcast",
            Layout::contiguous(&[shape[2]])
                .unwrap()
                .broadcast_to(&[2, shape[2]])
                .unwrap(),
        ),
    ]
}

/// The elements of `layout` over the storage of `t`, on the host.
fn expected<T: Element, D: TestDevice>(t: &Tensor<T, D>, layout: &Layout) -> Vec<T> {
    host(&TensorView::new(D::slice(t.storage()), layout.clone(), t.device()).unwrap())
}

fn round_trip<T: Element, D: TestDevice + DlpackDevice + DlDeviceOf>(dev: &D, seed: u64) {
    let mut rng = Rng(seed);
    let shape = [2 + rng.below(4), 2 + rng.below(4), 2 + rng.below(5)];
    let n = shape.iter().product();
    let src = Tensor::from_vec(&shape, values::<T>(&mut rng, n)).unwrap();
    for legacy in [false, true] {
        for (name, layout) in layouts(&mut rng, &shape) {
            let t = dev.upload(&src);
            let want = expected(&t, &layout);
            let export = DlpackExport::with_layout(t, layout.clone()).unwrap();
            let dl = export.dl_tensor();
            let addr = dl.data as u64 + dl.byte_offset;
            assert_eq!(dl.dtype, DLDataType::of(T::DTYPE));
            assert_eq!(dl.device, dev.dl_device_of());
            let got = if legacy && !export.is_read_only() {
                let raw = export.into_raw_legacy().unwrap();
                // SAFETY: made just above by this crate, handed over once.
                unsafe { DlpackTensor::<T, D>::from_legacy(raw.as_ptr(), dev) }.unwrap()
            } else {
                let raw = export.into_raw_versioned();
                // SAFETY: as above.
                unsafe { DlpackTensor::<T, D>::from_versioned(raw.as_ptr(), dev) }.unwrap()
            };
            let what = format!("{} {name} legacy={legacy} shape {shape:?}", T::DTYPE);
            assert_eq!(got.view().shape(), layout.shape(), "{what}");
            assert_eq!(host(&got.view()), want, "{what}");
            if layout.numel() > 0 {
                assert_eq!(got.data_ptr(), addr, "{what}: no copy");
            }
            assert_eq!(got.is_read_only(), name == "broadcast", "{what}");
        }
    }
}

/// The DLPack device of `dev` (`kDLCPU` / `kDLCUDA` of its ordinal).
trait DlDeviceOf {
    fn dl_device_of(&self) -> DLDevice;
}
impl DlDeviceOf for Cpu {
    fn dl_device_of(&self) -> DLDevice {
        DLDevice {
            device_type: DLDeviceType::CPU,
            device_id: 0,
        }
    }
}
impl DlDeviceOf for Gpu {
    fn dl_device_of(&self) -> DLDevice {
        DLDevice {
            device_type: DLDeviceType::CUDA,
            device_id: self.ordinal() as i32,
        }
    }
}

fn round_trip_every_dtype<D: TestDevice + DlpackDevice + DlDeviceOf>(dev: &D) {
    round_trip::<f32, D>(dev, 11);
    round_trip::<f64, D>(dev, 12);
    round_trip::<half::f16, D>(dev, 13);
    round_trip::<half::bf16, D>(dev, 14);
    round_trip::<i8, D>(dev, 15);
    round_trip::<i16, D>(dev, 16);
    round_trip::<i32, D>(dev, 17);
    round_trip::<i64, D>(dev, 18);
    round_trip::<u8, D>(dev, 19);
    round_trip::<u16, D>(dev, 20);
    round_trip::<u32, D>(dev, 21);
    round_trip::<u64, D>(dev, 22);
    round_trip::<bool, D>(dev, 23);
}
test_device!(
    round_trip_every_dtype,
    round_trip_every_dtype_cpu,
    round_trip_every_dtype_gpu
);

/// A shared tensor exported read-only outlives every handle of the exporter: the import
/// reads it after the last `Arc` of ours is gone and after other allocations; it cannot be
/// written, and the legacy form (which cannot say read-only) is refused.
fn shared_export_outlives_the_exporter<D: TestDevice + DlpackDevice>(dev: &D) {
    let mut rng = Rng(31);
    let v = values::<f32>(&mut rng, 24);
    let t = Arc::new(dev.upload(&Tensor::from_vec(&[4, 6], v.clone()).unwrap()));
    let legacy = DlpackExport::shared(&t, t.layout().clone()).unwrap();
    assert!(legacy.is_read_only());
    let err = legacy
        .into_raw_legacy()
        .expect_err("a read-only legacy export is refused");
    assert!(matches!(err.error(), Error::Dlpack(e) if matches!(**e, DlpackError::ReadOnly { .. })));
    let layout = t.layout().t();
    let export = DlpackExport::shared(&t, layout).unwrap();
    drop(t); // the exporter's last handle
    let raw = export.into_raw_versioned();
    let others: Vec<_> = (0..4)
        .map(|_| dev.upload(&Tensor::full(&[4, 6], -1.0f32).unwrap()))
        .collect();
    // SAFETY: made by this crate, handed over once.
    let mut got = unsafe { DlpackTensor::<f32, D>::from_versioned(raw.as_ptr(), dev) }.unwrap();
    let want: Vec<f32> = (0..24).map(|k| v[(k % 4) * 6 + k / 4]).collect();
    assert_eq!(host(&got.view()), want);
    let e = got.view_mut().expect_err("read-only");
    assert!(
        matches!(e, Error::Dlpack(ref d) if matches!(**d, DlpackError::ReadOnly { .. })),
        "{e}"
    );
    drop(others);
}
test_device!(
    shared_export_outlives_the_exporter,
    shared_export_outlives_the_exporter_cpu,
    shared_export_outlives_the_exporter_gpu
);

/// Writes through an import of a writable export land in the exported memory (no copy).
fn writable_import_writes_the_producer_memory<D: TestDevice + DlpackDevice>(dev: &D) {
    let t = dev.upload(&Tensor::from_vec(&[2, 3], vec![1i32, 2, 3, 4, 5, 6]).unwrap());
    let raw = DlpackExport::with_layout(t, Layout::contiguous(&[3, 2]).unwrap().t())
        .unwrap()
        .into_raw_versioned();
    // SAFETY: made by this crate, handed over once.
    let mut got = unsafe { DlpackTensor::<i32, D>::from_versioned(raw.as_ptr(), dev) }.unwrap();
    got.view_mut().unwrap().fill_(7).unwrap();
    assert_eq!(host(&got.view()), vec![7; 6]);
}
test_device!(
    writable_import_writes_the_producer_memory,
    writable_import_cpu,
    writable_import_gpu
);

/// A host tensor exported and imported on a GPU (and the reverse) is a device mismatch, and
/// the export's deleter still runs (the tensor is freed).
#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn a_tensor_of_another_device_is_refused_gpu() {
    let Some(gpu) = crate::common::device::gpu_or_skip("a_tensor_of_another_device_is_refused_gpu")
    else {
        return;
    };
    let raw = DlpackExport::new(Tensor::from_vec(&[3], vec![1.0f32, 2.0, 3.0]).unwrap())
        .unwrap()
        .into_raw_versioned();
    // SAFETY: made by this crate, handed over once.
    let r = unsafe { DlpackTensor::<f32, Gpu>::from_versioned(raw.as_ptr(), &gpu) };
    assert!(
        matches!(r, Err(Error::Dlpack(e)) if matches!(*e, DlpackError::DeviceMismatch { got_type: 1, .. }))
    );
    let t = Tensor::from_vec(&[3], vec![1.0f32, 2.0, 3.0])
        .unwrap()
        .to_gpu(&gpu)
        .unwrap();
    let raw = DlpackExport::new(t).unwrap().into_raw_versioned();
    // SAFETY: as above.
    let r = unsafe { DlpackTensor::<f32, Cpu>::from_versioned(raw.as_ptr(), &Cpu) };
    assert!(
        matches!(r, Err(Error::Dlpack(e)) if matches!(*e, DlpackError::DeviceMismatch { got_type: 2, .. }))
    );
    gpu.check_err().unwrap();
}

const WINDOW: Duration = Duration::from_millis(40);

/// The handshake inside the crate, with the race window widened: the producer's write is
/// queued on its stream behind a sleep; the consumer (another stream) must see it, through
/// `sync_to`. Then the consumer writes behind a sleep on its stream and drops the import:
/// the drop waits for that write before the deleter lets the memory go, and the producer
/// stream's next allocation cannot take it early (checked by reading a fresh tensor).
#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn the_consumer_stream_sees_pending_producer_work_gpu() {
    let Some(gpu) =
        crate::common::device::gpu_or_skip("the_consumer_stream_sees_pending_producer_work_gpu")
    else {
        return;
    };
    let n = 1 << 22;
    let (s1, s2) = (gpu.new_stream().unwrap(), gpu.new_stream().unwrap());
    let producer = gpu.on(&s1).unwrap();
    let consumer = gpu.on(&s2).unwrap();
    for round in 0..3 {
        let mut t = Tensor::<f32, Gpu>::zeros_on(&[n], &producer).unwrap();
        s1.sleep(WINDOW).unwrap();
        t.fill_(3.0 + round as f32).unwrap(); // queued on s1 behind the sleep
        let mut export = DlpackExport::new(t).unwrap();
        export.sync_to(&s2).unwrap();
        let raw = export.into_raw_versioned();
        // SAFETY: made by this crate, handed over once, synchronised to s2 (consumer's default).
        let got =
            unsafe { DlpackTensor::<f32, Gpu>::from_versioned(raw.as_ptr(), &consumer) }.unwrap();
        let sum = got.view().sum().unwrap().item().unwrap();
        assert_eq!(
            sum,
            (3.0 + round as f32) * n as f32,
            "round {round}: the consumer read before the producer's write"
        );
    }
    gpu.check_err().unwrap();
}
