// All-reducing in place into a read-only view (`x.view()`): the message names `view_mut()`.
use typestate_tensor::collective::{Communicator, ReduceOp};
use typestate_tensor::gpu::Gpu;
use typestate_tensor::tensor::Tensor;

fn step(comm: &mut Communicator, grad: &Tensor<f32, Gpu>) -> typestate_tensor::Result<()> {
    comm.all_reduce_in_place(&mut grad.view(), ReduceOp::Sum)
}

fn main() {
    let _ = step;
}
