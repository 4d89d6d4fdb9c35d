//! Several GPUs in one process: copies between GPUs (direct and staged through pinned host
//! memory) of tensors, strided views, `SyncedMemory` and Blobs, checked element by element
//! against host references; the stream order of those copies across devices (a slow kernel
//! widens every race window); `DeviceMismatch` for every call that mixes GPUs; several threads
//! driving two GPUs; per-device memory snapshots.
//!
//! Every test is in the module `multi_gpu`, so the filter `multi_gpu::` selects them all.
//! - Tests that need no GPU always run.
//! - Tests that need one GPU (the staged path forced, same-GPU moves, refusals) are ignored
//!   unless the `gpu-tests` feature is on, and print a skip line without a GPU.
//! - Tests that need two GPUs are ignored unless the `multi-gpu-tests` feature is on (which
//!   implies `gpu-tests`), and print a skip line when fewer than two GPUs are present.

use std::time::Duration;

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use typestate_tensor::error::{Error, GpuError, LayoutError};
use typestate_tensor::gpu::{
    Gpu, GpuStorage, PeerPath, PeerRoute, PinnedBuffer, Stream, STAGE_CHUNK,
};
use typestate_tensor::layout::Layout;
use typestate_tensor::storage::{
    CachingAllocator, DeviceAllocator, HostMemorySource, MemoryLocation, StreamId,
};
use typestate_tensor::synced::{Blob, HeadAtCpu, HeadAtGpu, Synced, SyncedMemory};
use typestate_tensor::tensor::{Backend, Tensor, TensorView};
use typestate_tensor::Result;

/// Long enough that every copy here (at most ~64 MiB) finishes well within it.
const WINDOW: Duration = Duration::from_millis(40);

fn one_gpu(test: &str) -> Option<Gpu> {
    if !Gpu::available() {
        println!("{test}: skipped, no CUDA driver or GPU on this machine");
        return None;
    }
    Some(Gpu::new(0).expect("GPU 0"))
}

fn two_gpus(test: &str) -> Option<(Gpu, Gpu)> {
    let count = if Gpu::available() {
        Gpu::device_count().unwrap_or(0)
    } else {
        0
    };
    if count < 2 {
        println!("{test}: skipped, needs two GPUs ({count} present)");
        return None;
    }
    Some((Gpu::new(0).expect("GPU 0"), Gpu::new(1).expect("GPU 1")))
}

/// Distinct, exactly representable, non-zero values.
fn values(seed: u64, n: usize) -> Vec<f32> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..n)
        .map(|_| (rng.gen_range(1..1 << 20) as f32) * if rng.gen() { 1.0 } else { -1.0 })
        .collect()
}

fn assert_all_eq(what: &str, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let bad = got.iter().zip(want).filter(|(g, w)| g != w).count();
    assert_eq!(bad, 0, "{what}: {bad} of {} elements wrong", got.len());
}

fn is_mismatch(e: &Error, a: usize, b: usize) -> bool {
    matches!(e, Error::Gpu(GpuError::DeviceMismatch { lhs, rhs, .. })
        if (*lhs, *rhs) == (a, b) || (*lhs, *rhs) == (b, a))
}

// -----------------------------------------------------------------------------------------
// Random tensors and views
// -----------------------------------------------------------------------------------------

/// One layout step, applied the same way to a host tensor and a GPU tensor.
#[derive(Clone, Debug)]
enum ViewOp {
    Permute(Vec<usize>),
    Flip(isize),
    Narrow(isize, usize, usize),
    Step(isize, usize, isize),
}

fn random_shape(rng: &mut SmallRng) -> Vec<usize> {
    let rank = rng.gen_range(1..5);
    (0..rank).map(|_| rng.gen_range(1..12)).collect()
}

/// A few random view steps for a tensor of `shape`: permutations, flips (negative
/// strides), narrows (offsets) and stepped slices.
fn random_view_ops(rng: &mut SmallRng, shape: &[usize]) -> Vec<ViewOp> {
    let mut shape = shape.to_vec();
    let mut ops = Vec::new();
    for _ in 0..rng.gen_range(0..4) {
        let rank = shape.len();
        let dim = rng.gen_range(0..rank);
        let op = match rng.gen_range(0..4) {
            0 => {
                let mut perm: Vec<usize> = (0..rank).collect();
                perm.shuffle(rng);
                shape = perm.iter().map(|&p| shape[p]).collect();
                ViewOp::Permute(perm)
            }
            1 => ViewOp::Flip(dim as isize),
            2 => {
                let start = rng.gen_range(0..shape[dim]);
                let len = rng.gen_range(1..=shape[dim] - start);
                shape[dim] = len;
                ViewOp::Narrow(dim as isize, start, len)
            }
            _ => {
                let start = rng.gen_range(0..shape[dim]);
                shape[dim] = (shape[dim] - start).div_ceil(2);
                ViewOp::Step(dim as isize, start, 2)
            }
        };
        ops.push(op);
    }
    ops
}

