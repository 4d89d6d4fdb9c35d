// Returning the bound tensor's view as an output: the message says bound tensors are reached
// through `graph.bound_mut()`, and outputs are tensors the closure allocates.
use typestate_tensor::gpu::Gpu;
use typestate_tensor::tensor::Tensor;

fn run(gpu: &Gpu) -> typestate_tensor::Result<()> {
    let mut x = Tensor::<f32, Gpu>::zeros_on(&[16], gpu)?;
    let _graph = gpu.capture(&mut x, |mut x| {
        x.exp_()?;
        Ok(x)
    })?;
    Ok(())
}

fn main() {
    let _ = run;
}
