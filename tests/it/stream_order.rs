//! Stream order owned by the memory (docs/STREAMS.md), on the device: every sequence the
//! soundness issue measured as a race, with the race window widened on purpose (a
//! `Stream::sleep` kernel holds the earlier work back, so unordered later work would run
//! first and see old data), checked element by element; then random sequences of uploads,
//! copies, kernels, sleeps and reads over four streams, checked against a CPU model.
//!
//! Skips with a printed line without a GPU.

use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use typestate_tensor::gpu::{Gpu, GpuStorage, Stream};
use typestate_tensor::layout::Layout;
use typestate_tensor::synced::{HeadAtCpu, HeadAtGpu, SyncedMemory};
use typestate_tensor::tensor::{Tensor, TensorView, TensorViewMut};
use typestate_tensor::Result;

/// Long enough that the copies of these tests (≤ 64 MiB) finish well within it.
const WINDOW: Duration = Duration::from_millis(40);
const N: usize = 1 << 22;

fn gpu_or_skip(test: &str) -> Option<Gpu> {
    if !Gpu::available() {
        println!("{test}: skipped, no CUDA driver or GPU on this machine");
        return None;
    }
    Some(Gpu::new(0).expect("GPU 0"))
}

/// Distinct, exactly representable, non-zero values.
fn values(seed: u64, n: usize) -> Vec<f32> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..n)
        .map(|_| (rng.gen_range(1..4096) as f32) * if rng.gen() { 1.0 } else { -1.0 })
        .collect()
}

fn assert_all_eq(what: &str, got: &[f32], want: impl Fn(usize) -> f32) {
    let bad = (0..got.len()).filter(|&i| got[i] != want(i)).count();
    assert_eq!(
        bad,
        0,
        "{what}: {bad} of {} elements stale or wrong",
        got.len()
    );
}

/// A push on a non-blocking stream, the GPU copy lent with `gpu_after`, then a tensor op
/// on it (which runs on the default stream): the op must read the pushed data.
/// `dst = -src`, queued on `stream`: tensor views over the buffers, on a handle of `gpu`
/// made to queue there ([`Gpu::on`]).
fn neg_on(
    gpu: &Gpu,
    stream: &Stream,
    src: &GpuStorage<f32>,
    dst: &mut GpuStorage<f32>,
    layout: &Layout,
) -> Result<()> {
    let dev = gpu.on(stream)?;
    let a = TensorView::new(src, layout.clone(), &dev)?;
    a.neg_into(&mut TensorViewMut::new(dst, layout.clone(), &dev)?)
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn op_on_the_default_stream_reads_a_push_made_on_another_stream() -> Result<()> {
    let Some(gpu) = gpu_or_skip("op_on_the_default_stream_reads_a_push_made_on_another_stream")
    else {
        return Ok(());
    };
    let s = gpu.new_stream()?;
    let x = values(1, N);
    let layout = Layout::contiguous(&[N])?;
    for round in 0..3 {
        // The GPU copy first holds a poison, so a read before the push lands is visible.
        let mut m: SyncedMemory<f32, HeadAtCpu> =
            SyncedMemory::with_gpu(&gpu, N)?.into_cpu_mut()?;
        m.cpu_mut().fill(f32::NAN);
        let mut m = m.async_gpu_push(&s)?.wait()?.into_cpu_mut()?;
        m.cpu_mut().copy_from_slice(&x);
        s.sleep(WINDOW)?;
        let m = m.async_gpu_push(&s)?;
        let lent = m.gpu_after(&s)?;
        let y = TensorView::new(lent, layout.clone(), &gpu)?.neg()?;
        let y = y.to_cpu()?;
        assert_all_eq(&format!("round {round}"), y.as_slice().unwrap(), |i| -x[i]);
        m.wait()?;
    }
    Ok(())
}

/// Memory whose own stream is `s`, written by a tensor op on the default stream, then
/// `into_cpu()` (which copies on `s`): the copy must see the write.
#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn download_on_the_memory_stream_sees_a_default_stream_write() -> Result<()> {
    let Some(gpu) = gpu_or_skip("download_on_the_memory_stream_sees_a_default_stream_write") else {
        return Ok(());
    };
    let s = gpu.new_stream()?;
    let x = values(2, N);
    let x_gpu = Tensor::from_vec(&[N], x.clone())?.to_gpu(&gpu)?;
    let mut m: SyncedMemory<f32, HeadAtGpu> =
        SyncedMemory::with_gpu_stream(&gpu, &s, N)?.into_gpu_mut()?;
    gpu.default_stream().sleep(WINDOW)?;
    {
        let mut lent = m.gpu_mut();
        let mut out = lent.view_mut(Layout::contiguous(&[N])?)?;
        x_gpu.neg_into(&mut out)?; // queued on the default stream, behind the sleep
    }
    let m = m.into_cpu()?; // D2H on `s`
    assert_all_eq("into_cpu", m.cpu(), |i| -x[i]);
    Ok(())
}

