// Moving tensors, memories and blobs to another GPU: each move consumes the value and the
// result's type says which copy is current.
use typestate_tensor::gpu::{Gpu, PeerPath};
use typestate_tensor::synced::{Blob, HeadAtCpu, HeadAtGpu, Synced, SyncedMemory, Uninitialized};
use typestate_tensor::tensor::Tensor;

fn moves(g0: &Gpu, g1: &Gpu) -> typestate_tensor::Result<()> {
    let t = Tensor::<f32, Gpu>::zeros_on(&[2, 3], g0)?;
    let t: Tensor<f32, Gpu> = t.to_device(g1)?;
    let v = t
        .t()
        .to_device_via(g0, g1.default_stream(), PeerPath::Staged)?;
    let mut out = Tensor::<f32, Gpu>::zeros_on(&[3, 2], g1)?;
    out.copy_from_peer(&v)?;

    let m: SyncedMemory<f32, Uninitialized> = SyncedMemory::with_gpu(g0, 8)?;
    let m: SyncedMemory<f32, HeadAtGpu> = m.into_gpu_of(g1)?;
    let m: SyncedMemory<f32, HeadAtCpu> = m.into_cpu_mut()?;
    let m: SyncedMemory<f32, Synced> = m.into_gpu_of(g0)?;
    let _ = m.gpu();

    let b = Blob::<f32, Uninitialized>::with_gpu(g0, &[4])?.into_cpu_data_mut()?;
    let b: Blob<f32, Synced, HeadAtGpu> = b.into_gpu_of(g1)?;
    let _ = (b.gpu_data(), b.gpu_diff());
    Ok(())
}