fn apply<'a, D: Backend>(t: &'a Tensor<f32, D>, ops: &[ViewOp]) -> Result<TensorView<'a, f32, D>> {
    let mut v = t.view();
    for op in ops {
        v = match op {
            ViewOp::Permute(p) => v.permute(p)?,
            ViewOp::Flip(d) => v.flip(*d)?,
            ViewOp::Narrow(d, s, l) => v.narrow(*d, *s, *l)?,
            ViewOp::Step(d, s, step) => {
                let end = v.shape()[*d as usize];
                v.slice(*d, *s, end, *step)?
            }
        };
    }
    Ok(v)
}

fn random_host(rng: &mut SmallRng, seed: u64) -> Result<Tensor<f32>> {
    let shape = random_shape(rng);
    let n = shape.iter().product();
    Tensor::from_vec(&shape, values(seed, n))
}

/// Moves random tensors and views from `a` to `b` (`to_device_via` on a stream of `on`),
/// and copies them into strided destinations (`copy_from_peer_via`), against the host.
fn check_random_moves(a: &Gpu, b: &Gpu, on: &Stream, path: PeerPath, seed: u64) -> Result<()> {
    let mut rng = SmallRng::seed_from_u64(seed);
    for case in 0..24u64 {
        let host = random_host(&mut rng, seed * 100 + case)?;
        let ops = random_view_ops(&mut rng, host.shape());
        let want = apply(&host, &ops)?.contiguous()?.to_vec();
        let what = format!(
            "case {case} {ops:?} {:?} -> GPU {}",
            host.shape(),
            b.ordinal()
        );
        let src = host.to_gpu(a)?;
        // A view, consumed.
        let moved = apply(&src, &ops)?.to_device_via(b, on, path)?;
        assert_eq!(moved.device().ordinal(), b.ordinal(), "{what}");
        assert_all_eq(&what, &moved.to_cpu()?.to_vec(), &want);
        // Into a strided destination of the same shape on `b` (a flipped, transposed
        // buffer): `copy_from_peer_via` with a temporary, or straight when row-major.
        let shape = moved.shape().to_vec();
        let mut back: Vec<usize> = shape.clone();
        back.reverse();
        let mut dst_buf = Tensor::<f32, Gpu>::zeros_on(&back, b)?;
        let mut dst = dst_buf.view_mut();
        for d in 0..shape.len() / 2 {
            dst = dst.transpose(d as isize, (shape.len() - 1 - d) as isize)?;
        }
        let mut dst = dst.flip(0)?;
        assert_eq!(dst.shape(), &shape[..]);
        dst.copy_from_peer_via(&apply(&src, &ops)?, on, path)?;
        assert_all_eq(
            &format!("{what}, strided destination"),
            &dst.contiguous()?.to_cpu()?.to_vec(),
            &want,
        );
        let mut row_major = Tensor::<f32, Gpu>::zeros_on(&shape, b)?;
        row_major.copy_from_peer_via(&apply(&src, &ops)?, on, path)?;
        assert_all_eq(
            &format!("{what}, row-major destination"),
            &row_major.to_cpu()?.to_vec(),
            &want,
        );
        // The owned tensor itself, consumed (strides kept when dense).
        let owned = src.to_device_via(b, on, path)?;
        assert_all_eq(
            &format!("{what}, owned"),
            &owned.to_cpu()?.to_vec(),
            &host.to_vec(),
        );
    }
    a.check_err()?;
    b.check_err()
}

// -----------------------------------------------------------------------------------------
// No GPU needed
// -----------------------------------------------------------------------------------------

#[test]
fn multi_gpu_peer_path_parses_and_refuses_unknown_values() {
    assert_eq!("staged".parse::<PeerPath>().unwrap(), PeerPath::Staged);
    assert_eq!(" AUTO ".parse::<PeerPath>().unwrap(), PeerPath::Auto);
    assert_eq!("".parse::<PeerPath>().unwrap(), PeerPath::Auto);
    let err = "nvlink".parse::<PeerPath>().unwrap_err();
    assert!(
        matches!(&err, GpuError::InvalidPeerPath { value, .. } if value == "nvlink"),
        "{err}"
    );
    assert!(err.to_string().contains("staged"), "{err}");
    assert_eq!(PeerPath::default(), PeerPath::Auto);
    assert_eq!(STAGE_CHUNK % 8, 0, "chunks end on element boundaries");
}

