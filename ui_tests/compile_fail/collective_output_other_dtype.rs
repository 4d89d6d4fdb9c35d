// Out-of-place all-reduce of f32 into an f16 buffer: one element type per collective; the
// message names `.cast::<f32>()`.
use half::f16;
use typestate_tensor::collective::{Communicator, ReduceOp};
use typestate_tensor::gpu::Gpu;
use typestate_tensor::tensor::Tensor;

fn step(
    comm: &mut Communicator,
    grad: &Tensor<f32, Gpu>,
    out: &mut Tensor<f16, Gpu>,
) -> typestate_tensor::Result<()> {
    comm.all_reduce(grad, out, ReduceOp::Sum)
}

fn main() {
    let _ = step;
}
