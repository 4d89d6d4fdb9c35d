// Taking the CPU side for writing while an asynchronous push is running.
use typestate_tensor::synced::{InFlight, SyncedMemory};

fn take(m: SyncedMemory<f32, InFlight>) {
    let _ = m.into_cpu_mut();
}

fn main() {
    let _ = take;
}