#[test]
fn multi_gpu_snapshots_say_where_memory_lives() {
    let a = CachingAllocator::new(HostMemorySource::new(64 << 20));
    let block = a.allocate(3 << 20, StreamId(1)).unwrap();
    let snap = a.memory_snapshot();
    assert_eq!(snap.allocator, "caching");
    assert_eq!(snap.location, MemoryLocation::Host);
    assert_eq!(snap.ordinal, None);
    assert_eq!(snap.segments, a.snapshot());
    assert_eq!(snap.stats, a.stats());
    assert_eq!(snap.stats.allocations.current, 1);
    a.free(block).unwrap();
}

// -----------------------------------------------------------------------------------------
// One GPU
// -----------------------------------------------------------------------------------------

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn multi_gpu_staged_copies_on_one_gpu_keep_every_element() -> Result<()> {
    let Some(gpu) = one_gpu("multi_gpu_staged_copies_on_one_gpu_keep_every_element") else {
        return Ok(());
    };
    let side = gpu.new_stream()?;
    check_random_moves(&gpu, &gpu, gpu.default_stream(), PeerPath::Staged, 1)?;
    check_random_moves(&gpu, &gpu, &side, PeerPath::Staged, 2)?;
    // Same GPU, `Auto`: a device-to-device copy (views) or no copy at all (owned).
    check_random_moves(&gpu, &gpu, &side, PeerPath::Auto, 3)?;
    // Past several staging chunks (slots reused), with an odd tail.
    let n = 5 * STAGE_CHUNK / 4 + 12_345;
    let x = values(4, n);
    let src = GpuStorage::from_host(&gpu, &x, gpu.default_stream())?;
    let mut dst = GpuStorage::<f32>::zeros(&gpu, n, &side)?;
    let route = dst.copy_from_peer_async_via(&src, &side, PeerPath::Staged)?;
    assert_eq!(route, PeerRoute::Staged);
    assert_all_eq("large staged copy", &dst.to_vec(gpu.default_stream())?, &x);
    let (copy, route) = src.peer_copy(&gpu, &side, PeerPath::Auto)?;
    assert_eq!(route, PeerRoute::Local);
    assert_all_eq("local peer_copy", &copy.to_vec(&side)?, &x);
    // A length mismatch is a typed error, nothing queued.
    let mut short = GpuStorage::<f32>::zeros(&gpu, n - 1, &side)?;
    assert!(matches!(
        short.copy_from_peer_async_via(&src, &side, PeerPath::Staged),
        Err(Error::Layout(LayoutError::LengthMismatch { .. }))
    ));
    gpu.check_err()
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn multi_gpu_to_device_on_its_own_gpu_is_no_copy() -> Result<()> {
    let Some(gpu) = one_gpu("multi_gpu_to_device_on_its_own_gpu_is_no_copy") else {
        return Ok(());
    };
    let x = values(5, 1000);
    let t = Tensor::from_vec(&[10, 100], x.clone())?.to_gpu(&gpu)?;
    gpu.synchronize()?;
    let before = gpu.allocator_stats().num_allocs;
    let same = t.to_device_via(&gpu, gpu.default_stream(), PeerPath::Auto)?;
    assert_eq!(
        gpu.allocator_stats().num_allocs,
        before,
        "no allocation, no copy"
    );
    assert_all_eq("unchanged", &same.to_cpu()?.to_vec(), &x);
    // A same-GPU copy through the host when asked, strides kept for a dense transpose.
    let mut tt = same;
    tt.set_layout(tt.layout().t())?;
    let staged = tt.to_device_via(&gpu, gpu.default_stream(), PeerPath::Staged)?;
    assert_eq!(staged.strides(), &[1, 100]);
    let host_t = Tensor::from_vec(&[10, 100], x)?;
    assert_all_eq(
        "staged transpose",
        &staged.to_cpu()?.to_vec(),
        &host_t.t().contiguous()?.to_vec(),
    );
    gpu.check_err()
}

/// A slow kernel on the source's stream before its data is written, the copy on another
/// stream, the destination read on a third: the copy must see the data.
fn check_cross_stream_order(a: &Gpu, b: &Gpu, path: PeerPath, copy_on_b: bool) -> Result<()> {
    let n = 1 << 22;
    let x = values(6, n);
    let staging = GpuStorage::from_host(a, &x, a.default_stream())?;
    let s_src = a.new_stream()?;
    let mut src = GpuStorage::<f32>::zeros(a, n, &s_src)?;
    s_src.sleep(WINDOW)?;
    src.copy_from_device_async(&staging, &s_src)?; // lands after the sleep
    let s_copy = if copy_on_b {
        b.new_stream()?
    } else {
        a.new_stream()?
    };
    let s_dst = b.new_stream()?;
    let mut dst = GpuStorage::<f32>::zeros(b, n, &s_dst)?;
    dst.copy_from_peer_async_via(&src, &s_copy, path)?;
    let s_read = b.new_stream()?;
    assert_all_eq(
        &format!("{path:?}, copy on GPU {}", s_copy.ordinal()),
        &dst.to_vec(&s_read)?,
        &x,
    );
    // And the reverse race: the source overwritten right after a copy held back by a
    // slow kernel on the copy's stream; the copy must read the old data.
    let y = values(7, n);
    let ys = GpuStorage::from_host(a, &y, a.default_stream())?;
    s_copy.sleep(WINDOW)?;
    dst.copy_from_peer_async_via(&src, &s_copy, path)?;
    src.copy_from_device_async(&ys, a.default_stream())?;
    assert_all_eq("copy before the overwrite", &dst.to_vec(&s_read)?, &x);
    assert_all_eq("the overwrite", &src.to_vec(&s_src)?, &y);
    a.check_err()?;
    b.check_err()
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn multi_gpu_staged_copies_on_one_gpu_keep_stream_order() -> Result<()> {
    let Some(gpu) = one_gpu("multi_gpu_staged_copies_on_one_gpu_keep_stream_order") else {
        return Ok(());
    };
    check_cross_stream_order(&gpu, &gpu, PeerPath::Staged, true)?;
    check_cross_stream_order(&gpu, &gpu, PeerPath::Auto, true)
}

/// Every state of a `SyncedMemory` moved from `a` to `b`, against the host, with the
/// copies counted.
fn check_synced_moves(a: &Gpu, b: &Gpu, path: PeerPath) -> Result<()> {
    let n = 100_003;
    let x = values(8, n);
    let peer = |moved: usize| {
        if a.ordinal() == b.ordinal() && path == PeerPath::Auto {
            0
        } else {
            moved
        }
    };
    // Uninitialized -> HeadAtGpu, zero-filled on `b`.
    let m = SyncedMemory::<f32, _>::with_gpu(a, n)?;
    let m: SyncedMemory<f32, HeadAtGpu> = m.into_gpu_of_via(b, path)?;
    assert_eq!(m.gpu().gpu().ordinal(), b.ordinal());
    assert_eq!(m.gpu_device().map(Gpu::ordinal), Some(b.ordinal()));
    assert_all_eq(
        "uninitialized",
        &m.gpu().to_vec(b.default_stream())?,
        &vec![0.0; n],
    );
    // HeadAtCpu -> Synced: uploaded to `b`.
    let mut m: SyncedMemory<f32, HeadAtCpu> = SyncedMemory::with_gpu(a, n)?.into_cpu_mut()?;
    m.cpu_mut().copy_from_slice(&x);
    let m: SyncedMemory<f32, Synced> = m.into_gpu_of_via(b, path)?;
    assert_all_eq(
        "head at cpu, GPU copy",
        &m.gpu().to_vec(b.default_stream())?,
        &x,
    );
    assert_all_eq("head at cpu, CPU copy", m.cpu(), &x);
    assert_eq!(m.stats().h2d_copies, 1);
    // HeadAtGpu -> HeadAtGpu: one peer copy; then back to the CPU from `b`.
    let mut m: SyncedMemory<f32, HeadAtGpu> = SyncedMemory::with_gpu(a, n)?.into_gpu_mut()?;
    m.gpu_mut().copy_from_host(&x, a.default_stream())?;
    let m: SyncedMemory<f32, HeadAtGpu> = m.into_gpu_of_via(b, path)?;
    assert_eq!(m.stats().peer_copies, peer(1));
    assert_eq!(m.stream().map(Stream::ordinal), Some(b.ordinal()));
    let m: SyncedMemory<f32, Synced> = m.into_cpu()?;
    assert_all_eq("head at gpu", m.cpu(), &x);
    // Synced -> Synced: the GPU copy moves, the CPU copy stays; the GPU side is then
    // written on `b` and read back.
    let m: SyncedMemory<f32, Synced> = m.into_gpu_of_via(a, path)?;
    assert_eq!(m.gpu().gpu().ordinal(), a.ordinal());
    assert_all_eq("synced, GPU copy", &m.gpu().to_vec(a.default_stream())?, &x);
    assert_all_eq("synced, CPU copy", m.cpu(), &x);
    let mut m = m.into_gpu_mut()?;
    let layout = Layout::contiguous(&[n])?;
    m.gpu_mut().view_mut(layout)?.neg_()?;
    let m = m.into_cpu()?;
    let neg: Vec<f32> = x.iter().map(|v| -v).collect();
    assert_all_eq("written after the move", m.cpu(), &neg);
    a.check_err()?;
    b.check_err()
}

fn check_blob_moves(a: &Gpu, b: &Gpu, path: PeerPath) -> Result<()> {
    let shape = [3, 5, 7, 11];
    let count: usize = shape.iter().product();
    let (x, g) = (values(9, count), values(10, count));
    let blob = Blob::<f32, _>::with_gpu(a, &shape)?;
    let mut blob = blob.into_cpu_data_mut()?.into_gpu_diff_mut()?;
    blob.cpu_data_mut().copy_from_slice(&x);
    blob.gpu_diff_mut().copy_from_host(&g, a.default_stream())?;
    let blob: Blob<f32, Synced, HeadAtGpu> = blob.into_gpu_of_via(b, path)?;
    assert_eq!(blob.gpu_device().map(Gpu::ordinal), Some(b.ordinal()));
    assert_all_eq(
        "blob data",
        &blob.gpu_data().to_vec(b.default_stream())?,
        &x,
    );
    assert_all_eq(
        "blob diff",
        &blob.gpu_diff().to_vec(b.default_stream())?,
        &g,
    );
    // Caffe's update on the new GPU: data -= diff.
    let blob = blob.into_gpu_data_mut()?.update()?;
    let blob = blob.into_cpu_data()?;
    let want: Vec<f32> = x.iter().zip(&g).map(|(x, g)| x - g).collect();
    assert_all_eq("update after the move", blob.cpu_data(), &want);
    // An uninitialized diff moves as `into_gpu_diff` would make it: zeros on `b`.
    let blob = Blob::<f32, _>::with_gpu(a, &shape)?.into_gpu_of_via(b, path)?;
    assert_all_eq(
        "zeros",
        &blob.gpu_diff().to_vec(b.default_stream())?,
        &vec![0.0; count],
    );
    a.check_err()?;
    b.check_err()
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn multi_gpu_synced_memory_and_blobs_move_on_one_gpu() -> Result<()> {
    let Some(gpu) = one_gpu("multi_gpu_synced_memory_and_blobs_move_on_one_gpu") else {
        return Ok(());
    };
    for path in [PeerPath::Auto, PeerPath::Staged] {
        check_synced_moves(&gpu, &gpu, path)?;
        check_blob_moves(&gpu, &gpu, path)?;
    }
    // CPU-only memory becomes tied to the GPU.
    let m = SyncedMemory::from_vec(values(11, 77));
    let m: SyncedMemory<f32, Synced> = m.into_gpu_of(&gpu)?;
    assert_eq!(m.gpu_device().map(Gpu::ordinal), Some(0));
    assert_all_eq(
        "cpu-only",
        &m.gpu().to_vec(gpu.default_stream())?,
        &values(11, 77),
    );
    gpu.check_err()
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a GPU: cargo test --features gpu-tests"
)]
fn multi_gpu_peer_copies_are_refused_inside_a_capture() -> Result<()> {
    let Some(gpu) = one_gpu("multi_gpu_peer_copies_are_refused_inside_a_capture") else {
        return Ok(());
    };
    let mut x = Tensor::from_vec(&[64], values(12, 64))?.to_gpu(&gpu)?;
    let y = Tensor::from_vec(&[64], values(13, 64))?.to_gpu(&gpu)?;
    let r = gpu.capture((&mut x, &y), |(mut x, y)| {
        x.copy_from_peer_via(y, gpu.default_stream(), PeerPath::Staged)?;
        Ok(())
    });
    assert!(
        matches!(r, Err(Error::Gpu(GpuError::NotCapturable { .. }))),
        "{:?}",
        r.err()
    );
    assert_all_eq("untouched", &x.to_cpu()?.to_vec(), &values(12, 64));
    let snap = gpu.memory_snapshot();
    assert_eq!(snap.ordinal, Some(0));
    assert_eq!(snap.location, MemoryLocation::Device { ordinal: 0 });
    assert_eq!(gpu.host_memory_snapshot().ordinal, Some(0));
    gpu.check_err()
}

// -----------------------------------------------------------------------------------------
// Two GPUs
// -----------------------------------------------------------------------------------------

#[test]
#[cfg_attr(
    not(feature = "multi-gpu-tests"),
    ignore = "needs two GPUs: cargo test --features multi-gpu-tests"
)]
fn multi_gpu_peer_access_is_asked_once_and_copies_take_the_right_route() -> Result<()> {
    let Some((g0, g1)) =
        two_gpus("multi_gpu_peer_access_is_asked_once_and_copies_take_the_right_route")
    else {
        return Ok(());
    };
    let can = g0.can_access_peer(&g1)? && g1.can_access_peer(&g0)?;
    let on = g0.enable_peer_access(&g1)? && g1.enable_peer_access(&g0)?;
    println!("GPU 0 <-> GPU 1: can access peer {can}, enabled {on}");
    assert_eq!(g0.enable_peer_access(&g1)?, g0.enable_peer_access(&g1)?);
    assert!(g0.can_access_peer(&g0)?);
    let x = values(14, 4096);
    let src = GpuStorage::from_host(&g0, &x, g0.default_stream())?;
    let mut dst = GpuStorage::<f32>::zeros(&g1, x.len(), g1.default_stream())?;
    let route = dst.copy_from_peer_async_via(&src, g0.default_stream(), PeerPath::Auto)?;
    assert_eq!(
        route,
        if on {
            PeerRoute::Direct
        } else {
            PeerRoute::Staged
        }
    );
    assert_all_eq("auto", &dst.to_vec(g1.default_stream())?, &x);
    let route = dst.copy_from_peer_async_via(&src, g1.default_stream(), PeerPath::Staged)?;
    assert_eq!(route, PeerRoute::Staged);
    assert_all_eq("staged", &dst.to_vec(g1.default_stream())?, &x);
    g0.check_err()?;
    g1.check_err()
}

