// Writing the diff in a fused step needs the diff to be the head on that side: a Synced diff
// must be taken for writing first.
use typestate_tensor::synced::{Blob, HeadAtGpu, Synced};

fn step(mut b: Blob<f32, HeadAtGpu, Synced>) {
    let _ = b.gpu_data_diff_mut();
}

fn main() {
    let _ = step;
}
