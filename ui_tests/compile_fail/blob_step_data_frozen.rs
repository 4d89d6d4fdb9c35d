// Frozen (shared) data cannot be written by a fused step.
use typestate_tensor::synced::{Blob, Frozen, HeadAtGpu};

fn step(mut b: Blob<f32, Frozen<HeadAtGpu>, HeadAtGpu>) {
    let _ = b.gpu_data_mut_with_diff();
}

fn main() {
    let _ = step;
}