#[test]
#[cfg_attr(
    not(feature = "multi-gpu-tests"),
    ignore = "needs two GPUs: cargo test --features multi-gpu-tests"
)]
fn multi_gpu_tensors_and_views_move_both_ways() -> Result<()> {
    let Some((g0, g1)) = two_gpus("multi_gpu_tensors_and_views_move_both_ways") else {
        return Ok(());
    };
    let mut seed = 20;
    for path in [PeerPath::Auto, PeerPath::Staged] {
        for (a, b) in [(&g0, &g1), (&g1, &g0)] {
            // The copy on the source's default stream, and on a stream of the destination.
            check_random_moves(a, b, a.default_stream(), path, seed)?;
            check_random_moves(a, b, &b.new_stream()?, path, seed + 1)?;
            seed += 2;
        }
    }
    // Large enough for several staging chunks.
    let n = 3 * STAGE_CHUNK / 4 + 777;
    let x = values(15, n);
    for path in [PeerPath::Auto, PeerPath::Staged] {
        let t = Tensor::from_vec(&[n], x.clone())?.to_gpu(&g0)?;
        let t = t.to_device_via(&g1, g0.default_stream(), path)?;
        let t = t.to_device_via(&g0, g0.default_stream(), path)?;
        assert_all_eq(&format!("{path:?} round trip"), &t.to_cpu()?.to_vec(), &x);
    }
    Ok(())
}

