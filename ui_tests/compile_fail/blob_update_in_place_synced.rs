// The `&mut self` update of `Synced` data: the write makes the GPU side the head, which
// would change the blob's type under the `&mut`.
use typestate_tensor::synced::{Blob, Synced};

fn step(params: &mut [Blob<f32, Synced>]) {
    for p in params {
        let _ = p.update_in_place();
    }
}

fn main() {
    let _ = step;
}
