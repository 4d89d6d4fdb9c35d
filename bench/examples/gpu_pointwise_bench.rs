//! Pointwise kernel bandwidth on 16384 x 16384 tensors (2^28 elements), against the device's
//! measured device-to-device copy bandwidth; the same cases as `scripts/bench_torch.py`.
//!
//! ```text
//! cargo run --release -p typestate-tensor-bench --example gpu_pointwise_bench -- [--json ours.json] [--repeats 20]
//! python3 scripts/bench_torch.py --compare ours.json
//! cargo run --release -p typestate-tensor-bench --example gpu_pointwise_bench -- --permute [--json perm.json]
//! python3 scripts/bench_torch.py --permute --compare perm.json
//! ```
//!
//! `--all-ops` measures every op of the op table for every element type its bound allows, and
//! every cast, on 8192 x 8192 tensors contiguous and with the first operand transposed (see
//! `pointwise_all/mod.rs`); `--json` writes the rows for `scripts/bench_torch_ops.py`:
//!
//! ```text
//! cargo run --release -p typestate-tensor-bench --example gpu_pointwise_bench -- --all-ops --json ops.json \
//!     [--side 8192 --warmup 2 --repeats 5 --inner 3 --only exp,add --dtypes f32,f16]
//!     [--no-prewarm]
//! python3 scripts/bench_torch_ops.py --compare ops.json
//! ```
//!
//! `--permute` measures permutes instead (see [`run_permute`]): every permutation of a
//! rank-3 and a rank-4 f32 tensor of 2^26 elements and 10 seeded random ones each of rank 5
//! and 6, as `exp(x.permute(p))` and `x.permute(p) + y` into a contiguous output; f16 and u8
//! (add only) for the rank-4 set. The identity permutation is left out (it is the contiguous
//! case above).
//!
//! Each case: random non-zero data, three warm-up launches (the first compiles the kernel),
//! then the median of `--repeats` CUDA-event timings of one launch. GB/s counts the bytes the
//! op must read plus write (a broadcast row once); "of copy" divides by the bandwidth of
//! `cuMemcpyDtoDAsync` of one 1 GiB f32 tensor. The small-op case is host time: 1024-element
//! adds launched back to back, microseconds per call. Without a GPU it says so and exits.

use std::fmt::Write as _;

use half::{bf16, f16};

use typestate_tensor::element::Element;
use typestate_tensor::gpu::{Gpu, GpuStorage, Stream};
use typestate_tensor::layout::Layout;

mod common;
mod pointwise_all;

use common::{time_ms, Res};

const N: usize = 16384;

struct Options {
    json: Option<String>,
    repeats: usize,
    small_calls: usize,
    permute: bool,
    all_ops: Option<pointwise_all::Options>,
}

fn options() -> Res<Options> {
    let mut opts = Options {
        json: None,
        repeats: 20,
        small_calls: 20000,
        permute: false,
        all_ops: None,
    };
    let mut all = pointwise_all::Options {
        side: 8192,
        warmup: 2,
        repeats: 5,
        inner: 3,
        only: None,
        dtypes: None,
        json: None,
        prewarm: true,
    };
    let mut all_ops = false;
    let list = |v: String| Some(v.split(',').map(str::to_owned).collect::<Vec<_>>());
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--json" => opts.json = Some(value()?),
            "--repeats" => opts.repeats = value()?.parse()?,
            "--small-calls" => opts.small_calls = value()?.parse()?,
            "--permute" => opts.permute = true,
            "--all-ops" => all_ops = true,
            "--side" => all.side = value()?.parse()?,
            "--warmup" => all.warmup = value()?.parse()?,
            "--inner" => all.inner = value()?.parse()?,
            "--only" => all.only = list(value()?),
            "--dtypes" => all.dtypes = list(value()?),
            "--no-prewarm" => all.prewarm = false,
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    opts.repeats = opts.repeats.max(1);
    if all_ops {
        // `--repeats` counts samples here too; its default is the all-ops one.
        if std::env::args().any(|a| a == "--repeats") {
            all.repeats = opts.repeats;
        }
        all.json = opts.json.clone();
        opts.all_ops = Some(all);
    }
    Ok(opts)
}

