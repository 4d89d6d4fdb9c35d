// NCCL has no 16-bit integer type: i16 and u16 tensors are refused when the call compiles.
use typestate_tensor::collective::{LocalGroup, ReduceOp};
use typestate_tensor::gpu::Gpu;
use typestate_tensor::tensor::Tensor;

fn exchange(group: &mut LocalGroup, xs: &mut Vec<Tensor<i16, Gpu>>) {
    let _ = group.all_reduce_in_place(xs, ReduceOp::Sum);
}

fn main() {
    let _ = exchange;
}
