// A tensor bound to a CUDA graph cannot be moved away while the graph lives.
use typestate_tensor::gpu::Gpu;
use typestate_tensor::tensor::Tensor;

fn main() -> typestate_tensor::Result<()> {
    let gpu = Gpu::new(0)?;
    let mut x = Tensor::<f32, Gpu>::zeros_on(&[16], &gpu)?;
    let y = Tensor::<f32, Gpu>::zeros_on(&[16], &gpu)?;
    let mut graph = gpu.capture((&mut x, &y), |(x, y)| x.add(y))?;
    let moved = y;
    graph.replay()?;
    drop(moved);
    Ok(())
}
