// Copying an f16 tensor from another GPU into an f32 one: the message names `.cast::<f32>()`.
use half::f16;
use typestate_tensor::gpu::Gpu;
use typestate_tensor::tensor::Tensor;

fn fill(dst: &mut Tensor<f32, Gpu>, src: &Tensor<f16, Gpu>) -> typestate_tensor::Result<()> {
    dst.copy_from_peer(src)?;
    Ok(())
}

fn main() {
    let _ = fill;
}
