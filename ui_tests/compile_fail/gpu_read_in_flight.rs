// Reading the GPU copy on an arbitrary stream while an asynchronous push is writing it.
use typestate_tensor::synced::{InFlight, SyncedMemory};

fn read(m: &SyncedMemory<f32, InFlight>) -> usize {
    m.gpu().len()
}

fn main() {
    let _ = read;
}
