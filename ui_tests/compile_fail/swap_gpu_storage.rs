// Swapping the GPU copy of a SyncedMemory for a storage of another length (or GPU) would
// break the memory's invariant that both copies have one length. `gpu_mut` lends a
// `GpuStorageMut`, which writes but never hands out `&mut GpuStorage`.
use typestate_tensor::gpu::GpuStorage;
use typestate_tensor::synced::{HeadAtGpu, SyncedMemory};

fn swap(m: &mut SyncedMemory<f32, HeadAtGpu>, other: &mut GpuStorage<f32>) {
    let mut lent = m.gpu_mut();
    std::mem::swap(&mut *lent, other);
}

fn main() {
    let _ = swap;
}
