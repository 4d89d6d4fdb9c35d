// All-reducing a blob's diff needs it current on the GPU: here the CPU side is the head.
use typestate_tensor::collective::{Communicator, ReduceOp};
use typestate_tensor::synced::{Blob, HeadAtCpu, HeadAtGpu};

fn exchange(b: Blob<f32, HeadAtGpu, HeadAtCpu>, comm: &mut Communicator) {
    let _ = b.all_reduce_diff(comm, ReduceOp::Avg);
}

fn main() {
    let _ = exchange;
}