#[test]
#[cfg_attr(
    not(feature = "multi-gpu-tests"),
    ignore = "needs two GPUs: cargo test --features multi-gpu-tests"
)]
fn multi_gpu_copies_between_gpus_keep_stream_order() -> Result<()> {
    let Some((g0, g1)) = two_gpus("multi_gpu_copies_between_gpus_keep_stream_order") else {
        return Ok(());
    };
    for path in [PeerPath::Auto, PeerPath::Staged] {
        for copy_on_b in [true, false] {
            check_cross_stream_order(&g0, &g1, path, copy_on_b)?;
            check_cross_stream_order(&g1, &g0, path, copy_on_b)?;
        }
    }
    // A moved tensor's source memory is freed at once; the allocator must not hand it
    // out (and a fill overwrite it) before the delayed copy has read it.
    let n = 1 << 22;
    let x = values(16, n);
    for path in [PeerPath::Auto, PeerPath::Staged] {
        let src = Tensor::from_vec(&[n], x.clone())?.to_gpu(&g0)?;
        g0.synchronize()?;
        let s1 = g1.new_stream()?;
        s1.sleep(WINDOW)?;
        let moved = src.to_device_via(&g1, &s1, path)?;
        let reuse = Tensor::<f32, Gpu>::full_on(&[n], 7.0, &g0)?;
        assert_all_eq(
            &format!("{path:?}, freed source"),
            &moved.to_cpu()?.to_vec(),
            &x,
        );
        assert!(reuse.to_cpu()?.to_vec().iter().all(|&v| v == 7.0));
    }
    g0.check_err()?;
    g1.check_err()
}

