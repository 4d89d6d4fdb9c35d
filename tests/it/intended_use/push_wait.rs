// An asynchronous push: read the GPU copy on a stream ordered after it, then wait.
use typestate_tensor::gpu::{Gpu, Stream};
use typestate_tensor::synced::{HeadAtCpu, InFlight, Synced, SyncedMemory};
use typestate_tensor::Result;

fn push(gpu: &Gpu, m: SyncedMemory<f32, HeadAtCpu>, compute: &Stream) -> Result<()> {
    let m: SyncedMemory<f32, InFlight> = m.async_gpu_push(gpu.default_stream())?;
    let _on_compute = m.gpu_after(compute)?.len();
    let m: SyncedMemory<f32, Synced> = m.wait()?;
    let _ = (m.cpu(), m.gpu());
    Ok(())
}
