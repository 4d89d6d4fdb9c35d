// Indices are `i64` or `i32` tensors: a float index tensor (PyTorch: "index must be
// int64") does not compile.
use typestate_tensor::tensor::Tensor;

fn pick(x: &Tensor<f32>, index: &Tensor<f32>) {
    let _ = x.gather(1, index);
}

fn main() {}
