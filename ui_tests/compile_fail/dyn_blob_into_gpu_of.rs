// Moving an erased `DynBlob` to another GPU with the typed `into_gpu_of`: the message names
// `try_into_blob::<D, G>()`.
use typestate_tensor::gpu::Gpu;
use typestate_tensor::synced::DynBlob;

fn replicate(net: Vec<DynBlob<f32>>, gpu: &Gpu) {
    for p in net {
        let _ = p.into_gpu_of(gpu);
    }
}

fn main() {
    let _ = replicate;
}
