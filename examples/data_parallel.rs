//! Caffe's multi-GPU solver in small: data-parallel training with NCCL.
//!
//! Every GPU holds a replica of two Blobs, the weights `a` and `b` of a per-coordinate
//! linear model `y = a·x + b` (`P` coordinates, elementwise). Each step, each replica
//! computes the gradient of the squared error over its own shard of a seeded data set with
//! fused pointwise kernels into the Blobs' diffs (`diff += lr/S · (a·x + b − y)·x` per
//! sample, and the same without `·x` for `b`), the diffs are all-reduced (average) across
//! the GPUs, and every replica calls Caffe's `update()` (`data −= diff`). Rank 0's initial
//! weights are broadcast to the others first (the others start from other values).
//!
//! At the end it checks that every replica is bitwise equal to the others and that they
//! match a run of the same steps on the host in `f64` over all shards, within floating-point
//! tolerance, and exits with status 1 when either fails.
//!
//! ```text
//! cargo run --release --example data_parallel                 # one process, every GPU
//! cargo run --release --example data_parallel -- --spawn 2    # one process per GPU
//! torchrun --no-python --standalone --nproc-per-node 2 target/release/examples/data_parallel
//! cargo run --release --example data_parallel -- --overlap-bench
//! ```
//!
//! Options: `--steps N` (20), `--params P` (65536), `--samples S` per GPU (8), `--lr LR`
//! (0.5), `--gpus N` (all, one-process mode), `--spawn N` (re-executes itself N times with
//! `RANK`, `WORLD_SIZE`, `LOCAL_RANK` and `TYPESTATE_TENSOR_NCCL_ID_FILE` set, the way
//! `torchrun` starts ranks; started with `RANK` and `WORLD_SIZE` already set it runs as that
//! rank), `--overlap-bench` (times a step whose all-reduces run on their own stream,
//! overlapping the next layer's pointwise work, against the same step with the all-reduces
//! on the compute stream; `--bench-params P` per layer, 4 Mi).
//!
//! `NCCL_NVLS_ENABLE=0`, `TORCH_SYMM_MEM_DISABLE_MULTICAST=1` and `NVSHMEM_DISABLE_NVLS=1`
//! are set if absent, in this process and in the ones it starts: NVLink multicast stays
//! off. NCCL must be loadable: put `$(bash scripts/nccl-lib.sh)` on `LD_LIBRARY_PATH`.

use std::process::{Command, ExitCode};
use std::time::Instant;

use typestate_tensor::collective::{self, Communicator, LocalGroup, ReduceOp, ID_FILE_VAR};
use typestate_tensor::gpu::{Gpu, Stream};
use typestate_tensor::synced::{Blob, HeadAtGpu, Uninitialized};
use typestate_tensor::tensor::{expr, Tensor};
use typestate_tensor::Error;

type Res<T> = Result<T, Box<dyn std::error::Error>>;
/// A replica's parameter: data (weights) and diff (gradient) both current on its GPU.
type Param = Blob<f32, HeadAtGpu, HeadAtGpu>;

/// The environment every process of this example keeps (NVLink multicast off).
const NCCL_ENV: [(&str, &str); 3] = [
    ("NCCL_NVLS_ENABLE", "0"),
    ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
    ("NVSHMEM_DISABLE_NVLS", "1"),
];

#[derive(Clone, Debug)]
struct Args {
    steps: usize,
    params: usize,
    samples: usize,
    lr: f32,
    gpus: Option<usize>,
    spawn: Option<usize>,
    overlap_bench: bool,
    bench_params: usize,
    /// The arguments as given, less `--spawn N` (for the processes it starts).
    forward: Vec<String>,
}

