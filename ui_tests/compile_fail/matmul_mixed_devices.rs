// Both operands of a product live on one device: a CPU tensor times a GPU tensor does not
// compile (move one with `.to_gpu(&gpu)` or `.to_cpu()`).
use typestate_tensor::gpu::Gpu;
use typestate_tensor::tensor::Tensor;

fn product(a: &Tensor<f32>, b: &Tensor<f32, Gpu>) {
    let _ = a.matmul(b);
}

fn main() {}