#[test]
#[cfg_attr(
    not(feature = "multi-gpu-tests"),
    ignore = "needs two GPUs: cargo test --features multi-gpu-tests"
)]
fn multi_gpu_synced_memory_and_blobs_move_both_ways() -> Result<()> {
    let Some((g0, g1)) = two_gpus("multi_gpu_synced_memory_and_blobs_move_both_ways") else {
        return Ok(());
    };
    for path in [PeerPath::Auto, PeerPath::Staged] {
        for (a, b) in [(&g0, &g1), (&g1, &g0)] {
            check_synced_moves(a, b, path)?;
            check_blob_moves(a, b, path)?;
        }
    }
    Ok(())
}

#[test]
#[cfg_attr(
    not(feature = "multi-gpu-tests"),
    ignore = "needs two GPUs: cargo test --features multi-gpu-tests"
)]
fn multi_gpu_every_mixed_device_call_is_a_device_mismatch() -> Result<()> {
    let Some((g0, g1)) = two_gpus("multi_gpu_every_mixed_device_call_is_a_device_mismatch") else {
        return Ok(());
    };
    let n = 256;
    let x = values(17, n);
    let layout = Layout::contiguous(&[n])?;
    let a0 = Tensor::from_vec(&[n], x.clone())?.to_gpu(&g0)?;
    let b1 = Tensor::from_vec(&[n], x.clone())?.to_gpu(&g1)?;
    let mut out0 = Tensor::<f32, Gpu>::zeros_on(&[n], &g0)?;
    let mut out1 = Tensor::<f32, Gpu>::zeros_on(&[n], &g1)?;
    let expect = |what: &str, r: Result<()>| match r {
        Err(e) if is_mismatch(&e, 0, 1) => {}
        other => panic!("{what}: expected DeviceMismatch naming GPUs 0 and 1, got {other:?}"),
    };
    // Tensor ops and `_into` outputs.
    expect("a0 + b1", (&a0 + &b1).map(drop));
    expect("a0.add(b1)", a0.add(&b1).map(drop));
    expect("add_into out1", a0.add_into(&a0, &mut out1));
    expect("exp_into out1", a0.exp_into(&mut out1));
    expect(
        "where_cond",
        Tensor::where_cond(&a0.gt(&a0)?, &a0, &b1).map(drop),
    );
    expect("copy_from", out0.copy_from(&b1));
    expect("add_ in place", out0.add_(&b1));
    // Storage, streams, events.
    let s0 = g0.new_stream()?;
    let s1 = g1.new_stream()?;
    expect(
        "zeros on a foreign stream",
        GpuStorage::<f32>::zeros(&g0, n, &s1).map(drop),
    );
    let st0 = GpuStorage::from_host(&g0, &x, &s0)?;
    let st1 = GpuStorage::from_host(&g1, &x, &s1)?;
    let mut host = vec![0.0f32; n];
    expect("copy_to_host", st0.copy_to_host(&mut host, &s1));
    let mut st0b = GpuStorage::<f32>::zeros(&g0, n, &s0)?;
    expect("copy_from_device", st0b.copy_from_device(&st1, &s0));
    expect(
        "peer copy on a stream of neither GPU",
        st0b.copy_from_peer_async(&st0, &s1).map(drop),
    );
    expect(
        "a device handle on a foreign stream",
        g0.on(&s1).map(drop).map_err(Error::from),
    );
    expect(
        "Event::record",
        g0.new_event()?.record(&s1).map_err(Error::from),
    );
    let (e0, e1) = (s0.record_timing_event()?, s1.record_timing_event()?);
    expect(
        "elapsed_ms",
        e0.elapsed_ms(&e1).map(drop).map_err(Error::from),
    );
    // Views and tensors naming the wrong device.
    expect(
        "TensorView::new",
        TensorView::new(&st1, layout.clone(), &g0).map(drop),
    );
    let back = Tensor::from_parts(st1, layout.clone(), g0.clone());
    let st1 = match back {
        Err(h) => {
            assert!(is_mismatch(h.error(), 0, 1), "{}", h.error());
            h.into_inner().0
        }
        Ok(_) => panic!("from_parts accepted storage of GPU 1 for GPU 0"),
    };
    // SyncedMemory and Blob.
    expect(
        "with_gpu_stream",
        SyncedMemory::<f32, _>::with_gpu_stream(&g0, &s1, n).map(drop),
    );
    let m: SyncedMemory<f32, HeadAtCpu> = SyncedMemory::with_gpu(&g0, n)?.into_cpu_mut()?;
    let m = match m.async_gpu_push(&s1) {
        Err(h) => {
            assert!(is_mismatch(h.error(), 0, 1), "{}", h.error());
            h.into_inner()
        }
        Ok(_) => panic!("a push on another GPU's stream was accepted"),
    };
    let (m, old) = match m.set_gpu_data(st1) {
        Err(h) => {
            assert!(is_mismatch(h.error(), 0, 1), "{}", h.error());
            h.into_inner()
        }
        Ok(_) => panic!("set_gpu_data accepted storage of GPU 1"),
    };
    drop(old);
    let pushed = m.async_gpu_push(&s0)?;
    expect("gpu_after", pushed.gpu_after(&s1).map(drop));
    pushed.wait()?;
    let shared = Blob::<f32, _>::with_gpu(&g1, &[n])?
        .into_gpu_data()?
        .freeze_data()
        .shared_data();
    let blob0 = Blob::<f32, _>::with_gpu(&g0, &[n])?;
    assert!(blob0
        .with_shared_data(shared)
        .is_err_and(|h| is_mismatch(h.error(), 0, 1)));
    // A graph over a tensor of another GPU.
    let r = g0.capture(&b1, |b| b.neg());
    assert!(r.is_err_and(|e| is_mismatch(&e, 0, 1)));
    // Pinned staging buffers are portable: one of GPU 0 serves GPU 1's copies.
    let mut pinned = PinnedBuffer::<f32>::zeros(&g0, n)?;
    b1.storage()
        .copy_to_pinned_async(&mut pinned, &s1)?
        .wait()?;
    assert_all_eq("portable pinned buffer", pinned.as_slice()?, &x);
    // Nothing above left a driver error behind.
    g0.synchronize()?;
    g1.synchronize()?;
    g0.check_err()?;
    g1.check_err()
}

