//! CUDA graphs (`Gpu::capture`, docs/GRAPHS.md) on the device: captured work equals the CPU
//! engine on random data, on the first run and on replays with refilled inputs; a 100-op
//! chain; the private pool's memory returned when the graph drops; refused calls give typed
//! errors and leave the stream usable; other threads are refused on the capture's stream and
//! buffers and run untouched elsewhere; escaped buffers fail the capture; replays are ordered
//! after work on bound buffers on other streams.
//!
//! Skips with a printed line without a GPU. Run with `--test-threads=1` when measuring
//! device memory (the memory test reads `cuMemGetInfo`).

use std::sync::mpsc;
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use typestate_tensor::error::{Error, GpuError};
use typestate_tensor::gpu::{Bound, Gpu, GpuStorage, Graph, Outputs};
use typestate_tensor::layout::Layout;
use typestate_tensor::tensor::{Backend, Tensor, TensorView};
use typestate_tensor::{Cpu, Result};

/// The graph of `capture_and_replay_equal_the_cpu_engine`.
type Bound3<'a> = (
    &'a mut Tensor<f32, Gpu>,
    &'a Tensor<f32, Gpu>,
    &'a mut Tensor<f32, Gpu>,
);
type Out2 = (Tensor<f32, Gpu>, Tensor<f32, Gpu>);

/// Long enough that the copies here finish well within it.
const WINDOW: Duration = Duration::from_millis(40);

fn gpu_or_skip(test: &str) -> Option<Gpu> {
    if !Gpu::available() {
        println!("{test}: skipped, no CUDA driver or GPU on this machine");
        return None;
    }
    Some(Gpu::new(0).expect("GPU 0"))
}

/// `n` random values in `[lo, hi)`.
fn random(seed: u64, n: usize, lo: f32, hi: f32) -> Vec<f32> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..n).map(|_| rng.gen_range(lo..hi)).collect()
}

fn cpu(shape: &[usize], data: Vec<f32>) -> Tensor<f32, Cpu> {
    Tensor::from_vec(shape, data).expect("shape matches")
}

/// `got` equals `want` within `rel` of each value, and within `rel * 0.05` absolutely: the
/// inputs here are of size 0.05 to 0.5, so a result near zero is a difference of such terms
/// and carries their rounding (a few ulps of 0.05), not a few ulps of itself.
fn assert_close(what: &str, got: &[f32], want: &[f32], rel: f32) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let bad: Vec<usize> = (0..got.len())
        .filter(|&i| {
            let tol = rel * want[i].abs().max(0.05);
            (got[i] - want[i]).abs() > tol || got[i].is_nan()
        })
        .collect();
    assert!(
        bad.is_empty(),
        "{what}: {} of {} elements differ, first at {}: {} vs {}",
        bad.len(),
        got.len(),
        bad[0],
        got[bad[0]],
        want[bad[0]]
    );
}

fn is_not_capturable(r: &Result<impl Sized>) -> bool {
    matches!(r, Err(Error::Gpu(GpuError::NotCapturable { .. })))
}

/// `ops` ops alternating `* y`, `+ x`, `exp`, starting from `x * y` (bounded for `y` in
/// `[0.05, 0.15)` and `x` in `[-0.5, 0.5)`: the exp's argument stays below about 1).
fn chain<D: Backend>(
    x: &TensorView<'_, f32, D>,
    y: &TensorView<'_, f32, D>,
    ops: usize,
) -> Result<Tensor<f32, D>> {
    let mut t = x.mul(y)?;
    for i in 1..ops {
        t = match i % 3 {
            0 => t.mul(y)?,
            1 => t.add(x)?,
            _ => t.exp()?,
        };
    }
    Ok(t)
}

