// Writing both sides of a blob whose data is shared read-only (`Frozen`): the message names
// `.thaw_data()`.
use typestate_tensor::synced::{Blob, Frozen, HeadAtCpu};

fn step(blob: &mut Blob<f32, Frozen<HeadAtCpu>, HeadAtCpu>) -> typestate_tensor::Result<()> {
    let (mut data, mut diff) = blob.cpu_data_diff_mut()?;
    data.fill_(0.0)?;
    diff.fill_(0.0)
}

fn main() {
    let _ = step;
}
