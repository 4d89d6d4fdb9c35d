// `to_gpu(&other)` to move a GPU tensor to another GPU: the message names `to_device(&gpu)`
// (and `copy_from_peer`, `to_cpu`).
use typestate_tensor::gpu::Gpu;
use typestate_tensor::tensor::Tensor;

fn replicate(x: &Tensor<f32, Gpu>, other: &Gpu) -> typestate_tensor::Result<Tensor<f32, Gpu>> {
    x.to_gpu(other)
}

fn main() {
    let _ = replicate;
}
