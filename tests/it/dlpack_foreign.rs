//! DLPack imports of a producer described by hand (issue 30): a counting producer whose
//! deleter must run exactly once, on success (at drop) and on every refusal (before the
//! import returns), and the bad descriptions (element type, device, strides below `data`,
//! overflow, negative size, misalignment, rank, version, null) as typed errors.

use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};

use typestate_tensor::dlpack::ffi::{
    DLDataType, DLDevice, DLDeviceType, DLManagedTensor, DLManagedTensorVersioned, DLPackVersion,
    DLTensor, DLPACK_FLAG_BITMASK_READ_ONLY,
};
use typestate_tensor::dlpack::DlpackTensor;
use typestate_tensor::element::DType;
use typestate_tensor::error::{DlpackError, Error};
use typestate_tensor::Cpu;

static DELETED: AtomicUsize = AtomicUsize::new(0);

struct Producer {
    data: Vec<f32>,
    shape: Vec<i64>,
    strides: Vec<i64>,
    managed: DLManagedTensorVersioned,
}

unsafe extern "C" fn count_delete(m: *mut DLManagedTensorVersioned) {
    DELETED.fetch_add(1, Ordering::SeqCst);
    // SAFETY: `manager_ctx` is the `Box<Producer>` leaked by `producer`, freed once here.
    drop(unsafe { Box::from_raw((*m).manager_ctx.cast::<Producer>()) });
}

/// A versioned managed tensor over 64 host `f32`s (value = index), described by `shape`,
/// `strides`, `byte_offset`, `dtype`, `device`; its deleter counts in [`DELETED`].
fn producer(
    shape: &[i64],
    strides: &[i64],
    byte_offset: u64,
    dtype: DLDataType,
    device: DLDevice,
    flags: u64,
) -> *mut DLManagedTensorVersioned {
    let mut p = Box::new(Producer {
        data: (0..64).map(|i| i as f32).collect(),
        shape: shape.to_vec(),
        strides: strides.to_vec(),
        managed: DLManagedTensorVersioned {
            version: DLPackVersion { major: 1, minor: 1 },
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(count_delete),
            flags,
            dl_tensor: DLTensor {
                data: std::ptr::null_mut(),
                device,
                ndim: shape.len() as i32,
                dtype,
                shape: std::ptr::null_mut(),
                strides: std::ptr::null_mut(),
                byte_offset,
            },
        },
    });
    p.managed.dl_tensor.data = p.data.as_mut_ptr().cast::<c_void>();
    p.managed.dl_tensor.shape = p.shape.as_mut_ptr();
    p.managed.dl_tensor.strides = p.strides.as_mut_ptr();
    let raw = Box::into_raw(p);
    // SAFETY: just leaked; the deleter frees it.
    unsafe {
        (*raw).managed.manager_ctx = raw.cast();
        &raw mut (*raw).managed
    }
}

const F32: DLDataType = DLDataType {
    code: DLDataType::FLOAT,
    bits: 32,
    lanes: 1,
};
const CPU: DLDevice = DLDevice {
    device_type: DLDeviceType::CPU,
    device_id: 0,
};

/// Imports a counting producer's tensor as `f32` on the host: the result, and how many
/// times the deleter ran during the import.
fn import(
    shape: &[i64],
    strides: &[i64],
    off: u64,
    dtype: DLDataType,
    device: DLDevice,
    flags: u64,
) -> (Result<DlpackTensor<f32, Cpu>, Error>, usize) {
    let before = DELETED.load(Ordering::SeqCst);
    let m = producer(shape, strides, off, dtype, device, flags);
    // SAFETY: a valid managed tensor over 64 live `f32`s, handed over once; every layout
    // used below either stays within them or is refused by the checks under test.
    let r = unsafe { DlpackTensor::<f32, Cpu>::from_versioned(m, &Cpu) };
    (r, DELETED.load(Ordering::SeqCst) - before)
}

/// What an import of a counting producer gives.
type Imported = Result<DlpackTensor<f32, Cpu>, Error>;

fn dlpack_error(r: Imported) -> DlpackError {
    match r {
        Err(Error::Dlpack(e)) => *e,
        Err(e) => panic!("not a DlpackError: {e}"),
        Ok(_) => panic!("accepted"),
    }
}

