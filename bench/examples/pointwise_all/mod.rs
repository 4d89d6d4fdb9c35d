//! `gpu_pointwise_bench --all-ops`: every op of the op table for every element type its bound
//! allows (and every cast between two element types), eager, on `side x side` tensors
//! (8192 x 8192 = 2^26 elements by default), in two layouts:
//! - `contiguous`: every operand and the output row-major;
//! - `a.T`: the first operand a transposed view (`a.t()`), the others and the output
//!   row-major (the same case as `torch.op(a.t(), b, out=o)`).
//!
//! Each case: `--warmup` launches (the first compiles the kernel), then the median over
//! `--repeats` samples, each the CUDA-event time of `--inner` back-to-back launches divided by
//! `--inner` (so that the host's launch gap before a short kernel is amortised). GB/s counts
//! the bytes the op must read plus write; "of copy" divides by the device-to-device memcpy
//! bandwidth of 2^26 f32 measured in the same process (the larger of a measurement before and
//! one after the cases). Inputs: floats uniform in [0.5, 1.5), integers in [1, 64), bool 0/1
//! (the same distributions as `scripts/bench_torch_ops.py`, which runs the same cases in
//! PyTorch from the JSON this writes).
//!
//! Before the timed pass, every kernel is compiled by a pass over the same cases on small
//! operands, one thread per element type ([`prewarm`]; `--no-prewarm` skips it), so that the
//! ~600 first-call compiles use several cores.
//!
//! The ops are listed once, in `op_list!` (`lists.rs`): one line per op, `"name" => method_into(scalars)`,
//! grouped by arity, bound and output type. A case that fails (an op missing on the device, a
//! compile error) is reported and skipped; the others still run.

use std::any::Any;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::rc::Rc;

use half::{bf16, f16};
use typestate_tensor::element::{Bitwise, DType, DivRem, Element, Integer};
use typestate_tensor::gpu::{Gpu, GpuStorage, Stream};
use typestate_tensor::tensor::{Tensor, TensorView};
use typestate_tensor::{FloatElement, Numeric, Signed};

use crate::common::{median, Res};

// The lists: `each_type!` (element types by bound) and `op_list!` (the ops).
#[macro_use]
mod lists;

/// `x` as a `T` (C cast rules: truncation for integers, `!= 0` for bool).
fn s<T: Element>(x: f64) -> T {
    T::from_f64(x)
}

/// Expands [`op_list`] into calls of [`Bench::unary`], [`Bench::binary`], [`Bench::ternary`]
/// and [`Bench::select`], one generic function per group, run for every type of its bound.
macro_rules! run_ops {
    ($bench:ident; $(
        $kind:ident $bound:ident -> $out:ty {
            $($name:literal => $m:ident($($arg:expr),* $(,)?)),* $(,)?
        }
    )*) => {
        $( run_ops!(@group $bench $kind $bound [$out] { $($name => $m($($arg),*)),* }); )*
    };
    (@group $bench:ident unary $bound:ident [$out:ty] {
        $($name:literal => $m:ident($($arg:expr),*)),*
    }) => {{
        fn group<T: $bound>(bench: &mut Bench) {
            $( bench.unary::<T, $out>($name, |x, out| x.$m($($arg,)* out)); )*
        }
        each_type!($bound, E => { group::<E>($bench); });
    }};
    (@group $bench:ident binary $bound:ident [$out:ty] {
        $($name:literal => $m:ident($($arg:expr),*)),*
    }) => {{
        fn group<T: $bound>(bench: &mut Bench) {
            $( bench.binary::<T, $out>($name, |x, y, out| x.$m(y, $($arg,)* out)); )*
        }
        each_type!($bound, E => { group::<E>($bench); });
    }};
    (@group $bench:ident ternary $bound:ident [$out:ty] {
        $($name:literal => $m:ident($($arg:expr),*)),*
    }) => {{
        fn group<T: $bound>(bench: &mut Bench) {
            $( bench.ternary::<T, $out>($name, |x, y, z, out| x.$m(y, z, $($arg,)* out)); )*
        }
        each_type!($bound, E => { group::<E>($bench); });
    }};
    (@group $bench:ident select $bound:ident [$out:ty] {
        $($name:literal => $m:ident($($arg:expr),*)),*
    }) => {{
        fn group<T: $bound>(bench: &mut Bench) {
            $( bench.select::<T, $out>($name, |mask, x, y, out| {
                Tensor::<T, Gpu>::$m(mask, x, y, $($arg,)* out)
            }); )*
        }
        each_type!($bound, E => { group::<E>($bench); });
    }};
}

