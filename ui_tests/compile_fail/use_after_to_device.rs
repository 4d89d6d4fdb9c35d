// A tensor moved to another GPU is gone: its memory is freed once the copy has read it.
use typestate_tensor::gpu::Gpu;
use typestate_tensor::tensor::Tensor;

fn move_it(t: Tensor<f32, Gpu>, other: &Gpu) -> typestate_tensor::Result<()> {
    let moved = t.to_device(other)?;
    let _ = t.shape();
    drop(moved);
    Ok(())
}

fn main() {
    let _ = move_it;
}
