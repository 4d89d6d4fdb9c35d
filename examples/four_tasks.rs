//! The four tasks issue 28 named, each one call on either engine, checked against a plain
//! host computation in `f64`: an NLL loss (`log_softmax`, then `gather` at the targets), an
//! embedding lookup (`embedding`), a k-means centroid update (`index_add_` and `bincount`)
//! and a top-3 accuracy (`topk`).
//!
//! ```text
//! cargo run --example four_tasks            # the CPU (and GPU 0 where there is one)
//! ```

use typestate_tensor::element::Element;
use typestate_tensor::gpu::Gpu;
use typestate_tensor::tensor::indexing::{IndexBackend, ScatterBackend};
use typestate_tensor::tensor::normalize::NormalizeBackend;
use typestate_tensor::tensor::order::SortBackend;
use typestate_tensor::tensor::{Backend, Tensor};
use typestate_tensor::{Cpu, Result};

/// A batch of `N` rows over `C` classes; `K` centroids of `F` features.
const N: usize = 512;
const C: usize = 10;
const K: usize = 8;
const F: usize = 16;

/// A device the demo runs on: it takes host tensors.
trait Place: Backend {
    fn place<T: Element>(&self, t: &Tensor<T>) -> Result<Tensor<T, Self>>;
}

impl Place for Cpu {
    fn place<T: Element>(&self, t: &Tensor<T>) -> Result<Tensor<T, Cpu>> {
        Ok(t.clone())
    }
}

impl Place for Gpu {
    fn place<T: Element>(&self, t: &Tensor<T>) -> Result<Tensor<T, Gpu>> {
        t.to_gpu(self)
    }
}

/// Deterministic pseudo-random values in [-1, 1).
fn values(n: usize, mut s: u64) -> Vec<f32> {
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}

/// The inputs: logits `[N, C]`, targets `[N]`, an embedding table `[C, F]`, points `[N, F]`
/// and their centroid assignments `[N]`.
struct Inputs {
    logits: Tensor<f32>,
    target: Tensor<i64>,
    table: Tensor<f32>,
    points: Tensor<f32>,
    assign: Tensor<i64>,
}

/// `(nll, sum of the looked-up embeddings, sum of the new centroids, top-3 accuracy)`.
type Results = (f64, f64, f64, f64);

/// The four results on the host, in `f64`.
fn on_host(x: &Inputs) -> Results {
    let (logits, table, points) = (x.logits.to_vec(), x.table.to_vec(), x.points.to_vec());
    let (target, assign) = (x.target.to_vec(), x.assign.to_vec());
    let (mut nll, mut hits) = (0.0, 0);
    for (i, &t) in target.iter().enumerate() {
        let row: Vec<f64> = logits[i * C..(i + 1) * C]
            .iter()
            .map(|&v| f64::from(v))
            .collect();
        let max = row.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v));
        let lse = max + row.iter().map(|&v| (v - max).exp()).sum::<f64>().ln();
        nll -= row[t as usize] - lse;
        hits += usize::from(row.iter().filter(|&&v| v > row[t as usize]).count() < 3);
    }
    let embedded: f64 = target
        .iter()
        .flat_map(|&t| table[t as usize * F..(t as usize + 1) * F].iter())
        .map(|&v| f64::from(v))
        .sum();
    let mut sums = vec![0.0f64; K * F];
    let mut counts = [0usize; K];
    for (i, &a) in assign.iter().enumerate() {
        counts[a as usize] += 1;
        for f in 0..F {
            sums[a as usize * F + f] += f64::from(points[i * F + f]);
        }
    }
    let centroids = (0..K * F)
        .map(|j| sums[j] / counts[j / F].max(1) as f64)
        .sum();
    (nll / N as f64, embedded, centroids, hits as f64 / N as f64)
}

/// The four tasks on `dev`, each one call (then a reduction to report it).
fn on_device<D>(dev: &D, x: &Inputs) -> Result<Results>
where
    D: Place
        + NormalizeBackend<f32>
        + IndexBackend<f32>
        + ScatterBackend<f32>
        + ScatterBackend<i64>
        + SortBackend<f32>,
{
    let (logits, target) = (dev.place(&x.logits)?, dev.place(&x.target)?);
    let (table, points, assign) = (
        dev.place(&x.table)?,
        dev.place(&x.points)?,
        dev.place(&x.assign)?,
    );
    let scalar = |t: Tensor<f32, D>| -> Result<f64> { Ok(f64::from(t.item()?)) };

    // NLL loss: the log-probabilities at the targets, one gather.
    let picked = logits.log_softmax(1)?.gather(1, &target.unsqueeze(1)?)?;
    let nll = -scalar(picked.mean()?)?;
    // Embedding lookup: the table's rows at the ids.
    let embedded = scalar(target.embedding(&table)?.sum()?)?;
    // k-means update: each point added into its centroid's row, divided by the counts.
    let mut sums = Tensor::<f32, D>::zeros_on(&[K, F], dev)?;
    sums.index_add_(0, &assign, &points, 1.0)?;
    let counts = assign.bincount(K)?.cast::<f32>()?.clamp_min(1.0)?;
    let centroids = scalar(sums.div(&counts.unsqueeze(1)?)?.sum()?)?;
    // Top-3 accuracy: is the target among each row's three largest logits?
    let (_, top) = logits.topk(3, 1, true, true)?;
    let hit = top
        .eq(&target.unsqueeze(1)?)?
        .any_dim(1, false)?
        .cast::<f32>()?;
    let accuracy = scalar(hit.mean()?)?;
    Ok((nll, embedded, centroids, accuracy))
}

fn report(name: &str, got: Results, want: Results) -> bool {
    let pairs = [
        ("nll loss", got.0, want.0),
        ("embedding sum", got.1, want.1),
        ("centroid sum", got.2, want.2),
        ("top-3 accuracy", got.3, want.3),
    ];
    let mut ok = true;
    for (what, g, w) in pairs {
        // f32 sums of a few thousand terms of size ~1: a relative 1e-4 holds them.
        let close = (g - w).abs() <= 1e-4 * w.abs().max(1.0);
        ok &= close;
        println!(
            "{name:>4} {what:<15} {g:>12.6} (host {w:>12.6}) {}",
            if close { "ok" } else { "MISMATCH" }
        );
    }
    ok
}

fn main() -> Result<()> {
    let logits = Tensor::from_vec(&[N, C], values(N * C, 7))?.mul(4.0f32)?;
    let draw = |n: usize, m: usize, seed: u64| -> Vec<i64> {
        values(n, seed)
            .iter()
            .map(|&v| (((v + 1.0) * 0.5 * m as f32) as i64).min(m as i64 - 1))
            .collect()
    };
    let inputs = Inputs {
        logits,
        target: Tensor::from_vec(&[N], draw(N, C, 11))?,
        table: Tensor::from_vec(&[C, F], values(C * F, 13))?,
        points: Tensor::from_vec(&[N, F], values(N * F, 17))?,
        assign: Tensor::from_vec(&[N], draw(N, K, 19))?,
    };
    let want = on_host(&inputs);
    let mut ok = report("cpu", on_device(&Cpu, &inputs)?, want);
    if Gpu::available() {
        ok &= report("gpu", on_device(&Gpu::new(0)?, &inputs)?, want);
    } else {
        println!(" gpu skipped: no CUDA driver or GPU on this machine");
    }
    if !ok {
        std::process::exit(1);
    }
    Ok(())
}
