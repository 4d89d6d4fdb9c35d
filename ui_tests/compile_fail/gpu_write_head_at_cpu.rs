// Writing the GPU side while the CPU side is the head.
use typestate_tensor::synced::{HeadAtCpu, SyncedMemory};

fn write(m: &mut SyncedMemory<f32, HeadAtCpu>) {
    let _ = m.gpu_mut();
}

fn main() {
    let _ = write;
}
