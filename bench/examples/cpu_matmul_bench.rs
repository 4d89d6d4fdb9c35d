//! CPU matrix multiply throughput (issue 27), for the device host's cores beside PyTorch's CPU
//! `torch.matmul` (`scripts/bench_torch_matmul.py --cpu`): f32 and f64, square 256 to 2048
//! and 4096x256·256x256, on every core (rayon's pool) and on one thread, GFLOP/s (`2·m·n·k`
//! per product), the median of `--repeats` wall-clock timings after two warm-up calls. Each
//! result is spot-checked against an f64 host sum on 16 elements.
//!
//! ```text
//! cargo run --release -p typestate-tensor-bench --example cpu_matmul_bench -- [--repeats 7]
//! python3 scripts/bench_torch_matmul.py --cpu
//! ```

use std::time::Instant;

use typestate_tensor::element::FloatElement;
use typestate_tensor::tensor::Tensor;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// The cases: `(name, m, k, n)`, the same list as the PyTorch script's `CPU_CASES`.
const CASES: [(&str, usize, usize, usize); 5] = [
    ("square 256", 256, 256, 256),
    ("square 512", 512, 512, 512),
    ("square 1024", 1024, 1024, 1024),
    ("square 2048", 2048, 2048, 2048),
    ("tall 4096x256x256", 4096, 256, 256),
];

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn case<T: FloatElement>(m: usize, k: usize, n: usize, repeats: usize) -> Res<f64> {
    let a = Tensor::<f32>::rand(&[m, k], 1)?.cast::<T>()?;
    let b = Tensor::<f32>::rand(&[k, n], 2)?.cast::<T>()?;
    for _ in 0..2 {
        a.matmul(&b)?;
    }
    let mut times = Vec::with_capacity(repeats);
    let mut last = None;
    for _ in 0..repeats {
        let t = Instant::now();
        let c = a.matmul(&b)?;
        times.push(t.elapsed().as_secs_f64());
        last = Some(c);
    }
    let c = last.ok_or("no repeat ran")?;
    let (av, bv, cv) = (a.to_vec(), b.to_vec(), c.to_vec());
    for s in 0..16 {
        let (i, j) = (s * 7919 % m, s * 104729 % n);
        let (mut want, mut scale) = (0.0, 0.0);
        for l in 0..k {
            let x = av[i * k + l].to_f64() * bv[l * n + j].to_f64();
            want += x;
            scale += x.abs();
        }
        let got = cv[i * n + j].to_f64();
        if (got - want).abs() > 1e-5 * scale {
            return Err(format!("[{i}, {j}]: {got} vs {want}").into());
        }
    }
    Ok(2.0 * (m * n * k) as f64 / median(times) / 1e9)
}

fn main() -> Res<()> {
    let mut repeats = 7;
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, v] = args.as_slice() {
        if flag == "--repeats" {
            repeats = v.parse()?;
        }
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let one = rayon::ThreadPoolBuilder::new().num_threads(1).build()?;
    println!("| case | dtype | ours, {threads} threads (GFLOP/s) | ours, 1 thread (GFLOP/s) |");
    println!("| --- | --- | ---: | ---: |");
    for (name, m, k, n) in CASES {
        for dtype in ["f32", "f64"] {
            let (all, single) = match dtype {
                "f32" => (
                    case::<f32>(m, k, n, repeats)?,
                    one.install(|| case::<f32>(m, k, n, repeats).map_err(|e| e.to_string()))?,
                ),
                _ => (
                    case::<f64>(m, k, n, repeats)?,
                    one.install(|| case::<f64>(m, k, n, repeats).map_err(|e| e.to_string()))?,
                ),
            };
            println!("| {name} | {dtype} | {all:.1} | {single:.1} |");
        }
    }
    Ok(())
}
