// Handing a tensor to `capture` by value: the message says to bind `&mut x` or `&x`.
use typestate_tensor::gpu::Gpu;
use typestate_tensor::tensor::Tensor;

fn run(gpu: &Gpu) -> typestate_tensor::Result<()> {
    let x = Tensor::<f32, Gpu>::zeros_on(&[16], gpu)?;
    let _graph = gpu.capture(x, |_x| Ok(()))?;
    Ok(())
}

fn main() {
    let _ = run;
}
