// A diff shared read-only with other blobs cannot be written by a collective.
use typestate_tensor::collective::{Communicator, ReduceOp};
use typestate_tensor::synced::{Blob, Frozen, HeadAtGpu};

fn exchange(b: Blob<f32, HeadAtGpu, Frozen<HeadAtGpu>>, comm: &mut Communicator) {
    let _ = b.all_reduce_diff(comm, ReduceOp::Sum);
}

fn main() {
    let _ = exchange;
}
