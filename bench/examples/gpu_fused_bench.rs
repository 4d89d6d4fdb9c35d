//! Fused pointwise expressions on the GPU against the same chains run eagerly (one kernel
//! per op): the cases of the fusion issue, with GB/s counting the bytes one fused kernel
//! must move (each input read once, each output written once), the first-call time of each
//! new expression (compile and load, or a disk-cache hit), and the host time of a cached
//! fused launch next to one eager op's.
//!
//! Run `cargo run --release -p typestate-tensor-bench --example gpu_fused_bench [-- --repeats N --log2 N]` and
//! `python scripts/bench_torch_fused.py` in the same session for PyTorch eager and
//! `torch.compile` on the same cases. Without a GPU it prints a note and exits.
//!
//! Issue 26's cases (2^26 elements each, whatever `--log2`): permuted leaves that keep their
//! innermost dim, ranks 3 to 6 (attention-head splits `[B, S, H, D] -> [B, H, S, D]`, batched
//! middle transposes), in `sigmoid(x' * y + y) * x'` with `x'` the permuted view and `y`
//! row-major; and transcendental `f32` chains between `f16`/`bf16` casts (see
//! [`issue26_cases`]). `--json PATH` writes every row for `scripts/bench_torch_fused.py
//! --compare PATH`, which prints ours against `torch.compile` and torch eager per case;
//! `--only a,b` keeps the cases whose name contains one of the words.

use std::fmt::Write as _;
use std::time::Instant;

use half::{bf16, f16};
use typestate_tensor::device::Device;
use typestate_tensor::gpu::{Gpu, Stream};
use typestate_tensor::tensor::{expr, Tensor};
use typestate_tensor::FloatElement;

mod common;

use common::{time_ms, Res};

/// Host time per call of `f` in µs (median over 50 batches of 200).
fn host_us(stream: &Stream, f: impl FnMut() -> Res<()>) -> Res<f64> {
    common::host_us(stream, 10_000, f)
}

/// Wall time of the first call of `f` (a new expression: compile or disk-cache load), in ms.
fn first_ms(stream: &Stream, f: impl FnOnce() -> Res<()>) -> Res<f64> {
    stream.synchronize()?;
    let t = Instant::now();
    f()?;
    stream.synchronize()?;
    Ok(t.elapsed().as_secs_f64() * 1e3)
}

fn random_f32(shape: &[usize], seed: u64) -> Res<Tensor<f32>> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    Ok(Tensor::from_fn(shape, |_| {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
    })?)
}

struct Row {
    case: String,
    fused_ms: f64,
    eager_ms: f64,
    bytes: usize,
    first_ms: f64,
}

/// Times `fused` and `eager` (each writing its output into `out`) and records the row; the
/// first call of `fused` is timed apart (compile or disk-cache load).
#[allow(clippy::too_many_arguments)]
fn measure<O>(
    stream: &Stream,
    repeats: usize,
    rows: &mut Vec<Row>,
    case: String,
    bytes: usize,
    out: &mut O,
    mut fused: impl FnMut(&mut O) -> Res<()>,
    mut eager: impl FnMut(&mut O) -> Res<()>,
) -> Res<()> {
    let first = first_ms(stream, || fused(out))?;
    let fused_ms = time_ms(stream, repeats, || fused(out))?;
    let eager_ms = time_ms(stream, repeats, || eager(out))?;
    rows.push(Row {
        case,
        fused_ms,
        eager_ms,
        bytes,
        first_ms: first,
    });
    Ok(())
}

