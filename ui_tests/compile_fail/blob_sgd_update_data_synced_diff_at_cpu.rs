// sgd_update of Synced data runs on the GPU, so the diff must be current there.
use typestate_tensor::synced::{Blob, HeadAtCpu, Synced};

fn step(b: Blob<f32, Synced, HeadAtCpu>) {
    let _ = b.sgd_update(0.1, 0.0);
}

fn main() {
    let _ = step;
}
