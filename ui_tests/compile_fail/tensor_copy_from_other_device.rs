// Copying between devices is explicit: `to_cpu()` / `to_gpu(&gpu)`.
use typestate_tensor::gpu::Gpu;
use typestate_tensor::tensor::Tensor;
use typestate_tensor::Cpu;

fn copy(dst: &mut Tensor<f32, Cpu>, src: &Tensor<f32, Gpu>) {
    let _ = dst.copy_from(src);
}

fn main() {
    let _ = copy;
}
