// `to_device` on a host tensor: it moves tensors between GPUs; the message names
// `to_gpu(&gpu)`.
use typestate_tensor::gpu::Gpu;
use typestate_tensor::tensor::Tensor;

fn upload(x: Tensor<f32>, gpu: &Gpu) -> typestate_tensor::Result<Tensor<f32, Gpu>> {
    Ok(x.to_device(gpu)?)
}

fn main() {
    let _ = upload;
}