/// Random values in [0.5, 1.5): non-zero, and safe for `exp`.
fn random<T: Element>(len: usize, seed: u64) -> Vec<T> {
    let mut state = seed | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            T::from_f64(0.5 + (state >> 11) as f64 / (1u64 << 53) as f64)
        })
        .collect()
}
struct Row {
    case: &'static str,
    shape: &'static str,
    layout: &'static str,
    dtype: &'static str,
    form: String,
    ms: f64,
    gbps: f64,
    of_copy: f64,
}

struct Bench {
    gpu: Gpu,
    stream: Stream,
    repeats: usize,
    copy_gbps: f64,
    rows: Vec<Row>,
}

impl Bench {
    fn upload<T: Element>(&self, len: usize, seed: u64) -> Res<GpuStorage<T>> {
        Ok(GpuStorage::from_host(
            &self.gpu,
            &random::<T>(len, seed),
            &self.stream,
        )?)
    }

    #[allow(clippy::too_many_arguments)]
    fn record(
        &mut self,
        case: &'static str,
        shape: &'static str,
        layout: &'static str,
        dtype: &'static str,
        form: String,
        bytes: usize,
        ms: f64,
    ) {
        let gbps = bytes as f64 / (ms * 1e-3) / 1e9;
        if case == "copy" {
            self.copy_gbps = gbps;
        }
        self.rows.push(Row {
            case,
            shape,
            layout,
            dtype,
            form,
            ms,
            gbps,
            of_copy: gbps / self.copy_gbps,
        });
    }

    /// `out = a' + b'` where a' and b' are `a`, `b` viewed through `la`, `lb`.
    #[allow(clippy::too_many_arguments)]
    fn add<T: typestate_tensor::Numeric>(
        &mut self,
        case: &'static str,
        layout: &'static str,
        la: &Layout,
        lb: &Layout,
        b_len: usize,
        bytes: usize,
    ) -> Res<()> {
        let n = N * N;
        let a = self.upload::<T>(n, 1)?;
        let b = self.upload::<T>(b_len, 2)?;
        // Zeros, not `uninit`: the fill is outside the timing and keeps the example safe.
        let mut out = GpuStorage::<T>::zeros(&self.gpu, n, &self.stream)?;
        let lo = Layout::contiguous(&[N, N])?;
        let form = form_of([&lo, la, lb], T::DTYPE.size_in_bytes());
        let stream = self.stream.clone();
        let ms = time_ms(&stream, self.repeats, || {
            Ok(pw::add(&stream, (&a, la), (&b, lb), &mut out, &lo)?)
        })?;
        self.record(case, "16384x16384", layout, T::NAME, form, bytes, ms);
        Ok(())
    }
}

/// The operands' layout class: "contiguous" when every operand is row-major contiguous,
/// else "strided" (the kernel form itself is the engine's private choice).
fn form_of<const K: usize>(layouts: [&Layout; K], _size: usize) -> String {
    if layouts.iter().all(|l| l.is_contiguous()) {
        "contiguous".to_owned()
    } else {
        "strided".to_owned()
    }
}

/// The bench's launches over raw buffers and layouts, queued on `stream`: tensor views on a
/// handle of the GPU made to queue there ([`Gpu::on`]), the one way to run on a stream.
mod pw {
    use typestate_tensor::element::Element;
    use typestate_tensor::gpu::{GpuStorage, Stream};
    use typestate_tensor::layout::Layout;
    use typestate_tensor::tensor::{TensorView, TensorViewMut};
    use typestate_tensor::{FloatElement, Numeric, Result};

    /// `out = exp(a)`.
    pub fn exp<T: FloatElement>(
        stream: &Stream,
        a: &GpuStorage<T>,
        la: &Layout,
        out: &mut GpuStorage<T>,
        lo: &Layout,
    ) -> Result<()> {
        let dev = a.gpu().on(stream)?;
        let a = TensorView::new(a, la.clone(), &dev)?;
        a.exp_into(&mut TensorViewMut::new(out, lo.clone(), &dev)?)
    }

