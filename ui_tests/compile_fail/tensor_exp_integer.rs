// Transcendental functions take floating-point tensors.
use typestate_tensor::tensor::Tensor;

fn main() {
    let a = Tensor::<i32>::zeros(&[2]).unwrap();
    let _ = a.exp();
}
