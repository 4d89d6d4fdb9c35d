// `copy_from_peer` with a host tensor as the source: peers are GPUs; the message names
// `.to_gpu(&gpu)` (or `copy_from_host` style copies).
use typestate_tensor::gpu::Gpu;
use typestate_tensor::tensor::Tensor;

fn fill(dst: &mut Tensor<f32, Gpu>, src: &Tensor<f32>) -> typestate_tensor::Result<()> {
    dst.copy_from_peer(src)?;
    Ok(())
}

fn main() {
    let _ = fill;
}