/// Eager ops, a fused expression into a new tensor and one into a bound output, in place
/// on a bound input: the first run and replays with new inputs equal the CPU engine.
#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn capture_and_replay_equal_the_cpu_engine() -> Result<()> {
    let Some(gpu) = gpu_or_skip("capture_and_replay_equal_the_cpu_engine") else {
        return Ok(());
    };
    let shape = [37, 29];
    let n = 37 * 29;
    let (x0, y0) = (random(1, n, -0.5, 0.5), random(2, n, 0.05, 0.15));
    let mut x = cpu(&shape, x0.clone()).to_gpu(&gpu)?;
    let y = cpu(&shape, y0.clone()).to_gpu(&gpu)?;
    let mut out = Tensor::<f32, Gpu>::zeros_on(&shape, &gpu)?;

    let reference = |x: &[f32], y: &[f32]| -> Result<(Vec<f32>, Vec<f32>, Vec<f32>)> {
        let (xc, yc) = (cpu(&shape, x.to_vec()), cpu(&shape, y.to_vec()));
        let eager = chain(&xc.view(), &yc.view(), 7)?.to_vec();
        let fused: Vec<f32> = (0..n).map(|i| (x[i] * y[i] + 1.0).tanh()).collect();
        let into: Vec<f32> = (0..n).map(|i| x[i] * 2.0 - y[i]).collect();
        Ok((eager, fused, into))
    };

    let mut graph = gpu.capture((&mut x, &y, &mut out), |(mut x, y, mut out)| {
        let eager = chain(&x.view(), &y.view(), 7)?;
        let fused = (x.lazy() * y + 1.0f32).tanh().eval()?;
        (x.lazy() * 2.0f32 - y).eval_into(&mut out)?;
        // In place on a bound input: every run adds y once more.
        x.add_(y)?;
        Ok((eager, fused))
    })?;

    let check = |graph: &Graph<Bound3<'_>, Out2>,
                 out: &[f32],
                 x: &[f32],
                 y: &[f32],
                 what: &str|
     -> Result<()> {
        let (eager, fused, into) = reference(x, y)?;
        let got = graph.outputs();
        assert_close(
            &format!("{what}: eager"),
            &got.0.to_cpu()?.to_vec(),
            &eager,
            1e-5,
        );
        assert_close(
            &format!("{what}: fused"),
            &got.1.to_cpu()?.to_vec(),
            &fused,
            1e-5,
        );
        assert_close(&format!("{what}: eval_into"), out, &into, 1e-6);
        Ok(())
    };
    // `out` is bound: read it through `bound_mut` (a view), copied to an owned tensor.
    let read_out = |graph: &mut Graph<Bound3<'_>, Out2>| -> Result<Vec<f32>> {
        let (_, _, out) = graph.bound_mut();
        Ok(out.contiguous()?.to_cpu()?.to_vec())
    };
    let first_out = read_out(&mut graph)?;
    check(&graph, &first_out, &x0, &y0, "first run")?;

    // Replays: refill x with new random contents each time (y stays).
    for round in 0..3u64 {
        let xn = random(10 + round, n, -0.5, 0.5);
        let upload = cpu(&shape, xn.clone()).to_gpu(&gpu)?;
        graph.bound_mut().0.copy_from(&upload)?;
        graph.replay()?;
        let out = read_out(&mut graph)?;
        check(&graph, &out, &xn, &y0, &format!("replay {round}"))?;
    }

    // Two replays without refilling: x grows by y each run (the in-place op is replayed).
    let before = {
        let (x, _, _) = graph.bound_mut();
        x.contiguous()?.to_cpu()?.to_vec()
    };
    graph.replay()?;
    graph.replay()?;
    let (x_back, _, _) = graph.into_parts().0;
    let after = x_back.to_cpu()?.to_vec();
    let want: Vec<f32> = (0..n).map(|i| before[i] + y0[i] + y0[i]).collect();
    assert_close("bound input after two replays", &after, &want, 1e-6);
    Ok(())
}

