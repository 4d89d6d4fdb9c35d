//! The GPU matmul through the public API (issue 27): strided views of every float type against
//! an f64 host product, the fused epilogue, a graph capture of a matmul, and a matmul on a side
//! stream reading what the default stream wrote. The engine's own random-layout reference
//! tests are in `src/engine_gpu/matmul/tests/`.
//!
//! Tolerances, relative to `Σ|a||b| + |bias|` per element: f64 1e-12, f32 1e-5, TF32 2e-3,
//! f16 2e-3, bf16 1.6e-2 (see the engine's tests for why), plus 1e-6 absolute.

use std::time::Duration;

use half::{bf16, f16};
use typestate_tensor::element::{Element, FloatElement};
use typestate_tensor::gpu::Gpu;
use typestate_tensor::tensor::matmul::MatmulBackend;
use typestate_tensor::tensor::{Tensor, TensorView};
use typestate_tensor::Result;

use crate::common::device::{gpu_or_skip, host};
use crate::common::matmul_ref::reference;

fn check(what: &str, got: &[f64], want: &[(f64, f64)], tol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, (w, scale))) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * scale + 1e-6,
            "{what}: element {i}: got {g}, want {w}"
        );
    }
}

fn f64s<T: FloatElement>(v: &[T]) -> Vec<f64> {
    v.iter().map(|x| Element::to_f64(*x)).collect()
}

