//! Reduction kernel bandwidth: full, last-axis, middle-axis and first-axis reductions and
//! permuted inputs, f32 and f16; the same cases as `scripts/bench_torch_reduce.py`.
//!
//! ```text
//! cargo run --release -p typestate-tensor-bench --example gpu_reduce_bench -- [--json ours.json] [--repeats 20]
//! python3 scripts/bench_torch_reduce.py --compare ours.json
//! ```
//!
//! Each case: random non-zero data (uniform in [0.5, 1.5)), three warm-up calls (the first
//! compiles the kernels), then the median of `--repeats` CUDA-event timings of one call of the
//! tensor method (`x.sum()`, `x.max_dim(1, false)`, ...) on the default stream, output
//! allocation included, as PyTorch's `x.sum(dim=1)` allocates its result. GB/s counts the
//! bytes read plus written. Each result is checked against
//! the CPU engine once (sums to a relative 1e-3, the rest exactly). Without a GPU it says so
//! and exits.

use std::fmt::Write as _;

use half::f16;

use typestate_tensor::element::Element;
use typestate_tensor::gpu::Gpu;
use typestate_tensor::ops::reduce::{MeanElement, ReduceElement};
use typestate_tensor::tensor::{Tensor, TensorView};
use typestate_tensor::{Cpu, Numeric};

mod common;

use common::{time_ms, Res};

struct Options {
    json: Option<String>,
    repeats: usize,
}

fn options() -> Res<Options> {
    let mut opts = Options {
        json: None,
        repeats: 20,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--json" => opts.json = Some(value()?),
            "--repeats" => opts.repeats = value()?.parse()?,
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    opts.repeats = opts.repeats.max(1);
    Ok(opts)
}

/// Uniform in [0.5, 1.5), from a fixed xorshift seed.
fn random<T: Element>(n: usize, seed: u64) -> Vec<T> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            T::from_f64(0.5 + (s >> 11) as f64 / (1u64 << 53) as f64)
        })
        .collect()
}

/// The ops measured.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Op {
    Sum,
    Max,
    ArgMax,
    Mean,
}

/// One case: an op over `dims` (all when `None`) of a view of a contiguous tensor of
/// `shape`, permuted by `perm`.
struct Case {
    op: Op,
    shape: Vec<usize>,
    perm: Option<Vec<usize>>,
    dim: Option<isize>,
    label: &'static str,
}

struct Row {
    case: String,
    shape: String,
    dims: String,
    dtype: &'static str,
    ms: f64,
    gbps: f64,
}

/// Within `rel` of `want`, or the same infinity (an f16 sum of 2^26 elements near 1
/// overflows on both engines, as in PyTorch).
fn close(got: f64, want: f64, rel: f64) -> bool {
    got == want || (got - want).abs() <= rel * want.abs().max(1.0)
}

/// Runs `case` over elements of `T`, checks it against the CPU engine, and records its row.
fn run<T>(gpu: &Gpu, repeats: usize, case: &Case, seed: u64, rows: &mut Vec<Row>) -> Res<()>
where
    T: Element + Numeric + ReduceElement<Sum = T> + MeanElement,
{
    let n: usize = case.shape.iter().product();
    let host = Tensor::from_vec(&case.shape, random::<T>(n, seed))?;
    let x = host.to_gpu(gpu)?;
    let view: TensorView<'_, T, Gpu> = match &case.perm {
        Some(p) => x.permute(p)?,
        None => x.view(),
    };
    let host_view: TensorView<'_, T, Cpu> = match &case.perm {
        Some(p) => host.permute(p)?,
        None => host.view(),
    };
    let rank = view.rank() as isize;
    let dims: Vec<usize> = match case.dim {
        None => (0..view.rank()).collect(),
        Some(d) => vec![if d < 0 {
            (d + rank) as usize
        } else {
            d as usize
        }],
    };
    let out_numel: usize = (0..view.rank())
        .filter(|d| !dims.contains(d))
        .map(|d| view.shape()[d])
        .product();
    let stream = gpu.default_stream();
    let size = std::mem::size_of::<T>();
    let (ms, out_size) = match case.op {
        Op::Sum | Op::Mean => {
            let f = |v: &TensorView<'_, T, Gpu>| match (case.op, case.dim) {
                (Op::Sum, None) => v.sum(),
                (Op::Sum, Some(d)) => v.sum_dim(d, false),
                (_, None) => v.mean(),
                (_, Some(d)) => v.mean_dim(d, false),
            };
            let ms = time_ms(stream, repeats, || Ok(f(&view).map(drop)?))?;
            let got = f(&view)?.to_cpu()?.into_vec();
            let want = match (case.op, case.dim) {
                (Op::Sum, None) => host_view.sum()?,
                (Op::Sum, Some(d)) => host_view.sum_dim(d, false)?,
                (_, None) => host_view.mean()?,
                (_, Some(d)) => host_view.mean_dim(d, false)?,
            }
            .into_vec();
            for (g, w) in got.iter().zip(&want) {
                if !close(Element::to_f64(*g), Element::to_f64(*w), 1e-3) {
                    return Err(format!("{}: got {g:?}, CPU engine {w:?}", case.label).into());
                }
            }
            (ms, size)
        }
        Op::Max => {
            let f = |v: &TensorView<'_, T, Gpu>| match case.dim {
                None => v.max(),
                Some(d) => v.max_dim(d, false),
            };
            let ms = time_ms(stream, repeats, || Ok(f(&view).map(drop)?))?;
            let got = f(&view)?.to_cpu()?.into_vec();
            let want = match case.dim {
                None => host_view.max()?,
                Some(d) => host_view.max_dim(d, false)?,
            }
            .into_vec();
            if got != want {
                return Err(format!("{}: results differ from the CPU engine", case.label).into());
            }
            (ms, size)
        }
        Op::ArgMax => {
            let f = |v: &TensorView<'_, T, Gpu>| match case.dim {
                None => v.argmax(),
                Some(d) => v.argmax_dim(d, false),
            };
            let ms = time_ms(stream, repeats, || Ok(f(&view).map(drop)?))?;
            let got = f(&view)?.to_cpu()?.into_vec();
            let want = match case.dim {
                None => host_view.argmax()?,
                Some(d) => host_view.argmax_dim(d, false)?,
            }
            .into_vec();
            if got != want {
                return Err(format!("{}: results differ from the CPU engine", case.label).into());
            }
            (ms, 8)
        }
    };
    let bytes = n * size + out_numel * out_size;
    rows.push(Row {
        case: case.label.to_owned(),
        shape: format!("{:?}", case.shape).replace(' ', ""),
        dims: match case.dim {
            None => "all".to_owned(),
            Some(d) => d.to_string(),
        },
        dtype: T::NAME,
        ms,
        gbps: bytes as f64 / (ms * 1e-3) / 1e9,
    });
    gpu.check_err()?;
    Ok(())
}