/// A second push of the same memory on the same stream while a kernel on the default
/// stream still reads the first contents: the push must wait for the read.
#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn a_second_push_waits_for_a_reader_on_another_stream() -> Result<()> {
    let Some(gpu) = gpu_or_skip("a_second_push_waits_for_a_reader_on_another_stream") else {
        return Ok(());
    };
    let s = gpu.new_stream()?;
    let first = values(3, N);
    let second = values(4, N);
    let layout = Layout::contiguous(&[N])?;
    let mut m: SyncedMemory<f32, HeadAtCpu> = SyncedMemory::with_gpu(&gpu, N)?.into_cpu_mut()?;
    m.cpu_mut().copy_from_slice(&first);
    let m = m.async_gpu_push(&s)?.wait()?;
    gpu.default_stream().sleep(WINDOW)?;
    let read = TensorView::new(m.gpu(), layout, &gpu)?.neg()?; // default stream, behind the sleep
    let mut m = m.into_cpu_mut()?;
    m.cpu_mut().copy_from_slice(&second);
    let m = m.async_gpu_push(&s)?.wait()?;
    assert_all_eq("reader", read.to_cpu()?.as_slice().unwrap(), |i| -first[i]);
    assert_all_eq("second push", &m.gpu().to_vec(&s)?, |i| second[i]);
    Ok(())
}

/// A copy between storages on a third stream, between a write on one stream and a read on
/// another: every hop is ordered.
#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn copies_chain_across_three_streams() -> Result<()> {
    let Some(gpu) = gpu_or_skip("copies_chain_across_three_streams") else {
        return Ok(());
    };
    let (s1, s2, s3) = (gpu.new_stream()?, gpu.new_stream()?, gpu.new_stream()?);
    let x = values(5, N);
    let mut a = GpuStorage::<f32>::zeros(&gpu, N, &s1)?;
    let mut b = GpuStorage::<f32>::zeros(&gpu, N, &s2)?;
    s1.sleep(WINDOW)?;
    a.copy_from_host_async(&x, &s1)?.detach(); // behind the sleep on s1
    b.copy_from_device_async(&a, &s2)?; // must wait for s1
    let layout = Layout::contiguous(&[N])?;
    let mut c = GpuStorage::<f32>::zeros(&gpu, N, &s3)?;
    neg_on(&gpu, &s3, &b, &mut c, &layout)?; // must wait for s2
    assert_all_eq("chain", &c.to_vec(&s3)?, |i| -x[i]);
    // And a write after reads on other streams waits for them: overwrite `a` on s3 while
    // s2 is held back before reading it.
    s2.sleep(WINDOW)?;
    b.copy_from_device_async(&a, &s2)?; // reads `a` on s2, behind the sleep
    let zeros = vec![0.0f32; N];
    a.copy_from_host_async(&zeros, &s3)?.detach(); // must wait for the read on s2
    assert_all_eq("write after read", &b.to_vec(&s1)?, |i| x[i]);
    assert_all_eq("overwrite", &a.to_vec(&s1)?, |_| 0.0);
    Ok(())
}

/// One stream throughout: the memory never reports another stream to wait for.
#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn one_stream_throughout_tracks_nothing() -> Result<()> {
    let Some(gpu) = gpu_or_skip("one_stream_throughout_tracks_nothing") else {
        return Ok(());
    };
    let s = gpu.new_stream()?;
    let layout = Layout::contiguous(&[1024])?;
    let a = GpuStorage::from_host(&gpu, &values(6, 1024), &s)?;
    let mut out = GpuStorage::<f32>::zeros(&gpu, 1024, &s)?;
    neg_on(&gpu, &s, &a, &mut out, &layout)?;
    assert_eq!(out.pending_streams(), vec![s.clone()]);
    // A read on another stream is tracked; a later write on the home stream, having waited
    // for it, returns the memory to the untracked state.
    let other = gpu.new_stream()?;
    let _ = out.to_vec(&other)?;
    assert_eq!(out.pending_streams(), vec![s.clone(), other.clone()]);
    neg_on(&gpu, &s, &a, &mut out, &layout)?;
    assert_eq!(out.pending_streams(), vec![s.clone()]);
    Ok(())
}

