// A capture hands its closure views of the bound tensors for that call only (a lifetime
// fresh to the call): stashing one to use after the capture does not compile.
use typestate_tensor::gpu::Gpu;
use typestate_tensor::tensor::{Tensor, TensorViewMut};

fn main() -> typestate_tensor::Result<()> {
    let gpu = Gpu::new(0)?;
    let mut x = Tensor::<f32, Gpu>::zeros_on(&[4], &gpu)?;
    let mut kept: Option<TensorViewMut<'_, f32, Gpu>> = None;
    let _graph = gpu.capture(&mut x, |v| {
        kept = Some(v);
        Ok(())
    })?;
    drop(kept);
    Ok(())
}
