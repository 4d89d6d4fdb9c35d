//! GPU storage benchmark: allocator speed, fragmentation on a realistic trace, and pinned vs
//! pageable copy bandwidth. Prints tables; run on a machine with an NVIDIA GPU:
//!
//! ```text
//! cargo run --release -p typestate-tensor-bench --example gpu_storage_bench -- [--trace PATH] [--json PATH]
//! python3 scripts/alloc_trace_torch.py PATH   # the same trace through PyTorch's allocator
//! ```
//!
//! `--trace PATH` writes the allocation trace (`a ID BYTES` / `f ID` lines) so PyTorch can
//! replay exactly the same requests. Without a GPU it prints a note and exits.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use typestate_tensor::gpu::{
    DriverPoolAllocator, DriverPoolOptions, Gpu, GpuStorage, PinnedBuffer,
};
use typestate_tensor::storage::{
    CachingAllocator, DeviceAllocator, NaiveAllocator, PoolRounding, PooledAllocator, PooledConfig,
    StreamId,
};

const KIB: usize = 1 << 10;
const MIB: usize = 1 << 20;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Median microseconds of one alloc+free pair: `batches` batches of `per_batch` pairs, each
/// batch timed as a whole (a warm cache answers in well under the clock's resolution).
fn time_pairs(mut pair: impl FnMut(), batches: usize, per_batch: usize) -> f64 {
    for _ in 0..per_batch {
        pair(); // warm up: the first pair fills the cache
    }
    let samples = (0..batches)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..per_batch {
                pair();
            }
            t.elapsed().as_secs_f64() * 1e6 / per_batch as f64
        })
        .collect();
    median(samples)
}

fn allocators(gpu: &Gpu) -> Vec<(&'static str, Arc<dyn DeviceAllocator>)> {
    let source = || gpu.device_memory_source();
    vec![
        (
            "caching (default)",
            Arc::new(CachingAllocator::new(source())),
        ),
        (
            "pooled, page rounding",
            Arc::new(PooledAllocator::with_config(
                source(),
                PooledConfig::default(),
            )),
        ),
        (
            "pooled, power-of-two rounding",
            Arc::new(PooledAllocator::with_config(
                source(),
                PooledConfig::new(PoolRounding::MXNET_ROUND, 5).expect("config"),
            )),
        ),
        (
            "driver pool",
            Arc::new(
                DriverPoolAllocator::new(gpu.ordinal(), DriverPoolOptions::default())
                    .expect("pool"),
            ),
        ),
        ("naive", Arc::new(NaiveAllocator::new(source()))),
    ]
}

fn bench_pairs(gpu: &Gpu, rows: &mut Vec<String>) {
    println!("\n## alloc+free pairs on a warm cache (median µs per pair)\n");
    println!("| allocator | 512 B | 1 MiB | 64 MiB |");
    println!("| --- | --- | --- | --- |");
    let sizes = [512, MIB, 64 * MIB];
    for (name, a) in allocators(gpu) {
        let slow = name == "naive";
        let cells: Vec<f64> = sizes
            .iter()
            .map(|&bytes| {
                let (batches, per) = if slow { (31, 4) } else { (51, 2000) };
                time_pairs(
                    || {
                        let b = a.allocate(bytes, StreamId(0)).expect("allocate");
                        a.free(b).expect("free");
                    },
                    batches,
                    per,
                )
            })
            .collect();
        println!(
            "| {name} | {:.3} | {:.3} | {:.3} |",
            cells[0], cells[1], cells[2]
        );
        rows.push(format!(
            "{{\"allocator\":\"{name}\",\"us_512b\":{:.4},\"us_1mib\":{:.4},\"us_64mib\":{:.4}}}",
            cells[0], cells[1], cells[2]
        ));
        a.empty_cache().expect("empty cache");
    }
    raw_driver_pairs(gpu, &sizes);
}

