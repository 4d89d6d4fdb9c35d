// Bool tensors (masks) have no arithmetic: the operator says so, as the method does.
use typestate_tensor::tensor::Tensor;

fn main() {
    let x = Tensor::<f32>::zeros(&[3]).unwrap();
    let m = x.gt(0.0).unwrap();
    let _ = &m + &m;
}