fn cases() -> Vec<(Case, bool)> {
    let full = vec![1usize << 26];
    let square = vec![8192usize, 8192];
    let cube = vec![256usize, 1024, 256];
    let c = |op, shape: &Vec<usize>, perm: Option<Vec<usize>>, dim, label| Case {
        op,
        shape: shape.clone(),
        perm,
        dim,
        label,
    };
    // (case, also in f16)
    vec![
        (c(Op::Sum, &full, None, None, "sum all"), true),
        (c(Op::Max, &full, None, None, "max all"), true),
        (c(Op::ArgMax, &full, None, None, "argmax all"), false),
        (c(Op::Mean, &full, None, None, "mean all"), false),
        (c(Op::Sum, &square, None, Some(1), "sum last axis"), true),
        (c(Op::Max, &square, None, Some(1), "max last axis"), false),
        (
            c(Op::ArgMax, &square, None, Some(1), "argmax last axis"),
            false,
        ),
        (c(Op::Sum, &cube, None, Some(1), "sum middle axis"), true),
        (c(Op::Max, &cube, None, Some(1), "max middle axis"), false),
        (
            c(Op::ArgMax, &cube, None, Some(1), "argmax middle axis"),
            false,
        ),
        (c(Op::Sum, &square, None, Some(0), "sum first axis"), true),
        (
            c(Op::ArgMax, &square, None, Some(0), "argmax first axis"),
            false,
        ),
        (
            c(
                Op::Sum,
                &square,
                Some(vec![1, 0]),
                Some(1),
                "sum x.t() dim 1",
            ),
            true,
        ),
        (
            c(
                Op::Sum,
                &cube,
                Some(vec![2, 0, 1]),
                Some(2),
                "sum permuted 201 dim 2",
            ),
            false,
        ),
        (
            c(
                Op::Max,
                &cube,
                Some(vec![0, 2, 1]),
                Some(1),
                "max permuted 021 dim 1",
            ),
            false,
        ),
    ]
}

fn main() -> Res<()> {
    let opts = options()?;
    if !Gpu::available() {
        println!("no CUDA driver: nothing to measure");
        return Ok(());
    }
    let gpu = Gpu::new(0)?;
    let mut rows = Vec::new();
    for (i, (case, half)) in cases().iter().enumerate() {
        run::<f32>(&gpu, opts.repeats, case, i as u64 + 1, &mut rows)?;
        if *half {
            run::<f16>(&gpu, opts.repeats, case, i as u64 + 101, &mut rows)?;
        }
        gpu.empty_cache()?;
    }
    println!(
        "typestate-tensor reductions on {} (compute capability {:?}, {} SMs)",
        gpu.device_name(),
        gpu.compute_capability(),
        gpu.multiprocessor_count()
    );
    println!(
        "{:<24} {:<14} {:<4} {:<5} {:>9} {:>8}",
        "case", "shape", "dims", "dtype", "ms", "GB/s"
    );
    for r in &rows {
        println!(
            "{:<24} {:<14} {:<4} {:<5} {:>9.4} {:>8.0}",
            r.case, r.shape, r.dims, r.dtype, r.ms, r.gbps
        );
    }
    if let Some(path) = opts.json {
        let mut json = String::new();
        let _ = write!(
            json,
            "{{\"device\": \"{}\", \"rows\": [",
            gpu.device_name().replace('"', "'")
        );
        for (i, r) in rows.iter().enumerate() {
            let _ = write!(
                json,
                "{}\n {{\"case\": \"{}\", \"shape\": \"{}\", \"dims\": \"{}\", \"dtype\": \"{}\", \"ms\": {}, \"gbps\": {}}}",
                if i == 0 { "" } else { "," },
                r.case,
                r.shape,
                r.dims,
                r.dtype,
                r.ms,
                r.gbps
            );
        }
        json.push_str("\n]}\n");
        std::fs::write(&path, json)?;
        println!("wrote {path}");
    }
    gpu.check_err()?;
    Ok(())
}