/// A chain of 100 eager ops on 1024 elements, replayed with new inputs.
#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn a_hundred_op_chain_replays_like_eager() -> Result<()> {
    let Some(gpu) = gpu_or_skip("a_hundred_op_chain_replays_like_eager") else {
        return Ok(());
    };
    let n = 1024;
    let y0 = random(3, n, 0.05, 0.15);
    let mut x = cpu(&[n], random(4, n, -0.5, 0.5)).to_gpu(&gpu)?;
    let y = cpu(&[n], y0.clone()).to_gpu(&gpu)?;
    let mut graph = gpu.capture((&mut x, &y), |(x, y)| chain(&x.view(), &y.view(), 100))?;
    for round in 0..4u64 {
        let xn = random(20 + round, n, -0.5, 0.5);
        graph
            .bound_mut()
            .0
            .copy_from(&cpu(&[n], xn.clone()).to_gpu(&gpu)?)?;
        graph.replay()?;
        let want = chain(&cpu(&[n], xn).view(), &cpu(&[n], y0.clone()).view(), 100)?.to_vec();
        let eager = chain(
            &cpu(&[n], random(20 + round, n, -0.5, 0.5))
                .to_gpu(&gpu)?
                .view(),
            &y.view_through(&graph),
            100,
        )?;
        assert_close(
            &format!("graph, round {round}"),
            &graph.outputs().to_cpu()?.to_vec(),
            &want,
            1e-5,
        );
        assert_close(
            &format!("eager, round {round}"),
            &eager.to_cpu()?.to_vec(),
            &want,
            1e-5,
        );
    }
    Ok(())
}

/// Reads a tensor bound read-only while the graph lives (shared borrows allow it).
trait ViewThrough {
    fn view_through<B, O>(&self, _graph: &Graph<B, O>) -> TensorView<'_, f32, Gpu>
    where
        B: Bound,
        O: typestate_tensor::gpu::Outputs;
}

impl ViewThrough for Tensor<f32, Gpu> {
    fn view_through<B, O>(&self, _graph: &Graph<B, O>) -> TensorView<'_, f32, Gpu>
    where
        B: Bound,
        O: Outputs,
    {
        self.view()
    }
}

/// The private pool holds the capture's temporaries and outputs (freed temporaries reused
/// within the capture), nothing of it lands in the GPU's allocator, and dropping the graph
/// gives it all back to the driver.
#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn the_private_pool_is_returned_when_the_graph_drops() -> Result<()> {
    let Some(gpu) = gpu_or_skip("the_private_pool_is_returned_when_the_graph_drops") else {
        return Ok(());
    };
    const MIB: usize = 1 << 20;
    let n = 64 << 20; // 256 MiB of f32
    let mut x = cpu(&[n], random(5, n, -1.0, 1.0)).to_gpu(&gpu)?;
    let body = |x: &TensorView<'_, f32, Gpu>| -> Result<Tensor<f32, Gpu>> {
        let t1 = x.exp()?;
        let t2 = t1.mul(x)?;
        drop(t1);
        t2.add(x) // may reuse t1's block
    };
    // Warm up (kernels loaded, the GPU allocator's cache filled), then measure.
    drop(body(&x.view())?);
    gpu.synchronize()?;
    let shared_before = gpu.allocator_stats();
    let (free_before, _) = gpu.memory_info()?;

    let graph = gpu.capture(&mut x, |x| body(&x.view()))?;
    let pool = graph.pool_stats();
    assert_eq!(pool.allocations.current, 1, "only the output is alive");
    assert!(pool.reserved_bytes.current >= 512 * MIB, "{pool:?}");
    assert!(
        pool.reserved_bytes.current < 3 * 256 * MIB,
        "the freed temporary's block is reused within the capture: {pool:?}"
    );
    // Device-wide free memory also moves with other processes on the GPU (the test groups
    // of `scripts/device/tests_parallel.sh` share it): a slack of 32 MiB each way keeps the
    // checks about this pool's 512 MiB and not about its neighbours' small blocks.
    const SLACK: usize = 32 * MIB;
    let (free_during, _) = gpu.memory_info()?;
    assert!(
        free_during + 512 * MIB <= free_before + SLACK,
        "{free_during} vs {free_before}"
    );
    let shared = gpu.allocator_stats();
    assert_eq!(
        shared.allocated_bytes.current, shared_before.allocated_bytes.current,
        "nothing of the capture comes from the GPU's allocator"
    );

    // The output outlives the graph through `into_parts`; the pool goes when it drops.
    let (_, output) = graph.into_parts();
    let want: Vec<f32> = {
        let xs = x.to_cpu()?.to_vec();
        xs.iter().map(|&v| v.exp() * v + v).collect()
    };
    assert_close(
        "output after into_parts",
        &output.to_cpu()?.to_vec(),
        &want,
        1e-5,
    );
    drop(output);
    gpu.synchronize()?;
    let (free_after, _) = gpu.memory_info()?;
    assert!(
        free_after + SLACK >= free_before,
        "pool returned: free {free_after} after, {free_before} before"
    );
    gpu.check_err()?;
    Ok(())
}