#[test]
#[cfg_attr(
    not(feature = "multi-gpu-tests"),
    ignore = "needs two GPUs: cargo test --features multi-gpu-tests"
)]
fn multi_gpu_threads_drive_two_gpus_at_once() -> Result<()> {
    let Some((g0, g1)) = two_gpus("multi_gpu_threads_drive_two_gpus_at_once") else {
        return Ok(());
    };
    let threads: Vec<_> = (0..6u64)
        .map(|t| {
            let (a, b) = if t % 2 == 0 {
                (g0.clone(), g1.clone())
            } else {
                (g1.clone(), g0.clone())
            };
            std::thread::spawn(move || -> Result<()> {
                let mut rng = SmallRng::seed_from_u64(100 + t);
                for round in 0..12u64 {
                    let host = random_host(&mut rng, 1000 * t + round)?;
                    let ops = random_view_ops(&mut rng, host.shape());
                    let view = apply(&host, &ops)?;
                    // Exact ops only: the CPU engine is the reference.
                    let want = (&view.neg()? * &view)?.add(&view)?.to_vec();
                    let on_a = host.to_gpu(&a)?;
                    let v = apply(&on_a, &ops)?;
                    let on_a = (&v.neg()? * &v)?;
                    let path = if round % 3 == 0 {
                        PeerPath::Staged
                    } else {
                        PeerPath::Auto
                    };
                    let on_b = on_a.to_device_via(&b, a.default_stream(), path)?;
                    let v_b = apply(&host.to_gpu(&a)?, &ops)?.to_device(&b)?;
                    let got = on_b.add(&v_b)?.to_cpu()?.to_vec();
                    assert_all_eq(&format!("thread {t} round {round}"), &got, &want);
                }
                a.check_err()?;
                b.check_err()
            })
        })
        .collect();
    for t in threads {
        t.join().expect("thread panicked")?;
    }
    // Per-device statistics and snapshots say which GPU they are.
    let x = Tensor::<f32, Gpu>::zeros_on(&[1 << 20], &g1)?;
    g1.synchronize()?;
    let (s0, s1) = (g0.memory_snapshot(), g1.memory_snapshot());
    assert_eq!((s0.ordinal, s1.ordinal), (Some(0), Some(1)));
    assert_eq!(s1.location, MemoryLocation::Device { ordinal: 1 });
    assert!(s1.stats.allocated_bytes.current >= 4 << 20);
    assert_eq!(s1.stats, g1.allocator_stats());
    drop(x);
    Ok(())
}
