// Replaying while an output is still borrowed: a borrow error (the replay rewrites the
// outputs); copy or read the output before the next `replay()`.
use typestate_tensor::gpu::Gpu;
use typestate_tensor::tensor::Tensor;

fn run(gpu: &Gpu) -> typestate_tensor::Result<()> {
    let mut x = Tensor::<f32, Gpu>::zeros_on(&[16], gpu)?;
    let mut graph = gpu.capture(&mut x, |x| Ok(x.exp()?))?;
    let first = graph.outputs();
    graph.replay()?;
    let _ = first.to_cpu()?;
    Ok(())
}

fn main() {
    let _ = run;
}