/// The options of `--all-ops`.
#[derive(Clone)]
pub struct Options {
    /// Rows and columns of every operand (`side * side` elements).
    pub side: usize,
    /// Untimed launches first (the first compiles).
    pub warmup: usize,
    /// Timed samples; the median is kept.
    pub repeats: usize,
    /// Launches per timed sample.
    pub inner: usize,
    /// Only these ops (kernel names; `cast` and `copy` included), if given.
    pub only: Option<Vec<String>>,
    /// Only these input element types, if given.
    pub dtypes: Option<Vec<String>>,
    /// Where to write the JSON for `scripts/bench_torch_ops.py --compare`.
    pub json: Option<String>,
    /// Compile every kernel first, one thread per element type (see [`prewarm`]).
    pub prewarm: bool,
}

/// The three inputs of one element type, uploaded once and kept for every op of that type.
struct Inputs<T: Element> {
    a: Tensor<T, Gpu>,
    b: Tensor<T, Gpu>,
    c: Tensor<T, Gpu>,
}

struct Row {
    op: &'static str,
    kind: &'static str,
    dtype: &'static str,
    out: &'static str,
    layout: &'static str,
    bytes: usize,
    ms: f64,
}

/// The run: options, device, the inputs by element type, and the rows so far.
struct Bench {
    opts: Options,
    gpu: Gpu,
    stream: Stream,
    inputs: HashMap<&'static str, Rc<dyn Any>>,
    mask: Option<Rc<Tensor<bool, Gpu>>>,
    rows: Vec<Row>,
    errors: Vec<String>,
    /// The copy bandwidth measured before the cases (for the JSON written during the run).
    copy_gbps: f64,
    /// No error lines (the prewarm pass: the timed pass reports its errors).
    quiet: bool,
}

/// The layouts of the first operand: row-major, then transposed.
const LAYOUTS: [&str; 2] = ["contiguous", "a.T"];

/// `len` seeded values: floats in [0.5, 1.5), integers in [1, 64), bool 0 or 1.
fn random<T: Element>(len: usize, seed: u64) -> Vec<T> {
    let float = matches!(T::DTYPE, DType::F32 | DType::F64 | DType::F16 | DType::BF16);
    let boolean = T::DTYPE == DType::Bool;
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let bits = state >> 11;
            T::from_f64(if float {
                0.5 + bits as f64 / (1u64 << 53) as f64
            } else if boolean {
                (bits & 1) as f64
            } else {
                (1 + bits % 63) as f64
            })
        })
        .collect()
}

impl Bench {
    fn wants(&self, op: &str, dtype: &str) -> bool {
        let listed = |list: &Option<Vec<String>>, x: &str| {
            list.as_ref().is_none_or(|l| l.iter().any(|s| s == x))
        };
        listed(&self.opts.only, op) && listed(&self.opts.dtypes, dtype)
    }

    fn shape(&self) -> [usize; 2] {
        [self.opts.side, self.opts.side]
    }

    fn upload<T: Element>(&self, seed: u64) -> Res<Tensor<T, Gpu>> {
        let n = self.opts.side * self.opts.side;
        Ok(Tensor::from_vec(&self.shape(), random::<T>(n, seed))?.to_gpu(&self.gpu)?)
    }

    /// The inputs of type `T`, uploaded on first use.
    fn inputs<T: Element>(&mut self) -> Res<Rc<Inputs<T>>> {
        if let Some(any) = self.inputs.get(T::NAME) {
            if let Ok(inputs) = Rc::clone(any).downcast::<Inputs<T>>() {
                return Ok(inputs);
            }
        }
        let inputs = Rc::new(Inputs {
            a: self.upload::<T>(1)?,
            b: self.upload::<T>(2)?,
            c: self.upload::<T>(3)?,
        });
        self.inputs.insert(T::NAME, inputs.clone());
        Ok(inputs)
    }

    fn mask(&mut self) -> Res<Rc<Tensor<bool, Gpu>>> {
        if self.mask.is_none() {
            self.mask = Some(Rc::new(self.upload::<bool>(4)?));
        }
        Ok(Rc::clone(self.mask.as_ref().ok_or("no mask")?))
    }

