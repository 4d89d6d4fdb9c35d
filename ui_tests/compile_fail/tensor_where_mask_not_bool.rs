// The mask of `where_cond` is a `bool` tensor: make one with a comparison.
use typestate_tensor::tensor::Tensor;

fn main() {
    let x = Tensor::<f32>::zeros(&[3]).unwrap();
    let _ = Tensor::where_cond(&x, &x, 0.0);
}
