// `sum_dim` given a slice of dims: one dim per `_dim` call; the message names `sum_dims`.
use typestate_tensor::tensor::Tensor;

fn main() {
    let x = Tensor::<f32>::zeros(&[2, 3, 4]).unwrap();
    let _ = x.sum_dim(&[0, 1], false);
}