/// Host reads, synchronisations, other streams and unbound buffers are refused with
/// `NotCapturable`; the capture is discarded and the stream (and capturing) works after.
#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn a_non_capturable_call_is_a_typed_error_and_the_stream_stays_usable() -> Result<()> {
    let Some(gpu) =
        gpu_or_skip("a_non_capturable_call_is_a_typed_error_and_the_stream_stays_usable")
    else {
        return Ok(());
    };
    let n = 1000;
    let x0 = random(6, n, -1.0, 1.0);
    let mut x = cpu(&[n], x0.clone()).to_gpu(&gpu)?;
    let unbound = cpu(&[n], random(7, n, -1.0, 1.0)).to_gpu(&gpu)?;
    let other = gpu.new_stream()?;

    let r = gpu.capture(&mut x, |x| {
        let t = x.exp()?;
        t.contiguous()?.to_cpu()?; // a host read
        Ok(t)
    });
    assert!(is_not_capturable(&r), "host read: {r:?}");
    let r = gpu.capture(&mut x, |x| {
        let t = x.exp()?;
        gpu.synchronize()?;
        Ok(t)
    });
    assert!(is_not_capturable(&r), "synchronize: {r:?}");
    let r = gpu.capture(&mut x, |_| {
        GpuStorage::<f32>::zeros(&gpu, 16, &other).map(|_| ())
    });
    assert!(is_not_capturable(&r), "another stream: {r:?}");
    let r = gpu.capture(&mut x, |x| x.add(&unbound));
    assert!(is_not_capturable(&r), "unbound buffer: {r:?}");
    let r = gpu.capture(&mut x, |_| cpu(&[4], vec![1.0; 4]).to_gpu(&gpu));
    assert!(is_not_capturable(&r), "host upload: {r:?}");
    let r = gpu.capture(&mut x, |x| {
        gpu.capture((), |()| Ok(()))?;
        x.exp()
    });
    assert!(is_not_capturable(&r), "nested capture: {r:?}");

    // Nothing ran: x is unchanged; eager ops and a new capture work.
    assert_eq!(x.to_cpu()?.to_vec(), x0);
    let e = x.exp()?.to_cpu()?.to_vec();
    let want: Vec<f32> = x0.iter().map(|v| v.exp()).collect();
    assert_close("eager after failed captures", &e, &want, 1e-6);
    let graph = gpu.capture(&mut x, |x| x.exp())?;
    assert_close(
        "capture after failed captures",
        &graph.outputs().to_cpu()?.to_vec(),
        &want,
        1e-6,
    );
    drop(graph);
    gpu.check_err()?;
    Ok(())
}

