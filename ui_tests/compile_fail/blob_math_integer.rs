// Blob math takes Caffe's element types, f32 and f64.
use typestate_tensor::synced::{Blob, HeadAtCpu};

fn sum(b: &Blob<i32, HeadAtCpu>) {
    let _ = b.asum_data();
}

fn main() {
    let _ = sum;
}
