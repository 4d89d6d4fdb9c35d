// A reduction's result stays on the input's device: reading it as a Vec needs `.to_cpu()`
// first (or `.item()` for one element), as the message says.
use typestate_tensor::gpu::Gpu;
use typestate_tensor::tensor::Tensor;

fn row_sums(x: &Tensor<f32, Gpu>) -> typestate_tensor::Result<Vec<f32>> {
    Ok(x.sum_dim(1, false)?.to_vec())
}

fn main() {
    let _ = row_sums;
}