/// While one thread captures: another thread's eager work on its own tensors runs (on the
/// legacy stream) and is not recorded; its work on the capture stream, on the capture's
/// buffers, or a second capture on the same GPU handle, is refused with
/// `CaptureInProgress`.
#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn another_threads_work_during_a_capture_is_refused_or_left_out() -> Result<()> {
    let Some(gpu) = gpu_or_skip("another_threads_work_during_a_capture_is_refused_or_left_out")
    else {
        return Ok(());
    };
    let n = 512;
    let x0 = random(8, n, -1.0, 1.0);
    let mut x = cpu(&[n], x0.clone()).to_gpu(&gpu)?;
    let mut z = cpu(&[n], vec![1.0; n]).to_gpu(&gpu)?;
    let mut seen = Vec::new();
    let mut graph = gpu.capture(&mut x, |x| {
        let t = x.exp()?;
        let capture_stream = gpu.default_stream().clone();
        std::thread::scope(|s| {
            s.spawn(|| {
                // Its own tensor, on the legacy stream: runs now, not recorded.
                let eager = z.add_(&cpu(&[n], vec![1.0; n]).to_gpu(&gpu).unwrap());
                seen.push(format!("eager: {eager:?}"));
                let on_capture_stream = GpuStorage::<f32>::zeros(&gpu, 16, &capture_stream);
                seen.push(format!("stream: {:?}", on_capture_stream.map(|_| ())));
                seen.push(format!("buffer: {:?}", t.to_cpu().map(|_| ())));
                seen.push(format!(
                    "capture: {:?}",
                    gpu.capture((), |()| Ok(())).map(|_| ())
                ));
            });
        });
        Ok(t)
    })?;
    assert_eq!(seen[0], "eager: Ok(())");
    for line in &seen[1..] {
        assert!(line.contains("CaptureInProgress"), "{line}");
    }
    graph.replay()?;
    graph.replay()?;
    let want: Vec<f32> = x0.iter().map(|v| v.exp()).collect();
    assert_close(
        "graph output",
        &graph.outputs().to_cpu()?.to_vec(),
        &want,
        1e-6,
    );
    // The other thread's add ran once, eagerly, not with the replays.
    assert_eq!(z.to_cpu()?.to_vec(), vec![2.0; n]);
    Ok(())
}

/// A buffer allocated inside the capture that escapes the closure (here through a channel)
/// fails the capture with `CaptureEscape`; it holds what the closure computed and stays
/// usable. One that escapes a capture failing for another reason is refused for good.
#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn an_escaped_buffer_fails_the_capture() -> Result<()> {
    let Some(gpu) = gpu_or_skip("an_escaped_buffer_fails_the_capture") else {
        return Ok(());
    };
    let n = 300;
    let x0 = random(9, n, -1.0, 1.0);
    let mut x = cpu(&[n], x0.clone()).to_gpu(&gpu)?;
    let (tx, rx) = mpsc::channel();
    let r = gpu.capture(&mut x, |x| {
        tx.send(x.exp()?).expect("receiver alive");
        x.mul(&x)
    });
    assert!(
        matches!(r, Err(Error::Gpu(GpuError::CaptureEscape { escaped: 1 }))),
        "{r:?}"
    );
    let escaped = rx.recv().expect("sent");
    let want: Vec<f32> = x0.iter().map(|v| v.exp()).collect();
    assert_close("escaped buffer", &escaped.to_cpu()?.to_vec(), &want, 1e-6);
    drop(escaped);

    let r = gpu.capture(&mut x, |x| {
        tx.send(x.exp()?).expect("receiver alive");
        gpu.synchronize()?;
        Ok(())
    });
    assert!(is_not_capturable(&r), "{r:?}");
    let never_computed = rx.recv().expect("sent");
    let read = never_computed.to_cpu();
    assert!(
        matches!(read, Err(Error::Gpu(GpuError::CaptureFailed { .. }))),
        "{read:?}"
    );
    let r = never_computed.exp();
    assert!(
        matches!(r, Err(Error::Gpu(GpuError::CaptureFailed { .. }))),
        "{r:?}"
    );
    Ok(())
}

