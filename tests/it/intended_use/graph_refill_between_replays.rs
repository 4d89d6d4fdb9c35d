// Intended use: bound tensors are refilled through `bound_mut` between replays, and come
// back with `into_parts`.
use typestate_tensor::gpu::Gpu;
use typestate_tensor::tensor::Tensor;

fn run() -> typestate_tensor::Result<()> {
    let gpu = Gpu::new(0)?;
    let mut x = Tensor::<f32, Gpu>::zeros_on(&[16], &gpu)?;
    let w = Tensor::<f32, Gpu>::zeros_on(&[16], &gpu)?;
    let mut graph = gpu.capture((&mut x, &w), |(x, w)| {
        let t = x.mul(w)?;
        Ok((t.exp()?, (x.lazy() + w).eval()?))
    })?;
    let (mut x_view, _w) = graph.bound_mut();
    x_view.fill_(2.0)?;
    graph.replay()?;
    let _first = graph.outputs().0.to_cpu()?;
    let ((x, _w), _outputs) = graph.into_parts();
    x.fill_(0.0)?;
    Ok(())
}
