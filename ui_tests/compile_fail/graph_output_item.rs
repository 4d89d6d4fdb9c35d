// Returning a Rust scalar (`item()`) from the capture closure: the message says to return the
// rank-0 GPU tensor and read `graph.outputs().item()` after each replay.
use typestate_tensor::gpu::Gpu;
use typestate_tensor::tensor::Tensor;

fn run(gpu: &Gpu) -> typestate_tensor::Result<()> {
    let mut x = Tensor::<f32, Gpu>::zeros_on(&[16], gpu)?;
    let _graph = gpu.capture(&mut x, |x| Ok(x.sum()?.item()?))?;
    Ok(())
}

fn main() {
    let _ = run;
}
