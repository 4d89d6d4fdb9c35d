// Writing the CPU copy while an asynchronous push is reading it.
use typestate_tensor::synced::{InFlight, SyncedMemory};

fn write(m: &mut SyncedMemory<f32, InFlight>) {
    m.cpu_mut()[0] = 1.0;
}

fn main() {
    let _ = write;
}