// The counting tests share `DELETED`: one test runs them in order.
#[test]
fn a_foreign_producer_is_deleted_once_and_bad_imports_are_typed_errors() {
    // A good import: a stepped, offset view; the deleter runs once, at drop.
    let (r, during) = import(&[3, 4], &[16, 2], 4 * 4, F32, CPU, 0);
    let t = r.unwrap();
    assert_eq!(during, 0);
    let want: Vec<f32> = (0..3)
        .flat_map(|i| (0..4).map(move |j| (4 + 16 * i + 2 * j) as f32))
        .collect();
    assert_eq!(t.view().to_vec(), want);
    let before = DELETED.load(Ordering::SeqCst);
    drop(t);
    assert_eq!(DELETED.load(Ordering::SeqCst) - before, 1);

    // Negative strides within the memory: allowed (the offset counts from the lowest).
    let (r, _) = import(&[4], &[-3], 9 * 4, F32, CPU, 0);
    assert_eq!(r.unwrap().view().to_vec(), vec![9.0, 6.0, 3.0, 0.0]);

    // Every refusal calls the deleter exactly once, before returning.
    let cases: Vec<(&str, Imported, usize)> = vec![
        {
            let (r, n) = import(&[4], &[1], 0, DLDataType::of(DType::F64), CPU, 0);
            ("dtype", r, n)
        },
        {
            let (r, n) = import(
                &[4],
                &[1],
                0,
                F32,
                DLDevice {
                    device_type: DLDeviceType::CUDA,
                    device_id: 0,
                },
                0,
            );
            ("device", r, n)
        },
        {
            let (r, n) = import(&[4], &[-3], 2 * 4, F32, CPU, 0);
            ("below data", r, n)
        },
        {
            let (r, n) = import(&[2, 2], &[i64::MAX, 1], 0, F32, CPU, 0);
            ("overflow", r, n)
        },
        {
            let (r, n) = import(&[-1], &[1], 0, F32, CPU, 0);
            ("negative size", r, n)
        },
        {
            let (r, n) = import(&[4], &[1], 2, F32, CPU, 0);
            ("misaligned", r, n)
        },
        {
            let (r, n) = import(&[1; 33], &[1; 33], 0, F32, CPU, 0);
            ("rank", r, n)
        },
    ];
    for (what, r, n) in cases {
        assert_eq!(n, 1, "{what}: the deleter runs once on a refusal");
        let e = dlpack_error(r);
        let msg = e.to_string();
        match what {
            "dtype" => assert!(
                matches!(
                    e,
                    DlpackError::DTypeMismatch {
                        expected: DType::F32,
                        got_bits: 64,
                        ..
                    }
                ) && msg.contains("float64")
                    && msg.contains("f32"),
                "{msg}"
            ),
            "device" => assert!(
                matches!(e, DlpackError::DeviceMismatch { got_type: 2, .. })
                    && msg.contains("kDLCUDA"),
                "{msg}"
            ),
            "below data" | "overflow" | "negative size" | "misaligned" => {
                assert!(matches!(e, DlpackError::BadLayout { .. }), "{what}: {msg}")
            }
            "rank" => assert!(matches!(e, DlpackError::Rank { ndim: 33, .. }), "{msg}"),
            _ => unreachable!(),
        }
    }

    // Read-only: views, no writable view.
    let (r, _) = import(&[8], &[1], 0, F32, CPU, DLPACK_FLAG_BITMASK_READ_ONLY);
    let mut t = r.unwrap();
    assert!(t.is_read_only());
    assert_eq!(t.view().sum().unwrap().item().unwrap(), 28.0);
    assert!(
        matches!(t.view_mut(), Err(Error::Dlpack(e)) if matches!(*e, DlpackError::ReadOnly { .. }))
    );

    // Another major version: refused reading only the version and the deleter.
    let before = DELETED.load(Ordering::SeqCst);
    let m = producer(&[4], &[1], 0, F32, CPU, 0);
    // SAFETY: valid, handed over once.
    unsafe { (*m).version.major = 2 };
    // SAFETY: as above.
    let r = unsafe { DlpackTensor::<f32, Cpu>::from_versioned(m, &Cpu) };
    assert!(matches!(
        dlpack_error(r),
        DlpackError::Version { major: 2, .. }
    ));
    assert_eq!(DELETED.load(Ordering::SeqCst) - before, 1);

    // Null.
    // SAFETY: null is allowed and refused.
    let r = unsafe {
        DlpackTensor::<f32, Cpu>::from_legacy(std::ptr::null_mut::<DLManagedTensor>(), &Cpu)
    };
    assert!(matches!(dlpack_error(r), DlpackError::NullPointer { .. }));
}
