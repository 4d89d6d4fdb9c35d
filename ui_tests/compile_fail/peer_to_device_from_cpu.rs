// `to_device` on a host tensor (the fix is `to_gpu(&gpu)`): rustc's E0599 only suggests
// `device`; naming `to_gpu` needs a bound in src/engine_gpu (issue 24 report).
use typestate_tensor::gpu::Gpu;
use typestate_tensor::tensor::Tensor;

fn upload(x: Tensor<f32>, gpu: &Gpu) -> typestate_tensor::Result<Tensor<f32, Gpu>> {
    Ok(x.to_device(gpu)?)
}

fn main() {
    let _ = upload;
}
