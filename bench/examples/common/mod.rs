//! Timing helpers shared by the GPU benchmark examples (`mod common;` in each).

#![allow(dead_code)] // each example uses the helpers it needs

use std::time::Instant;

use typestate_tensor::gpu::Stream;

/// The error type of the examples.
pub type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// Median of `repeats` CUDA-event timings of `f` on `stream`, in ms, after 3 warm-up calls.
pub fn time_ms(stream: &Stream, repeats: usize, mut f: impl FnMut() -> Res<()>) -> Res<f64> {
    for _ in 0..3 {
        f()?;
    }
    stream.synchronize()?;
    let mut times = Vec::with_capacity(repeats);
    for _ in 0..repeats {
        let start = stream.record_timing_event()?;
        f()?;
        let end = stream.record_timing_event()?;
        end.synchronize()?;
        times.push(f64::from(start.elapsed_ms(&end)?));
    }
    Ok(median(&mut times))
}

/// Host time per call of `f`, in µs: the median over batches of 200 calls (at least
/// `calls` calls in all, after one warm-up batch), each batch started on an idle stream so
/// that the launch queue never fills (a full queue would make the host wait for the GPU and
/// measure the kernels instead).
pub fn host_us(stream: &Stream, calls: usize, mut f: impl FnMut() -> Res<()>) -> Res<f64> {
    const BATCH: usize = 200;
    for _ in 0..BATCH {
        f()?;
    }
    let mut per_call = Vec::new();
    for _ in 0..calls.div_ceil(BATCH).max(5) {
        stream.synchronize()?;
        let start = Instant::now();
        for _ in 0..BATCH {
            f()?;
        }
        per_call.push(start.elapsed().as_secs_f64() / BATCH as f64 * 1e6);
    }
    stream.synchronize()?;
    Ok(median(&mut per_call))
}

/// The median of `v` (sorted in place); 0 for an empty slice.
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}
