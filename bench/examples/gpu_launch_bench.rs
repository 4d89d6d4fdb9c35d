//! Host time of small ops: what one 1024-element op costs the calling thread, case by case.
//!
//! Run `cargo run --release -p typestate-tensor-bench --example gpu_launch_bench [-- --calls N]` and
//! `python scripts/bench_torch_launch.py` in the same session for PyTorch's figures on the
//! same cases. Without a GPU it prints a note and exits.

mod common;

use common::{host_us, Res};
use typestate_tensor::gpu::Gpu;
use typestate_tensor::tensor::Tensor;

fn random(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        })
        .collect()
}

fn main() -> Res<()> {
    let mut calls = 10_000usize;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--calls" => calls = args.next().ok_or("--calls N")?.parse()?,
            other => return Err(format!("unknown argument {other:?}").into()),
        }
    }
    let gpu = match Gpu::new(0) {
        Ok(g) => g,
        Err(e) => {
            println!("no GPU ({e}); nothing to measure");
            return Ok(());
        }
    };
    let stream = gpu.default_stream().clone();
    let up = |seed: u64, shape: &[usize]| -> Res<Tensor<f32, Gpu>> {
        Ok(Tensor::from_vec(shape, random(1024, seed))?.to_gpu(&gpu)?)
    };
    let (a, b) = (up(1, &[1024])?, up(2, &[1024])?);
    let (a2, b2) = (up(3, &[32, 32])?, up(4, &[32, 32])?);
    let mut out = Tensor::<f32, Gpu>::zeros_on(&[1024], &gpu)?;
    let mut out2 = Tensor::<f32, Gpu>::zeros_on(&[32, 32], &gpu)?;

    let mut rows: Vec<(&str, f64)> = Vec::new();
    rows.push((
        "add_into, contiguous (output preallocated)",
        host_us(&stream, calls, || Ok(a.add_into(&b, &mut out)?))?,
    ));
    rows.push((
        "add, contiguous (out of place)",
        host_us(&stream, calls, || {
            let c = (&a + &b)?;
            drop(c);
            Ok(())
        })?,
    ));
    rows.push((
        "add_into, permuted a.t() + b.t() (32x32)",
        host_us(&stream, calls, || {
            Ok(a2.t().add_into(&b2.t(), &mut out2)?)
        })?,
    ));
    rows.push((
        "add, permuted a.t() + b.t() (out of place)",
        host_us(&stream, calls, || {
            let c = (&a2.t() + &b2.t())?;
            drop(c);
            Ok(())
        })?,
    ));
    rows.push((
        "exp_into, contiguous",
        host_us(&stream, calls, || Ok(a.exp_into(&mut out)?))?,
    ));
    rows.push((
        "fused (a + b).eval_into, contiguous",
        host_us(&stream, calls, || Ok((a.lazy() + &b).eval_into(&mut out)?))?,
    ));
    // The same on a created (non-blocking) stream instead of the legacy default stream.
    let side = gpu.on(&gpu.new_stream()?)?;
    let (a3, b3) = (
        up(5, &[1024])?.to_device(&side)?,
        up(6, &[1024])?.to_device(&side)?,
    );
    let mut out3 = Tensor::<f32, Gpu>::zeros_on(&[1024], &side)?;
    rows.push((
        "add_into on a non-blocking stream (Gpu::on)",
        host_us(side.default_stream(), calls, || {
            Ok(a3.add_into(&b3, &mut out3)?)
        })?,
    ));

    println!(
        "host time per op on {} (1024 f32 elements, median of {calls} calls in batches of 200)",
        gpu.device_name()
    );
    println!("| case | us per call |");
    println!("| --- | --- |");
    for (case, us) in &rows {
        println!("| {case} | {us:.2} |");
    }

    // A cached fused launch against one eager op, measured alternately (eager, fused, eager,
    // ...) so that drift between the two measurements cancels: the issue 9 target is a
    // ratio of at most 1.2.
    {
        use half::f16;
        let h = |seed: u64| -> Res<Tensor<f16, Gpu>> {
            Ok(Tensor::from_vec(&[1024], random(1024, seed))?
                .cast::<f16>()?
                .to_gpu(&gpu)?)
        };
        let (ha, hb, hc) = (h(11)?, h(12)?, h(13)?);
        let mut hout = Tensor::<f16, Gpu>::zeros_on(&[1024], &gpu)?;
        let half = f16::from_f32(0.5);
        let (mut p, mut m, mut v) = (up(14, &[1024])?, up(15, &[1024])?, up(16, &[1024])?);
        let mut eager = Vec::new();
        let (mut sum, mut chain, mut adam) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..5 {
            eager.push(host_us(&stream, calls / 5, || {
                Ok(a.add_into(&b, &mut out)?)
            })?);
            sum.push(host_us(&stream, calls / 5, || {
                Ok((a.lazy() + &b).eval_into(&mut out)?)
            })?);
            chain.push(host_us(&stream, calls / 5, || {
                Ok((((-(ha.lazy() * &hb + &hc).abs()).exp() * half + &ha)
                    .tanh()
                    .sigmoid()
                    * &hc
                    - &hb)
                    .eval_into(&mut hout)?)
            })?);
            adam.push(host_us(&stream, calls / 5, || {
                Ok(typestate_tensor::tensor::expr::update(
                    (&mut p, &mut m, &mut v),
                    |(p, m, v)| {
                        let m = m * 0.9f32 + a.lazy() * 0.1f32;
                        let v = v * 0.999f32 + a.lazy().square() * 0.001f32;
                        (p - m.clone() * 1e-3f32 / (v.clone().sqrt() + 1e-8f32), m, v)
                    },
                )?)
            })?);
        }
        let e = common::median(&mut eager.clone());
        println!();
        println!(
            "cached fused launches against eager add_into, measured alternately (5 rounds of {} calls; us per call, median round)",
            calls / 5
        );
        println!("| case | us per call | / eager add_into |");
        println!("| --- | --- | --- |");
        println!("| eager add_into | {e:.2} | 1.00 |");
        for (case, v) in [
            ("fused (a + b).eval_into", &mut sum),
            ("fused 8-op f16 chain, eval_into", &mut chain),
            ("fused in-place Adam step (3 outputs)", &mut adam),
        ] {
            let f = common::median(v);
            println!("| {case} | {f:.2} | {:.2} |", f / e);
        }
    }

    Ok(())
}
