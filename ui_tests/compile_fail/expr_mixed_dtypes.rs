use typestate_tensor::tensor::Tensor;

fn main() {
    let a = Tensor::<f32>::zeros(&[2]).unwrap();
    let b = Tensor::<f64>::zeros(&[2]).unwrap();
    // A fused expression mixes element types only through an explicit cast.
    let _ = a.lazy() * &b;
}
