//! Softmax, log-softmax, layer norm and RMS norm bandwidth (issue 28): 65536 rows of 1024 and
//! of 4096, f32 and bf16, the same cases as `scripts/bench_torch_norm.py`, beside the copy
//! bandwidth measured in the same run.
//!
//! ```text
//! cargo run --release -p typestate-tensor-bench --example gpu_norm_bench -- [--json ours.json] [--repeats 20]
//! python3 scripts/bench_torch_norm.py --compare ours.json
//! ```
//!
//! Each case: random data (uniform in [-1, 1)), three warm-up calls (the first compiles the
//! kernel), then the median of `--repeats` CUDA-event timings of one call of the tensor
//! method (`x.softmax(-1)`, `x.layer_norm(&[n], Some(w), Some(b), 1e-5)`, ...) on the default
//! stream, output allocation included, as PyTorch's calls allocate theirs. GB/s counts the
//! bytes read plus written (`2·rows·n·size`; the weight and bias are not counted). "copy" is
//! `dst.copy_from(&x)` of the same `[rows, n]` tensor into a preallocated one (read + write).
//! Each result is spot-checked on 4 rows against the CPU engine. Without a GPU it says so and
//! exits.
//!
//! The `fused_*` cases are row stages inside fused expressions (one kernel each here):
//! `fused_softmax` is `(x.lazy() * 0.125).softmax(-1)` (PyTorch: `torch.softmax(x * 0.125,
//! -1)`), `fused_layer_norm` is `x.lazy().layer_norm(1e-5) * &w + &b` (PyTorch's
//! `F.layer_norm` with weight and bias), `fused_softmax_mul` is `x.lazy().softmax(-1) * &y`
//! with `y` of `x`'s shape (it reads 3 tensors: `3·rows·n·size` bytes), `fused_centre` is
//! `x.lazy() - x.lazy().mean_keepdim(-1)` (PyTorch: `x - x.mean(-1, keepdim=True)`).

use std::fmt::Write as _;

use half::bf16;

use typestate_tensor::element::{Element, FloatElement};
use typestate_tensor::gpu::Gpu;
use typestate_tensor::tensor::normalize::NormalizeBackend;
use typestate_tensor::tensor::{expr, Tensor};
use typestate_tensor::Cpu;

mod common;

use common::{time_ms, Res};

const ROWS: usize = 65536;
const OPS: [&str; 8] = [
    "softmax",
    "log_softmax",
    "layer_norm",
    "rms_norm",
    "fused_softmax",
    "fused_layer_norm",
    "fused_softmax_mul",
    "fused_centre",
];

/// Tensors of `[rows, n]` an op reads or writes (the weight and bias not counted).
fn tensors_moved(op: &str) -> f64 {
    if op == "fused_softmax_mul" {
        3.0
    } else {
        2.0
    }
}

fn options() -> Res<(Option<String>, usize)> {
    let (mut json, mut repeats) = (None, 20);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--json" => json = Some(value()?),
            "--repeats" => repeats = value()?.parse()?,
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    Ok((json, repeats.max(1)))
}

/// Uniform in [-1, 1), from a fixed xorshift seed.
fn random<T: Element>(n: usize, seed: u64) -> Vec<T> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            T::from_f64(2.0 * ((s >> 11) as f64 / (1u64 << 53) as f64) - 1.0)
        })
        .collect()
}

/// `op` of `x` with the weight and bias `w`, `b` (layer norm: both; RMS norm: the weight)
/// and the second input `y`.
fn apply<T: FloatElement, D: NormalizeBackend<T>>(
    op: &str,
    x: &Tensor<T, D>,
    [w, b, y]: [&Tensor<T, D>; 3],
) -> Res<Tensor<T, D>> {
    let n = x.shape()[1];
    Ok(match op {
        "softmax" => x.softmax(-1)?,
        "log_softmax" => x.log_softmax(-1)?,
        "layer_norm" => x.layer_norm(&[n], Some(w.view()), Some(b.view()), 1e-5)?,
        "rms_norm" => x.rms_norm(&[n], Some(w.view()), Some(1e-6))?,
        "fused_softmax" => (x.lazy() * expr::scalar(T::from_f64(0.125)))
            .softmax(-1)
            .eval()?,
        "fused_layer_norm" => (x.lazy().layer_norm(1e-5) * w + b).eval()?,
        "fused_softmax_mul" => (x.lazy().softmax(-1) * y).eval()?,
        _ => (x.lazy() - x.lazy().mean_keepdim(-1)).eval()?,
    })
}

