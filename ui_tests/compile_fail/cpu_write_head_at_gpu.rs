// Writing the CPU side while the GPU side is the head.
use typestate_tensor::synced::{HeadAtGpu, SyncedMemory};

fn write(m: &mut SyncedMemory<f32, HeadAtGpu>) {
    m.cpu_mut()[0] = 1.0;
}

fn main() {
    let _ = write;
}