/// What one step of a random sequence does.
#[derive(Debug)]
enum Step {
    Upload {
        dst: usize,
        stream: usize,
    },
    Copy {
        dst: usize,
        src: usize,
        stream: usize,
    },
    Add {
        dst: usize,
        a: usize,
        b: usize,
        stream: usize,
    },
    MaxInPlace {
        dst: usize,
        b: usize,
        stream: usize,
    },
    NegInPlace {
        dst: usize,
        stream: usize,
    },
    Sleep {
        stream: usize,
        micros: u64,
    },
    Check {
        buf: usize,
        stream: usize,
    },
}

fn random_step(rng: &mut SmallRng, bufs: usize, streams: usize) -> Step {
    let buf = |rng: &mut SmallRng| rng.gen_range(0..bufs);
    let stream = rng.gen_range(0..streams);
    let dst = buf(rng);
    let other = |rng: &mut SmallRng| (dst + rng.gen_range(1..bufs)) % bufs;
    match rng.gen_range(0..9) {
        0 => Step::Upload { dst, stream },
        1 | 2 => Step::Copy {
            dst,
            src: other(rng),
            stream,
        },
        3 => Step::Add {
            dst,
            a: other(rng),
            b: other(rng),
            stream,
        },
        4 => Step::MaxInPlace {
            dst,
            b: other(rng),
            stream,
        },
        5 => Step::NegInPlace { dst, stream },
        6 | 7 => Step::Sleep {
            stream,
            micros: rng.gen_range(50..3000),
        },
        _ => Step::Check { buf: dst, stream },
    }
}

/// `(&mut v[i], &v[j])` for `i != j`.
fn pair<T>(v: &mut [T], i: usize, j: usize) -> (&mut T, &T) {
    assert_ne!(i, j);
    if i < j {
        let (lo, hi) = v.split_at_mut(j);
        (&mut lo[i], &hi[0])
    } else {
        let (lo, hi) = v.split_at_mut(i);
        (&mut hi[0], &lo[j])
    }
}

