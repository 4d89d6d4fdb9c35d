// Writing a blob's diff on the CPU while both copies are merely in sync.
use typestate_tensor::synced::{Blob, HeadAtCpu, Synced};

fn write(b: &mut Blob<f32, HeadAtCpu, Synced>) {
    b.cpu_diff_mut()[0] = 0.5;
}

fn main() {
    let _ = write;
}
