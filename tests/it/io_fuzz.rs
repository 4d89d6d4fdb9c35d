//! Bad files (issue 30): valid safetensors, npy and npz files, mutated thousands of times
//! (bit flips, truncations, inserted and deleted bytes, header numbers replaced by huge or
//! random ones), must each read as `Ok` or a typed error: never a panic (caught with
//! `catch_unwind` and reported with its seed), never a read out of bounds. Deterministic: the
//! seeds are fixed, so CI runs the same cases every time; a few seconds on two cores.

use std::io::Cursor;
use std::panic::{catch_unwind, AssertUnwindSafe};

use typestate_tensor::element::DType;
use typestate_tensor::error::{Error, IoError};
use typestate_tensor::half::f16;
use typestate_tensor::io::npz::{self, Compression, NpzFile};
use typestate_tensor::io::{npy, safetensors, SafetensorsFile, TensorRef};
use typestate_tensor::Tensor;

use crate::common::rng::Rng;
use crate::io_util::random_vec;

/// Cases per format.
const CASES: u64 = 1500;

#[derive(Clone, Copy, Debug)]
enum Format {
    Safetensors,
    Npy,
    Npz(Compression),
}

/// A small valid file of `format` with a few random tensors.
fn valid_file(rng: &mut Rng, format: Format) -> Vec<u8> {
    let a = Tensor::from_vec(&[2, 3], random_vec::<f32>(rng, 6)).unwrap();
    let n = rng.below(4);
    let b = Tensor::from_vec(&[n], random_vec::<i64>(rng, n)).unwrap();
    let c = Tensor::from_vec(&[], random_vec::<f16>(rng, 1)).unwrap();
    let d = Tensor::from_vec(&[3], vec![true, false, true]).unwrap();
    let at = a.t();
    let entries = || -> Vec<(&str, TensorRef<'_>)> {
        vec![
            ("a", (&a).into()),
            ("at", (&at).into()),
            ("b", (&b).into()),
            ("c", (&c).into()),
            ("d", (&d).into()),
        ]
    };
    match format {
        Format::Safetensors => {
            let meta = std::collections::HashMap::from([("k".to_string(), "v".to_string())]);
            safetensors::to_bytes(entries(), Some(&meta)).unwrap()
        }
        Format::Npy => npy::to_bytes(&at).unwrap(),
        Format::Npz(c) => npz::to_bytes(entries(), c).unwrap(),
    }
}

const NUMBERS: [&str; 8] = [
    "0",
    "1",
    "18446744073709551615",
    "18446744073709551616",
    "9223372036854775807",
    "4294967296",
    "99999999999999999999999999",
    "65536",
];

/// Applies one to four random mutations.
fn mutate(rng: &mut Rng, bytes: &mut Vec<u8>) {
    for _ in 0..1 + rng.below(4) {
        let len = bytes.len().max(1);
        match rng.below(7) {
            0 | 1 => {
                if !bytes.is_empty() {
                    let i = rng.below(len);
                    bytes[i] ^= 1 << rng.below(8);
                }
            }
            2 => bytes.truncate(rng.below(len)),
            3 => {
                let at = rng.below(len + 1).min(bytes.len());
                let n = 1 + rng.below(8);
                for _ in 0..n {
                    bytes.insert(at, rng.next() as u8);
                }
            }
            4 => {
                let at = rng.below(len).min(bytes.len());
                let end = (at + 1 + rng.below(16)).min(bytes.len());
                bytes.drain(at..end);
            }
            5 => {
                // A number in the header (a dim, an offset, a length) replaced.
                let head = bytes.len().min(600);
                let runs: Vec<usize> = (0..head)
                    .filter(|&i| {
                        bytes[i].is_ascii_digit() && (i == 0 || !bytes[i - 1].is_ascii_digit())
                    })
                    .collect();
                if !runs.is_empty() {
                    let start = runs[rng.below(runs.len())];
                    let end = (start..bytes.len())
                        .find(|&i| !bytes[i].is_ascii_digit())
                        .unwrap_or(bytes.len());
                    let new = if rng.below(2) == 0 {
                        NUMBERS[rng.below(NUMBERS.len())].to_string()
                    } else {
                        rng.below(1 << 20).to_string()
                    };
                    bytes.splice(start..end, new.into_bytes());
                }
            }
            _ => {
                // A binary length field (safetensors' first 8 bytes, npy's at 8..12).
                let at = [0, 4, 8, 10][rng.below(4)];
                if bytes.len() >= at + 4 {
                    bytes[at..at + 4]
                        .copy_from_slice(&(rng.next() as u32 >> rng.below(32)).to_le_bytes());
                }
            }
        }
    }
}

