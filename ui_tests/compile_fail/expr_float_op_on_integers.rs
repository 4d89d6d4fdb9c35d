use typestate_tensor::tensor::Tensor;

fn main() {
    let a = Tensor::<i32>::zeros(&[2]).unwrap();
    // Float-only ops need a float element type: cast first.
    let _ = (a.lazy() * 2).exp();
}
