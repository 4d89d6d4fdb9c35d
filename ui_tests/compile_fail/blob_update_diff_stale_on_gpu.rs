// Blob::update() with the data's head on the GPU but the diff newest on the CPU: the diff is
// stale where the update runs.
use typestate_tensor::synced::{Blob, HeadAtCpu, HeadAtGpu};

fn step(b: Blob<f32, HeadAtGpu, HeadAtCpu>) {
    let _ = b.update();
}

fn main() {
    let _ = step;
}