/// The driver's own calls, for reference: cuMemAlloc/cuMemFree and
/// cuMemAllocAsync/cuMemFreeAsync (default pool, default stream).
fn raw_driver_pairs(gpu: &Gpu, sizes: &[usize]) {
    use cudarc::driver::result;
    gpu.synchronize().expect("bind the context");
    let ctx = cudarc::driver::CudaContext::new(gpu.ordinal()).expect("context");
    ctx.bind_to_thread().expect("bind");
    let null = std::ptr::null_mut();
    let sync: Vec<f64> = sizes
        .iter()
        .map(|&bytes| {
            time_pairs(
                || {
                    // SAFETY: a fresh allocation, freed at once, never used.
                    unsafe {
                        let p = result::malloc_sync(bytes).expect("cuMemAlloc");
                        result::free_sync(p).expect("cuMemFree");
                    }
                },
                31,
                4,
            )
        })
        .collect();
    let asynchronous: Vec<f64> = sizes
        .iter()
        .map(|&bytes| {
            time_pairs(
                || {
                    // SAFETY: a fresh stream-ordered allocation on the legacy default stream,
                    // freed at once on the same stream, never used.
                    unsafe {
                        let p = result::malloc_async(null, bytes).expect("cuMemAllocAsync");
                        result::free_async(p, null).expect("cuMemFreeAsync");
                    }
                },
                51,
                2000,
            )
        })
        .collect();
    ctx.synchronize().expect("synchronize");
    println!(
        "| cuMemAlloc + cuMemFree | {:.3} | {:.3} | {:.3} |",
        sync[0], sync[1], sync[2]
    );
    println!(
        "| cuMemAllocAsync + cuMemFreeAsync | {:.3} | {:.3} | {:.3} |",
        asynchronous[0], asynchronous[1], asynchronous[2]
    );
}

/// A deterministic training-like trace: persistent weights, then iterations whose forward
/// pass allocates activations (batch size varies, as with dynamic shapes) and short-lived
/// workspaces, and whose backward pass frees activations in reverse while gradients and
/// small scalars come and go.
fn make_trace() -> Vec<(bool, u32, usize)> {
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = move |n: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % n
    };
    let mut trace = Vec::new();
    let mut id = 0u32;
    let mut alloc = |trace: &mut Vec<(bool, u32, usize)>, bytes: usize| {
        id += 1;
        trace.push((true, id, bytes));
        id
    };
    let layers = 24;
    let weights: Vec<usize> = (0..layers)
        .map(|_| (256 + next(16 * 1024) as usize) * KIB)
        .collect();
    for &w in &weights {
        alloc(&mut trace, w);
    }
    for _ in 0..30 {
        let batch = 8 + next(56) as usize;
        let mut activations = Vec::new();
        for &w in &weights {
            let act = alloc(
                &mut trace,
                batch * (w / 64).max(4 * KIB) + next(4096) as usize,
            );
            activations.push(act);
            let ws = alloc(&mut trace, (next(8 * MIB as u64) as usize).max(512));
            trace.push((false, ws, 0));
            if next(4) == 0 {
                let s = alloc(&mut trace, 4 + next(508) as usize);
                trace.push((false, s, 0));
            }
        }
        for (&act, &w) in activations.iter().rev().zip(weights.iter().rev()) {
            let grad = alloc(&mut trace, w);
            let tmp = alloc(&mut trace, batch * (w / 128).max(KIB));
            trace.push((false, tmp, 0));
            trace.push((false, act, 0));
            trace.push((false, grad, 0));
        }
    }
    trace
}

