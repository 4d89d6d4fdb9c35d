// Reading the CPU copy while an asynchronous push is copying it: `wait()` first.
use typestate_tensor::synced::{InFlight, SyncedMemory};

fn read(m: &SyncedMemory<f32, InFlight>) -> f32 {
    m.cpu()[0]
}

fn main() {
    let _ = read;
}
