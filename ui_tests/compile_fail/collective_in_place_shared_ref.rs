// An in-place broadcast given `&x`: it writes `x`, so rustc asks for `&mut x`.
use typestate_tensor::collective::Communicator;
use typestate_tensor::gpu::Gpu;
use typestate_tensor::tensor::Tensor;

fn sync_weights(comm: &mut Communicator, w: Tensor<f32, Gpu>) -> typestate_tensor::Result<()> {
    comm.broadcast_in_place(&w, 0)
}

fn main() {
    let _ = sync_weights;
}
