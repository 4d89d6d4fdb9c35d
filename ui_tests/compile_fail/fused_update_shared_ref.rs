// `update` through a shared reference: it writes in place, so rustc asks for `&mut Tensor`.
use typestate_tensor::tensor::Tensor;

fn decay(w: &Tensor<f32>) -> typestate_tensor::Result<()> {
    w.update(|w| w * 0.9f32)
}

fn main() {
    let _ = decay;
}
