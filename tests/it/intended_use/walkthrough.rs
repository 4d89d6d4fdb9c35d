// Caffe's walkthrough in types: each call returns the state Caffe's `head_` would hold.
use typestate_tensor::gpu::Gpu;
use typestate_tensor::synced::{HeadAtCpu, HeadAtGpu, Synced, SyncedMemory, Uninitialized};
use typestate_tensor::Result;

fn walkthrough(gpu: &Gpu) -> Result<()> {
    let m = SyncedMemory::<f32, Uninitialized>::with_gpu(gpu, 16)?;
    let mut m: SyncedMemory<f32, HeadAtCpu> = m.into_cpu_mut()?;
    m.cpu_mut().fill(1.5);
    let m: SyncedMemory<f32, Synced> = m.into_gpu()?; // copied cpu->gpu
    let _ = m.cpu()[0]; // no copy
    let m: SyncedMemory<f32, HeadAtGpu> = m.into_gpu_mut()?; // no copy
    let m: SyncedMemory<f32, HeadAtGpu> = m.into_gpu_mut()?; // no copy
    let m: SyncedMemory<f32, Synced> = m.into_cpu()?; // copied gpu->cpu
    let _ = m.gpu().len(); // no copy
    let m: SyncedMemory<f32, HeadAtCpu> = m.into_cpu_mut()?; // no copy
    let m: SyncedMemory<f32, HeadAtGpu> = m.into_gpu_mut()?; // copied cpu->gpu
    let m: SyncedMemory<f32, HeadAtCpu> = m.into_cpu_mut()?; // copied gpu->cpu
    assert_eq!(m.stats().copies(), 4);
    Ok(())
}