fn parse_args() -> Res<Args> {
    let mut args = Args {
        steps: 20,
        params: 1 << 16,
        samples: 8,
        lr: 0.5,
        gpus: None,
        spawn: None,
        overlap_bench: false,
        bench_params: 4 << 20,
        forward: Vec::new(),
    };
    let given: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < given.len() {
        let flag = given[i].as_str();
        if flag == "--overlap-bench" {
            args.overlap_bench = true;
            args.forward.push(given[i].clone());
            i += 1;
            continue;
        }
        const VALUED: [&str; 7] = [
            "--spawn",
            "--steps",
            "--params",
            "--samples",
            "--lr",
            "--gpus",
            "--bench-params",
        ];
        if !VALUED.contains(&flag) {
            return Err(format!("unknown argument {flag}").into());
        }
        let value = given
            .get(i + 1)
            .ok_or_else(|| format!("{flag} needs a value"))?;
        match flag {
            "--spawn" => args.spawn = Some(value.parse()?),
            "--steps" => args.steps = value.parse()?,
            "--params" => args.params = value.parse()?,
            "--samples" => args.samples = value.parse()?,
            "--lr" => args.lr = value.parse()?,
            "--gpus" => args.gpus = Some(value.parse()?),
            "--bench-params" => args.bench_params = value.parse()?,
            other => return Err(format!("unknown argument {other}").into()),
        }
        if flag != "--spawn" {
            args.forward.extend([given[i].clone(), value.clone()]);
        }
        i += 2;
    }
    if args.samples == 0 || args.params == 0 || args.bench_params == 0 {
        return Err("--params, --samples and --bench-params must be positive".into());
    }
    Ok(args)
}

// ---------------------------------------------------------------------------------------------
// The data set: every value a hash of its index, so any process makes any shard alone.
// ---------------------------------------------------------------------------------------------

