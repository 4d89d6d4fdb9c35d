//! Fused pointwise expressions on the GPU against the same chains run eagerly (one kernel
//! per op): the cases of the fusion issue, with GB/s counting the bytes one fused kernel
//! must move (each input read once, each output written once), the first-call time of each
//! new expression (compile and load, or a disk-cache hit), and the host time of a cached
//! fused launch next to one eager op's.
//!
//! Run `cargo run --release --example gpu_fused_bench [-- --repeats N --log2 N]` and
//! `python scripts/bench_torch_fused.py` in the same session for PyTorch eager and
//! `torch.compile` on the same cases. Without a GPU it prints a note and exits.

use std::time::Instant;

use half::f16;
use typestate_tensor::device::Device;
use typestate_tensor::gpu::{Gpu, Stream};
use typestate_tensor::tensor::{expr, Tensor};

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
    case: &'static str,
    fused_ms: f64,
    eager_ms: f64,
    bytes: usize,
    first_ms: f64,
}

fn main() -> Res<()> {
    let mut repeats = 20usize;
    let mut log2 = 26u32;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--repeats" => repeats = args.next().ok_or("--repeats N")?.parse()?,
            "--log2" => log2 = args.next().ok_or("--log2 N")?.parse()?,
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

    // gelu(a*b+c), f32.
    {
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
            case: "gelu(a*b+c) f32",
            fused_ms: fused,
            eager_ms: eager,
            bytes: 4 * 4 * n,
            first_ms: first,
        });
    }
    // sigmoid(tanh(exp(-abs(a*b+c))*0.5+a))*c-b, f16.
    {
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
            case: "8-op chain f16",
            fused_ms: fused,
            eager_ms: eager,
            bytes: 2 * 4 * n,
            first_ms: first,
        });
    }
    // (x - mu[:,None]) * rs[:,None] * w + b, side x side, f32.
    {
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
            case: "layernorm tail (bcast) f32",
            fused_ms: fused,
            eager_ms: eager,
            bytes: 4 * 2 * side * side,
            first_ms: first,
        });
    }
    // relu(a.T*b + c), side x side, f32.
    {
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
            case: "relu(a.T*b+c) f32",
            fused_ms: fused,
            eager_ms: eager,
            bytes: 4 * 4 * side * side,
            first_ms: first,
        });
    }
    // Adam: read p, g, m, v; write p, m, v.
    {
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
            case: "adam p,m,v f32",
            fused_ms: fused,
            eager_ms: eager,
            bytes: 4 * 7 * n,
            first_ms: first,
        });
    }
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
