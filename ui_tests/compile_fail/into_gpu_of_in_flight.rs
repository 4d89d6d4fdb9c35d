// Moving memory to another GPU while an asynchronous push may still be writing its GPU copy.
use typestate_tensor::gpu::Gpu;
use typestate_tensor::synced::{InFlight, SyncedMemory};

fn move_it(m: SyncedMemory<f32, InFlight>, other: &Gpu) {
    let _ = m.into_gpu_of(other);
}

fn main() {
    let _ = move_it;
}
