//! Stream order and graphs: a matmul captured into a CUDA graph and replayed after its input
//! changed; a matmul on the default stream reading what a copy on a side stream (held back by
//! a sleep kernel) writes; a destination read by a copy on a side stream after the matmul.

use std::time::Duration;

use crate::engine_gpu::tests::gpu_or_skip;
use crate::error::Result;
use crate::layout::Layout;
use crate::runtime::{Gpu, GpuStorage};
use crate::tensor::matmul::{Activation, MatmulEngine, MatmulJob};
use crate::tensor::{Backend, Tensor, TensorView, TensorViewMut};

/// Host `a[m,k]·b[k,n]` (row-major, f64 sums).
fn host(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut out = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            out[i * n + j] = (0..k)
                .map(|p| a[i * k + p] as f64 * b[p * n + j] as f64)
                .sum();
        }
    }
    out
}

fn close(what: &str, got: &[f32], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (*g as f64 - w).abs() <= tol * (1.0 + w.abs()),
            "{what}: at {i} got {g}, want {w}"
        );
    }
}

fn data(len: usize, seed: u32) -> Vec<f32> {
    (0..len)
        .map(|i| {
            (((i as u32).wrapping_mul(2654435761).wrapping_add(seed) >> 8) % 1000) as f32 / 500.0
                - 1.0
        })
        .collect()
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn a_captured_matmul_replays_on_new_inputs() -> Result<()> {
    let Some(gpu) = gpu_or_skip("a_captured_matmul_replays_on_new_inputs") else {
        return Ok(());
    };
    let (m, k, n) = (96, 80, 72);
    let (ha, hb) = (data(m * k, 1), data(k * n, 2));
    let mut a = Tensor::<f32, Gpu>::from_slice_on(&[m, k], &ha, &gpu)?;
    let b = Tensor::<f32, Gpu>::from_slice_on(&[k, n], &hb, &gpu)?;
    let mut out = Tensor::<f32, Gpu>::zeros_on(&[m, n], &gpu)?;
    let mut graph = gpu.capture((&mut a, &b, &mut out), |(a, b, mut out)| {
        let job = MatmulJob {
            a: a.into_view(),
            b: b.view(),
            alpha: 1.0f32,
            beta: 0.0,
            bias: None,
            activation: Some(Activation::Relu),
            allow_tf32: false,
        };
        <Gpu as MatmulEngine<f32>>::matmul(&gpu, &job, &mut out)
    })?;
    let relu = |v: Vec<f64>| v.into_iter().map(|x| x.max(0.0)).collect::<Vec<_>>();
    let stream = gpu.default_stream();
    {
        let (_, _, out) = graph.bound_mut();
        close(
            "captured run",
            &out.storage().to_vec(stream)?,
            &relu(host(&ha, &hb, m, k, n)),
            1e-5,
        );
    }
    {
        let (mut a, _, _) = graph.bound_mut();
        gpu.fill(&mut a, -0.25f32)?;
    }
    graph.replay()?;
    let (_, _, out) = graph.bound_mut();
    let quarter = vec![-0.25f32; m * k];
    close(
        "replay",
        &out.storage().to_vec(stream)?,
        &relu(host(&quarter, &hb, m, k, n)),
        1e-5,
    );
    Ok(())
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn a_matmul_reads_what_a_side_stream_wrote() -> Result<()> {
    let Some(gpu) = gpu_or_skip("a_matmul_reads_what_a_side_stream_wrote") else {
        return Ok(());
    };
    let (m, k, n) = (64, 48, 40);
    let s = gpu.default_stream();
    let side = gpu.new_stream()?;
    let (ha, hb) = (data(m * k, 3), data(k * n, 4));
    let fresh = GpuStorage::from_host(&gpu, &ha, s)?;
    let b = GpuStorage::from_host(&gpu, &hb, s)?;
    let mut a = GpuStorage::<f32>::zeros(&gpu, m * k, s)?;
    let mut d = GpuStorage::<f32>::zeros(&gpu, m * n, s)?;
    gpu.synchronize()?;
    // The copy into `a` waits behind 50 ms of sleep on the side stream: a matmul that did not
    // wait for it would read zeros.
    side.sleep(Duration::from_millis(50))?;
    a.copy_from_device_async(&fresh, &side)?;
    {
        let job = MatmulJob {
            a: TensorView::new(&a, Layout::contiguous(&[m, k])?, &gpu)?,
            b: TensorView::new(&b, Layout::contiguous(&[k, n])?, &gpu)?,
            alpha: 1.0f32,
            beta: 0.0,
            bias: None,
            activation: None,
            allow_tf32: false,
        };
        let mut dst = TensorViewMut::new(&mut d, Layout::contiguous(&[m, n])?, &gpu)?;
        <Gpu as MatmulEngine<f32>>::matmul(&gpu, &job, &mut dst)?;
    }
    // And a reader of the result on the side stream waits for the matmul.
    let mut copy = GpuStorage::<f32>::zeros(&gpu, m * n, &side)?;
    side.synchronize()?;
    s.sleep(Duration::from_millis(50))?;
    // Delay the matmul's successor: a second matmul into `d` queued behind a sleep.
    {
        let job = MatmulJob {
            a: TensorView::new(&a, Layout::contiguous(&[m, k])?, &gpu)?,
            b: TensorView::new(&b, Layout::contiguous(&[k, n])?, &gpu)?,
            alpha: 2.0f32,
            beta: 0.0,
            bias: None,
            activation: None,
            allow_tf32: false,
        };
        let mut dst = TensorViewMut::new(&mut d, Layout::contiguous(&[m, n])?, &gpu)?;
        <Gpu as MatmulEngine<f32>>::matmul(&gpu, &job, &mut dst)?;
    }
    copy.copy_from_device_async(&d, &side)?;
    let want: Vec<f64> = host(&ha, &hb, m, k, n)
        .into_iter()
        .map(|x| 2.0 * x)
        .collect();
    close(
        "side stream reads the second matmul",
        &copy.to_vec(&side)?,
        &want,
        1e-5,
    );
    Ok(())
}
