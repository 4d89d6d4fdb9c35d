// Mixing devices in one op: copy between them explicitly first.
use typestate_tensor::gpu::Gpu;
use typestate_tensor::tensor::Tensor;
use typestate_tensor::Cpu;

fn add(a: &Tensor<f32, Cpu>, b: &Tensor<f32, Gpu>) {
    let _ = a + b;
}

fn main() {
    let _ = add;
}
