// Moving a blob whose data is shared read-only with other blobs to another GPU: the other
// blobs would keep reading the old GPU's memory.
use typestate_tensor::gpu::Gpu;
use typestate_tensor::synced::{Blob, Frozen, HeadAtGpu};

fn move_it(b: Blob<f32, Frozen<HeadAtGpu>, HeadAtGpu>, other: &Gpu) {
    let _ = b.into_gpu_of(other);
}

fn main() {
    let _ = move_it;
}
