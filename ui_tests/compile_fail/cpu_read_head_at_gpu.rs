// Reading the CPU side while the GPU copy is the newest: the CPU copy is stale.
use typestate_tensor::synced::{HeadAtGpu, SyncedMemory};

fn read(m: &SyncedMemory<f32, HeadAtGpu>) -> f32 {
    m.cpu()[0]
}

fn main() {
    let _ = read;
}