/// `(&mut v[d], &v[a], &v[b])` for `d` distinct from `a` and `b` (which may be equal).
fn triple<T>(v: &mut [T], d: usize, a: usize, b: usize) -> (&mut T, &T, &T) {
    assert!(d != a && d != b);
    let (mut rd, mut ra, mut rb) = (None, None, None);
    for (i, x) in v.iter_mut().enumerate() {
        if i == d {
            rd = Some(x);
        } else if i == a {
            let x = &*x;
            ra = Some(x);
            if a == b {
                rb = Some(x);
            }
        } else if i == b {
            rb = Some(&*x);
        }
    }
    (rd.unwrap(), ra.unwrap(), rb.unwrap())
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn random_sequences_over_four_streams_match_a_cpu_model() -> Result<()> {
    let Some(gpu) = gpu_or_skip("random_sequences_over_four_streams_match_a_cpu_model") else {
        return Ok(());
    };
    const LEN: usize = 1 << 18;
    let layout = Layout::contiguous(&[LEN])?;
    let mut rng = SmallRng::seed_from_u64(0x5eed);
    for case in 0..24 {
        let n_streams = 2 + case % 3; // 2 to 4
        let mut streams: Vec<Stream> = vec![gpu.default_stream().clone()];
        while streams.len() < n_streams {
            streams.push(gpu.new_stream()?);
        }
        let n_bufs = 3;
        let mut model: Vec<Vec<f32>> = (0..n_bufs).map(|b| values(100 + b as u64, LEN)).collect();
        let mut bufs: Vec<GpuStorage<f32>> = model
            .iter()
            .enumerate()
            .map(|(b, v)| GpuStorage::from_host(&gpu, v, &streams[b % n_streams]))
            .collect::<Result<_>>()?;
        let mut log = Vec::new();
        for step_no in 0..40 {
            let step = random_step(&mut rng, n_bufs, n_streams);
            log.push(format!("{step:?}"));
            match step {
                Step::Upload { dst, stream } => {
                    let data = values(rng.gen(), LEN);
                    bufs[dst]
                        .copy_from_host_async(&data, &streams[stream])?
                        .detach();
                    model[dst] = data;
                }
                Step::Copy { dst, src, stream } => {
                    let (d, s) = pair(&mut bufs, dst, src);
                    d.copy_from_device_async(s, &streams[stream])?;
                    model[dst] = model[src].clone();
                }
                Step::Add { dst, a, b, stream } => {
                    let (d, a_buf, b_buf) = triple(&mut bufs, dst, a, b);
                    let dev = gpu.on(&streams[stream])?;
                    let (a_v, b_v) = (
                        TensorView::new(a_buf, layout.clone(), &dev)?,
                        TensorView::new(b_buf, layout.clone(), &dev)?,
                    );
                    a_v.add_into(&b_v, &mut TensorViewMut::new(d, layout.clone(), &dev)?)?;
                    model[dst] = model[a].iter().zip(&model[b]).map(|(x, y)| x + y).collect();
                }
                Step::MaxInPlace { dst, b, stream } => {
                    let (d, b_buf) = pair(&mut bufs, dst, b);
                    let dev = gpu.on(&streams[stream])?;
                    let b_v = TensorView::new(b_buf, layout.clone(), &dev)?;
                    TensorViewMut::new(d, layout.clone(), &dev)?.maximum_(&b_v)?;
                    let mb = model[b].clone();
                    for (x, y) in model[dst].iter_mut().zip(&mb) {
                        *x = x.max(*y);
                    }
                }
                Step::NegInPlace { dst, stream } => {
                    let dev = gpu.on(&streams[stream])?;
                    TensorViewMut::new(&mut bufs[dst], layout.clone(), &dev)?.neg_()?;
                    for x in &mut model[dst] {
                        *x = -*x;
                    }
                }
                Step::Sleep { stream, micros } => {
                    streams[stream].sleep(Duration::from_micros(micros))?;
                }
                Step::Check { buf, stream } => {
                    let got = bufs[buf].to_vec(&streams[stream])?;
                    let bad = got.iter().zip(&model[buf]).filter(|(g, w)| g != w).count();
                    assert_eq!(
                        bad,
                        0,
                        "case {case} step {step_no}: {bad} stale elements\n{}",
                        log.join("\n")
                    );
                }
            }
        }
        for (b, buf) in bufs.iter().enumerate() {
            let stream = &streams[rng.gen_range(0..n_streams)];
            let got = buf.to_vec(stream)?;
            assert!(
                got == model[b],
                "case {case}: buffer {b} differs at the end\n{}",
                log.join("\n")
            );
        }
    }
    Ok(())
}

/// A fused expression (one generated kernel, on the default stream) reading memory pushed on
/// another stream behind a sleep: the kernel must see the pushed data, every element.
#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn a_fused_kernel_reads_a_push_made_on_another_stream() -> Result<()> {
    let Some(gpu) = gpu_or_skip("a_fused_kernel_reads_a_push_made_on_another_stream") else {
        return Ok(());
    };
    let s = gpu.new_stream()?;
    let x = values(11, N);
    let layout = Layout::contiguous(&[N])?;
    for round in 0..3 {
        let mut m: SyncedMemory<f32, HeadAtCpu> =
            SyncedMemory::with_gpu(&gpu, N)?.into_cpu_mut()?;
        m.cpu_mut().fill(f32::NAN);
        let mut m = m.async_gpu_push(&s)?.wait()?.into_cpu_mut()?;
        m.cpu_mut().copy_from_slice(&x);
        s.sleep(WINDOW)?;
        let m = m.async_gpu_push(&s)?;
        let lent = m.gpu_after(&s)?;
        let v = TensorView::new(lent, layout.clone(), &gpu)?;
        let y = (v.lazy() * 2.0f32 - &v).neg().eval()?.to_cpu()?;
        assert_all_eq(
            &format!("fused, round {round}"),
            y.as_slice().unwrap(),
            |i| -x[i],
        );
        m.wait()?;
    }
    Ok(())
}

/// A fused kernel on the default stream, behind a sleep, writing memory whose own stream is
/// `s`, then `into_cpu()` on `s`: the copy must see the fused write.
#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn download_on_the_memory_stream_sees_a_fused_write() -> Result<()> {
    let Some(gpu) = gpu_or_skip("download_on_the_memory_stream_sees_a_fused_write") else {
        return Ok(());
    };
    let s = gpu.new_stream()?;
    let x = values(12, N);
    let x_gpu = Tensor::from_vec(&[N], x.clone())?.to_gpu(&gpu)?;
    let mut m: SyncedMemory<f32, HeadAtGpu> =
        SyncedMemory::with_gpu_stream(&gpu, &s, N)?.into_gpu_mut()?;
    gpu.default_stream().sleep(WINDOW)?;
    {
        let mut lent = m.gpu_mut();
        let mut out = lent.view_mut(Layout::contiguous(&[N])?)?;
        (x_gpu.lazy() + &x_gpu).neg().eval_into(&mut out)?; // default stream, behind the sleep
    }
    let m = m.into_cpu()?; // D2H on `s`
    assert_all_eq("into_cpu after fused", m.cpu(), |i| -2.0 * x[i]);
    Ok(())
}
