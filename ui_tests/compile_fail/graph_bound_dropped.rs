// A tensor bound to a CUDA graph cannot be dropped (nor moved, nor replaced) while the graph
// can still replay: the graph holds the borrow.
use typestate_tensor::gpu::Gpu;
use typestate_tensor::tensor::Tensor;

fn main() -> typestate_tensor::Result<()> {
    let gpu = Gpu::new(0)?;
    let mut x = Tensor::<f32, Gpu>::zeros_on(&[16], &gpu)?;
    let mut graph = gpu.capture(&mut x, |x| x.exp())?;
    drop(x);
    graph.replay()?;
    Ok(())
}
