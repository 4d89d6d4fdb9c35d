// Binding a view (`x.view_mut()`) instead of the tensor: the message says to bind `&mut x`.
use typestate_tensor::gpu::Gpu;
use typestate_tensor::tensor::Tensor;

fn run(gpu: &Gpu) -> typestate_tensor::Result<()> {
    let mut x = Tensor::<f32, Gpu>::zeros_on(&[16], gpu)?;
    let _graph = gpu.capture(x.view_mut(), |_x| Ok(()))?;
    Ok(())
}

fn main() {
    let _ = run;
}
