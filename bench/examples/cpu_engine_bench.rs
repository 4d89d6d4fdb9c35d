//! CPU engine throughput at several thread counts (issue 29): the cases of
//! `scripts/bench_torch_cpu.py`, in GB/s (bytes read + written), each inside a rayon pool
//! of 1, 2, 4, 8 and 16 threads (the engine splits large ops across the current pool).
//!
//! ```text
//! cargo run --release -p typestate-tensor-bench --example cpu_engine_bench -- [--threads 1,2,4,8,16] [--repeats 7] [--log2 24] [--json ours.json]
//! python3 scripts/bench_torch_cpu.py [--threads 1,2,4,8,16] --compare ours.json
//! ```
//!
//! Cases on 2^log2 `f32` elements (a square matrix; 2^24 by default), data uniform in
//! [-2, 2): `add`, `mul` (contiguous), `add_transposed` (`a.t() + b`), `add_broadcast_row`
//! (`a + row`), `exp`, `tanh`, `gelu` (erf form), `gelu(a*b+c)` fused into one pass and as
//! three eager ops, a full `sum` and sums along each axis. Each case: 3 warm-up calls, then
//! the median of `--repeats` wall-clock timings (`std::time::Instant`) of one call, output
//! allocation included (as PyTorch's out-of-place ops allocate).

use std::fmt::Write as _;
use std::time::Instant;

use typestate_tensor::tensor::Tensor;

mod common;

use common::{median, Res};

struct Options {
    threads: Vec<usize>,
    repeats: usize,
    log2: u32,
    json: Option<String>,
}

fn options() -> Res<Options> {
    let mut opts = Options {
        threads: vec![1, 2, 4, 8, 16],
        repeats: 7,
        log2: 24,
        json: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--threads" => {
                opts.threads = value()?
                    .split(',')
                    .map(|t| t.trim().parse())
                    .collect::<Result<_, _>>()?
            }
            "--repeats" => opts.repeats = value()?.parse()?,
            "--log2" => opts.log2 = value()?.parse()?,
            "--json" => opts.json = Some(value()?),
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    opts.repeats = opts.repeats.max(1);
    Ok(opts)
}

/// Uniform in [-2, 2), from a fixed xorshift seed.
fn random(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (4.0 * ((s >> 11) as f64 / (1u64 << 53) as f64) - 2.0) as f32
        })
        .collect()
}

/// Median seconds of one call of `f`, after 3 warm-up calls.
fn time_s(repeats: usize, mut f: impl FnMut() -> Res<()>) -> Res<f64> {
    for _ in 0..3 {
        f()?;
    }
    let mut times = Vec::with_capacity(repeats);
    for _ in 0..repeats {
        let start = Instant::now();
        f()?;
        times.push(start.elapsed().as_secs_f64());
    }
    Ok(median(&mut times))
}

/// Drops a result (the timed call's output).
fn done<T>(_: T) -> Res<()> {
    Ok(())
}

type Case<'a> = (
    &'static str,
    usize,
    Box<dyn Fn() -> Res<()> + Send + Sync + 'a>,
);

fn main() -> Res<()> {
    let opts = options()?;
    let side = 1usize << (opts.log2 / 2);
    let rows = (1usize << opts.log2) / side;
    let n = rows * side;
    let t = |seed| Tensor::from_vec(&[rows, side], random(n, seed));
    let (a, b, c) = (t(1)?, t(2)?, t(3)?);
    let sq = Tensor::from_vec(&[side, side], random(side * side, 4))?;
    let sq2 = Tensor::from_vec(&[side, side], random(side * side, 5))?;
    let row = Tensor::from_vec(&[side], random(side, 6))?;
    // (name, bytes per element moved, the call)
    let cases: Vec<Case<'_>> = vec![
        ("add", 12, Box::new(|| done((&a + &b)?))),
        ("mul", 12, Box::new(|| done((&a * &b)?))),
        ("add_transposed", 12, Box::new(|| done((&sq.t() + &sq2)?))),
        ("add_broadcast_row", 8, Box::new(|| done((&a + &row)?))),
        ("exp", 8, Box::new(|| done(a.exp()?))),
        ("tanh", 8, Box::new(|| done(a.tanh()?))),
        ("gelu", 8, Box::new(|| done(a.gelu()?))),
        (
            "gelu(a*b+c) fused",
            16,
            Box::new(|| done((a.lazy() * &b + &c).gelu().eval()?)),
        ),
        (
            "gelu(a*b+c) eager",
            16,
            Box::new(|| done(a.mul(&b)?.add(&c)?.gelu()?)),
        ),
        ("sum", 4, Box::new(|| done(a.sum()?))),
        ("sum_axis0", 4, Box::new(|| done(a.sum_dim(0, false)?))),
        ("sum_axis1", 4, Box::new(|| done(a.sum_dim(1, false)?))),
    ];
    println!(
        "typestate-tensor CPU engine, 2^{} f32, {} cores available",
        opts.log2,
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    println!("| case | threads | GB/s |\n| --- | ---: | ---: |");
    let mut json = String::from("{");
    for &threads in &opts.threads {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()?;
        for (name, bytes, f) in &cases {
            let s = pool.install(|| time_s(opts.repeats, f).map_err(|e| e.to_string()))?;
            let gbs = (*bytes * n) as f64 / s / 1e9;
            println!("| {name} | {threads} | {gbs:.1} |");
            if json.len() > 1 {
                json.push_str(", ");
            }
            write!(json, "\"{name} | {threads}\": {gbs:.3}")?;
        }
    }
    json.push('}');
    if let Some(path) = &opts.json {
        std::fs::write(path, json)?;
    }
    Ok(())
}
