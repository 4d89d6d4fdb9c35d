// NCCL has no bool: a sum of masks would not be a mask.
use typestate_tensor::collective::{LocalGroup, ReduceOp};
use typestate_tensor::gpu::Gpu;
use typestate_tensor::tensor::Tensor;

fn exchange(group: &mut LocalGroup, masks: &mut Vec<Tensor<bool, Gpu>>) {
    let _ = group.all_reduce_in_place(masks, ReduceOp::Sum);
}

fn main() {
    let _ = exchange;
}
