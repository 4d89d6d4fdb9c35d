//! safetensors files (issue 30): round trips of every element type and layout, typed errors,
//! Blobs, loading to a GPU, and files read and written by Python's `safetensors`.

use std::collections::HashMap;

use typestate_tensor::element::{DType, Element};
use typestate_tensor::error::{Error, IoError};
use typestate_tensor::half::{bf16, f16};
use typestate_tensor::io::blob::{blob_entries, load_blob, save_blob};
use typestate_tensor::io::{safetensors, AnyTensor, SafetensorsFile, TensorRef};
use typestate_tensor::synced::Blob;
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

/// Writes every layout of random tensors of `T` (to a file, to bytes, to a writer) and reads
/// each back borrowed, mapped and copied.
fn round_trip<T: Element>(seed: u64) {
    let mut rng = Rng(seed + T::DTYPE as u64 * 7919);
    let dir = temp_dir(&format!("st-round-{}", T::NAME));
    let path = dir.join("t.safetensors");
    for case in 0..12 {
        let t = random_tensor::<T>(&mut rng);
        let vs = views(&t);
        let entries: Vec<(String, TensorRef<'_>)> = vs
            .iter()
            .map(|(name, v)| (name.to_string(), TensorRef::from_view(v.clone())))
            .collect();
        let meta = HashMap::from([("case".to_string(), case.to_string())]);
        safetensors::save(&path, entries, Some(&meta)).unwrap();
        let bytes = safetensors::to_bytes(
            vs.iter()
                .map(|(n, v)| (*n, TensorRef::from_view(v.clone()))),
            None,
        )
        .unwrap();
        let mut written = Vec::new();
        safetensors::write(
            &mut written,
            vs.iter()
                .map(|(n, v)| (*n, TensorRef::from_view(v.clone()))),
            None,
        )
        .unwrap();
        assert_eq!(bytes, written);

        let file = SafetensorsFile::open(&path).unwrap();
        // SAFETY: this test alone writes the file, and not while it is mapped.
        let mapped = unsafe { SafetensorsFile::map(&path) }.unwrap();
        let in_memory = SafetensorsFile::from_bytes(&bytes).unwrap();
        assert_eq!(file.metadata()["case"], case.to_string());
        assert!(in_memory.metadata().is_empty());
        for (name, v) in &vs {
            let want = reference(v);
            for f in [&file, &mapped, &in_memory] {
                let info = f.info(name).unwrap();
                assert_eq!(
                    (info.dtype, &info.shape[..]),
                    (Some(T::DTYPE), v.shape()),
                    "{name}"
                );
                // Written by this crate: aligned, so borrowed without a copy.
                let view = f.view::<T>(name).unwrap();
                assert_eq!(
                    (view.shape(), reference(&view)),
                    (v.shape(), want.clone()),
                    "{name} {case}"
                );
                // No copy per call: two views of one tensor borrow the same bytes.
                let again = f.view::<T>(name).unwrap();
                assert_eq!(view.storage().as_ptr(), again.storage().as_ptr());
                let copy = f.tensor::<T>(name).unwrap();
                assert_eq!(copy.to_vec(), want, "{name} {case}");
                let any = f.tensor_any(name).unwrap();
                assert_eq!(any.dtype(), T::DTYPE);
                assert_eq!(any.into_typed::<T>().unwrap().to_vec(), want);
            }
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn every_type_and_layout_round_trips() {
    for_each_type!(round_trip(0x5afe));
}

#[test]
fn wrong_type_missing_name_and_listing() {
    let a = Tensor::from_vec(&[2, 2], vec![1i64, -2, 3, -4]).unwrap();
    let b = Tensor::from_vec(
        &[3],
        vec![
            bf16::from_f32(1.5),
            bf16::from_f32(-2.0),
            bf16::from_f32(0.25),
        ],
    )
    .unwrap();
    let c = Tensor::from_vec(&[], vec![f16::from_f32(3.0)]).unwrap();
    let bytes = safetensors::to_bytes(
        [("a", (&a).into()), ("b", (&b).into()), ("c", (&c).into())],
        None,
    )
    .unwrap();
    let f = SafetensorsFile::from_bytes(&bytes).unwrap();
    let listed: Vec<(String, Option<DType>, Vec<usize>)> = f
        .tensors()
        .iter()
        .map(|t| (t.name.clone(), t.dtype, t.shape.clone()))
        .collect();
    // Sorted by descending alignment (i64 first), so every tensor is aligned.
    assert_eq!(
        listed,
        vec![
            ("a".into(), Some(DType::I64), vec![2, 2]),
            ("b".into(), Some(DType::BF16), vec![3]),
            ("c".into(), Some(DType::F16), vec![]),
        ]
    );
    let e = f.tensor::<f32>("a").unwrap_err();
    let msg = e.to_string();
    assert!(
        matches!(io_err(e), IoError::DTypeMismatch { ref tensor, ref file_dtype, requested: DType::F32, .. } if tensor == "a" && file_dtype == "i64"),
        "{msg}"
    );
    assert!(
        msg.contains("`a`") && msg.contains("i64") && msg.contains("f32"),
        "{msg}"
    );
    let e = io_err(f.view::<i64>("nope").unwrap_err());
    assert!(
        matches!(e, IoError::NotFound { ref available, .. } if available.len() == 3),
        "{e}"
    );
    assert_eq!(
        f.tensor::<f16>("c").unwrap().to_vec(),
        vec![f16::from_f32(3.0)]
    );
    // Duplicate and reserved names are refused at the write.
    let e =
        io_err(safetensors::to_bytes([("a", (&a).into()), ("a", (&a).into())], None).unwrap_err());
    assert!(matches!(e, IoError::DuplicateName { .. }), "{e}");
    assert!(safetensors::to_bytes([("__metadata__", (&a).into())], None).is_err());
}

/// A hand-made header whose tensor starts at an odd offset: borrowing it is refused with
/// `Misaligned`, copying works; an 8-bit float type is listed with no dtype of ours.
#[test]
fn misaligned_and_unknown_types() {
    let header = br#"{"pad":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"x":{"dtype":"F32","shape":[2],"data_offsets":[1,9]},"q":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[9,11]}}"#;
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(header);
    bytes.push(7);
    bytes.extend_from_slice(&1.5f32.to_le_bytes());
    bytes.extend_from_slice(&(-2.0f32).to_le_bytes());
    bytes.extend_from_slice(&[1, 2]);
    // `from_bytes` aligns the start of the buffer, so "x" sits at an odd address.
    let f = SafetensorsFile::from_bytes(&bytes).unwrap();
    let e = io_err(f.view::<f32>("x").unwrap_err());
    assert!(matches!(e, IoError::Misaligned { align: 4, .. }), "{e}");
    assert_eq!(f.tensor::<f32>("x").unwrap().to_vec(), vec![1.5, -2.0]);
    assert_eq!(f.info("q").unwrap().dtype, None);
    assert_eq!(f.info("q").unwrap().file_dtype, "F8_E4M3");
    let e = io_err(f.tensor_any("q").unwrap_err());
    assert!(
        matches!(e, IoError::UnknownDtype { ref dtype, .. } if dtype == "F8_E4M3"),
        "{e}"
    );
}

#[test]
fn blob_data_and_diff_round_trip() {
    let dir = temp_dir("st-blob");
    let path = dir.join("blob.safetensors");
    let mut rng = Rng(0xb10b);
    let data: Vec<f32> = (0..24).map(|_| rng.unit() as f32).collect();
    let diff: Vec<f32> = (0..24).map(|_| rng.unit() as f32).collect();
    let mut blob = Blob::from_vec(&[2, 3, 4], data.clone())
        .unwrap()
        .into_cpu_diff_mut()
        .unwrap();
    blob.cpu_diff_mut().copy_from_slice(&diff);
    save_blob(&path, "conv1", &blob, None).unwrap();
    let back = load_blob::<f32>(&path, "conv1").unwrap();
    assert_eq!(back.shape().dims(), &[2, 3, 4]);
    assert_eq!((back.cpu_data(), back.cpu_diff()), (&data[..], &diff[..]));
    // Several blobs and tensors in one file.
    let other = Tensor::from_vec(&[2], vec![1u8, 2]).unwrap();
    let mut entries: Vec<(String, TensorRef<'_>)> = blob_entries("a", &blob).unwrap().into();
    entries.extend(blob_entries("b", &back).unwrap());
    entries.push(("step".into(), (&other).into()));
    safetensors::save(&path, entries, None).unwrap();
    let f = SafetensorsFile::open(&path).unwrap();
    assert_eq!(f.blob::<f32>("b").unwrap().cpu_diff(), &diff[..]);
    assert!(f.blob::<f64>("a").is_err());
    assert!(matches!(
        io_err(f.blob::<f32>("step").unwrap_err()),
        IoError::NotFound { .. }
    ));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn fixture_written_by_python_safetensors() {
    let f = SafetensorsFile::from_bytes(include_bytes!("io_fixtures/numpy.safetensors")).unwrap();
    assert_eq!(f.metadata()["by"], "numpy");
    assert_eq!(f.tensor::<i16>("a").unwrap().shape(), &[1, 3]);
    assert_eq!(f.view::<i16>("a").unwrap().to_vec(), vec![1, 2, 3]);
    assert_eq!(f.tensor::<f64>("b").unwrap().to_vec(), vec![0.25, -8.0]);
    assert!(matches!(f.tensor_any("c").unwrap(), AnyTensor::Bool(t) if t.to_vec() == vec![true]));
}

/// Files written here read by Python's `safetensors.numpy.load_file`, and files it writes read
/// here. Prints `skipped: ...` and checks nothing without python3, numpy and safetensors.
#[test]
fn python_safetensors_interop_or_skip() {
    if !python_has(
        "python_safetensors_interop_or_skip",
        &["numpy", "safetensors"],
    ) {
        return;
    }
    let dir = temp_dir("st-python");
    let ours = dir.join("ours.safetensors");
    let mut rng = Rng(0x9e37);
    let a = random_tensor::<f32>(&mut rng);
    let b = Tensor::from_vec(&[2, 3], vec![1i64, -2, 3, -4, 5, -6]).unwrap();
    let h = Tensor::from_vec(
        &[3],
        vec![f16::from_f32(0.5), f16::from_f32(-3.0), f16::from_f32(1e-3)],
    )
    .unwrap();
    let bt = b.t();
    let meta = HashMap::from([("k".to_string(), "v".to_string())]);
    safetensors::save(
        &ours,
        [("a", (&a).into()), ("bt", (&bt).into()), ("h", (&h).into())],
        Some(&meta),
    )
    .unwrap();
    let script = r#"
import sys, json
from safetensors.numpy import load_file
from safetensors import safe_open
t = load_file(sys.argv[1])
with safe_open(sys.argv[1], 'np') as f:
    meta = f.metadata()
print(json.dumps({k: [list(v.shape), str(v.dtype), v.astype('float64').ravel().view('uint64').tolist()] for k, v in t.items()} | {'__meta': meta}))
"#;
    let out = python(script, &[ours.to_str().unwrap()]);
    let got: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(got["__meta"]["k"], "v");
    let check = |name: &str, shape: &[usize], dtype: &str, values: Vec<f64>| {
        assert_eq!(got[name][0], serde_json::json!(shape), "{name}");
        assert_eq!(got[name][1], dtype, "{name}");
        // Compared as bits: decimal text would round the last digit.
        let bits: Vec<u64> = values.iter().map(|v| v.to_bits()).collect();
        assert_eq!(got[name][2], serde_json::json!(bits), "{name}");
    };
    check("a", a.shape(), "float32", as_f64(&a.to_vec()));
    check(
        "bt",
        &[3, 2],
        "int64",
        vec![1.0, -4.0, -2.0, 5.0, 3.0, -6.0],
    );
    check("h", &[3], "float16", as_f64(&h.to_vec()));

    let theirs = dir.join("theirs.safetensors");
    let script = r#"
import sys, numpy as np
from safetensors.numpy import save_file
save_file({'w': (np.arange(12, dtype=np.float32).reshape(3, 4) - 5.5) / 3, 'u': np.array([7, 65535], dtype=np.uint16), 'e': np.zeros((0, 2), dtype=np.int8)}, sys.argv[1], metadata={'from': 'python'})
"#;
    python(script, &[theirs.to_str().unwrap()]);
    let f = SafetensorsFile::open(&theirs).unwrap();
    assert_eq!(f.metadata()["from"], "python");
    let w = f.tensor::<f32>("w").unwrap();
    let want: Vec<f32> = (0..12).map(|i| (i as f32 - 5.5) / 3.0).collect();
    assert_eq!((w.shape(), w.to_vec()), (&[3usize, 4][..], want));
    assert_eq!(f.tensor::<u16>("u").unwrap().to_vec(), vec![7, 65535]);
    assert_eq!(f.tensor::<i8>("e").unwrap().shape(), &[0, 2]);
    std::fs::remove_dir_all(dir).unwrap();
}

/// Files written here read by PyTorch (`safetensors.torch.load_file`), and files PyTorch writes
/// (`safetensors.torch.save_file`) read here, with the types NumPy has not (`bf16`) and
/// PyTorch's own strided tensors made contiguous by it. Prints `skipped: ...` and checks
/// nothing without python3, torch and safetensors (the device machine has them).
#[test]
fn torch_safetensors_interop_or_skip() {
    if !python_has(
        "torch_safetensors_interop_or_skip",
        &["torch", "safetensors"],
    ) {
        return;
    }
    let dir = temp_dir("st-torch");
    let ours = dir.join("ours.safetensors");
    let mut rng = Rng(0x7a11);
    let a = random_tensor::<f32>(&mut rng);
    let values = [0.5f32, -3.0, 1e-3, 65504.0, -0.0, 2.75];
    let hb = Tensor::from_vec(&[2, 3], values.map(bf16::from_f32).to_vec()).unwrap();
    let hbt = hb.t();
    let h = Tensor::from_vec(&[6], values.map(f16::from_f32).to_vec()).unwrap();
    let flags = Tensor::from_vec(&[4], vec![true, false, false, true]).unwrap();
    safetensors::save(
        &ours,
        [
            ("a", (&a).into()),
            ("hbt", (&hbt).into()),
            ("h", (&h).into()),
            ("flags", (&flags).into()),
        ],
        None,
    )
    .unwrap();
    let script = r#"
import sys, json, torch
from safetensors.torch import load_file
t = load_file(sys.argv[1])
print(json.dumps({k: [list(v.shape), str(v.dtype), v.double().flatten().numpy().view('uint64').tolist()] for k, v in t.items()}))
"#;
    let out = python(script, &[ours.to_str().unwrap()]);
    let got: serde_json::Value = serde_json::from_str(&out).unwrap();
    let check = |name: &str, shape: &[usize], dtype: &str, values: Vec<f64>| {
        assert_eq!(got[name][0], serde_json::json!(shape), "{name}");
        assert_eq!(got[name][1], dtype, "{name}");
        let bits: Vec<u64> = values.iter().map(|v| v.to_bits()).collect();
        assert_eq!(got[name][2], serde_json::json!(bits), "{name}");
    };
    check("a", a.shape(), "torch.float32", as_f64(&a.to_vec()));
    check("hbt", &[3, 2], "torch.bfloat16", as_f64(&hbt.to_vec()));
    check("h", &[6], "torch.float16", as_f64(&h.to_vec()));
    check("flags", &[4], "torch.bool", vec![1.0, 0.0, 0.0, 1.0]);

    let theirs = dir.join("theirs.safetensors");
    let script = r#"
import sys, torch
from safetensors.torch import save_file
w = ((torch.arange(12, dtype=torch.float32).reshape(3, 4) - 5.5) / 3)
save_file({'wt': w.t().contiguous(), 'b': w.to(torch.bfloat16), 'i': torch.tensor([-7, 2**40], dtype=torch.int64)}, sys.argv[1], metadata={'from': 'torch'})
"#;
    python(script, &[theirs.to_str().unwrap()]);
    let f = SafetensorsFile::open(&theirs).unwrap();
    assert_eq!(f.metadata()["from"], "torch");
    let w: Vec<f32> = (0..12).map(|i| (i as f32 - 5.5) / 3.0).collect();
    let wt: Vec<f32> = (0..12).map(|k| w[(k % 3) * 4 + k / 3]).collect();
    let got_wt = f.tensor::<f32>("wt").unwrap();
    assert_eq!((got_wt.shape(), got_wt.to_vec()), (&[4usize, 3][..], wt));
    let b: Vec<bf16> = w.iter().map(|&x| bf16::from_f32(x)).collect();
    assert_eq!(f.tensor::<bf16>("b").unwrap().to_vec(), b);
    assert_eq!(f.tensor::<i64>("i").unwrap().to_vec(), vec![-7, 1 << 40]);
    std::fs::remove_dir_all(dir).unwrap();
}