    /// The median per-launch time of `f` in ms (see the module docs).
    fn time(&self, mut f: impl FnMut() -> Res<()>) -> Res<f64> {
        for _ in 0..self.opts.warmup {
            f()?;
        }
        self.stream.synchronize()?;
        let inner = self.opts.inner.max(1);
        let mut times = Vec::with_capacity(self.opts.repeats);
        for _ in 0..self.opts.repeats.max(1) {
            let start = self.stream.record_timing_event()?;
            for _ in 0..inner {
                f()?;
            }
            let end = self.stream.record_timing_event()?;
            end.synchronize()?;
            times.push(f64::from(start.elapsed_ms(&end)?) / inner as f64);
        }
        Ok(median(&mut times))
    }

    /// Times `run(layout)` in both layouts and records the rows (or the error).
    fn case<T: Element, O: Element>(
        &mut self,
        op: &'static str,
        kind: &'static str,
        read_per_element: usize,
        mut run: impl FnMut(&Self, &'static str) -> Res<f64>,
    ) {
        if !self.wants(op, T::NAME) {
            return;
        }
        let n = self.opts.side * self.opts.side;
        let bytes = n * (read_per_element + O::DTYPE.size_in_bytes());
        for layout in LAYOUTS {
            match run(self, layout) {
                Ok(ms) => {
                    self.rows.push(Row {
                        op,
                        kind,
                        dtype: T::NAME,
                        out: O::NAME,
                        layout,
                        bytes,
                        ms,
                    });
                    if self.rows.len().is_multiple_of(32) && !self.quiet {
                        eprintln!("{} cases done", self.rows.len());
                        if let Some(path) = &self.opts.json {
                            if let Err(e) = write_json(self, self.copy_gbps, path) {
                                eprintln!("cannot write {path}: {e}");
                            }
                        }
                    }
                }
                Err(e) => {
                    let msg = format!("{op} {} -> {} {layout}: {e}", T::NAME, O::NAME);
                    if !self.quiet {
                        eprintln!("error: {msg}");
                    }
                    self.errors.push(msg);
                }
            }
        }
    }

    /// The first operand in `layout`.
    fn first<'a, T: Element>(a: &'a Tensor<T, Gpu>, layout: &str) -> TensorView<'a, T, Gpu> {
        if layout == "a.T" {
            a.t()
        } else {
            a.view()
        }
    }

    fn unary<T: Element, O: Element>(
        &mut self,
        op: &'static str,
        f: impl Fn(&TensorView<'_, T, Gpu>, &mut Tensor<O, Gpu>) -> typestate_tensor::Result<()>,
    ) {
        let size = T::DTYPE.size_in_bytes();
        self.case::<T, O>(op, "unary", size, |bench, layout| {
            let ins = bench.clone_inputs::<T>()?;
            let mut out = Tensor::<O, Gpu>::zeros_on(&bench.shape(), &bench.gpu)?;
            let x = Self::first(&ins.a, layout);
            bench.time(|| Ok(f(&x, &mut out)?))
        });
    }

    fn binary<T: Element, O: Element>(
        &mut self,
        op: &'static str,
        f: impl Fn(
            &TensorView<'_, T, Gpu>,
            &TensorView<'_, T, Gpu>,
            &mut Tensor<O, Gpu>,
        ) -> typestate_tensor::Result<()>,
    ) {
        let size = T::DTYPE.size_in_bytes();
        self.case::<T, O>(op, "binary", 2 * size, |bench, layout| {
            let ins = bench.clone_inputs::<T>()?;
            let mut out = Tensor::<O, Gpu>::zeros_on(&bench.shape(), &bench.gpu)?;
            let (x, y) = (Self::first(&ins.a, layout), ins.b.view());
            bench.time(|| Ok(f(&x, &y, &mut out)?))
        });
    }

    fn ternary<T: Element, O: Element>(
        &mut self,
        op: &'static str,
        f: impl Fn(
            &TensorView<'_, T, Gpu>,
            &TensorView<'_, T, Gpu>,
            &TensorView<'_, T, Gpu>,
            &mut Tensor<O, Gpu>,
        ) -> typestate_tensor::Result<()>,
    ) {
        let size = T::DTYPE.size_in_bytes();
        self.case::<T, O>(op, "ternary", 3 * size, |bench, layout| {
            let ins = bench.clone_inputs::<T>()?;
            let mut out = Tensor::<O, Gpu>::zeros_on(&bench.shape(), &bench.gpu)?;
            let (x, y, z) = (Self::first(&ins.a, layout), ins.b.view(), ins.c.view());
            bench.time(|| Ok(f(&x, &y, &z, &mut out)?))
        });
    }

    /// A `bool` mask and two values of `T`; the first value takes `layout`.
    fn select<T: Element, O: Element>(
        &mut self,
        op: &'static str,
        f: impl Fn(
            &TensorView<'_, bool, Gpu>,
            &TensorView<'_, T, Gpu>,
            &TensorView<'_, T, Gpu>,
            &mut Tensor<O, Gpu>,
        ) -> typestate_tensor::Result<()>,
    ) {
        let size = T::DTYPE.size_in_bytes();
        self.case::<T, O>(op, "select", 1 + 2 * size, |bench, layout| {
            let ins = bench.clone_inputs::<T>()?;
            let mask = bench.clone_mask()?;
            let mut out = Tensor::<O, Gpu>::zeros_on(&bench.shape(), &bench.gpu)?;
            let (m, x, y) = (mask.view(), Self::first(&ins.a, layout), ins.b.view());
            bench.time(|| Ok(f(&m, &x, &y, &mut out)?))
        });
    }

    /// The inputs of `T`, which [`Bench::prepare`] uploaded before the case ran.
    fn clone_inputs<T: Element>(&self) -> Res<Rc<Inputs<T>>> {
        let any = self.inputs.get(T::NAME).ok_or("inputs not uploaded")?;
        Rc::clone(any)
            .downcast::<Inputs<T>>()
            .map_err(|_| "inputs of another type".into())
    }

    fn clone_mask(&self) -> Res<Rc<Tensor<bool, Gpu>>> {
        Ok(Rc::clone(self.mask.as_ref().ok_or("mask not uploaded")?))
    }

    /// Uploads the inputs of `T` (and the mask) unless no case of `T` is wanted.
    fn prepare<T: Element>(&mut self) -> Res<()> {
        if self
            .opts
            .dtypes
            .as_ref()
            .is_none_or(|l| l.iter().any(|s| s == T::NAME))
        {
            self.inputs::<T>()?;
            self.mask()?;
        }
        Ok(())
    }

    /// The device-to-device memcpy bandwidth of 2^26 f32, GB/s.
    fn copy_gbps(&self) -> Res<f64> {
        let n = 1usize << 26;
        let a = GpuStorage::from_host(&self.gpu, &random::<f32>(n, 9), &self.stream)?;
        let mut out = GpuStorage::<f32>::zeros(&self.gpu, n, &self.stream)?;
        let ms = self.time(|| Ok(out.copy_from_device_async(&a, &self.stream)?))?;
        Ok((8 * n) as f64 / (ms * 1e-3) / 1e9)
    }
}

