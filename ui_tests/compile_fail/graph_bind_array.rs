// Binding several tensors as an array: the message says to bind a tuple `(&mut a, &mut b)`.
use typestate_tensor::gpu::Gpu;
use typestate_tensor::tensor::Tensor;

fn run(gpu: &Gpu) -> typestate_tensor::Result<()> {
    let mut a = Tensor::<f32, Gpu>::zeros_on(&[16], gpu)?;
    let mut b = Tensor::<f32, Gpu>::zeros_on(&[16], gpu)?;
    let _graph = gpu.capture([&mut a, &mut b], |_views| Ok(()))?;
    Ok(())
}

fn main() {
    let _ = run;
}
