// A fused step on the CPU needs the diff current on the CPU.
use typestate_tensor::synced::{Blob, HeadAtCpu, HeadAtGpu};

fn step(mut b: Blob<f32, HeadAtCpu, HeadAtGpu>) {
    let (mut w, g) = b.cpu_data_mut_with_diff().unwrap();
    w.update(|w| w - &g).unwrap();
}

fn main() {
    let _ = step;
}