/// Every cast from `A` to another element type.
fn casts_from<A: Element>(bench: &mut Bench) {
    each_type!(Element, U => {
        if A::DTYPE != U::DTYPE {
            bench.unary::<A, U>("cast", |x, out| x.cast_into::<U>(out));
        }
    });
}

/// A run on device 0 with no cases yet.
fn new_bench(opts: Options, quiet: bool) -> Res<Bench> {
    let gpu = Gpu::new(0)?;
    let stream = gpu.default_stream().clone();
    Ok(Bench {
        opts,
        gpu,
        stream,
        inputs: HashMap::new(),
        mask: None,
        rows: Vec::new(),
        errors: Vec::new(),
        copy_gbps: f64::NAN,
        quiet,
    })
}

/// Every case the options keep: `copy` per element type, the ops of `op_list!`, the casts.
fn all_cases(bench: &mut Bench) -> Res<()> {
    each_type!(Element, E => { bench.prepare::<E>()?; });
    each_type!(Element, E => {
        bench.unary::<E, E>("copy", |x, out| out.copy_from(x));
    });
    op_list!(run_ops!(bench;));
    each_type!(Element, A => { casts_from::<A>(bench); });
    Ok(())
}

/// Compiles (and loads) every kernel of the run before it is timed: the same cases on
/// 256 x 256 operands (the same kernel forms as 8192 x 8192: the same vector widths, index
/// width and tile shapes), one launch each, one thread per element type, so that NVRTC
/// compiles on several cores (the compile layer builds each kernel once, and different
/// kernels concurrently). The timed pass then only loads from the process's cache.
fn prewarm(opts: &Options) {
    let mut names: Vec<&'static str> = Vec::new();
    each_type!(Element, E => { names.push(E::NAME); });
    let kept = |n: &str| {
        opts.dtypes
            .as_ref()
            .is_none_or(|l| l.iter().any(|d| d == n))
    };
    std::thread::scope(|s| {
        for name in names.into_iter().filter(|n| kept(n)) {
            let mut o = opts.clone();
            (o.side, o.warmup, o.repeats, o.inner) = (256, 1, 1, 1);
            (o.json, o.dtypes) = (None, Some(vec![name.to_owned()]));
            s.spawn(move || {
                if let Ok(mut bench) = new_bench(o, true) {
                    let _ = all_cases(&mut bench);
                }
            });
        }
    });
}

