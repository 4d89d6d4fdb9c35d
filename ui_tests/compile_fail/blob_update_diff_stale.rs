// Blob::update() (data -= diff) with the data's head on the CPU but a stale CPU diff.
use typestate_tensor::synced::{Blob, HeadAtCpu, HeadAtGpu};

fn step(b: Blob<f32, HeadAtCpu, HeadAtGpu>) {
    let _ = b.update();
}

fn main() {
    let _ = step;
}