    /// `out = a + b`.
    pub fn add<T: Numeric>(
        stream: &Stream,
        (a, la): (&GpuStorage<T>, &Layout),
        (b, lb): (&GpuStorage<T>, &Layout),
        out: &mut GpuStorage<T>,
        lo: &Layout,
    ) -> Result<()> {
        let dev = a.gpu().on(stream)?;
        let (a, b) = (
            TensorView::new(a, la.clone(), &dev)?,
            TensorView::new(b, lb.clone(), &dev)?,
        );
        a.add_into(&b, &mut TensorViewMut::new(out, lo.clone(), &dev)?)
    }

    /// `out = a` (the copy kernel).
    pub fn copy<T: Element>(
        stream: &Stream,
        a: &GpuStorage<T>,
        la: &Layout,
        out: &mut GpuStorage<T>,
        lo: &Layout,
    ) -> Result<()> {
        let dev = a.gpu().on(stream)?;
        let a = TensorView::new(a, la.clone(), &dev)?;
        TensorViewMut::new(out, lo.clone(), &dev)?.copy_from(&a)
    }

    /// `out = value` over `lo`.
    pub fn fill<T: Element>(
        stream: &Stream,
        value: T,
        out: &mut GpuStorage<T>,
        lo: &Layout,
    ) -> Result<()> {
        let dev = out.gpu().on(stream)?;
        TensorViewMut::new(out, lo.clone(), &dev)?.fill_(value)
    }
}

/// The shapes of `--permute` (2^26 elements each), ranks 3 to 6.
const PERMUTE_SHAPES: [&[usize]; 4] = [
    &[256, 512, 512],
    &[32, 64, 128, 256],
    &[16, 16, 32, 64, 128],
    &[8, 16, 16, 16, 32, 64],
];

/// Every permutation of `0..rank` but the identity, in lexicographic order (Python's
/// `itertools.permutations`).
fn all_perms(rank: usize) -> Vec<Vec<usize>> {
    fn go(prefix: &mut Vec<usize>, rank: usize, out: &mut Vec<Vec<usize>>) {
        if prefix.len() == rank {
            out.push(prefix.clone());
            return;
        }
        for d in 0..rank {
            if !prefix.contains(&d) {
                prefix.push(d);
                go(prefix, rank, out);
                prefix.pop();
            }
        }
    }
    let mut out = Vec::new();
    go(&mut Vec::new(), rank, &mut out);
    out.retain(|p| p.iter().enumerate().any(|(i, &d)| i != d));
    out
}

