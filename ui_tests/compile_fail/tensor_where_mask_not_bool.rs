// The mask of `where_` is a `bool` tensor: make one with a comparison.
use typestate_tensor::tensor::Tensor;

fn main() {
    let x = Tensor::<f32>::zeros(&[3]).unwrap();
    let _ = Tensor::where_(&x, &x, 0.0);
}