/// Bound buffers last written on other streams: the capture's first run waits for a write on
/// a non-blocking stream, and a replay for a refill queued on the legacy stream behind a
/// sleep; the output read on the legacy stream waits for the replay.
#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn replays_are_ordered_after_writes_on_other_streams() -> Result<()> {
    let Some(gpu) = gpu_or_skip("replays_are_ordered_after_writes_on_other_streams") else {
        return Ok(());
    };
    let n = 1 << 20;
    let (a, b, c) = (
        random(11, n, -1.0, 1.0),
        random(12, n, -1.0, 1.0),
        random(13, n, -1.0, 1.0),
    );
    let side = gpu.new_stream()?;
    let mut storage = GpuStorage::from_host(&gpu, &a, &side)?;
    let newer = GpuStorage::from_host(&gpu, &b, &side)?;
    side.sleep(WINDOW)?;
    storage.copy_from_device_async(&newer, &side)?; // queued behind the sleep
    let mut x = Tensor::from_parts(storage, Layout::contiguous(&[n])?, gpu.clone())?;

    let mut graph = gpu.capture(&mut x, |x| x.add(&x))?;
    let twice = |v: &[f32]| v.iter().map(|x| x + x).collect::<Vec<f32>>();
    assert_eq!(
        graph.outputs().to_cpu()?.to_vec(),
        twice(&b),
        "first run saw the side write"
    );

    let upload = cpu(&[n], c.clone()).to_gpu(&gpu)?;
    gpu.default_stream().sleep(WINDOW)?;
    graph.bound_mut().copy_from(&upload)?; // legacy stream, behind the sleep
    graph.replay()?;
    assert_eq!(
        graph.outputs().to_cpu()?.to_vec(),
        twice(&c),
        "replay saw the refill"
    );
    drop(newer);
    gpu.check_err()?;
    Ok(())
}

/// Forgetting a graph leaks it; nothing replays it, and its bound tensor is usable again.
#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn forgetting_a_graph_only_leaks() -> Result<()> {
    let Some(gpu) = gpu_or_skip("forgetting_a_graph_only_leaks") else {
        return Ok(());
    };
    let x0 = random(14, 64, -1.0, 1.0);
    let mut x = cpu(&[64], x0.clone()).to_gpu(&gpu)?;
    let graph = gpu.capture(&mut x, |x| x.exp())?;
    std::mem::forget(graph);
    x.add_(&x.try_clone()?)?;
    let want: Vec<f32> = x0.iter().map(|v| v + v).collect();
    assert_eq!(x.to_cpu()?.to_vec(), want);
    drop(x);
    gpu.synchronize()?;
    Ok(())
}

/// Programmatic dependent launch (docs/GRAPHS.md): with every pointwise launch a
/// programmatic dependent (the default), a chain of dependent kernels over 2^22 elements
/// (each reading the previous one's output while it may still be finishing), a memset
/// between kernels and a fused expression give the CPU engine's results, eagerly and
/// replayed from a capture.
#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn programmatic_dependent_launches_equal_the_cpu_engine() -> Result<()> {
    let Some(gpu) = gpu_or_skip("programmatic_dependent_launches_equal_the_cpu_engine") else {
        return Ok(());
    };
    let n = 1 << 22;
    let (x0, y0) = (random(30, n, -0.5, 0.5), random(31, n, 0.05, 0.15));
    // A chain, then a memset (zeros) read by the next kernel, then a fused expression.
    fn work<D: Backend>(
        x: &TensorView<'_, f32, D>,
        y: &TensorView<'_, f32, D>,
        zeros: Tensor<f32, D>,
    ) -> Result<Tensor<f32, D>> {
        let t = chain(x, y, 9)?;
        let mut z = zeros;
        z.add_(&t)?;
        (z.lazy() * y + x).tanh().eval()
    }
    let want = {
        let (xc, yc) = (cpu(&[n], x0.clone()), cpu(&[n], y0.clone()));
        work(&xc.view(), &yc.view(), Tensor::zeros(&[n])?)?.to_vec()
    };
    {
        let mut x = cpu(&[n], x0.clone()).to_gpu(&gpu)?;
        let y = cpu(&[n], y0.clone()).to_gpu(&gpu)?;
        for round in 0..3 {
            let eager = work(&x.view(), &y.view(), Tensor::zeros_on(&[n], &gpu)?)?;
            assert_close(
                &format!("eager, round {round}"),
                &eager.to_cpu()?.to_vec(),
                &want,
                1e-5,
            );
        }
        let mut graph = gpu.capture((&mut x, &y), |(x, y)| {
            work(&x.view(), &y.view(), Tensor::zeros_on(&[n], x.device())?)
        })?;
        for round in 0..3 {
            graph.replay()?;
            assert_close(
                &format!("graph, replay {round}"),
                &graph.outputs().to_cpu()?.to_vec(),
                &want,
                1e-5,
            );
        }
    }
    Ok(())
}
