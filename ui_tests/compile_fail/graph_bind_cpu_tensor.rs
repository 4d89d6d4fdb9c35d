// Binding a CPU tensor to a CUDA graph: the message says to `.to_gpu(&gpu)` it first.
use typestate_tensor::gpu::Gpu;
use typestate_tensor::tensor::Tensor;

fn run(gpu: &Gpu) -> typestate_tensor::Result<()> {
    let mut x = Tensor::<f32>::zeros(&[16])?;
    let _graph = gpu.capture(&mut x, |_x| Ok(()))?;
    Ok(())
}

fn main() {
    let _ = run;
}
