// Writing the CPU side of a Synced memory without taking it first.
use typestate_tensor::synced::{Synced, SyncedMemory};

fn write(m: &mut SyncedMemory<f32, Synced>) {
    m.cpu_mut()[0] = 1.0;
}

fn main() {
    let _ = write;
}