/// `--all-ops`: see the module docs.
pub fn run(opts: Options) -> Res<()> {
    let started = std::time::Instant::now();
    if opts.prewarm {
        prewarm(&opts);
        println!(
            "prewarm (every kernel compiled, one thread per element type): {:.1} s",
            started.elapsed().as_secs_f64()
        );
    }
    let mut bench = new_bench(opts, false)?;
    let copy_before = bench.copy_gbps()?;
    bench.copy_gbps = copy_before;
    all_cases(&mut bench)?;
    let copy_after = bench.copy_gbps()?;
    let copy = copy_before.max(copy_after);
    bench.gpu.check_err()?;
    report(
        &bench,
        copy,
        copy_before,
        copy_after,
        started.elapsed().as_secs_f64(),
    )
}

/// Prints the table and writes the JSON.
fn report(bench: &Bench, copy: f64, before: f64, after: f64, secs: f64) -> Res<()> {
    let o = &bench.opts;
    println!(
        "typestate-tensor eager ops on {}: {}x{} elements, warm-up {}, median of {} samples of {} launches; device-to-device copy {copy:.0} GB/s (2^26 f32; {before:.0} before, {after:.0} after); {} cases in {secs:.0} s",
        bench.gpu.device_name(),
        o.side,
        o.side,
        o.warmup,
        o.repeats,
        o.inner,
        bench.rows.len()
    );
    println!(
        "{:<14} {:<7} {:<5} {:<5} {:<10} {:>8} {:>7} {:>7}",
        "op", "kind", "dtype", "out", "layout", "ms", "GB/s", "of copy"
    );
    let gbps = |r: &Row| r.bytes as f64 / (r.ms * 1e-3) / 1e9;
    for r in &bench.rows {
        println!(
            "{:<14} {:<7} {:<5} {:<5} {:<10} {:>8.3} {:>7.0} {:>7.2}",
            r.op,
            r.kind,
            r.dtype,
            r.out,
            r.layout,
            r.ms,
            gbps(r),
            gbps(r) / copy
        );
    }
    for e in &bench.errors {
        println!("error: {e}");
    }
    if let Some(path) = &o.json {
        write_json(bench, copy, path)?;
        println!("wrote {path}");
    }
    Ok(())
}

/// Writes the rows so far as JSON to `path` (also every 32 rows during the run, so that a run
/// cut short by a time limit still leaves its cases).
fn write_json(bench: &Bench, copy: f64, path: &str) -> Res<()> {
    let o = &bench.opts;
    let gbps = |r: &Row| r.bytes as f64 / (r.ms * 1e-3) / 1e9;
    let mut json = String::new();
    let _ = write!(
        json,
        "{{\"device\": \"{}\", \"side\": {}, \"warmup\": {}, \"repeats\": {}, \"inner\": {}, \"copy_gbps\": {copy}, \"rows\": [",
        bench.gpu.device_name().replace('"', "'"),
        o.side,
        o.warmup,
        o.repeats,
        o.inner
    );
    for (i, r) in bench.rows.iter().enumerate() {
        let _ = write!(
            json,
            "{}\n {{\"op\": \"{}\", \"kind\": \"{}\", \"dtype\": \"{}\", \"out\": \"{}\", \"layout\": \"{}\", \"bytes\": {}, \"ms\": {}, \"gbps\": {}, \"of_copy\": {}}}",
            if i == 0 { "" } else { "," },
            r.op,
            r.kind,
            r.dtype,
            r.out,
            r.layout,
            r.bytes,
            r.ms,
            gbps(r),
            gbps(r) / copy
        );
    }
    json.push_str("\n], \"errors\": [");
    for (i, e) in bench.errors.iter().enumerate() {
        let sep = if i == 0 { "" } else { ", " };
        let _ = write!(json, "{sep}\"{}\"", e.replace(['"', '\\', '\n'], "'"));
    }
    json.push_str("]}\n");
    std::fs::write(path, json)?;
    Ok(())
}
