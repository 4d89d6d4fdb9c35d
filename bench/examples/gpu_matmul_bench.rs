//! Matrix multiply throughput (issue 27): the cases of `scripts/bench_torch_matmul.py`, in
//! TFLOP/s, f16 / bf16 / f32 (TF32 off and on): square 512 to 8192, tall-skinny
//! (65536x1024 · 1024x1024) and the reverse (1024x65536 · 65536x1024), 64 batched 512³
//! products, transposed operands (4096³ with `a` or `b` a transposed view), and the fused
//! `linear + bias + gelu(tanh)` of 16384x4096x4096 in f16 beside the linear alone.
//!
//! ```text
//! cargo run --release -p typestate-tensor-bench --example gpu_matmul_bench -- [--json ours.json] [--repeats 10] [--inner 1] [--only f16]
//! python3 scripts/bench_torch_matmul.py --compare ours.json
//! ```
//!
//! Each case: random data (uniform in [-1, 1)), three warm-up calls (the first asks cuBLASLt's
//! heuristic), then the median of `--repeats` CUDA-event timings of one call of the tensor
//! method (`a.matmul(&b)`, `x.matmul_with(&w.t()).bias(&b).gelu_tanh().eval()`) on the default
//! stream, output allocation included, as `torch.matmul` allocates its result. With
//! `--inner N`, each timing spans N calls queued back to back (divided by N), so that the
//! host's time between the two events hides behind the GPU's work. TFLOP/s counts
//! `2·m·n·k` per product. Every result is spot-checked against an f64 host sum on 32 elements
//! (relative 2e-2 of Σ|a||b|). Without a GPU it says so and exits.

use std::fmt::Write as _;

use half::{bf16, f16};

use typestate_tensor::element::{Element, FloatElement};
use typestate_tensor::gpu::Gpu;
use typestate_tensor::tensor::matmul::{Matmul, MatmulBackend};
use typestate_tensor::tensor::Tensor;

mod common;

use common::{time_ms, Res};

struct Options {
    json: Option<String>,
    repeats: usize,
    /// Calls per timing (back to back between the two events; the time is divided by it).
    inner: usize,
    only: Option<String>,
}

