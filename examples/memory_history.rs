//! Record what the caching allocator does during a training-like loop, then write the SVG
//! plots and the pickle PyTorch's memory viewer opens.
//!
//! Run with `cargo run --example memory_history [OUTDIR]` (default `memory_history_out`).
//! On a GPU the loop runs Blob updates and pointwise ops through the GPU's caching
//! allocator; without one it runs the same shape of workload on host memory (the caching
//! allocator over `HostMemorySource`) and says so.
//!
//! Open `OUTDIR/snapshot.pickle` at <https://pytorch.org/memory_viz>, or with
//! `python -m torch.cuda._memory_viz trace_plot OUTDIR/snapshot.pickle -o trace.html`.

use std::path::PathBuf;
use std::sync::Arc;

use typestate_tensor::gpu::Gpu;
use typestate_tensor::storage::history::{with_alloc_label, HistorySettings, MemoryHistory};
use typestate_tensor::storage::{
    Allocation, CachingAllocator, DeviceAllocator, HostMemorySource, StreamId,
};
use typestate_tensor::synced::{Blob, HeadAtGpu, Uninitialized};
use typestate_tensor::{Result, Tensor};

const STEPS: usize = 6;

/// A few layers' worth of parameters, Caffe-style: each a Blob with data and diff.
const LAYERS: [&[usize]; 4] = [&[256, 1024], &[1024, 1024], &[1024, 4096], &[4096, 10]];

fn main() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let out = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "memory_history_out".to_owned()),
    );
    let history = if Gpu::available() {
        on_gpu()?
    } else {
        println!("No CUDA GPU on this machine: running the same loop on host memory");
        println!("(the caching allocator over HostMemorySource, simulated streams).");
        on_host()?
    };
    // The SVG plots need the `plots` feature (on by default); the pickle does not.
    #[cfg(feature = "plots")]
    let svgs = history.write_svgs(&out)?.to_vec();
    #[cfg(not(feature = "plots"))]
    let svgs: Vec<PathBuf> = {
        std::fs::create_dir_all(&out)?;
        println!("built without the `plots` feature: no SVG plots");
        Vec::new()
    };
    let pickle = out.join("snapshot.pickle");
    history.write_torch_pickle(&pickle)?;
    println!(
        "{} events ({} dropped), {} segments, peak reserved {} MiB, peak allocated {} MiB",
        history.events.len(),
        history.dropped_events,
        history.segments.len(),
        history.stats.reserved_bytes.peak >> 20,
        history.stats.allocated_bytes.peak >> 20
    );
    for path in svgs.into_iter().chain([pickle]) {
        println!("wrote {}", path.display());
    }
    Ok(())
}

/// Blob updates (`data -= diff`) and pointwise ops on GPU 0, recorded by its allocator.
fn on_gpu() -> Result<MemoryHistory> {
    let gpu = Gpu::new(0)?;
    println!("{}", gpu.device_name());
    let allocator = Arc::clone(gpu.allocator());
    if !allocator.record_history(Some(HistorySettings::default())) {
        println!("this GPU's allocator does not record; use the caching allocator (default)");
    }
    let mut params = Vec::new();
    for shape in LAYERS {
        let blob = with_alloc_label("parameters", || {
            let blob = Blob::<f32, Uninitialized>::with_gpu(&gpu, shape)?;
            let mut blob = blob.into_cpu_data_mut()?.into_cpu_diff_mut()?;
            blob.cpu_data_mut().fill(0.5);
            blob.cpu_diff_mut().fill(0.001);
            let blob: Blob<f32, HeadAtGpu> = blob.into_gpu_data_mut()?.into_gpu_diff_mut()?;
            Ok::<_, typestate_tensor::Error>(blob)
        })?;
        params.push(blob);
    }
    for step in 0..STEPS {
        let batch = 64 + 32 * (step % 3);
        with_alloc_label(&format!("step {step}"), || {
            let x = with_alloc_label("forward", || {
                let x = Tensor::<f32>::zeros(&[batch, 1024])?.to_gpu(&gpu)?;
                let h = x.add_scalar(1.0)?;
                let h = h.mul(&h)?;
                h.relu()
            })?;
            let _grad = with_alloc_label("backward", || x.exp())?;
            Ok::<_, typestate_tensor::Error>(())
        })?;
        params = with_alloc_label("sgd update", || {
            params
                .into_iter()
                .map(|p| p.update().map_err(|e| e.into_parts().1))
                .collect::<Result<Vec<_>>>()
        })?;
    }
    drop(params);
    gpu.default_stream().synchronize()?;
    allocator.history().ok_or_else(|| {
        typestate_tensor::Error::Alloc(typestate_tensor::error::AllocError::Source(
            "the allocator does not record".to_owned(),
        ))
    })
}

/// The same shape of workload on host memory: parameters and their gradients live for the
/// whole run, activations of varying batch sizes come and go, an optimizer state appears
/// after the first step, and a second stream does some work.
fn on_host() -> Result<MemoryHistory> {
    let caching = Arc::new(CachingAllocator::new(HostMemorySource::new(1 << 30)));
    caching.record_history(Some(HistorySettings::default()));
    let allocator: Arc<dyn DeviceAllocator> = caching.clone();
    let (s0, s1) = (StreamId(0), StreamId(1));
    let bytes = |shape: &[usize]| shape.iter().product::<usize>() * 4;
    let mut params = Vec::new();
    with_alloc_label("parameters", || -> Result<()> {
        for shape in LAYERS {
            params.push(Allocation::new(&allocator, bytes(shape), s0)?);
            params.push(Allocation::new(&allocator, bytes(shape), s0)?);
        }
        Ok(())
    })?;
    let mut optimizer = Vec::new();
    for step in 0..STEPS {
        let batch = 64 + 32 * (step % 3);
        with_alloc_label(&format!("step {step}"), || -> Result<()> {
            let acts = with_alloc_label("forward", || -> Result<Vec<Allocation>> {
                LAYERS
                    .iter()
                    .map(|shape| Allocation::new(&allocator, batch * shape[1] * 4, s0))
                    .collect::<std::result::Result<_, _>>()
                    .map_err(Into::into)
            })?;
            with_alloc_label("backward", || -> Result<()> {
                let mut grads = Vec::new();
                for a in acts.iter().rev() {
                    grads.push(Allocation::new(&allocator, a.size(), s0)?);
                }
                // A small buffer each step for the loss, kept on the side stream.
                let loss = Allocation::new(&allocator, 4096, s1)?;
                drop(loss);
                drop(grads);
                Ok(())
            })?;
            drop(acts);
            if optimizer.is_empty() {
                with_alloc_label("adam state", || -> Result<()> {
                    for shape in LAYERS {
                        optimizer.push(Allocation::new(&allocator, 2 * bytes(shape), s0)?);
                    }
                    Ok(())
                })?;
            }
            Ok(())
        })?;
    }
    // Keep one activation of the last step alive, so the segment map shows a mix.
    let _kept = with_alloc_label("kept activation", || {
        Allocation::new(&allocator, 3 << 20, s1)
    })?;
    drop(optimizer);
    Ok(caching.history())
}
