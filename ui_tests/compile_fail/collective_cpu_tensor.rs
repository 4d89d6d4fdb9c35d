// All-reducing a CPU tensor: NCCL reduces GPU memory; the message names `.to_gpu(&gpu)`.
use typestate_tensor::collective::{Communicator, ReduceOp};
use typestate_tensor::tensor::Tensor;

fn step(comm: &mut Communicator, grad: &mut Tensor<f32>) -> typestate_tensor::Result<()> {
    comm.all_reduce_in_place(grad, ReduceOp::Avg)
}

fn main() {
    let _ = step;
}
