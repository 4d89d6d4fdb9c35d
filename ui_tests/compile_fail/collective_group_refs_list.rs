// A group collective over `&mut [&mut a, &mut b]`: the message names the forms it takes,
// `&mut [a.view_mut(), b.view_mut()]` or the tensors themselves.
use typestate_tensor::collective::{LocalGroup, ReduceOp};
use typestate_tensor::gpu::Gpu;
use typestate_tensor::tensor::Tensor;

fn step(
    group: &mut LocalGroup,
    a: &mut Tensor<f32, Gpu>,
    b: &mut Tensor<f32, Gpu>,
) -> typestate_tensor::Result<()> {
    group.all_reduce_in_place(&mut [a, b], ReduceOp::Sum)
}

fn main() {
    let _ = step;
}
