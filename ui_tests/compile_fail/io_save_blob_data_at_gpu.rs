// Saving a Blob reads both sides on the CPU: a Blob whose data head is at the GPU (the CPU
// copy stale) cannot be saved until its data is brought back, so it does not compile.
use typestate_tensor::io::blob::save_blob;
use typestate_tensor::synced::{Blob, HeadAtGpu};

fn save(blob: &Blob<f32, HeadAtGpu>) {
    save_blob("params.safetensors", "conv1", blob, None).unwrap();
}

fn main() {
    let _ = save;
}
