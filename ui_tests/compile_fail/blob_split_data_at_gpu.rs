// The CPU split borrow (diff written, data read) with the data's head on the GPU: the
// message names `.into_cpu_data()`.
use typestate_tensor::synced::{Blob, HeadAtCpu, HeadAtGpu};

fn regularize(blob: &mut Blob<f32, HeadAtGpu, HeadAtCpu>) -> typestate_tensor::Result<()> {
    let (mut diff, data) = blob.cpu_diff_mut_with_data()?;
    diff.update(|g| g + data.lazy() * 1e-4f32)
}

fn main() {
    let _ = regularize;
}
