// An in-place update cannot also read its target by reference: the target is borrowed
// mutably for the call. Its current value is the closure's argument.
use typestate_tensor::tensor::Tensor;

fn main() {
    let mut x = Tensor::from_vec(&[3], vec![1.0f32, 2.0, 3.0]).unwrap();
    x.update(|c| c + &x).unwrap();
}
