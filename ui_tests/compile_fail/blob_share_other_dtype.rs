// Sharing the data of an f32 blob with an f64 blob: the memory would be read as the wrong
// element type.
use typestate_tensor::synced::{Blob, Frozen, HeadAtCpu, Uninitialized};

fn share(a: &Blob<f32, Frozen<HeadAtCpu>, Uninitialized>, b: Blob<f64>) {
    let _ = b.with_shared_data(a.shared_data());
}

fn main() {
    let _ = share;
}
