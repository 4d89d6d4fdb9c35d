// Reading the data while writing the diff through two borrows of one blob: a borrow error;
// the split borrow `cpu_diff_mut_with_data()` lends both at once.
use typestate_tensor::synced::{Blob, HeadAtCpu};

fn regularize(blob: &mut Blob<f32, HeadAtCpu, HeadAtCpu>) {
    let data = blob.cpu_data();
    let diff = blob.cpu_diff_mut();
    for (g, w) in diff.iter_mut().zip(data) {
        *g += 1e-4 * w;
    }
}

fn main() {
    let _ = regularize;
}
