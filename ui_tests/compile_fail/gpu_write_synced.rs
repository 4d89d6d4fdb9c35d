// Writing the GPU side of a Synced memory without taking it first: the CPU copy would be
// stale while the type still says Synced.
use typestate_tensor::synced::{Synced, SyncedMemory};

fn write(m: &mut SyncedMemory<f32, Synced>) {
    let _ = m.gpu_mut();
}

fn main() {
    let _ = write;
}
