// Reading the GPU side before anything was allocated.
use typestate_tensor::synced::{SyncedMemory, Uninitialized};

fn main() {
    let m = SyncedMemory::<f32, Uninitialized>::new(4).unwrap();
    let _ = m.gpu();
}
