//! numpy's `.npy` and `.npz` files (issue 30): round trips of every element type and layout,
//! files numpy wrote (big-endian, Fortran order, version 3, `f2`; committed fixtures), bf16's
//! typed refusal, and files read and written by numpy when python3 has it.

use std::io::Cursor;

use typestate_tensor::element::{DType, Element};
use typestate_tensor::error::{Error, IoError};
use typestate_tensor::half::{bf16, f16};
use typestate_tensor::io::npz::{self, Compression, NpzFile};
use typestate_tensor::io::{npy, AnyTensor, TensorRef};
use typestate_tensor::Tensor;

use crate::common::rng::Rng;
use crate::io_util::{
    as_f64, for_each_type, python, python_has, random_tensor, reference, temp_dir, views,
};

fn io_err(e: Error) -> IoError {
    match e {
        Error::Io(e) => *e,
        other => panic!("expected an IoError, got {other:?}"),
    }
}

fn npy_round_trip<T: Element>(seed: u64) {
    let mut rng = Rng(seed + T::DTYPE as u64 * 104_729);
    let dir = temp_dir(&format!("npy-round-{}", T::NAME));
    for _ in 0..10 {
        let t = random_tensor::<T>(&mut rng);
        for (layout, v) in views(&t) {
            let r = TensorRef::from_view(v.clone());
            if T::DTYPE == DType::BF16 {
                let e = io_err(npy::to_bytes(r).unwrap_err());
                assert!(
                    matches!(
                        e,
                        IoError::Unsupported {
                            dtype: DType::BF16,
                            ..
                        }
                    ),
                    "{e}"
                );
                continue;
            }
            let want = reference(&v);
            let bytes = npy::to_bytes(r).unwrap();
            assert_eq!(
                bytes.len() % 64,
                (want.len() * size_of::<T>()) % 64,
                "header padded to 64"
            );
            let back = npy::from_bytes::<T>(&bytes).unwrap();
            assert_eq!(
                (back.shape(), back.to_vec()),
                (v.shape(), want.clone()),
                "{layout}"
            );
            let path = dir.join("a.npy");
            npy::save(&path, &v).unwrap();
            assert_eq!(npy::load::<T>(&path).unwrap().to_vec(), want);
            assert_eq!(npy::load_any(&path).unwrap().dtype(), T::DTYPE);
            let h = npy::header(&bytes).unwrap();
            assert_eq!(
                (h.dtype, &h.shape[..], h.fortran_order, h.version),
                (T::DTYPE, v.shape(), false, (1, 0))
            );
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn npy_every_type_and_layout_round_trips() {
    for_each_type!(npy_round_trip(0x4e9));
}

/// Two arrays written one after the other to one stream read back one call each.
#[test]
fn npy_reads_consecutive_arrays_from_a_stream() {
    let a = Tensor::from_vec(&[2], vec![1.5f32, -2.5]).unwrap();
    let b = Tensor::from_vec(&[1, 2], vec![7i16, -8]).unwrap();
    let mut buf = Vec::new();
    npy::write(&mut buf, &a).unwrap();
    npy::write(&mut buf, &b).unwrap();
    let mut r = Cursor::new(buf);
    assert_eq!(npy::read::<f32>(&mut r).unwrap().to_vec(), vec![1.5, -2.5]);
    assert_eq!(npy::read::<i16>(&mut r).unwrap().to_vec(), vec![7, -8]);
    // Whole-file readers refuse what follows the data.
    assert!(npy::from_bytes::<f32>(r.get_ref()).is_err());
    let e = io_err(npy::from_bytes::<f64>(&npy::to_bytes(&a).unwrap()).unwrap_err());
    assert!(
        matches!(e, IoError::DTypeMismatch { ref file_dtype, requested: DType::F64, .. } if file_dtype == "f32"),
        "{e}"
    );
}

/// Files numpy 2.4 wrote (tests/it/io_fixtures, made by `np.save` and
/// `numpy.lib.format.write_array`): checked on every machine, numpy or not.
#[test]
fn npy_files_numpy_wrote() {
    let be = npy::from_bytes::<f64>(include_bytes!("io_fixtures/be_f8.npy")).unwrap();
    assert!(
        npy::header(include_bytes!("io_fixtures/be_f8.npy"))
            .unwrap()
            .big_endian
    );
    assert_eq!(
        (be.shape(), be.to_vec()),
        (&[2usize, 3][..], vec![-2.0, -0.5, 1.0, 2.5, 4.0, 5.5])
    );

    let f = npy::from_bytes::<f32>(include_bytes!("io_fixtures/fortran_f4.npy")).unwrap();
    assert_eq!(f.shape(), &[3, 4]);
    assert_eq!(
        f.strides(),
        &[1, 3],
        "Fortran order is read as column-major strides, no copy"
    );
    let want: Vec<f32> = (0..12).map(|i| (i as f32 - 5.0) / 4.0).collect();
    assert_eq!(f.to_vec(), want);
    assert_eq!(f.contiguous().unwrap().to_vec(), want);

    let bf = npy::from_bytes::<i32>(include_bytes!("io_fixtures/be_fortran_i4.npy")).unwrap();
    assert_eq!(bf.to_vec(), vec![0, -7, -14, -21, -28, -35]);

    let h = npy::from_bytes::<f16>(include_bytes!("io_fixtures/f2.npy")).unwrap();
    let want = [0.5, -1.25, 65504.0, 6e-8].map(f16::from_f64);
    assert_eq!(h.to_vec(), want.to_vec());

    let v3 = include_bytes!("io_fixtures/v3_u2.npy");
    assert_eq!(npy::header(v3).unwrap().version, (3, 0));
    assert_eq!(
        npy::from_bytes::<u16>(v3).unwrap().to_vec(),
        vec![1, 2, 3, 65535]
    );

    let b = npy::from_bytes_any(include_bytes!("io_fixtures/bool0d.npy")).unwrap();
    assert!(
        matches!(b, AnyTensor::Bool(ref t) if t.shape().is_empty() && t.to_vec() == vec![true]),
        "{b:?}"
    );

    let mut z = NpzFile::from_bytes(include_bytes!("io_fixtures/mixed.npz").to_vec()).unwrap();
    assert_eq!(z.names(), &["x", "y", "z"]);
    assert_eq!(z.tensor::<f32>("x").unwrap().to_vec(), vec![1.5, 2.5]);
    let y = z.tensor::<i64>("y").unwrap();
    assert_eq!((y.shape(), y.to_vec()), (&[1usize, 2][..], vec![1, -2]));
    assert_eq!(z.tensor::<u8>("z").unwrap().shape(), &[0, 3]);
    assert_eq!(z.read_all().unwrap().len(), 3);
}

#[test]
fn npz_round_trips_stored_and_deflated() {
    let mut rng = Rng(0x2a2);
    let a = random_tensor::<f64>(&mut rng);
    let b = Tensor::from_vec(&[2, 3], vec![1u32, 2, 3, 4, 5, 6]).unwrap();
    let bt = b.t();
    let c = Tensor::from_vec(&[2], vec![bf16::ONE, bf16::ZERO]).unwrap();
    let dir = temp_dir("npz-round");
    for compression in [Compression::Stored, Compression::Deflated] {
        let path = dir.join("z.npz");
        npz::save(
            &path,
            [("a", (&a).into()), ("bt", (&bt).into())],
            compression,
        )
        .unwrap();
        let mut z = NpzFile::open(&path).unwrap();
        assert_eq!(z.names(), &["a", "bt"]);
        assert_eq!(z.tensor::<f64>("a").unwrap().to_vec(), a.to_vec());
        assert_eq!(
            z.tensor::<u32>("bt").unwrap().to_vec(),
            vec![1, 4, 2, 5, 3, 6]
        );
        assert_eq!(z.header("bt").unwrap().shape, vec![3, 2]);
        let all = z.read_all().unwrap();
        assert_eq!(all[1].1.dtype(), DType::U32);
        let bytes = npz::to_bytes([("b", TensorRef::from(&b))], compression).unwrap();
        assert_eq!(
            NpzFile::from_bytes(bytes)
                .unwrap()
                .tensor::<u32>("b")
                .unwrap()
                .to_vec(),
            b.to_vec()
        );
        let e = io_err(npz::to_bytes([("c", TensorRef::from(&c))], compression).unwrap_err());
        assert!(matches!(e, IoError::Unsupported { .. }), "{e}");
        let e = io_err(z.tensor::<f64>("nope").unwrap_err());
        assert!(matches!(e, IoError::NotFound { .. }), "{e}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// Files written here read by numpy (`np.load`), and files numpy writes (C and Fortran
/// order, big-endian, `savez_compressed`) read here. Prints `skipped: ...` and checks nothing
/// without python3 and numpy.
#[test]
fn python_numpy_interop_or_skip() {
    if !python_has("python_numpy_interop_or_skip", &["numpy"]) {
        return;
    }
    let dir = temp_dir("npy-python");
    let mut rng = Rng(0x1234);
    let a = random_tensor::<f32>(&mut rng);
    let h = Tensor::from_vec(&[2, 2], vec![0.5f64, -1.0, 2.0, 6e4])
        .unwrap()
        .cast::<f16>()
        .unwrap();
    let m = Tensor::from_vec(&[3], vec![true, false, true]).unwrap();
    let i = Tensor::from_vec(&[2, 3], vec![-1i8, 2, -3, 4, -5, 6]).unwrap();
    let it = i.t();
    npy::save(dir.join("a.npy"), &a).unwrap();
    npy::save(dir.join("h.npy"), &h).unwrap();
    npy::save(dir.join("m.npy"), &m).unwrap();
    npy::save(dir.join("it.npy"), &it).unwrap();
    npz::save(
        dir.join("z.npz"),
        [("a", (&a).into()), ("it", (&it).into())],
        Compression::Deflated,
    )
    .unwrap();
    let script = r#"
import sys, json, os, numpy as np
d = sys.argv[1]
out = {}
for n in ['a', 'h', 'm', 'it']:
    x = np.load(os.path.join(d, n + '.npy'))
    out[n] = [list(x.shape), x.dtype.str, x.astype('float64').ravel().view('uint64').tolist()]
z = np.load(os.path.join(d, 'z.npz'))
out['z'] = sorted(z.files)
out['zit'] = z['it'].astype('int64').ravel().tolist()
print(json.dumps(out))
"#;
    let got: serde_json::Value =
        serde_json::from_str(&python(script, &[dir.to_str().unwrap()])).unwrap();
    let check = |name: &str, shape: &[usize], descr: &str, values: Vec<f64>| {
        assert_eq!(got[name][0], serde_json::json!(shape), "{name}");
        assert_eq!(got[name][1], descr, "{name}");
        // Compared as bits: decimal text would round the last digit.
        let bits: Vec<u64> = values.iter().map(|v| v.to_bits()).collect();
        assert_eq!(got[name][2], serde_json::json!(bits), "{name}");
    };
    check("a", a.shape(), "<f4", as_f64(&a.to_vec()));
    check("h", &[2, 2], "<f2", vec![0.5, -1.0, 2.0, 6e4]);
    check("m", &[3], "|b1", vec![1.0, 0.0, 1.0]);
    check("it", &[3, 2], "|i1", vec![-1.0, 4.0, 2.0, -5.0, -3.0, 6.0]);
    assert_eq!(got["z"], serde_json::json!(["a", "it"]));
    assert_eq!(got["zit"], serde_json::json!([-1, 4, 2, -5, -3, 6]));

    let script = r#"
import sys, os, numpy as np
d = sys.argv[1]
x = (np.arange(24).reshape(2, 3, 4) * 0.75 - 4)
np.save(os.path.join(d, 'c.npy'), x.astype('<f4'))
np.save(os.path.join(d, 'f.npy'), np.asfortranarray(x.astype('>f8')))
np.save(os.path.join(d, 'u.npy'), np.asfortranarray((np.arange(6).reshape(3, 2) * 11000).astype('>u8')))
np.savez_compressed(os.path.join(d, 'p.npz'), x=x.astype('<i2'), y=np.float16(1.5))
"#;
    python(script, &[dir.to_str().unwrap()]);
    let want: Vec<f64> = (0..24).map(|k| k as f64 * 0.75 - 4.0).collect();
    let c = npy::load::<f32>(dir.join("c.npy")).unwrap();
    assert_eq!(
        (c.shape(), as_f64(&c.to_vec())),
        (&[2usize, 3, 4][..], want.clone())
    );
    let f = npy::load::<f64>(dir.join("f.npy")).unwrap();
    assert_eq!((f.shape(), f.to_vec()), (&[2usize, 3, 4][..], want.clone()));
    let u = npy::load::<u64>(dir.join("u.npy")).unwrap();
    assert_eq!(u.to_vec(), (0..6).map(|k| k * 11000).collect::<Vec<u64>>());
    let mut p = NpzFile::open(dir.join("p.npz")).unwrap();
    let x = p.tensor::<i16>("x").unwrap();
    assert_eq!(
        as_f64(&x.to_vec()),
        want.iter().map(|v| v.trunc()).collect::<Vec<_>>()
    );
    assert_eq!(
        p.tensor::<f16>("y").unwrap().to_vec(),
        vec![f16::from_f32(1.5)]
    );
    std::fs::remove_dir_all(dir).unwrap();
}