/// A value in [-1, 1) from `(stream, index)` (splitmix64).
fn value(stream: u64, index: u64) -> f32 {
    let mut z = stream
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        .wrapping_add(index)
        .wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    ((z >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
}

/// Sample `s`'s input `x` and target `y` (`P` coordinates each): `y = a*·x + b* + noise`.
fn sample(p: usize, s: usize) -> (Vec<f32>, Vec<f32>) {
    let x: Vec<f32> = (0..p).map(|i| value(1, (s * p + i) as u64)).collect();
    let y = x
        .iter()
        .enumerate()
        .map(|(i, &xi)| {
            let a = 2.0 * value(2, i as u64);
            let b = value(3, i as u64);
            a * xi + b + 0.01 * value(4, (s * p + i) as u64)
        })
        .collect();
    (x, y)
}

/// Rank 0's initial weights; the others start elsewhere, and the broadcast fixes that.
fn initial(p: usize, rank: usize) -> (Vec<f32>, Vec<f32>) {
    let a = (0..p).map(|i| value(10 + rank as u64, i as u64)).collect();
    let b = (0..p)
        .map(|i| 0.5 * value(20 + rank as u64, i as u64))
        .collect();
    (a, b)
}

/// The same steps on the host, in `f64`, over all `n` samples.
fn reference(args: &Args, n: usize) -> (Vec<f64>, Vec<f64>) {
    let p = args.params;
    let (a0, b0) = initial(p, 0);
    let mut a: Vec<f64> = a0.iter().map(|&v| f64::from(v)).collect();
    let mut b: Vec<f64> = b0.iter().map(|&v| f64::from(v)).collect();
    let data: Vec<_> = (0..n).map(|s| sample(p, s)).collect();
    let lr = f64::from(args.lr);
    for _ in 0..args.steps {
        let mut ga = vec![0.0; p];
        let mut gb = vec![0.0; p];
        for (x, y) in &data {
            for i in 0..p {
                let r = a[i] * f64::from(x[i]) + b[i] - f64::from(y[i]);
                ga[i] += r * f64::from(x[i]);
                gb[i] += r;
            }
        }
        for i in 0..p {
            a[i] -= lr * ga[i] / n as f64;
            b[i] -= lr * gb[i] / n as f64;
        }
    }
    (a, b)
}

// ---------------------------------------------------------------------------------------------
// Replicas and the exchange
// ---------------------------------------------------------------------------------------------

/// One rank's shard: `S` samples as `[S, P]` tensors.
struct Shard {
    x: Tensor<f32, Gpu>,
    y: Tensor<f32, Gpu>,
}

fn shard(gpu: &Gpu, p: usize, samples: usize, rank: usize) -> Res<Shard> {
    let mut xs = Vec::with_capacity(samples * p);
    let mut ys = Vec::with_capacity(samples * p);
    for s in rank * samples..(rank + 1) * samples {
        let (x, y) = sample(p, s);
        xs.extend(x);
        ys.extend(y);
    }
    Ok(Shard {
        x: Tensor::from_vec(&[samples, p], xs)?.to_gpu(gpu)?,
        y: Tensor::from_vec(&[samples, p], ys)?.to_gpu(gpu)?,
    })
}

/// A blob of `values` on `gpu`, data and diff (zeros) current on the GPU.
fn param(gpu: &Gpu, values: &[f32]) -> Res<Param> {
    let mut blob =
        Blob::<f32, Uninitialized>::with_gpu(gpu, &[values.len()])?.into_cpu_data_mut()?;
    blob.cpu_data_mut().copy_from_slice(values);
    Ok(blob.into_gpu_data_mut()?.into_gpu_diff_mut()?)
}

/// Writes the shard's gradient step into the diffs of `a` and `b`: fused pointwise kernels
/// on the GPU's default stream, one per sample, each writing both diffs.
fn local_diffs(a: &mut Param, b: &mut Param, shard: &Shard, lr: f32) -> Res<()> {
    let samples = shard.x.shape()[0];
    let k = lr / samples as f32;
    let (mut ga, av) = a.gpu_diff_mut_with_data()?;
    let (mut gb, bv) = b.gpu_diff_mut_with_data()?;
    ga.fill_(0.0)?;
    gb.fill_(0.0)?;
    for s in 0..samples {
        let x = shard.x.view().narrow(0, s, 1)?.squeeze(0)?;
        let y = shard.y.view().narrow(0, s, 1)?.squeeze(0)?;
        expr::update((&mut ga, &mut gb), |(ga, gb)| {
            let r = av.lazy() * &x + &bv - &y;
            (ga + r.clone() * &x * k, gb + r * k)
        })?;
    }
    Ok(())
}

/// How the diffs travel: all local GPUs in one process, or this process's one rank.
enum Exchange {
    Group(LocalGroup),
    Rank(Communicator),
}

impl Exchange {
    fn world_size(&self) -> usize {
        match self {
            Exchange::Group(g) => g.world_size(),
            Exchange::Rank(c) => c.world_size(),
        }
    }

    /// The global rank of local replica `i`.
    fn rank_of(&self, i: usize) -> usize {
        match self {
            Exchange::Group(_) => i,
            Exchange::Rank(c) => c.rank(),
        }
    }

    fn gpus(&self) -> Vec<Gpu> {
        match self {
            Exchange::Group(g) => g.gpus(),
            Exchange::Rank(c) => vec![c.gpu().clone()],
        }
    }

    /// The average of the diffs, one blob per local replica.
    fn average_diffs(&mut self, blobs: Vec<Param>) -> Res<Vec<Param>> {
        Ok(match self {
            Exchange::Group(g) => g.all_reduce_diffs(blobs, ReduceOp::Avg)?,
            Exchange::Rank(c) => blobs
                .into_iter()
                .map(|b| b.all_reduce_diff(c, ReduceOp::Avg).map_err(Error::from))
                .collect::<Result<_, _>>()?,
        })
    }

    /// Rank 0's data into every replica.
    fn broadcast_data(&mut self, blobs: Vec<Param>) -> Res<Vec<Param>> {
        Ok(match self {
            Exchange::Group(g) => g.broadcast_data(blobs, 0)?,
            Exchange::Rank(c) => blobs
                .into_iter()
                .map(|b| b.broadcast_data(c, 0).map_err(Error::from))
                .collect::<Result<_, _>>()?,
        })
    }

    /// Runs the collectives on `streams` (one per local GPU), or on the diffs' own stream.
    fn set_streams(&mut self, streams: Option<Vec<Stream>>) -> Res<()> {
        match self {
            Exchange::Group(g) => g.set_streams(streams)?,
            Exchange::Rank(c) => c.set_stream(streams.and_then(|s| s.into_iter().next()))?,
        }
        Ok(())
    }

    /// Every replica's data, on the host, in rank order (gathered across processes with an
    /// all-gather in the per-process mode).
    fn all_data(&mut self, blobs: &[Param]) -> Res<Vec<Vec<f32>>> {
        match self {
            Exchange::Group(_) => blobs
                .iter()
                .map(|b| {
                    let gpu = b.gpu_device().ok_or("a replica without a GPU")?;
                    Ok(b.gpu_data().to_vec(gpu.default_stream())?)
                })
                .collect(),
            Exchange::Rank(c) => {
                let p = blobs[0].count();
                let mut all = Tensor::<f32, Gpu>::zeros_on(&[c.world_size() * p], c.gpu())?;
                blobs[0].all_gather_data_into(c, &mut all)?;
                let all = all.to_cpu()?.to_vec();
                Ok(all.chunks(p).map(<[f32]>::to_vec).collect())
            }
        }
    }

    fn synchronize(&self) -> Res<()> {
        for gpu in self.gpus() {
            gpu.synchronize()?;
        }
        Ok(())
    }
}

/// The training run and its two checks; true when both pass.
fn train(exchange: &mut Exchange, args: &Args) -> Res<bool> {
    let world = exchange.world_size();
    let gpus = exchange.gpus();
    let p = args.params;
    let lead = exchange.rank_of(0) == 0;
    let mut a = Vec::new();
    let mut b = Vec::new();
    let mut shards = Vec::new();
    for (i, gpu) in gpus.iter().enumerate() {
        let rank = exchange.rank_of(i);
        let (a0, b0) = initial(p, rank);
        a.push(param(gpu, &a0)?);
        b.push(param(gpu, &b0)?);
        shards.push(shard(gpu, p, args.samples, rank)?);
    }
    a = exchange.broadcast_data(a)?;
    b = exchange.broadcast_data(b)?;
    let start = Instant::now();
    for _ in 0..args.steps {
        for ((a, b), shard) in a.iter_mut().zip(&mut b).zip(&shards) {
            local_diffs(a, b, shard, args.lr)?;
        }
        a = exchange.average_diffs(a)?;
        b = exchange.average_diffs(b)?;
        a = a.into_iter().map(Blob::update).collect::<Result<_, _>>()?;
        b = b.into_iter().map(Blob::update).collect::<Result<_, _>>()?;
    }
    exchange.synchronize()?;
    let elapsed = start.elapsed();
    let all_a = exchange.all_data(&a)?;
    let all_b = exchange.all_data(&b)?;
    let mut ok = true;
    let equal = |v: &[Vec<f32>]| {
        v.iter()
            .all(|r| r.iter().zip(&v[0]).all(|(x, y)| x.to_bits() == y.to_bits()))
    };
    if !(equal(&all_a) && equal(&all_b)) {
        println!("FAIL: the {world} replicas are not bitwise equal");
        ok = false;
    }
    if lead {
        println!(
            "{world} replica(s), {p} parameters x 2, {} samples per GPU, {} steps: {:.1} ms ({:.2} ms/step)",
            args.samples,
            args.steps,
            elapsed.as_secs_f64() * 1e3,
            elapsed.as_secs_f64() * 1e3 / args.steps.max(1) as f64
        );
    }
    let (ra, rb) = reference(args, world * args.samples);
    let mut worst = 0.0f64;
    for (got, want) in [(&all_a[0], &ra), (&all_b[0], &rb)] {
        for (g, w) in got.iter().zip(want) {
            worst = worst.max((f64::from(*g) - w).abs() / w.abs().max(1.0));
        }
    }
    let tolerance = 1e-4;
    if worst > tolerance {
        println!("FAIL: the replicas differ from the f64 host run by {worst:.2e} (relative, > {tolerance:.0e})");
        ok = false;
    }
    if lead && ok {
        println!("ok: replicas bitwise equal; largest relative difference from the f64 host run {worst:.2e}");
    }
    Ok(ok)
}

// ---------------------------------------------------------------------------------------------
// The overlap benchmark
// ---------------------------------------------------------------------------------------------

const LAYERS: usize = 8;
const BENCH_SAMPLES: usize = 2;

/// One step of `LAYERS` layers: each layer's diff from the shard, then its all-reduce, then
/// every update. With the collectives on their own streams, layer `l`'s all-reduce runs
/// while layer `l + 1`'s kernels run on the default stream; the diffs order the two.
fn bench_step(
    exchange: &mut Exchange,
    layers: &mut [Vec<Param>],
    shards: &[Shard],
    lr: f32,
) -> Res<()> {
    for layer in layers.iter_mut() {
        for (w, shard) in layer.iter_mut().zip(shards) {
            let k = lr / BENCH_SAMPLES as f32;
            let (mut g, wv) = w.gpu_diff_mut_with_data()?;
            g.fill_(0.0)?;
            for s in 0..BENCH_SAMPLES {
                let x = shard.x.view().narrow(0, s, 1)?.squeeze(0)?;
                let y = shard.y.view().narrow(0, s, 1)?.squeeze(0)?;
                g.update(|g| g + (wv.lazy() * &x - &y) * &x * k)?;
            }
        }
        let blobs = std::mem::take(layer);
        *layer = exchange.average_diffs(blobs)?;
    }
    for layer in layers.iter_mut() {
        let blobs = std::mem::take(layer);
        *layer = blobs
            .into_iter()
            .map(Blob::update)
            .collect::<Result<_, _>>()?;
    }
    Ok(())
}

fn overlap_bench(exchange: &mut Exchange, args: &Args) -> Res<bool> {
    let gpus = exchange.gpus();
    let p = args.bench_params;
    let lead = exchange.rank_of(0) == 0;
    let mut layers: Vec<Vec<Param>> = Vec::new();
    for l in 0..LAYERS {
        let mut layer = Vec::new();
        for gpu in &gpus {
            let w: Vec<f32> = (0..p).map(|i| value(100 + l as u64, i as u64)).collect();
            layer.push(param(gpu, &w)?);
        }
        layers.push(layer);
    }
    let shards = gpus
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let rank = exchange.rank_of(i) as u64;
            let xs: Vec<f32> = (0..BENCH_SAMPLES * p)
                .map(|j| value(200 + rank, j as u64))
                .collect();
            let ys: Vec<f32> = (0..BENCH_SAMPLES * p)
                .map(|j| value(300 + rank, j as u64))
                .collect();
            Ok(Shard {
                x: Tensor::from_vec(&[BENCH_SAMPLES, p], xs)?.to_gpu(g)?,
                y: Tensor::from_vec(&[BENCH_SAMPLES, p], ys)?.to_gpu(g)?,
            })
        })
        .collect::<Res<Vec<_>>>()?;
    let comm_streams = gpus
        .iter()
        .map(Gpu::new_stream)
        .collect::<Result<Vec<_>, _>>()?;
    let mut results = Vec::new();
    for (name, streams) in [("serial", None), ("overlapped", Some(comm_streams.clone()))] {
        exchange.set_streams(streams)?;
        for _ in 0..3 {
            bench_step(exchange, &mut layers, &shards, 1e-3)?;
        }
        exchange.synchronize()?;
        let mut per_step = Vec::new();
        for _ in 0..7 {
            let t = Instant::now();
            for _ in 0..5 {
                bench_step(exchange, &mut layers, &shards, 1e-3)?;
            }
            exchange.synchronize()?;
            per_step.push(t.elapsed().as_secs_f64() * 1e3 / 5.0);
        }
        per_step.sort_by(f64::total_cmp);
        results.push((name, per_step[per_step.len() / 2]));
    }
    exchange.set_streams(None)?;
    // The replicas are still equal after both modes.
    let mut ok = true;
    for layer in &layers {
        let all = exchange.all_data(layer)?;
        if !all.iter().all(|r| {
            r.iter()
                .zip(&all[0])
                .all(|(x, y)| x.to_bits() == y.to_bits())
        }) {
            println!("FAIL: replicas differ after the overlap benchmark");
            ok = false;
            break;
        }
    }
    if lead {
        let mib = (p * 4) >> 20;
        println!(
            "overlap benchmark: {} GPU(s), {LAYERS} layers of {p} f32 ({mib} MiB), {BENCH_SAMPLES} fused passes per layer, then an all-reduce (average) per layer",
            exchange.world_size()
        );
        println!("| step | ms per step (median of 7 x 5 steps) | speed-up |");
        println!("| --- | --- | --- |");
        let serial = results[0].1;
        for (name, ms) in &results {
            println!("| {name} | {ms:.3} | {:.2}x |", serial / ms);
        }
        if exchange.world_size() < 2 {
            println!("(one GPU: the all-reduce of a world of one moves nothing, so there is nothing to overlap)");
        }
    }
    Ok(ok)
}

