// Mixing element types in an op method: convert explicitly with `cast` first.
use typestate_tensor::tensor::Tensor;

fn main() {
    let a = Tensor::<f32>::zeros(&[2]).unwrap();
    let b = Tensor::<f64>::zeros(&[2]).unwrap();
    let _ = a.maximum(&b);
}
