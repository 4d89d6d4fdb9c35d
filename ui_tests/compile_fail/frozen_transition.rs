// A frozen (shared) side cannot change state either: its other holders rely on it.
use typestate_tensor::synced::{Blob, Frozen, HeadAtCpu};

fn to_gpu(b: Blob<f32, Frozen<HeadAtCpu>>) {
    let _ = b.into_gpu_data();
}

fn main() {
    let _ = to_gpu;
}