/// `count` distinct non-identity permutations of `0..rank`: Fisher-Yates over a xorshift64
/// seeded with `seed` (`scripts/bench_torch.py` draws the same ones).
fn random_perms(rank: usize, count: usize, seed: u64) -> Vec<Vec<usize>> {
    let mut state = seed;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut out: Vec<Vec<usize>> = Vec::new();
    while out.len() < count {
        let mut p: Vec<usize> = (0..rank).collect();
        for i in (1..rank).rev() {
            let j = (next() % (i as u64 + 1)) as usize;
            p.swap(i, j);
        }
        if p.iter().enumerate().any(|(i, &d)| i != d) && !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

/// The permutations `--permute` measures for `shape`: all of them for ranks 3 and 4, 10
/// random ones (seed `0x9E37_79B9_7F4A_7C15 ^ rank`) for ranks 5 and 6.
fn permutes_of(shape: &[usize]) -> Vec<Vec<usize>> {
    let rank = shape.len();
    if rank <= 4 {
        all_perms(rank)
    } else {
        random_perms(rank, 10, 0x9E37_79B9_7F4A_7C15 ^ rank as u64)
    }
}

fn dims(v: &[usize]) -> String {
    v.iter().map(usize::to_string).collect::<Vec<_>>().join("x")
}

/// One `--permute` row.
struct PermRow {
    op: &'static str,
    dtype: &'static str,
    shape: String,
    perm: String,
    form: String,
    ms: f64,
    gbps: f64,
}

/// A unary launch `out' = op(a')` over storages and layouts.
type UnaryLaunch<'a, T> =
    &'a dyn Fn(&GpuStorage<T>, &Layout, &mut GpuStorage<T>, &Layout) -> Res<()>;

/// Times `exp(x.permute(p))` (when `exp`) and `x.permute(p) + y` into a contiguous output for
/// every permutation of `shape`, appending rows.
fn permute_cases<T: typestate_tensor::Numeric>(
    gpu: &Gpu,
    stream: &Stream,
    repeats: usize,
    shape: &[usize],
    exp: Option<UnaryLaunch<'_, T>>,
    rows: &mut Vec<PermRow>,
) -> Res<()> {
    let n: usize = shape.iter().product();
    let size = T::DTYPE.size_in_bytes();
    let x = GpuStorage::from_host(gpu, &random::<T>(n, 11), stream)?;
    let y = GpuStorage::from_host(gpu, &random::<T>(n, 12), stream)?;
    let mut out = GpuStorage::<T>::zeros(gpu, n, stream)?;
    let base = Layout::contiguous(shape)?;
    for perm in permutes_of(shape) {
        let xv = base.permute(&perm)?;
        let lo = Layout::contiguous(xv.shape())?;
        let (shape_s, perm_s) = (dims(shape), format!("{perm:?}").replace(' ', ""));
        if let Some(exp) = exp {
            let ms = time_ms(stream, repeats, || exp(&x, &xv, &mut out, &lo))?;
            rows.push(PermRow {
                op: "exp",
                dtype: T::NAME,
                shape: shape_s.clone(),
                perm: perm_s.clone(),
                form: form_of([&lo, &xv], size),
                ms,
                gbps: (2 * n * size) as f64 / (ms * 1e-3) / 1e9,
            });
        }
        let ms = time_ms(stream, repeats, || {
            Ok(pw::add(stream, (&x, &xv), (&y, &lo), &mut out, &lo)?)
        })?;
        rows.push(PermRow {
            op: "add",
            dtype: T::NAME,
            shape: shape_s,
            perm: perm_s,
            form: form_of([&lo, &xv, &lo], size),
            ms,
            gbps: (3 * n * size) as f64 / (ms * 1e-3) / 1e9,
        });
    }
    Ok(())
}

/// `--permute`: one table of permutes (see the module docs), with the device-to-device copy
/// bandwidth of 2^26 f32 measured in the same run; `--json` writes the rows for
/// `scripts/bench_torch.py --permute --compare`.
fn run_permute(opts: &Options) -> Res<()> {
    let gpu = Gpu::new(0)?;
    let stream = gpu.new_stream()?;
    let repeats = opts.repeats;
    let n = 1usize << 26;
    let copy_gbps = {
        let a = GpuStorage::from_host(&gpu, &random::<f32>(n, 3), &stream)?;
        let mut out = GpuStorage::<f32>::zeros(&gpu, n, &stream)?;
        let ms = time_ms(&stream, repeats, || {
            Ok(out.copy_from_device_async(&a, &stream)?)
        })?;
        (8 * n) as f64 / (ms * 1e-3) / 1e9
    };
    let mut rows = Vec::new();
    let exp_f32 = |a: &GpuStorage<f32>, la: &Layout, o: &mut GpuStorage<f32>, lo: &Layout| {
        Ok(pw::exp(&stream, a, la, o, lo)?)
    };
    let exp_f16 = |a: &GpuStorage<f16>, la: &Layout, o: &mut GpuStorage<f16>, lo: &Layout| {
        Ok(pw::exp(&stream, a, la, o, lo)?)
    };
    for shape in PERMUTE_SHAPES {
        permute_cases::<f32>(&gpu, &stream, repeats, shape, Some(&exp_f32), &mut rows)?;
    }
    permute_cases::<f16>(
        &gpu,
        &stream,
        repeats,
        PERMUTE_SHAPES[1],
        Some(&exp_f16),
        &mut rows,
    )?;
    permute_cases::<u8>(&gpu, &stream, repeats, PERMUTE_SHAPES[1], None, &mut rows)?;

    println!(
        "typestate-tensor permutes on {}: device-to-device copy {copy_gbps:.0} GB/s (2^26 f32)",
        gpu.device_name()
    );
    println!(
        "{:<4} {:<5} {:<16} {:<15} {:<28} {:>8} {:>7} {:>7}",
        "op", "dtype", "shape", "perm", "kernel form", "ms", "GB/s", "of copy"
    );
    for r in &rows {
        println!(
            "{:<4} {:<5} {:<16} {:<15} {:<28} {:>8.3} {:>7.0} {:>7.2}",
            r.op,
            r.dtype,
            r.shape,
            r.perm,
            r.form,
            r.ms,
            r.gbps,
            r.gbps / copy_gbps
        );
    }
    if let Some(path) = &opts.json {
        let mut json = String::new();
        let _ = write!(
            json,
            "{{\"device\": \"{}\", \"copy_gbps\": {copy_gbps}, \"rows\": [",
            gpu.device_name().replace('"', "'")
        );
        for (i, r) in rows.iter().enumerate() {
            let _ = write!(
                json,
                "{}\n {{\"op\": \"{}\", \"dtype\": \"{}\", \"shape\": \"{}\", \"perm\": \"{}\", \"form\": \"{}\", \"ms\": {}, \"gbps\": {}, \"of_copy\": {}}}",
                if i == 0 { "" } else { "," },
                r.op, r.dtype, r.shape, r.perm, r.form, r.ms, r.gbps, r.gbps / copy_gbps
            );
        }
        json.push_str("\n]}\n");
        std::fs::write(path, json)?;
        println!("wrote {path}");
    }
    gpu.check_err()?;
    Ok(())
}

fn main() -> Res<()> {
    let opts = options()?;
    if !Gpu::available() {
        println!("no CUDA driver: nothing to measure");
        return Ok(());
    }
    if let Some(all) = opts.all_ops {
        return pointwise_all::run(all);
    }
    if opts.permute {
        return run_permute(&opts);
    }
    let gpu = Gpu::new(0)?;
    let stream = gpu.new_stream()?;
    let mut bench = Bench {
        gpu: gpu.clone(),
        stream: stream.clone(),
        repeats: opts.repeats,
        copy_gbps: f64::NAN,
        rows: Vec::new(),
    };
    let n = N * N;
    let dense = Layout::contiguous(&[N, N])?;
    let t = dense.t();
    let row = Layout::contiguous(&[1, N])?.broadcast_to(&[N, N])?;

    // Device-to-device copy: the bandwidth everything else is measured against.
    {
        let a = bench.upload::<f32>(n, 3)?;
        let mut out = GpuStorage::<f32>::zeros(&gpu, n, &stream)?;
        let ms = time_ms(&stream, opts.repeats, || {
            Ok(out.copy_from_device_async(&a, &stream)?)
        })?;
        bench.record(
            "copy",
            "16384x16384",
            "contiguous",
            "f32",
            "memcpy".into(),
            8 * n,
            ms,
        );
        let lo = &dense;
        let ms = time_ms(&stream, opts.repeats, || {
            Ok(pw::copy(&stream, &a, lo, &mut out, lo)?)
        })?;
        let form = form_of([lo, lo], 4);
        bench.record(
            "copy (kernel)",
            "16384x16384",
            "contiguous",
            "f32",
            form,
            8 * n,
            ms,
        );
        let ms = time_ms(&stream, opts.repeats, || {
            Ok(pw::fill(&stream, 1.25f32, &mut out, lo)?)
        })?;
        bench.record(
            "fill",
            "16384x16384",
            "contiguous",
            "f32",
            form_of([lo], 4),
            4 * n,
            ms,
        );
    }
    bench.add::<f32>("add", "contiguous", &dense, &dense, n, 12 * n)?;
    bench.add::<f16>("add", "contiguous", &dense, &dense, n, 6 * n)?;
    {
        bench.add::<bf16>("add", "contiguous", &dense, &dense, n, 6 * n)?;
    }
    {
        let a = bench.upload::<f32>(n, 4)?;
        let mut out = GpuStorage::<f32>::zeros(&gpu, n, &stream)?;
        let ms = time_ms(&stream, opts.repeats, || {
            Ok(pw::exp(&stream, &a, &dense, &mut out, &dense)?)
        })?;
        bench.record(
            "exp",
            "16384x16384",
            "contiguous",
            "f32",
            form_of([&dense, &dense], 4),
            8 * n,
            ms,
        );
        let every_other = dense.slice(1, 0, N, 2)?;
        let half_out = Layout::contiguous(&[N, N / 2])?;
        let ms = time_ms(&stream, opts.repeats, || {
            Ok(pw::exp(&stream, &a, &every_other, &mut out, &half_out)?)
        })?;
        bench.record(
            "exp a[:, ::2]",
            "16384x8192",
            "step 2 columns",
            "f32",
            form_of([&half_out, &every_other], 4),
            4 * n,
            ms,
        );
    }
    bench.add::<f32>("add a.T+b", "a transposed", &t, &dense, n, 12 * n)?;
    bench.add::<f32>("add a.T+b.T", "both transposed", &t, &t, n, 12 * n)?;
    bench.add::<f32>(
        "add row bcast",
        "b is [1, 16384]",
        &dense,
        &row,
        N,
        8 * n + 4 * N,
    )?;
    bench.add::<f16>("add a.T+b", "a transposed", &t, &dense, n, 6 * n)?;

    // Host time of small launches.
    let small_us = {
        let a = bench.upload::<f32>(1024, 5)?;
        let b = bench.upload::<f32>(1024, 6)?;
        let mut out = GpuStorage::<f32>::zeros(&gpu, 1024, &stream)?;
        let l = Layout::contiguous(&[1024])?;
        for _ in 0..100 {
            pw::add(&stream, (&a, &l), (&b, &l), &mut out, &l)?;
        }
        common::host_us(&stream, opts.small_calls, || {
            pw::add(&stream, (&a, &l), (&b, &l), &mut out, &l)?;
            Ok(())
        })?
    };
    // The same with the inputs made on another stream: the stream-order tracked path.
    let small_mixed_us = {
        let other = gpu.new_stream()?;
        let data = random::<f32>(1024, 7);
        let a = GpuStorage::from_host(&gpu, &data, &other)?;
        let b = GpuStorage::from_host(&gpu, &data, &other)?;
        let mut out = GpuStorage::<f32>::zeros(&gpu, 1024, &stream)?;
        let l = Layout::contiguous(&[1024])?;
        for _ in 0..100 {
            pw::add(&stream, (&a, &l), (&b, &l), &mut out, &l)?;
        }
        common::host_us(&stream, opts.small_calls, || {
            pw::add(&stream, (&a, &l), (&b, &l), &mut out, &l)?;
            Ok(())
        })?
    };

    println!(
        "typestate-tensor pointwise kernels on {} (compute capability {:?}, {} SMs)",
        gpu.device_name(),
        gpu.compute_capability(),
        gpu.multiprocessor_count()
    );
    println!(
        "{:<16} {:<12} {:<18} {:<5} {:<26} {:>9} {:>8} {:>8}",
        "case", "shape", "layout", "dtype", "kernel form", "ms", "GB/s", "of copy"
    );
    for r in &bench.rows {
        println!(
            "{:<16} {:<12} {:<18} {:<5} {:<26} {:>9.3} {:>8.0} {:>8.2}",
            r.case, r.shape, r.layout, r.dtype, r.form, r.ms, r.gbps, r.of_copy
        );
    }
    println!(
        "{:<16} {:<12} {:<18} {:<5} {:<26} {:>7.2}us/call (host)",
        "small add", "1024", "contiguous", "f32", "vec4", small_us
    );
    println!(
        "{:<16} {:<12} {:<18} {:<5} {:<26} {:>7.2}us/call (host)",
        "small add", "1024", "inputs other strm", "f32", "vec4", small_mixed_us
    );

    if let Some(path) = opts.json {
        let mut json = String::new();
        let _ = write!(
            json,
            "{{\"device\": \"{}\", \"rows\": [",
            gpu.device_name().replace('"', "'")
        );
        for r in &bench.rows {
            let _ = write!(
                json,
                "\n {{\"case\": \"{}\", \"shape\": \"{}\", \"layout\": \"{}\", \"dtype\": \"{}\", \"form\": \"{}\", \"ms\": {}, \"gbps\": {}, \"of_copy\": {}}},",
                r.case, r.shape, r.layout, r.dtype, r.form, r.ms, r.gbps, r.of_copy
            );
        }
        let _ = write!(
            json,
            "\n {{\"case\": \"small add\", \"shape\": \"1024\", \"layout\": \"contiguous\", \"dtype\": \"f32\", \"us_per_call\": {small_us}}}\n]}}\n"
        );
        std::fs::write(&path, json)?;
        println!("wrote {path}");
    }
    gpu.check_err()?;
    Ok(())
}