/// Times every op on `[ROWS, n]` of `T`, and the copy; pushes `(name, GB/s)`.
fn run<T: FloatElement>(
    gpu: &Gpu,
    n: usize,
    dtype: &str,
    repeats: usize,
    rows: &mut Vec<(String, f64)>,
) -> Res<()>
where
    Gpu: NormalizeBackend<T>,
    Cpu: NormalizeBackend<T>,
{
    let hx = random::<T>(ROWS * n, n as u64);
    let (hw, hb) = (random::<T>(n, 7), random::<T>(n, 8));
    let x = Tensor::<T, Gpu>::from_slice_on(&[ROWS, n], &hx, gpu)?;
    let w = Tensor::<T, Gpu>::from_slice_on(&[n], &hw, gpu)?;
    let b = Tensor::<T, Gpu>::from_slice_on(&[n], &hb, gpu)?;
    let hy = random::<T>(ROWS * n, n as u64 + 1);
    let y = Tensor::<T, Gpu>::from_slice_on(&[ROWS, n], &hy, gpu)?;
    let tensor_bytes = (ROWS * n * std::mem::size_of::<T>()) as f64;
    let stream = gpu.default_stream();
    let gbps = |ms: f64| 2.0 * tensor_bytes / (ms * 1e-3) / 1e9;
    let mut dst = Tensor::<T, Gpu>::zeros_on(&[ROWS, n], gpu)?;
    let copy = time_ms(stream, repeats, || Ok(dst.copy_from(&x)?))?;
    rows.push((format!("copy | {ROWS}x{n} | {dtype}"), gbps(copy)));
    // The CPU reference of 4 rows.
    let check_rows = 4;
    let cx = Tensor::<T, Cpu>::from_vec(&[check_rows, n], hx[..check_rows * n].to_vec())?;
    let (cw, cb) = (
        Tensor::from_vec(&[n], hw.clone())?,
        Tensor::from_vec(&[n], hb.clone())?,
    );
    let cy = Tensor::<T, Cpu>::from_vec(&[check_rows, n], hy[..check_rows * n].to_vec())?;
    for op in OPS {
        let got = apply(op, &x, [&w, &b, &y])?.to_cpu()?.to_vec();
        let want = apply(op, &cx, [&cw, &cb, &cy])?.to_vec();
        for (i, (g, r)) in got.iter().zip(&want).enumerate() {
            let (g, r) = (Element::to_f64(*g), Element::to_f64(*r));
            if (g - r).abs() > 2e-2 * (1.0 + r.abs()) {
                return Err(format!("{op} {dtype} {n}: element {i} = {g}, want {r}").into());
            }
        }
        let ms = time_ms(stream, repeats, || {
            apply(op, &x, [&w, &b, &y])?;
            Ok(())
        })?;
        let g = gbps(ms) * tensors_moved(op) / 2.0;
        rows.push((format!("{op} | {ROWS}x{n} | {dtype}"), g));
        println!(
            "| {op} | {ROWS}x{n} | {dtype} | {g:.0} | {:.2} |",
            g / gbps(copy)
        );
    }
    Ok(())
}

fn main() -> Res<()> {
    let (json, repeats) = options()?;
    if !Gpu::available() {
        println!("no CUDA driver: nothing to measure");
        return Ok(());
    }
    let gpu = Gpu::new(0)?;
    let mut rows = Vec::new();
    println!("| op | shape | dtype | GB/s | of copy |\n| --- | --- | --- | ---: | ---: |");
    for n in [1024, 4096] {
        run::<f32>(&gpu, n, "f32", repeats, &mut rows)?;
        run::<bf16>(&gpu, n, "bf16", repeats, &mut rows)?;
    }
    for (name, g) in rows.iter().filter(|(n, _)| n.starts_with("copy")) {
        println!("| {name} | {g:.0} |");
    }
    if let Some(path) = json {
        let mut s = String::from("{\n");
        for (i, (name, g)) in rows.iter().enumerate() {
            let comma = if i + 1 < rows.len() { "," } else { "" };
            let _ = writeln!(s, " \"{name}\": {g:.1}{comma}");
        }
        s.push('}');
        std::fs::write(path, s)?;
    }
    Ok(())
}
