// A Blob collective on an erased `DynBlob` (Caffe's `learnable_params()` list): the message
// names `try_into_blob::<D, G>()`.
use typestate_tensor::collective::{Communicator, ReduceOp};
use typestate_tensor::synced::DynBlob;

fn sync_grads(comm: &mut Communicator, net: Vec<DynBlob<f32>>) {
    for p in net {
        let _ = p.all_reduce_diff(comm, ReduceOp::Avg);
    }
}

fn main() {
    let _ = sync_grads;
}