fn bench_trace(gpu: &Gpu, trace_path: Option<&str>, rows: &mut Vec<String>) {
    let trace = make_trace();
    if let Some(path) = trace_path {
        let text: String = trace
            .iter()
            .map(|&(a, id, bytes)| {
                if a {
                    format!("a {id} {bytes}\n")
                } else {
                    format!("f {id}\n")
                }
            })
            .collect();
        std::fs::write(path, text).expect("write trace");
    }
    // Peak of bytes live at once, as requested.
    let (mut live, mut peak_requested) = (0usize, 0usize);
    let mut sizes = HashMap::new();
    for &(a, id, bytes) in &trace {
        if a {
            sizes.insert(id, bytes);
            live += bytes;
            peak_requested = peak_requested.max(live);
        } else {
            live -= sizes[&id];
        }
    }
    println!(
        "\n## trace replay: {} requests, peak requested {:.1} MiB\n",
        trace.len(),
        peak_requested as f64 / MIB as f64
    );
    println!("| allocator | peak reserved MiB | peak reserved / peak requested | replay ms |");
    println!("| --- | --- | --- | --- |");
    for (name, a) in allocators(gpu) {
        if name == "naive" || name == "driver pool" {
            continue; // no cache of their own to fragment (the driver pool's is opaque)
        }
        a.reset_peak_stats();
        let t = Instant::now();
        let mut held = HashMap::new();
        for &(is_alloc, id, bytes) in &trace {
            if is_alloc {
                held.insert(id, a.allocate(bytes, StreamId(0)).expect("allocate"));
            } else {
                a.free(held.remove(&id).expect("live id")).expect("free");
            }
        }
        let ms = t.elapsed().as_secs_f64() * 1e3;
        let reserved = a.stats().reserved_bytes.peak;
        let ratio = reserved as f64 / peak_requested as f64;
        println!(
            "| {name} | {:.1} | {ratio:.3} | {ms:.2} |",
            reserved as f64 / MIB as f64
        );
        rows.push(format!(
            "{{\"trace_allocator\":\"{name}\",\"peak_reserved\":{reserved},\"peak_requested\":{peak_requested},\"ratio\":{ratio:.4}}}"
        ));
        a.empty_cache().expect("empty cache");
    }
}

fn bench_copies(gpu: &Gpu, rows: &mut Vec<String>) {
    let n = 256 * MIB / 4;
    let stream = gpu.new_stream().expect("stream");
    let host: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.5 + 1.0).collect();
    let mut back = vec![0f32; n];
    let mut dev = GpuStorage::<f32>::zeros(gpu, n, &stream).expect("device buffer");
    let pinned = PinnedBuffer::from_slice(gpu, &host).expect("pinned");
    let mut pinned_back = PinnedBuffer::<f32>::zeros(gpu, n).expect("pinned");
    let gbps = |secs: f64| (n * 4) as f64 / secs / 1e9;
    let time = |f: &mut dyn FnMut()| {
        f();
        median(
            (0..9)
                .map(|_| {
                    let t = Instant::now();
                    f();
                    t.elapsed().as_secs_f64()
                })
                .collect(),
        )
    };
    let h2d_pageable = time(&mut || dev.copy_from_host(&host, &stream).expect("h2d"));
    let d2h_pageable = time(&mut || dev.copy_to_host(&mut back, &stream).expect("d2h"));
    let h2d_pinned = time(&mut || {
        dev.copy_from_pinned_async(&pinned, &stream)
            .expect("h2d")
            .wait()
            .expect("wait")
    });
    let d2h_pinned = time(&mut || {
        dev.copy_to_pinned_async(&mut pinned_back, &stream)
            .expect("d2h")
            .wait()
            .expect("wait")
    });
    assert_eq!(back, host, "pageable round trip");
    assert_eq!(
        pinned_back.to_vec().expect("read"),
        host,
        "pinned round trip"
    );
    println!("\n## copies of 256 MiB (GB/s, median of 9)\n");
    println!("| memory | H2D | D2H |");
    println!("| --- | --- | --- |");
    println!(
        "| pageable | {:.1} | {:.1} |",
        gbps(h2d_pageable),
        gbps(d2h_pageable)
    );
    println!(
        "| pinned (caching host allocator's flags) | {:.1} | {:.1} |",
        gbps(h2d_pinned),
        gbps(d2h_pinned)
    );
    rows.push(format!(
        "{{\"copy\":\"256MiB\",\"h2d_pageable\":{:.2},\"d2h_pageable\":{:.2},\"h2d_pinned\":{:.2},\"d2h_pinned\":{:.2}}}",
        gbps(h2d_pageable),
        gbps(d2h_pageable),
        gbps(h2d_pinned),
        gbps(d2h_pinned)
    ));
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    if !Gpu::available() {
        println!("no GPU: the storage benchmark needs a CUDA device; nothing measured");
        return;
    }
    let gpu = Gpu::new(0).expect("GPU 0");
    println!("# gpu_storage_bench on {}", gpu.device_name());
    let mut rows = Vec::new();
    bench_pairs(&gpu, &mut rows);
    bench_trace(&gpu, flag("--trace").as_deref(), &mut rows);
    bench_copies(&gpu, &mut rows);
    if let Some(path) = flag("--json") {
        std::fs::write(path, format!("[{}]\n", rows.join(",\n"))).expect("write json");
    }
}