fn options() -> Res<Options> {
    let mut opts = Options {
        json: None,
        repeats: 10,
        inner: 1,
        only: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--json" => opts.json = Some(value()?),
            "--repeats" => opts.repeats = value()?.parse()?,
            "--only" => opts.only = Some(value()?),
            "--inner" => opts.inner = value()?.parse()?,
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    opts.repeats = opts.repeats.max(1);
    opts.inner = opts.inner.max(1);
    Ok(opts)
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

/// One product: `batch` x `[m, k] · [k, n]`; `ta` / `tb`: the operand is the transposed view
/// of a contiguous `[k, m]` / `[n, k]` tensor.
struct Case {
    name: String,
    batch: usize,
    m: usize,
    k: usize,
    n: usize,
    ta: bool,
    tb: bool,
}

fn cases() -> Vec<Case> {
    let c = |name: &str, batch, m, k, n, ta, tb| Case {
        name: name.to_owned(),
        batch,
        m,
        k,
        n,
        ta,
        tb,
    };
    let mut v: Vec<Case> = [512, 1024, 2048, 4096, 8192]
        .iter()
        .map(|&s| c(&format!("square {s}"), 1, s, s, s, false, false))
        .collect();
    v.push(c(
        "tall 65536x1024x1024",
        1,
        65536,
        1024,
        1024,
        false,
        false,
    ));
    v.push(c(
        "deep 1024x65536x1024",
        1,
        1024,
        65536,
        1024,
        false,
        false,
    ));
    v.push(c("batched 64x512^3", 64, 512, 512, 512, false, false));
    v.push(c("4096 a.T", 1, 4096, 4096, 4096, true, false));
    v.push(c("4096 b.T", 1, 4096, 4096, 4096, false, true));
    v
}

/// `(shape of the stored tensor, whether the view is its transpose)` of one operand.
fn stored(batch: usize, r: usize, c: usize, t: bool) -> Vec<usize> {
    let (r, c) = if t { (c, r) } else { (r, c) };
    if batch > 1 {
        vec![batch, r, c]
    } else {
        vec![r, c]
    }
}

/// Spot check of 32 elements of `out` (`[.., m, n]`) against f64 sums.
fn check<T: Element>(
    name: &str,
    a: &[T],
    b: &[T],
    out: &[T],
    case: &Case,
    f: impl Fn(f64) -> f64,
    bias: Option<&[T]>,
) -> Res<()> {
    let (m, k, n) = (case.m, case.k, case.n);
    let mut s = 7u64;
    for _ in 0..32 {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let (bi, i, j) = (
            (s >> 40) as usize % case.batch,
            (s >> 20) as usize % m,
            (s >> 4) as usize % n,
        );
        let ai = |p: usize| {
            if case.ta {
                bi * m * k + p * m + i
            } else {
                bi * m * k + i * k + p
            }
        };
        let bj = |p: usize| {
            if case.tb {
                bi * k * n + j * k + p
            } else {
                bi * k * n + p * n + j
            }
        };
        let (mut sum, mut mag) = (0.0, 0.0);
        for p in 0..k {
            let x = a[ai(p)].to_f64() * b[bj(p)].to_f64();
            sum += x;
            mag += x.abs();
        }
        let bias_j = bias.map_or(0.0, |v| v[j].to_f64());
        let want = f(sum + bias_j);
        let got = out[bi * m * n + i * n + j].to_f64();
        if (got - want).abs() > 2e-2 * (mag + bias_j.abs()) + 1e-3 {
            return Err(format!("{name}: [{bi}, {i}, {j}] = {got}, want {want}").into());
        }
    }
    Ok(())
}

/// Times one case for `T` and returns TFLOP/s.
fn run<T: FloatElement>(
    gpu: &Gpu,
    case: &Case,
    (repeats, inner): (usize, usize),
    tune: impl for<'v> Fn(Matmul<'v, T, Gpu>) -> Matmul<'v, T, Gpu>,
) -> Res<f64>
where
    Gpu: MatmulBackend<T>,
{
    let (sa, sb) = (
        stored(case.batch, case.m, case.k, case.ta),
        stored(case.batch, case.k, case.n, case.tb),
    );
    let (ha, hb) = (
        random::<T>(sa.iter().product(), 1),
        random::<T>(sb.iter().product(), 2),
    );
    let a = Tensor::<T, Gpu>::from_slice_on(&sa, &ha, gpu)?;
    let b = Tensor::<T, Gpu>::from_slice_on(&sb, &hb, gpu)?;
    let r = sa.len();
    let av = if case.ta {
        a.transpose(r - 2, r - 1)?
    } else {
        a.view()
    };
    let bv = if case.tb {
        b.transpose(r - 2, r - 1)?
    } else {
        b.view()
    };
    let call = || -> Res<Tensor<T, Gpu>> { Ok(tune(av.matmul_with(&bv)).eval()?) };
    let out = call()?.to_cpu()?.to_vec();
    check(&case.name, &ha, &hb, &out, case, |x| x, None)?;
    let ms = time_ms(gpu.default_stream(), repeats, || {
        for _ in 0..inner {
            call()?;
        }
        Ok(())
    })? / inner as f64;
    let flop = 2.0 * (case.batch * case.m * case.n) as f64 * case.k as f64;
    Ok(flop / (ms * 1e-3) / 1e12)
}

/// The fused `gelu_tanh(x·wᵀ + b)` of 16384x4096x4096 in f16, and the linear alone.
fn epilogue(gpu: &Gpu, (repeats, inner): (usize, usize)) -> Res<(f64, f64)> {
    let (m, k, n) = (16384, 4096, 4096);
    let (hx, hw, hb) = (
        random::<f16>(m * k, 3),
        random::<f16>(n * k, 4),
        random::<f16>(n, 5),
    );
    let x = Tensor::<f16, Gpu>::from_slice_on(&[m, k], &hx, gpu)?;
    let w = Tensor::<f16, Gpu>::from_slice_on(&[n, k], &hw, gpu)?;
    let b = Tensor::<f16, Gpu>::from_slice_on(&[n], &hb, gpu)?;
    let wt = w.t();
    let fused = || -> Res<Tensor<f16, Gpu>> { Ok(x.matmul_with(&wt).bias(&b).gelu_tanh().eval()?) };
    let out = fused()?.to_cpu()?.to_vec();
    let case = Case {
        name: "linear+bias+gelu_tanh".into(),
        batch: 1,
        m,
        k,
        n,
        ta: false,
        tb: true,
    };
    let gelu = |x: f64| 0.5 * x * (1.0 + (0.7978845608028654 * (x + 0.044715 * x * x * x)).tanh());
    check(&case.name, &hx, &hw, &out, &case, gelu, Some(&hb))?;
    let flop = 2.0 * (m * n) as f64 * k as f64;
    let ms_fused = time_ms(gpu.default_stream(), repeats, || {
        for _ in 0..inner {
            fused()?;
        }
        Ok(())
    })? / inner as f64;
    let ms_plain = time_ms(gpu.default_stream(), repeats, || {
        for _ in 0..inner {
            x.matmul(&wt)?;
        }
        Ok(())
    })? / inner as f64;
    Ok((
        flop / (ms_fused * 1e-3) / 1e12,
        flop / (ms_plain * 1e-3) / 1e12,
    ))
}

fn main() -> Res<()> {
    let opts = options()?;
    if !Gpu::available() {
        println!("gpu_matmul_bench: no CUDA driver or GPU on this machine");
        return Ok(());
    }
    let gpu = Gpu::new(0)?;
    println!("{} (typestate-tensor, cuBLASLt)", gpu.device_name());
    println!("| case | dtype | TFLOP/s |");
    println!("| --- | --- | ---: |");
    let mut json = String::from("{");
    let mut emit = |case: &str, dtype: &str, tflops: f64| {
        println!("| {case} | {dtype} | {tflops:.1} |");
        if json.len() > 1 {
            json.push(',');
        }
        let _ = write!(json, "\n  \"{case} | {dtype}\": {tflops:.3}");
    };
    let want = |d: &str| opts.only.as_deref().is_none_or(|o| o == d);
    for case in cases() {
        if want("f16") {
            emit(
                &case.name,
                "f16",
                run::<f16>(&gpu, &case, (opts.repeats, opts.inner), |m| m)?,
            );
        }
        if want("bf16") {
            emit(
                &case.name,
                "bf16",
                run::<bf16>(&gpu, &case, (opts.repeats, opts.inner), |m| m)?,
            );
        }
        if want("f32") {
            emit(
                &case.name,
                "f32",
                run::<f32>(&gpu, &case, (opts.repeats, opts.inner), |m| m)?,
            );
        }
        if want("tf32") {
            emit(
                &case.name,
                "tf32",
                run::<f32>(&gpu, &case, (opts.repeats, opts.inner), |m| m.allow_tf32())?,
            );
        }
    }
    if want("f16") || want("epilogue") {
        let (fused, plain) = epilogue(&gpu, (opts.repeats, opts.inner))?;
        emit("linear+bias+gelu_tanh 16384x4096x4096", "f16", fused);
        emit("linear 16384x4096x4096", "f16", plain);
    }
    json.push_str("\n}\n");
    if let Some(path) = &opts.json {
        std::fs::write(path, json)?;
    }
    Ok(())
}
