// A group all-reduce of diffs never computed (nothing allocated on the GPU).
use typestate_tensor::collective::{LocalGroup, ReduceOp};
use typestate_tensor::synced::{Blob, HeadAtGpu, Uninitialized};

fn exchange(group: &mut LocalGroup, blobs: Vec<Blob<f32, HeadAtGpu, Uninitialized>>) {
    let _ = group.all_reduce_diffs(blobs, ReduceOp::Sum);
}

fn main() {
    let _ = exchange;
}