// ---------------------------------------------------------------------------------------------
// Starting: one process, one per GPU, or as one rank
// ---------------------------------------------------------------------------------------------

fn run_exchange(mut exchange: Exchange, args: &Args) -> Res<bool> {
    let ok = if args.overlap_bench {
        overlap_bench(&mut exchange, args)?
    } else {
        train(&mut exchange, args)?
    };
    exchange.synchronize()?;
    for gpu in exchange.gpus() {
        gpu.check_err()?;
    }
    Ok(ok)
}

/// `--spawn N`: this program N times, as ranks 0 to N-1, meeting through a fresh id file.
fn spawn(n: usize, args: &Args) -> Res<bool> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_nanos();
    let dir = std::env::temp_dir().join(format!(
        "typestate-tensor-dp-{}-{nanos}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir)?;
    let id_file = dir.join("nccl.id");
    let exe = std::env::current_exe()?;
    let mut children = Vec::new();
    for rank in 0..n {
        let mut cmd = Command::new(&exe);
        cmd.args(&args.forward)
            .env("RANK", rank.to_string())
            .env("WORLD_SIZE", n.to_string())
            .env("LOCAL_RANK", rank.to_string())
            .env(ID_FILE_VAR, &id_file);
        for (k, v) in NCCL_ENV {
            if std::env::var_os(k).is_none() {
                cmd.env(k, v);
            }
        }
        children.push((rank, cmd.spawn()?));
    }
    let mut ok = true;
    for (rank, mut child) in children {
        let status = child.wait()?;
        if !status.success() {
            println!("rank {rank} exited with {status}");
            ok = false;
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(ok)
}

fn run() -> Res<bool> {
    // Before any thread exists: NVLink multicast off for NCCL in this process too.
    for (k, v) in NCCL_ENV {
        if std::env::var_os(k).is_none() {
            std::env::set_var(k, v);
        }
    }
    let args = parse_args()?;
    if let Some(n) = args.spawn {
        return spawn(n, &args);
    }
    if !Gpu::available() {
        println!("no CUDA driver or GPU on this machine: nothing to run");
        return Ok(true);
    }
    if let Err(e) = collective::version() {
        println!("{e}");
        return Ok(false);
    }
    if std::env::var_os("RANK").is_some() && std::env::var_os("WORLD_SIZE").is_some() {
        let comm = Communicator::from_env()?;
        println!(
            "rank {} of {} on GPU {} ({})",
            comm.rank(),
            comm.world_size(),
            comm.gpu().ordinal(),
            comm.gpu().device_name()
        );
        return run_exchange(Exchange::Rank(comm), &args);
    }
    let count = Gpu::device_count()?;
    let n = args.gpus.unwrap_or(count).min(count).max(1);
    let gpus = (0..n).map(Gpu::new).collect::<Result<Vec<_>, _>>()?;
    let (major, minor, patch) = collective::version()?;
    println!(
        "one process over {n} GPU(s) ({}), NCCL {major}.{minor}.{patch}",
        gpus[0].device_name()
    );
    run_exchange(Exchange::Group(LocalGroup::new(&gpus)?), &args)
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            println!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
