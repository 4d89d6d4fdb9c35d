//! Helpers of the tensor-file tests (`io_safetensors`, `io_npy`, `io_fuzz`): random tensors of
//! every element type and their strided views, an independent row-major reference, temporary
//! folders, and Python (numpy, safetensors) when this machine has it.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;

use typestate_tensor::element::Element;
use typestate_tensor::tensor::{Tensor, TensorView};
use typestate_tensor::Cpu;

use crate::common::rng::Rng;

/// Calls `$f::<T>($($arg),*)` for every element type.
macro_rules! for_each_type {
    ($f:ident ( $($arg:expr),* )) => {{
        $f::<f32>($($arg),*);
        $f::<f64>($($arg),*);
        $f::<typestate_tensor::half::f16>($($arg),*);
        $f::<typestate_tensor::half::bf16>($($arg),*);
        $f::<i8>($($arg),*);
        $f::<i16>($($arg),*);
        $f::<i32>($($arg),*);
        $f::<i64>($($arg),*);
        $f::<u8>($($arg),*);
        $f::<u16>($($arg),*);
        $f::<u32>($($arg),*);
        $f::<u64>($($arg),*);
        $f::<bool>($($arg),*);
    }};
}
pub(crate) use for_each_type;

/// `n` values of `T`, in about [-120, 120) (0 or more for unsigned types; mostly `true` for
/// bool), never all zero for `n > 2`.
pub fn random_vec<T: Element>(rng: &mut Rng, n: usize) -> Vec<T> {
    (0..n)
        .map(|i| {
            let x = rng.unit() * 120.0;
            // Every third value positive, so unsigned types are not all zeros.
            T::from_f64(if i % 3 == 0 { x.abs() + 1.0 } else { x })
        })
        .collect()
}

/// A random shape of rank 0 to 4, dims 0 to 5 (a zero dim one time in eight).
pub fn random_shape(rng: &mut Rng) -> Vec<usize> {
    let rank = rng.below(5);
    (0..rank)
        .map(|_| {
            if rng.below(8) == 0 {
                0
            } else {
                1 + rng.below(5)
            }
        })
        .collect()
}

/// A random row-major tensor of `T`.
pub fn random_tensor<T: Element>(rng: &mut Rng) -> Tensor<T> {
    let shape = random_shape(rng);
    let n = shape.iter().product();
    Tensor::from_vec(&shape, random_vec(rng, n)).unwrap()
}

/// Views of `t` in every layout the tests write: itself, transposed (dims reversed),
/// stepped (every second element of the first dim), broadcast (a new leading dim of 3).
pub fn views<T: Element>(t: &Tensor<T>) -> Vec<(&'static str, TensorView<'_, T, Cpu>)> {
    let mut out = vec![("contiguous", t.view())];
    let rank = t.shape().len();
    if rank >= 2 {
        let perm: Vec<usize> = (0..rank).rev().collect();
        out.push(("transposed", t.permute(&perm).unwrap()));
    }
    if rank >= 1 {
        let len = t.shape()[0];
        out.push(("stepped", t.slice(0, 0, len, 2).unwrap()));
    }
    let mut shape = vec![3];
    shape.extend_from_slice(t.shape());
    out.push(("broadcast", t.broadcast_to(&shape).unwrap()));
    out
}

/// The elements of `v` in row-major order, read through its shape, strides and offset from
/// its storage: a reference that does not go through the crate's gathering.
pub fn reference<T: Element>(v: &TensorView<'_, T, Cpu>) -> Vec<T> {
    let (shape, strides) = (v.shape(), v.strides());
    let n: usize = shape.iter().product();
    let storage = v.storage();
    let mut idx = vec![0usize; shape.len()];
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let off = v.layout().offset() as isize
            + idx
                .iter()
                .zip(strides)
                .map(|(&i, &s)| i as isize * s)
                .sum::<isize>();
        out.push(storage[off as usize]);
        for d in (0..shape.len()).rev() {
            idx[d] += 1;
            if idx[d] < shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    out
}

/// A fresh empty folder for one test.
pub fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tt-io-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Whether `python3` can import every module of `modules`; prints `<test>: skipped: <why>`
/// when not, so a run without Python says what it did not check.
pub fn python_has(test: &str, modules: &[&str]) -> bool {
    let script = modules
        .iter()
        .map(|m| format!("import {m}"))
        .collect::<Vec<_>>()
        .join("; ");
    match Command::new("python3").arg("-c").arg(&script).output() {
        Ok(o) if o.status.success() => true,
        Ok(_) => {
            println!("{test}: skipped: python3 lacks one of {modules:?}");
            false
        }
        Err(e) => {
            println!("{test}: skipped: no python3 ({e})");
            false
        }
    }
}

/// Runs a Python script with `args`, asserting it succeeds; returns its standard output.
pub fn python(script: &str, args: &[&str]) -> String {
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "python failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The values of a tensor as `f64`s, for comparing with what Python prints.
pub fn as_f64<T: Element>(v: &[T]) -> Vec<f64> {
    v.iter().map(|x| x.to_f64()).collect()
}