/// `[2, 3, m, k] · [k, n]`-style products of views: `a` a transposed, stepped batch view, `b`
/// a flipped view broadcast over the batch, the bias stepped.
fn views<T: FloatElement>(gpu: &Gpu, tol: f64) -> Result<()>
where
    Gpu: MatmulBackend<T>,
{
    for &(m, k, n) in &[(1, 1, 1), (7, 33, 5), (64, 16, 129), (3, 0, 4), (0, 5, 2)] {
        // a: [2, 3, m, k] as the transpose of [2, 6, k, m] stepped by 2 on dim 1.
        let a_base = Tensor::<T, Gpu>::rand_on(&[2, 6, k, m], 1, gpu)?;
        let a_st = a_base.slice(1, 0, 6, 2)?;
        let a = a_st.transpose(2, 3)?;
        // b: [k, n] flipped along k, broadcast to [2, 3, k, n].
        let b_base = Tensor::<T, Gpu>::rand_on(&[k, n], 2, gpu)?;
        let b_flip = b_base.flip(0)?;
        let b = b_flip.expand(&[2, 3, k, n])?;
        let bias_base = Tensor::<T, Gpu>::rand_on(&[2 * n], 3, gpu)?;
        let bias = bias_base.slice(0, 0, 2 * n, 2)?;
        let (ha, hb, hbias) = (f64s(&host(&a)), f64s(&host(&b)), f64s(&host(&bias)));
        let dims = (6, m, k, n);
        let plain = a.matmul(&b)?;
        check(
            &format!("{} plain {m}x{k}x{n}", T::NAME),
            &f64s(&host(&plain)),
            &reference(&ha, &hb, None, dims, |x| x),
            tol,
        );
        let relu = a.matmul_with(&b).bias(&bias).relu().eval()?;
        check(
            &format!("{} bias+relu {m}x{k}x{n}", T::NAME),
            &f64s(&host(&relu)),
            &reference(&ha, &hb, Some(&hbias), dims, |x| x.max(0.0)),
            tol,
        );
        let gelu =
            |x: f64| 0.5 * x * (1.0 + (0.7978845608028654 * (x + 0.044715 * x * x * x)).tanh());
        let gt = a.matmul_with(&b).bias(&bias).gelu_tanh().eval()?;
        check(
            &format!("{} bias+gelu_tanh {m}x{k}x{n}", T::NAME),
            &f64s(&host(&gt)),
            &reference(&ha, &hb, Some(&hbias), dims, gelu),
            tol,
        );
        // Into a transposed destination (computed in a temporary, copied back).
        let mut out = Tensor::<T, Gpu>::zeros_on(&[2, 3, n, m], gpu)?;
        {
            let mut ov = out.view_mut().transpose(2, 3)?;
            a.matmul_into(&b, &mut ov)?;
        }
        let back = out.transpose(2, 3)?;
        check(
            &format!("{} into a transposed view {m}x{k}x{n}", T::NAME),
            &f64s(&host(&back)),
            &reference(&ha, &hb, None, dims, |x| x),
            tol,
        );
    }
    Ok(())
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn strided_views_of_every_float_type_match_the_host() -> Result<()> {
    let Some(gpu) = gpu_or_skip("strided_views_of_every_float_type_match_the_host") else {
        return Ok(());
    };
    views::<f64>(&gpu, 1e-12)?;
    views::<f32>(&gpu, 1e-5)?;
    views::<f16>(&gpu, 2e-3)?;
    views::<bf16>(&gpu, 1.6e-2)
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn tf32_is_opt_in_and_close() -> Result<()> {
    let Some(gpu) = gpu_or_skip("tf32_is_opt_in_and_close") else {
        return Ok(());
    };
    let (m, k, n) = (128, 256, 96);
    let a = Tensor::<f32, Gpu>::rand_on(&[m, k], 4, &gpu)?;
    let b = Tensor::<f32, Gpu>::rand_on(&[k, n], 5, &gpu)?;
    let want = reference(
        &f64s(&host(&a)),
        &f64s(&host(&b)),
        None,
        (1, m, k, n),
        |x| x,
    );
    check("f32", &f64s(&host(&a.matmul(&b)?)), &want, 1e-5);
    let tf32 = a.matmul_with(&b).allow_tf32().eval()?;
    check("tf32", &f64s(&host(&tf32)), &want, 2e-3);
    Ok(())
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn a_captured_matmul_replays() -> Result<()> {
    let Some(gpu) = gpu_or_skip("a_captured_matmul_replays") else {
        return Ok(());
    };
    let (m, k, n) = (48, 40, 24);
    let a = Tensor::<f32, Gpu>::rand_on(&[m, k], 6, &gpu)?;
    let b = Tensor::<f32, Gpu>::rand_on(&[k, n], 7, &gpu)?;
    let bias = Tensor::<f32, Gpu>::rand_on(&[n], 8, &gpu)?;
    let want = reference(
        &f64s(&host(&a)),
        &f64s(&host(&b)),
        Some(&f64s(&host(&bias))),
        (1, m, k, n),
        |x| x.max(0.0),
    );
    let mut graph = gpu.capture((&a, &b, &bias), |(a, b, bias)| {
        a.matmul_with(b).bias(bias).relu().eval()
    })?;
    check("captured", &f64s(&host(graph.outputs())), &want, 1e-5);
    graph.replay()?;
    check("replayed", &f64s(&host(graph.outputs())), &want, 1e-5);
    Ok(())
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn a_matmul_on_a_side_stream_sees_the_default_streams_write() -> Result<()> {
    let Some(gpu) = gpu_or_skip("a_matmul_on_a_side_stream_sees_the_default_streams_write") else {
        return Ok(());
    };
    let (m, k, n) = (64, 32, 16);
    let side = gpu.new_stream()?;
    let on_side = gpu.on(&side)?;
    let mut a = Tensor::<f32, Gpu>::zeros_on(&[m, k], &gpu)?;
    let b = Tensor::<f32, Gpu>::rand_on(&[k, n], 9, &gpu)?;
    let hb = f64s(&host(&b));
    gpu.synchronize()?;
    // The default stream fills `a` behind 50 ms of sleep; the side stream's matmul must wait.
    gpu.default_stream().sleep(Duration::from_millis(50))?;
    a.fill_(0.5)?;
    // Views of the same storage through the side stream's handle: their ops run there.
    let av = TensorView::new(a.storage(), a.layout().clone(), &on_side)?;
    let bv = TensorView::new(b.storage(), b.layout().clone(), &on_side)?;
    let out = av.matmul(&bv)?;
    let want = reference(&vec![0.5; m * k], &hb, None, (1, m, k, n), |x| x);
    check("side stream", &f64s(&host(&out)), &want, 1e-5);
    Ok(())
}
