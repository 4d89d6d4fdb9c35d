//! Peer copy bandwidth between GPU 0 and GPU 1: `dst.copy_from_peer(&src)` (PyTorch's
//! `dst.copy_(src)` across devices), both directions, direct (`cuMemcpyPeerAsync` with peer
//! access) and staged through pinned host memory, at 1 MiB to 1 GiB. Run on a machine with
//! two NVIDIA GPUs, in the same session as the PyTorch script:
//!
//! ```text
//! cargo run --release -p typestate-tensor-bench --example gpu_peer_bench -- [--json ours.json] [--repeats 7]
//! python3 scripts/bench_torch_peer.py [--json torch.json] --compare ours.json
//! ```
//!
//! Each figure is bytes copied over GPU time: CUDA events on the copy stream (the source
//! GPU's default stream, where PyTorch's cross-device `copy_` runs too) around a batch of
//! back-to-back copies into a preallocated destination, the median of `--repeats` batches.
//! A staged batch ends with the copy stream waiting for the destination's stream, where the
//! last host-to-device chunk runs. With fewer than two GPUs it prints a line and exits.

mod common;

use common::{median, Res};
use typestate_tensor::gpu::{Gpu, PeerPath, PeerRoute, Stream};
use typestate_tensor::tensor::Tensor;

const MIB: usize = 1 << 20;
const SIZES: [usize; 5] = [MIB, 16 * MIB, 64 * MIB, 256 * MIB, 1024 * MIB];

/// Copies per timed batch: enough that a batch lasts well over the event resolution.
fn copies_per_batch(bytes: usize) -> usize {
    match bytes {
        b if b <= MIB => 100,
        b if b <= 16 * MIB => 20,
        b if b <= 64 * MIB => 8,
        b if b <= 256 * MIB => 3,
        _ => 2,
    }
}

struct Row {
    bytes: usize,
    from: usize,
    to: usize,
    path: &'static str,
    route: PeerRoute,
    gbps: f64,
    us_per_copy: f64,
}

/// Median GB/s of `repeats` batches of copies of `bytes` from `a` to `b` going as `path` says.
fn measure(a: &Gpu, b: &Gpu, bytes: usize, path: PeerPath, repeats: usize) -> Res<Row> {
    let n = bytes / size_of::<f32>();
    let src = Tensor::<f32, Gpu>::full_on(&[n], 1.5, a)?;
    let mut dst = Tensor::<f32, Gpu>::zeros_on(&[n], b)?;
    let stream: &Stream = a.default_stream();
    let copies = copies_per_batch(bytes);
    let mut route = PeerRoute::Direct;
    // Warm-up: peer access, the destination's first touch, and as many staging blocks as a
    // batch keeps in flight (pinning memory takes milliseconds; the cache keeps them).
    for _ in 0..copies.max(3) {
        route = dst.copy_from_peer_via(&src, stream, path)?;
    }
    a.synchronize()?;
    b.synchronize()?;
    let mut samples = Vec::with_capacity(repeats);
    for _ in 0..repeats {
        let start = stream.record_timing_event()?;
        for _ in 0..copies {
            dst.copy_from_peer_via(&src, stream, path)?;
        }
        if route == PeerRoute::Staged {
            stream.wait_stream(b.default_stream())?;
        }
        let end = stream.record_timing_event()?;
        end.synchronize()?;
        samples.push(f64::from(start.elapsed_ms(&end)?) / copies as f64);
    }
    let ms = median(&mut samples);
    // The copy is checked once: every element arrived.
    let back = dst.to_cpu()?;
    let bad = back.to_vec().iter().filter(|&&v| v != 1.5).count();
    if bad != 0 {
        return Err(format!("{bad} of {n} elements wrong after the copy").into());
    }
    Ok(Row {
        bytes,
        from: a.ordinal(),
        to: b.ordinal(),
        path: match path {
            PeerPath::Auto => "direct",
            PeerPath::Staged => "staged",
        },
        route,
        gbps: bytes as f64 / (ms * 1e-3) / 1e9,
        us_per_copy: ms * 1e3,
    })
}

fn size_name(bytes: usize) -> String {
    if bytes >= 1024 * MIB {
        format!("{} GiB", bytes / (1024 * MIB))
    } else {
        format!("{} MiB", bytes / MIB)
    }
}

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let repeats: usize = flag("--repeats").map_or(Ok(7), |r| r.parse())?;
    let count = if Gpu::available() {
        Gpu::device_count()?
    } else {
        0
    };
    if count < 2 {
        println!("gpu_peer_bench: skipped, needs two GPUs ({count} present)");
        return Ok(());
    }
    let (g0, g1) = (Gpu::new(0)?, Gpu::new(1)?);
    let access = (g0.enable_peer_access(&g1)?, g1.enable_peer_access(&g0)?);
    println!(
        "{} (GPU 0) and {} (GPU 1); peer access 0->1 {}, 1->0 {}",
        g0.device_name(),
        g1.device_name(),
        access.0,
        access.1
    );
    println!(
        "| size | direction | path | route | GB/s | µs per copy |\n| --- | --- | --- | --- | --- | --- |"
    );
    let mut rows = Vec::new();
    for path in [PeerPath::Auto, PeerPath::Staged] {
        for &bytes in &SIZES {
            for (a, b) in [(&g0, &g1), (&g1, &g0)] {
                let row = measure(a, b, bytes, path, repeats)?;
                println!(
                    "| {} | {}->{} | {} | {:?} | {:.1} | {:.1} |",
                    size_name(row.bytes),
                    row.from,
                    row.to,
                    row.path,
                    row.route,
                    row.gbps,
                    row.us_per_copy
                );
                rows.push(row);
            }
            g0.empty_cache()?;
            g1.empty_cache()?;
        }
    }
    if let Some(path) = flag("--json") {
        let json: Vec<String> = rows
            .iter()
            .map(|r| {
                format!(
                    "{{\"case\": \"peer_copy\", \"bytes\": {}, \"from\": {}, \"to\": {}, \"path\": \"{}\", \"route\": \"{:?}\", \"gbps\": {:.3}, \"us\": {:.3}}}",
                    r.bytes, r.from, r.to, r.path, r.route, r.gbps, r.us_per_copy
                )
            })
            .collect();
        std::fs::write(&path, format!("[\n{}\n]\n", json.join(",\n")))?;
        println!("wrote {path}");
    }
    g0.check_err()?;
    g1.check_err()?;
    Ok(())
}
