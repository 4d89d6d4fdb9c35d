// Reading a blob's data on the CPU while its GPU copy is the newest.
use typestate_tensor::synced::{Blob, HeadAtGpu};

fn read(b: &Blob<f32, HeadAtGpu>) -> f32 {
    b.cpu_data()[0]
}

fn main() {
    let _ = read;
}
