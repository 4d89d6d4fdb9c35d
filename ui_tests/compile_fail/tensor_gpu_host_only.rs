// Host-only calls on a GPU tensor: copy it to the host with `.to_cpu()` first.
use typestate_tensor::gpu::Gpu;
use typestate_tensor::tensor::Tensor;

fn read(g: Tensor<f32, Gpu>) {
    let _ = g.to_vec();
    let _ = g.get(&[0, 1]);
    let _ = g.as_slice();
    let _ = g.iter();
    let _ = g[[0, 1]];
}

fn main() {
    let _ = read;
}