/// A case of issue 26: name, the leaf's shape, and the permutation that views it.
type Leaf = (&'static str, &'static [usize], &'static [usize]);

/// Issue 26's permuted leaves: `shape` permuted by `perm` (the innermost dim kept), ranks 3 to
/// 6, 2^26 elements each; the same list as `scripts/bench_torch_fused.py`.
const PERMUTED: [Leaf; 5] = [
    ("perm3", &[1024, 512, 128], &[1, 0, 2]),
    ("attn-split", &[8, 2048, 64, 64], &[0, 2, 1, 3]),
    ("batched-mid-T", &[16, 256, 256, 64], &[0, 2, 1, 3]),
    ("perm5", &[16, 32, 32, 64, 64], &[2, 0, 3, 1, 4]),
    ("perm6", &[8, 16, 16, 16, 32, 64], &[0, 3, 1, 4, 2, 5]),
];

/// `[8, 2048]` as `8x2048`.
fn dims(v: &[usize]) -> String {
    v.iter().map(usize::to_string).collect::<Vec<_>>().join("x")
}

/// `[0, 2, 1]` as `(0,2,1)`.
fn perm_name(v: &[usize]) -> String {
    let inner = v.iter().map(usize::to_string).collect::<Vec<_>>().join(",");
    format!("({inner})")
}

/// `sigmoid(x' * y + y) * x'`, `x'` = `x.permute(perm)` of `shape` and `y` row-major of the
/// permuted shape, in `E`: reads `x` and `y`, writes the output.
fn permuted_case<E: FloatElement>(
    gpu: &Gpu,
    repeats: usize,
    (name, shape, perm): Leaf,
    rows: &mut Vec<Row>,
) -> Res<()> {
    let x = random_f32(shape, 30)?.cast::<E>()?.to_gpu(gpu)?;
    let xp = x.permute(perm)?;
    let y = random_f32(xp.shape(), 31)?.cast::<E>()?.to_gpu(gpu)?;
    let mut out = Tensor::<E, Gpu>::zeros_on(xp.shape(), gpu)?;
    let n: usize = shape.iter().product();
    measure(
        gpu.default_stream(),
        repeats,
        rows,
        format!("{name} {} {} {}", dims(shape), perm_name(perm), E::NAME),
        3 * n * E::DTYPE.size_in_bytes(),
        &mut out,
        |out| Ok(((xp.lazy() * &y + &y).sigmoid() * xp.lazy()).eval_into(out)?),
        |out| {
            xp.mul(&y)?.add(&y)?.sigmoid()?.mul_into(&xp, out)?;
            Ok(())
        },
    )
}

/// The cast-heavy chains on `E` inputs `a` (of `shape`, viewed through `perm`) and `b`
/// (row-major), computed in `f32` and cast back to `E`: `exp(a) * tanh(b) + sigmoid(a)`
/// ("cast3") and `log(exp(a * b) + 1) * sigmoid(a - b) + tanh(a)` ("cast4").
fn cast_case<E: FloatElement>(
    gpu: &Gpu,
    repeats: usize,
    (name, shape, perm): Leaf,
    rows: &mut Vec<Row>,
) -> Res<()> {
    let a = random_f32(shape, 40)?.cast::<E>()?.to_gpu(gpu)?;
    let ap = a.permute(perm)?;
    let b = random_f32(ap.shape(), 41)?.cast::<E>()?.to_gpu(gpu)?;
    let mut out = Tensor::<E, Gpu>::zeros_on(ap.shape(), gpu)?;
    let n: usize = shape.iter().product();
    let bytes = 3 * n * E::DTYPE.size_in_bytes();
    let stream = gpu.default_stream();
    let leaf = format!("{} {}", dims(shape), perm_name(perm));
    measure(
        stream,
        repeats,
        rows,
        format!("{name} cast3 {leaf} {}", E::NAME),
        bytes,
        &mut out,
        |out| {
            let (a, b) = (ap.lazy().cast::<f32>(), b.lazy().cast::<f32>());
            Ok((a.clone().exp() * b.tanh() + a.sigmoid())
                .cast::<E>()
                .eval_into(out)?)
        },
        |out| {
            let (a, b) = (ap.cast::<f32>()?, b.cast::<f32>()?);
            a.exp()?
                .mul(&b.tanh()?)?
                .add(&a.sigmoid()?)?
                .cast_into(out)?;
            Ok(())
        },
    )?;
    measure(
        stream,
        repeats,
        rows,
        format!("{name} cast4 {leaf} {}", E::NAME),
        bytes,
        &mut out,
        |out| {
            let (a, b) = (ap.lazy().cast::<f32>(), b.lazy().cast::<f32>());
            let softplus = ((a.clone() * b.clone()).exp() + 1.0f32).log();
            Ok((softplus * (a.clone() - b).sigmoid() + a.tanh())
                .cast::<E>()
                .eval_into(out)?)
        },
        |out| {
            let (a, b) = (ap.cast::<f32>()?, b.cast::<f32>()?);
            a.mul(&b)?
                .exp()?
                .add_scalar(1.0)?
                .log()?
                .mul(&a.sub(&b)?.sigmoid()?)?
                .add(&a.tanh()?)?
                .cast_into(out)?;
            Ok(())
        },
    )
}

/// Issue 26's cases (see the module docs), those `wanted` keeps.
fn issue26_cases(
    gpu: &Gpu,
    repeats: usize,
    wanted: &dyn Fn(&str) -> bool,
    rows: &mut Vec<Row>,
) -> Res<()> {
    // f32 for every rank; f16 too for the attention split and rank 5.
    for (i, case) in PERMUTED.into_iter().enumerate() {
        if wanted(case.0) {
            permuted_case::<f32>(gpu, repeats, case, rows)?;
            if i == 1 || i == 3 {
                permuted_case::<f16>(gpu, repeats, case, rows)?;
            }
        }
    }
    if wanted("cast") {
        let flat: Leaf = ("flat", &[1 << 26], &[0]);
        cast_case::<f16>(gpu, repeats, flat, rows)?;
        cast_case::<bf16>(gpu, repeats, flat, rows)?;
        cast_case::<f16>(gpu, repeats, PERMUTED[1], rows)?;
    }
    Ok(())
}

/// The rows as JSON for `scripts/bench_torch_fused.py --compare`.
fn write_json(path: &str, device: &str, copy_gbps: f64, rows: &[Row]) -> Res<()> {
    let mut json = format!(
        "{{\"device\": \"{}\", \"copy_gbps\": {copy_gbps}, \"rows\": [",
        device.replace('"', "'")
    );
    for (i, r) in rows.iter().enumerate() {
        let _ = write!(
            json,
            "{}\n {{\"case\": \"{}\", \"bytes\": {}, \"fused_ms\": {}, \"eager_ms\": {}, \"first_ms\": {}}}",
            if i == 0 { "" } else { "," },
            r.case,
            r.bytes,
            r.fused_ms,
            r.eager_ms,
            r.first_ms
        );
    }
    json.push_str("\n]}\n");
    std::fs::write(path, json)?;
    Ok(())
}

fn main() -> Res<()> {
    let mut repeats = 20usize;
    let mut log2 = 26u32;
    let mut json = None;
    let mut only: Option<Vec<String>> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--repeats" => repeats = args.next().ok_or("--repeats N")?.parse()?,
            "--log2" => log2 = args.next().ok_or("--log2 N")?.parse()?,
            "--json" => json = Some(args.next().ok_or("--json PATH")?),
            "--only" => {
                let list = args.next().ok_or("--only a,b")?;
                only = Some(list.split(',').map(str::to_owned).collect());
            }
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    if !Gpu::available() {
        println!("note: no CUDA driver or GPU here; the fused benchmark needs one.");
        return Ok(());
    }
    let gpu = Gpu::new(0)?;
    let stream = gpu.default_stream().clone();
    let n = 1usize << log2;
    let side = 1usize << (log2 / 2);
    let mut rows = Vec::new();
    let up = |t: Tensor<f32>| t.to_gpu(&gpu);
    let wanted = |case: &str| {
        only.as_ref()
            .is_none_or(|l| l.iter().any(|w| case.contains(w.as_str())))
    };

    // gelu(a*b+c), f32.
    if wanted("gelu(a*b+c) f32") {
        let (a, b, c) = (
            up(random_f32(&[n], 1)?)?,
            up(random_f32(&[n], 2)?)?,
            up(random_f32(&[n], 3)?)?,
        );
        let mut out = Tensor::<f32, Gpu>::zeros_on(&[n], &gpu)?;
        let first = first_ms(&stream, || {
            Ok((a.lazy() * &b + &c).gelu().eval_into(&mut out)?)
        })?;
        let fused = time_ms(&stream, repeats, || {
            Ok((a.lazy() * &b + &c).gelu().eval_into(&mut out)?)
        })?;
        let eager = time_ms(&stream, repeats, || {
            a.mul(&b)?.add(&c)?.gelu_into(&mut out)?;
            Ok(())
        })?;
        rows.push(Row {
            case: "gelu(a*b+c) f32".into(),
            fused_ms: fused,
            eager_ms: eager,
            bytes: 4 * 4 * n,
            first_ms: first,
        });
    }
    // sigmoid(tanh(exp(-abs(a*b+c))*0.5+a))*c-b, f16.
    if wanted("8-op chain f16") {
        let h = |t: Tensor<f32>| -> Res<Tensor<f16, Gpu>> { Ok(t.cast::<f16>()?.to_gpu(&gpu)?) };
        let (a, b, c) = (
            h(random_f32(&[n], 4)?)?,
            h(random_f32(&[n], 5)?)?,
            h(random_f32(&[n], 6)?)?,
        );
        let half = f16::from_f32(0.5);
        let mut out = Tensor::<f16, Gpu>::zeros_on(&[n], &gpu)?;
        let run = |out: &mut Tensor<f16, Gpu>| -> Res<()> {
            Ok((((-(a.lazy() * &b + &c).abs()).exp() * half + &a)
                .tanh()
                .sigmoid()
                * &c
                - &b)
                .eval_into(out)?)
        };
        let first = first_ms(&stream, || run(&mut out))?;
        let fused = time_ms(&stream, repeats, || run(&mut out))?;
        let eager = time_ms(&stream, repeats, || {
            a.mul(&b)?
                .add(&c)?
                .abs()?
                .neg()?
                .exp()?
                .mul_scalar(half)?
                .add(&a)?
                .tanh()?
                .sigmoid()?
                .mul(&c)?
                .sub_into(&b, &mut out)?;
            Ok(())
        })?;
        rows.push(Row {
            case: "8-op chain f16".into(),
            fused_ms: fused,
            eager_ms: eager,
            bytes: 2 * 4 * n,
            first_ms: first,
        });
    }
    // (x - mu[:,None]) * rs[:,None] * w + b, side x side, f32.
    if wanted("layernorm tail (bcast) f32") {
        let x = up(random_f32(&[side, side], 7)?)?;
        let mu = up(random_f32(&[side, 1], 8)?)?;
        let rs = up(random_f32(&[side, 1], 9)?)?;
        let w = up(random_f32(&[side], 10)?)?;
        let bb = up(random_f32(&[side], 11)?)?;
        let mut out = Tensor::<f32, Gpu>::zeros_on(&[side, side], &gpu)?;
        let run = |out: &mut Tensor<f32, Gpu>| -> Res<()> {
            Ok(((x.lazy() - &mu) * &rs * &w + &bb).eval_into(out)?)
        };
        let first = first_ms(&stream, || run(&mut out))?;
        let fused = time_ms(&stream, repeats, || run(&mut out))?;
        let eager = time_ms(&stream, repeats, || {
            x.sub(&mu)?.mul(&rs)?.mul(&w)?.add_into(&bb, &mut out)?;
            Ok(())
        })?;
        rows.push(Row {
            case: "layernorm tail (bcast) f32".into(),
            fused_ms: fused,
            eager_ms: eager,
            bytes: 4 * 2 * side * side,
            first_ms: first,
        });
    }
    // relu(a.T*b + c), side x side, f32.
    if wanted("relu(a.T*b+c) f32") {
        let a = up(random_f32(&[side, side], 12)?)?;
        let b = up(random_f32(&[side, side], 13)?)?;
        let c = up(random_f32(&[side, side], 14)?)?;
        let at = a.t();
        let mut out = Tensor::<f32, Gpu>::zeros_on(&[side, side], &gpu)?;
        let run = |out: &mut Tensor<f32, Gpu>| -> Res<()> {
            Ok((at.lazy() * &b + &c).relu().eval_into(out)?)
        };
        let first = first_ms(&stream, || run(&mut out))?;
        let fused = time_ms(&stream, repeats, || run(&mut out))?;
        let eager = time_ms(&stream, repeats, || {
            at.mul(&b)?.add(&c)?.relu_into(&mut out)?;
            Ok(())
        })?;
        rows.push(Row {
            case: "relu(a.T*b+c) f32".into(),
            fused_ms: fused,
            eager_ms: eager,
            bytes: 4 * 4 * side * side,
            first_ms: first,
        });
    }
    // Adam: read p, g, m, v; write p, m, v.
    if wanted("adam p,m,v f32") {
        let p = up(random_f32(&[n], 15)?)?;
        let g = up(random_f32(&[n], 16)?)?;
        let m = up(random_f32(&[n], 17)?)?;
        let v = up(random_f32(&[n], 18)?)?.abs()?;
        let (lr, b1, b2, eps) = (1e-3f32, 0.9f32, 0.999f32, 1e-8f32);
        let mut po = Tensor::<f32, Gpu>::zeros_on(&[n], &gpu)?;
        let mut mo = Tensor::<f32, Gpu>::zeros_on(&[n], &gpu)?;
        let mut vo = Tensor::<f32, Gpu>::zeros_on(&[n], &gpu)?;
        let run = |po: &mut Tensor<f32, Gpu>,
                   mo: &mut Tensor<f32, Gpu>,
                   vo: &mut Tensor<f32, Gpu>|
         -> Res<()> {
            let m_new = m.lazy() * b1 + g.lazy() * (1.0 - b1);
            let v_new = v.lazy() * b2 + g.lazy().square() * (1.0 - b2);
            let p_new = p.lazy() - m_new.clone() * lr / (v_new.clone().sqrt() + eps);
            Ok(expr::eval_into((p_new, m_new, v_new), (po, mo, vo))?)
        };
        let first = first_ms(&stream, || run(&mut po, &mut mo, &mut vo))?;
        let fused = time_ms(&stream, repeats, || run(&mut po, &mut mo, &mut vo))?;
        let eager = time_ms(&stream, repeats, || {
            let m_e = m.mul_scalar(b1)?.add(&g.mul_scalar(1.0 - b1)?)?;
            let v_e = v.mul_scalar(b2)?.add(&g.square()?.mul_scalar(1.0 - b2)?)?;
            let step = m_e.mul_scalar(lr)?.div(&v_e.sqrt()?.add_scalar(eps)?)?;
            p.sub_into(&step, &mut po)?;
            mo.copy_from(&m_e)?;
            vo.copy_from(&v_e)?;
            Ok(())
        })?;
        rows.push(Row {
            case: "adam p,m,v f32".into(),
            fused_ms: fused,
            eager_ms: eager,
            bytes: 4 * 7 * n,
            first_ms: first,
        });
    }
    issue26_cases(&gpu, repeats, &wanted, &mut rows)?;
    // Copy ceiling.
    let copy_gbps = {
        let a = up(random_f32(&[n], 19)?)?;
        let mut out = Tensor::<f32, Gpu>::zeros_on(&[n], &gpu)?;
        let ms = time_ms(&stream, repeats, || Ok(out.copy_from(&a)?))?;
        (8 * n) as f64 / (ms * 1e-3) / 1e9
    };
    println!(
        "fused vs eager on {} ({n} elements; {side}x{side} for 2-D cases)",
        gpu.name()
    );
    println!("| case | fused GB/s | eager GB/s | fused/eager | fused of copy | first call ms |");
    println!("| --- | --- | --- | --- | --- | --- |");
    for r in &rows {
        let f = r.bytes as f64 / (r.fused_ms * 1e-3) / 1e9;
        let e = r.bytes as f64 / (r.eager_ms * 1e-3) / 1e9;
        println!(
            "| {} | {f:.0} | {e:.0} | {:.2}x | {:.0}% | {:.1} |",
            r.case,
            f / e,
            100.0 * f / copy_gbps,
            r.first_ms
        );
    }
    println!("| copy f32 (ceiling) | {copy_gbps:.0} | | | 100% | |");
    if let Some(path) = &json {
        write_json(path, &gpu.name(), copy_gbps, &rows)?;
        println!("wrote {path}");
    }

    // Host time: a cached fused launch vs one eager op, 1024 elements.
    let a = up(random_f32(&[1024], 20)?)?;
    let b = up(random_f32(&[1024], 21)?)?;
    let mut out = Tensor::<f32, Gpu>::zeros_on(&[1024], &gpu)?;
    let eager_us = host_us(&stream, || Ok(a.add_into(&b, &mut out)?))?;
    let fused1_us = host_us(&stream, || Ok((a.lazy() + &b).eval_into(&mut out)?))?;
    let fused3_us = host_us(&stream, || {
        Ok((a.lazy() * &b + &a).gelu().eval_into(&mut out)?)
    })?;
    println!(
        "host time per launch, 1024 f32: eager add_into {eager_us:.2} us; fused a+b {fused1_us:.2} us ({:.2}x); fused gelu(a*b+a) {fused3_us:.2} us",
        fused1_us / eager_us
    );
    Ok(())
}