/// Reads `bytes` through every reader of `format`; every failure must be a typed error.
fn read_everything(bytes: &[u8], format: Format) -> usize {
    let mut oks = 0;
    // Any `Err` is a typed error (the type system says so); what matters is reaching it
    // without a panic.
    let mut ok = |r: Result<(), Error>| oks += usize::from(r.is_ok());
    match format {
        Format::Safetensors => {
            if let Ok(f) = SafetensorsFile::from_bytes(bytes) {
                let _ = f.metadata().len();
                for info in f.tensors().to_vec() {
                    ok(f.tensor_any(&info.name)
                        .map(|t| assert_eq!(Some(t.dtype()), info.dtype)));
                    ok(f.view::<f32>(&info.name)
                        .map(|v| assert_eq!(v.to_vec().len(), v.numel())));
                    ok(f.tensor::<bool>(&info.name).map(drop));
                }
                oks += 1;
            }
        }
        Format::Npy => {
            ok(npy::from_bytes_any(bytes).map(drop));
            ok(npy::header(bytes).map(drop));
            ok(npy::read::<f32>(Cursor::new(bytes)).map(drop));
        }
        Format::Npz(_) => {
            if let Ok(mut z) = NpzFile::from_bytes(bytes.to_vec()) {
                for name in z.names().to_vec() {
                    ok(z.header(&name).map(drop));
                    ok(z.tensor::<f32>(&name).map(drop));
                }
                ok(z.read_all().map(drop));
            }
        }
    }
    oks
}

fn fuzz(format: Format, seed: u64) {
    let mut oks = 0;
    for case in 0..CASES {
        let case_seed = seed ^ (case + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let mut rng = Rng(case_seed | 1);
        let mut bytes = valid_file(&mut rng, format);
        mutate(&mut rng, &mut bytes);
        let result = catch_unwind(AssertUnwindSafe(|| read_everything(&bytes, format)));
        match result {
            Ok(n) => oks += n,
            Err(_) => panic!("{format:?}: a reader panicked on case {case} (seed {case_seed:#x}); the file: {bytes:?}"),
        }
    }
    // Some mutations leave the file valid (a flipped data bit): the readers were exercised.
    assert!(oks > 0, "{format:?}: no case read");
    println!("{format:?}: {CASES} mutated files, {oks} reads succeeded");
}

#[test]
fn mutated_safetensors_are_typed_errors() {
    fuzz(Format::Safetensors, 0x5afe_7e45);
}

#[test]
fn mutated_npy_are_typed_errors() {
    fuzz(Format::Npy, 0x4e9_f11e);
}

#[test]
fn mutated_npz_are_typed_errors() {
    fuzz(Format::Npz(Compression::Stored), 0x2a2_5707);
    fuzz(Format::Npz(Compression::Deflated), 0x2a2_def1);
}

fn io_err(e: Error) -> IoError {
    match e {
        Error::Io(e) => *e,
        other => panic!("expected an IoError, got {other:?}"),
    }
}

/// Lies a mutation finds only by chance, written out.
#[test]
fn lying_headers_are_named() {
    let npy_with = |dict: &str, data: &[u8]| {
        let mut b = b"\x93NUMPY\x01\x00".to_vec();
        b.extend_from_slice(&(dict.len() as u16).to_le_bytes());
        b.extend_from_slice(dict.as_bytes());
        b.extend_from_slice(data);
        b
    };
    // A shape whose byte size overflows, one larger than the file, one that fits.
    let huge = npy_with(
        "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }\n",
        &[0; 8],
    );
    assert!(matches!(
        io_err(npy::from_bytes::<f32>(&huge).unwrap_err()),
        IoError::TooLarge { .. }
    ));
    let big = npy_with(
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000,), }\n",
        &[0; 8],
    );
    let e = io_err(npy::read::<f32>(Cursor::new(&big)).unwrap_err());
    assert!(
        matches!(
            e,
            IoError::Truncated {
                expected: 4_000_000,
                available: 8,
                ..
            }
        ),
        "{e}"
    );
    let unknown = npy_with(
        "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }\n",
        &[0; 8],
    );
    assert!(
        matches!(io_err(npy::from_bytes_any(&unknown).unwrap_err()), IoError::UnknownDtype { ref dtype, .. } if dtype == "<c8")
    );
    let bad_bool = npy_with(
        "{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }\n",
        &[1, 7],
    );
    assert!(matches!(
        io_err(npy::from_bytes::<bool>(&bad_bool).unwrap_err()),
        IoError::InvalidBool {
            byte: 7,
            index: 1,
            ..
        }
    ));

    let st_with = |header: &str, data: &[u8]| {
        let mut b = (header.len() as u64).to_le_bytes().to_vec();
        b.extend_from_slice(header.as_bytes());
        b.extend_from_slice(data);
        b
    };
    // Overlapping tensors, offsets past the end, a shape whose size overflows, a header
    // length past the end, bytes after the last tensor.
    let cases = [
        st_with(
            r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}"#,
            &[0; 12],
        ),
        st_with(
            r#"{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}"#,
            &[0; 8],
        ),
        st_with(
            r#"{"a":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,0]}}"#,
            &[],
        ),
        st_with(
            r#"{"a":{"dtype":"U8","shape":[18446744073709551615],"data_offsets":[0,18446744073709551615]}}"#,
            &[0; 8],
        ),
        st_with(
            r#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}"#,
            &[0; 5],
        ),
        st_with(
            r#"{"a":{"dtype":"Q4","shape":[1],"data_offsets":[0,1]}}"#,
            &[0],
        ),
    ];
    for (i, bytes) in cases.iter().enumerate() {
        let e = io_err(SafetensorsFile::from_bytes(bytes).unwrap_err());
        assert!(
            matches!(e, IoError::BadHeader { .. } | IoError::Truncated { .. }),
            "case {i}: {e}"
        );
    }
    let mut lying_len = st_with(r#"{}"#, &[]);
    lying_len[..8].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(SafetensorsFile::from_bytes(&lying_len).is_err());
    assert_eq!(DType::F32.size_in_bytes(), 4);
}
