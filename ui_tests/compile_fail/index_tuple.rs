// NumPy-style `x[(i, j)]`: the message says to write `x[[i, j]]`.
use typestate_tensor::tensor::Tensor;

fn main() {
    let x = Tensor::<f32>::zeros(&[2, 3]).unwrap();
    let _ = x[(0, 1)];
}
